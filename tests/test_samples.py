"""Every sample plan (real PySpark runs, 3.5 and 4.x): it parses, and diff says what the JVM
plan objects say AQE did (truth.json, read through py4j, never from the text)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, List

import pytest

import aqe_inspect
from aqe_inspect.rewrites.engine import diff_document
from aqe_inspect.rewrites.detectors import DETECTORS
from aqe_inspect.rewrites.findings import REWRITE_KINDS

from .conftest import SAMPLE_PLANS

SCENARIOS = sorted(p.parent for p in SAMPLE_PLANS.glob("spark-*/*/truth.json"))
ADAPTIVE_SCENARIOS = [p for p in SCENARIOS
                      if json.loads((p / "truth.json").read_text("utf-8"))["adaptive"]]
#: The kinds only an initial plan can prove (join switches, operators AQE's optimizer removed).
NEEDS_INITIAL = {detector.kind for detector in DETECTORS if detector.needs_initial}
AFTER_MODES = ("formatted_after", "simple_after", "extended_after", "cost_after")
BEFORE_MODES = ("formatted_before", "simple_before")


def scenario_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def reported_counts(path: Path) -> Dict[str, int]:
    report = diff_document(aqe_inspect.parse(path.read_text("utf-8"), str(path)))
    counts = dict.fromkeys(REWRITE_KINDS, 0)
    for query in report.queries:
        for kind, count in query.counts.items():
            counts[kind] += count
    return counts


def test_samples_cover_two_spark_lines_and_every_scenario():
    lines = {p.parent.name for p in SCENARIOS}
    assert any(line.startswith("spark-3.5") for line in lines), lines
    assert any(line.startswith("spark-4.") for line in lines), lines
    names = {p.name for p in SCENARIOS}
    assert names >= {
        "coalesced_aggregation", "coalesced_aggregation_off", "skew_join", "skew_join_off",
        "smj_to_bhj", "smj_to_bhj_off", "empty_relation", "empty_relation_off", "no_exchange",
        "multi_rewrite", "local_read", "smj_to_shj", "dynamic_partition_pruning",
        "scalar_subquery", "reused_exchange", "cached_table", "window",
        "union_of_aggregates", "five_way_join", "aqe_declines", "local_read_off",
        "smj_to_shj_off", "aqe_off", "broadcast_just_above", "broadcast_static_just_above",
        "skew_below_factor",
        "skew_unsplittable_side", "user_repartition", "repartition_by_column",
        "dynamic_partition_pruning_off", "dpp_subquery", "dpp_dropped", "rebalance_skew",
        "rebalance_skew_off", "one_row_sort", "one_row_aggregate", "one_row_off",
        "limit_removed", "limit_removed_off", "rebalance_skew_none", "rebalance_skew_none_off",
        "kept_by_cost", "empty_anti_join", "empty_anti_join_not_empty",
        "empty_anti_join_excluded", "empty_anti_join_aqe_off", "empty_outer_join",
        "empty_semi_join", "empty_left_inner_join", "empty_union_branch", "empty_aggregate",
        "empty_sort", "empty_window", "empty_limit", "empty_scalar_subquery",
        "empty_in_cached_plan", "empty_several",
    }


@pytest.mark.parametrize("scenario", SCENARIOS, ids=scenario_id)
def test_every_mode_parses(scenario):
    truth = json.loads((scenario / "truth.json").read_text("utf-8"))
    files = sorted(scenario.glob("*.txt"))
    assert len(files) >= 7
    for path in files:
        document = aqe_inspect.parse(path.read_text("utf-8"), str(path))
        if path.stem == "codegen_after":
            continue  # test_codegen_mode_is_one_query
        assert len(document.queries) == 1, path
        assert document.queries[0].adaptive is truth["adaptive"], path


@pytest.mark.parametrize("scenario", SCENARIOS, ids=scenario_id)
def test_codegen_mode_is_one_query(scenario):
    """explain("codegen") prints each WholeStageCodegen subtree of the plan that ran, and
    each subtree everything below it again: one query, whose tree holds every subtree, and
    whose findings are the final plan's (each once), less what needs the initial plan."""
    truth = json.loads((scenario / "truth.json").read_text("utf-8"))
    path = scenario / "codegen_after.txt"
    text = path.read_text("utf-8")
    document = aqe_inspect.parse(text, str(path))
    if text.startswith("Found 0 WholeStageCodegen subtrees."):
        assert document.queries == ()
        assert any("no WholeStageCodegen subtree" in note for note in document.notes)
        return
    (query,) = document.queries
    assert query.mode == "codegen" and query.line == 1
    assert any("formatted mode" in note for note in query.notes)
    printed = {int(stage) for stage in re.findall(r"^[ :|+-]*\*\((\d+)\) ", text, re.M)}
    assert printed and {n.codegen_stage for n in query.walk()} - {None} == printed
    counts = reported_counts(path)
    hidden = _top_outside_codegen(scenario)
    for kind in REWRITE_KINDS:
        if kind in NEEDS_INITIAL:  # judged against the initial plan only
            assert counts[kind] == 0, kind
        elif hidden:
            # A read at the very top of the final plan (a rebalance's; the read left when
            # AQE removed the sort above it) is in no codegen subtree: codegen mode does not
            # print it, so its rewrites cannot be seen; nothing may be invented either.
            assert counts[kind] <= truth["rewrites"].get(kind, 0), kind
        elif kind == "empty-relation":
            # Codegen mode prints no initial plan of the main query: of the places AQE
            # emptied it shows at least those that left an empty relation (a join replaced
            # by its other side, a Union's dropped branch, needs an initial plan to be seen:
            # a nested plan's, a subquery's or a cached plan's, may print one), and never
            # more than there are.
            left_empty = sum(plan.get("empty_nodes", 0) for plan in truth["adaptive_plans"]) \
                if "empty_relations" in truth else truth["rewrites"].get(kind, 0)
            assert left_empty <= counts[kind] <= truth["rewrites"].get(kind, 0), kind
        else:
            assert counts[kind] == truth["rewrites"].get(kind, 0), kind


def _top_outside_codegen(scenario: Path) -> bool:
    """Whether the final plan's top operator (under 4.x's ResultQueryStage) is a shuffle read
    or a query stage, which no WholeStageCodegen subtree holds."""
    query = aqe_inspect.parse((scenario / "simple_after.txt").read_text("utf-8")).queries[0]
    top = query.final
    while top.name == "ResultQueryStage" and top.children:
        top = top.children[0]
    return top.name in ("AQEShuffleRead", "ShuffleQueryStage", "BroadcastQueryStage")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=scenario_id)
def test_diff_reports_exactly_the_truth(scenario):
    truth = json.loads((scenario / "truth.json").read_text("utf-8"))
    want = {kind: truth["rewrites"].get(kind, 0) for kind in REWRITE_KINDS}
    for mode in AFTER_MODES:
        assert reported_counts(scenario / f"{mode}.txt") == want, mode
    nothing = dict.fromkeys(REWRITE_KINDS, 0)
    for mode in BEFORE_MODES:
        # Before the action AQE has not re-planned: any finding would be invented.
        assert reported_counts(scenario / f"{mode}.txt") == nothing, mode


@pytest.mark.parametrize("scenario", ADAPTIVE_SCENARIOS, ids=scenario_id)
def test_adaptive_sides_and_final_flag(scenario):
    truth = json.loads((scenario / "truth.json").read_text("utf-8"))
    for mode in ("formatted_after", "simple_after"):
        query = aqe_inspect.parse((scenario / f"{mode}.txt").read_text("utf-8")).queries[0]
        assert query.is_final_plan is truth["is_final_plan"] is True
        assert query.initial is not None
    for mode in BEFORE_MODES:
        query = aqe_inspect.parse((scenario / f"{mode}.txt").read_text("utf-8")).queries[0]
        assert query.is_final_plan is False
        assert query.initial is query.final


def test_join_switches_name_the_build_side_the_jvm_reported():
    checked = 0
    for scenario in SCENARIOS:
        truth = json.loads((scenario / "truth.json").read_text("utf-8"))
        want = sorted(s["build_side"] for s in truth.get("join_switches", [])
                      if s["to"] == "BroadcastHashJoin")
        for mode in ("formatted_after", "simple_after"):
            report = diff_document(aqe_inspect.parse((scenario / f"{mode}.txt").read_text()))
            got = sorted(r.numbers.get("build_side") for q in report.queries
                         for r in q.rewrites if r.kind == "smj-to-bhj")
            assert got == want, (scenario, mode)
            checked += len(got)
    assert checked > 0


def formatted_node(scenario: str, line: str, predicate) -> List[aqe_inspect.Node]:
    path = SAMPLE_PLANS / line / scenario / "formatted_after.txt"
    query = aqe_inspect.parse(path.read_text("utf-8")).queries[0]
    return [n for n in query.walk() if predicate(n)]


def newest_line() -> str:
    return max((p.parent.name for p in SCENARIOS if p.parent.name.startswith("spark-4")),
               key=lambda name: tuple(int(x) for x in name[6:].split(".")))


def test_spark4_description_and_statistics_after_the_id():
    reads = formatted_node("coalesced_aggregation", newest_line(),
                           lambda n: n.name == "AQEShuffleRead")
    assert reads and reads[0].description == "coalesced"
    assert reads[0].details["Arguments"] == "coalesced"
    stages = formatted_node("coalesced_aggregation", newest_line(),
                            lambda n: n.name == "ShuffleQueryStage")
    assert stages and stages[0].statistics.startswith("sizeInBytes=")


def test_skew_marker_and_skewed_reads_are_evidence():
    for line in {p.parent.name for p in SCENARIOS}:
        path = SAMPLE_PLANS / line / "skew_join" / "simple_after.txt"
        report = diff_document(aqe_inspect.parse(path.read_text("utf-8")))
        skew = [r for q in report.queries for r in q.rewrites if r.kind == "skew-join"]
        assert len(skew) == 1
        assert skew[0].numbers["skewed_reads"] >= 1
        assert "SortMergeJoin" in skew[0].message


def test_nested_adaptive_plan_in_cached_relation_is_found():
    for line in {p.parent.name for p in SCENARIOS}:
        for mode in ("formatted_after", "simple_after"):
            query = aqe_inspect.parse(
                (SAMPLE_PLANS / line / "cached_table" / f"{mode}.txt").read_text()).queries[0]
            nested = [n for n in query.final.walk() if n.is_adaptive_root]
            assert nested and all(n.is_final_plan for n in nested), (line, mode)


def test_old_adaptive_root_form_reads_the_same():
    """Spark 3.0 printed `AdaptiveSparkPlan(isFinalPlan=true)`; rewrite a real plan to it."""
    path = SAMPLE_PLANS / newest_line() / "multi_rewrite" / "simple_after.txt"
    text = path.read_text("utf-8")
    old = text.replace("AdaptiveSparkPlan isFinalPlan=true", "AdaptiveSparkPlan(isFinalPlan=true)")
    assert old != text
    assert reported_counts_text(old) == reported_counts(path)


@pytest.mark.parametrize("vendor", [
    {"SortMergeJoin": "CometSortMergeJoin", "BroadcastHashJoin": "GpuBroadcastHashJoin",
     "AQEShuffleRead": "GpuCustomShuffleReader"},
    {"SortMergeJoin": "PhotonSortMergeJoin", "BroadcastHashJoin": "PhotonBroadcastHashJoin",
     "HashAggregate": "PhotonGroupingAgg"},
    {"BroadcastHashJoin": "BroadcastHashJoinExecTransformer", "Project": "ProjectExecTransformer"},
])
def test_vendor_operator_names_are_read_as_their_spark_operator(vendor):
    """Real plans with operators renamed the way RAPIDS, Photon, Gluten and Comet name them."""
    path = SAMPLE_PLANS / newest_line() / "multi_rewrite" / "simple_after.txt"
    text = path.read_text("utf-8")
    renamed = text
    for spark_name, vendor_name in vendor.items():
        renamed = renamed.replace(f" {spark_name} ", f" {vendor_name} ")
    assert renamed != text
    assert reported_counts_text(renamed) == reported_counts(path)


def reported_counts_text(text: str) -> Dict[str, int]:
    report = diff_document(aqe_inspect.parse(text, "mutated"))
    counts = dict.fromkeys(REWRITE_KINDS, 0)
    for query in report.queries:
        for kind, count in query.counts.items():
            counts[kind] += count
    return counts


def test_dpp_says_how_the_pruning_ran_as_the_jvm_did():
    """The `dpp` finding's mode (`reused` broadcast or `subquery`) is the class of the pruning
    subquery the JVM ran (truth.json `dpp_scans`: SubqueryBroadcastExec or SubqueryExec)."""
    checked = 0
    for scenario in SCENARIOS:
        truth = json.loads((scenario / "truth.json").read_text("utf-8"))
        want = sorted(scan["mode"] for plan in truth["adaptive_plans"]
                      for scan in plan.get("dpp_scans", []))
        for mode in ("formatted_after", "simple_after", "extended_after"):
            report = diff_document(aqe_inspect.parse((scenario / f"{mode}.txt").read_text()))
            got = sorted(r.numbers.get("mode") for q in report.queries
                         for r in q.rewrites if r.kind == "dpp")
            assert got == want, (scenario, mode)
            checked += len(got)
    assert checked >= 12  # dynamic_partition_pruning and dpp_subquery, both lines, 3 modes


def test_removed_operators_are_the_ones_the_jvm_lost():
    """one-row and limit-removed name operators of the initial plan (Sort, an aggregate, a
    limit), as many as truth.json's `logical_operators` lost between the initial and final
    physical plans."""
    for scenario in SCENARIOS:
        truth = json.loads((scenario / "truth.json").read_text("utf-8"))
        if not (truth["rewrites"]["one-row"] or truth["rewrites"]["limit-removed"]):
            continue
        report = diff_document(aqe_inspect.parse(
            (scenario / "formatted_after.txt").read_text()))
        removed = [r for q in report.queries for r in q.rewrites
                   if r.kind in ("one-row", "limit-removed")]
        assert removed and all(r.final_node is None and r.initial_node is not None
                               for r in removed), scenario
        names = {r.numbers["operator"] for r in removed}
        lost = {name for plan in truth["adaptive_plans"]
                for name, count in plan["logical_operators"]["initial"].items()
                if count > plan["logical_operators"]["final"].get(name, 0)}
        expected = {"sort": {"Sort"}, "aggregate": {"HashAggregate", "SortAggregate",
                                                    "ObjectHashAggregate"},
                    "limit": {"CollectLimit", "GlobalLimit", "TakeOrderedAndProject"}}
        assert all(any(name in expected[kind] for name in names) for kind in lost), \
            (scenario, names, lost)
