"""The worst input shapes for aqe-inspect, and how its time and memory grow with them.

    python bench/shapes.py [--size KB] [--runs N] [--shape NAME ...] [--command NAME ...]

Each shape is a plan text that stresses one part of the tool: a very deep tree, a very wide
one, one very long line, lines made to send a backtracking regex into quadratic time, many
joins to pair, many empty relations. Every shape is measured at 1x and 8x its size in the
same run, for each command; the ratio of the two times says whether the work grows
linearly (about 8; up to about 12 is noise and start-up effects, beyond 16 it is not linear).
Times are the command's own work inside a fresh interpreter (start-up and Lark's table
loading excluded), so small sizes are not hidden under start-up. The peak memory of the
8x run is that of a separate run of the real CLI as a subprocess
(`getrusage(RUSAGE_CHILDREN).ru_maxrss`), beside `grep -c x` over the same file.

The generators are importable (`tests/test_robustness.py` checks the tool's answers on
small sizes of every shape); speed goals live here, as ratios, never as timed unit tests.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
KB = 1024
MB = 1024 * 1024

PHYSICAL = "== Physical Plan ==\n"


# ---- shapes: each takes a size in bytes and returns a plan text of about that size ----------

def deep(size: int) -> str:
    """One chain of Project operators, each a level below the last (simple mode)."""
    levels, total = 1, 0
    while total < size:  # a level's line grows by three characters of indentation
        total += 3 * levels + 30
        levels += 1
    return deep_levels(levels)


def deep_levels(levels: int) -> str:
    """A simple-mode plan `levels` operators deep."""
    lines = [PHYSICAL.rstrip("\n"), "*(1) Project [a#1L, b#2L]"]
    lines.extend("   " * level + "+- *(1) Project [a#1L, b#2L]" for level in range(levels - 2))
    lines.append("   " * max(0, levels - 2) + "+- *(1) Range (0, 10, step=1, splits=2)")
    return "\n".join(lines) + "\n"


def wide(size: int) -> str:
    """A Union of many scans in formatted mode: many siblings, many detail blocks."""
    tree, blocks, total, count = [], [], 0, 0
    while total < size:
        count += 1
        tree.append(f":- * LocalTableScan ({count})")
        block = (f"({count}) LocalTableScan [codegen id : {count}]\n"
                 f"Output [2]: [a#{count}L, b#{count}L]\n"
                 f"Arguments: [a#{count}L, b#{count}L]\n")
        blocks.append(block)
        total += len(tree[-1]) + len(block) + 2
    tree[-1] = "+-" + tree[-1][2:]
    root = count + 1
    blocks.append(f"({root}) Union\n" + "Output [2]: [a#1L, b#1L]\n")
    return (PHYSICAL + f"Union ({root})\n" + "\n".join(tree) + "\n\n\n"
            + "\n".join(blocks))


def long_line(size: int) -> str:
    """One operator whose argument list is the whole size (simple mode)."""
    columns, total, index = [], 0, 0
    while total < size:
        column = f"c{index}#{index}L"
        columns.append(column)
        total += len(column) + 2
        index += 1
    return (PHYSICAL + f"*(1) Project [{', '.join(columns)}]\n"
            "+- *(1) Range (0, 10, step=1, splits=2)\n")


def redos_spaces(size: int) -> str:
    """Long runs of spaces before a non-space: in a detail heading, a tree line, a field."""
    run = " " * max(1, size // 4)
    return (PHYSICAL
            + "* Project (2)\n"
            + f"+- * Range{run}x (1)\n\n\n"
            + "(1) Range [codegen id : 1]\n"
            + f"Output{run}x [1]: [id#0L]\n\n"
            + f"(2) Project{run}x\n"
            + f"Output [1]: [id#0L]{run}x\n")


def redos_statistics(size: int) -> str:
    """`, Statistics(` repeated without a closing `)`: on a simple-mode line and after the id
    of a formatted one."""
    repeat = ", Statistics(" * max(1, size // (2 * len(", Statistics(")))
    return (PHYSICAL + f"*(1) Project [a#1L]{repeat}x\n"
            + "+- *(1) Range (0, 10, step=1, splits=2)\n\n"
            + PHYSICAL + f"ShuffleQueryStage (1){repeat}x\n\n\n"
            + "(1) ShuffleQueryStage\nOutput [1]: [a#1L]\nArguments: 0\n")


def redos_digits(size: int) -> str:
    """A long run of digits in an exchange's partitioning, read by the coalesced detector."""
    digits = "1" * max(1, size // 2)
    return (PHYSICAL + "AdaptiveSparkPlan isFinalPlan=true\n"
            + "+- == Final Plan ==\n"
            + "   AQEShuffleRead coalesced\n"
            + "   +- ShuffleQueryStage 0\n"
            + f"      +- Exchange hashpartitioning(k#1L, {digits}x), ENSURE_REQUIREMENTS\n"
            + "         +- LocalTableScan [k#1L]\n"
            + "+- == Initial Plan ==\n"
            + f"   Exchange hashpartitioning(k#1L, {digits}x), ENSURE_REQUIREMENTS\n"
            + "   +- LocalTableScan [k#1L]\n")


def _join_union(joins: List[Tuple[str, str, str]], indent: str) -> List[str]:
    """A Union of `(operator line, left leaf, right leaf)` joins, printed at `indent`."""
    lines = [indent + "Union"]
    for index, (join, left, right) in enumerate(joins):
        glyph, bar = (":- ", ":  ") if index < len(joins) - 1 else ("+- ", "   ")
        lines.append(f"{indent}{glyph}{join}")
        lines.append(f"{indent}{bar}:- {left}")
        lines.append(f"{indent}{bar}+- {right}")
    return lines


def many_joins(size: int) -> str:
    """Many sort-merge joins in the initial plan, each a broadcast hash join on the same keys
    in the final plan (printed in the opposite order): the join-switch pairing."""
    count = max(1, size // 260)
    initial = [(f"SortMergeJoin [k#{i}L], [k#{i + count}L], Inner",
                f"LocalTableScan [k#{i}L]", f"LocalTableScan [k#{i + count}L]")
               for i in range(count)]
    final = [(f"BroadcastHashJoin [k#{i}L], [k#{i + count}L], Inner, BuildRight, false",
              f"LocalTableScan [k#{i}L]", f"LocalTableScan [k#{i + count}L]")
             for i in reversed(range(count))]
    return "\n".join([
        PHYSICAL.rstrip("\n"), "AdaptiveSparkPlan isFinalPlan=true", "+- == Final Plan ==",
        *_join_union(final, "   "), "+- == Initial Plan ==", *_join_union(initial, "   "),
    ]) + "\n"


def many_empty(size: int) -> str:
    """Many `LocalTableScan <empty>` in the final plan, none of them in the initial one."""
    count = max(2, size // 80)
    final = [f"LocalTableScan <empty>, [a#{i}L]" for i in range(count)]
    initial = [f"LocalTableScan <empty>, [b#{i}L]" for i in range(count)]

    def union(leaves: List[str]) -> List[str]:
        return ["   Union"] + [f"   {':- ' if i < len(leaves) - 1 else '+- '}{leaf}"
                               for i, leaf in enumerate(leaves)]

    return "\n".join([PHYSICAL.rstrip("\n"), "AdaptiveSparkPlan isFinalPlan=true",
                      "+- == Final Plan ==", *union(final), "+- == Initial Plan ==",
                      *union(initial)]) + "\n"


def many_queries(size: int) -> str:
    """Many small adaptive plans one after the other, as a log of explain calls would hold."""
    sample = ROOT / "sample_plans/spark-3.5.9/smj_to_bhj/simple_after.txt"
    plan = sample.read_text("utf-8").rstrip("\n") + "\n\n"
    return plan * max(1, size // len(plan))


SHAPES: Dict[str, Callable[[int], str]] = {
    "deep": deep,
    "wide": wide,
    "long-line": long_line,
    "redos-spaces": redos_spaces,
    "redos-statistics": redos_statistics,
    "redos-digits": redos_digits,
    "many-joins": many_joins,
    "many-empty": many_empty,
    "many-queries": many_queries,
}

COMMANDS: Dict[str, List[str]] = {
    "parse-tree": ["parse"],
    "parse-json": ["parse", "--format", "json"],
    "diff-text": ["diff"],
    "diff-json": ["diff", "--format", "json"],
}


# ---- measuring ----------------------------------------------------------------------------

#: Run in a fresh interpreter: load everything a command needs (a warm-up on a small plan),
#: then time the command alone, with its output going where a pipe's would.
_TIMED = r"""
import io, json, os, sys, time
os.environ["NO_COLOR"] = "1"
sys.path.insert(0, sys.argv[1])
from aqe_inspect.cli import main
devnull = open(os.devnull, "w", encoding="utf-8")
real_stdout, real_stderr = sys.stdout, sys.stderr
sys.stdout = devnull
for command in (["parse"], ["parse", "--format", "json"], ["diff"], ["diff", "--format", "json"]):
    main([*command, sys.argv[2]])
sys.stderr = io.StringIO()
started = time.perf_counter()
code = main(sys.argv[4:])
seconds = time.perf_counter() - started
sys.stdout, error = real_stdout, sys.stderr.getvalue()
with open(sys.argv[3], "w") as out:
    json.dump({"seconds": seconds, "code": code, "error": error.strip()[:160]}, out)
"""

#: Run the real CLI as a child and report the child's peak memory.
_PEAK = r"""
import resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
seconds = time.perf_counter() - started
print(done.returncode, seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def timed(command: List[str], path: Path, warm: Path) -> dict:
    with tempfile.NamedTemporaryFile("r", suffix=".json") as result:
        subprocess.run([sys.executable, "-c", _TIMED, str(ROOT), str(warm), result.name,
                        *command, str(path)], check=True, env={**os.environ, "NO_COLOR": "1"})
        return json.load(result)


def cli_command() -> List[str]:
    script = shutil.which("aqe-inspect")
    return [script] if script else [sys.executable, "-m", "aqe_inspect"]


def peak(command: List[str], path: Path) -> Tuple[int, float, int]:
    """Exit code, wall seconds and peak RSS in KB of the CLI run as a subprocess."""
    done = subprocess.run([sys.executable, "-c", _PEAK, *cli_command(), *command, str(path)],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "NO_COLOR": "1"})
    code, seconds, rss = done.stdout.split()
    return int(code), float(seconds), int(rss)


def grep_seconds(path: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(["grep", "-c", "x", str(path)], stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(shapes: List[str], commands: List[str], size: int, runs: int) -> None:
    warm = ROOT / "sample_plans/spark-3.5.9/smj_to_bhj/formatted_after.txt"
    print(f"shapes at 1x = {size // KB} KB and 8x = {8 * size // KB} KB; time = best of "
          f"{runs} runs of the command's own work; peak memory and wall time of the CLI "
          "as a subprocess at 8x; linear means 8x/1x about 8")
    header = (f"{'shape':17s} {'command':11s} {'1x s':>7s} {'8x s':>7s} {'ratio':>6s} "
              f"{'s/MB':>6s} {'wall 8x':>7s} {'peak MB':>7s} {'grep 8x':>8s}  verdict")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as folder:
        for shape in shapes:
            small, big = Path(folder, f"{shape}-1x.txt"), Path(folder, f"{shape}-8x.txt")
            small.write_text(SHAPES[shape](size), "utf-8")
            big.write_text(SHAPES[shape](8 * size), "utf-8")
            megabytes = big.stat().st_size / MB
            grep = grep_seconds(big, runs)
            for name in commands:
                command = COMMANDS[name]
                ones = [timed(command, small, warm) for _ in range(runs)]
                eights = [timed(command, big, warm) for _ in range(runs)]
                # The best of the runs: what the work costs when nothing else competes.
                one = min(r["seconds"] for r in ones)
                eight = min(r["seconds"] for r in eights)
                code, wall, rss = peak(command, big)
                ratio = eight / one if one > 0 else float("inf")
                codes = {r["code"] for r in ones + eights} | {code}
                verdict = "ok" if ratio <= 12 else ("NOT LINEAR" if ratio > 16 else "check")
                if eight / megabytes > 1.0:
                    verdict += ", OVER 1 s/MB"
                if codes - {0}:  # the times are those of failing runs: they say nothing
                    errors = {r["error"] for r in ones + eights if r["code"]}
                    verdict = f"FAILS, exit {sorted(codes)}: {'; '.join(sorted(errors))[:110]}"
                print(f"{shape:17s} {name:11s} {one:7.3f} {eight:7.3f} {ratio:6.1f} "
                      f"{eight / megabytes:6.2f} {wall:7.2f} {rss / 1024:7.0f} "
                      f"{grep * 1000:6.1f}ms  {verdict}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="the 1x size in KB (default 256)")
    parser.add_argument("--runs", type=int, default=3, help="runs per size (the best; default 3)")
    parser.add_argument("--shape", action="append", choices=sorted(SHAPES),
                        help="only this shape (repeatable)")
    parser.add_argument("--command", action="append", choices=sorted(COMMANDS),
                        help="only this command (repeatable)")
    args = parser.parse_args()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    measure(args.shape or list(SHAPES), args.command or list(COMMANDS), args.size * KB,
            args.runs)


if __name__ == "__main__":
    main()
