"""Every relation AQE emptied (issue 47), held to the JVM's truth of the empty-propagation
samples (sample_plans/spark-*/empty_*: real PySpark 3.5.9 and 4.3.0 runs, each place read from
the logical plans AQE started from and ended with and cross-checked with the plan-change log
the generator's JVM wrote; see sample_plans/README.md).

`test_samples.py` holds every sample's counts to the truth in every explain mode; here each
place is named as the JVM names it, every input kind of a scenario gives the same answer, and
`check --expect empty-relation` passes on each positive, `--forbid` on each negative control.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import List

import pytest

import aqe_inspect
from aqe_inspect.cli import main
from aqe_inspect.plan.operators import family, join_type
from aqe_inspect.rewrites.engine import diff_document

from .conftest import SAMPLE_PLANS

TRUTHS = sorted(SAMPLE_PLANS.glob("spark-*/*/truth.json"))


def _truth(path: Path) -> dict:
    return json.loads(path.read_text("utf-8"))


#: The scenarios about empty propagation: the ones with a place, and their negative controls.
POSITIVE = [p.parent for p in TRUTHS if _truth(p).get("empty_relations")]
NEGATIVE = [p.parent for p in TRUTHS if (_truth(p).get("control") or {}).get("kind")
            == "empty-relation"]
#: Every input of a scenario the tool reads: plan texts after the action, driver logs, event
#: logs (any codec) and the History Server's answer.
INPUTS = ("formatted_after.txt", "simple_after.txt", "extended_after.txt", "driver.log",
          "driver_planchange.log", "driver_json.log", "eventlog.json", "history_sql.json")


def scenario_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def inputs_of(scenario: Path) -> List[Path]:
    return [scenario / name for name in INPUTS if (scenario / name).is_file()]


def run(*args: str):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_there_are_positive_and_negative_samples_on_both_lines():
    for line in ("spark-3.5.9", "spark-4.3.0"):
        assert len([p for p in POSITIVE if p.parent.name == line]) >= 10, line
        assert len([p for p in NEGATIVE if p.parent.name == line]) >= 3, line


def _physical_matches(removed: str, node) -> bool:
    """Whether a physical operator is the logical one the JVM says went (`Join LeftAnti`,
    `Union`, `Aggregate`, `Sort`, `Window`, `GlobalLimit`)."""
    name = family(node)
    if removed.startswith("Join "):
        return "Join" in name and join_type(node) == removed.split(" ", 1)[1]
    if removed == "Aggregate":
        return "Aggregate" in name
    if removed == "GlobalLimit":
        return "Limit" in name or name == "TakeOrderedAndProject"
    return name == removed


@pytest.mark.parametrize("scenario", POSITIVE, ids=scenario_id)
def test_each_place_names_the_operator_the_jvm_says_went(scenario):
    """A join replaced by its side, or a Union that dropped branches, is named itself; a
    subtree replaced by an empty relation is named by its top, the operator that went among
    those below it."""
    truth = _truth(scenario / "truth.json")
    for name in ("formatted_after.txt", "simple_after.txt"):
        report = diff_document(aqe_inspect.parse((scenario / name).read_text("utf-8"),
                                                 str(scenario / name)))
        found = [r for q in report.queries for r in q.rewrites if r.kind == "empty-relation"]
        assert len(found) == len(truth["empty_relations"]), name
        unnamed = [place["removed"] for place in truth["empty_relations"]]
        for rewrite in found:
            assert rewrite.initial_node is not None, (name, rewrite.message)
            below = list(rewrite.initial_node.walk(inner=False))
            match = next((removed for removed in unnamed
                          if any(_physical_matches(removed, node) for node in below)), None)
            assert match is not None, (name, rewrite.message, unnamed)
            unnamed.remove(match)
            if rewrite.went:  # a side kept: the operator itself is the one that went
                assert _physical_matches(match, rewrite.initial_node), rewrite.message
                assert rewrite.final_node is not None, rewrite.message
                assert "produced no rows at run time" in rewrite.message
        assert unnamed == [], name


@pytest.mark.parametrize("scenario", POSITIVE, ids=scenario_id)
def test_every_input_of_a_positive_passes_expect(scenario):
    want = len(_truth(scenario / "truth.json")["empty_relations"])
    for path in inputs_of(scenario):
        code, out, err = run("check", "--expect", "empty-relation", str(path))
        assert (code, err) == (0, ""), (path.name, out, err)
        assert out.startswith("PASS empty-relation"), (path.name, out)
        code, out, err = run("diff", "--format", "json", str(path))
        assert code == 0, (path.name, err)
        counts = [q["counts"].get("empty-relation", 0)
                  for q in _queries(json.loads(out))]
        assert sum(counts) >= want, (path.name, counts)


@pytest.mark.parametrize("scenario", NEGATIVE, ids=scenario_id)
def test_every_input_of_a_negative_control_passes_forbid(scenario):
    for path in inputs_of(scenario):
        code, out, err = run("check", "--forbid", "empty-relation", str(path))
        assert (code, err) == (0, ""), (path.name, out, err)
        assert out.startswith("PASS"), (path.name, out)


def _queries(document: dict) -> list:
    if "queries" in document:
        return document["queries"]
    return [q for execution in document.get("executions", ()) for q in
            execution.get("queries", (execution,))]


def test_a_side_kept_is_not_read_as_operators_removed_one_by_one():
    """The partial aggregate of a Union's empty branch went with the branch: no one-row."""
    for line in ("spark-3.5.9", "spark-4.3.0"):
        path = SAMPLE_PLANS / line / "empty_union_branch" / "formatted_after.txt"
        report = diff_document(aqe_inspect.parse(path.read_text("utf-8"), str(path)))
        kinds = [r.kind for q in report.queries for r in q.rewrites]
        assert kinds.count("empty-relation") == 1 and "one-row" not in kinds, kinds


RULE = "org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation"


@pytest.mark.parametrize("line", ["spark-3.5.9", "spark-4.3.0"])
def test_why_says_the_rule_was_excluded_or_the_side_had_rows(line):
    """`why --kind empty-relation` on the negative controls: the LEFT ANTI join whose right
    side was empty is blocked by the excluded rule (an empty right side removes a LEFT ANTI
    join: it becomes its left side); the one whose right side had rows was not needed, with
    both sides' row counts."""
    excluded = SAMPLE_PLANS / line / "empty_anti_join_excluded" / "formatted_after.txt"
    code, out, err = run("why", "--kind", "empty-relation", "--format", "json", "--conf",
                         f"spark.sql.adaptive.optimizer.excludedRules={RULE}", str(excluded))
    assert (code, err) == (0, ""), err
    (candidate,) = [c for q in json.loads(out)["queries"] for c in q["candidates"]]
    assert candidate["verdict"] == "blocked", candidate
    assert any("produced no rows" in r["text"] for r in candidate["reasons"])
    assert any("is excluded" in r["text"] for r in candidate["reasons"])
    kept = SAMPLE_PLANS / line / "empty_anti_join_not_empty" / "formatted_after.txt"
    code, out, err = run("why", "--kind", "empty-relation", "--format", "json", str(kept))
    (candidate,) = [c for q in json.loads(out)["queries"] for c in q["candidates"]]
    assert candidate["verdict"] == "not-needed", candidate
    rows = [r["text"] for r in candidate["reasons"] if "rows (plan" in r["text"]]
    assert len(rows) == 2 and not any("no rows" in text for text in rows), rows
