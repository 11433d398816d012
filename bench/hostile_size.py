"""Hostile input, as ratios against the real log it is built from, measured in the same run.

    python bench/hostile_size.py [--runs 3] [--cache DIR]

Memory: the peak resident memory of `aqe-inspect diff LOG --format json` (its largest process,
from getrusage of the finished run) over inputs built from the real skew_join event log of
sample_plans/ (tests/hostile_sizes.py), each against the same command over the real log itself:

- a zstd "bomb": the log with its start event's description grown to 4 GiB (a 0.2 MB file),
  with the default --max-size (goal: at most 3x the real log's peak, about 27 MiB: the line is
  held in memory only up to 32 MiB, events.SPILL; it took 8.4 GB, 2x the line);
- the same as one plain 300 MB line (goal: at most 3x);
- 3,000 executions that never end, 100 KB each (goal: at most 8x: at most 1,000 are held,
  MAX_OPEN; all 3,000 would be 300 MB);
- a History Server answer of 4 GiB said by its size (goal: at most 1.2x: refused unread);
- a driver log with 400,000 bare plan-change rule headings (`=== Applying Rule ... ===` with
  nothing under it; tests/planchange_logs.py: built from skew_join's driver_planchange.log;
  goal: at most 3x: the headings are counted, not held; it took 374 MB, 13x).

Interruption: the seconds from Ctrl-C (to the process group) to the end of a run reading a
long log in its pool of workers, against the CLI's own start-up (`aqe-inspect --version`):
goal at most 1x (the run ends faster than it starts).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from run import cli_command, wall  # noqa: E402
from tests import hostile_sizes as hostile  # noqa: E402
from tests import planchange_logs  # noqa: E402

GiB, MiB = 1 << 30, 1 << 20


def peak(command) -> int:
    """The peak RSS (bytes) of the largest process of one run of `command`."""
    result, largest = hostile.run_measured(command, timeout=900)
    if result.returncode not in (0, 2):
        raise SystemExit(f"{command}: exit {result.returncode}: {result.stderr.decode()}")
    return largest


def build(cache: Path):
    lines = hostile.sample().read_bytes().split(b"\n")
    start = hostile.line_of(lines, b"SQLExecutionStart")
    key = b'"description":"'
    made = {
        "zstd bomb, 4 GiB line": (cache / "bomb.zstd", lambda path: hostile.write_zstd(
            hostile.enlarged(lines, start, key, 4 * GiB), path), 3.0),
        "plain line of 300 MB": (cache / "line-300mb", lambda path: hostile.write_plain(
            hostile.enlarged(lines, start, key, 300 * MiB), path), 3.0),
        "3,000 executions never ended": (cache / "never.zstd", lambda path: hostile.write_zstd(
            hostile.never_ending(lines, 3000, 100 << 10), path), 8.0),
        "History Server answer of 4 GiB": (cache / "sql.json", _sparse_history, 1.2),
        "400,000 bare rule headings": (cache / "bare-headings.log", _bare_headings, 3.0),
    }
    for _, (path, write, _) in made.items():
        if not path.exists():
            write(path)
    return made


def _bare_headings(path: Path) -> None:
    path.write_bytes(planchange_logs.bare_headings(
        planchange_logs.planchange_log("skew_join").read_bytes(), 400_000))


def _sparse_history(path: Path) -> None:
    path.write_bytes(hostile.sample(layout="history-sql").read_bytes()[:60000])
    os.truncate(path, 4 * GiB)


def interrupted_in(cli, log: Path, out: Path) -> float:
    """Seconds from Ctrl-C to the end of a run whose pool of workers is reading `log`."""
    process = subprocess.Popen([*cli, "diff", str(log), "--format", "json", "--output",
                                str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    hostile.wait_for(lambda: len(hostile.children_of(process.pid)) >= 2 or
                     process.poll() is not None, 60)
    time.sleep(0.3)
    sent = time.perf_counter()
    os.killpg(process.pid, signal.SIGINT)
    process.wait(timeout=120)
    return time.perf_counter() - sent


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "aqe-inspect-bench-hostile")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    cli = cli_command()
    out = args.cache / "report.json"
    real = hostile.sample()
    baseline = statistics.median(peak([*cli, "diff", str(real), "--format", "json", "--output",
                                       str(out)]) for _ in range(args.runs))
    print(f"peak memory of `diff {real.relative_to(ROOT)}`: {baseline / MiB:.0f} MiB "
          f"(median of {args.runs})")
    for name, (path, _, goal) in build(args.cache).items():
        largest = statistics.median(peak([*cli, "diff", str(path), "--format", "json",
                                          "--output", str(out)]) for _ in range(args.runs))
        ratio = largest / baseline
        print(f"  {name:34s} {path.stat().st_size / MiB:9.1f} MiB file: peak "
              f"{largest / MiB:5.0f} MiB = {ratio:4.2f}x; goal <= {goal}x: "
              f"{'ok' if ratio <= goal else 'OVER GOAL'}")
    log = args.cache / "long"
    if not log.exists():
        hostile.write_plain(hostile.renumbered(real.read_bytes().split(b"\n"), 2500), log)
    startup = wall([*cli, "--version"], args.runs)
    ending = statistics.median(interrupted_in(cli, log, out) for _ in range(args.runs))
    print(f"Ctrl-C mid-read to the end of the run: {ending * 1000:.0f} ms = "
          f"{ending / startup:.2f}x the start-up ({startup * 1000:.0f} ms); goal <= 1x: "
          f"{'ok' if ending <= startup else 'OVER GOAL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
