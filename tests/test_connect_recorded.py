"""A Spark Connect client's evidence, read without a server: for every sample scenario, the
rows of `df.executionInfo.metrics` and the `explain("formatted")` text a PySpark 4.3.0 client
held after `collect()` against a Connect server on loopback (recorded by
`AQE_RECORD_CONNECT=1 pytest tests/test_connect.py -k on_each_kind`, tests/fixtures/connect/).

One answer per route: what the client's evidence shows equals what the classic route reads
from the same scenario's printed plan (sample_plans/spark-4.3.0/<scenario>/formatted_after.txt)
and what the JVM recorded (truth.json); where the client cannot see a part of the plan (the
subqueries' plans), its counts are lower bounds and an expectation they do not settle is
unfinished, never PASS.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aqe_inspect.expectations.check import check
from aqe_inspect.expectations.config import parse_expectation
from aqe_inspect.parsing import parse_text
from aqe_inspect.rewrites.engine import diff_document
from aqe_inspect.sources.connect import UNSHOWN_KINDS, rows_from
from aqe_inspect.testing.connect import client_report

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "tests" / "fixtures" / "connect" / "pyspark-4.3.0"
SAMPLES = ROOT / "sample_plans" / "spark-4.3.0"
KINDS = ("coalesced", "skew-join", "smj-to-bhj", "smj-to-shj", "empty-relation", "local-read")


def _recorded():
    return sorted(path.stem for path in RECORDED.glob("*.json"))


def _client(name: str):
    material = json.loads((RECORDED / f"{name}.json").read_text())
    return client_report(rows_from(material["rows"]), material["explain"])


def _kinds(report) -> set:
    return {rewrite.kind for query in report.queries for rewrite in query.rewrites}


def test_every_scenario_is_recorded():
    # Each scenario that runs as it is on any session (the others are tuned by a measuring
    # run) has its client material: a scenario added later must be recorded too.
    names = _recorded()
    assert len(names) >= 50
    for name in names:
        assert (SAMPLES / name / "truth.json").is_file(), name


@pytest.mark.parametrize("name", _recorded())
def test_the_client_answers_as_the_printed_plan_and_the_jvm(name):
    client = _client(name)
    classic = diff_document(parse_text((SAMPLES / name / "formatted_after.txt").read_text(),
                                       name))
    truth = json.loads((SAMPLES / name / "truth.json").read_text())["rewrites"]
    found, printed = _kinds(client), _kinds(classic)
    lower_bounds = any(query.query.incomplete for query in client.queries)
    for kind in KINDS:
        assert (kind in printed) is bool(truth[kind]), kind
        if kind in found or not lower_bounds:
            assert (kind in found) is bool(truth[kind]), kind
    assert not found & set(UNSHOWN_KINDS)


def _verdict(report, text: str, *, forbid: bool = False) -> str:
    result = check(report, [parse_expectation(text, forbid=forbid)])
    return result.outcomes[0].status


def test_a_union_that_kept_both_branches_is_no_empty_relation():
    # The metrics tree prints no arguments: both branches' exchanges read "Exchange", and
    # neither matched the initial plan's by text, so a branch was taken for dropped.
    assert "empty-relation" not in _kinds(_client("union_of_aggregates"))
    assert _verdict(_client("union_of_aggregates"), "empty-relation", forbid=True) == "met"


def test_an_anti_join_emptied_inside_a_cached_relation_is_read_from_the_explain():
    # The tree lists the cached scan without what filled the cache; the explain printed after
    # the action shows the cached relation's plan as it ran (isFinalPlan=true).
    client = _client("empty_in_cached_plan")
    emptied = [r for q in client.queries for r in q.rewrites if r.kind == "empty-relation"]
    assert len(emptied) == 1
    assert "LeftAnti" in emptied[0].message or "Anti" in str(emptied[0].initial_node)
    assert _verdict(client, "empty-relation") == "met"


def test_what_only_a_subquery_holds_is_unfinished_on_the_client_never_passed():
    client = _client("empty_scalar_subquery")
    assert all(query.query.incomplete for query in client.queries)
    assert "empty-relation" not in _kinds(client)
    # Forbidden but unseen: no PASS; expected but unseen: no FAIL either.
    assert _verdict(client, "empty-relation", forbid=True) == "unfinished"
    assert _verdict(client, "empty-relation") == "unfinished"
    # What the main plan shows still settles a lower bound.
    assert _verdict(client, "coalesced") == "met"
