"""`why` names AQE's cost evaluator as the reason a sort-merge join stayed although a side fits
the broadcast threshold: a switch would need a new shuffle above. On the `kept_by_cost` sample
scenario (real PySpark 3.5.9 and 4.3.0 runs; truth.json, read from the JVM plan objects, says
both joins stayed sort-merge while the lower join's side was under the threshold), and "cannot
tell" where the input lacks the evidence."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import List

import pytest

from .conftest import AQE_INSPECT, SAMPLE_PLANS

LINES = ("spark-3.5.9", "spark-4.3.0")
THRESHOLD = "spark.sql.adaptive.autoBroadcastJoinThreshold"
EXPAND = "spark.sql.execution.broadcastHashJoin.outputPartitioningExpandLimit"


def folder(line: str) -> Path:
    return SAMPLE_PLANS / line / "kept_by_cost"


def truth(line: str) -> dict:
    return json.loads((folder(line) / "truth.json").read_text("utf-8"))


def joins(path: Path, *confs: str) -> List[dict]:
    """The smj-to-bhj candidates of the scenario's query (an event log's labelled one)."""
    args = [arg for conf in confs for arg in ("--conf", conf)]
    done = subprocess.run([*AQE_INSPECT, "why", str(path), *args, "--kind", "smj-to-bhj",
                           "--format", "json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    queries = json.loads(done.stdout)["queries"]
    labelled = [q for q in queries if "kept_by_cost" in q.get("label", "")]
    (query,) = labelled or queries
    return [c for c in query["candidates"] if c["kind"] == "smj-to-bhj"]


def lower_join(found: List[dict]) -> dict:
    """The lower join: the one whose right side (t2, 9,600 B at run time) fits the threshold."""
    (join,) = [c for c in found if any(", within " + THRESHOLD in r["text"]
                                        for r in c["reasons"])]
    return join


def all_confs(line: str) -> List[str]:
    return [f"{key}={value}" for key, value in truth(line)["confs"].items()]


@pytest.mark.parametrize("line", LINES)
def test_the_jvm_kept_both_joins_though_a_side_fits(line):
    facts = truth(line)["control"]["facts"]
    assert facts["side_bytes"] <= facts["threshold_bytes"] < facts["other_side_bytes"]
    assert facts["non_empty_ratio"] >= facts["ratio_threshold"]
    assert facts["final_joins"] == ["SortMergeJoin", "SortMergeJoin"]


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("form", ["formatted_after.txt", "eventlog.json"])
def test_the_shuffle_a_switch_would_add_is_named_as_the_reason(line, form):
    confs = all_confs(line) if form.endswith(".txt") else []
    every = joins(folder(line) / form, *confs)
    found = lower_join(every)
    assert found["verdict"] == "blocked", found
    (reason,) = [r for r in found["reasons"] if "cost evaluator" in r["text"]]
    assert reason["config"] == EXPAND and "would need a new shuffle" in reason["text"]
    # the upper join: no side of it fits the threshold, so the cost evaluator is not its reason
    (upper,) = [c for c in every if c["node"] != found["node"]]
    assert not any("cost evaluator" in r["text"] for r in upper["reasons"]), upper


@pytest.mark.parametrize("line", LINES)
def test_without_the_expand_limit_it_cannot_tell(line):
    found = lower_join(joins(folder(line) / "formatted_after.txt", f"{THRESHOLD}=64KB"))
    assert found["verdict"] == "cannot-tell"
    assert any("cost evaluator" in r["text"] for r in found["reasons"])
    assert any(EXPAND in need for need in found["needs"])


@pytest.mark.parametrize("line", LINES)
def test_a_build_side_partitioning_spark_expands_is_no_reason(line):
    found = lower_join(joins(folder(line) / "formatted_after.txt", f"{THRESHOLD}=64KB",
                             f"{EXPAND}=8"))
    assert not any("cost evaluator" in r["text"] for r in found["reasons"]), found


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("form", ["formatted_after.txt", "simple_after.txt"])
def test_without_the_evidence_it_cannot_tell(line, form):
    """A formatted plan without its settings, a simple plan (no statistics) even with them:
    no join is blocked, and the cost evaluator is not named as a certainty."""
    confs = all_confs(line) if form == "simple_after.txt" else []
    found = joins(folder(line) / form, *confs)
    assert len(found) == 2
    assert all(c["verdict"] == "cannot-tell" for c in found), found
    assert all(c["needs"] for c in found)
