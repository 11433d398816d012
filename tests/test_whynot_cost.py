"""`why` names AQE's cost evaluator as the reason a sort-merge join stayed although a side fits
the broadcast threshold: a switch would need a new shuffle above (real PySpark 4.3.0 plan,
tests/fixtures/kept_by_cost/README.md)."""

from __future__ import annotations

import json
import subprocess

from .conftest import AQE_INSPECT, ROOT

PLAN = ROOT / "tests" / "fixtures" / "kept_by_cost"
THRESHOLD = "spark.sql.adaptive.autoBroadcastJoinThreshold=64KB"
EXPAND = "spark.sql.execution.broadcastHashJoin.outputPartitioningExpandLimit"


def lower_join(*confs: str) -> dict:
    args = [arg for conf in confs for arg in ("--conf", conf)]
    done = subprocess.run([*AQE_INSPECT, "why", str(PLAN / "formatted_after.txt"), *args,
                           "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (query,) = json.loads(done.stdout)["queries"]
    joins = [c for c in query["candidates"] if c["kind"] == "smj-to-bhj"]
    # The lower join is the one whose right side (t2, 480 B) fits the threshold.
    (found,) = [c for c in joins if any("480.0 B, within" in r["text"] for r in c["reasons"])]
    return found


def test_the_shuffle_a_switch_would_add_is_named_as_the_reason():
    found = lower_join(THRESHOLD, f"{EXPAND}=0")
    assert found["verdict"] == "blocked", found
    (reason,) = [r for r in found["reasons"] if "cost evaluator" in r["text"]]
    assert reason["config"] == EXPAND and "would need a new shuffle" in reason["text"]


def test_without_the_expand_limit_it_cannot_tell():
    found = lower_join(THRESHOLD)
    assert found["verdict"] == "cannot-tell"
    assert any("cost evaluator" in r["text"] for r in found["reasons"])
    assert any(EXPAND in need for need in found["needs"])


def test_a_build_side_partitioning_spark_expands_is_no_reason():
    found = lower_join(THRESHOLD, f"{EXPAND}=8")
    assert not any("cost evaluator" in r["text"] for r in found["reasons"]), found
