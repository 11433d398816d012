"""Capture real Spark driver logs for the sample scenarios.

Runs ``spark-submit driver_job.py --scenario NAME`` once per scenario, with
Spark's log4j2 at INFO and AQE's plan-change logging at INFO, and writes what
the command prints (stdout and stderr merged, unedited) to
``<out>/spark-<version>/<scenario>/driver.log``; with ``--json`` also
``driver_json.log`` from a second run with Spark 4 structured (JSON) logging.

Usage::

    python sample_plans/driver_logs.py --spark-submit /tmp/spark35/bin/spark-submit --out sample_plans
    python sample_plans/driver_logs.py --spark-submit /tmp/spark43/bin/spark-submit --out sample_plans --json
    # a few scenarios only:
    python sample_plans/driver_logs.py --spark-submit ... --out sample_plans --only skew_join window
    # one query run three times in one application (rerun_job.py), per negative control:
    python sample_plans/driver_logs.py --spark-submit ... --out sample_plans --reruns
    # four queries one after another over the same DataFrames, plan-change log on
    # (sequential_job.py): spark-<version>/sequential_queries/sequential_planchange.log and
    # queries.json
    python sample_plans/driver_logs.py --spark-submit ... --out sample_plans --sequential

Standard library only; the Spark side is ``driver_job.py``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DRIVER_JOB = HERE / "driver_job.py"
RERUN_JOB = HERE / "rerun_job.py"
SEQUENTIAL_JOB = HERE / "sequential_job.py"
#: The folder, the log and the truth file of sequential_job.py (the log is no scenario's
#: driver_planchange.log: it holds four queries, and its truth is queries.json).
SEQUENTIAL = "sequential_queries"
SEQUENTIAL_LOG = "sequential_planchange.log"
SEQUENTIAL_TRUTH = "queries.json"
LOG4J2_PLAIN = HERE / "log4j2-info.properties"
LOG4J2_JSON = HERE / "log4j2-json-info.properties"

# Settings every run shares, given to spark-submit as a user would.
SUBMIT_CONFS = {
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.adaptive.logLevel": "INFO",
}
JSON_CONFS = {"spark.log.structuredLogging.enabled": "true"}

# (file name, log4j2 file, extra confs) per variant.
VARIANTS = {
    "plain": ("driver.log", LOG4J2_PLAIN, {}),
    "json": ("driver_json.log", LOG4J2_JSON, JSON_CONFS),
    # Every rule that changed a plan, logged side by side (`=== Applying Rule ... ===`).
    "planchange": ("driver_planchange.log", LOG4J2_PLAIN,
                   {"spark.sql.planChangeLog.level": "INFO"}),
}

LARGE_LOG_BYTES = 1_500_000


def scenario_names(python: str) -> list[str]:
    """Scenario names in generate.py's order, listed by the job's Python."""
    listing = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "from generate import SCENARIOS; print(' '.join(s.name for s in SCENARIOS))"
    )
    return subprocess.run(
        [python, "-c", listing, str(HERE)], check=True, capture_output=True, text=True
    ).stdout.split()


def rerun_controls(python: str) -> list[str]:
    """The negative controls whose twin builds the same query (rerun_job.py runs them)."""
    listing = (
        "import sys; sys.path.insert(0, sys.argv[1]); from generate import SCENARIOS, "
        "scenario_named as n; print(' '.join(s.name for s in SCENARIOS if s.control and "
        "s.control.twin and n(s.control.twin).build is s.build))"
    )
    return subprocess.run(
        [python, "-c", listing, str(HERE)], check=True, capture_output=True, text=True
    ).stdout.split()


def pyspark_version(python: str) -> str:
    return subprocess.run(
        [python, "-c", "import pyspark; print(pyspark.__version__)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def submit_command(spark_submit: str, scenario: str, variant: str,
                   rerun: bool = False, truth_out: Path | None = None) -> list[str]:
    _, log4j2, extra = VARIANTS[variant]
    command = [spark_submit, "--master", "local[2]"]
    for key, value in {**SUBMIT_CONFS, **extra}.items():
        command += ["--conf", f"{key}={value}"]
    command += ["--driver-java-options", f"-Dlog4j2.configurationFile={log4j2}"]
    if scenario == SEQUENTIAL:
        command += [str(SEQUENTIAL_JOB), "--truth-out", str(truth_out)]
    elif rerun:
        command += [str(RERUN_JOB), "--control", scenario]
    else:
        command += [str(DRIVER_JOB), "--scenario", scenario]
    return command


def partial_path(log_path: Path) -> Path:
    """Where a run writes before its log is known good: a dot-file beside the log, which is
    no sample input."""
    return log_path.with_name(f".{log_path.name}.partial")


def run_one(
    spark_submit: str, python: str, scenario: str, variant: str, log_path: Path, timeout: float,
    rerun: bool = False,
) -> int:
    """Run one spark-submit with its output going straight into ``log_path``.

    The output goes to ``.<name>.partial`` beside it first and replaces ``log_path``
    only when the job exits 0, so a failed run leaves a committed log as it was
    (and its own output beside it).  The working directory is a fresh temporary
    one, so Spark's default warehouse and any stray files stay out of the
    repository.
    """
    env = {**os.environ, "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python}
    log_path.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(log_path)
    # sequential_job.py's truth, written by the job; kept beside the log with it.
    truth = partial.with_name(f".{SEQUENTIAL_TRUTH}.partial").resolve()
    with tempfile.TemporaryDirectory(prefix="aqe-driver-log-") as cwd, partial.open("wb") as log:
        try:
            code = subprocess.run(
                submit_command(spark_submit, scenario, variant, rerun, truth),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=cwd,
                env=env,
                timeout=timeout,
            ).returncode
        except subprocess.TimeoutExpired:
            code = -1
    if code == 0:
        if scenario == SEQUENTIAL:
            os.replace(truth, log_path.with_name(SEQUENTIAL_TRUTH))
        os.replace(partial, log_path)
    return code


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spark-submit", required=True, help="spark-submit of the PySpark to use")
    parser.add_argument(
        "--python",
        help="Python that runs the job (default: the python next to spark-submit)",
    )
    parser.add_argument("--out", required=True, help="root directory; logs go to <out>/spark-<X.Y.Z>/<scenario>/")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these scenarios")
    parser.add_argument("--json", action="store_true", help="also write driver_json.log (Spark 4+)")
    parser.add_argument("--no-plain", action="store_true", help="skip driver.log")
    parser.add_argument("--planchange", action="store_true",
                        help="also write driver_planchange.log (spark.sql.planChangeLog.level)")
    parser.add_argument("--reruns", action="store_true",
                        help="instead: reruns/<control>.log per negative control (rerun_job.py)")
    parser.add_argument("--sequential", action="store_true",
                        help=f"instead: {SEQUENTIAL}/{SEQUENTIAL_LOG} and "
                             f"{SEQUENTIAL_TRUTH} (sequential_job.py)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per spark-submit")
    args = parser.parse_args(argv)

    if os.sep in args.spark_submit:  # a path: the jobs run from a temporary directory
        args.spark_submit = str(Path(args.spark_submit).resolve())
    python = args.python or str(Path(args.spark_submit).with_name("python"))
    version = pyspark_version(python)
    if args.json and int(version.split(".")[0]) < 4:
        parser.error(f"--json needs Spark 4+ structured logging; this is {version}")
    names = scenario_names(python)
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            parser.error(f"unknown scenarios: {', '.join(unknown)}")
        names = [name for name in names if name in args.only]
    variants = ([] if args.no_plain else ["plain"]) + (["json"] if args.json else []) + (
        ["planchange"] if args.planchange else [])

    if args.reruns:
        controls = rerun_controls(python)
        names = [name for name in controls if not args.only or name in args.only]
        variants = ["plain"]

    if args.sequential:
        names, variants = [SEQUENTIAL], ["planchange"]

    failures = []
    total = 0
    for name in names:
        for variant in variants:
            if args.reruns:
                log_path = Path(args.out) / f"spark-{version}" / "reruns" / f"{name}.log"
            elif args.sequential:
                log_path = Path(args.out) / f"spark-{version}" / SEQUENTIAL / SEQUENTIAL_LOG
            else:
                log_path = Path(args.out) / f"spark-{version}" / name / VARIANTS[variant][0]
            started = time.monotonic()
            code = run_one(args.spark_submit, python, name, variant, log_path, args.timeout,
                           args.reruns)
            written = log_path if code == 0 else partial_path(log_path)
            size = written.stat().st_size
            total += size
            note = " LARGE" if size > LARGE_LOG_BYTES else ""
            print(
                f"{name} {variant}: exit {code}, {time.monotonic() - started:.1f}s, "
                f"{size} bytes{note} -> {written}",
                file=sys.stderr,
                flush=True,
            )
            if code != 0:
                failures.append(f"{name} {variant} (exit {code})")
    print(f"total {total / 1e6:.2f} MB", file=sys.stderr)
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
