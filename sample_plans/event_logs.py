"""Write real Spark event logs (and History Server JSON) for the sample scenarios.

Runs ``spark-submit event_log_job.py --scenario NAME`` once per scenario and
variant with ``spark.eventLog.enabled=true`` into a temporary directory, and
copies what Spark wrote, byte for byte, into
``<out>/spark-<version>/<scenario>/``.  ``<out>/eventlogs.json`` lists every
committed log with what a reader needs to check it against ``truth.json``.

Variants (see ``VARIANTS``; README.md, "Event logs", says what each file is):

- ``plain``: every scenario, uncompressed, one file -> ``eventlog.json``;
  the UI is on and the live ``/sql`` REST answer goes to ``history_sql.json``.
- ``zstd``, ``lz4``, ``snappy``, ``lzf``: ``spark.eventLog.compress=true`` with
  that codec, for two scenarios each (one of the first six kinds, one of the kinds added
  later: rebalance-skew, a join kept by the cost evaluator) -> ``eventlog.<codec>``.
- ``rolling``: ``spark.eventLog.rolling.enabled=true`` (10m files, zstd), the
  scenario followed by filler queries until Spark rolls to a second file ->
  ``eventlog_v2_<appid>/`` as Spark named it.
- ``inprogress``: the driver is killed (SIGKILL) after the scenario's
  execution ended, while another query runs -> ``eventlog.inprogress``, and a
  copy cut in the middle of a later line -> ``eventlog_cut.inprogress``.
- ``maxplanstring``, ``explain-simple``, ``explain-extended``: plain logs with
  ``spark.sql.maxPlanStringLength=100`` or ``spark.sql.ui.explainMode``.

Usage::

    python sample_plans/event_logs.py --spark-submit /tmp/spark35/bin/spark-submit --out sample_plans
    python sample_plans/event_logs.py --spark-submit /tmp/spark43/bin/spark-submit --out sample_plans
    # some scenarios or variants only:
    python sample_plans/event_logs.py --spark-submit ... --out sample_plans --only skew_join --variants plain zstd

Standard library only; the Spark side is ``event_log_job.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
JOB = HERE / "event_log_job.py"
MANIFEST_NAME = "eventlogs.json"
MANIFEST_SCHEMA = "aqe-inspect/eventlogs/v1"
EXECUTION_START = b"org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"
ROLLING_BUDGET_BYTES = 3_000_000

# Settings every run shares, given to spark-submit as a user would.  The
# event-log settings are all explicit because Spark 4 changed the defaults of
# spark.eventLog.compress and spark.eventLog.rolling.enabled to true.
SUBMIT_CONFS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
    "spark.eventLog.enabled": "true",
    "spark.eventLog.compress": "false",
    "spark.eventLog.rolling.enabled": "false",
}
UI_OFF = {"spark.ui.enabled": "false"}


@dataclass(frozen=True)
class Variant:
    """One kind of event log: the confs it runs with and where it goes."""

    name: str
    layout: str  # single, rolling or inprogress
    scenarios: tuple  # empty: every scenario
    confs: dict = field(default_factory=dict)
    file_name: str = "eventlog.json"  # for single and inprogress layouts
    codec: str | None = None
    history: bool = False
    mode: str = "normal"  # event_log_job.py --mode


def _codec(codec: str, *scenarios: str) -> Variant:
    return Variant(
        codec, "single", scenarios,
        {"spark.eventLog.compress": "true", "spark.eventLog.compression.codec": codec},
        file_name=f"eventlog.{codec}", codec=codec,
    )


VARIANTS = {
    variant.name: variant
    for variant in (
        Variant("plain", "single", (), history=True),
        # each codec once on a kind of the first six and once on a kind issue 26 added
        _codec("zstd", "skew_join", "rebalance_skew_none"),
        _codec("lz4", "smj_to_bhj", "kept_by_cost"),
        _codec("snappy", "coalesced_aggregation", "rebalance_skew_none"),
        _codec("lzf", "empty_relation", "kept_by_cost"),
        Variant(
            "rolling", "rolling", ("multi_rewrite",),
            {
                "spark.eventLog.rolling.enabled": "true",
                "spark.eventLog.rolling.maxFileSize": "10m",
                "spark.eventLog.compress": "true",
                "spark.eventLog.compression.codec": "zstd",
            },
            codec="zstd", mode="rolling",
        ),
        Variant("inprogress", "inprogress", ("local_read",), file_name="eventlog.inprogress",
                mode="inprogress"),
        Variant("maxplanstring", "single", ("five_way_join",),
                {"spark.sql.maxPlanStringLength": "100"}, file_name="eventlog_maxplanstring.json"),
        Variant("explain-simple", "single", ("scalar_subquery",),
                {"spark.sql.ui.explainMode": "simple"}, file_name="eventlog_explain_simple.json"),
        Variant("explain-extended", "single", ("cached_table",),
                {"spark.sql.ui.explainMode": "extended"}, file_name="eventlog_explain_extended.json"),
    )
}
CUT_FILE_NAME = "eventlog_cut.inprogress"
HISTORY_FILE_NAME = "history_sql.json"


def _python_lines(python: str, code: str, *args: str) -> str:
    return subprocess.run(
        [python, "-c", code, *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def scenario_names(python: str) -> list[str]:
    """Scenario names in generate.py's order, listed by the job's Python."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from generate import SCENARIOS; print(' '.join(s.name for s in SCENARIOS))")
    return _python_lines(python, code, str(HERE)).split()


def pyspark_version(python: str) -> str:
    return _python_lines(python, "import pyspark; print(pyspark.__version__)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_confs(variant: Variant, event_dir: Path) -> dict:
    """Every conf one run is submitted with."""
    confs = {**SUBMIT_CONFS, "spark.eventLog.dir": event_dir.as_uri(), **variant.confs}
    if variant.history:
        confs.update({"spark.ui.enabled": "true", "spark.ui.port": str(_free_port())})
    else:
        confs.update(UI_OFF)
    return confs


def submit_command(spark_submit: str, scenario: str, variant: Variant, confs: dict,
                   result: Path, history: Path) -> list[str]:
    command = [spark_submit, "--master", "local[2]"]
    for key, value in confs.items():
        command += ["--conf", f"{key}={value}"]
    command += [str(JOB), "--scenario", scenario, "--result", str(result), "--mode", variant.mode]
    if variant.history:
        command += ["--history", str(history)]
    return command


@dataclass
class Outcome:
    scenario: str
    variant: str
    ok: bool
    seconds: float
    message: str
    entries: list = field(default_factory=list)


def _cut_mid_line(source: Path, target: Path, after_execution: int) -> dict:
    """Copy ``source`` up to the middle of a line that comes after the end of
    execution ``after_execution``: the next ``SparkListenerSQLExecutionStart``
    if there is one, else the last complete line.  Returns where it was cut."""
    data = source.read_bytes()
    end_marker = (b'"Event":"org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd",'
                  b'"executionId":%d,' % after_execution)
    end_at = data.find(end_marker)
    if end_at < 0:
        raise RuntimeError(f"{source}: no SQLExecutionEnd for execution {after_execution}")
    lines_from = data.index(b"\n", end_at) + 1
    starts = []
    offset = lines_from
    while True:
        newline = data.find(b"\n", offset)
        if newline < 0:
            break
        starts.append((offset, newline))
        offset = newline + 1
    if not starts:
        raise RuntimeError(f"{source}: no complete line after execution {after_execution} ended")
    chosen = next(((s, e) for s, e in starts if EXECUTION_START in data[s:e]), starts[-1])
    line_start, line_end = chosen
    cut_at = line_start + (line_end - line_start) // 2
    target.write_bytes(data[:cut_at])
    event = json.loads(data[line_start:line_end])["Event"]
    return {
        "cut_from": source.name,
        "cut_at_byte": cut_at,
        "cut_line": data[:line_start].count(b"\n") + 1,
        "cut_line_bytes": line_end - line_start,
        "cut_inside_event": event,
    }


def _entry(out_root: Path, path: Path, version: str, scenario: str, variant: Variant,
           layout: str, result: dict, confs: dict, spark_name: str) -> dict:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file())
        size = sum(p.stat().st_size for p in files)
    else:
        files, size = [], path.stat().st_size
    entry = {
        "path": path.relative_to(out_root).as_posix(),
        "spark_version": version,
        "scenario": scenario,
        "variant": variant.name,
        "codec": variant.codec,
        "layout": layout,
        "description": result["description"],
        "execution_id": result["execution_id"],
        "app_id": result["app_id"],
        "app_name": result["app_name"],
        "truth": f"spark-{version}/{scenario}/truth.json",
        "spark_file_name": spark_name,
        "size": size,
        "explain_mode": result["explain_mode"],
        "max_plan_string_length": result["max_plan_string_length"],
        "confs": {k: v for k, v in confs.items()
                  if k.startswith(("spark.eventLog.", "spark.sql.")) and k != "spark.eventLog.dir"},
    }
    if files:
        entry["files"] = [{"name": p.name, "size": p.stat().st_size} for p in files]
    if "filler_queries" in result:
        entry["filler_queries"] = result["filler_queries"]
    return entry


def _collect(variant: Variant, event_dir: Path, dest: Path, out_root: Path, version: str,
             scenario: str, result: dict, confs: dict, history: Path) -> list[dict]:
    """Copy what Spark wrote into ``dest`` and describe it for the manifest."""
    written = list(event_dir.iterdir())
    if len(written) != 1:
        raise RuntimeError(f"expected one log in {event_dir}, found {[p.name for p in written]}")
    spark_path = written[0]
    entries = []
    if variant.layout == "rolling":
        for old in dest.glob("eventlog_v2_*"):
            shutil.rmtree(old)
        target = dest / spark_path.name
        shutil.copytree(spark_path, target)
        events = [p for p in target.iterdir() if p.name.startswith("events_")]
        size = sum(p.stat().st_size for p in events)
        if len(events) < 2:
            print(f"note: {target} holds one events file", file=sys.stderr)
        if size > ROLLING_BUDGET_BYTES:
            print(f"note: {target} is {size} bytes, over the {ROLLING_BUDGET_BYTES} budget",
                  file=sys.stderr)
        entries.append(_entry(out_root, target, version, scenario, variant, "rolling", result,
                              confs, spark_path.name))
    else:
        target = dest / variant.file_name
        shutil.copyfile(spark_path, target)
        entries.append(_entry(out_root, target, version, scenario, variant, variant.layout,
                              result, confs, spark_path.name))
    if variant.layout == "inprogress":
        if not spark_path.name.endswith(".inprogress"):
            raise RuntimeError(f"{spark_path.name}: the killed application left no .inprogress log")
        cut = dest / CUT_FILE_NAME
        cut_facts = _cut_mid_line(target, cut, result["execution_id"])
        cut_entry = _entry(out_root, cut, version, scenario, variant, "inprogress-cut", result,
                           confs, spark_path.name)
        cut_entry.update(cut_facts)
        entries.append(cut_entry)
    if variant.history:
        history_target = dest / HISTORY_FILE_NAME
        shutil.copyfile(history, history_target)
        history_entry = _entry(out_root, history_target, version, scenario, variant,
                               "history-sql", result, confs, "")
        history_entry["history_url"] = result["history_url"]
        history_entry["event_log"] = entries[0]["path"]
        entries.append(history_entry)
    return entries


def run_one(spark_submit: str, python: str, version: str, scenario: str, variant: Variant,
            out_root: Path, timeout: float, keep_failed: Path | None) -> Outcome:
    """One application: run it in a fresh temporary directory and keep its log
    only when it ran as meant and its rewrites equal truth.json's."""
    started = time.monotonic()
    env = {**os.environ, "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python}
    with tempfile.TemporaryDirectory(prefix="aqe-eventlog-") as tmp:
        tmp_path = Path(tmp)
        event_dir, cwd = tmp_path / "events", tmp_path / "cwd"
        event_dir.mkdir()
        cwd.mkdir()
        result_path, history, output = tmp_path / "result.json", tmp_path / "history.json", tmp_path / "submit.log"
        confs = run_confs(variant, event_dir)
        command = submit_command(spark_submit, scenario, variant, confs, result_path, history)
        with output.open("wb") as log:
            try:
                code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, cwd=cwd, env=env,
                                      timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                code = None
        seconds = time.monotonic() - started
        result = json.loads(result_path.read_text()) if result_path.exists() else None
        killed = variant.mode == "inprogress"
        problem = None
        if code is None:
            problem = f"timed out after {timeout:.0f}s"
        elif result is None:
            problem = f"exit {code}, no result"
        elif not result["truth_matches"]:
            problem = f"TRUTH MISMATCH: run {result['rewrites']}, truth.json {result['truth_rewrites']}"
        elif (code != 0) if not killed else (code not in (-9, 137)):
            problem = f"exit {code}"
        if problem:
            if keep_failed:
                kept = keep_failed / f"{version}-{scenario}-{variant.name}"
                shutil.copytree(tmp_path, kept, dirs_exist_ok=True)
                problem += f" (kept in {kept})"
            tail = output.read_text(errors="replace").splitlines()[-15:]
            return Outcome(scenario, variant.name, False, seconds, problem + "\n  " + "\n  ".join(tail))
        dest = out_root / f"spark-{version}" / scenario
        dest.mkdir(parents=True, exist_ok=True)
        try:
            entries = _collect(variant, event_dir, dest, out_root, version, scenario, result,
                               confs, history)
        except RuntimeError as error:
            return Outcome(scenario, variant.name, False, seconds, str(error))
        summary = ", ".join(f"{e['path']} {e['size']} B" for e in entries)
        return Outcome(scenario, variant.name, True, seconds, summary, entries)


def update_manifest(out_root: Path, outcomes: list[Outcome]) -> Path:
    """Replace the manifest entries of the runs that succeeded; keep the rest."""
    path = out_root / MANIFEST_NAME
    logs = json.loads(path.read_text(encoding="utf-8"))["logs"] if path.exists() else []
    fresh = [entry for outcome in outcomes if outcome.ok for entry in outcome.entries]
    replaced = {(e["spark_version"], e["scenario"], e["variant"]) for e in fresh}
    logs = [e for e in logs if (e["spark_version"], e["scenario"], e["variant"]) not in replaced]
    logs = sorted(logs + fresh, key=lambda e: e["path"])
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "about": "Real Spark event logs and History Server SQL JSON of the sample scenarios; "
                 "see README.md, 'Event logs'. Paths are relative to this file.",
        "logs": logs,
    }
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spark-submit", required=True, help="spark-submit of the PySpark to use")
    parser.add_argument("--python", help="Python that runs the job (default: the python next to spark-submit)")
    parser.add_argument("--out", required=True, type=Path,
                        help="root directory: logs go to <out>/spark-<X.Y.Z>/<scenario>/, the manifest to <out>/eventlogs.json")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these scenarios")
    parser.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), help="run only these variants")
    parser.add_argument("--jobs", type=int, default=1, help="applications at a time (the machine's cores allowing)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per application")
    parser.add_argument("--keep-failed", type=Path, help="copy a failed run's temporary directory here")
    args = parser.parse_args(argv)

    if os.sep in args.spark_submit:  # a path: the jobs run from a temporary directory
        args.spark_submit = str(Path(args.spark_submit).resolve())
    python = args.python or str(Path(args.spark_submit).with_name("python"))
    version = pyspark_version(python)
    names = scenario_names(python)
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            parser.error(f"unknown scenarios: {', '.join(unknown)}")
    runs = [
        (name, variant)
        for variant in VARIANTS.values()
        if not args.variants or variant.name in args.variants
        for name in (variant.scenarios or names)
        if not args.only or name in args.only
    ]
    # the longest applications first, so two at a time finish together
    runs.sort(key=lambda run: run[1].mode == "normal")
    started = time.monotonic()

    def run(item):
        name, variant = item
        outcome = run_one(args.spark_submit, python, version, name, variant, args.out,
                          args.timeout, args.keep_failed)
        status = "ok" if outcome.ok else "FAILED"
        print(f"{name} {variant.name}: {status} {outcome.seconds:.1f}s {outcome.message}",
              file=sys.stderr, flush=True)
        return outcome

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        outcomes = list(pool.map(run, runs))
    manifest = update_manifest(args.out, outcomes)
    failures = [o for o in outcomes if not o.ok]
    total = sum(e["size"] for o in outcomes for e in o.entries)
    print(f"{len(outcomes) - len(failures)} of {len(outcomes)} applications kept, "
          f"{total / 1e6:.2f} MB written, {time.monotonic() - started:.0f}s; manifest {manifest}",
          file=sys.stderr)
    for failure in failures:
        print(f"FAILED {failure.scenario} {failure.variant}: {failure.message.splitlines()[0]}",
              file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
