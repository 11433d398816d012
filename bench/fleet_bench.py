"""Fleet scan speed: event logs per second on Spark `local[1]` and `local[2]` (goal: 1.8x), and
a single-process Python loop over the same files (`rows_of_log` in a for loop).

    python bench/fleet_bench.py [--copies 1000] [--dir /tmp/aqe-fleet-bench] [--runs 3] [--binary]

The fleet: `--copies` event logs made by hard-linking the committed sample logs (real Spark
3.5.9 and 4.3.0 runs: plain, zstd, lz4, snappy, lzf, rolling, `.inprogress`; see
sample_plans/eventlogs.json) round-robin into one folder (no bytes copied; the page cache
holds them after the warm-up, so every contender reads from memory). Each Spark master runs in
its own process (one SparkContext per process); the machine's parallel headroom (two Python
processes at once against one) is printed beside, since a shared machine caps the ratio; the time is that of `job.scan` (listing done,
session up, one warm-up scan run first, so the Python workers are started), median of --runs.
With --binary, the Spark runs read through binaryFile (`file:` URIs) instead of by path.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_plans"


def build(folder: Path, copies: int) -> None:
    """`copies` logs in `folder`, hard links to the committed ones, made once."""
    marker = folder / f".built-{copies}"
    if marker.exists():
        return
    manifest = json.loads((SAMPLES / "eventlogs.json").read_text())
    logs = [SAMPLES / e["path"] for e in manifest["logs"] if e["layout"] != "history-sql"]
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(copies):
        source = logs[number % len(logs)]
        if source.is_dir():  # a rolling log: its folder, its parts linked
            target = folder / f"{source.name}-{number:05d}"
            target.mkdir(exist_ok=True)
            for part in source.iterdir():
                if not (target / part.name).exists():
                    os.link(part, target / part.name)
        else:
            target = folder / f"{number:05d}-{source.name}"
            if not target.exists():
                os.link(source, target)
    marker.write_text("")


def loop(folder: Path, runs: int) -> dict:
    from aqe_inspect.fleet.job import LocalFiles, expand_units
    from aqe_inspect.fleet.rows import rows_of_log

    units = expand_units([str(folder)], LocalFiles())
    times = []
    for run in range(runs + 1):  # the first is the warm-up
        start = time.perf_counter()
        rows = [row for unit in units for row in rows_of_log(unit.source)]
        if run:
            times.append(time.perf_counter() - start)
    return {"files": len(units), "rows": len(rows), "seconds": statistics.median(times)}


def spark(folder: Path, master: str, runs: int, binary: bool) -> dict:
    from pyspark.sql import SparkSession

    from aqe_inspect.fleet.job import HadoopFiles, LocalFiles, expand_units, scan

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (SparkSession.builder.master(master).appName("fleet-bench")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    files = HadoopFiles(session) if binary else LocalFiles()
    units = expand_units([f"file:{folder}" if binary else str(folder)], files)
    scan(session, units[:50], binary)  # warm-up: Python workers started, classes loaded
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        rows = scan(session, units, binary)
        times.append(time.perf_counter() - start)
    session.stop()
    return {"files": len(units), "rows": len(rows), "seconds": statistics.median(times)}


def child(master: str, args) -> dict:
    command = [sys.executable, __file__, "--dir", str(args.dir), "--copies", str(args.copies),
               "--runs", str(args.runs), "--child", master, *(["--binary"] if args.binary
                                                             else [])]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _burn(_) -> float:
    start = time.perf_counter()
    total = 0
    for number in range(5_000_000):
        total += number
    return time.perf_counter() - start


def headroom() -> float:
    """The machine's parallel headroom now: the work of two processes at once against one
    alone (2.0 on two idle cores; less when others share them). local[2]/local[1] cannot
    beat it."""
    from multiprocessing import Pool

    alone = min(_burn(0) for _ in range(2))
    with Pool(2) as pool:
        start = time.perf_counter()
        pool.map(_burn, [0, 1])
        both = time.perf_counter() - start
    return 2 * alone / both


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=1000)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/aqe-fleet-bench"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--binary", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    folder = args.dir / f"logs-{args.copies}"
    if args.child:
        print(json.dumps(spark(folder, args.child, args.runs, args.binary)))
        return 0
    build(folder, args.copies)
    results = {"loop": loop(folder, args.runs)}
    for master in ("local[1]", "local[2]"):
        results[master] = child(master, args)
    for name, result in results.items():
        result["files_per_second"] = round(result["files"] / result["seconds"], 1)
        print(f"{name:10} {result['files']} logs, {result['rows']} rows in "
              f"{result['seconds']:.2f} s: {result['files_per_second']} logs/s")
    print(f"local[2] / local[1]: {results['local[1]']['seconds'] / results['local[2]']['seconds']:.2f}x"
          f"   local[2] / loop: {results['loop']['seconds'] / results['local[2]']['seconds']:.2f}x"
          f"   ({os.cpu_count()} cores; parallel headroom of this machine now: "
          f"{headroom():.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
