"""The sample generator's negative controls and run-time stage evidence (truth.json `control`,
`stages`, `joins`; real PySpark 3.5 and 4.3 runs): every control names a known reason and the
setting that decides it, and the stage sizes the JVM reported show that reason, recomputed here
the way Spark's rules compute it."""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Dict, List, Optional

import pytest

import aqe_inspect

from .conftest import SAMPLE_PLANS

TRUTHS = sorted(SAMPLE_PLANS.glob("spark-*/*/truth.json"))
CONTROLS = [p for p in TRUTHS if json.loads(p.read_text("utf-8"))["control"] is not None]
REASONS = {"disabled", "above-broadcast-threshold", "below-skew-factor", "unsplittable-join-side",
           "too-many-empty-partitions", "user-repartition", "aqe-disabled", "kept-by-cost",
           "side-not-empty"}
KINDS = {"coalesced", "skew-join", "smj-to-bhj", "smj-to-shj", "empty-relation", "local-read",
         "dpp", "dpp-dropped", "rebalance-skew", "one-row", "limit-removed", "adaptive"}
# The reason each control sets up, and the setting that decides it (None: the query does).
EXPECTED = {
    "coalesced_aggregation_off": ("disabled", "spark.sql.adaptive.coalescePartitions.enabled"),
    "skew_join_off": ("disabled", "spark.sql.adaptive.skewJoin.enabled"),
    "smj_to_bhj_off": ("disabled", "spark.sql.adaptive.autoBroadcastJoinThreshold"),
    "empty_relation_off": ("disabled", "spark.sql.adaptive.optimizer.excludedRules"),
    "local_read_off": ("disabled", "spark.sql.adaptive.localShuffleReader.enabled"),
    "smj_to_shj_off": ("disabled", "spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold"),
    "aqe_off": ("aqe-disabled", "spark.sql.adaptive.enabled"),
    "broadcast_just_above": ("above-broadcast-threshold",
                             "spark.sql.adaptive.autoBroadcastJoinThreshold"),
    "broadcast_static_just_above": ("above-broadcast-threshold",
                                    "spark.sql.autoBroadcastJoinThreshold"),
    "skew_below_factor": ("below-skew-factor", "spark.sql.adaptive.skewJoin.skewedPartitionFactor"),
    "skew_unsplittable_side": ("unsplittable-join-side", None),
    "aqe_declines": ("too-many-empty-partitions",
                     "spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin"),
    "user_repartition": ("user-repartition", None),
    "dynamic_partition_pruning_off": ("disabled",
                                      "spark.sql.optimizer.dynamicPartitionPruning.enabled"),
    "rebalance_skew_off": ("disabled",
                           "spark.sql.adaptive.optimizeSkewsInRebalancePartitions.enabled"),
    "one_row_off": ("disabled", "spark.sql.adaptive.optimizer.excludedRules"),
    "limit_removed_off": ("disabled", "spark.sql.adaptive.optimizer.excludedRules"),
    "rebalance_skew_none_off": ("disabled",
                                "spark.sql.adaptive.optimizeSkewsInRebalancePartitions.enabled"),
    "kept_by_cost": ("kept-by-cost",
                     "spark.sql.execution.broadcastHashJoin.outputPartitioningExpandLimit"),
    "empty_anti_join_not_empty": ("side-not-empty", None),
    "empty_anti_join_excluded": ("disabled", "spark.sql.adaptive.optimizer.excludedRules"),
    "empty_anti_join_aqe_off": ("aqe-disabled", "spark.sql.adaptive.enabled"),
}
# What "switched off" means for each switch a `disabled` control uses.
OFF = {
    "spark.sql.adaptive.coalescePartitions.enabled": lambda v: v == "false",
    "spark.sql.adaptive.skewJoin.enabled": lambda v: v == "false",
    "spark.sql.adaptive.localShuffleReader.enabled": lambda v: v == "false",
    "spark.sql.adaptive.autoBroadcastJoinThreshold": lambda v: int(v) < 0,
    "spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold": lambda v: int(v) == 0,
    "spark.sql.adaptive.optimizer.excludedRules": lambda v: v.endswith(
        (".AQEPropagateEmptyRelation", ".OptimizeOneRowPlan", ".EliminateLimits")),
    "spark.sql.optimizer.dynamicPartitionPruning.enabled": lambda v: v == "false",
    "spark.sql.adaptive.optimizeSkewsInRebalancePartitions.enabled": lambda v: v == "false",
}
SKEW_THRESHOLD = "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes"
SKEW_FACTOR = "spark.sql.adaptive.skewJoin.skewedPartitionFactor"
KIB = 1024


def line_and_name(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}"


def load(path: Path) -> dict:
    return json.loads(path.read_text("utf-8"))


def median(sizes: List[int]) -> int:
    """Spark's Utils.median as OptimizeSkewedJoin uses it, written out again here."""
    ordered = sorted(sizes)
    half = len(ordered) // 2
    if len(ordered) % 2 == 0:
        return max((ordered[half - 1] + ordered[half]) // 2, 1)
    return max(ordered[half], 1)


def skewed(sizes: List[int], factor: float, threshold: int) -> bool:
    return max(sizes) > max(threshold, int(median(sizes) * factor))


def join_sides(truth: dict) -> Dict[str, dict]:
    """The stages the first join reading a stage on both sides reads, by side."""
    stages = {(s["location"], s["id"]): s for s in truth["stages"]}
    join = next(j for j in truth["joins"]
                if j["left_stage"] is not None and j["right_stage"] is not None)
    return {"join": join, "left": stages[join["location"], join["left_stage"]],
            "right": stages[join["location"], join["right_stage"]]}


def byte_conf(value: str) -> int:
    units = {"": 1, "b": 1, "kb": KIB, "mb": KIB ** 2}
    digits = value.lower().rstrip("kmb")
    return int(digits) * units[value.lower()[len(digits):]]


def test_every_truth_carries_control_stages_and_joins():
    assert TRUTHS
    for path in TRUTHS:
        truth = load(path)
        assert truth["schema"] == "aqe-inspect/truth/v1"
        assert {"control", "stages", "joins"} <= set(truth), path
        for stage in truth["stages"]:
            assert stage["kind"] in ("shuffle", "broadcast"), path
            if stage["kind"] == "shuffle":
                sizes = stage["bytes_by_partition"]
                assert sizes and all(size >= 0 for size in sizes), path
                assert stage["shuffle_origin"], path
                # rows were written exactly when shuffle bytes were
                assert (sum(sizes) > 0) == (stage["row_count"] > 0), path
            else:
                assert stage["bytes_by_partition"] is None and stage["shuffle_origin"] is None
        ids = {(s["location"], s["id"]) for s in truth["stages"]}
        for join in truth["joins"]:
            for side in ("left_stage", "right_stage"):
                assert join[side] is None or (join["location"], join[side]) in ids, path


def test_the_controls_are_the_ones_the_issue_asks_for_on_both_lines():
    by_line: Dict[str, Dict[str, tuple]] = {}
    for path in CONTROLS:
        control = load(path)["control"]
        by_line.setdefault(path.parent.parent.name, {})[path.parent.name] = (
            control["reason"], control["config"])
    assert set(by_line) == {"spark-3.5.9", "spark-4.3.0"}
    for line, controls in by_line.items():
        assert controls == EXPECTED, line
        assert {reason for reason, _ in controls.values()} == REASONS


@pytest.mark.parametrize("path", CONTROLS, ids=line_and_name)
def test_control_names_a_reason_a_config_and_a_rewrite_that_did_not_happen(path):
    truth = load(path)
    control = truth["control"]
    assert control["reason"] in REASONS and control["kind"] in KINDS
    assert control["text"].endswith(".") and len(control["text"]) > 20
    config: Optional[str] = control["config"]
    if config is not None:
        assert config.startswith("spark.sql.")
        # the setting the scenario ran with, and the value the facts recorded
        assert control["facts"]["config_value"] == truth["confs"][config]
    if control["kind"] == "adaptive":
        assert truth["adaptive"] is False and truth["stages"] == []
    else:
        assert truth["rewrites"][control["kind"]] == 0
    twin = control["twin"]
    if twin is not None:
        twin_truth = load(path.parent.parent / twin / "truth.json")
        assert twin_truth["control"] is None
        happened = (sum(twin_truth["rewrites"].values()) if control["kind"] == "adaptive"
                    else twin_truth["rewrites"][control["kind"]])
        assert happened > 0, twin


@pytest.mark.parametrize("path", CONTROLS, ids=line_and_name)
def test_the_stage_sizes_show_the_reason(path):
    """Recompute each reason from `stages` and `confs` alone, as Spark's rule would."""
    truth = load(path)
    control, confs = truth["control"], truth["confs"]
    facts, reason = control["facts"], control["reason"]
    if reason == "disabled":
        assert OFF[control["config"]](confs[control["config"]])
        if control["kind"] == "empty-relation":
            # the rule was excluded while a join side wrote no row
            sides = join_sides(truth)
            assert min(sides["left"]["row_count"], sides["right"]["row_count"]) == 0
            assert facts["side_rows"] == 0 and truth["empty_relations"] == []
    elif reason == "aqe-disabled":
        assert confs["spark.sql.adaptive.enabled"] == "false" and not truth["adaptive"]
    elif reason == "above-broadcast-threshold":
        sides = join_sides(truth)
        threshold = int(confs[control["config"]])
        smaller = min(sides["left"]["size_in_bytes"], sides["right"]["size_in_bytes"])
        assert facts["side_bytes"] == smaller and facts["threshold_bytes"] == threshold
        assert 0.85 * smaller <= threshold < smaller
    elif reason == "below-skew-factor":
        sides = join_sides(truth)
        sizes = sides["left"]["bytes_by_partition"]
        factor, threshold = float(confs[SKEW_FACTOR]), byte_conf(confs[SKEW_THRESHOLD])
        assert confs["spark.sql.adaptive.coalescePartitions.enabled"] == "false"
        assert max(sizes) > threshold  # the byte threshold would allow it ...
        assert max(sizes) <= factor * median(sizes) < 1.15 * max(sizes)  # ... the factor does not
        assert facts["max_partition_bytes"] == max(sizes)
        assert facts["median_partition_bytes"] == median(sizes)
        for side in ("left", "right"):
            assert min(sides[side]["bytes_by_partition"]) > 0, side
        assert not skewed(sides["right"]["bytes_by_partition"], factor, threshold)
    elif reason == "unsplittable-join-side":
        sides = join_sides(truth)
        factor, threshold = float(confs[SKEW_FACTOR]), byte_conf(confs[SKEW_THRESHOLD])
        assert sides["join"]["join_type"] == "LeftOuter"
        assert skewed(sides["right"]["bytes_by_partition"], factor, threshold)
        assert not skewed(sides["left"]["bytes_by_partition"], factor, threshold)
        assert facts["side"] == "right"
    elif reason == "too-many-empty-partitions":
        sides = join_sides(truth)
        side = min(sides["left"], sides["right"], key=lambda s: s["size_in_bytes"])
        sizes = side["bytes_by_partition"]
        ratio = sum(1 for size in sizes if size > 0) / len(sizes)
        assert ratio < float(confs[control["config"]])
        assert side["size_in_bytes"] <= byte_conf(
            confs["spark.sql.adaptive.autoBroadcastJoinThreshold"])
        assert facts["non_empty_ratio"] == round(ratio, 3)
    elif reason == "kept-by-cost":
        # The lower join's smaller side passes both of DynamicJoinSelection's tests (the
        # threshold, the non-empty ratio), yet every join of the final plan is sort-merge: with
        # the expand limit 0 a broadcast would add a shuffle under the upper join.
        sides = join_sides(truth)
        side = min(sides["left"], sides["right"], key=lambda s: s["size_in_bytes"])
        other = max(sides["left"], sides["right"], key=lambda s: s["size_in_bytes"])
        threshold = byte_conf(confs["spark.sql.adaptive.autoBroadcastJoinThreshold"])
        assert side["size_in_bytes"] <= threshold < other["size_in_bytes"]
        sizes = side["bytes_by_partition"]
        ratio = sum(1 for size in sizes if size > 0) / len(sizes)
        assert ratio >= float(confs.get(
            "spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin", "0.2"))
        assert int(confs[control["config"]]) == 0
        assert [j["operator"] for j in truth["joins"]] == ["SortMergeJoin"] * 2
        assert truth["join_switches"] == [] and facts["side_bytes"] == side["size_in_bytes"]
    elif reason == "side-not-empty":
        # Both sides of the join read a stage that wrote rows: nothing for
        # AQEPropagateEmptyRelation to propagate, and the join is still in the final plan.
        sides = join_sides(truth)
        rows = [sides["left"]["row_count"], sides["right"]["row_count"]]
        assert min(rows) > 0 and facts["side_rows"] == min(rows)
        assert truth["empty_relations"] == []
    elif reason == "user-repartition":
        (stage,) = truth["stages"]
        assert stage["shuffle_origin"] == "REPARTITION_BY_NUM"
        assert facts["partitions"] == len(stage["bytes_by_partition"]) == 20
    else:  # pragma: no cover - the reason list above is closed
        pytest.fail(reason)


def test_the_positive_repartition_twin_is_by_column_and_coalesced():
    for line in ("spark-3.5.9", "spark-4.3.0"):
        truth = load(SAMPLE_PLANS / line / "repartition_by_column" / "truth.json")
        (stage,) = truth["stages"]
        assert stage["shuffle_origin"] == "REPARTITION_BY_COL"
        assert truth["rewrites"]["coalesced"] == 1


def printed_size(size: int) -> str:
    """Spark's Utils.bytesToString for the sizes seen here: a unit once the size
    is at least twice it, one decimal rounded half up (Java's %.1f)."""
    for power, unit in ((4, "TiB"), (3, "GiB"), (2, "MiB"), (1, "KiB")):
        if size >= 2 * KIB ** power:
            value = (Decimal(size) / KIB ** power).quantize(Decimal("0.1"), ROUND_HALF_UP)
            return f"{value} {unit}"
    return f"{size}.0 B"


def stage_statistics_in_text(path: Path) -> List[tuple]:
    """(rowCount, sizeInBytes) of each query stage, as Spark printed them."""
    query = aqe_inspect.parse(path.read_text("utf-8"), str(path)).queries[0]
    printed = []
    for node in query.final.walk():
        if node.name in ("ShuffleQueryStage", "BroadcastQueryStage") and node.statistics:
            fields = dict(part.split("=", 1) for part in node.statistics.split(", "))
            printed.append((int(float(fields["rowCount"])), fields["sizeInBytes"]))
    return sorted(printed)


SINGLE_PLAN_4X = [p.parent for p in TRUTHS if p.parent.parent.name.startswith("spark-4")
                  and len(load(p)["adaptive_plans"]) == 1]


@pytest.mark.parametrize("scenario", SINGLE_PLAN_4X, ids=lambda p: p.name)
def test_stage_row_counts_agree_with_the_statistics_spark_printed(scenario):
    """4.x prints each query stage's Statistics in formatted mode; the JVM's row counts and sizes
    match them (also for the scenarios whose texts come from an earlier run than their truth)."""
    truth = load(scenario / "truth.json")
    printed = stage_statistics_in_text(scenario / "formatted_after.txt")
    assert printed == sorted((s["row_count"], printed_size(s["size_in_bytes"]))
                             for s in truth["stages"])


# ---------------------------------------------------------------------------------------------
# Empty propagation: every subtree AQEPropagateEmptyRelation replaced (`empty_relations`, read
# from the logical plans AQE started from and ended with), and the rule's applications in the
# plan-change log the generator's JVM wrote (`empty_relation_rule`)
# ---------------------------------------------------------------------------------------------

EMPTY_RULE = "org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation"
EMPTY_NODES = {"LocalRelation", "EmptyRelation"}
# What each kind of place must look like: the operator that went, and what stands in its place.
PLACE_SHAPES = {
    "Join LeftAnti": ({"LogicalQueryStage", "Project"}, "left"),
    "Join LeftOuter": ({"Project"}, "left"),
    "Join LeftSemi": (EMPTY_NODES, None),
    "Join Inner": (EMPTY_NODES, None),
    "Aggregate": (EMPTY_NODES, None),
    "Sort": (EMPTY_NODES, None),
    "Window": (EMPTY_NODES, None),
    "GlobalLimit": (EMPTY_NODES, None),
}


@pytest.mark.parametrize("path", TRUTHS, ids=line_and_name)
def test_empty_relation_count_is_the_places_the_jvm_lost(path):
    truth = load(path)
    places = truth["empty_relations"]
    assert truth["rewrites"]["empty-relation"] == len(places)
    for plan in truth["adaptive_plans"]:
        mine = [p for p in places if p["location"] == plan["location"]]
        assert plan["rewrites"]["empty-relation"] == len(mine), plan["location"]
        # a place left with an empty relation is an empty node AQE added to the physical plan
        assert plan["empty_nodes"] == sum(p["replaced_by"] in EMPTY_NODES for p in mine)
    rule = truth["empty_relation_rule"]
    assert rule is not None and rule["rule"] == EMPTY_RULE, path
    # the plan-change log and the logical plans agree: a place for every application, an
    # application for every place
    assert (rule["applications"] > 0) == bool(places)
    assert rule["unexplained_applications"] == 0
    assert all(p["rule_applications"] >= 1 for p in places)
    assert sum(p["rule_applications"] for p in places) >= rule["applications"]


@pytest.mark.parametrize("path", [p for p in TRUTHS if load(p).get("empty_relations")],
                         ids=line_and_name)
def test_each_place_names_what_went_what_replaced_it_and_the_empty_stage(path):
    truth = load(path)
    final_stages = {(s["location"], s["id"]): s for s in truth["stages"]}
    for place in truth["empty_relations"]:
        removed, replaced_by = place["removed"], place["replaced_by"]
        if removed == "Union":
            assert place["branches_dropped"] >= 1 and place["kept_side"] is None
        else:
            replacements, side = PLACE_SHAPES[removed]
            assert replaced_by in replacements and place["kept_side"] == side, place
            assert place["branches_dropped"] is None
        assert place["empty_stages"], place
        for stage in place["empty_stages"]:
            assert stage["row_count"] == 0 and stage["kind"] in ("shuffle", "broadcast")
            key = (place["location"], stage["id"])
            # a stage still in the final plan is listed there with the same 0 rows; one the
            # rewrite dropped is not
            assert stage["in_final_plan"] == (key in final_stages)
            if stage["in_final_plan"]:
                assert final_stages[key]["row_count"] == 0


def test_empty_propagation_samples_cover_every_shape_on_both_lines():
    """The shapes issue 47 lists: a join by an empty relation or by one side (outer, anti,
    semi, inner with the left side empty), a union branch dropped, an aggregate, sort, window
    and limit over nothing, in a subquery and in a cached plan, several in one query."""
    for line in ("spark-3.5.9", "spark-4.3.0"):
        truths = [load(p) for p in TRUTHS if p.parent.parent.name == line]
        places = [(t["scenario"], p) for t in truths for p in t["empty_relations"]]
        removed = {p["removed"] for _, p in places}
        assert removed >= set(PLACE_SHAPES) | {"Union"}, line
        assert {p["location"] for _, p in places} == {"main", "subquery", "cached"}, line
        assert max(len(t["empty_relations"]) for t in truths) >= 3, line
        assert any(p["removed"] == "Join Inner" and p["empty_stages"][0]["id"] == 0
                   and t["joins"] == [] for t in truths for p in t["empty_relations"]
                   if t["scenario"] == "empty_left_inner_join"), line
        # the AQE-off control has no place and no rule application, the positive twin has both
        by_name = {t["scenario"]: t for t in truths}
        twin = by_name["empty_anti_join"]
        assert [p["removed"] for p in twin["empty_relations"]] == ["Join LeftAnti"]
        for control in ("empty_anti_join_not_empty", "empty_anti_join_excluded",
                        "empty_anti_join_aqe_off"):
            truth = by_name[control]
            assert truth["control"]["twin"] == "empty_anti_join"
            assert truth["empty_relations"] == [] and truth["rewrites"]["empty-relation"] == 0
            assert truth["empty_relation_rule"]["applications"] == 0
