"""How hostile input costs grow: each figure at 1x and 8x its size in one run, as a ratio
(linear is about 8; past 16 it is not linear), beside a baseline where one says something.

    python bench/hostile_growth.py [--runs N]

- regex: a user pattern that backtracks exponentially in Python's `re` (`^(a+)+$`, and
  `(x+x+)+y`) searched by `compile_pattern` (RE2) in a description of 20,000 and 160,000
  characters; Python's `re` on 20 and 24 characters beside it, for scale (each 4 characters
  more is 16 times the time: it is never run at the sizes RE2 is).
- deep JSON: a sparkPlanInfo chain 600 and 4,800 operators deep (past json.loads' recursion
  limit) decoded by `deepjson.loads`; the ratio to `json.loads` of a flat document of the
  same size says what the iterative fallback costs per byte.
- conf file: `read_conf_file` of a spark-defaults.conf of 512 KB and 4 MB of properties with
  escapes and continuations.
- driver-log skim: a real sample log with a `Final plan:` message of 2 and 16 MB that never
  ends (lines that start no message), and a line of 32 and 256 MB refused by --max-size of
  its size less one byte; the line route (standard input's) beside the long line, for scale.
- plan-change reader: the hostile shapes of tests/planchange_logs.py at 1x and 8x (markers
  inside a block, bare rule headings, many queries).
- wide plans: the adaptive plan of the `union_of_aggregates` sample with a Union of 500 and
  4,000 branches (tests/wide_plans.py), diffed and written as `diff --side-by-side` and as the
  HTML page (parsed before the clock starts); the same plan written as JSON beside them, for
  scale; an initial plan printed in formatted mode against a final one in simple mode. The
  garbage collector waits while each is timed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent


def best(work: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def verdict(ratio: float) -> str:
    return "ok" if ratio <= 12 else ("NOT LINEAR" if ratio > 16 else "check")


def row(name: str, one: float, eight: float, note: str = "") -> None:
    """A figure at 1x and 8x, judged; with a `note`, a baseline shown for scale, not judged."""
    ratio = eight / one if one > 0 else float("inf")
    print(f"{name:34s} {one * 1000:9.2f} {eight * 1000:9.2f} {ratio:6.1f}  "
          f"{note or verdict(ratio)}", flush=True)


def regex(runs: int) -> None:
    from aqe_inspect.expectations.selection import compile_pattern

    for pattern, unit in (("^(a+)+$", "a"), ("(x+x+)+y", "x")):
        compiled = compile_pattern(pattern, "--query")
        small, big = unit * 20_000 + "!", unit * 160_000 + "!"
        row(f"regex {pattern} 20k/160k chars", best(lambda: compiled.search(small), runs),
            best(lambda: compiled.search(big), runs))
    python = re.compile("^(a+)+$")
    row("python re ^(a+)+$ 20/24 chars", best(lambda: python.search("a" * 20 + "!"), 1),
        best(lambda: python.search("a" * 24 + "!"), 1), "baseline: exponential (16x is 4 chars)")


def chain(depth: int) -> str:
    node = '{"nodeName":"Project","simpleString":"Project [c#1L]","children":['
    leaf = '{"nodeName":"Scan","simpleString":"Scan","children":[]}'
    return node * depth + leaf + "]}" * depth


def deep_json(runs: int) -> None:
    from aqe_inspect.sources import deepjson

    small, big = chain(600), chain(4800)
    one = best(lambda: deepjson.loads(small), runs)
    eight = best(lambda: deepjson.loads(big), runs)
    row("deep JSON 600/4,800 operators", one, eight)
    flat = "[" + ",".join(['{"nodeName":"Project","simpleString":"Project [c#1L]",'
                           '"children":[]}'] * 4800) + "]"
    c_speed = best(lambda: json.loads(flat), runs)
    print(f"{'  against json.loads, flat, same size':34s} {c_speed * 1000:9.2f} "
          f"{eight * 1000:9.2f} {eight / c_speed:6.1f}  (the iterative decoder's cost per byte)")


def conf_file(runs: int) -> None:
    from aqe_inspect.whynot.settings import read_conf_file

    block = ("# a comment\nspark.sql.adaptive.\\u0065nabled = true\n"
             "spark.executor.extraJavaOptions=-Da=1 \\\n    -Db=2\\t\\u00e9\n")
    with tempfile.TemporaryDirectory() as folder:
        small, big = Path(folder, "small.conf"), Path(folder, "big.conf")
        small.write_text(block * (512 * 1024 // len(block)), "utf-8")
        big.write_text(block * (4 * 1024 * 1024 // len(block) - 1), "utf-8")
        row("conf file 512 KB/4 MB", best(lambda: read_conf_file(str(small)), runs),
            best(lambda: read_conf_file(str(big)), runs))


def skim(path: Path, max_size: int, every_line: bool = False) -> None:
    from aqe_inspect.errors import InspectError
    from aqe_inspect.sources.reading import InputReader
    from aqe_inspect.sources.skim import Skimmer

    reader = InputReader(str(path), max_size)
    try:
        for _ in (reader.lines() if every_line else Skimmer(reader).lines()):
            pass
    except InspectError:
        pass


def driver_log_skim(runs: int) -> None:
    log = (ROOT / "sample_plans" / "spark-3.5.9" / "skew_join" / "driver.log").read_bytes()
    body = b"1234 starts like a timestamp, holds (12) and +- glyphs\n"
    final_plan = b"26/11/28 10:00:00 INFO AdaptiveSparkPlanExec: Final plan:\n"
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for megabytes in (2, 16):
            paths[megabytes] = Path(folder, f"unended-{megabytes}.log")
            paths[megabytes].write_bytes(log + final_plan + body * ((megabytes << 20) // len(body))
                                         + log)
        row("skim: message never ended 2/16 MB", best(lambda: skim(paths[2], 1 << 30), runs),
            best(lambda: skim(paths[16], 1 << 30), runs))
        long = Path(folder, "long.log")
        long.write_bytes(log + b"x" * ((256 << 20) + 1) + b"\n" + log)
        one = best(lambda: skim(long, 32 << 20), runs)
        eight = best(lambda: skim(long, 256 << 20), runs)
        row("skim: line over --max-size 32/256 MB", one, eight)
        line_route = best(lambda: skim(long, 256 << 20, every_line=True), runs)
        print(f"{'  against the line route, 256 MB':34s} {line_route * 1000:9.2f} "
              f"{eight * 1000:9.2f} {eight / line_route:6.1f}  (standard input's reader)")


def plan_changes(runs: int) -> None:
    from aqe_inspect.sources import read_document
    from aqe_inspect.sources.planchange import read_events
    from tests.planchange_logs import bare_headings, inside_block, planchange_log

    skew = planchange_log("skew_join").read_bytes()
    row("plan changes: markers in a block 1k/8k", best(lambda: read_events(inside_block(skew, 1000)), runs),
        best(lambda: read_events(inside_block(skew, 8000)), runs))
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for count in (50_000, 400_000):
            paths[count] = Path(folder, f"bare-{count}.log")
            paths[count].write_bytes(bare_headings(skew, count))
        row("plan changes: bare headings 50k/400k",
            best(lambda: read_document(str(paths[50_000]), plan_changes=True), runs),
            best(lambda: read_document(str(paths[400_000]), plan_changes=True), runs))
def wide_plans(runs: int) -> None:
    import gc
    import io

    from aqe_inspect import api
    from tests.wide_plans import wide_union

    small, big = 500, 4000
    texts = {n: (wide_union(n), wide_union(n, "formatted")) for n in (small, big)}

    def written(name: str, view=None, mixed: bool = False) -> Callable[[int], float]:
        chosen = api.report_format(name, view=view, width=100 if view else None)

        def timed(n: int) -> float:
            simple, formatted = texts[n]
            times = []
            for _ in range(runs):
                if mixed:
                    initial, final = api.parse(formatted), api.parse(simple)
                else:
                    document = api.parse(simple)
                gc.collect()
                gc.disable()  # its passes over every object alive are not the work measured
                try:
                    started = time.perf_counter()
                    report = api.diff_pair(initial, final) if mixed else api.diff(document)
                    chosen.write_report(report, io.StringIO())
                    times.append(time.perf_counter() - started)
                finally:
                    gc.enable()
            return min(times)

        return timed

    for label, timed in (("wide Union side-by-side 500/4k", written("text", "side-by-side")),
                         ("wide Union HTML 500/4k", written("html")),
                         ("wide Union JSON 500/4k", written("json")),
                         ("wide Union fmt->simple JSON 500/4k", written("json", mixed=True))):
        row(label, timed(small), timed(big))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per size (the best)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    print(f"{'figure':34s} {'1x ms':>9s} {'8x ms':>9s} {'ratio':>6s}  verdict")
    regex(args.runs)
    deep_json(args.runs)
    conf_file(args.runs)
    driver_log_skim(args.runs)
    plan_changes(args.runs)
    wide_plans(args.runs)


if __name__ == "__main__":
    main()
