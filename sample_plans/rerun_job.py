"""Run one query several times in one application, under a positive scenario's settings and
its negative control's, for a driver log where the same query is printed once per run.

Meant to be started by ``spark-submit`` (``driver_logs.py --reruns``)::

    spark-submit --master 'local[2]' ... sample_plans/rerun_job.py --control NAME

``NAME`` is a negative control whose ``twin`` (the positive scenario) builds the same query.
The job builds the query once, then runs it three times, each time as a new DataFrame over
the same plan (``df.select("*")``: the same expression ids, new physical operators, so new
plan ids), under the twin's settings, the control's, and the twin's again: the log holds
both orders (positive then control, control then positive). Each run prints ``df.explain()``
before its action and ``df.explain()`` and ``df.explain("formatted")`` after it; AQE logs
its own ``Final plan:`` (spark.sql.adaptive.logLevel=INFO).

Each run's rewrites are read from the JVM plan objects (``generate.read_truth``) and held
against the committed truth.json of the scenario whose settings it ran with; on a mismatch
the job exits with status 1. Depends on the standard library and pyspark only.
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

from generate import REWRITE_KEYS, _ScenarioConfs, job_confs, read_truth, scenario_named  # noqa: E402


def run_order(control_name: str) -> list:
    """The scenarios the runs take their settings from, in order."""
    control = scenario_named(control_name)
    if control.control is None or not control.control.twin:
        raise SystemExit(f"{control_name} is not a negative control with a twin")
    twin = scenario_named(control.control.twin)
    if twin.build is not control.build:
        raise SystemExit(f"{control_name} and {twin.name} build different queries")
    return [twin, control, twin]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--control", required=True, help="a negative control with a twin")
    args = parser.parse_args(argv)
    runs = run_order(args.control)
    sys.stdout.reconfigure(line_buffering=True)  # see driver_job.py
    spark = SparkSession.builder.appName(f"aqe-rerun-{args.control}").getOrCreate()
    line = HERE / f"spark-{spark.version}"
    mismatches = []
    with tempfile.TemporaryDirectory(prefix="aqe-sample-data-") as data_dir:
        base = None
        for number, scenario in enumerate(runs, 1):
            committed = json.loads((line / scenario.name / "truth.json").read_text("utf-8"))
            confs = job_confs(scenario, committed)
            with _ScenarioConfs(spark, confs):
                if base is None:
                    base = scenario.build(spark, Path(data_dir))
                df = base.select("*")
                print(f"Run {number} of the query, with the settings of {scenario.name}")
                print("Plan before running the query:")
                df.explain()
                rows = df.collect()
                print(f"rows: {len(rows)}")
                print("Plan after running the query:")
                df.explain()
                df.explain("formatted")
                truth = read_truth(df, scenario, spark, confs)
            observed = {key: truth["rewrites"][key] for key in REWRITE_KEYS}
            expected = committed["rewrites"]
            if observed != expected:
                mismatches.append(f"run {number} ({scenario.name}): {observed} != {expected}")
        spark.catalog.clearCache()
    spark.stop()
    if mismatches:
        print("TRUTH MISMATCH: " + "; ".join(mismatches), file=sys.stderr)
        return 1
    print("done: " + ", ".join(s.name for s in runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
