"""One input, several applications: a folder holding the event logs of two real runs (the
sample generator's, PySpark 3.5 and 4.x). Their SQL execution ids repeat, so every section of
the report says whose it is: the application's id and name, and its log."""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Dict, List

import pytest

from aqe_inspect.cli import main
from aqe_inspect.plan.model import Application
from aqe_inspect.rewrites.findings import QueryReport
from aqe_inspect.formats.json_writer import iter_json

from .conftest import SAMPLE_PLANS

LOGS = {"skew.json": SAMPLE_PLANS / "spark-4.3.0" / "skew_join" / "eventlog.json",
        "bhj.json": SAMPLE_PLANS / "spark-3.5.9" / "smj_to_bhj" / "eventlog.json"}


def application_start(log: Path) -> Dict[str, str]:
    """The log's own SparkListenerApplicationStart event, read here without the tool."""
    for line in log.read_text("utf-8").splitlines():
        event = json.loads(line)
        if event.get("Event") == "SparkListenerApplicationStart":
            return event
    raise AssertionError(f"{log} has no application start")


@pytest.fixture
def folder(tmp_path) -> Path:
    for name, log in LOGS.items():
        shutil.copyfile(log, tmp_path / name)
    return tmp_path


def run(*args: str):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    assert (code, err.getvalue()) == (0, "")
    return out.getvalue()


def sections(text: str) -> List[List[str]]:
    """The text's lines, cut where an `Application ...` line starts a section."""
    found: List[List[str]] = []
    for line in text.splitlines():
        if line.startswith("Application "):
            found.append([])
        if found:
            found[-1].append(line)
    return found


@pytest.mark.parametrize("command", [["diff"], ["diff", "--tree"], ["parse"]], ids=" ".join)
def test_each_applications_queries_come_under_a_line_naming_it(folder, command, monkeypatch):
    monkeypatch.setenv("COLUMNS", "10000")  # each line whole, however deep tmp_path is
    text = run(*command, str(folder))
    got = sections(text)
    assert len(got) == len(LOGS)
    assert not text.startswith("Execution")  # nothing before the first application's line
    for section in got:
        name = section[0].rsplit(": ", 1)[1]
        start = application_start(folder / Path(name).name)
        assert section[0].startswith(f"Application {start['App ID']} ({start['App Name']}), "
                                     f"Spark ")
        # An event log's: executions, by id (the glossary, docs/inputs.md).
        queries = [line for line in section if line.startswith("Execution ")]
        assert queries and all(f"{name}:" in q for q in queries)


def test_json_names_each_querys_application(folder):
    for command in ("diff", "parse"):
        data = json.loads(run(command, str(folder), "--format", "json"))
        assert data["application"] is None  # the input's: none, two are in it
        assert {q["source"] for q in data["queries"]} == {str(folder / n) for n in LOGS}
        for query in data["queries"]:
            start = application_start(Path(query["source"]))
            assert query["application"]["app_id"] == start["App ID"], command
            assert query["application"]["name"] == start["App Name"], command


def test_one_applications_log_names_it_once_and_in_every_query():
    log = LOGS["skew.json"]
    start = application_start(log)
    text = run("diff", str(log), "--width", "10000")
    assert text.splitlines()[0].startswith(f"Application {start['App ID']} "
                                           f"({start['App Name']}), Spark 4.3.0")
    assert text.count("Application ") == 1
    data = json.loads(run("diff", str(log), "--format", "json"))
    assert data["application"]["app_id"] == start["App ID"]
    assert all(q["application"] == data["application"] for q in data["queries"])


def test_json_written_apart_names_the_application_as_json_written_whole():
    """A query's JSON written where it was diffed (a worker process, for a long log) is given
    its application after: the same text as the report written with it."""
    from aqe_inspect.api import diff
    from aqe_inspect.formats.report_json import (query_report_raw, query_report_to_json,
                                              with_application)

    report: QueryReport = diff((SAMPLE_PLANS / "spark-4.3.0" / "skew_join" /
                                "formatted_after.txt").read_text("utf-8")).queries[0]
    app = Application("local-1", 'a "quoted" name', "4.3.0")
    raw = with_application(query_report_raw(report, "x.txt"), app)
    whole = "".join(iter_json(query_report_to_json(with_application(report, app), "x.txt"),
                              base=2))
    assert raw.text == whole
    assert json.loads(whole)["application"]["name"] == 'a "quoted" name'
