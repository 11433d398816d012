"""A small PySpark job whose Adaptive Query Execution rewrites a CI step can check.

It runs three queries on generated data in ``local[2]`` (a few seconds on Spark 3.3 to 4.x),
with Spark's event log on, each under its own SQL execution description, which
``aqe-expect.toml`` beside this file matches::

    python examples/ci/aqe_job.py spark-events
    aqe-inspect check spark-events --config examples/ci/aqe-expect.toml

The event log goes to the directory given as the argument, else ``$AQE_EVENT_LOG_DIR``, else
``./spark-events``; it is created when missing. The queries, and what AQE does to them:

- ``ci-example: store totals``: 10,000 sales grouped into 7 stores over 20 shuffle partitions.
  AQE coalesces the mostly empty partitions (``coalesced``).
- ``ci-example: promoted orders``: orders joined to the products on promotion, a filter the
  planner cannot size, so the join is planned as a sort-merge join (the static broadcast
  threshold is off). At run time the promoted side is a few hundred bytes, under
  ``spark.sql.adaptive.autoBroadcastJoinThreshold``, and AQE broadcasts it (``smj-to-bhj``,
  with ``local-read`` of the shuffles already written); the totals by category after it are
  ``coalesced``.
- ``ci-example: clicks per page``: clicks joined to pages where page 0 holds 90% of the
  clicks. AQE splits the skewed partition (``skew-join``) and never broadcasts (its broadcast
  threshold is off for this query).

Depends on PySpark only.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

DEFAULT_LOG_DIR = "spark-events"
LOG_DIR_VARIABLE = "AQE_EVENT_LOG_DIR"
DESCRIPTION_PREFIX = "ci-example: "

# Every query starts from these: AQE on, few shuffle partitions for a local run, and the
# static broadcast threshold off, so every join is planned as a sort-merge join and any
# broadcast in a final plan is AQE's own run-time decision.
SESSION_CONFS = {
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.shuffle.partitions": "20",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}

# Far above the promoted products (well under 1 KB at run time), far below the 20,000
# orders (hundreds of KB): AQE can only ever broadcast the side meant.
RUNTIME_BROADCAST_CONFS = {"spark.sql.adaptive.autoBroadcastJoinThreshold": "64KB"}

# Thresholds scaled down to the job's kilobytes (Spark's defaults are 256 MB and 5x median).
SKEW_CONFS = {
    "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1",
    "spark.sql.adaptive.skewJoin.enabled": "true",
    "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": "1KB",
    "spark.sql.adaptive.skewJoin.skewedPartitionFactor": "2",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": "2KB",
}

# A fixed number of input splits, so every shuffle is the same whatever the cores.
SPLITS = 2


def rows(spark: SparkSession, count: int) -> DataFrame:
    return spark.range(0, count, 1, SPLITS)


def store_totals(spark: SparkSession) -> DataFrame:
    sales = rows(spark, 10_000).select(
        (F.col("id") % 7).alias("store"), (F.col("id") % 100).alias("amount")
    )
    return sales.groupBy("store").agg(F.count("*").alias("sales"), F.sum("amount").alias("total"))


def promoted_orders(spark: SparkSession) -> DataFrame:
    orders = rows(spark, 20_000).select(
        F.col("id").alias("order_id"), (F.col("id") % 500).alias("product")
    )
    # 2% of the products are on promotion: a filter whose selectivity only execution shows.
    promoted = (
        rows(spark, 20_000)
        .where(F.col("id") % 1000 < 20)
        .select((F.col("id") % 500).alias("product"), F.col("id").alias("promotion"))
    )
    joined = orders.join(promoted, "product")
    return joined.groupBy((F.col("product") % 7).alias("category")).agg(
        F.count("order_id").alias("orders"), F.sum("promotion").alias("promotions")
    )


def clicks_per_page(spark: SparkSession) -> DataFrame:
    # Page 0 receives 90% of the clicks: one shuffle partition dwarfs the others.
    clicks = rows(spark, 20_000).select(
        F.when(F.col("id") % 10 == 0, F.col("id") % 97).otherwise(0).alias("page"),
        F.col("id").alias("click"),
    )
    pages = rows(spark, 97).select(F.col("id").alias("page"), (F.col("id") * 2).alias("section"))
    return clicks.join(pages, "page").groupBy("section").agg(F.count("click").alias("clicks"))


QUERIES = (
    ("store totals", store_totals, {}),
    ("promoted orders", promoted_orders, RUNTIME_BROADCAST_CONFS),
    ("clicks per page", clicks_per_page, SKEW_CONFS),
)


@contextmanager
def query_settings(spark: SparkSession, description: str, confs: dict):
    """Run a block under a SQL execution description and session settings, then undo both.

    The job description (the ``spark.job.description`` local property) becomes the
    ``description`` of the SQL execution Spark logs, which ``match`` in aqe-expect.toml reads."""
    saved = {key: spark.conf.get(key, None) for key in confs}
    for key, value in confs.items():
        spark.conf.set(key, value)
    spark.sparkContext.setJobDescription(description)
    try:
        yield
    finally:
        spark.sparkContext.setJobDescription(None)
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def event_log_dir(argument: str | None) -> Path:
    """The event log directory (argument, environment, default), absolute and existing."""
    chosen = argument or os.environ.get(LOG_DIR_VARIABLE) or DEFAULT_LOG_DIR
    path = Path(chosen).expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_session(log_dir: Path) -> SparkSession:
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("aqe-ci-example")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", log_dir.as_uri())
    )
    for key, value in SESSION_CONFS.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "event_log_dir",
        nargs="?",
        help=f"where Spark writes the event log (default: ${LOG_DIR_VARIABLE}, "
        f"else ./{DEFAULT_LOG_DIR})",
    )
    args = parser.parse_args(argv)
    log_dir = event_log_dir(args.event_log_dir)
    spark = build_session(log_dir)
    spark.sparkContext.setLogLevel("WARN")
    try:
        for name, build, confs in QUERIES:
            description = DESCRIPTION_PREFIX + name
            with query_settings(spark, description, confs):
                result = build(spark).collect()
            print(f"{description}: {len(result)} rows")
        app_id = spark.sparkContext.applicationId
    finally:
        spark.stop()  # closes the event log (ends its .inprogress state)
    # Spark 3.x writes one file named after the application id; 4.x rolls it into an
    # eventlog_v2_<app-id> folder of zstd files. aqe-inspect reads either, or the directory.
    written = sorted(log_dir.glob(f"*{app_id}*"))
    print("event log:", ", ".join(str(path) for path in written) or f"none found in {log_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
