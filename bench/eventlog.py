"""Event-log speed and memory, as ratios against `grep -c` over the same file in the same run.

    python bench/eventlog.py [--size-mb 1024] [--source LOG] [--cache DIR] [--runs 3] [--zstd]

Builds (once, cached in `--cache`) a large event log from a real one with `eventlog_build.py`:
by default the PySpark 4.3 run of the sample scenario `five_way_join` (five joins, eight AQE
re-plans per execution, about 600 KB of events per execution: some 1,700 executions per GB),
each copy with its own execution, job, stage, task, accumulator and expression ids. Then:

- `grep -c SparkListenerSQLAdaptiveExecutionUpdate LOG`: the baseline (median of --runs, after
  a warm-up run, so both read from the page cache);
- `aqe-inspect diff LOG --format json > /dev/null`: wall time and its ratio to grep (goal: at
  most 10x), executions reported, the peak memory of its largest process and of its whole
  process tree (the pool's workers included, sampled from /proc every 20 ms; goal: under
  200 MB);
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

from eventlog_build import build  # noqa: E402
from run import cli_command, wall  # noqa: E402

DEFAULT_SOURCE = ROOT / "sample_plans" / "spark-4.3.0" / "five_way_join" / "eventlog.json"
UPDATE = "SparkListenerSQLAdaptiveExecutionUpdate"


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


def run_diff(path: Path, out: Path):
    """(seconds, peak RSS of the largest process, peak RSS of the process tree)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    peak_tree = 0
    with out.open("wb") as sink:
        started = time.perf_counter()
        process = subprocess.Popen([*cli_command(), "diff", str(path), "--format", "json"],
                                   stdout=sink, stderr=subprocess.PIPE)
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
    if process.returncode != 0:
        raise SystemExit(f"aqe-inspect failed: {stderr.decode(errors='replace')}")
    largest = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return elapsed, max(largest, before * 1024), peak_tree


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=1024)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "aqe-inspect-bench")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--zstd", action="store_true")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    log = args.cache / f"{args.source.parent.name}-{int(args.size_mb)}mb.json"
    if not log.exists():
        copies, executions = build(args.source, log, int(args.size_mb * 1024 * 1024))
        print(f"built {log}: {copies} copies of {args.source}", file=sys.stderr)
    inputs = [("plain", log)]
    if args.zstd:
        compressed = log.with_suffix(".zstd")
        if not compressed.exists():
            zstd_copy(log, compressed)
        inputs.append(("zstd", compressed))
    size = log.stat().st_size
    grep = wall(["grep", "-c", UPDATE, str(log)], args.runs)
    updates = int(subprocess.run(["grep", "-c", UPDATE, str(log)], capture_output=True,
                                 check=True).stdout)
    print(f"event log: {size / 1e6:.0f} MB ({log}), {updates} AQE updates; "
          f"grep -c: {grep:.2f} s")
    for label, path in inputs:
        out = args.cache / "report.json"
        times, largest, tree = [], 0, 0
        for _ in range(args.runs):
            elapsed, one, whole = run_diff(path, out)
            times.append(elapsed)
            largest, tree = max(largest, one), max(tree, whole)
        with out.open("rb") as handle:
            executions = len(json.load(handle)["queries"])
        seconds = statistics.median(times)
        print(f"diff {label}: {seconds:.2f} s = {seconds / grep:.1f}x grep (goal <= 10x); "
              f"{executions} executions ({executions / seconds:.0f}/s, "
              f"{size / 1e6 / seconds:.0f} MB/s); peak memory {largest / 1e6:.0f} MB largest "
              f"process, {tree / 1e6:.0f} MB process tree (goal < 200 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
