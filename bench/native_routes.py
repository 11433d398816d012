"""Issue 38's table, on both routes in one run: the compiled core and its pure-Python twin.

    python bench/native_routes.py [--cache DIR] [--only single,mixed,driver,production,corpus,startup]
                                  [--runs 3] [--report FILE]

Run it with the Python of a venv where a compiled wheel is installed (`pip install .` from the
checkout, or the wheel .ci/run builds): the route is chosen per process by
AQE_INSPECT_PURE_PYTHON, so each input is run as installed (compiled) and with the variable
set (pure), fastest of `--runs` each, and the two outputs are compared byte for byte (`cmp`).

The inputs are bench/profile_hot_paths.py's, built once into `--cache` (never the checkout):
the 1 GB event log of one query repeated, the 1 GB event log of every 4.3 sample application
in turn, the 100 MB plan-dense driver log, the 1 GB production-shaped driver log (plans about
2% of the bytes, the sample logs' own ordinary lines between them), `parse` over the golden
corpus (the parser alone over the texts read, as bench/run.py, and `parse --format json` as a
command's body in one process), and start-up (`--help` against `python -c "import typer"`,
`parse SMALL` against `python -c "import typer, lark"`, medians, interleaved; SMALL is
bench/run.py's, the first sample formatted plan).

Each row: the baseline in the same run (`grep -c` over the same bytes), wall, CPU of every
process, peak memory of the largest process, the ratio or rate the goal is stated in, whether
the goal is met, and whether the routes' outputs are equal.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import profile_hot_paths as hot  # noqa: E402
from run import DEFAULT_CORPUS  # noqa: E402

ROUTES = ("compiled", "pure")
#: The command of each route; `--before PATH` adds a row for another install's aqe-inspect (the
#: code before the compiled core, say), run as it is.
COMMANDS: Dict[str, List[str]] = {}
PURE = "AQE_INSPECT_PURE_PYTHON"
MB = 1024 * 1024
#: The issue's goals on the compiled route: (figure, bound, how it reads).
GOALS = {
    "single": ("ratio", 5.0, "<= 5x grep"),
    "mixed": ("ratio", 5.0, "<= 5x grep"),
    "driver": ("rate", 60.0, ">= 60 MB/s, < 200 MB"),
    "production": ("rate", 500.0, ">= 500 MB/s"),
    "corpus": ("rate", 40.0, ">= 40 MB/s (the parser alone)"),
}


class _Route:
    """The environment of one route for the processes started inside it."""

    def __init__(self, route: str):
        self.route = route

    def __enter__(self):
        self.saved = os.environ.get(PURE)
        os.environ.pop(PURE, None)
        if self.route == "pure":
            os.environ[PURE] = "1"
        return self

    def __exit__(self, *exc):
        os.environ.pop(PURE, None)
        if self.saved is not None:
            os.environ[PURE] = self.saved


def _cli(route: str) -> List[str]:
    return COMMANDS.get(route) or hot.cli()


def _routes() -> List[str]:
    return list(ROUTES) + (["before"] if "before" in COMMANDS else [])


def _version_line(route: str) -> str:
    with _Route(route):
        printed = subprocess.run([*_cli(route), "--version"], capture_output=True, text=True)
    return printed.stdout.strip().replace("\n", "; ")


def whole(kind: str, files: List[Path], runs: int, work: Path) -> Dict[str, dict]:
    """Each route's fastest run of `diff FILE --format json`, its output kept for cmp."""
    found: Dict[str, dict] = {}
    for route in _routes():
        best: Optional[dict] = None
        for attempt in range(runs):
            out = work / f"{kind}-{route}.json"
            with _Route(route):
                seconds, cpu, largest, tree = hot.run_whole(
                    [*_cli(route), "diff", str(files[0]), "--format", "json"], out)
            if best is None or seconds < best["seconds"]:
                best = {"seconds": seconds, "cpu": cpu, "largest": largest, "tree": tree,
                        "out": out}
        found[route] = best
    return found


def corpus(files: List[Path], runs: int, work: Path) -> Dict[str, dict]:
    found: Dict[str, dict] = {}
    for route in ROUTES:
        best: Optional[dict] = None
        for attempt in range(runs):
            out = work / f"corpus-{route}.out"
            with _Route(route):
                figures = hot.child("corpus-plain", files, None, out)
            figures["out"] = out
            if best is None or figures["parse_text"] < best["parse_text"]:
                best = figures
        found[route] = best
    return found


def startup(runs: int, small: Path) -> Dict[str, dict]:
    """Medians of `runs` interleaved runs of each command and its baseline."""
    python = sys.executable
    commands = {"typer": [python, "-c", "import typer"],
                "typer, lark": [python, "-c", "import typer, lark"]}
    for route in ROUTES:
        commands[f"help {route}"] = [*hot.cli(), "--help"]
        commands[f"parse {route}"] = [*hot.cli(), "parse", str(small)]
    times: Dict[str, List[float]] = {name: [] for name in commands}
    for name, argv in commands.items():  # warm-up (the disk cache, Lark's table cache)
        with _Route("pure" if name.endswith("pure") else "compiled"):
            subprocess.run(argv, capture_output=True)
    for _ in range(runs):
        for name, argv in commands.items():
            with _Route("pure" if name.endswith("pure") else "compiled"):
                started = time.perf_counter()
                subprocess.run(argv, capture_output=True)
                times[name].append(time.perf_counter() - started)
    median = {name: statistics.median(values) for name, values in times.items()}
    return {route: {"help": median[f"help {route}"] / median["typer"],
                    "parse": median[f"parse {route}"] / median["typer, lark"],
                    "help_s": median[f"help {route}"], "parse_s": median[f"parse {route}"]}
            for route in ROUTES} | {"baselines": {"typer": median["typer"],
                                                  "typer, lark": median["typer, lark"]}}


def _outputs(route: str, same: Dict[str, bool]) -> str:
    """The outputs column of a route's row: how its output compares with the compiled one's."""
    if route == "compiled":
        return "cmp-equal to pure" if same["pure"] else "DIFFERS from pure"
    return "cmp-equal to compiled" if same[route] else "differs from compiled"


def _size(files: List[Path]) -> float:
    return sum(path.stat().st_size for path in files) / MB


def report(args) -> List[str]:
    made = hot.inputs(args)
    work = Path(tempfile.mkdtemp(prefix="aqe-routes-"))
    lines = [f"routes: compiled = {_version_line('compiled')}; pure = {_version_line('pure')}"
             + (f"; before = {COMMANDS['before'][0]}" if "before" in COMMANDS else ""),
             f"load average before: {os.getloadavg()[0]:.1f}; fastest of {args.runs} runs",
             "",
             "| input | size | grep -c | route | wall | figure | CPU, every process | peak, largest "
             "| goal | met | outputs |",
             "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- | --- | --- |"]
    for kind in ("single", "mixed", "driver", "production"):
        if kind not in made:
            continue
        files = made[kind]
        size = _size(files)
        grep = hot.baseline(kind, files, max(args.runs, 3))
        routes = whole(kind, files, args.runs, work)
        # Each route's output against the compiled route's (the pure route must be equal; an
        # older install may differ where the code changed what it reports).
        same = {route: filecmp.cmp(routes["compiled"]["out"], routes[route]["out"],
                                   shallow=False) for route in routes}
        measure, bound, goal = GOALS[kind]
        for route in _routes():
            run = routes[route]
            ratio, rate = run["seconds"] / grep, size / run["seconds"]
            figure = f"{ratio:.1f}x grep" if measure == "ratio" else f"{rate:.1f} MB/s"
            met = (ratio <= bound) if measure == "ratio" else (rate >= bound)
            if kind == "driver":
                met = met and run["largest"] < 200 * MB
            lines.append(f"| {kind} | {size:,.0f} MB | {grep:.2f} s | {route} | "
                         f"{run['seconds']:.2f} s | {figure} | {run['cpu']:.2f} s | "
                         f"{run['largest'] / MB:.0f} MB | {goal if route == 'compiled' else ('no regression' if route == 'pure' else '')} | "
                         f"{('yes' if met else 'no') if route == 'compiled' else ''} | "
                         f"{_outputs(route, same)} |")
    if "corpus" in made:
        files = made["corpus"]
        size = _size(files)
        routes = corpus(files, args.runs, work)
        equal = filecmp.cmp(routes["compiled"]["out"], routes["pure"]["out"], shallow=False)
        for route in ROUTES:
            run = routes[route]
            rate = size / run["parse_text"]
            lines.append(f"| corpus, parser alone ({len(files)} files) | {size:,.1f} MB | | "
                         f"{route} | {run['parse_text']:.2f} s | {rate:.1f} MB/s | | | "
                         f"{GOALS['corpus'][2] if route == 'compiled' else 'no regression'} | "
                         f"{('yes' if rate >= 40 else 'no') if route == 'compiled' else ''} | "
                         f"{'cmp-equal' if equal else 'DIFFER'} |")
            lines.append(f"| corpus, parse --format json | {size:,.1f} MB | | {route} | "
                         f"{run['seconds']:.2f} s | {size / run['seconds']:.1f} MB/s | "
                         f"{run['cpu']:.2f} s | {run['peak'] / MB:.0f} MB | | | |")
    if "startup" in args.only.split(","):
        small = sorted((HERE.parent / "sample_plans").rglob("formatted_after.txt"))[0]
        figures = startup(max(args.runs, 21), small)
        base = figures.pop("baselines")
        for route in ROUTES:
            run = figures[route]
            lines.append(f"| start-up `--help` vs `import typer` ({base['typer'] * 1000:.0f} ms) | | | "
                         f"{route} | {run['help_s'] * 1000:.0f} ms | {run['help']:.2f}x | | | "
                         f"{'<= 1.2x' if route == 'compiled' else 'no regression'} | "
                         f"{('yes' if run['help'] <= 1.2 else 'no') if route == 'compiled' else ''} | |")
            lines.append(f"| start-up `parse SMALL` vs `import typer, lark` "
                         f"({base['typer, lark'] * 1000:.0f} ms) | | | {route} | "
                         f"{run['parse_s'] * 1000:.0f} ms | {run['parse']:.2f}x | | | "
                         f"{'<= 1.4x' if route == 'compiled' else 'no regression'} | "
                         f"{('yes' if run['parse'] <= 1.4 else 'no') if route == 'compiled' else ''} | |")
    lines.append("")
    lines.append(f"load average after: {os.getloadavg()[0]:.1f}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "aqe-bench-38")
    parser.add_argument("--only", default="single,mixed,driver,production,corpus,startup")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--report", type=Path)
    parser.add_argument("--before", type=Path,
                        help="another install's aqe-inspect script, run as a third row")
    parser.add_argument("--single-mb", type=float, default=1024)
    parser.add_argument("--mixed-mb", type=float, default=1024)
    parser.add_argument("--driver-mb", type=float, default=100)
    parser.add_argument("--production-mb", type=float, default=1024)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args(argv)
    if args.before:
        COMMANDS["before"] = [str(args.before)]
    lines = report(args)
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.report:
        args.report.write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
