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
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

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
    "dpp",
    "dpp-dropped",
    "rebalance-skew",
    "one-row",
    "limit-removed",
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
EMPTY_RULE = AQE_PACKAGE + "AQEPropagateEmptyRelation"

# AQE shuffle read node: AQEShuffleReadExec since 3.2, CustomShuffleReaderExec before.
SHUFFLE_READ_CLASSES = frozenset({"AQEShuffleReadExec", "CustomShuffleReaderExec"})
EQUI_JOIN_CLASSES = frozenset(
    {"SortMergeJoinExec", "ShuffledHashJoinExec", "BroadcastHashJoinExec"}
)
# Query stages whose run-time evidence truth.json records, by class.
STAGE_KINDS = {"ShuffleQueryStageExec": "shuffle", "BroadcastQueryStageExec": "broadcast"}
# Shuffle origins of a REBALANCE (hint or write): OptimizeSkewInRebalancePartitions' scope.
REBALANCE_ORIGINS = frozenset({"REBALANCE_PARTITIONS_BY_COL", "REBALANCE_PARTITIONS_BY_NONE"})
SCAN_CLASSES = frozenset({"FileSourceScanExec", "BatchScanExec"})
AGGREGATE_CLASSES = frozenset({"HashAggregateExec", "ObjectHashAggregateExec", "SortAggregateExec"})
LIMIT_CLASSES = frozenset({"CollectLimitExec", "GlobalLimitExec", "TakeOrderedAndProjectExec"})
SWITCH_TARGETS = {
    "BroadcastHashJoinExec": "smj-to-bhj",
    "ShuffledHashJoinExec": "smj-to-shj",
}


# --------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------


# Why a negative control's rewrite did not happen; truth.json's ``control.reason``.
CONTROL_REASONS = (
    "disabled",  # the feature is switched off by its config
    "above-broadcast-threshold",
    "below-skew-factor",
    "unsplittable-join-side",
    "too-many-empty-partitions",
    "user-repartition",
    "aqe-disabled",
    "kept-by-cost",  # a switch would add a shuffle: AQE's cost evaluator keeps the plan
    "side-not-empty",  # the input that would empty the operator has rows at run time
)
CONTROL_KINDS = REWRITE_KEYS + ("adaptive",)

ConfLookup = Callable[[str], str]


@dataclass(frozen=True)
class Control:
    """What a negative control sets up: the reason its rewrite does not happen.

    ``config`` is the full key of the setting that decides it, or None when
    the query itself does (a join type, a user repartition); its effective
    value goes into the facts as ``config_value``.  ``facts`` measures the numbers that show the reason from the truth just
    read (its ``stages``, ``joins``, ``rewrites``) and the session's effective
    settings (``conf(key)``, defaults included).  ``claims`` are the
    conditions those facts must meet for the control to make its point, each
    with what it says; strict runs fail when one does not hold.  ``twin``
    names the positive scenario built from the same query, if there is one.
    """

    kind: str
    reason: str
    config: Optional[str]
    text: str
    facts: Callable[[dict, ConfLookup], dict]
    claims: tuple = ()
    twin: Optional[str] = None

    def __post_init__(self):
        if self.reason not in CONTROL_REASONS or self.kind not in CONTROL_KINDS:
            raise ValueError(f"unknown control kind or reason: {self.kind}, {self.reason}")

    def record(self, truth: dict, conf: ConfLookup) -> dict:
        """The ``control`` object of truth.json."""
        return {
            "kind": self.kind,
            "reason": self.reason,
            "config": self.config,
            "text": self.text,
            "twin": self.twin,
            "facts": {
                **({"config_value": conf(self.config)} if self.config else {}),
                **self.facts(truth, conf),
            },
        }


@dataclass(frozen=True)
class Scenario:
    """One query whose plans are captured.

    ``build`` receives the session and a scratch directory for any tables it
    writes, and returns the (not yet executed) DataFrame.  ``expect`` maps a
    rewrite or info key to whether it must occur (count > 0) or must not
    (count == 0); it guards against a scenario silently losing its point.
    ``min_spark`` gates Spark lines where the scenario cannot exist; runs on
    them skip it and print ``min_spark_reason``.  ``control`` makes it a
    negative control (see ``Control``).  ``tune``, given the session and the
    scratch directory, runs a measuring query and returns confs derived from
    the sizes it measured (e.g. a threshold just under a side's size); they
    override ``confs`` and are recorded in truth.json, which the driver-log
    and event-log jobs then replay (``job_confs``).  ``removed``, when given,
    is every operator AQEPropagateEmptyRelation must have replaced, as
    ``"<location>: <removed>"`` (truth.json ``empty_relations``).
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
    control: Optional[Control] = None
    tune: Optional[Callable[[SparkSession, Path], Mapping[str, str]]] = None
    removed: Optional[tuple] = None

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


def _skewed_rows(spark: SparkSession) -> DataFrame:
    """20,000 rows where key 0 holds 90%; the other 10% spread over keys 0-96,
    so every shuffle partition gets some rows."""
    return _range(spark, 20_000).select(
        F.when(F.col("id") % 10 == 0, F.col("id") % 97).otherwise(0).alias("k"),
        F.col("id").alias("v"),
    )


def _skew_partner(spark: SparkSession) -> DataFrame:
    """One row per key 0-96: the even side of the skewed joins."""
    return _range(spark, 97).select(F.col("id").alias("k"), (F.col("id") * 2).alias("w"))


def _build_skew_join(spark: SparkSession, _: Path) -> DataFrame:
    """Key 0 holds 90% of the left side, so one shuffle partition dwarfs the rest."""
    left, right = _skewed_rows(spark), _skew_partner(spark)
    return left.join(right, "k").groupBy("w").agg(F.count("v").alias("n"))


def _build_skewed_right_outer_side(spark: SparkSession, _: Path) -> DataFrame:
    """The skew join mirrored into a left outer join: the skew is on the right
    side, which OptimizeSkewedJoin never splits for LeftOuter (the right side
    must keep its rows whole to find the left rows without a match)."""
    left, right = _skew_partner(spark), _skewed_rows(spark)
    return left.join(right, "k", "left_outer").groupBy("w").agg(F.count("v").alias("n"))


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


def _build_dpp_merge_hint(spark: SparkSession, data_dir: Path) -> DataFrame:
    """The pruning query with a sort-merge hint on the dimension: the optimizer plans the
    pruning (the dimension is small enough to broadcast), but the join is not a broadcast
    join, so AQE has no broadcast to reuse and drops the filter."""
    fact_path, dim_path = _write_partitioned_tables(spark, data_dir)
    fact = spark.read.parquet(fact_path)
    dim = spark.read.parquet(dim_path).where(F.col("tier") == "hot")
    return fact.join(dim.hint("merge"), "p").groupBy("p").agg(F.count("id").alias("n"))


def _build_rebalance_skew(spark: SparkSession, _: Path) -> DataFrame:
    """``REBALANCE(k)`` over the skewed rows (key 0 holds 90%): the partition of key 0 is
    far above the advisory size, so AQE splits it (a hint, as a write would add)."""
    return spark.sql("SELECT /*+ REBALANCE(k) */ k, v * 2 AS w FROM {rows}",
                     rows=_skewed_rows(spark))


def _build_rebalance_skew_none(spark: SparkSession, _: Path) -> DataFrame:
    """``REBALANCE`` with no columns over the same rows (key 0 holds 90%): the shuffle is
    round-robin (REBALANCE_PARTITIONS_BY_NONE), so the hot key does not pick a partition; every
    partition gets its share of both map tasks' rows, and each one above the advisory size
    (set under a partition's size) is split by map ranges."""
    return spark.sql("SELECT /*+ REBALANCE */ k, v * 2 AS w FROM {rows}",
                     rows=_skewed_rows(spark))


def _build_kept_by_cost(spark: SparkSession, _: Path) -> DataFrame:
    """Spark's own AdaptiveQueryExecSuite "Avoid plan change if cost is greater", over ranges:
    ``t JOIN t2 ON key = t2.a JOIN t3 ON t2.a = t3.a WHERE t2.b < 20``. At run time t2 is 400
    rows over 20 keys (so most shuffle partitions hold some), under the broadcast threshold, but a broadcast join's output is partitioned by its
    streamed side's key only (the expand limit is 0), so the upper join on ``a`` would need a
    new shuffle: AQE's cost evaluator keeps both sort-merge joins."""
    t = _range(spark, 20_000).select((F.col("id") % 500).alias("key"), F.col("id").alias("v"))
    t2 = (_range(spark, 20_000)
          .select((F.col("id") % 500).alias("a"), (F.col("id") % 1000).alias("b"))
          .where(F.col("b") < 20))
    t3 = _range(spark, 20_000).select((F.col("id") % 500).alias("a3"), F.col("id").alias("c"))
    return t.join(t2, t["key"] == t2["a"]).join(t3, t2["a"] == t3["a3"])


def _build_one_row_sort(spark: SparkSession, _: Path) -> DataFrame:
    """A global sort over a filter that keeps one row: the range shuffle's stage proves at
    most one row, so OptimizeOneRowPlan removes the sort."""
    rows = _range(spark, 1_000).select((F.col("id") * 3).alias("x"), F.col("id").alias("v"))
    return rows.where(F.col("x") == 15).orderBy("x", "v")


def _build_one_row_aggregate(spark: SparkSession, _: Path) -> DataFrame:
    """A distinct over a repartition that keeps one row: the repartition's stage proves at
    most one row, so OptimizeOneRowPlan turns the group-only aggregate into a projection."""
    rows = _range(spark, 1_000).select((F.col("id") * 3).alias("x"))
    return rows.where(F.col("x") == 15).repartition("x").distinct()


def _build_limit_removed(spark: SparkSession, _: Path) -> DataFrame:
    """LIMIT 100 over a 7-group aggregation: the shuffle stage proves fewer rows than the
    limit, so EliminateLimits removes it."""
    return _grouped_counts(spark, 1_000, 7).limit(100)


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


def _repartitioned_counts(spark: SparkSession, by_number: bool) -> DataFrame:
    """A user repartition by the grouping key, then the aggregation, which
    needs no shuffle of its own.  ``repartition(20, k)`` has origin
    REPARTITION_BY_NUM, whose partition count AQE must keep;
    ``repartition(k)`` (REPARTITION_BY_COL) may be coalesced."""
    rows = _range(spark, 10_000).select(
        (F.col("id") % 7).alias("k"), F.col("id").alias("v")
    )
    shuffled = rows.repartition(20, "k") if by_number else rows.repartition("k")
    return shuffled.groupBy("k").agg(F.count("v").alias("n"))


def _build_user_repartition(spark: SparkSession, _: Path) -> DataFrame:
    return _repartitioned_counts(spark, by_number=True)


def _build_repartition_by_column(spark: SparkSession, _: Path) -> DataFrame:
    return _repartitioned_counts(spark, by_number=False)


# Empty propagation (AQEPropagateEmptyRelation). Every empty input is a filter on a column
# no join key is derived from, so the optimizer cannot infer it onto the other side and only
# execution can tell that it keeps no row.
EMPTY_SCORE = 100_000  # above every score (at most 3 x 99): the filter keeps nothing
KEEPING_SCORE = 150  # scores 153 to 297 pass: 49 customers


def _orders(spark: SparkSession) -> DataFrame:
    """5,000 orders over customer ids 0-99."""
    return _range(spark, 5_000).select(F.col("id").alias("oid"), (F.col("id") % 100).alias("cid"))


def _customers(spark: SparkSession, min_score: int = EMPTY_SCORE) -> DataFrame:
    """Customers 0-99 whose score (3 x id) is above ``min_score``: none by default. The key
    is ``id % 100``, not ``id``, so the optimizer cannot restate the filter on the key and
    infer it onto the orders of an inner or semi join."""
    return (
        _range(spark, 100)
        .select((F.col("id") % 100).alias("cid"), (F.col("id") % 7).cast("string").alias("country"),
                (F.col("id") * 3).alias("score"))
        .where(F.col("score") > min_score)
    )


def _build_empty_anti_join(spark: SparkSession, _: Path) -> DataFrame:
    """Orders with no customer among those above the score: none are, so AQE keeps the left
    side in the join's place."""
    return _orders(spark).join(_customers(spark), "cid", "left_anti")


def _build_anti_join_not_empty(spark: SparkSession, _: Path) -> DataFrame:
    """The anti join with a filter that keeps 49 customers."""
    return _orders(spark).join(_customers(spark, KEEPING_SCORE), "cid", "left_anti")


def _build_empty_outer_join(spark: SparkSession, _: Path) -> DataFrame:
    """Orders left outer joined to no customer: AQE projects nulls for the right columns."""
    return _orders(spark).join(_customers(spark), "cid", "left_outer").select(
        "oid", "cid", "country", "score")


def _build_empty_semi_join(spark: SparkSession, _: Path) -> DataFrame:
    """Orders with a customer among none: the whole join is empty."""
    return _orders(spark).join(_customers(spark), "cid", "left_semi")


def _build_empty_left_inner_join(spark: SparkSession, _: Path) -> DataFrame:
    """An inner join whose left side is the empty one (orders above an id no order has)."""
    orders = _orders(spark).where(F.col("oid") * 3 > EMPTY_SCORE)
    customers = _range(spark, 100).select(F.col("id").alias("cid"),
                                           (F.col("id") % 7).alias("segment"))
    return orders.join(customers, "cid")


def _empty_rows(spark: SparkSession) -> DataFrame:
    """1,000 rows of which the filter keeps none, with a group column."""
    return (_range(spark, 1_000).where(F.col("id") * 3 > EMPTY_SCORE)
            .select(F.col("id"), (F.col("id") % 5).alias("g")))


def _build_empty_union_branch(spark: SparkSession, _: Path) -> DataFrame:
    """Two aggregations unioned; the second one's shuffle has no rows, so AQE drops the branch."""
    kept = _grouped_counts(spark, 1_000, 7)
    dropped = _empty_rows(spark).groupBy(F.col("g").alias("k")).count()
    return kept.unionByName(dropped)


def _build_empty_aggregate(spark: SparkSession, _: Path) -> DataFrame:
    """A grouped aggregation over a shuffle with no rows."""
    return _empty_rows(spark).groupBy("g").agg(F.count("id").alias("n"))


def _build_empty_sort(spark: SparkSession, _: Path) -> DataFrame:
    """A global sort over a range shuffle with no rows."""
    return _empty_rows(spark).orderBy("g", "id")


def _build_empty_window(spark: SparkSession, _: Path) -> DataFrame:
    """A window over a hash shuffle with no rows."""
    by_group = Window.partitionBy("g").orderBy(F.col("id").desc())
    return _empty_rows(spark).withColumn("rank", F.row_number().over(by_group))


def _build_empty_limit(spark: SparkSession, _: Path) -> DataFrame:
    """A limit over a grouped aggregation of no rows."""
    return _empty_rows(spark).groupBy("g").count().limit(3)


def _build_empty_scalar_subquery(spark: SparkSession, _: Path) -> DataFrame:
    """A scalar subquery over the empty anti join: its own adaptive plan keeps the left side."""
    return spark.sql(
        """
        SELECT id % 5 AS k, count(*) AS n
        FROM {big}
        WHERE id > (SELECT max(oid) - 4000 FROM {anti})
        GROUP BY id % 5
        """,
        big=_range(spark, 5_000),
        anti=_build_empty_anti_join(spark, _),
    )


def _build_empty_in_cached_plan(spark: SparkSession, _: Path) -> DataFrame:
    """The empty anti join cached (its own adaptive plan), then aggregated."""
    cached = _build_empty_anti_join(spark, _).cache()
    return cached.groupBy((F.col("cid") % 4).alias("bucket")).agg(F.count("oid").alias("n"))


def _build_empty_several(spark: SparkSession, _: Path) -> DataFrame:
    """Three places in one query: a union of the empty anti join, the empty outer join and
    an aggregation of no rows; AQE drops the third branch and rewrites both joins."""
    anti = _build_empty_anti_join(spark, _).select("oid", F.lit("none").alias("country"))
    outer = _orders(spark).join(_customers(spark), "cid", "left_outer").select(
        "oid", F.coalesce("country", F.lit("unknown")).alias("country"))
    nothing = _empty_rows(spark).groupBy("g").count().select(
        F.col("g").alias("oid"), F.col("count").cast("string").alias("country"))
    return anti.unionByName(outer).unionByName(nothing)


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

# --------------------------------------------------------------------------
# Negative controls: the facts that show why a rewrite did not happen
# --------------------------------------------------------------------------

ADAPTIVE_KEY = "spark.sql.adaptive.enabled"
COALESCE_KEY = "spark.sql.adaptive.coalescePartitions.enabled"
ADVISORY_KEY = "spark.sql.adaptive.advisoryPartitionSizeInBytes"
SKEW_ENABLED_KEY = "spark.sql.adaptive.skewJoin.enabled"
SKEW_FACTOR_KEY = "spark.sql.adaptive.skewJoin.skewedPartitionFactor"
SKEW_THRESHOLD_KEY = "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes"
BROADCAST_KEY = "spark.sql.adaptive.autoBroadcastJoinThreshold"
STATIC_BROADCAST_KEY = "spark.sql.autoBroadcastJoinThreshold"
NON_EMPTY_RATIO_KEY = "spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin"
LOCAL_READ_KEY = "spark.sql.adaptive.localShuffleReader.enabled"
SHJ_THRESHOLD_KEY = "spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold"
EXCLUDED_RULES_KEY = "spark.sql.adaptive.optimizer.excludedRules"
UNDEFINED = "<undefined>"  # SQLConf's value string of an optional setting left unset

# Spark's byte-size suffixes (JavaUtils.byteStringAs): binary multiples, no suffix = bytes.
_BYTE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
               "g": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40,
               "p": 1 << 50, "pb": 1 << 50}


def conf_bytes(value: str) -> int:
    """A byte-size setting as Spark reads it: ``64KB`` -> 65536, ``-1`` -> -1."""
    text = value.strip().lower()
    digits = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    return int(digits) * _BYTE_UNITS[text[len(digits):].strip()]


def spark_median(sizes: Sequence[int]) -> int:
    """The median partition size as OptimizeSkewedJoin computes it
    (``Utils.median``): the mean of the two middle values, integer-divided,
    for an even count; never below 1."""
    ordered = sorted(sizes)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return max(ordered[middle], 1)
    return max((ordered[middle] + ordered[middle - 1]) // 2, 1)


def broadcast_threshold(conf: ConfLookup) -> int:
    """AQE's broadcast threshold: the adaptive setting, else the static one. An unset
    optional setting reads as ``<undefined>`` (3.x) or None (4.x, through py4j)."""
    value = conf(BROADCAST_KEY)
    return conf_bytes(conf(STATIC_BROADCAST_KEY) if value in (UNDEFINED, None) else value)


def _stage_by_id(truth: dict, location: str, stage_id: int) -> dict:
    return next(s for s in truth["stages"]
                if s["location"] == location and s["id"] == stage_id)


def _join_side_stages(truth: dict) -> tuple[dict, dict, dict]:
    """The first join whose two sides both read a query stage, and those stages."""
    for join in truth["joins"]:
        if join["left_stage"] is not None and join["right_stage"] is not None:
            return (join, _stage_by_id(truth, join["location"], join["left_stage"]),
                    _stage_by_id(truth, join["location"], join["right_stage"]))
    raise ValueError(f"{truth['scenario']}: no join reads a query stage on both sides")


def _shuffle_stage(truth: dict) -> dict:
    """The one shuffle stage of a single-shuffle query."""
    (stage,) = [s for s in truth["stages"] if s["kind"] == "shuffle"]
    return stage


def _partition_facts(sizes: Sequence[int], conf: ConfLookup) -> dict:
    """Partition sizes of one shuffle stage against the skew settings in force."""
    median = spark_median(sizes)
    return {
        "partitions": len(sizes),
        "non_empty_partitions": sum(1 for size in sizes if size > 0),
        "min_partition_bytes": min(sizes),
        "max_partition_bytes": max(sizes),
        "median_partition_bytes": median,
        "ratio": round(max(sizes) / median, 3),
        "factor": float(conf(SKEW_FACTOR_KEY)),
        "threshold_bytes": conf_bytes(conf(SKEW_THRESHOLD_KEY)),
    }


def is_skewed(side: dict) -> bool:
    """OptimizeSkewedJoin's test for the largest partition: above both the
    threshold and factor x median (``getSkewThreshold``)."""
    limit = max(side["threshold_bytes"], int(side["median_partition_bytes"] * side["factor"]))
    return side["max_partition_bytes"] > limit


def _skew_facts(skewed_side: str):
    """Facts for a skewed join: the named side's partition sizes, flat, and the
    other side's under ``other_side``."""
    def facts(truth: dict, conf: ConfLookup) -> dict:
        join, left, right = _join_side_stages(truth)
        stages = {"left": left, "right": right}
        other = "right" if skewed_side == "left" else "left"
        return {
            "skew_join_enabled": conf(SKEW_ENABLED_KEY),
            "join_type": join["join_type"],
            "side": skewed_side,
            "stage": stages[skewed_side]["id"],
            **_partition_facts(stages[skewed_side]["bytes_by_partition"], conf),
            "other_side": _partition_facts(stages[other]["bytes_by_partition"], conf),
        }
    return facts


def _broadcast_facts(truth: dict, conf: ConfLookup) -> dict:
    """The join's smaller side (the one AQE would broadcast) against the threshold."""
    _, left, right = _join_side_stages(truth)
    side, other = sorted((left, right), key=lambda s: s["size_in_bytes"])
    sizes = side["bytes_by_partition"]
    non_empty = sum(1 for size in sizes if size > 0)
    return {
        "side": "left" if side is left else "right",
        "side_bytes": side["size_in_bytes"],
        "other_side_bytes": other["size_in_bytes"],
        "threshold_bytes": broadcast_threshold(conf),
        "partitions": len(sizes),
        "non_empty_partitions": non_empty,
        "non_empty_ratio": round(non_empty / len(sizes), 3),
        "ratio_threshold": float(conf(NON_EMPTY_RATIO_KEY)),
    }


def _read_facts(truth: dict, conf: ConfLookup) -> dict:
    """Facts for a single-shuffle aggregation whose read AQE could coalesce."""
    stage = _shuffle_stage(truth)
    sizes = stage["bytes_by_partition"]
    return {
        "coalescing_enabled": conf(COALESCE_KEY),
        "shuffle_origin": stage["shuffle_origin"],
        "partitions": len(sizes),
        "non_empty_partitions": sum(1 for size in sizes if size > 0),
        "total_bytes": sum(sizes),
        "advisory_partition_bytes": conf_bytes(conf(ADVISORY_KEY)),
    }


def _empty_side_facts(truth: dict, conf: ConfLookup) -> dict:
    _, left, right = _join_side_stages(truth)
    empty = min((left, right), key=lambda s: s["row_count"])
    return {
        "side": "left" if empty is left else "right",
        "side_rows": empty["row_count"],
        "side_bytes": empty["size_in_bytes"],
    }


def _local_read_facts(truth: dict, conf: ConfLookup) -> dict:
    return {
        "broadcast_joins": truth["rewrites"]["smj-to-bhj"],
        "local_reads": truth["rewrites"]["local-read"],
    }


def _shj_facts(truth: dict, conf: ConfLookup) -> dict:
    _, left, right = _join_side_stages(truth)
    return {
        "threshold_bytes": conf_bytes(conf(SHJ_THRESHOLD_KEY)),
        "advisory_partition_bytes": conf_bytes(conf(ADVISORY_KEY)),
        "max_partition_bytes": max(left["bytes_by_partition"] + right["bytes_by_partition"]),
    }


DPP_KEY = "spark.sql.optimizer.dynamicPartitionPruning.enabled"
DPP_REUSE_ONLY_KEY = "spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly"
REBALANCE_SKEW_KEY = "spark.sql.adaptive.optimizeSkewsInRebalancePartitions.enabled"
REBALANCE_SMALL_FACTOR_KEY = "spark.sql.adaptive.rebalancePartitionsSmallPartitionFactor"
CATALYST_OPTIMIZER = "org.apache.spark.sql.catalyst.optimizer."


def _dpp_facts(truth: dict, conf: ConfLookup) -> dict:
    return {
        "dpp_scans": truth["rewrites"]["dpp"],
        "dpp_dropped": truth["rewrites"]["dpp-dropped"],
        "dynamic_pruning_filters": truth["info"]["dynamic-pruning"],
    }


def _rebalance_facts(truth: dict, conf: ConfLookup) -> dict:
    """The rebalance shuffle's partition sizes against the advisory size a split needs."""
    (stage,) = [s for s in truth["stages"] if s["shuffle_origin"] in REBALANCE_ORIGINS]
    sizes = stage["bytes_by_partition"]
    advisory = conf_bytes(conf(ADVISORY_KEY))
    return {
        "shuffle_origin": stage["shuffle_origin"],
        "partitions": len(sizes),
        "max_partition_bytes": max(sizes),
        "advisory_partition_bytes": advisory,
        "partitions_above_advisory": sum(1 for size in sizes if size > advisory),
    }


EXPAND_LIMIT_KEY = "spark.sql.execution.broadcastHashJoin.outputPartitioningExpandLimit"


def _cost_kept_facts(truth: dict, conf: ConfLookup) -> dict:
    """The lower join's smaller side against the broadcast threshold and the non-empty ratio
    (both allow a broadcast), the expand limit, and the joins the final plan kept."""
    return {
        **_broadcast_facts(truth, conf),
        "final_joins": [j["operator"] for j in truth["joins"] if j["location"] == "main"],
    }


def _logical_rule_facts(truth: dict, conf: ConfLookup) -> dict:
    """What the AQE logical rules had before them: the operators of the main plan's initial
    and final physical plans (global sorts, final aggregates, limits)."""
    return {
        "logical_operators": truth["adaptive_plans"][0]["logical_operators"],
        "one_row": truth["rewrites"]["one-row"],
        "limit_removed": truth["rewrites"]["limit-removed"],
    }


def _adaptive_facts(truth: dict, conf: ConfLookup) -> dict:
    return {
        "adaptive": truth["adaptive"],
        "query_stages": truth["info"]["query-stages"],
    }


def _measure(spark: SparkSession, data_dir: Path, build, confs: Mapping[str, str]) -> dict:
    """Run a query once with ``confs`` and return its truth (stages and joins):
    the sizes a control's thresholds are then set against."""
    probe = Scenario("measure", "a measuring run", build, confs)
    with _ScenarioConfs(spark, probe.all_confs()):
        df = build(spark, data_dir)
        df.collect()
        return read_truth(df, probe, spark)


# A threshold this fraction of the side's size stays clearly below it even
# when Spark prints the size rounded (9.4 KiB against 8.7 KiB).
JUST_ABOVE_FRACTION = 0.93
# A factor this many times the measured max/median ratio stays clearly above it.
JUST_BELOW_MARGIN = 1.1


def _tune_broadcast_just_above(spark: SparkSession, data_dir: Path) -> dict:
    """The runtime broadcast threshold set just under the small side's run-time size."""
    truth = _measure(spark, data_dir, _build_filtered_join, _NO_RUNTIME_BROADCAST)
    _, left, right = _join_side_stages(truth)
    side_bytes = min(left["size_in_bytes"], right["size_in_bytes"])
    return {BROADCAST_KEY: str(int(side_bytes * JUST_ABOVE_FRACTION))}


def _tune_broadcast_static_just_above(spark: SparkSession, data_dir: Path) -> dict:
    """The static broadcast threshold set just under the small side's run-time size, the
    adaptive one left unset: AQE falls back to the static value (the default 10 MB's case)."""
    truth = _measure(spark, data_dir, _build_filtered_join, _NO_RUNTIME_BROADCAST)
    _, left, right = _join_side_stages(truth)
    side_bytes = min(left["size_in_bytes"], right["size_in_bytes"])
    return {STATIC_BROADCAST_KEY: str(int(side_bytes * JUST_ABOVE_FRACTION))}


# The skew controls read one original partition per reduce task, so the event
# log's per-task shuffle reads show each partition's size (coalesced reads
# would hide the skew inside a bigger read).
_SKEW_UNCOALESCED_CONFS = {
    **_SKEW_CONFS,
    COALESCE_KEY: "false",
}


def _tune_skew_below_factor(spark: SparkSession, data_dir: Path) -> dict:
    """The skew factor set just above the skewed side's measured max/median ratio."""
    measuring = {**_SKEW_UNCOALESCED_CONFS, SKEW_FACTOR_KEY: "1000000"}
    truth = _measure(spark, data_dir, _build_skew_join, measuring)
    _, left, _ = _join_side_stages(truth)
    sizes = left["bytes_by_partition"]
    ratio = max(sizes) / spark_median(sizes)
    return {SKEW_FACTOR_KEY: f"{ratio * JUST_BELOW_MARGIN:.1f}"}


def _value_is(wanted: str):
    return (f"the config is {wanted}", lambda f: f["config_value"] == wanted)


_NO_EMPTY_PARTITION = ("no partition of either side is empty",
                       lambda f: f["min_partition_bytes"] > 0 and f["other_side"]["min_partition_bytes"] > 0)


_WOULD_COALESCE = ("the partitions together are under the advisory size",
                   lambda f: f["total_bytes"] < f["advisory_partition_bytes"])


# A threshold this many times the side's size: just above it (a margin of about
# 5%, still above it when Spark prints the size rounded), and far above it.
JUST_FITS_FACTOR = 1.05
TENFOLD_FACTOR = 10


def _broadcast_side_bytes(spark: SparkSession, data_dir: Path) -> int:
    truth = _measure(spark, data_dir, _build_filtered_join, _NO_RUNTIME_BROADCAST)
    _, left, right = _join_side_stages(truth)
    return min(left["size_in_bytes"], right["size_in_bytes"])


def _tune_broadcast_just_fits(spark: SparkSession, data_dir: Path) -> dict:
    """The runtime broadcast threshold set just above the small side's run-time size."""
    return {BROADCAST_KEY: str(int(_broadcast_side_bytes(spark, data_dir) * JUST_FITS_FACTOR))}


def _tune_broadcast_tenfold(spark: SparkSession, data_dir: Path) -> dict:
    """The runtime broadcast threshold set at ten times the small side's run-time size."""
    return {BROADCAST_KEY: str(_broadcast_side_bytes(spark, data_dir) * TENFOLD_FACTOR)}


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
        confs={COALESCE_KEY: "false"},
        expect={"coalesced": False},
        control=Control(
            "coalesced", "disabled", COALESCE_KEY,
            "Partition coalescing is switched off, so the 20 small shuffle partitions are read as they are.",
            _read_facts, (_value_is("false"), _WOULD_COALESCE),
            twin="coalesced_aggregation",
        ),
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
        confs={**_SKEW_CONFS, SKEW_ENABLED_KEY: "false"},
        expect={"skew-join": False, "smj-to-bhj": False},
        control=Control(
            "skew-join", "disabled", SKEW_ENABLED_KEY,
            "Skew-join handling is switched off, so the skewed partition is read whole.",
            _skew_facts("left"),
            (_value_is("false"), ("the left side is skewed", is_skewed)),
            twin="skew_join",
        ),
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
        control=Control(
            "smj-to-bhj", "disabled", BROADCAST_KEY,
            "AQE's broadcast threshold is -1, so no side is small enough to broadcast.",
            _broadcast_facts,
            (_value_is("-1"), ("the threshold is negative", lambda f: f["threshold_bytes"] < 0)),
            twin="smj_to_bhj",
        ),
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
            EXCLUDED_RULES_KEY: EMPTY_RULE,
        },
        expect={"empty-relation": False},
        control=Control(
            "empty-relation", "disabled", EXCLUDED_RULES_KEY,
            "AQEPropagateEmptyRelation is excluded, so the join runs although one side has no rows.",
            _empty_side_facts,
            (("the rule is excluded", lambda f: "AQEPropagateEmptyRelation" in f["config_value"]),
             ("one side has no rows", lambda f: f["side_rows"] == 0)),
            twin="empty_relation",
        ),
    ),
    Scenario(
        "empty_anti_join",
        "Orders LEFT ANTI JOIN customers above a score none reaches: the right side is empty at run time, so AQE replaces the join by its left side (no empty node is left).",
        _build_empty_anti_join,
        confs=_NO_RUNTIME_BROADCAST,
        expect={"empty-relation": True},
        removed=("main: Join LeftAnti",),
    ),
    Scenario(
        "empty_anti_join_not_empty",
        "The empty_anti_join query with a score 49 customers pass: the right side has rows and the join runs.",
        _build_anti_join_not_empty,
        confs=_NO_RUNTIME_BROADCAST,
        expect={"empty-relation": False},
        removed=(),
        control=Control(
            "empty-relation", "side-not-empty", None,
            "The join's right side keeps 49 rows at run time, so no side is empty and the join stays.",
            _empty_side_facts,
            (("no side is empty", lambda f: f["side_rows"] > 0),),
            twin="empty_anti_join",
        ),
    ),
    Scenario(
        "empty_anti_join_excluded",
        "The empty_anti_join query with AQEPropagateEmptyRelation excluded: the anti join runs on its empty right side.",
        _build_empty_anti_join,
        confs={
            **_NO_RUNTIME_BROADCAST,
            EXCLUDED_RULES_KEY: EMPTY_RULE,
        },
        expect={"empty-relation": False},
        removed=(),
        control=Control(
            "empty-relation", "disabled", EXCLUDED_RULES_KEY,
            "AQEPropagateEmptyRelation is excluded, so the anti join runs although its right side has no rows.",
            _empty_side_facts,
            (("the rule is excluded", lambda f: "AQEPropagateEmptyRelation" in f["config_value"]),
             ("one side has no rows", lambda f: f["side_rows"] == 0)),
            twin="empty_anti_join",
        ),
    ),
    Scenario(
        "empty_anti_join_aqe_off",
        "The empty_anti_join query with adaptive execution switched off: nothing is re-planned, the anti join runs.",
        _build_empty_anti_join,
        confs={**_NO_RUNTIME_BROADCAST, ADAPTIVE_KEY: "false"},
        expect={"query-stages": False, **{key: False for key in REWRITE_KEYS}},
        removed=(),
        control=Control(
            "empty-relation", "aqe-disabled", ADAPTIVE_KEY,
            "Adaptive query execution is switched off, so the empty right side is never seen before the join runs.",
            _adaptive_facts,
            (_value_is("false"), ("the plan is not adaptive", lambda f: not f["adaptive"])),
            twin="empty_anti_join",
        ),
    ),
    Scenario(
        "empty_outer_join",
        "Orders LEFT OUTER JOIN customers above a score none reaches: AQE replaces the join by a Project over the left side with nulls for the right side's columns.",
        _build_empty_outer_join,
        confs=_NO_RUNTIME_BROADCAST,
        expect={"empty-relation": True},
        removed=("main: Join LeftOuter",),
    ),
    Scenario(
        "empty_semi_join",
        "Orders LEFT SEMI JOIN customers above a score none reaches: the right side is empty, so the whole join is.",
        _build_empty_semi_join,
        confs=_NO_RUNTIME_BROADCAST,
        expect={"empty-relation": True},
        removed=("main: Join LeftSemi",),
    ),
    Scenario(
        "empty_left_inner_join",
        "Inner join whose left side (orders filtered on their id) is empty at run time: the join becomes an empty relation.",
        _build_empty_left_inner_join,
        confs=_NO_RUNTIME_BROADCAST,
        expect={"empty-relation": True},
        removed=("main: Join Inner",),
    ),
    Scenario(
        "empty_union_branch",
        "Union of two aggregations whose second shuffle has no rows: AQE drops that branch.",
        _build_empty_union_branch,
        expect={"empty-relation": True},
        removed=("main: Union",),
    ),
    Scenario(
        "empty_aggregate",
        "Grouped aggregation over a shuffle with no rows: AQE replaces it by an empty relation.",
        _build_empty_aggregate,
        expect={"empty-relation": True},
        removed=("main: Aggregate",),
    ),
    Scenario(
        "empty_sort",
        "Global sort over a range shuffle with no rows: AQE replaces it by an empty relation.",
        _build_empty_sort,
        expect={"empty-relation": True},
        removed=("main: Sort",),
    ),
    Scenario(
        "empty_window",
        "Row-number window over a hash shuffle with no rows: AQE replaces it by an empty relation.",
        _build_empty_window,
        expect={"empty-relation": True},
        removed=("main: Window",),
    ),
    Scenario(
        "empty_limit",
        "LIMIT 3 over a grouped aggregation of no rows: AQE replaces the limit by an empty relation.",
        _build_empty_limit,
        expect={"empty-relation": True},
        removed=("main: GlobalLimit",),
    ),
    Scenario(
        "empty_scalar_subquery",
        "A scalar subquery over the empty anti join: the subquery's own adaptive plan replaces the join by its left side.",
        _build_empty_scalar_subquery,
        confs=_NO_RUNTIME_BROADCAST,
        expect={"empty-relation": True},
        removed=("subquery: Join LeftAnti",),
        min_spark=(3, 3),
        min_spark_reason="spark.sql() takes DataFrame arguments from PySpark 3.3",
    ),
    Scenario(
        "empty_in_cached_plan",
        "The empty anti join cached and aggregated: the cached relation's adaptive plan replaces the join by its left side.",
        _build_empty_in_cached_plan,
        confs=_NO_RUNTIME_BROADCAST,
        expect={"empty-relation": True},
        removed=("cached: Join LeftAnti",),
    ),
    Scenario(
        "empty_several",
        "Union of the empty anti join, the empty outer join and an aggregation of no rows: three places in one query (a branch dropped, two joins replaced by their left sides).",
        _build_empty_several,
        confs=_NO_RUNTIME_BROADCAST,
        expect={"empty-relation": True},
        removed=("main: Union", "main: Join LeftAnti", "main: Join LeftOuter"),
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
            LOCAL_READ_KEY: "true",
        },
        expect={"local-read": True, "smj-to-bhj": True},
    ),
    Scenario(
        "local_read_off",
        "Same left outer join, broadcast at run time, with local shuffle reads switched off.",
        _build_filtered_left_outer_join,
        confs={**_RUNTIME_BROADCAST_CONFS, LOCAL_READ_KEY: "false"},
        expect={"local-read": False, "smj-to-bhj": True},
        control=Control(
            "local-read", "disabled", LOCAL_READ_KEY,
            "Local shuffle reads are switched off, so the probe side of the broadcast join is read by reducers.",
            _local_read_facts,
            (_value_is("false"), ("the join was broadcast", lambda f: f["broadcast_joins"] > 0)),
            twin="local_read",
        ),
    ),
    Scenario(
        "smj_to_shj",
        "Sort-merge join whose shuffle partitions all fit the local hash-map threshold; AQE picks a shuffled hash join.",
        _build_smj_to_shj,
        confs={
            **_NO_RUNTIME_BROADCAST,
            "spark.sql.join.preferSortMergeJoin": "true",
            SHJ_THRESHOLD_KEY: "64MB",
        },
        expect={"smj-to-shj": True, "smj-to-bhj": False},
    ),
    Scenario(
        "smj_to_shj_off",
        "Same join with the local hash-map threshold at 0: it stays a sort-merge join.",
        _build_smj_to_shj,
        confs={
            **_NO_RUNTIME_BROADCAST,
            "spark.sql.join.preferSortMergeJoin": "true",
            SHJ_THRESHOLD_KEY: "0",
        },
        expect={"smj-to-shj": False, "smj-to-bhj": False},
        control=Control(
            "smj-to-shj", "disabled", SHJ_THRESHOLD_KEY,
            "The local hash-map threshold is 0, so no shuffle partition fits it and the join stays sort-merge.",
            _shj_facts,
            (_value_is("0"),
             ("a partition is larger than the threshold",
              lambda f: f["max_partition_bytes"] > f["threshold_bytes"])),
            twin="smj_to_shj",
        ),
    ),
    Scenario(
        "dynamic_partition_pruning",
        "Partitioned parquet fact joined to a filtered, broadcast dimension: dynamic partition pruning.",
        _build_dynamic_partition_pruning,
        confs={
            "spark.sql.autoBroadcastJoinThreshold": "10MB",
            "spark.sql.optimizer.dynamicPartitionPruning.enabled": "true",
        },
        expect={"dynamic-pruning": True, "dpp": True},
    ),
    Scenario(
        "dynamic_partition_pruning_off",
        "The dynamic_partition_pruning query with dynamic partition pruning switched off: the fact table is read whole.",
        _build_dynamic_partition_pruning,
        confs={
            "spark.sql.autoBroadcastJoinThreshold": "10MB",
            DPP_KEY: "false",
        },
        expect={"dpp": False, "dpp-dropped": False, "dynamic-pruning": False},
        control=Control(
            "dpp", "disabled", DPP_KEY,
            "Dynamic partition pruning is switched off, so no pruning filter is planned on the fact scan.",
            _dpp_facts, (_value_is("false"),),
            twin="dynamic_partition_pruning",
        ),
    ),
    Scenario(
        "dpp_subquery",
        "The pruning query with no broadcast join and reuseBroadcastOnly=false: the pruning values come from a subquery that scans the dimension again (3.x); 4.x drops it.",
        _build_dynamic_partition_pruning,
        confs={
            STATIC_BROADCAST_KEY: "-1",
            DPP_KEY: "true",
            DPP_REUSE_ONLY_KEY: "false",
        },
        expect={"smj-to-bhj": False},
    ),
    Scenario(
        "dpp_dropped",
        "The pruning query with a merge hint: the pruning is planned, but with no broadcast join to reuse AQE drops it (dynamicpruningexpression(true)).",
        _build_dpp_merge_hint,
        confs={
            "spark.sql.autoBroadcastJoinThreshold": "10MB",
            DPP_KEY: "true",
        },
        expect={"dpp": False, "dpp-dropped": True},
    ),
    Scenario(
        "rebalance_skew",
        "REBALANCE(k) hint over rows where key 0 holds 90%: AQE splits the skewed partition of the rebalance shuffle.",
        _build_rebalance_skew,
        confs={ADVISORY_KEY: "8KB"},
        expect={"rebalance-skew": True, "skew-join": False},
        min_spark=(3, 3),
        min_spark_reason="spark.sql() takes DataFrame arguments from PySpark 3.3",
    ),
    Scenario(
        "rebalance_skew_off",
        "Same rebalance with skew splitting in rebalances switched off: the hot partition is read whole.",
        _build_rebalance_skew,
        confs={ADVISORY_KEY: "8KB", REBALANCE_SKEW_KEY: "false"},
        expect={"rebalance-skew": False},
        min_spark=(3, 3),
        min_spark_reason="spark.sql() takes DataFrame arguments from PySpark 3.3",
        control=Control(
            "rebalance-skew", "disabled", REBALANCE_SKEW_KEY,
            "Skew splitting in rebalance shuffles is switched off, so the partition above the advisory size is read by one task.",
            _rebalance_facts,
            (_value_is("false"),
             ("a partition is above the advisory size",
              lambda f: f["partitions_above_advisory"] > 0)),
            twin="rebalance_skew",
        ),
    ),
    Scenario(
        "rebalance_skew_none",
        "REBALANCE with no columns (round-robin, REBALANCE_PARTITIONS_BY_NONE) over the rows where key 0 holds 90%: every partition is above the advisory size and AQE splits each by map ranges.",
        _build_rebalance_skew_none,
        confs={ADVISORY_KEY: "2KB"},
        expect={"rebalance-skew": True, "skew-join": False},
        min_spark=(3, 3),
        min_spark_reason="spark.sql() takes DataFrame arguments from PySpark 3.3",
    ),
    Scenario(
        "rebalance_skew_none_off",
        "Same rebalance without columns with skew splitting in rebalances switched off: each partition above the advisory size is read by one task.",
        _build_rebalance_skew_none,
        confs={ADVISORY_KEY: "2KB", REBALANCE_SKEW_KEY: "false"},
        expect={"rebalance-skew": False},
        min_spark=(3, 3),
        min_spark_reason="spark.sql() takes DataFrame arguments from PySpark 3.3",
        control=Control(
            "rebalance-skew", "disabled", REBALANCE_SKEW_KEY,
            "Skew splitting in rebalance shuffles is switched off, so the partitions of the round-robin rebalance above the advisory size are read whole.",
            _rebalance_facts,
            (_value_is("false"),
             ("the shuffle is a rebalance without columns",
              lambda f: f["shuffle_origin"] == "REBALANCE_PARTITIONS_BY_NONE"),
             ("a partition is above the advisory size",
              lambda f: f["partitions_above_advisory"] > 0)),
            twin="rebalance_skew_none",
        ),
    ),
    Scenario(
        "kept_by_cost",
        "Three-way join (Spark's 'Avoid plan change if cost is greater'): the lower join's filtered side fits AQE's broadcast threshold at run time, but with the output partitioning expand limit at 0 a broadcast would add a shuffle under the upper join, so AQE's cost evaluator keeps both sort-merge joins.",
        _build_kept_by_cost,
        confs={**_RUNTIME_BROADCAST_CONFS, EXPAND_LIMIT_KEY: "0"},
        expect={"smj-to-bhj": False, "smj-to-shj": False},
        control=Control(
            "smj-to-bhj", "kept-by-cost", EXPAND_LIMIT_KEY,
            "The lower join's side fits the broadcast threshold, but a broadcast join's output is not partitioned by that side's key (expand limit 0), so the upper join would need a new shuffle and AQE's cost evaluator keeps the sort-merge join.",
            _cost_kept_facts,
            (_value_is("0"),
             ("the side fits the broadcast threshold",
              lambda f: 0 <= f["side_bytes"] <= f["threshold_bytes"]),
             ("the other side does not", lambda f: f["other_side_bytes"] > f["threshold_bytes"]),
             ("enough of its partitions hold data",
              lambda f: f["non_empty_ratio"] >= f["ratio_threshold"]),
             ("both joins stay sort-merge",
              lambda f: f["final_joins"] == ["SortMergeJoin", "SortMergeJoin"])),
        ),
    ),
    Scenario(
        "one_row_sort",
        "Global sort over a filter that keeps one row: AQE's OptimizeOneRowPlan removes the sort once the stage below proves one row.",
        _build_one_row_sort,
        expect={"one-row": True},
        min_spark=(3, 3),
        min_spark_reason="AQE's logical optimizer runs OptimizeOneRowPlan from Spark 3.3",
    ),
    Scenario(
        "one_row_aggregate",
        "Distinct over a repartition that keeps one row: OptimizeOneRowPlan turns the aggregate into a projection.",
        _build_one_row_aggregate,
        expect={"one-row": True},
        min_spark=(3, 3),
        min_spark_reason="AQE's logical optimizer runs OptimizeOneRowPlan from Spark 3.3",
    ),
    Scenario(
        "one_row_off",
        "The one_row_sort query with OptimizeOneRowPlan excluded from AQE's optimizer: the sort runs.",
        _build_one_row_sort,
        confs={EXCLUDED_RULES_KEY: CATALYST_OPTIMIZER + "OptimizeOneRowPlan"},
        expect={"one-row": False},
        min_spark=(3, 3),
        min_spark_reason="AQE's logical optimizer runs OptimizeOneRowPlan from Spark 3.3",
        control=Control(
            "one-row", "disabled", EXCLUDED_RULES_KEY,
            "OptimizeOneRowPlan is excluded, so the sort over one row stays.",
            _logical_rule_facts,
            (("the rule is excluded", lambda f: "OptimizeOneRowPlan" in f["config_value"]),
             ("the sort is still there",
              lambda f: f["logical_operators"]["final"].get("sort", 0) > 0)),
            twin="one_row_sort",
        ),
    ),
    Scenario(
        "limit_removed",
        "LIMIT 100 over a 7-group aggregation: AQE's EliminateLimits removes the limit once the stage proves fewer rows.",
        _build_limit_removed,
        expect={"limit-removed": True},
        min_spark=(3, 3),
        min_spark_reason="AQE's logical optimizer runs EliminateLimits from Spark 3.3",
    ),
    Scenario(
        "limit_removed_off",
        "The limit_removed query with EliminateLimits excluded from AQE's optimizer: the limit stays.",
        _build_limit_removed,
        confs={EXCLUDED_RULES_KEY: CATALYST_OPTIMIZER + "EliminateLimits"},
        expect={"limit-removed": False},
        min_spark=(3, 3),
        min_spark_reason="AQE's logical optimizer runs EliminateLimits from Spark 3.3",
        control=Control(
            "limit-removed", "disabled", EXCLUDED_RULES_KEY,
            "EliminateLimits is excluded, so the limit stays although fewer rows reach it.",
            _logical_rule_facts,
            (("the rule is excluded", lambda f: "EliminateLimits" in f["config_value"]),
             ("the limit is still there",
              lambda f: f["logical_operators"]["final"].get("limit", 0) > 0)),
            twin="limit_removed",
        ),
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
            NON_EMPTY_RATIO_KEY: "0.2",
        },
        expect={"smj-to-bhj": False, "smj-to-shj": False},
        control=Control(
            "smj-to-bhj", "too-many-empty-partitions", NON_EMPTY_RATIO_KEY,
            "The small side fills 1 of 20 shuffle partitions, under the non-empty ratio a broadcast needs.",
            _broadcast_facts,
            (("the non-empty ratio is under the setting",
              lambda f: f["non_empty_ratio"] < f["ratio_threshold"]),
             ("the side is small enough to broadcast",
              lambda f: 0 <= f["side_bytes"] <= f["threshold_bytes"])),
        ),
    ),
    Scenario(
        "aqe_off",
        "The multi_rewrite query with adaptive execution switched off: no query stages, nothing re-planned.",
        _build_multi_rewrite,
        confs={**_RUNTIME_BROADCAST_CONFS, ADAPTIVE_KEY: "false"},
        expect={"query-stages": False, **{key: False for key in REWRITE_KEYS}},
        control=Control(
            "adaptive", "aqe-disabled", ADAPTIVE_KEY,
            "Adaptive query execution is switched off, so no rewrite can happen.",
            _adaptive_facts,
            (_value_is("false"), ("the plan is not adaptive", lambda f: not f["adaptive"])),
            twin="multi_rewrite",
        ),
    ),
    Scenario(
        "broadcast_just_above",
        "The smj_to_bhj join with AQE's broadcast threshold set just under the filtered side's run-time size.",
        _build_filtered_join,
        expect={"smj-to-bhj": False},
        tune=_tune_broadcast_just_above,
        control=Control(
            "smj-to-bhj", "above-broadcast-threshold", BROADCAST_KEY,
            "The smaller side's run-time size is just above AQE's broadcast threshold, so the join stays sort-merge.",
            _broadcast_facts,
            (("the side is above the threshold",
              lambda f: f["side_bytes"] > f["threshold_bytes"] >= 0),
             ("the threshold is within 15% of the side",
              lambda f: f["threshold_bytes"] >= 0.85 * f["side_bytes"]),
             ("the other side is above it too",
              lambda f: f["other_side_bytes"] > f["threshold_bytes"])),
            twin="smj_to_bhj",
        ),
    ),
    Scenario(
        "broadcast_static_just_above",
        "The smj_to_bhj join with AQE's own broadcast threshold unset and the static one set just under the filtered side's run-time size: AQE falls back to the static threshold.",
        _build_filtered_join,
        expect={"smj-to-bhj": False},
        tune=_tune_broadcast_static_just_above,
        control=Control(
            "smj-to-bhj", "above-broadcast-threshold", STATIC_BROADCAST_KEY,
            "AQE's broadcast threshold is unset, so AQE holds the smaller side to the static threshold, which its run-time size is just above: the join stays sort-merge.",
            _broadcast_facts,
            (("the side is above the threshold",
              lambda f: f["side_bytes"] > f["threshold_bytes"] >= 0),
             ("the threshold is the static setting's",
              lambda f: f["threshold_bytes"] == conf_bytes(f["config_value"])),
             ("the threshold is within 15% of the side",
              lambda f: f["threshold_bytes"] >= 0.85 * f["side_bytes"]),
             ("the other side is above it too",
              lambda f: f["other_side_bytes"] > f["threshold_bytes"])),
            twin="smj_to_bhj",
        ),
    ),
    Scenario(
        "skew_below_factor",
        "The skew_join data with the skew factor set just above the skewed side's max/median partition ratio.",
        _build_skew_join,
        confs=_SKEW_UNCOALESCED_CONFS,
        expect={"skew-join": False, "smj-to-bhj": False, "coalesced": False},
        tune=_tune_skew_below_factor,
        control=Control(
            "skew-join", "below-skew-factor", SKEW_FACTOR_KEY,
            "The largest partition is above the skew threshold in bytes but below factor x median, so it is not split.",
            _skew_facts("left"),
            (("the largest partition is above the byte threshold",
              lambda f: f["max_partition_bytes"] > f["threshold_bytes"]),
             ("it is below factor x median",
              lambda f: f["max_partition_bytes"] <= f["factor"] * f["median_partition_bytes"]),
             ("the factor is within 15% of the ratio",
              lambda f: f["ratio"] < f["factor"] <= 1.15 * f["ratio"]),
             _NO_EMPTY_PARTITION,
             ("the other side is not skewed", lambda f: not is_skewed(f["other_side"]))),
            twin="skew_join",
        ),
    ),
    Scenario(
        "skew_unsplittable_side",
        "Left outer join whose right side holds the skew: OptimizeSkewedJoin cannot split that side.",
        _build_skewed_right_outer_side,
        confs=_SKEW_UNCOALESCED_CONFS,
        expect={"skew-join": False, "smj-to-bhj": False, "coalesced": False},
        control=Control(
            "skew-join", "unsplittable-join-side", None,
            "The skewed partition is on the right side of a left outer join, which Spark can only split on the left.",
            _skew_facts("right"),
            (("the join is a left outer join", lambda f: f["join_type"] == "LeftOuter"),
             ("the right side is skewed", is_skewed),
             ("the left side is not", lambda f: not is_skewed(f["other_side"])),
             _NO_EMPTY_PARTITION),
        ),
    ),
    Scenario(
        "user_repartition",
        "repartition(20, k) feeding an aggregation on k: AQE keeps a partition count the user asked for.",
        _build_user_repartition,
        expect={"coalesced": False},
        control=Control(
            "coalesced", "user-repartition", None,
            "The shuffle is the user's repartition to 20 partitions, whose count AQE must keep, so it is not coalesced.",
            _read_facts,
            (("the shuffle is a repartition by number",
              lambda f: f["shuffle_origin"] == "REPARTITION_BY_NUM"),
             ("coalescing is on", lambda f: f["coalescing_enabled"] == "true"),
             _WOULD_COALESCE),
            twin="repartition_by_column",
        ),
    ),
    Scenario(
        "repartition_by_column",
        "repartition(k) feeding an aggregation on k: AQE may coalesce a repartition by column.",
        _build_repartition_by_column,
        expect={"coalesced": True},
    ),
    Scenario(
        "broadcast_just_fits",
        "The smj_to_bhj join with AQE's broadcast threshold set just above the filtered side's run-time size: it is broadcast, by a margin of 5%.",
        _build_filtered_join,
        expect={"smj-to-bhj": True},
        tune=_tune_broadcast_just_fits,
    ),
    Scenario(
        "broadcast_tenfold",
        "The smj_to_bhj join with AQE's broadcast threshold set at 10x the filtered side's run-time size: it is broadcast, by a margin of 90%.",
        _build_filtered_join,
        expect={"smj-to-bhj": True},
        tune=_tune_broadcast_tenfold,
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
        # How many fields a plan line shows (spark.sql.debug.maxToStringFields): the
        # plan-change log prints operators with it.
        self.max_fields = int(spark._jsparkSession.sessionState().conf().maxToStringFields())

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


def _pruning_expressions(node) -> list:
    """The DynamicPruningExpressions among a node's expressions."""
    return [sub for expr in _seq(node.expressions()) for sub in _expression_tree(expr)
            if _simple_name(sub) == "DynamicPruningExpression"]


def _dpp_mode(node) -> Optional[str]:
    """How a scan's dynamic pruning ran (PlanAdaptiveDynamicPruningFilters): ``reused`` when
    its values come from a ``SubqueryBroadcastExec`` (the join's broadcast, reused),
    ``subquery`` when from a ``SubqueryExec`` that scans the build side again (3.x,
    ``reuseBroadcastOnly=false``); None when it has no pruning subquery."""
    for sub in _pruning_expressions(node):
        if _simple_name(sub.child()) == "InSubqueryExec":
            plan = _simple_name(sub.child().plan())
            return "reused" if plan == "SubqueryBroadcastExec" else "subquery"
    return None


def _dpp_dropped(node) -> bool:
    """A DynamicPruningExpression whose child is the literal ``true``: the placeholder AQE
    (or the planner) leaves when it drops a planned pruning."""
    return any(_simple_name(sub.child()) == "Literal" for sub in _pruning_expressions(node))


def _is_rebalance_skew(node) -> bool:
    """An AQE shuffle read with skewed (split) partitions over a REBALANCE shuffle: the
    work of OptimizeSkewInRebalancePartitions (a skew join's reads are over
    ENSURE_REQUIREMENTS shuffles)."""
    if _simple_name(node) not in SHUFFLE_READ_CLASSES or not _has_method(node, "hasSkewedPartition"):
        return False
    if not bool(node.hasSkewedPartition()):
        return False
    stage = node.child()
    if not _has_method(stage, "shuffle"):
        return False
    return stage.shuffle().shuffleOrigin().toString() in REBALANCE_ORIGINS


def _logical_operator_counts(root, types: _JvmTypes) -> Counter:
    """Global sorts, final-phase aggregates and limits of one physical plan, with
    multiplicity: every tree a stage or a reused exchange stands for is walked (an initial
    plan holds both copies of a reused subtree), nested adaptive plans and subqueries are
    not. A logical Aggregate plans as a partial and a final physical aggregate; only the
    one that requires a child distribution (``requiredChildDistributionExpressions``
    defined) is counted, so each logical aggregate counts once."""
    counts: Counter = Counter()
    stack = [root]
    while stack:
        node = stack.pop()
        name = _simple_name(node)
        if name == "AdaptiveSparkPlanExec" and node is not root:
            continue
        if name == "SortExec" and bool(getattr(node, "global")()):
            counts["sort"] += 1
        elif name in AGGREGATE_CLASSES and _option(node.requiredChildDistributionExpressions()) is not None:
            counts["aggregate"] += 1
        elif name in LIMIT_CLASSES:
            counts["limit"] += 1
        stack.extend(_seq(node.children()))
        if types.is_query_stage(node):
            stack.append(node.plan())
        if name == "ReusedExchangeExec":
            stack.append(node.child())
    return counts


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
        if name in SCAN_CLASSES:
            counts["dpp"] += _dpp_mode(node) is not None
            counts["dpp-dropped"] += _dpp_dropped(node)
        counts["rebalance-skew"] += _is_rebalance_skew(node)
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


def _option(value):
    """A Scala Option's value, or None."""
    return value.get() if value.isDefined() else None


def _big_int(value) -> int:
    """A Scala BigInt reached through py4j (which may already hand back an int)."""
    return value if isinstance(value, int) else int(value.toString())


def _stage_truth(stage, location: str) -> dict:
    """A materialized query stage's run-time evidence, as AQE's rules read it.

    ``size_in_bytes`` and ``row_count`` are ``getRuntimeStatistics`` (the
    exchange's data size and row metrics: what the broadcast decision compares
    with the threshold); ``bytes_by_partition`` is the shuffle's
    ``MapOutputStatistics.bytesByPartitionId`` (the shuffle-file bytes per
    reduce partition that coalescing, skew and the empty-partition ratio read).
    """
    kind = STAGE_KINDS[_simple_name(stage)]
    stats = stage.getRuntimeStatistics()
    rows = _option(stats.rowCount())
    record = {
        "id": int(stage.id()),
        "location": location,
        "kind": kind,
        "size_in_bytes": _big_int(stats.sizeInBytes()),
        "row_count": None if rows is None else _big_int(rows),
        "bytes_by_partition": None,
        "shuffle_origin": None,
    }
    if kind == "shuffle":
        map_stats = _option(stage.mapStats())
        if map_stats is not None:
            record["bytes_by_partition"] = [int(b) for b in map_stats.bytesByPartitionId()]
        record["shuffle_origin"] = stage.shuffle().shuffleOrigin().toString()
    return record


def _stage_below(node, types: _JvmTypes):
    """The query stage a join side reads, through single-child nodes (sort,
    shuffle read), or None when the side branches or reads no stage."""
    while not types.is_query_stage(node):
        children = _seq(node.children())
        if len(children) != 1:
            return None
        node = children[0]
    return node if _simple_name(node) in STAGE_KINDS else None


def _join_truth(join, location: str, types: _JvmTypes) -> dict:
    """A final-plan join and the query stages its two sides read."""
    sides = [_stage_below(join.left(), types), _stage_below(join.right(), types)]
    left, right = (None if stage is None else int(stage.id()) for stage in sides)
    return {
        "location": location,
        "operator": _simple_name(join)[: -len("Exec")],
        "join_type": join.joinType().toString(),
        "left_stage": left,
        "right_stage": right,
    }


def _runtime_evidence(nodes: list, location: str, types: _JvmTypes) -> tuple[list, list]:
    """Stages (by id) and joins of one adaptive plan's final plan."""
    stages = sorted(
        (_stage_truth(n, location) for n in nodes if _simple_name(n) in STAGE_KINDS),
        key=lambda stage: stage["id"],
    )
    joins = [
        _join_truth(n, location, types)
        for n in nodes
        if _simple_name(n).endswith("JoinExec") and _has_method(n, "joinType")
    ]
    return stages, joins


# --------------------------------------------------------------------------
# Empty propagation: the logical plan AQE started from against the one it ended with
# --------------------------------------------------------------------------

# Logical nodes AQEPropagateEmptyRelation leaves where a subtree produced no rows: an empty
# LocalRelation (3.x) or, from 4.0, EmptyRelation, which keeps the plan it replaced.
EMPTY_LOGICAL = frozenset({"LocalRelation", "EmptyRelation"})
# What AQE's other logical rules drop without emptying anything: EliminateLimits removes a
# limit, OptimizeOneRowPlan a sort (and turns an aggregate into a projection).
DROPPED_BY_OTHER_RULES = frozenset({"GlobalLimit", "LocalLimit", "Sort"})


def _is_empty_logical(node) -> bool:
    name = _simple_name(node)
    if name == "LocalRelation":
        return bool(node.data().isEmpty())
    return name == "EmptyRelation"


def _output_ids(node) -> tuple:
    return tuple(int(attribute.exprId().id()) for attribute in _seq(node.output()))


def _logical_nodes(root) -> list:
    """Every node of a logical tree, iteratively (a query stage's inner plan not included)."""
    nodes, stack = [], [root]
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(_seq(node.children()))
    return nodes


def _initial_logical_plan(adaptive):
    """The optimized logical plan AQE started from: the input plan's logical link."""
    return _option(adaptive.inputPlan().logicalLink())


def _final_logical_plan(adaptive, types: _JvmTypes):
    """The logical plan AQE ended with. AQE keeps it in a local variable of its re-planning
    loop, never in a field; the planner links it to the root of the physical plan it plans
    from it (``SparkPlan.setLogicalLink``), and the plan AQE adopts keeps that link. The
    final plan's first linked node from the top is that root (4.x's ResultQueryStage carries
    it too; WholeStageCodegen and InputAdapter carry none)."""
    stack = [adaptive.executedPlan()]
    while stack:
        node = stack.pop(0)
        link = _option(node.logicalLink())
        if link is not None:
            return link
        stack.extend(_seq(node.children()))
        if types.is_query_stage(node):
            stack.append(node.plan())
    return None


def _unwrap_stage(node):
    """The logical plan a LogicalQueryStage stands for (through the stages wrapped in it: a
    broadcast stage AQE made over a shuffle stage wraps that stage's LogicalQueryStage), or
    the node itself."""
    while _simple_name(node) == "LogicalQueryStage":
        node = node.logicalPlan()
    return node


def _operator_name(node) -> str:
    """A logical operator as the truth names it: the class, and a join's type."""
    name = _simple_name(node)
    return f"{name} {node.joinType().toString()}" if name == "Join" else name


def _matching_child(initial, final) -> tuple[Optional[int], object]:
    """Which child of ``initial`` the final subtree ``final`` is, by output expression ids:
    ``final`` itself or a node under the Projects over it (AQE keeps a join's or a union's
    output names with a Project over the side or branch it keeps). (index, that node), or
    (None, None)."""
    children = [set(_output_ids(child)) for child in _seq(initial.children())]
    node = final
    while True:
        ids = set(_output_ids(_unwrap_stage(node)))
        if ids in children:
            return children.index(ids), node
        if _simple_name(node) != "Project":
            return None, None
        node = node.child()


@dataclass
class _Place:
    """One subtree of the initial logical plan that the final one replaced."""

    initial: object
    record: dict
    kept: list  # (index of the initial node's child, the final subtree standing for it)


def _place(initial, replacement, location: str) -> _Place:
    """The record of one replaced subtree: the operator that went (under a Project that
    went with it), what stands in its place, which side or branches AQE kept."""
    removed = initial
    while _simple_name(removed) == "Project" and _is_empty_logical(replacement):
        removed = removed.child()
    record = {
        "location": location,
        "removed": _operator_name(removed),
        "replaced_by": _simple_name(replacement),
        "kept_side": None,
        "branches_dropped": None,
    }
    kept: list = []
    name = _simple_name(initial)
    if _is_empty_logical(replacement):
        finals = []
    elif name == "Union" and _simple_name(replacement) == "Union":
        finals = _seq(replacement.children())
    else:
        finals = [replacement]
    for final in finals:
        index, node = _matching_child(initial, final)
        if index is not None:
            kept.append((index, node))
    if name == "Join" and kept:
        record["kept_side"] = ("left", "right")[kept[0][0]]
    elif name == "Union":
        record["branches_dropped"] = initial.children().size() - len(finals)
    return _Place(initial, record, kept)


def _replaced_subtrees(initial_root, final_root, location: str) -> list:
    """Every place where AQE's final logical plan no longer holds the initial one's subtree.

    Both trees are walked together, iteratively. A LogicalQueryStage in the final plan
    that wraps the initial operator (same class, same output) is walked through to the
    logical plan it holds (a stage made after a re-planning holds its rewrites); nodes of
    the same class and child count are paired child by child. A limit or sort that is simply gone
    (its child's counterpart in its place), or an aggregate that became a projection, is
    EliminateLimits' or OptimizeOneRowPlan's work and is walked through; anything else is a
    replaced subtree. A join or union that kept a side or branches is walked on in those.
    """
    places = []
    stack = [(initial_root, final_root)]
    while stack:
        initial, final = stack.pop()
        name, final_name = _simple_name(initial), _simple_name(final)
        if final_name == "LogicalQueryStage":
            inner = _unwrap_stage(final)
            if _simple_name(inner) == name and _output_ids(inner) == _output_ids(initial):
                # The stage's logical plan is the one AQE had when it made the stage, with
                # the rewrites of earlier re-plannings: walk on in it.
                stack.append((initial, final.logicalPlan()))
                continue
        elif final_name == name and final.children().size() == initial.children().size():
            stack.extend(reversed(list(zip(_seq(initial.children()), _seq(final.children())))))
            continue
        if not _is_empty_logical(final):
            if name in DROPPED_BY_OTHER_RULES and initial.children().size() == 1:
                stack.append((initial.child(), final))
                continue
            if name == "Aggregate" and final_name == "Project":
                stack.append((initial.child(), final.child()))
                continue
        place = _place(initial, final, location)
        places.append(place)
        children = _seq(initial.children())
        stack.extend((children[index], node) for index, node in place.kept)
    return places


def _created_stages(adaptive, final_nodes: list, types: _JvmTypes) -> list:
    """Every exchange query stage the plan's AQE context created (its stage cache: the
    stages still in the final plan and those a rewrite dropped), and those of the final plan."""
    stages = [n for n in final_nodes if _simple_name(n) in STAGE_KINDS]
    cache = adaptive.context().stageCache()
    values = cache.values().iterator()
    while values.hasNext():
        stages.append(values.next())
    seen = types.identity_set()
    distinct = []
    for stage in stages:
        if not seen.containsKey(stage) and _simple_name(stage) in STAGE_KINDS:
            seen.put(stage, True)
            distinct.append(stage)
    return distinct


def _empty_stages(place: _Place, stages: list, final_nodes: list, types: _JvmTypes) -> list:
    """The materialized query stages with no rows that read or write an attribute of the
    replaced subtree (its kept sides or branches left out): the input AQE found empty. A
    stage's output shares ids with the logical subtree (a partial aggregate's grouping
    attribute, a projection's columns)."""
    kept = {index for index, _ in place.kept}
    children = _seq(place.initial.children())
    stack = [c for i, c in enumerate(children) if i not in kept] if kept else [place.initial]
    ids: set = set()
    while stack:
        node = stack.pop()
        ids.update(_output_ids(node))
        stack.extend(_seq(node.children()))
    in_final = types.identity_set()
    for node in final_nodes:
        in_final.put(node, True)
    found = []
    for stage in stages:
        if not bool(stage.isMaterialized()):
            continue
        rows = _option(stage.getRuntimeStatistics().rowCount())
        if rows is None or _big_int(rows) != 0:
            continue
        if set(_output_ids(stage)) & ids:
            found.append({"id": int(stage.id()), "kind": STAGE_KINDS[_simple_name(stage)],
                          "row_count": 0, "in_final_plan": bool(in_final.containsKey(stage))})
    return sorted(found, key=lambda s: s["id"])


def _empty_relation_places(adaptive, location: str, final_nodes: list,
                           types: _JvmTypes, max_fields: int) -> list[dict]:
    """The places AQEPropagateEmptyRelation's work left in one adaptive plan, read from the
    logical plans (see ``_replaced_subtrees``), each with the stage found empty and the
    lines the plan-change log prints for what went (``log_keys``, dropped later)."""
    if not bool(_private_field(adaptive, ("_isFinalPlan", "isFinalPlan"))):
        return []
    initial, final = _initial_logical_plan(adaptive), _final_logical_plan(adaptive, types)
    if initial is None or final is None:
        raise RuntimeError(f"{location}: AQE's logical plans are not linked from its physical plans")
    stages = _created_stages(adaptive, final_nodes, types)
    records = []
    for place in _replaced_subtrees(initial, final, location):
        record = dict(place.record)
        record["empty_stages"] = _empty_stages(place, stages, final_nodes, types)
        # The line the plan-change log prints for what went: the operator, or, for a union
        # that stays a union, the branches it dropped.
        gone = [place.initial]
        if record["replaced_by"] == _simple_name(place.initial):
            kept = {index for index, _ in place.kept}
            gone = [c for i, c in enumerate(_seq(place.initial.children())) if i not in kept]
        record["log_keys"] = [node.verboseString(max_fields) for node in gone]
        records.append(record)
    return records


# The plan-change log: what the generator's own session writes (log4j2-planchange-capture.properties).
PLANCHANGE_FILE_PROPERTY = "aqe.planchange.file"
PLANCHANGE_LOG4J2 = Path(__file__).resolve().parent / "log4j2-planchange-capture.properties"
PLANCHANGE_APPENDER = "planchange"
PLANCHANGE_CONFS = {
    "spark.sql.planChangeLog.level": "WARN",
    "spark.sql.planChangeLog.rules": EMPTY_RULE,
    "spark.sql.planChangeLog.batches": "Propagate Empty Relations",
}
_APPLYING = f"=== Applying Rule {EMPTY_RULE} ==="
_LOG_LINE_START = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d")
_TREE_PREFIX = re.compile(r"^[ :]*(?:[+:]- )?")


class PlanChangeCapture:
    """The plan-change log file of the session's JVM, read back by byte offset."""

    def __init__(self, path: str):
        self.path = Path(path)

    def offset(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def read_from(self, offset: int) -> str:
        with self.path.open("rb") as handle:
            handle.seek(offset)
            return handle.read().decode("utf-8", "replace")


def planchange_capture(spark: SparkSession) -> Optional[PlanChangeCapture]:
    """The capture of this session's JVM, when it was started by ``build_session`` with the
    plan-change log going to a file (the system property and the appender are both there)."""
    jvm = spark._jvm
    path = jvm.java.lang.System.getProperty(PLANCHANGE_FILE_PROPERTY)
    if not path:
        return None
    context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
    if not context.getConfiguration().getAppenders().containsKey(PLANCHANGE_APPENDER):
        return None
    return PlanChangeCapture(path)


def _split_side_by_side(lines: list[str]) -> Optional[tuple[list, list]]:
    """The old and new plan lines of a plan-change message. Spark prints them side by side
    (``sideBySide``): a marker column, the old line padded to the longest old line plus 3
    spaces, then the new line. The first line's two roots (no tree prefix) give the column
    where the new side starts; every other line must have 3 spaces before it."""
    match = re.match(r"^[! ](\S.*?) {3,}(\S)", lines[0]) if lines else None
    if match is None:
        return None
    start = match.start(2)
    if any(len(line) > start - 3 and line[start - 3:start].strip() for line in lines):
        return None
    return ([line[1:start].rstrip() for line in lines], [line[start:] for line in lines])


def rule_applications(text: str) -> list[tuple[list, list]]:
    """Each ``Applying Rule AQEPropagateEmptyRelation`` message of a plan-change log: the
    operator lines (tree prefix stripped) of the plan before and after it."""
    applications = []
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line.strip() != _APPLYING:
            continue
        body = []
        for following in lines[index + 1:]:
            if (not following.strip() or following.startswith("Output Information:")
                    or _LOG_LINE_START.match(following)):
                break
            body.append(following)
        sides = _split_side_by_side(body)
        if sides is None:
            raise RuntimeError(f"cannot read the plans of a plan-change message: {body[:2]}")
        old, new = sides
        applications.append(([_TREE_PREFIX.sub("", l) for l in old if l],
                             [_TREE_PREFIX.sub("", l) for l in new if l]))
    return applications


def _names_operator(lines: list, key: str) -> bool:
    return any(line == key or line.startswith((key + ", ", "LogicalQueryStage " + key))
               for line in lines)


def attribute_applications(places: list[dict], applications: list) -> int:
    """Set each place's ``rule_applications``: the messages whose old plan holds a line of
    what went (``log_keys``) and whose new plan does not. Returns how many messages no place
    explains."""
    explained = set()
    for place in places:
        keys = place.pop("log_keys")
        hits = [n for n, (old, new) in enumerate(applications)
                if any(_names_operator(old, key) and not _names_operator(new, key)
                       for key in keys)]
        place["rule_applications"] = len(hits)
        explained.update(hits)
    return len(applications) - len(explained)


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
    # Every subtree AQEPropagateEmptyRelation replaced, from the logical plans (a join it
    # replaced by one side leaves no empty node in the physical plan).
    empty_relations = _empty_relation_places(adaptive, location, final.nodes, types,
                                             types.max_fields)
    initially_empty = sum(_is_empty_relation(n) for n in initial.nodes)
    empty_nodes = max(0, counts["empty-relation"] - initially_empty)
    counts["empty-relation"] = len(empty_relations)
    switches = _join_switches(initial.nodes, final.nodes)
    for switch in switches:
        counts[SWITCH_TARGETS[switch["to"] + "Exec"]] += 1
    # A pruning the initial plan had dropped already is the planner's, not AQE's.
    initially_dropped = sum(_dpp_dropped(n) for n in initial.nodes
                            if _simple_name(n) in SCAN_CLASSES)
    counts["dpp-dropped"] = max(0, counts["dpp-dropped"] - initially_dropped)
    # AQE's logical re-optimizer (3.3+): OptimizeOneRowPlan removes global sorts and
    # aggregates, EliminateLimits limits. What the initial plan has and the final plan lost;
    # a plan AQEPropagateEmptyRelation cut down lost them to that rule instead.
    before = _logical_operator_counts(adaptive.initialPlan(), types)
    after = _logical_operator_counts(adaptive.executedPlan(), types)
    if counts["empty-relation"] == 0:
        counts["one-row"] = (max(0, before["sort"] - after["sort"])
                             + max(0, before["aggregate"] - after["aggregate"]))
        counts["limit-removed"] = max(0, before["limit"] - after["limit"])
    dpp_scans = [{"mode": _dpp_mode(n), "scan": _simple_name(n)[: -len("Exec")]}
                 for n in final.nodes if _simple_name(n) in SCAN_CLASSES and _dpp_mode(n)]
    stages, joins = _runtime_evidence(final.nodes, location, types)
    truth = {
        "location": location,
        "is_final_plan": bool(
            _private_field(adaptive, ("_isFinalPlan", "isFinalPlan"))
        ),
        "rewrites": {key: counts[key] for key in REWRITE_KEYS},
        "info": {key: counts[key] for key in INFO_KEYS},
        "join_switches": switches,
        "dpp_scans": dpp_scans,
        "logical_operators": {"initial": dict(sorted(before.items())),
                              "final": dict(sorted(after.items()))},
        "stages": stages,
        "joins": joins,
        "empty_nodes": empty_nodes,
        "empty_relations": empty_relations,
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


def read_truth(
    df: DataFrame, scenario: Scenario, spark: SparkSession, confs: Mapping[str, str] | None = None,
    planchange: Optional[str] = None,
) -> dict:
    """Build truth.json content for an executed DataFrame from its JVM plan objects.

    Call it while the scenario's confs are still set: a control's facts read
    the session's effective settings.  ``confs`` is what the scenario ran
    with (default ``scenario.all_confs()``; a tuned scenario passes its own).
    ``planchange`` is the plan-change log the JVM wrote while the scenario ran
    (``PlanChangeCapture``), or None when there is none: AQEPropagateEmptyRelation's
    applications in it are then counted and held against the places the logical
    plans show.
    """
    types = _JvmTypes(spark)
    executed_plan = df._jdf.queryExecution().executedPlan()
    plans = _collect_adaptive_plans(executed_plan, types)
    main_is_adaptive = _simple_name(executed_plan) == "AdaptiveSparkPlanExec"
    truth = {
        "schema": TRUTH_SCHEMA,
        "spark_version": spark.version,
        "scenario": scenario.name,
        "description": scenario.description,
        "confs": dict(confs) if confs is not None else scenario.all_confs(),
        "adaptive": main_is_adaptive,
        "is_final_plan": plans[0]["is_final_plan"] if main_is_adaptive else None,
        "rewrites": {
            key: sum(p["rewrites"][key] for p in plans) for key in REWRITE_KEYS
        },
        "info": {key: sum(p["info"][key] for p in plans) for key in INFO_KEYS},
        "join_switches": [s for p in plans for s in p.pop("join_switches")],
        "adaptive_plans": plans,
        "stages": [s for p in plans for s in p.pop("stages")],
        "joins": [j for p in plans for j in p.pop("joins")],
        "control": None,
        "empty_relations": [e for p in plans for e in p.pop("empty_relations")],
        "empty_relation_rule": None,
    }
    if planchange is not None:
        applications = rule_applications(planchange)
        unexplained = attribute_applications(truth["empty_relations"], applications)
        truth["empty_relation_rule"] = {"rule": EMPTY_RULE, "applications": len(applications),
                                        "unexplained_applications": unexplained}
    else:
        for place in truth["empty_relations"]:
            place.pop("log_keys")
            place["rule_applications"] = None
    if scenario.control is not None:
        sql_conf = spark._jsparkSession.sessionState().conf()
        truth["control"] = scenario.control.record(truth, sql_conf.getConfString)
    truth.update(coalescing_truth(executed_plan, types, spark))
    return truth


def expectation_problems(truth: dict, scenario: Scenario) -> list[str]:
    """Where the truth contradicts what the scenario exists to show."""
    observed = {**truth["rewrites"], **truth["info"]}
    problems = []
    for key, wanted in scenario.expect.items():
        if (observed[key] > 0) != wanted:
            verb = "expected" if wanted else "did not expect"
            problems.append(f"{scenario.name}: {verb} {key}, got count {observed[key]}")
    problems.extend(f"{scenario.name}: {problem}" for problem in empty_relation_problems(truth))
    if scenario.removed is not None:
        removed = sorted(f"{place['location']}: {place['removed']}"
                         for place in truth["empty_relations"])
        if removed != sorted(scenario.removed):
            problems.append(f"{scenario.name}: expected AQE to remove {sorted(scenario.removed)}, "
                            f"it removed {removed}")
    if scenario.control is not None:
        facts = truth["control"]["facts"]
        for claim, holds in scenario.control.claims:
            if not holds(facts):
                problems.append(
                    f"{scenario.name}: control {scenario.control.reason} not shown: {claim} ({facts})"
                )
    return problems


def empty_relation_problems(truth: dict) -> list[str]:
    """Where the logical plans and the plan-change log disagree on AQEPropagateEmptyRelation:
    places with no application of the rule, applications with no place, or a place whose
    empty input is no query stage with 0 rows."""
    problems = []
    places = truth["empty_relations"]
    for place in places:
        if not place["empty_stages"]:
            problems.append(f"{place['location']}: {place['removed']} was replaced, "
                            "but no query stage of 0 rows feeds it")
    rule = truth["empty_relation_rule"]
    if rule is None:
        return problems
    if places and not rule["applications"]:
        problems.append(f"{len(places)} replaced subtree(s) but the plan-change log shows no "
                        f"{EMPTY_RULE} application")
    if rule["applications"] and not places:
        problems.append(f"{rule['applications']} {EMPTY_RULE} application(s) in the plan-change "
                        "log but no replaced subtree in the logical plans")
    for place in places:
        if not place["rule_applications"]:
            problems.append(f"{place['location']}: {place['removed']} was replaced, but no "
                            "application in the plan-change log removed it")
    if rule["unexplained_applications"]:
        problems.append(f"{rule['unexplained_applications']} {EMPTY_RULE} application(s) "
                        "removed no operator the logical plans lost")
    return problems


def resolved_confs(spark: SparkSession, scenario: Scenario, data_dir: Path) -> dict:
    """The confs a scenario runs with: its own, plus what ``tune`` measured."""
    confs = scenario.all_confs()
    if scenario.tune is not None:
        confs.update(scenario.tune(spark, data_dir))
    return confs


def job_confs(scenario: Scenario, committed_truth: dict) -> dict:
    """The confs a job replaying a scenario (driver log, event log) sets: the
    committed truth.json's for a tuned scenario, so the logs show the very
    thresholds the truth recorded and no measuring query runs; otherwise the
    scenario's own."""
    return dict(committed_truth["confs"]) if scenario.tune else scenario.all_confs()


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
    spark: SparkSession,
    scenario: Scenario,
    out_dir: Path,
    data_dir: Path,
    truth_only: bool = False,
    add_keys: bool = False,
) -> tuple[list[Path], dict]:
    """Capture one scenario's plans and truth into ``out_dir``.

    Explaining the same DataFrame after ``collect()`` shows the plan AQE
    finished with, because the action ran that DataFrame's own query execution.
    With ``truth_only`` the plan texts are left as they are and only
    truth.json is written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    confs = resolved_confs(spark, scenario, data_dir)
    capture = planchange_capture(spark)
    # The plan-change settings are the session's, not the scenario's (truth.json's confs
    # do not list them): they change no plan.
    logging = PLANCHANGE_CONFS if capture is not None else {}
    with _ScenarioConfs(spark, logging), _ScenarioConfs(spark, confs):
        start = capture.offset() if capture is not None else 0
        df = scenario.build(spark, data_dir)
        explain = (lambda *_: []) if truth_only else _write_explains
        written = explain(spark, df, out_dir, BEFORE_MODES, "before")
        df.collect()
        written += explain(spark, df, out_dir, AFTER_MODES, "after")
        planchange = capture.read_from(start) if capture is not None else None
        truth = read_truth(df, scenario, spark, confs, planchange)
    spark.catalog.clearCache()
    if add_keys:
        committed = json.loads((out_dir / "truth.json").read_text("utf-8"))
        truth = merge_new_keys(committed, truth)
    written.append(
        _write_text(out_dir / "truth.json", json.dumps(truth, indent=2) + "\n")
    )
    return written, truth


# Rewrite counts whose definition changed since samples were committed: --add-keys takes
# their fresh value (an expression-free count), and reports each one that differs.
REDEFINED_KEYS = ("empty-relation",)
# Fields that hold no expression id and belong to the redefined counts: always the fresh ones.
REFRESHED_FIELDS = ("empty_relations", "empty_relation_rule")
REFRESHED_PLAN_FIELDS = ("empty_nodes",)


def merge_new_keys(committed: dict, fresh: dict) -> dict:
    """``committed`` truth with the keys only ``fresh`` has added to it: new rewrite kinds (at
    the top and in each adaptive plan, matched by position), new top-level and per-plan
    fields, and the fresh value of each redefined count (``REDEFINED_KEYS``). Nothing else
    the committed truth holds changes, so its expression IDs keep matching the committed
    plan texts; the fresh run's adaptive plans must match the committed ones in number and
    location."""
    merged = json.loads(json.dumps(committed))
    name = f"spark-{committed['spark_version']}/{committed['scenario']}"
    for key, value in fresh["rewrites"].items():
        merged["rewrites"].setdefault(key, value)
    for key, value in fresh["info"].items():
        merged["info"].setdefault(key, value)
    for key, value in fresh.items():
        merged.setdefault(key, value)
    plans, fresh_plans = merged["adaptive_plans"], fresh["adaptive_plans"]
    if [p["location"] for p in plans] != [p["location"] for p in fresh_plans]:
        raise RuntimeError(f"{committed['scenario']}: adaptive plans differ from the committed truth")
    for plan, fresh_plan in zip(plans, fresh_plans):
        for key, value in fresh_plan["rewrites"].items():
            plan["rewrites"].setdefault(key, value)
        for key, value in fresh_plan.items():
            plan.setdefault(key, value)
    for key in REFRESHED_FIELDS:
        merged[key] = fresh[key]
    for plan, fresh_plan in zip(plans, fresh_plans):
        for key in REFRESHED_PLAN_FIELDS:
            plan[key] = fresh_plan[key]
    for key in REDEFINED_KEYS:
        for target, source in [(merged, fresh)] + list(zip(plans, fresh_plans)):
            before, after = target["rewrites"][key], source["rewrites"][key]
            if before != after:
                where = target.get("location", "total")
                print(f"REDEFINED {name} {where} {key}: {before} -> {after}", file=sys.stderr)
                target["rewrites"][key] = after
    return merged


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
    truth_only: Sequence[str] = (),
    add_keys: bool = False,
) -> list[Path]:
    """Run the selected scenarios and write their files under
    ``out_dir/spark-<version>/<scenario>/``; return the paths written.
    Scenarios named in ``truth_only`` get only their truth.json rewritten.

    A scenario whose truth contradicts its ``expect``, or a control whose
    facts do not show its reason, is reported on stderr; with ``strict`` the
    run then ends with ``RuntimeError``.
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
                spark, scenario, version_dir / scenario.name, Path(data_dir),
                truth_only=scenario.name in truth_only,
                add_keys=add_keys and scenario.name in truth_only,
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
    # The JVM starts with log4j2-planchange-capture.properties: the plan-change log goes to
    # a file of its own, which run_scenario reads back (PlanChangeCapture). A JVM already
    # running keeps its logging, and the truth then has no plan-change cross-check.
    planchange = Path(tempfile.mkdtemp(prefix="aqe-planchange-")) / "planchange.log"
    java_options = (f'"-Dlog4j2.configurationFile={PLANCHANGE_LOG4J2.as_uri()}" '
                    f'"-D{PLANCHANGE_FILE_PROPERTY}={planchange}"')
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("aqe-inspect-sample-plans")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.driver.extraJavaOptions", java_options)
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
    parser.add_argument(
        "--truth-only",
        nargs="+",
        default=(),
        metavar="NAME",
        help="of the scenarios run, rewrite only these ones' truth.json, not their plan texts",
    )
    parser.add_argument(
        "--add-keys",
        action="store_true",
        help="with --truth-only: add only the keys the committed truth.json lacks "
        "(new rewrite kinds), leaving every value it holds as it is",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="aqe-sample-warehouse-") as warehouse:
        spark = build_session(warehouse)
        try:
            generate(spark, args.out, only=args.only, strict=True, truth_only=args.truth_only,
                     add_keys=args.add_keys)
        except RuntimeError as error:
            print(error, file=sys.stderr)
            return 1
        finally:
            spark.stop()
    return 0



# --------------------------------------------------------------------------
# Coalescing held at the core count (issue 49): the shuffle reads' partition counts
# --------------------------------------------------------------------------


def coalescing_truth(executed_plan, types: _JvmTypes, spark: SparkSession) -> dict:
    """What CoalesceShufflePartitions had to work with and what it made, from the JVM:
    ``default_parallelism`` (``SparkContext.defaultParallelism``, the floor it keeps with
    ``coalescePartitions.parallelismFirst`` and no ``minPartitionNum``) and ``shuffle_reads``:
    each ``AQEShuffleReadExec`` of the main adaptive plan's final plan (walked through query
    stages' plans), main plan only, with the stage it reads (``stage``), how many partitions it
    reads (``partitions``: ``partitionSpecs.size``) and its kind (``coalesced``, ``skewed``,
    ``local``: ``hasCoalescedPartition``, ``hasSkewedPartition``, ``isLocalRead``)."""
    reads = []
    if _simple_name(executed_plan) == "AdaptiveSparkPlanExec":
        pending = [executed_plan.executedPlan()]
        seen = types.identity_set()
        while pending:
            node = pending.pop()
            if seen.containsKey(node):
                continue
            seen.put(node, True)
            name = _simple_name(node)
            if name in ("AQEShuffleReadExec", "CustomShuffleReaderExec"):
                child = node.child()
                reads.append({
                    "location": "main",
                    "stage": int(child.id()) if types.is_query_stage(child) else None,
                    "partitions": int(node.partitionSpecs().size()),
                    "coalesced": bool(node.hasCoalescedPartition()),
                    "skewed": bool(node.hasSkewedPartition()),
                    "local": bool(node.isLocalRead()),
                })
            if types.is_query_stage(node):
                pending.append(node.plan())
            pending.extend(_seq(node.children()))
    reads.sort(key=lambda r: (r["stage"] is None, r["stage"] or 0))
    return {"default_parallelism": int(spark.sparkContext.defaultParallelism),
            "shuffle_reads": reads}


# Rows and distinct keys of the core-floor group-by: a shuffle of a few MB (each row's
# 64-character hash survives the partial aggregation), above two x the 1 MB minimum
# partition size and far under the 64 MB advisory size.
CORE_FLOOR_ROWS = 200_000
CORE_FLOOR_GROUPS = 50_000
PARALLELISM_FIRST_KEY = "spark.sql.adaptive.coalescePartitions.parallelismFirst"


def _build_coalesced_core_floor(spark: SparkSession, _: Path) -> DataFrame:
    """A group-by whose shuffle is a few MB over 20 partitions: with parallelismFirst AQE
    coalesces it to the session's default parallelism (2 under local[2]), not to the advisory
    size (64 MB, which would take it all in one partition)."""
    rows = _range(spark, CORE_FLOOR_ROWS).select(
        (F.col("id") % CORE_FLOOR_GROUPS).alias("k"),
        F.sha2(F.col("id").cast("string"), 256).alias("v"))
    return rows.groupBy("k").agg(F.max("v").alias("v"))


SCENARIOS = SCENARIOS + (
    Scenario(
        "coalesced_core_floor",
        "Group-by with a few MB over 20 shuffle partitions: AQE coalesces them only down to the "
        "default parallelism (parallelismFirst), not to the 64 MB advisory size.",
        _build_coalesced_core_floor,
        expect={"coalesced": True},
    ),
    Scenario(
        "coalesced_core_floor_advised",
        "The coalesced_core_floor group-by with parallelismFirst=false, as aqe-inspect advise "
        "advises: AQE coalesces towards the advisory size, to fewer partitions.",
        _build_coalesced_core_floor,
        confs={PARALLELISM_FIRST_KEY: "false"},
        expect={"coalesced": True},
    ),
)

if __name__ == "__main__":
    sys.exit(main())
