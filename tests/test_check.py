"""`check` on every sample plan (real Spark runs, truth from the JVM's plan objects): each
rewrite kind expected and forbidden, counted and scoped, in every format; the JUnit and SARIF
outputs validated against their published schemas."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path
from typing import List, Tuple

import pytest

from aqe_inspect.expectations.check import check
from aqe_inspect.rewrites.engine import diff_queries
from aqe_inspect.expectations.config import Expectation, parse_expectation
from aqe_inspect.formats import FORMAT_NAMES, get_format
from aqe_inspect.rewrites.findings import REWRITE_KINDS, Report
from aqe_inspect.expectations.selection import Selector
from aqe_inspect.sources.routing import read_input

from .conftest import ROOT, SAMPLE_PLANS, verdict
from .schemas import validate_junit, validate_sarif

SCENARIOS = sorted(p.parent for p in SAMPLE_PLANS.glob("spark-*/*/truth.json"))
#: Every input of a scenario that shows the plan after the action: explain output of each
#: mode, the driver logs (4.x also with structured JSON logging), the event log and the History
#: Server's answer.
INPUTS = ("formatted_after.txt", "simple_after.txt", "extended_after.txt", "cost_after.txt",
          "driver.log", "driver_json.log", "eventlog.json", "history_sql.json")
CASES = [(scenario, name) for scenario in SCENARIOS for name in INPUTS
         if (scenario / name).is_file()]


def case_id(case) -> str:
    scenario, name = case
    return f"{scenario.parent.name}/{scenario.name}/{name}"


def truth_counts(scenario: Path) -> dict:
    truth = json.loads((scenario / "truth.json").read_text("utf-8"))
    return {kind: truth["rewrites"].get(kind, 0) for kind in REWRITE_KINDS}


def report_of(path: Path) -> Report:
    read = read_input(str(path))
    document = read.document() if hasattr(read, "document") else read
    return Report(tuple(diff_queries(document.queries)), document.source, document.notes,
                  document.application)


def matrix(scenario: Path, name: str) -> List[Tuple[Expectation, bool]]:
    """Every kind expected and forbidden, exactly, at least, at most and beyond the truth,
    scoped to the scenario's query; and a scope that selects nothing."""
    counts = truth_counts(scenario)
    # An event log or History Server answer holds the scenario's execution among others (a
    # cached table's, a subquery's): select it by the description the generator set.
    if name in ("eventlog.json", "history_sql.json"):
        scope = Selector.parse(f"^aqe-sample:{re.escape(scenario.name)}$")
    else:
        scope = Selector.parse("1")
    cases = []
    for kind in REWRITE_KINDS:
        n = counts[kind]
        cases += [
            (parse_expectation(f"{kind}={n}", scope=scope), True),
            (parse_expectation(f"{kind}>={n + 1}", scope=scope), False),
            (parse_expectation(f"{kind}<={n}", scope=scope), True),
            (parse_expectation(f"{kind}>{n}", scope=scope), False),
            (parse_expectation(kind, scope=scope), n >= 1),
            (parse_expectation(kind, forbid=True, scope=scope), n == 0),
            (parse_expectation(kind, scope=scope, each=True), n >= 1),
        ]
        if n:
            cases.append((parse_expectation(f"{kind}<{n}", scope=scope), False))
    cases.append((parse_expectation("coalesced", forbid=True,
                                    scope=Selector.parse("^no such query$")), False))
    return cases


@pytest.fixture(autouse=True)
def in_root(monkeypatch):
    """Paths in reports are relative to the working directory: the checkout's root."""
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_check_holds_every_kind_to_the_truth_in_every_format(case):
    scenario, name = case
    path = (scenario / name).relative_to(ROOT)
    cases = matrix(scenario, name)
    result = check(report_of(path), [expectation for expectation, _ in cases])
    assert len(result.outcomes) == len(cases)
    for outcome, (expectation, want) in zip(result.outcomes, cases):
        assert outcome.expectation is expectation
        assert outcome.passed is want, (expectation.text, outcome.message)
        if not want and expectation.scope.text != "^no such query$":
            assert outcome.location is not None and outcome.location.file == str(path)
            assert outcome.shown, outcome.message
    assert not result.passed
    for format_name in FORMAT_NAMES:
        out = io.StringIO()
        get_format(format_name).write_check(result, out)
        CHECKS[format_name](result, out.getvalue(), path)


def _check_text(result, text: str, path: Path) -> None:
    lines = text.splitlines()
    assert verdict(text).startswith(f"{len(result.failures)} of {len(result.outcomes)} "
                                    "expectation(s) not met"), verdict(text)
    verdicts = [line[:4] for line in lines if line[:5] in ("PASS ", "FAIL ")]
    assert verdicts == ["PASS" if o.passed else "FAIL" for o in result.outcomes]
    if result.shown_queries:
        unit = "executions" if path.suffix == ".json" else "queries"  # the glossary's words
        assert f"Why: the plans of the {unit} the failures are about" in text


def _check_json(result, text: str, path: Path) -> None:
    data = json.loads(text)
    assert data["schema"] == "aqe-inspect/check/v1"
    assert data["passed"] is False and data["source"] == str(path)
    assert [e["passed"] for e in data["expectations"]] == [o.passed for o in result.outcomes]
    shown = {q["id"] for q in data["queries"]}
    for entry in data["expectations"]:
        assert entry["kind"] in REWRITE_KINDS
        assert entry["operator"] in (">=", "<=", "==", ">", "<")
        assert set(entry["shown"]) <= shown
        if not entry["passed"] and entry["query_count"]:
            assert entry["location"]["file"] == str(path) and entry["location"]["line"] >= 1


def _check_junit(result, text: str, path: Path) -> None:
    validate_junit(text)
    assert text.count("<testcase ") == len(result.outcomes)
    names = re.findall(r'<testcase name="([^"]*)"', text)
    assert len(set(names)) == len(names), "GitLab drops test cases of one name"
    assert text.count("<failure ") == len(result.failures)


def _check_sarif(result, text: str, path: Path) -> None:
    data = json.loads(text)
    validate_sarif(data)
    run = data["runs"][0]
    rules = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert rules == list(REWRITE_KINDS)
    assert len(run["results"]) == len(result.failures)
    lines = (ROOT / path).read_bytes().count(b"\n") + 1
    for entry in run["results"]:
        assert rules[entry["ruleIndex"]] == entry["ruleId"] and entry["level"] == "error"
        location = entry["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == path.as_posix()
        if "region" in location:
            assert 1 <= location["region"]["startLine"] <= lines


ANNOTATION = re.compile(r"::error file=(?P<file>[^,:]+)(?:,line=(?P<line>\d+))?,title=[^:]+::")


def _check_github(result, text: str, path: Path) -> None:
    errors = [line for line in text.splitlines() if line.startswith("::error")]
    assert len(errors) == len(result.failures)
    lines = (ROOT / path).read_bytes().count(b"\n") + 1
    for line in errors:
        found = ANNOTATION.match(line)
        assert found, line
        assert found["file"] == path.as_posix()
        assert found["line"] is None or 1 <= int(found["line"]) <= lines
    assert "\n::endgroup::\n" in text or not result.shown_queries


def _check_html(result, text: str, path: Path) -> None:
    verdicts = re.findall(r'data-outcome="(PASS|FAIL)"', text)
    assert verdicts == ["PASS" if o.passed else "FAIL" for o in result.outcomes]
    shown = re.findall(r'<section class="query" id="[^"]*" data-query="([^"]*)"', text)
    assert shown == [report.id for report in result.shown_queries]
    assert text.count("data-rewrite-kind=") == sum(len(r.rewrites)
                                                    for r in result.shown_queries)


CHECKS = {"text": _check_text, "json": _check_json, "junit": _check_junit,
          "sarif": _check_sarif, "github": _check_github, "html": _check_html}


def test_every_format_is_checked():
    assert set(CHECKS) == set(FORMAT_NAMES)


@pytest.mark.parametrize("format_name", FORMAT_NAMES)
def test_every_format_writes_a_diff(format_name):
    """diff shares the formats: each writes a whole report, the machine ones validated."""
    path = Path("sample_plans/spark-4.3.0/multi_rewrite/eventlog.json")
    report = report_of(path)
    out = io.StringIO()
    get_format(format_name).write_report(report, out)
    text = out.getvalue()
    rewrites = sum(len(q.rewrites) for q in report.queries)
    assert rewrites == 4
    if format_name == "sarif":
        validate_sarif(json.loads(text))
        assert len(json.loads(text)["runs"][0]["results"]) == rewrites
    elif format_name == "junit":
        validate_junit(text)
        assert text.count("<testcase ") == len(report.queries)
    elif format_name == "github":
        assert text.count("::notice file=") == rewrites
    elif format_name == "json":
        assert json.loads(text)["schema"] == "aqe-inspect/report/v1"
    elif format_name == "html":
        assert text.count("data-rewrite-kind=") == rewrites
    else:
        # The compact view: one line per rewrite, each starting with its kind.
        assert sum(line.startswith(tuple(f"  {kind}: " for kind in REWRITE_KINDS))
                   for line in text.splitlines()) == rewrites


def test_github_annotations_name_files_relative_to_the_workspace(tmp_path, monkeypatch):
    """GitHub places an annotation on a pull request's file by its path from the checkout: a
    plan named absolute, or from a folder below the checkout, is annotated relative to
    GITHUB_WORKSPACE (else the working directory); a file outside it keeps its absolute path."""
    from aqe_inspect.cli import main

    workspace = tmp_path / "checkout"
    (workspace / "jobs").mkdir(parents=True)
    plan = workspace / "jobs" / "plan.txt"
    plan.write_bytes((ROOT / "sample_plans/spark-4.3.0/multi_rewrite/formatted_after.txt")
                     .read_bytes())
    outside = tmp_path / "elsewhere.txt"
    outside.write_bytes(plan.read_bytes())

    def annotated(path: str) -> set:
        out = io.StringIO()
        with redirect_stdout(out):
            assert main(["check", path, "--expect", "skew-join", "--format", "github"]) == 1
        return {found["file"] for found in map(ANNOTATION.match, out.getvalue().splitlines())
                if found}

    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    monkeypatch.chdir(workspace / "jobs")
    assert annotated(str(plan)) == {"jobs/plan.txt"}
    assert annotated("plan.txt") == {"jobs/plan.txt"}
    assert annotated(str(outside)) == {outside.as_posix()}
    monkeypatch.delenv("GITHUB_WORKSPACE")
    monkeypatch.chdir(workspace)
    assert annotated(str(plan)) == {"jobs/plan.txt"}
