"""Generate sample Spark AQE plans and the JVM-derived truth about them.

Each scenario runs a small, real PySpark query in local mode and writes the
plan text Spark prints (before and after the action, in every explain mode)
next to a ``truth.json`` whose numbers come from walking the JVM plan objects
through py4j.  The truth never looks at plan text, so tests can parse the text
files and compare what they detect against facts Spark itself holds.

Usage::

    python sample_plans/generate.py --out sample_plans [--only NAME ...]

Importable API: ``SCENARIOS``, ``build_session()``, ``generate()``.
This module depends on the standard library and pyspark only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from py4j.protocol import Py4JJavaError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

TRUTH_SCHEMA = "aqe-inspect/truth/v1"

BEFORE_MODES = ("formatted", "simple")
AFTER_MODES = ("formatted", "simple", "extended", "cost", "codegen")

REWRITE_KEYS = (
    "coalesced",
    "skew-join",
    "smj-to-bhj",
    "smj-to-shj",
    "empty-relation",
    "local-read",
)
INFO_KEYS = ("dynamic-pruning", "reused-exchange", "reused-subquery", "query-stages")

# Settings every scenario starts from; each scenario adds or overrides keys.
# The static broadcast threshold is off so joins start as SortMergeJoin and any
# broadcast in a final plan is AQE's own decision.
COMMON_CONFS = {
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.shuffle.partitions": "20",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
}

RANGE_SPLITS = 2

AQE_PACKAGE = "org.apache.spark.sql.execution.adaptive."

# AQE shuffle read node: AQEShuffleReadExec since 3.2, CustomShuffleReaderExec before.
SHUFFLE_READ_CLASSES = frozenset({"AQEShuffleReadExec", "CustomShuffleReaderExec"})
EQUI_JOIN_CLASSES = frozenset(
    {"SortMergeJoinExec", "ShuffledHashJoinExec", "BroadcastHashJoinExec"}
)
SWITCH_TARGETS = {
    "BroadcastHashJoinExec": "smj-to-bhj",
    "ShuffledHashJoinExec": "smj-to-shj",
}


# --------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """One query whose plans are captured.

    ``build`` receives the session and a scratch directory for any tables it
    writes, and returns the (not yet executed) DataFrame.  ``expect`` maps a
    rewrite or info key to whether it must occur (count > 0) or must not
    (count == 0); it guards against a scenario silently losing its point.
    ``min_spark`` gates Spark lines where the scenario cannot exist; runs on
    them skip it and print ``min_spark_reason``.
    """

    name: str
    description: str
    build: Callable[[SparkSession, Path], DataFrame]
    confs: Mapping[str, str] = field(default_factory=dict)
    expect: Mapping[str, bool] = field(default_factory=dict)
    min_spark: tuple = (3, 2)
    min_spark_reason: str = (
        "AQEShuffleRead and the AQE configs used here date from Spark 3.2"
    )

    def all_confs(self) -> dict:
        """The full set of session settings this scenario runs with."""
        return {**COMMON_CONFS, **self.confs}


def _range(spark: SparkSession, rows: int) -> DataFrame:
    """``spark.range`` with a fixed split count, so every shuffle, skew and
    partition ratio is the same whatever the session's default parallelism
    (under ``local[1]`` a one-split range would need no shuffle at all)."""
    return spark.range(0, rows, 1, RANGE_SPLITS)


def _grouped_counts(spark: SparkSession, rows: int, groups: int) -> DataFrame:
    """A shuffle aggregation whose output is far smaller than its partition count."""
    return _range(spark, rows).groupBy((F.col("id") % groups).alias("k")).count()


def _build_coalesced_aggregation(spark: SparkSession, _: Path) -> DataFrame:
    return _grouped_counts(spark, 10_000, 7)


def _build_skew_join(spark: SparkSession, _: Path) -> DataFrame:
    """Key 0 holds 90% of the left side, so one shuffle partition dwarfs the rest."""
    left = _range(spark, 20_000).select(
        F.when(F.col("id") % 10 == 0, F.col("id") % 97).otherwise(0).alias("k"),
        F.col("id").alias("v"),
    )
    right = _range(spark, 97).select(
        F.col("id").alias("k"), (F.col("id") * 2).alias("w")
    )
    return left.join(right, "k").groupBy("w").agg(F.count("v").alias("n"))


def _filtered_join(spark: SparkSession, how: str = "inner") -> DataFrame:
    """A join whose right side a filter shrinks to a few hundred bytes, which
    the planner cannot foresee.  Its keys spread over many shuffle partitions
    so the non-empty partition ratio does not veto a broadcast."""
    left = _range(spark, 20_000).select(
        (F.col("id") % 500).alias("k"), F.col("id").alias("v")
    )
    right = (
        _range(spark, 20_000)
        .where(F.col("id") % 1000 < 20)
        .select((F.col("id") % 500).alias("k"), F.col("id").alias("w"))
    )
    return left.join(right, "k", how).select("k", "v", "w")


def _build_filtered_join(spark: SparkSession, _: Path) -> DataFrame:
    return _filtered_join(spark)


def _build_filtered_left_outer_join(spark: SparkSession, _: Path) -> DataFrame:
    return _filtered_join(spark, "left_outer")


def _build_empty_relation(spark: SparkSession, _: Path) -> DataFrame:
    """No row passes the right side's filter, which only execution can tell."""
    left = _range(spark, 5_000).select(
        (F.col("id") % 50).alias("k"), F.col("id").alias("v")
    )
    right = (
        _range(spark, 5_000)
        .where(F.col("id") * 3 % 7 == 10)
        .select((F.col("id") % 50).alias("k"), F.col("id").alias("w"))
    )
    return left.join(right, "k")


def _build_no_exchange(spark: SparkSession, _: Path) -> DataFrame:
    return (
        _range(spark, 100)
        .where(F.col("id") % 3 == 0)
        .select((F.col("id") * 2).alias("x"))
    )


def _build_multi_rewrite(spark: SparkSession, _: Path) -> DataFrame:
    """The runtime-broadcast join, aggregated afterwards so a coalesced read follows."""
    joined = _filtered_join(spark)
    return joined.groupBy((F.col("k") % 7).alias("bucket")).agg(
        F.sum("w").alias("total")
    )


def _build_smj_to_shj(spark: SparkSession, _: Path) -> DataFrame:
    left = _range(spark, 5_000).select(
        (F.col("id") % 300).alias("k"), F.col("id").alias("v")
    )
    right = _range(spark, 3_000).select(
        (F.col("id") % 300).alias("k"), F.col("id").alias("w")
    )
    return left.join(right, "k").groupBy("k").agg(F.count("*").alias("n"))


def _write_partitioned_tables(spark: SparkSession, data_dir: Path) -> tuple[str, str]:
    """A fact table partitioned by ``p`` and a small dimension table, as parquet."""
    fact_path = str(data_dir / "dpp_fact")
    dim_path = str(data_dir / "dpp_dim")
    (
        _range(spark, 2_000)
        .select(F.col("id"), (F.col("id") % 10).alias("p"))
        .write.mode("overwrite")
        .partitionBy("p")
        .parquet(fact_path)
    )
    (
        _range(spark, 10)
        .select(
            F.col("id").alias("p"),
            F.when(F.col("id") < 2, "hot").otherwise("cold").alias("tier"),
        )
        .write.mode("overwrite")
        .parquet(dim_path)
    )
    return fact_path, dim_path


def _build_dynamic_partition_pruning(spark: SparkSession, data_dir: Path) -> DataFrame:
    fact_path, dim_path = _write_partitioned_tables(spark, data_dir)
    fact = spark.read.parquet(fact_path)
    dim = spark.read.parquet(dim_path).where(F.col("tier") == "hot")
    return fact.join(dim, "p").groupBy("p").agg(F.count("id").alias("n"))


def _build_scalar_subquery(spark: SparkSession, _: Path) -> DataFrame:
    return spark.sql(
        """
        SELECT id % 5 AS k, count(*) AS n
        FROM {big}
        WHERE id > (SELECT avg(c) FROM (SELECT id % 13 AS g, count(*) AS c FROM {small} GROUP BY id % 13))
        GROUP BY id % 5
        """,
        big=_range(spark, 5_000),
        small=_range(spark, 1_300),
    )


def _build_reused_exchange(spark: SparkSession, _: Path) -> DataFrame:
    """The same aggregation on both sides of a self-join shares one shuffle."""
    counts = _grouped_counts(spark, 10_000, 40)
    return counts.alias("a").join(counts.alias("b"), F.col("a.k") == F.col("b.k") + 1)


def _build_cached_table(spark: SparkSession, _: Path) -> DataFrame:
    cached = _grouped_counts(spark, 10_000, 60).cache()
    return cached.groupBy((F.col("k") % 4).alias("bucket")).agg(
        F.sum("count").alias("total")
    )


def _build_window(spark: SparkSession, _: Path) -> DataFrame:
    by_group = Window.partitionBy("g").orderBy(F.col("id").desc())
    return (
        _range(spark, 5_000)
        .withColumn("g", F.col("id") % 9)
        .withColumn("rank", F.row_number().over(by_group))
        .where(F.col("rank") <= 2)
    )


def _build_union_of_aggregates(spark: SparkSession, _: Path) -> DataFrame:
    by_seven = _grouped_counts(spark, 5_000, 7)
    by_eleven = (
        _range(spark, 3_000)
        .groupBy((F.col("id") % 11).alias("k"))
        .agg(F.sum("id").alias("count"))
    )
    return by_seven.unionByName(by_eleven)


def _build_five_way_join(spark: SparkSession, _: Path) -> DataFrame:
    """A fact table joined to four dimensions, each on its own key."""
    fact = _range(spark, 20_000).select(
        F.col("id"),
        *[
            (F.col("id") % size).alias(f"k{i}")
            for i, size in enumerate((11, 13, 17, 19), 1)
        ],
    )
    joined = fact
    for i, size in enumerate((11, 13, 17, 19), 1):
        dim = _range(spark, size).select(
            F.col("id").alias(f"k{i}"), (F.col("id") * i).alias(f"d{i}")
        )
        joined = joined.join(dim, f"k{i}")
    return joined.groupBy("d1").agg(F.sum("d4").alias("s"))


def _build_aqe_declines(spark: SparkSession, _: Path) -> DataFrame:
    """Every row of the small side has key 42, so it fills one shuffle partition
    of twenty and the non-empty ratio falls below
    ``nonEmptyPartitionRatioForBroadcastJoin``; a literal key would be
    constant-folded into a cartesian product instead."""
    left = _range(spark, 20_000).select(
        (F.col("id") % 500).alias("k"), F.col("id").alias("v")
    )
    right = (
        _range(spark, 20_000)
        .where(F.col("id") % 1000 == 42)
        .select((F.col("id") % 500).alias("k"), F.col("id").alias("w"))
    )
    return left.join(right, "k").select("k", "v", "w")


_SKEW_CONFS = {
    "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1",
    "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": "1KB",
    "spark.sql.adaptive.skewJoin.skewedPartitionFactor": "2",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": "2KB",
}
# Between the tiny sides (well under 1 KB) and the 20k-row sides (hundreds of
# KB), so AQE can only ever broadcast the side the scenario means it to.
_RUNTIME_BROADCAST_CONFS = {"spark.sql.adaptive.autoBroadcastJoinThreshold": "64KB"}
_NO_RUNTIME_BROADCAST = {"spark.sql.adaptive.autoBroadcastJoinThreshold": "-1"}

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "coalesced_aggregation",
        "Group-by producing 7 groups over 20 shuffle partitions; AQE coalesces the small partitions.",
        _build_coalesced_aggregation,
        expect={"coalesced": True},
    ),
    Scenario(
        "coalesced_aggregation_off",
        "Same group-by with partition coalescing disabled: the shuffle read stays uncoalesced.",
        _build_coalesced_aggregation,
        confs={"spark.sql.adaptive.coalescePartitions.enabled": "false"},
        expect={"coalesced": False},
    ),
    Scenario(
        "skew_join",
        "Sort-merge join where key 0 holds 90% of the left rows; AQE splits the skewed partition.",
        _build_skew_join,
        confs=_SKEW_CONFS,
        expect={"skew-join": True, "smj-to-bhj": False},
    ),
    Scenario(
        "skew_join_off",
        "Same skewed join with skew-join handling disabled.",
        _build_skew_join,
        confs={**_SKEW_CONFS, "spark.sql.adaptive.skewJoin.enabled": "false"},
        expect={"skew-join": False, "smj-to-bhj": False},
    ),
    Scenario(
        "smj_to_bhj",
        "Join planned as sort-merge; the filtered side is tiny at run time and AQE broadcasts it.",
        _build_filtered_join,
        confs=_RUNTIME_BROADCAST_CONFS,
        expect={"smj-to-bhj": True},
    ),
    Scenario(
        "smj_to_bhj_off",
        "Same join with AQE's broadcast threshold disabled: it stays a sort-merge join.",
        _build_filtered_join,
        confs=_NO_RUNTIME_BROADCAST,
        expect={"smj-to-bhj": False},
    ),
    Scenario(
        "empty_relation",
        "Join whose right side filters to zero rows at run time; AQE replaces the join with an empty relation.",
        _build_empty_relation,
        confs=_NO_RUNTIME_BROADCAST,
        expect={"empty-relation": True},
    ),
    Scenario(
        "empty_relation_off",
        "Same join with AQEPropagateEmptyRelation excluded: the join runs on the empty side.",
        _build_empty_relation,
        confs={
            **_NO_RUNTIME_BROADCAST,
            "spark.sql.adaptive.optimizer.excludedRules": AQE_PACKAGE
            + "AQEPropagateEmptyRelation",
        },
        expect={"empty-relation": False},
    ),
    Scenario(
        "no_exchange",
        "Filter and project over a range: no shuffle, so AQE does not wrap the plan.",
        _build_no_exchange,
        expect={"query-stages": False, **{key: False for key in REWRITE_KEYS}},
    ),
    Scenario(
        "multi_rewrite",
        "Runtime broadcast switch (with local reads) followed by an aggregation whose read is coalesced.",
        _build_multi_rewrite,
        confs=_RUNTIME_BROADCAST_CONFS,
        expect={"smj-to-bhj": True, "local-read": True, "coalesced": True},
    ),
    Scenario(
        "local_read",
        "Left outer join broadcast at run time; its probe side is read map-locally (local shuffle read).",
        _build_filtered_left_outer_join,
        confs={
            **_RUNTIME_BROADCAST_CONFS,
            "spark.sql.adaptive.localShuffleReader.enabled": "true",
        },
        expect={"local-read": True, "smj-to-bhj": True},
    ),
    Scenario(
        "smj_to_shj",
        "Sort-merge join whose shuffle partitions all fit the local hash-map threshold; AQE picks a shuffled hash join.",
        _build_smj_to_shj,
        confs={
            **_NO_RUNTIME_BROADCAST,
            "spark.sql.join.preferSortMergeJoin": "true",
            "spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold": "64MB",
        },
        expect={"smj-to-shj": True, "smj-to-bhj": False},
    ),
    Scenario(
        "dynamic_partition_pruning",
        "Partitioned parquet fact joined to a filtered, broadcast dimension: dynamic partition pruning.",
        _build_dynamic_partition_pruning,
        confs={
            "spark.sql.autoBroadcastJoinThreshold": "10MB",
            "spark.sql.optimizer.dynamicPartitionPruning.enabled": "true",
        },
        expect={"dynamic-pruning": True},
    ),
    Scenario(
        "scalar_subquery",
        "Aggregation filtered by a scalar subquery that has its own aggregation shuffle.",
        _build_scalar_subquery,
        expect={"coalesced": True},
        min_spark=(3, 3),
        min_spark_reason="spark.sql() takes DataFrame arguments from PySpark 3.3",
    ),
    Scenario(
        "reused_exchange",
        "Self-join of one aggregation: the second side reuses the first side's shuffle.",
        _build_reused_exchange,
        confs=_NO_RUNTIME_BROADCAST,
        expect={"reused-exchange": True},
    ),
    Scenario(
        "cached_table",
        "Cached aggregation (its own adaptive plan) queried with a second aggregation.",
        _build_cached_table,
        expect={"coalesced": True},
    ),
    Scenario(
        "window",
        "Row-number window over a hash-partitioned shuffle, keeping the top two per group.",
        _build_window,
        expect={"coalesced": True},
    ),
    Scenario(
        "union_of_aggregates",
        "Union of two different aggregations, each with its own shuffle.",
        _build_union_of_aggregates,
        expect={"coalesced": True},
    ),
    Scenario(
        "five_way_join",
        "Fact table joined to four small dimensions; AQE broadcasts the dimensions at run time.",
        _build_five_way_join,
        confs=_RUNTIME_BROADCAST_CONFS,
        expect={"smj-to-bhj": True},
    ),
    Scenario(
        "aqe_declines",
        "Broadcastable side sits in 1 of 20 partitions; the non-empty partition ratio makes AQE keep the sort-merge join.",
        _build_aqe_declines,
        confs={
            **_RUNTIME_BROADCAST_CONFS,
            "spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin": "0.2",
        },
        expect={"smj-to-bhj": False, "smj-to-shj": False},
    ),
)


# --------------------------------------------------------------------------
# Reading plan facts from the JVM
# --------------------------------------------------------------------------


def _simple_name(obj) -> str:
    return obj.getClass().getSimpleName()


def _seq(scala_seq) -> list:
    """Materialise a Scala Seq reached through py4j as a Python list."""
    return [scala_seq.apply(i) for i in range(scala_seq.size())]


def _has_method(obj, name: str) -> bool:
    """Whether the object's class has a public zero-argument method ``name``."""
    try:
        obj.getClass().getMethod(name, None)
    except Py4JJavaError:
        return False
    return True


def _private_field(obj, names: Sequence[str]):
    """Read the first field among ``names`` declared by the object's class.

    AQE keeps ``isFinalPlan`` in a private field whose name changed across
    versions (``_isFinalPlan`` in 3.4+, ``isFinalPlan`` before), hence reflection.
    """
    for name in names:
        try:
            declared = obj.getClass().getDeclaredField(name)
        except Py4JJavaError:
            continue
        declared.setAccessible(True)
        return declared.get(obj)
    raise AttributeError(f"{_simple_name(obj)} has none of the fields {names}")


class _JvmTypes:
    """JVM classes used for instance checks, loaded once per session."""

    def __init__(self, spark: SparkSession):
        jvm = spark._jvm
        self.identity_set = jvm.java.util.IdentityHashMap
        self.query_stage = jvm.java.lang.Class.forName(AQE_PACKAGE + "QueryStageExec")

    def is_query_stage(self, node) -> bool:
        return self.query_stage.isInstance(node)


@dataclass
class _Edge:
    """A node to visit: ``counted`` nodes belong to the plan being tallied;
    uncounted ones are only searched for nested adaptive plans (they are
    shown elsewhere, e.g. the original of a reused exchange)."""

    node: object
    location: str
    counted: bool


def _outgoing(node, types: _JvmTypes, location: str, counted: bool) -> Iterator[_Edge]:
    """Every plan node reachable from ``node`` in one step, with its role."""
    name = _simple_name(node)
    for child in _seq(node.children()):
        yield _Edge(child, location, counted)
    for subquery in _seq(node.subqueries()):
        yield _Edge(subquery, "subquery", counted)
    if types.is_query_stage(node):
        yield _Edge(node.plan(), location, counted)
    if name in ("ReusedExchangeExec", "ReusedSubqueryExec"):
        yield _Edge(node.child(), location, False)
    if name == "InMemoryTableScanExec":
        yield _Edge(node.relation().cachedPlan(), "cached", False)


@dataclass
class _Walk:
    """Result of walking one plan tree up to (not into) nested adaptive plans."""

    nodes: list
    nested: list  # (AdaptiveSparkPlanExec, location)


def _walk(root, types: _JvmTypes, location: str) -> _Walk:
    """Collect the distinct nodes of one plan tree and the adaptive plans nested in it.

    Identity dedup keeps a node reachable twice (e.g. through a reused
    exchange's ``child``) from being counted twice.  A node first met on a
    search-only edge is visited again if a counted edge reaches it later, so
    the order in which the tree is walked never drops a count.
    """
    counted = types.identity_set()
    searched = types.identity_set()
    walk = _Walk(nodes=[], nested=[])
    stack = [_Edge(root, location, True)]
    while stack:
        edge = stack.pop()
        if counted.containsKey(edge.node) or (
            not edge.counted and searched.containsKey(edge.node)
        ):
            continue
        (counted if edge.counted else searched).put(edge.node, True)
        if edge.node is not root and _simple_name(edge.node) == "AdaptiveSparkPlanExec":
            walk.nested.append((edge.node, edge.location))
            continue
        if edge.counted:
            walk.nodes.append(edge.node)
        stack.extend(
            reversed(list(_outgoing(edge.node, types, edge.location, edge.counted)))
        )
    return walk


def _keys_string(keys) -> str:
    return "[" + ", ".join(key.toString() for key in _seq(keys)) + "]"


def _join_signature(join) -> tuple[str, str, str]:
    """What identifies a join across initial and final plans: AQE re-plans the
    join operator but keeps its type and key expressions."""
    return (
        join.joinType().toString(),
        _keys_string(join.leftKeys()),
        _keys_string(join.rightKeys()),
    )


def _is_empty_relation(node) -> bool:
    name = _simple_name(node)
    return name == "EmptyRelationExec" or (
        name == "LocalTableScanExec" and node.rows().isEmpty()
    )


def _is_local_read(node) -> bool:
    method = "isLocalRead" if _has_method(node, "isLocalRead") else "isLocalReader"
    return bool(getattr(node, method)())


def _expression_tree(expr) -> Iterator:
    stack = [expr]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(_seq(current.children()))


def _dynamic_pruning_filters(node) -> int:
    """DynamicPruningExpression wrapping a real subquery (not the ``true``
    placeholder Spark leaves when it drops the pruning)."""
    count = 0
    for expr in _seq(node.expressions()):
        for sub in _expression_tree(expr):
            if _simple_name(sub) == "DynamicPruningExpression":
                count += _simple_name(sub.child()) == "InSubqueryExec"
    return count


def _final_plan_counts(nodes: list, types: _JvmTypes) -> dict:
    """Rewrite and info counts that are read straight off final-plan nodes."""
    counts = dict.fromkeys(REWRITE_KEYS + INFO_KEYS, 0)
    for node in nodes:
        name = _simple_name(node)
        if name in SHUFFLE_READ_CLASSES:
            local = _is_local_read(node)
            counts["local-read"] += local
            counts["coalesced"] += (not local) and bool(node.hasCoalescedPartition())
        if name.endswith("JoinExec") and _has_method(node, "isSkewJoin"):
            counts["skew-join"] += bool(node.isSkewJoin())
        counts["empty-relation"] += _is_empty_relation(node)
        counts["reused-exchange"] += name == "ReusedExchangeExec"
        counts["reused-subquery"] += name == "ReusedSubqueryExec"
        counts["query-stages"] += types.is_query_stage(node)
        counts["dynamic-pruning"] += _dynamic_pruning_filters(node)
    return counts


def _join_switches(initial_nodes: list, final_nodes: list) -> list[dict]:
    """Pair each initial sort-merge join with a final join of the same signature
    and report those that AQE turned into a hash join."""
    unpaired = [n for n in final_nodes if _simple_name(n) in EQUI_JOIN_CLASSES]
    switches = []
    for join in initial_nodes:
        if _simple_name(join) != "SortMergeJoinExec":
            continue
        signature = _join_signature(join)
        match = next((f for f in unpaired if _join_signature(f) == signature), None)
        if match is None:
            continue
        unpaired.remove(match)
        target = _simple_name(match)
        if target in SWITCH_TARGETS:
            switches.append(
                {
                    "from": "SortMergeJoin",
                    "to": target[: -len("Exec")],
                    "build_side": match.buildSide().toString(),
                    "join_type": signature[0],
                    "left_keys": signature[1],
                    "right_keys": signature[2],
                }
            )
    return switches


def _adaptive_plan_truth(
    adaptive, location: str, types: _JvmTypes
) -> tuple[dict, list]:
    """Truth for one AdaptiveSparkPlanExec, plus the adaptive plans nested in it.

    Nested plans come from the final plan first, then from the initial plan:
    the latter can hold subquery plans AQE replaced and never ran (e.g. the
    ``SubqueryAdaptiveBroadcast`` of dynamic pruning), which explain still prints.
    """
    final = _walk(adaptive.executedPlan(), types, location)
    initial = _walk(adaptive.initialPlan(), types, location)
    counts = _final_plan_counts(final.nodes, types)
    initially_empty = sum(_is_empty_relation(n) for n in initial.nodes)
    counts["empty-relation"] = max(0, counts["empty-relation"] - initially_empty)
    switches = _join_switches(initial.nodes, final.nodes)
    for switch in switches:
        counts[SWITCH_TARGETS[switch["to"] + "Exec"]] += 1
    truth = {
        "location": location,
        "is_final_plan": bool(
            _private_field(adaptive, ("_isFinalPlan", "isFinalPlan"))
        ),
        "rewrites": {key: counts[key] for key in REWRITE_KEYS},
        "info": {key: counts[key] for key in INFO_KEYS},
        "join_switches": switches,
    }
    return truth, final.nested + initial.nested


def _collect_adaptive_plans(executed_plan, types: _JvmTypes) -> list[dict]:
    """Truth for every adaptive plan reachable from the executed plan, main first."""
    plans = []
    done = types.identity_set()
    if _simple_name(executed_plan) == "AdaptiveSparkPlanExec":
        pending = [(executed_plan, "main")]
    else:
        pending = list(_walk(executed_plan, types, "main").nested)
    while pending:
        adaptive, location = pending.pop(0)
        if done.containsKey(adaptive):
            continue
        done.put(adaptive, True)
        truth, nested = _adaptive_plan_truth(adaptive, location, types)
        plans.append(truth)
        pending.extend(nested)
    return plans


def read_truth(df: DataFrame, scenario: Scenario, spark: SparkSession) -> dict:
    """Build truth.json content for an executed DataFrame from its JVM plan objects."""
    types = _JvmTypes(spark)
    executed_plan = df._jdf.queryExecution().executedPlan()
    plans = _collect_adaptive_plans(executed_plan, types)
    main_is_adaptive = _simple_name(executed_plan) == "AdaptiveSparkPlanExec"
    return {
        "schema": TRUTH_SCHEMA,
        "spark_version": spark.version,
        "scenario": scenario.name,
        "description": scenario.description,
        "confs": scenario.all_confs(),
        "adaptive": main_is_adaptive,
        "is_final_plan": plans[0]["is_final_plan"] if main_is_adaptive else None,
        "rewrites": {
            key: sum(p["rewrites"][key] for p in plans) for key in REWRITE_KEYS
        },
        "info": {key: sum(p["info"][key] for p in plans) for key in INFO_KEYS},
        "join_switches": [s for p in plans for s in p.pop("join_switches")],
        "adaptive_plans": plans,
    }


def expectation_problems(truth: dict, scenario: Scenario) -> list[str]:
    """Where the truth contradicts what the scenario exists to show."""
    observed = {**truth["rewrites"], **truth["info"]}
    problems = []
    for key, wanted in scenario.expect.items():
        if (observed[key] > 0) != wanted:
            verb = "expected" if wanted else "did not expect"
            problems.append(f"{scenario.name}: {verb} {key}, got count {observed[key]}")
    return problems


# --------------------------------------------------------------------------
# Running scenarios
# --------------------------------------------------------------------------


def explain_string(spark: SparkSession, df: DataFrame, mode: str) -> str:
    """The text ``df.explain(mode)`` would print, without going through stdout."""
    return spark._jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), mode)


class _ScenarioConfs:
    """Set a scenario's confs and put the previous session values back after."""

    def __init__(self, spark: SparkSession, confs: Mapping[str, str]):
        self._sql_conf = spark._jsparkSession.sessionState().conf()
        self._confs = confs
        self._saved: dict = {}

    def __enter__(self):
        for key, value in self._confs.items():
            explicit = self._sql_conf.contains(key)
            self._saved[key] = self._sql_conf.getConfString(key) if explicit else None
            self._sql_conf.setConfString(key, value)
        return self

    def __exit__(self, *exc_info):
        for key, previous in self._saved.items():
            if previous is None:
                self._sql_conf.unsetConf(key)
            else:
                self._sql_conf.setConfString(key, previous)


def spark_version_tuple(spark: SparkSession) -> tuple:
    return tuple(int(part) for part in spark.version.split("-")[0].split(".")[:2])


def _write_text(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def _write_explains(
    spark: SparkSession, df: DataFrame, out_dir: Path, modes: Sequence[str], phase: str
) -> list[Path]:
    """Write ``<mode>_<phase>.txt`` for each explain mode."""
    return [
        _write_text(out_dir / f"{mode}_{phase}.txt", explain_string(spark, df, mode))
        for mode in modes
    ]


def run_scenario(
    spark: SparkSession, scenario: Scenario, out_dir: Path, data_dir: Path
) -> tuple[list[Path], dict]:
    """Capture one scenario's plans and truth into ``out_dir``.

    Explaining the same DataFrame after ``collect()`` shows the plan AQE
    finished with, because the action ran that DataFrame's own query execution.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    with _ScenarioConfs(spark, scenario.all_confs()):
        df = scenario.build(spark, data_dir)
        written = _write_explains(spark, df, out_dir, BEFORE_MODES, "before")
        df.collect()
        written += _write_explains(spark, df, out_dir, AFTER_MODES, "after")
        truth = read_truth(df, scenario, spark)
    spark.catalog.clearCache()
    written.append(
        _write_text(out_dir / "truth.json", json.dumps(truth, indent=2) + "\n")
    )
    return written, truth


def scenario_named(name: str) -> Scenario:
    """The scenario called `name`; the jobs that run one scenario (driver logs, event logs)
    stop with the known names when there is none."""
    for scenario in SCENARIOS:
        if scenario.name == name:
            return scenario
    known = ", ".join(s.name for s in SCENARIOS)
    raise SystemExit(f"unknown scenario {name!r}; known: {known}")


def _select(only: Sequence[str] | None) -> list[Scenario]:
    if not only:
        return list(SCENARIOS)
    known = {s.name: s for s in SCENARIOS}
    unknown = sorted(set(only) - set(known))
    if unknown:
        raise ValueError(f"unknown scenarios: {', '.join(unknown)}")
    return [known[name] for name in only]


def generate(
    spark: SparkSession,
    out_dir,
    only: Sequence[str] | None = None,
    strict: bool = False,
) -> list[Path]:
    """Run the selected scenarios and write their files under
    ``out_dir/spark-<version>/<scenario>/``; return the paths written.

    A scenario whose truth contradicts its ``expect`` is reported on stderr;
    with ``strict`` the run then ends with ``RuntimeError``.
    """
    version_dir = Path(out_dir) / f"spark-{spark.version}"
    written: list[Path] = []
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="aqe-sample-data-") as data_dir:
        for scenario in _select(only):
            if spark_version_tuple(spark) < scenario.min_spark:
                needed = ".".join(map(str, scenario.min_spark))
                print(
                    f"skip {scenario.name}: needs Spark {needed}+ ({scenario.min_spark_reason})",
                    file=sys.stderr,
                )
                continue
            started = time.monotonic()
            paths, truth = run_scenario(
                spark, scenario, version_dir / scenario.name, Path(data_dir)
            )
            written.extend(paths)
            problems.extend(expectation_problems(truth, scenario))
            print(
                f"{scenario.name}: {time.monotonic() - started:.1f}s rewrites={truth['rewrites']}",
                file=sys.stderr,
            )
    for problem in problems:
        print(f"MISMATCH {problem}", file=sys.stderr)
    if strict and problems:
        raise RuntimeError(f"{len(problems)} scenario expectation(s) not met")
    return written


def build_session(warehouse_dir=None) -> SparkSession:
    """The single local session every scenario shares: two cores, no UI, UTC,
    and a warehouse under a temporary directory unless one is given."""
    warehouse = warehouse_dir or tempfile.mkdtemp(prefix="aqe-sample-warehouse-")
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("aqe-inspect-sample-plans")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        required=True,
        help="root directory; files go to <out>/spark-<X.Y.Z>/<scenario>/",
    )
    parser.add_argument(
        "--only", nargs="+", metavar="NAME", help="run only these scenarios"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="aqe-sample-warehouse-") as warehouse:
        spark = build_session(warehouse)
        try:
            generate(spark, args.out, only=args.only, strict=True)
        except RuntimeError as error:
            print(error, file=sys.stderr)
            return 1
        finally:
            spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
