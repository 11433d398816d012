"""Run one multi-query Spark application under several configurations, for `compare`.

The same application (several sample scenarios from ``generate.py``, one SQL execution
each, every action under the job description ``aqe-compare:<scenario>``) runs once per
*run* below, and writes a real Spark event log (zstd, as Spark compresses it) and the JVM
truth of every labelled execution (``generate.read_truth``: counts read from the plan
objects, never from plan text)::

    baseline      the scenarios' own confs
    rerun         the same again: a comparison with ``baseline`` must find nothing
    bhj_off       spark.sql.adaptive.autoBroadcastJoinThreshold=-1 (runtime broadcasts off)
    skew_off      spark.sql.adaptive.skewJoin.enabled=false
    coalesce_off  spark.sql.adaptive.coalescePartitions.enabled=false
    broadcast_more spark.sql.adaptive.autoBroadcastJoinThreshold=10MB: AQE broadcasts the
                  joins the scenarios keep as sort-merge (a skewed one) or shuffled hash joins

A run's override is set on the session over each scenario's confs, so the execution's
``modifiedConfigs`` (Spark 3.4+) records it. Output, per Spark line::

    <out>/compare/spark-<version>/<run>.zstd    the event log, byte for byte as Spark wrote it
    <out>/compare/spark-<version>/runs.json     every run's executions and their JVM truth

(a folder of its own, not a scenario folder `spark-<version>/<scenario>/`: the runs hold
several scenarios each).

Usage (each Spark line from an environment holding that PySpark; Java 17)::

    /tmp/spark35/bin/python sample_plans/compare_runs.py --out sample_plans
    /tmp/spark43/bin/python sample_plans/compare_runs.py --out sample_plans

The orchestrating side imports only the standard library; each run is a child process of
the same interpreter (``--run NAME``), so every run is a fresh application with its own log.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRUTH_SCHEMA = "aqe-inspect/compare-truth/v1"
LABEL_PREFIX = "aqe-compare:"

#: The scenarios the application runs, in order: one SQL execution each.
SCENARIO_NAMES = (
    "coalesced_aggregation",
    "skew_join",
    "smj_to_bhj",
    "multi_rewrite",
    "local_read",
    "empty_relation",
    "smj_to_shj",
    "window",
)

#: Each run's settings over the scenarios' own.
RUNS = {
    "baseline": {},
    "rerun": {},
    "bhj_off": {"spark.sql.adaptive.autoBroadcastJoinThreshold": "-1"},
    "skew_off": {"spark.sql.adaptive.skewJoin.enabled": "false"},
    "coalesce_off": {"spark.sql.adaptive.coalescePartitions.enabled": "false"},
    "broadcast_more": {"spark.sql.adaptive.autoBroadcastJoinThreshold": "10MB"},
}


def run_application(run: str, log_dir: Path, result: Path) -> None:
    """The application itself (in a child process): every scenario under the run's
    overrides, the truth of each labelled execution written to `result`."""
    sys.path.insert(0, str(HERE))
    from pyspark.sql import SparkSession

    from generate import REWRITE_KEYS, INFO_KEYS, _ScenarioConfs, read_truth, scenario_named

    overrides = RUNS[run]
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("aqe-compare-sample")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", log_dir.as_uri())
        .config("spark.eventLog.compress", "true")
        .config("spark.eventLog.compression.codec", "zstd")
        .config("spark.eventLog.rolling.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    executions = []
    with tempfile.TemporaryDirectory(prefix="aqe-compare-data-") as data_dir:
        for name in SCENARIO_NAMES:
            scenario = scenario_named(name)
            confs = {**scenario.all_confs(), **overrides}
            label = LABEL_PREFIX + name
            with _ScenarioConfs(spark, confs):
                df = scenario.build(spark, Path(data_dir))
                spark.sparkContext.setJobDescription(label)
                df.collect()
                spark.sparkContext.setJobDescription(None)
                truth = read_truth(df, scenario, spark, confs)
            executions.append({
                "description": label,
                "scenario": name,
                "confs": confs,
                "adaptive": truth["adaptive"],
                "rewrites": {key: truth["rewrites"][key] for key in REWRITE_KEYS},
                "info": {key: truth["info"][key] for key in INFO_KEYS},
                "joins": sorted(join["operator"] for join in truth["joins"]),
            })
    answer = {"run": run, "overrides": overrides, "spark_version": spark.version,
              "app_id": spark.sparkContext.applicationId, "executions": executions}
    spark.stop()
    result.write_text(json.dumps(answer, indent=2) + "\n", encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="root folder: compare/spark-<version>/ in it")
    parser.add_argument("--runs", nargs="+", choices=sorted(RUNS), default=list(RUNS))
    parser.add_argument("--run", choices=sorted(RUNS), help=argparse.SUPPRESS)
    parser.add_argument("--log-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run:  # the child: one application
        run_application(args.run, args.log_dir, args.result)
        return 0
    if args.out is None:
        parser.error("--out is required")
    runs = []
    with tempfile.TemporaryDirectory(prefix="aqe-compare-runs-") as scratch:
        for run in args.runs:
            log_dir = Path(scratch) / run
            log_dir.mkdir()
            result = Path(scratch) / f"{run}.json"
            subprocess.run([sys.executable, __file__, "--run", run, "--log-dir", str(log_dir),
                            "--result", str(result)], check=True)
            answer = json.loads(result.read_text(encoding="utf-8"))
            logs = [p for p in log_dir.iterdir() if not p.name.startswith(".")]
            if len(logs) != 1:
                raise SystemExit(f"{run}: expected one event log, found {logs}")
            target = args.out / "compare" / f"spark-{answer['spark_version']}"
            target.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(logs[0], target / f"{run}.zstd")
            answer["event_log"] = f"{run}.zstd"
            answer["spark_file_name"] = logs[0].name
            runs.append(answer)
            print(f"{answer['spark_version']} {run}: {len(answer['executions'])} executions",
                  flush=True)
    truth_path = target / "runs.json"
    previous = json.loads(truth_path.read_text(encoding="utf-8")) if truth_path.exists() else {}
    kept = {r["run"]: r for r in previous.get("runs", ()) if r["run"] not in args.runs}
    merged = sorted([*kept.values(), *runs], key=lambda r: list(RUNS).index(r["run"]))
    truth_path.write_text(json.dumps({
        "schema": TRUTH_SCHEMA,
        "about": "One application (sample scenarios, one labelled SQL execution each) run "
                 "under several configurations; the rewrites of each execution read from the "
                 "JVM plan objects. See sample_plans/compare_runs.py.",
        "spark_version": runs[0]["spark_version"],
        "runs": merged,
    }, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
