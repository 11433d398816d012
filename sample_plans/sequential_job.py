"""Four queries run strictly one after another over the same DataFrames, for a driver log with
Spark's plan-change log in which the queries share expression ids.

Meant to be started by ``spark-submit`` (``driver_logs.py --sequential``)::

    spark-submit --master 'local[2]' --conf spark.sql.planChangeLog.level=INFO ... \\
        sample_plans/sequential_job.py [--truth-out PATH]

The DataFrames (``orders``, ``customers``, ``items``, ``payments``, built with
``spark.range``: no files) are made once; every query uses them, so the columns they share
keep one expression id through the whole application (``customer_id#1L`` in each query's
plans). The queries, each with its own settings, each waiting for the one before to end:

1. ``revenue_by_country``: orders JOIN customers, summed by country; the customers' side is
   small at run time, so AQE broadcasts it (a re-planning that changed the plan).
2. ``orders_without_customer``: orders LEFT ANTI JOIN customers whose ``cid * 3 > 100000``,
   which no customer meets (0..499; only running tells: the optimizer folds nothing); AQE's
   ``AQEPropagateEmptyRelation`` replaces the sort-merge anti join by its left side.
3. ``orders_per_category``: orders JOIN items counted by category, sort-merge throughout
   (broadcasts off): AQE re-plans as each stage ends and keeps its plan; the reads coalesce.
4. ``kept_by_cost``: orders JOIN customers (``country != 3``) JOIN payments, counted by
   country; the customers' side is under the broadcast threshold, but a broadcast would add a
   shuffle under the upper join (the expand limit is 0): AQE keeps both sort-merge joins.

Each query prints ``df.explain()`` before its action and ``df.explain()`` and
``df.explain("formatted")`` after it (as ``driver_job.py``), and runs with the job
description ``aqe-sequential:<n>:<name>``, which Spark records as its SQL execution's. The
job logs, through the JVM's log4j (so in order with Spark's own lines), where each query
starts and ends (``SequentialJob: query N of 4 (name) starts`` / ``ends``).

Its truth, read from the JVM (``--truth-out``; ``driver_logs.py --sequential`` writes the log to
``spark-<version>/sequential_queries/sequential_planchange.log`` and this beside it as
``queries.json``): for each query, the SQL executions of its label in Spark's status store (id,
submission and completion times), the rewrites of its final plan (``generate.read_truth``:
stages with their run-time row counts, joins), and its initial plan's joins. The job exits 1
when a query does not show what it is there for.

Depends on the standard library and pyspark only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable, Dict, List

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from generate import (  # noqa: E402
    COMMON_CONFS,
    RANGE_SPLITS,
    Scenario,
    _JvmTypes,
    _ScenarioConfs,
    _seq,
    _simple_name,
    _walk,
    read_truth,
)

SCHEMA = "aqe-inspect/sequential-truth/v1"
NAME = "sequential_queries"
LABEL = "aqe-sequential:{number}:{name}"
LOGGER = "aqe_sample.SequentialJob"
ADAPTIVE_PLAN = "AdaptiveSparkPlanExec"


def tables(spark: SparkSession) -> Dict[str, DataFrame]:
    """The DataFrames every query reads, made once."""
    def rows(count: int) -> DataFrame:
        return spark.range(0, count, 1, RANGE_SPLITS)

    return {
        "orders": rows(20_000).select(
            F.col("id").alias("order_id"), (F.col("id") % 500).alias("customer_id"),
            (F.col("id") % 40).alias("item_id"), ((F.col("id") % 97) * 3).alias("amount")),
        "customers": rows(500).select(F.col("id").alias("cid"),
                                      (F.col("id") % 7).alias("country")),
        "items": rows(40).select(F.col("id").alias("iid"), (F.col("id") % 5).alias("category")),
        "payments": rows(20_000).select((F.col("id") % 500).alias("payer_id"),
                                        F.col("id").alias("paid")),
    }


def revenue_by_country(t: Dict[str, DataFrame]) -> DataFrame:
    orders, customers = t["orders"], t["customers"]
    return (orders.join(customers, orders["customer_id"] == customers["cid"])
            .groupBy("country").agg(F.sum("amount").alias("revenue")))


def orders_without_customer(t: Dict[str, DataFrame]) -> DataFrame:
    orders, customers = t["orders"], t["customers"]
    nobody = customers.where(F.col("cid") * 3 > 100_000)
    return orders.join(nobody, orders["customer_id"] == nobody["cid"], "left_anti")


def orders_per_category(t: Dict[str, DataFrame]) -> DataFrame:
    orders, items = t["orders"], t["items"]
    return (orders.join(items, orders["item_id"] == items["iid"])
            .groupBy("category").count())


def kept_by_cost(t: Dict[str, DataFrame]) -> DataFrame:
    orders, customers, payments = t["orders"], t["customers"], t["payments"]
    some = customers.where(F.col("country") != 3)
    return (orders.join(some, orders["customer_id"] == some["cid"])
            .join(payments, some["cid"] == payments["payer_id"])
            .groupBy("country").count())


#: (name, what it shows, build, settings over COMMON_CONFS, check of its truth -> problem).
QUERIES: List[tuple] = [
    ("revenue_by_country", "orders JOIN customers by country: the customers' side broadcast "
     "at run time", revenue_by_country,
     {"spark.sql.adaptive.autoBroadcastJoinThreshold": "64KB"},
     lambda truth: None if truth["rewrites"]["smj-to-bhj"] == 1 else "no broadcast"),
    ("orders_without_customer", "orders LEFT ANTI JOIN customers filtered to nothing at run "
     "time: AQEPropagateEmptyRelation keeps the left side", orders_without_customer,
     {"spark.sql.adaptive.autoBroadcastJoinThreshold": "-1"},
     lambda truth: None if not truth["joins"] and truth["initial_joins"] == [
         {"operator": "SortMergeJoin", "join_type": "LeftAnti"}]
     else "the anti join was not replaced by its side"),
    ("orders_per_category", "orders JOIN items by category: sort-merge kept, reads coalesced",
     orders_per_category, {"spark.sql.adaptive.autoBroadcastJoinThreshold": "-1"},
     lambda truth: None if truth["rewrites"]["coalesced"] and [j["operator"] for j in
                                                              truth["joins"]] == ["SortMergeJoin"]
     else "not a kept sort-merge join with coalesced reads"),
    ("kept_by_cost", "orders JOIN customers JOIN payments: a broadcast would cost a shuffle, "
     "AQE keeps both sort-merge joins", kept_by_cost,
     {"spark.sql.adaptive.autoBroadcastJoinThreshold": "64KB",
      "spark.sql.execution.broadcastHashJoin.outputPartitioningExpandLimit": "0"},
     lambda truth: None if [j["operator"] for j in truth["joins"]] == ["SortMergeJoin"] * 2
     else "a join was not kept"),
]


def initial_joins(df: DataFrame, spark: SparkSession) -> List[dict]:
    """The joins of the main adaptive plan's initial plan (operator, join type), in walk
    order."""
    types = _JvmTypes(spark)
    executed = df._jdf.queryExecution().executedPlan()
    if _simple_name(executed) != ADAPTIVE_PLAN:
        return []
    joins = []
    for node in _walk(executed.initialPlan(), types, "main").nodes:
        name = _simple_name(node)
        if name.endswith("JoinExec") and hasattr(node, "joinType"):
            joins.append({"operator": name[: -len("Exec")],
                          "join_type": node.joinType().toString()})
    return joins


def executions(spark: SparkSession, label: str) -> List[dict]:
    """The SQL executions Spark's status store holds with `label` as description."""
    store = spark._jsparkSession.sharedState().statusStore()
    found = []
    listing = store.executionsList()
    for index in range(listing.size()):
        execution = listing.apply(index)
        if execution.description() != label:
            continue
        completion = execution.completionTime()
        found.append({
            "id": int(execution.executionId()),
            "submitted_ms": int(execution.submissionTime()),
            "completed_ms": int(completion.get().getTime()) if completion.isDefined() else None,
        })
    return sorted(found, key=lambda e: e["id"])


def _settled(spark: SparkSession, label: str, timeout: float = 30.0) -> List[dict]:
    """The label's executions once each shows its end (Spark's listener records it on a thread
    of its own, a moment after the action returns)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        found = executions(spark, label)
        if found and all(e["completed_ms"] is not None for e in found):
            return found
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for the end of {label!r}: {found}")
        time.sleep(0.2)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--truth-out", type=Path, help="where to write the JVM truth (JSON)")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # see driver_job.py
    spark = SparkSession.builder.appName("aqe-sequential-queries").getOrCreate()
    log = spark._jvm.org.apache.logging.log4j.LogManager.getLogger(LOGGER)
    print(f"Spark {spark.version}: {len(QUERIES)} queries one after another over the same "
          "DataFrames")
    t = tables(spark)
    problems: List[str] = []
    queries: List[dict] = []
    for number, (name, description, build, confs, check) in enumerate(QUERIES, 1):
        label = LABEL.format(number=number, name=name)
        settings = {**COMMON_CONFS, **confs}
        scenario = Scenario(name=name, description=description,
                            build=lambda spark_, _dir, b=build: b(t), confs=confs)
        with _ScenarioConfs(spark, settings):
            spark.sparkContext.setJobDescription(label)
            log.info(f"query {number} of {len(QUERIES)} ({name}) starts")
            df = build(t)
            print(f"Query {number}: {description}")
            print("Plan before running the query:")
            df.explain()
            rows = df.collect()
            print(f"rows: {len(rows)}")
            print("Plan after running the query:")
            df.explain()
            df.explain("formatted")
            found = _settled(spark, label)
            log.info(f"query {number} of {len(QUERIES)} ({name}) ends "
                     f"(execution ids {[e['id'] for e in found]})")
            spark.sparkContext.setJobDescription(None)
            truth = read_truth(df, scenario, spark, settings)
            truth["initial_joins"] = initial_joins(df, spark)
        queries.append({
            "number": number, "name": name, "description": description, "label": label,
            "confs": settings, "rows": len(rows), "executions": found,
            "rewrites": truth["rewrites"], "initial_joins": truth["initial_joins"],
            "joins": truth["joins"], "join_switches": truth["join_switches"],
            "stages": truth["stages"], "adaptive_plans": len(truth["adaptive_plans"]),
        })
        problem = check(truth)
        if problem:
            problems.append(f"query {number} ({name}): {problem}")
    # Strictly one after another: each query's executions end before the next one's start.
    spans = [(min(e["submitted_ms"] for e in q["executions"]),
              max(e["completed_ms"] for e in q["executions"])) for q in queries]
    for (_, end), (start, _) in zip(spans, spans[1:]):
        if start < end:
            problems.append(f"queries overlap: one ends at {end}, the next starts at {start}")
    result = {"schema": SCHEMA, "spark_version": spark.version, "scenario": NAME,
              "description": __doc__.split("\n\n")[0].replace("\n", " "),
              "queries": queries}
    spark.stop()
    if problems:
        print("TRUTH MISMATCH: " + "; ".join(problems), file=sys.stderr)
        return 1
    if args.truth_out is not None:
        args.truth_out.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    print(f"done: {', '.join(q['name'] for q in queries)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
