"""Event-log and driver-log speed and memory, as ratios against `grep -c` over the same file in
the same run.

    python bench/eventlog.py [--size-mb 1024] [--driver-mb 100] [--source LOG] [--cache DIR]
                             [--runs 3] [--zstd] [--only single,mixed,driver] [--no-repeats]
                             [--no-fallbacks]

Three inputs, built once and cached in `--cache`:

- [one query] a large event log from a real one with `eventlog_build.py`:
by default the PySpark 4.3 run of the sample scenario `five_way_join` (five joins, eight AQE
re-plans per execution, about 600 KB of events per execution: some 1,700 executions per GB),
each copy with its own execution, job, stage, task, accumulator and expression ids;
- [mixed] a large event log of every plain 4.3 sample log's executions in turn
  (`eventlog_build.build_mixed`), every copy with its own ids: every plan text distinct;
- [driver] a 100 MB driver log of every sample driver log in turn, each copy with its own
  expression and plan ids (`driverlog_build.py`); its baseline is `grep -c Exchange`, its goal
  100 MB/s.

For each:

- `grep -c SparkListenerSQLAdaptiveExecutionUpdate LOG`: the baseline (median of --runs, after
  a warm-up run, so both read from the page cache);
- `aqe-inspect diff LOG --format json > /dev/null`: wall time and its ratio to grep (goal: at
  most 10x), executions reported, the peak memory of its largest process and of its whole
  process tree (the pool's workers included, sampled from /proc every 20 ms; goal: under
  200 MB);
- with `--no-repeats`, the driver log again with parsing/repeats.py's cache off (each plan
  text printed again parsed again), with the Python running the bench;
- for the event logs, how many executions' final plans the reader took in the plain formatted
  shape and how many went to the grammar's parse (the fallbacks), counted in-process after
  the measured run (`--no-fallbacks` leaves it out);
- with `--zstd`: the same log compressed as Spark's zstd codec writes it (a frame per flush;
  here a frame per 1,000 lines, written with the zstandard library), read the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from driverlog_build import build as build_driver  # noqa: E402
from eventlog_build import build, build_mixed  # noqa: E402
from run import cli_command, wall  # noqa: E402

DEFAULT_SOURCE = ROOT / "sample_plans" / "spark-4.3.0" / "five_way_join" / "eventlog.json"
UPDATE = "SparkListenerSQLAdaptiveExecutionUpdate"
START = "SparkListenerSQLExecutionStart"


def _tree_rss(pid: int) -> int:
    """Resident memory (bytes) of a process and every process below it, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
        except OSError:
            continue
    total, stack = 0, [pid]
    page = os.sysconf("SC_PAGE_SIZE")
    while stack:
        current = stack.pop()
        try:
            with open(f"/proc/{current}/statm", "rb") as handle:
                total += int(handle.read().split()[1]) * page
        except OSError:
            pass
        stack.extend(children.get(current, ()))
    return total


CLI = None  # the aqe-inspect command (--cli), else the one on PATH
#: CPU seconds (user + system) of the last run_diff's process tree, the pool's workers
#: included: on a shared machine, a steadier figure than the wall time.
LAST_CPU = 0.0


def run_measured(argv, out: Path, ok=(0,)):
    """Run `argv` with its output to `out`: (seconds, peak RSS of the largest process, peak RSS
    of the process tree, exit code, CPU seconds of the children). An exit code not in `ok`
    ends the bench with the command's error."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before = usage.ru_maxrss
    cpu_before = usage.ru_utime + usage.ru_stime
    peak_tree = 0
    with out.open("wb") as sink:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE)
        done = threading.Event()

        def sample():
            nonlocal peak_tree
            while not done.wait(0.02):
                peak_tree = max(peak_tree, _tree_rss(process.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, stderr = process.communicate()
        elapsed = time.perf_counter() - started
        done.set()
        sampler.join()
    if process.returncode not in ok:
        raise SystemExit(f"aqe-inspect failed: {stderr.decode(errors='replace')}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    largest = max(usage.ru_maxrss, before) * 1024
    cpu = usage.ru_utime + usage.ru_stime - cpu_before
    return elapsed, largest, peak_tree, process.returncode, cpu


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def run_diff(path: Path, out: Path):
    """(seconds, peak RSS of the largest process, peak RSS of the process tree)."""
    global LAST_CPU
    elapsed, largest, peak_tree, _, LAST_CPU = run_measured(
        [*(CLI or cli_command()), "diff", str(path), "--format", "json"], out)
    return elapsed, largest, peak_tree


def zstd_copy(plain: Path, out: Path, lines_per_frame: int = 1000) -> None:
    import zstandard

    compressor = zstandard.ZstdCompressor(level=1)
    with plain.open("rb") as source, out.open("wb") as sink:
        batch = []
        for line in source:
            batch.append(line)
            if len(batch) == lines_per_frame:
                sink.write(compressor.compress(b"".join(batch)))
                batch = []
        if batch:
            sink.write(compressor.compress(b"".join(batch)))


def measure(label: str, path: Path, baseline: list, runs: int, cache: Path,
            goal: str) -> None:
    """One input: the baseline (`grep -c ...`) and `diff --format json`, side by side."""
    grep = wall(baseline, runs)
    size = path.stat().st_size
    out = cache / "report.json"
    times, cpus, largest, tree = [], [], 0, 0
    for _ in range(runs):
        elapsed, one, whole = run_diff(path, out)
        times.append(elapsed)
        cpus.append(LAST_CPU)
        largest, tree = max(largest, one), max(tree, whole)
    with out.open("rb") as handle:
        reported = len(json.load(handle)["queries"])
    seconds = statistics.median(times)
    print(f"{label}: {size / 1e6:.0f} MB ({path.name}); {' '.join(baseline[:2])}: {grep:.2f} s")
    print(f"  diff --format json: {seconds:.2f} s = {seconds / grep:.1f}x grep, "
          f"{size / 1e6 / seconds:.0f} MB/s ({goal}); CPU {statistics.median(cpus):.1f} s "
          f"(all processes); {reported} queries reported; peak "
          f"memory {largest / 1e6:.0f} MB largest process, {tree / 1e6:.0f} MB process tree "
          f"(goal < 200 MB); load average {_load():.1f}")
    print(f"  CPU per query reported {statistics.median(cpus) / max(reported, 1) * 1000:.2f} ms")


def plain_shape_count(path: Path) -> None:
    """How many executions' final plan descriptions the event-log reader takes in the plain
    formatted shape (parsing/formatted_plan.py) and how many go to the grammar's parse (the
    fallbacks), counted here in one process over the same log."""
    from aqe_inspect.parsing.formatted_plan import read_formatted
    from aqe_inspect.sources.eventlog.events import Scanner, _load
    from aqe_inspect.sources.eventlog.files import search_event_logs

    plain = grammar = none = 0
    for log in search_event_logs(str(path)).logs:
        for raw in Scanner(log, []).executions():
            event = _load(raw.update or raw.start, raw.part, 0, [])
            text = event.get("physicalPlanDescription") if event else None
            if not isinstance(text, str) or not text.strip():
                none += 1
            elif read_formatted(text) is not None:
                plain += 1
            else:
                grammar += 1
    print(f"  final plans read in the plain formatted shape: {plain}; by the grammar "
          f"(fallbacks): {grammar}; without a description: {none}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=1024)
    parser.add_argument("--driver-mb", type=float, default=100)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "aqe-inspect-bench")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--zstd", action="store_true")
    parser.add_argument("--cli", help="the aqe-inspect to measure (default: on PATH)")
    parser.add_argument("--no-fallbacks", dest="fallbacks", action="store_false",
                        help="do not count the plans read by the grammar (an in-process scan "
                        "of each event log after its measured run)")
    parser.add_argument("--only", default="single,mixed,driver",
                        help="the inputs to measure, comma-separated (default: all)")
    parser.add_argument("--no-repeats", action="store_true",
                        help="measure the driver log again with every repeated plan text "
                             "parsed again (parsing/repeats.py off), with this Python")
    args = parser.parse_args(argv)
    global CLI
    CLI = [args.cli] if args.cli else None
    only = set(args.only.split(","))
    args.cache.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("NO_COLOR", "1")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} CPUs, load average {load:.1f} at the start")
    if "single" in only:
        log = args.cache / f"{args.source.parent.name}-{int(args.size_mb)}mb.json"
        if not log.exists():
            copies, _ = build(args.source, log, int(args.size_mb * 1024 * 1024))
            print(f"built {log}: {copies} copies of {args.source}", file=sys.stderr)
        starts = _count(log, START)
        print(f"[one query] {starts} SQL executions, {_count(log, UPDATE)} AQE updates")
        measure("event log, one query repeated", log, ["grep", "-c", UPDATE, str(log)],
                args.runs, args.cache, "goal <= 10x grep")
        if args.fallbacks:
            plain_shape_count(log)
        if args.zstd:
            compressed = log.with_suffix(".zstd")
            if not compressed.exists():
                zstd_copy(log, compressed)
            measure("  the same, zstd", compressed, ["grep", "-c", UPDATE, str(log)],
                    args.runs, args.cache, "goal <= 10x grep")
    if "mixed" in only:
        sources = sorted((ROOT / "sample_plans" / "spark-4.3.0").glob("*/eventlog.json"))
        log = args.cache / f"mixed-{len(sources)}-{int(args.size_mb)}mb.json"
        if not log.exists():
            count, _ = build_mixed(sources, log, int(args.size_mb * 1024 * 1024))
            print(f"built {log}: {count} application bodies of {len(sources)} logs",
                  file=sys.stderr)
        print(f"[mixed] {_count(log, START)} SQL executions of {len(sources)} applications, "
              f"{_count(log, UPDATE)} AQE updates")
        measure("event log, every sample 4.3 application in turn", log,
                ["grep", "-c", UPDATE, str(log)], args.runs, args.cache, "goal <= 10x grep")
        if args.fallbacks:
            plain_shape_count(log)
    if "driver" in only:
        log = args.cache / f"driver-{int(args.driver_mb)}mb.log"
        if not log.exists():
            copies, _ = build_driver(log, int(args.driver_mb * 1024 * 1024))
            print(f"built {log}: {copies} copies of the sample driver logs", file=sys.stderr)
        measure("driver log, every sample driver log in turn", log,
                ["grep", "-c", "Exchange", str(log)], args.runs, args.cache,
                "goal >= 100 MB/s")
        if args.no_repeats:
            # The same run with parsing/repeats.py's cache off: its share of the figure (the
            # bench's log puts the same jobs' logs of several Spark lines one after the other,
            # which print the same plan texts).
            saved, CLI = CLI, [sys.executable, "-c", NO_REPEATS]
            measure("  the same, every repeated plan text parsed again", log,
                    ["grep", "-c", "Exchange", str(log)], args.runs, args.cache,
                    "goal >= 100 MB/s")
            CLI = saved
    return 0


#: aqe-inspect with parsing/repeats.py's cache off.
NO_REPEATS = ("import sys; import aqe_inspect.parsing.repeats as repeats; repeats.MAX_ENTRIES = 0; "
              "from aqe_inspect.cli import main; sys.argv[0] = 'aqe-inspect'; sys.exit(main())")


def _count(path: Path, text: str) -> int:
    return int(subprocess.run(["grep", "-c", text, str(path)], capture_output=True,
                              check=True).stdout)


if __name__ == "__main__":
    sys.exit(main())
