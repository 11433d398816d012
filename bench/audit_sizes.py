"""The hostile shapes of the second audit (issue 36) at the sizes it measured, through the
command as a user runs it: seconds (wall and CPU of the process), peak memory, each size's
work against the first's (linear is the size ratio), and `grep -c` over the same file for
scale.

    python bench/audit_sizes.py [--cli PATH] [--only NAME,...] [--runs N]

Shapes (built from the real sample logs, as the tests build them smaller):
- markers: `Plan changed:` and `Final plan:` inside a plan-change block, 1k/2k/4k/8k lines;
  one 2 MB line full of markers;
- queries: one query run 2k/4k/8k times in one application (12/25/51 MB);
- headings: 0.4M and 1.6M bare `=== Applying Rule R ===` lines;
- unended: a `Final plan:` message that never ends, 4 and 16 MB; a line over --max-size,
  64 and 256 MB (refused: exit 2);
- width: a Union of 2.5k/5k/10k/20k/40k branches, `diff --side-by-side` and `--format html`
  (when tests/wide_plans.py is there).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def measure(command: Sequence[str], runs: int) -> Tuple[float, float, int, int]:
    """The best (wall s, CPU s) of `runs` runs, the peak memory (MB) and the exit code: by
    GNU time where there is one (this process's own memory, large from building the inputs,
    would otherwise count in a child's peak until it runs the command)."""
    best_wall = best_cpu = float("inf")
    peak = code = 0
    timer = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)
    for _ in range(runs):
        with tempfile.NamedTemporaryFile("r") as figures:
            prefix = [timer, "-f", "%U %S %M", "-o", figures.name] if timer else []
            started = time.perf_counter()
            done = subprocess.run([*prefix, *command], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
            best_wall = min(best_wall, time.perf_counter() - started)
            code = done.returncode
            if timer:
                user, system, kilobytes = figures.read().split()[-3:]
                best_cpu = min(best_cpu, float(user) + float(system))
                peak = max(peak, int(kilobytes) // 1024)
    return best_wall, best_cpu if timer else best_wall, peak, code


def grep(path: Path) -> float:
    started = time.perf_counter()
    subprocess.run(["grep", "-c", "Plan changed", str(path)], stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def shape(name: str, sizes: Sequence[Tuple[str, float, Callable[[Path], None]]],
          command: Callable[[Path], List[str]], runs: int, folder: Path) -> None:
    first: Optional[Tuple[float, float]] = None
    for label, scale, write in sizes:
        path = folder / f"{name}-{label}.log"
        write(path)
        wall, cpu, peak, code = measure(command(path), runs)
        megabytes = path.stat().st_size / 2 ** 20
        if first is None:
            first = (scale, cpu)
        growth = cpu / max(first[1], 1e-3)
        print(f"{name:26s} {label:>7s} {megabytes:8.1f} {wall:8.2f} {cpu:8.2f} {peak:7d} "
              f"{growth:7.1f} {scale / first[0]:6.1f} {grep(path):7.3f}  exit {code}",
              flush=True)
        path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    beside = Path(sys.executable).with_name("aqe-inspect")  # this venv's command
    parser.add_argument("--cli", default=str(beside) if beside.is_file()
                        else shutil.which("aqe-inspect") or "aqe-inspect")
    parser.add_argument("--only", default="markers,queries,headings,unended,width")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    only = set(args.only.split(","))
    from tests.planchange_logs import (bare_headings, inside_block, many_queries,
                                       markers_line, planchange_log)

    skew = planchange_log("skew_join").read_bytes()
    coalesced = planchange_log("coalesced_aggregation").read_bytes()
    log = (ROOT / "sample_plans/spark-3.5.9/skew_join/driver.log").read_bytes()
    final_plan = b"26/11/28 10:00:00 INFO AdaptiveSparkPlanExec: Final plan:\n"
    body = b"1234 starts like a timestamp, holds (12) and +- glyphs\n"

    def diff(path: Path) -> List[str]:
        return [args.cli, "diff", str(path), "--format", "json", "-o", os.devnull]

    def writer(make: Callable[[], bytes]) -> Callable[[Path], None]:
        return lambda path: path.write_bytes(make())

    print(f"{'shape':26s} {'size':>7s} {'MB':>8s} {'wall s':>8s} {'CPU s':>8s} {'peak MB':>7s} "
          f"{'work x':>7s} {'size x':>6s} {'grep s':>7s}")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        if "markers" in only:
            shape("markers inside a block", [
                (f"{n}", n, writer(lambda n=n: inside_block(skew, n)))
                for n in (1000, 2000, 4000, 8000)], diff, args.runs, folder)
            shape("a line of markers", [
                (f"{mb} MB", mb, writer(lambda mb=mb: markers_line(skew, mb * 20_000)))
                for mb in (1, 2)], diff, args.runs, folder)
        if "queries" in only:
            shape("many queries", [(f"{n}", n, writer(lambda n=n: many_queries(coalesced, n)))
                                   for n in (2000, 4000, 8000)], diff, args.runs, folder)
        if "headings" in only:
            shape("bare headings", [(f"{n // 1000}k", n, writer(lambda n=n: bare_headings(skew, n)))
                                    for n in (400_000, 1_600_000)], diff, args.runs, folder)
        if "unended" in only:
            shape("message never ended", [
                (f"{mb} MB", mb, writer(lambda mb=mb: log + final_plan
                                        + body * ((mb << 20) // len(body)) + log))
                for mb in (4, 16)], diff, args.runs, folder)
            # One line of 256 MB and a byte, refused at --max-size (64 MB, then 256 MB).
            line = log + b"x" * ((256 << 20) + 1) + b"\n" + log
            for mb in (64, 256):
                shape("line over --max-size", [(f"{mb} MB", mb, writer(lambda: line))],
                      lambda path, mb=mb: diff(path) + ["--max-size", str(mb << 20)],
                      args.runs, folder)
        if "width" in only and (ROOT / "tests" / "wide_plans.py").is_file():
            from tests import wide_plans

            for view in (["--side-by-side"], ["--format", "html"]):
                shape(f"union width {' '.join(view)}", [
                    (f"{n}", n, lambda path, n=n: path.write_text(wide_plans.wide_union(n)))
                    for n in (2500, 5000, 10000, 20000, 40000)],
                    lambda path, view=view: [args.cli, "diff", str(path), *view, "-o",
                                             os.devnull], args.runs, folder)


if __name__ == "__main__":
    main()
