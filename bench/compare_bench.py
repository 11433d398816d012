"""`compare` speed and memory, as a ratio to `diff` of one of the two logs in the same run.

    python bench/compare_bench.py [--size-mb 1024] [--cache DIR] [--runs 1] [--line 4.3.0]

Builds (once, cached in `--cache`) two large event logs with `eventlog_build.py`, as
`eventlog.py` does: the old run from the bundled `sample_plans/compare/spark-<line>/baseline.zstd`
(one application, eight labelled queries), the new run from `bhj_off.zstd` (the same job with
AQE's runtime broadcast off), each repeated to `--size-mb` with distinct ids. Then, each the
median of --runs after a warm-up read (so both come from the page cache):

- `aqe-inspect diff NEW --format json > /dev/null`: the baseline;
- `aqe-inspect compare OLD NEW --format json > /dev/null`: wall time and its ratio to the diff
  (goal: at most 2.2x: two logs read, each about as fast as `diff` reads one), the peak
  memory of its largest process and of its whole process tree (the pool's workers included,
  sampled from /proc every 20 ms; goal: under 200 MB), and what it found (pairs, lost).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from eventlog import run_measured  # noqa: E402
from eventlog_build import build  # noqa: E402
from run import cli_command  # noqa: E402


def _plain_copy(source: Path, out: Path) -> Path:
    """A zstd event log decompressed (eventlog_build reads plain JSON lines)."""
    import zstandard

    if not out.exists():
        with source.open("rb") as handle, out.open("wb") as sink:
            reader = zstandard.ZstdDecompressor().stream_reader(handle)
            while True:
                chunk = reader.read(1 << 20)
                if not chunk:
                    break
                sink.write(chunk)
    return out


def measure(args, out: Path):
    """(seconds, peak RSS of the largest process, peak RSS of the process tree, exit code)."""
    return run_measured([*cli_command(), *args], out, ok=(0, 1))[:4]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=1024)
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "aqe-inspect-bench")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--line", default="4.3.0")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    runs = ROOT / "sample_plans" / "compare" / f"spark-{args.line}"
    logs = {}
    for side, name in (("old", "baseline"), ("new", "bhj_off")):
        plain = _plain_copy(runs / f"{name}.zstd", args.cache / f"compare-{args.line}-{name}.json")
        log = args.cache / f"compare-{args.line}-{name}-{int(args.size_mb)}mb.json"
        if not log.exists():
            copies, _ = build(plain, log, int(args.size_mb * 1024 * 1024))
            print(f"built {log}: {copies} copies of {runs / name}.zstd", file=sys.stderr)
        logs[side] = log
    out = args.cache / "compare-report.json"
    subprocess.run(["cat", str(logs["old"]), str(logs["new"])], stdout=subprocess.DEVNULL,
                   check=True)  # warm the page cache
    results = {}
    for label, command in (("diff", ["diff", str(logs["new"]), "--format", "json"]),
                           ("compare", ["compare", str(logs["old"]), str(logs["new"]),
                                        "--format", "json"])):
        times, largest, tree = [], 0, 0
        for _ in range(args.runs):
            elapsed, one, whole, code = measure(command, out)
            times.append(elapsed)
            largest, tree = max(largest, one), max(tree, whole)
        results[label] = (statistics.median(times), largest, tree)
        if label == "compare":
            with out.open("rb") as handle:
                document = json.load(handle)
            found = (f"{document['summary']['matched']} pairs, "
                     f"{document['summary']['failing']} failing, lost "
                     f"{ {k: n for k, n in document['summary']['lost'].items() if n} }, "
                     f"exit {code}")
    sizes = " + ".join(f"{logs[side].stat().st_size / 1e6:.0f} MB" for side in ("old", "new"))
    diff_s, diff_largest, diff_tree = results["diff"]
    compare_s, largest, tree = results["compare"]
    print(f"event logs: {sizes}")
    print(f"diff NEW: {diff_s:.1f} s; peak memory {diff_largest / 1e6:.0f} MB largest process, "
          f"{diff_tree / 1e6:.0f} MB process tree")
    print(f"compare OLD NEW: {compare_s:.1f} s = {compare_s / diff_s:.2f}x diff (goal <= 2.2x); "
          f"peak memory {largest / 1e6:.0f} MB largest process, {tree / 1e6:.0f} MB process "
          f"tree (goal < 200 MB); {found}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
