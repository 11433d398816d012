"""Run one sample scenario the way a user's Spark job does, for its driver log.

Meant to be started by ``spark-submit`` (see ``driver_logs.py`` and README.md,
"Driver logs")::

    spark-submit --master 'local[2]' ... sample_plans/driver_job.py --scenario NAME [--truth PATH]

The query and its confs come from ``generate.py`` in this directory (a tuned
scenario's measured confs from its committed truth.json: ``generate.job_confs``),
so the job is exactly that scenario.  The job prints ``df.explain()`` and
``df.explain("formatted")`` before ``df.collect()`` and again after it, with a
little ordinary program output around them.  Spark itself logs to stderr.

It then reads the JVM truth with ``generate.read_truth`` and compares its
``rewrites`` with the committed ``spark-<version>/<scenario>/truth.json`` (or
``--truth``); on a mismatch it exits with status 1, so a log that describes
other rewrites than truth.json is never kept by mistake.

Depends on the standard library and pyspark only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from pyspark.sql import SparkSession  # noqa: E402

from generate import (  # noqa: E402
    REWRITE_KEYS,
    _ScenarioConfs,
    job_confs,
    read_truth,
    scenario_named,
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", required=True, help="a name from generate.SCENARIOS")
    parser.add_argument(
        "--truth",
        type=Path,
        help="truth.json to compare with (default: spark-<version>/<scenario>/truth.json next to this file)",
    )
    args = parser.parse_args(argv)
    scenario = scenario_named(args.scenario)

    # Python's stdout is a pipe into spark-submit, so it would be block-buffered
    # and the explain output would land after Spark's log lines instead of
    # between them.  Flushing per line keeps the merged log in order.
    sys.stdout.reconfigure(line_buffering=True)

    spark = SparkSession.builder.appName(f"aqe-driver-log-{scenario.name}").getOrCreate()
    truth_path = args.truth or HERE / f"spark-{spark.version}" / scenario.name / "truth.json"
    print(f"Spark {spark.version}, scenario {scenario.name}: {scenario.description}")

    with truth_path.open(encoding="utf-8") as handle:
        committed = json.load(handle)
    confs = job_confs(scenario, committed)

    with tempfile.TemporaryDirectory(prefix="aqe-sample-data-") as data_dir:
        with _ScenarioConfs(spark, confs):
            df = scenario.build(spark, Path(data_dir))
            print("Plan before running the query:")
            df.explain()
            df.explain("formatted")
            rows = df.collect()
            print(f"rows: {len(rows)}")
            if rows:
                print(f"first row: {rows[0]}")
            print("Plan after running the query:")
            df.explain()
            df.explain("formatted")
            truth = read_truth(df, scenario, spark, confs)
        spark.catalog.clearCache()

    expected = committed["rewrites"]
    observed = {key: truth["rewrites"][key] for key in REWRITE_KEYS}
    spark.stop()
    if observed != expected:
        print(
            f"TRUTH MISMATCH for {scenario.name}: this run {observed}, "
            f"{truth_path} {expected}",
            file=sys.stderr,
        )
        return 1
    print(f"done: rewrites {observed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
