"""Run one sample scenario as a Spark application that writes an event log.

Meant to be started by ``spark-submit`` with ``spark.eventLog.enabled=true``
(see ``event_logs.py`` and README.md, "Event logs")::

    spark-submit --master 'local[2]' --conf spark.eventLog.enabled=true \\
        --conf spark.eventLog.dir=file:///tmp/x ... \\
        sample_plans/event_log_job.py --scenario NAME --result result.json [--mode ...]

The query and its confs come from ``generate.py`` in this directory (a tuned
scenario's confs, thresholds measured by the generator, from its committed
truth.json: ``generate.job_confs``).  The
scenario's action (``df.collect()``) runs with the job description
``aqe-sample:<scenario>``, which Spark records as that SQL execution's
``description``; setup work (parquet writes, fillers) runs without it.

After the action the job reads the JVM truth with ``generate.read_truth`` and
compares its ``rewrites`` with the committed
``spark-<version>/<scenario>/truth.json``; on a mismatch it exits with
status 1, so a log whose plans show other rewrites than truth.json is never
kept.  It writes what the caller needs to ``--result`` (JSON): the
application id, the labelled execution's id, the truth comparison, the
effective ``spark.sql.ui.explainMode`` and ``spark.sql.maxPlanStringLength``.

Modes (``--mode``):

- ``normal``: stop the session; Spark closes the log.
- ``rolling``: after the action, run small filler queries until Spark has
  rolled the log into a second ``events_N`` file (needs
  ``spark.eventLog.rolling.enabled=true``), then stop.
- ``inprogress``: after the action, wait until the log holds the labelled
  execution's ``SparkListenerSQLExecutionEnd``, start a longer query in the
  background, and kill the driver JVM with SIGKILL while it runs, so Spark
  leaves ``<appid>.inprogress`` behind.  Needs an uncompressed, single-file log.

``--history PATH``: with the UI on, fetch the live UI's
``/api/v1/applications/<appId>/sql?details=true&planDescription=true`` (the
REST API the History Server serves too) once the execution is complete, and
write the response unchanged to PATH.

Depends on the standard library and pyspark only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from generate import (  # noqa: E402
    REWRITE_KEYS,
    _ScenarioConfs,
    job_confs,
    read_truth,
    scenario_named,
)

LABEL_PREFIX = "aqe-sample:"
EXECUTION_END = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd"
WAIT_SECONDS = 60.0
MAX_FILLERS = 400


def label_for(scenario_name: str) -> str:
    """The job description the scenario's action runs under."""
    return LABEL_PREFIX + scenario_name


def _wait_for(what: str, probe, timeout: float = WAIT_SECONDS):
    """Call ``probe`` until it returns something other than None."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {what} after {timeout:.0f}s")
        time.sleep(0.2)


def _labelled_executions(spark: SparkSession, label: str) -> list:
    """Completed SQL executions with ``label`` as description, from Spark's own
    SQL status store (fed by a listener whether or not the UI is on)."""
    store = spark._jsparkSession.sharedState().statusStore()
    executions = store.executionsList()
    found = []
    for index in range(executions.size()):
        execution = executions.apply(index)
        if execution.description() == label and execution.completionTime().isDefined():
            found.append(int(execution.executionId()))
    return found


def _labelled_execution_id(spark: SparkSession, label: str) -> int:
    ids = _wait_for(
        f"the completed execution {label!r}",
        lambda: _labelled_executions(spark, label) or None,
    )
    if len(ids) != 1:
        raise SystemExit(f"expected one execution described {label!r}, found {ids}")
    return ids[0]


def _event_log_conf(spark: SparkSession) -> dict:
    conf = spark.sparkContext.getConf()
    return {
        "dir": conf.get("spark.eventLog.dir", ""),
        "rolling": conf.get("spark.eventLog.rolling.enabled", "false") == "true",
        "compress": conf.get("spark.eventLog.compress", "false") == "true",
    }


def _local_dir(uri: str) -> Path:
    return Path(urlsplit(uri).path if uri.startswith("file:") else uri)


def _logged_execution_end(log_path: Path, execution_id: int):
    """True once the plain log holds the execution's end event, else None."""
    if not log_path.exists():
        return None
    with log_path.open("rb") as handle:
        for line in handle:
            if EXECUTION_END.encode() not in line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line Spark has not finished flushing
            if event.get("executionId") == execution_id:
                return True
    return None


def _filler(spark: SparkSession, index: int) -> None:
    """A small, ordinary aggregation with many map tasks."""
    (
        spark.range(0, 20_000, 1, 100)
        .groupBy((F.col("id") % (index % 13 + 2)).alias("k"))
        .agg(F.sum("id").alias("s"))
        .collect()
    )


def _roll_until_two_files(spark: SparkSession, app_id: str, log_dir: Path) -> int:
    """Run fillers until Spark has started ``events_2_*``; return how many ran."""
    app_dir = log_dir / f"eventlog_v2_{app_id}"
    for count in range(1, MAX_FILLERS + 1):
        _filler(spark, count)
        if any(p.name.startswith("events_2_") for p in app_dir.iterdir()):
            # one more, so the second file holds some ordinary events too
            _filler(spark, count + 1)
            return count + 1
    return MAX_FILLERS


def _fetch_history_sql(spark: SparkSession, app_id: str, execution_id: int, path: Path) -> str:
    """Write the live UI's SQL REST answer for the whole application to ``path``."""
    port = urlsplit(spark.sparkContext.uiWebUrl).port
    base = f"http://localhost:{port}/api/v1/applications/{app_id}/sql"

    def completed():
        with urllib.request.urlopen(f"{base}/{execution_id}", timeout=60) as response:
            status = json.load(response).get("status")
        return True if status == "COMPLETED" else None

    _wait_for(f"execution {execution_id} COMPLETED in the UI", completed)
    url = f"{base}?details=true&planDescription=true"
    with urllib.request.urlopen(url, timeout=120) as response:
        path.write_bytes(response.read())
    return url


def _kill_driver_mid_run(spark: SparkSession, app_id: str, log_dir: Path, execution_id: int):
    """Start a longer query in the background and SIGKILL the driver JVM while it runs."""
    log_path = log_dir / f"{app_id}.inprogress"
    _wait_for(
        f"SQLExecutionEnd of {execution_id} in {log_path}",
        lambda: _logged_execution_end(log_path, execution_id),
    )
    spark.sparkContext.setJobDescription(None)
    background = threading.Thread(
        target=lambda: spark.range(0, 400_000_000, 1, 4)
        .selectExpr("max(sha2(cast(id AS string), 256))")
        .collect(),
        daemon=True,
    )
    background.start()
    time.sleep(4.0)
    return int(spark._jvm.java.lang.ProcessHandle.current().pid())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", required=True, help="a name from generate.SCENARIOS")
    parser.add_argument("--result", required=True, type=Path, help="where to write the run's facts (JSON)")
    parser.add_argument("--mode", choices=("normal", "rolling", "inprogress"), default="normal")
    parser.add_argument("--history", type=Path, help="write the live UI's /sql JSON here (needs the UI on)")
    parser.add_argument(
        "--truth",
        type=Path,
        help="truth.json to compare with (default: spark-<version>/<scenario>/truth.json next to this file)",
    )
    args = parser.parse_args(argv)
    scenario = scenario_named(args.scenario)
    label = label_for(scenario.name)

    spark = SparkSession.builder.appName(f"aqe-sample-{scenario.name}").getOrCreate()
    sc = spark.sparkContext
    app_id = sc.applicationId
    truth_path = args.truth or HERE / f"spark-{spark.version}" / scenario.name / "truth.json"
    log_conf = _event_log_conf(spark)
    log_dir = _local_dir(log_conf["dir"])

    with truth_path.open(encoding="utf-8") as handle:
        committed = json.load(handle)
    expected = committed["rewrites"]
    confs = job_confs(scenario, committed)

    with tempfile.TemporaryDirectory(prefix="aqe-sample-data-") as data_dir:
        with _ScenarioConfs(spark, confs):
            df = scenario.build(spark, Path(data_dir))
            sc.setJobDescription(label)
            rows = df.collect()
            sc.setJobDescription(None)
            truth = read_truth(df, scenario, spark, confs)
        spark.catalog.clearCache()

    observed = {key: truth["rewrites"][key] for key in REWRITE_KEYS}
    result = {
        "spark_version": spark.version,
        "scenario": scenario.name,
        "app_id": app_id,
        "app_name": sc.appName,
        "description": label,
        "rows": len(rows),
        "rewrites": observed,
        "truth": str(truth_path),
        "truth_rewrites": expected,
        "truth_matches": observed == expected,
        "explain_mode": spark.conf.get("spark.sql.ui.explainMode"),
        "max_plan_string_length": spark.conf.get("spark.sql.maxPlanStringLength"),
    }
    if observed != expected:
        args.result.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"TRUTH MISMATCH for {scenario.name}: this run {observed}, {truth_path} {expected}",
              file=sys.stderr)
        spark.stop()
        return 1

    result["execution_id"] = _labelled_execution_id(spark, label)
    if args.history:
        result["history_url"] = _fetch_history_sql(spark, app_id, result["execution_id"], args.history)
    if args.mode == "rolling":
        result["filler_queries"] = _roll_until_two_files(spark, app_id, log_dir)
    if args.mode == "inprogress":
        jvm_pid = _kill_driver_mid_run(spark, app_id, log_dir, result["execution_id"])
        result["killed_jvm_pid"] = jvm_pid
        args.result.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        sys.stdout.flush()
        os.kill(jvm_pid, signal.SIGKILL)
        os._exit(0)

    spark.stop()
    args.result.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
