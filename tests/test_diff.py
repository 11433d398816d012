"""The diff engine on real plans: two files, final-only plans, negative controls, the API."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

import aqe_inspect
from aqe_inspect.rewrites.engine import JOIN_SWITCH_NOTE
from aqe_inspect.rewrites.findings import REWRITE_KINDS

from .conftest import AQE_INSPECT, SAMPLE_PLANS
from .test_samples import SCENARIOS, scenario_id

#: Which kind each `_off` scenario switched off.
SWITCHED_OFF = {"coalesced_aggregation_off": "coalesced", "skew_join_off": "skew-join",
                "smj_to_bhj_off": "smj-to-bhj", "empty_relation_off": "empty-relation"}


def totals(report) -> dict:
    counts = dict.fromkeys(REWRITE_KINDS, 0)
    for query in report.queries:
        for kind, count in query.counts.items():
            counts[kind] += count
    return counts


def truth_of(scenario) -> dict:
    truth = json.loads((scenario / "truth.json").read_text("utf-8"))
    return {kind: truth["rewrites"].get(kind, 0) for kind in REWRITE_KINDS}


@pytest.mark.parametrize("name, kind", sorted(SWITCHED_OFF.items()))
def test_negative_controls_report_nothing_of_their_kind(name, kind):
    for scenario in (p for p in SCENARIOS if p.name == name):
        for mode in ("formatted_after", "simple_after"):
            report = aqe_inspect.diff((scenario / f"{mode}.txt").read_text("utf-8"))
            assert totals(report)[kind] == 0
    no_exchange = [p for p in SCENARIOS if p.name == "no_exchange"]
    assert no_exchange
    for scenario in no_exchange:
        report = aqe_inspect.diff((scenario / "simple_after.txt").read_text("utf-8"))
        assert totals(report) == dict.fromkeys(REWRITE_KINDS, 0)


def final_tree_only(simple_plan: str) -> str:
    """The `== Final Plan ==` tree of a simple-mode plan, as a log line would print it."""
    lines = simple_plan.split("\n")
    start = lines.index("+- == Final Plan ==") + 1
    end = lines.index("+- == Initial Plan ==")
    return "\n".join(line[3:] for line in lines[start:end]) + "\n"


@pytest.mark.parametrize("name", ["multi_rewrite", "skew_join", "smj_to_bhj"])
def test_final_only_plan_reports_what_it_proves_and_says_what_it_cannot(name):
    for scenario in (p for p in SCENARIOS if p.name == name):
        text = final_tree_only((scenario / "simple_after.txt").read_text("utf-8"))
        report = aqe_inspect.diff(text, source="final-only")
        query = report.queries[0]
        want = truth_of(scenario)
        got = totals(report)
        for kind in ("coalesced", "skew-join", "local-read"):
            assert got[kind] == want[kind], kind
        assert got["smj-to-bhj"] == got["smj-to-shj"] == 0
        assert JOIN_SWITCH_NOTE in query.notes
        assert not query.query.adaptive


def test_rewrites_name_operators_in_both_plans():
    scenario = next(p for p in SCENARIOS if p.name == "multi_rewrite"
                    and p.parent.name.startswith("spark-4"))
    report = aqe_inspect.diff((scenario / "formatted_after.txt").read_text("utf-8"))
    for rewrite in report.queries[0].rewrites:
        assert rewrite.final_node is not None and rewrite.final_node.id is not None
        assert rewrite.initial_node is not None and rewrite.initial_node.id is not None
        assert rewrite.final_node.id != rewrite.initial_node.id
        assert re.search(r"\(\d+\)", rewrite.message)
    switch = next(r for r in report.queries[0].rewrites if r.kind == "smj-to-bhj")
    assert switch.initial_node.name == "SortMergeJoin"
    assert switch.numbers["build_side"] in ("BuildLeft", "BuildRight")


def test_subquery_rewrites_belong_to_their_query():
    for scenario in (p for p in SCENARIOS if p.name == "scalar_subquery"):
        truth = json.loads((scenario / "truth.json").read_text("utf-8"))
        assert any(p["location"] == "subquery" and any(p["rewrites"].values())
                   for p in truth["adaptive_plans"])
        for mode in ("formatted_after", "simple_after"):
            report = aqe_inspect.diff((scenario / f"{mode}.txt").read_text("utf-8"))
            assert len(report.queries) == 1
            assert totals(report) == truth_of(scenario)


def test_diff_cli_json_and_text():
    path = next(SAMPLE_PLANS.glob("spark-4*/skew_join/formatted_after.txt"))
    result = subprocess.run([*AQE_INSPECT, "diff", str(path), "--format",
                             "json"], capture_output=True, timeout=60)
    data = json.loads(result.stdout)
    assert data["schema"] == "aqe-inspect/report/v1"
    query = data["queries"][0]
    assert set(query) >= {"id", "source", "adaptive", "is_final_plan", "rewrites", "counts"}
    assert set(query["counts"]) == set(REWRITE_KINDS)
    assert query["counts"]["skew-join"] == 1
    for rewrite in query["rewrites"]:
        assert set(rewrite) >= {"kind", "final_node", "initial_node", "message"}
    text = subprocess.run([*AQE_INSPECT, "diff", str(path)],
                          capture_output=True, timeout=60, env={"NO_COLOR": "1"}).stdout.decode()
    assert "\n  skew-join: SortMergeJoin (14) " in text  # one line per rewrite
    assert "\x1b[" not in text
    tree = subprocess.run([*AQE_INSPECT, "diff", str(path), "--tree"],
                          capture_output=True, timeout=60, env={"NO_COLOR": "1"}).stdout.decode()
    assert "<- skew-join" in tree and "\x1b[" not in tree


@pytest.mark.parametrize("scenario", SCENARIOS, ids=scenario_id)
def test_information_is_reported_where_the_jvm_saw_it(scenario):
    """Dynamic pruning and reused exchanges are information, present exactly where they were."""
    truth = json.loads((scenario / "truth.json").read_text("utf-8"))["info"]
    for mode in ("formatted_after", "simple_after"):
        report = aqe_inspect.diff((scenario / f"{mode}.txt").read_text("utf-8"))
        kinds = [o.kind for q in report.queries for o in q.info]
        assert kinds.count("reused-exchange") == truth["reused-exchange"], mode
        assert ("dynamic-pruning" in kinds) == (truth["dynamic-pruning"] > 0), mode
