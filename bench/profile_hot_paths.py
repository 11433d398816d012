"""Where the time of each input of issue 38 goes: the whole run against grep, then a profile.

    python bench/profile_hot_paths.py [--cache DIR] [--only single,mixed,driver,production,corpus]
                                      [--runs 2] [--top 15] [--report FILE]
                                      [--single-mb 1024] [--mixed-mb 1024] [--driver-mb 100]
                                      [--production-mb 1024] [--corpus DIR]

The inputs, at the issue's sizes by default (each profiles in under a minute on a 2-core
machine; smaller sizes for a quicker look), built once and kept in `--cache` (a temporary
folder, never the checkout):

- single: an event log of one query repeated (`eventlog_build.build` of the 4.3 `five_way_join`
  run, ids renumbered per copy);
- mixed: an event log of every plain 4.3 sample application in turn (`eventlog_build.build_mixed`);
- driver: a plan-dense driver log, every sample driver log in turn (`driverlog_build.build`);
- production: a production-shaped driver log, plans about 2% of the bytes and the sample logs'
  own ordinary lines between them (`driverlog_build.build_production`);
- corpus: `parse --format json` of every explain.txt of ../shared/corpus/spark-golden/ (the
  command's body, `api.write(api.read_document(PATH), "json")`, in one process: typer's reading
  of the arguments would be half of a profile of 488 small files), with the parser alone
  (`parse_text`, bench/run.py's throughput figure) beside it; skipped with a note when the
  corpus is absent.

For each input, taken `--runs` times and the fastest kept (the machine is shared):

- the baseline: `grep -c` over the same file(s) (median after a warm-up, as bench/eventlog.py);
- the whole process: `aqe-inspect diff LOG --format json` (its pool as it runs), wall time,
  MB/s, the ratio to grep, CPU seconds of every process, peak memory of the largest process
  and of the process tree (sampled from /proc, as bench/eventlog.py). For the corpus, the whole
  loop in one process without the profiler (there is no one command over 488 files);
- the profile: the same command in a fresh process through `aqe_inspect.cli.main`, under
  cProfile, with the event-log pool kept to this one process (`os.cpu_count` seen as 1 there,
  so the workers' share is profiled too), its wall time and peak memory; the top functions by
  own time (tottime) with their share of the profiled time and their calls per MB and per
  thousand input lines (about 1,000 per thousand lines: a per-line function; far more: per
  token or per byte; about the plans' operators: per node), the functions of aqe_inspect by
  cumulative time (the stages), and the time by module, each built-in's time (bytes.find, a
  regex's search) charged to the modules calling it.

cProfile adds a fixed cost to every Python call, so it inflates many small calls more than
long C calls: the shares are those of the profiled run; the whole-process figures are the ones
to quote.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from driverlog_build import build as build_driver  # noqa: E402
from driverlog_build import build_production  # noqa: E402
from eventlog_build import build, build_mixed  # noqa: E402
from run import DEFAULT_CORPUS, wall  # noqa: E402

UPDATE = "SparkListenerSQLAdaptiveExecutionUpdate"
KINDS = ("single", "mixed", "driver", "production", "corpus")
LABELS = {
    "single": "event log, one query repeated (five_way_join, 4.3)",
    "mixed": "event log, every plain 4.3 sample application in turn",
    "driver": "plan-dense driver log, every sample driver log in turn",
    "production": "production-shaped driver log, plans about 2% of the bytes",
    "corpus": "parse --format json over the golden corpus (every explain.txt)",
}


def cli() -> List[str]:
    """The aqe-inspect of this Python (its venv's script), else `python -m aqe_inspect`."""
    script = Path(sys.executable).parent / "aqe-inspect"
    return [str(script)] if script.exists() else [sys.executable, "-m", "aqe_inspect"]


def inputs(args) -> Dict[str, List[Path]]:
    """Each input asked for, built into the cache when not there."""
    cache, only = args.cache, set(args.only.split(","))
    cache.mkdir(parents=True, exist_ok=True)
    made: Dict[str, List[Path]] = {}
    mb = 1024 * 1024
    if "single" in only:
        source = ROOT / "sample_plans" / "spark-4.3.0" / "five_way_join" / "eventlog.json"
        path = cache / f"single-{int(args.single_mb)}mb.json"
        if not path.exists():
            copies, _ = build(source, path, int(args.single_mb * mb))
            print(f"built {path}: {copies} copies of {source.name}", file=sys.stderr)
        made["single"] = [path]
    if "mixed" in only:
        sources = sorted((ROOT / "sample_plans" / "spark-4.3.0").glob("*/eventlog.json"))
        path = cache / f"mixed-{int(args.mixed_mb)}mb.json"
        if not path.exists():
            count, _ = build_mixed(sources, path, int(args.mixed_mb * mb))
            print(f"built {path}: {count} bodies of {len(sources)} logs", file=sys.stderr)
        made["mixed"] = [path]
    if "driver" in only:
        path = cache / f"driver-{int(args.driver_mb)}mb.log"
        if not path.exists():
            copies, _ = build_driver(path, int(args.driver_mb * mb))
            print(f"built {path}: {copies} copies of the sample driver logs", file=sys.stderr)
        made["driver"] = [path]
    if "production" in only:
        path = cache / f"production-{int(args.production_mb)}mb.log"
        if not path.exists():
            count, written, planned = build_production(path, int(args.production_mb * mb))
            print(f"built {path}: {count} sample logs, {planned / written:.1%} plan-bearing",
                  file=sys.stderr)
        made["production"] = [path]
    if "corpus" in only:
        if args.corpus.is_dir():
            made["corpus"] = sorted(args.corpus.rglob("explain.txt"))
        else:
            print(f"corpus: skipped, no corpus at {args.corpus}", file=sys.stderr)
    return made


def baseline(kind: str, files: List[Path], runs: int) -> float:
    word = UPDATE if kind in ("single", "mixed") else "Exchange"
    return wall(["grep", "-c", word, *map(str, files)], max(runs, 3))


# ---- the whole process ---------------------------------------------------------------------------

def _tree(pid: int) -> List[int]:
    """A process and every process below it, from /proc."""
    children: Dict[int, List[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    parent = int(handle.read().rsplit(b")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(children.get(current, ()))
    return found


def _memory(pid: int):
    """(resident now, peak resident: VmHWM) of a process, in bytes; zeros when it is gone."""
    now = peak = 0
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmRSS:"):
                    now = int(line.split()[1]) * 1024
                elif line.startswith(b"VmHWM:"):
                    peak = int(line.split()[1]) * 1024
    except OSError:
        pass
    return now, peak


def run_whole(argv: List[str], out: Path):
    """Run `argv`, its standard output to `out`: (wall seconds, CPU seconds of every process,
    peak memory of its largest process, peak memory of its process tree). Memory is sampled
    from /proc every 20 ms (each process's own high-water mark, VmHWM, and the tree's sum of
    resident memory), so a process that ran before in this bench does not count (as the
    children's getrusage high-water mark would)."""
    import threading

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_before = usage.ru_utime + usage.ru_stime
    largest = tree = 0
    with out.open("wb") as sink:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE)
        done = threading.Event()

        def sample():
            nonlocal largest, tree
            while not done.wait(0.02):
                figures = [_memory(pid) for pid in _tree(process.pid)]
                tree = max(tree, sum(now for now, _ in figures))
                largest = max([largest, *(peak for _, peak in figures)])

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, stderr = process.communicate()
        elapsed = time.perf_counter() - started
        done.set()
        sampler.join()
    if process.returncode not in (0, 1):
        raise SystemExit(f"aqe-inspect failed: {stderr.decode(errors='replace')}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, usage.ru_utime + usage.ru_stime - cpu_before, largest, tree


# ---- the profiled run, in a process of its own ---------------------------------------------------

def profile_one(kind: str, files: List[Path], stats_out: Optional[Path], out: Path) -> dict:
    """The command of one input under cProfile in this process: its figures, the stats saved
    to `stats_out` (kept in memory only when it is None)."""
    os.cpu_count = lambda: 1  # the event-log pool kept to this process: all of it profiled
    os.environ.setdefault("NO_COLOR", "1")
    from aqe_inspect import cli as command

    if kind == "corpus":
        parse_json(files[0])  # the parser's tables loaded outside the profile, as unprofiled
    profiler = cProfile.Profile()
    started, cpu = time.perf_counter(), time.process_time()
    profiler.enable()
    if kind == "corpus":
        for path in files:
            parse_json(path)
    else:
        code = command.main(["diff", str(files[0]), "--format", "json", "--output", str(out)])
        if code not in (0, 1):
            raise SystemExit(f"diff {files[0]} failed ({code})")
    profiler.disable()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    if stats_out is not None:
        profiler.dump_stats(str(stats_out))
    return {"seconds": seconds, "cpu": cpu,
            "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def parse_json(path: Path) -> None:
    """`aqe-inspect parse PATH --format json`: the command's body (cli.parse), without typer's
    reading of the arguments, which costs some 10 ms a call (typing.get_type_hints of every
    command) and would be most of the profile of 488 small files."""
    from aqe_inspect import api

    api.write(api.read_document(str(path)), "json")


def unprofiled_corpus(files: List[Path], out: Path) -> dict:
    """The corpus loop in this process without the profiler: the whole-process figure of the
    corpus (start-up excluded, as bench/run.py's throughput)."""
    os.environ.setdefault("NO_COLOR", "1")
    parse_json(files[0])  # warm
    started, cpu = time.perf_counter(), time.process_time()
    for path in files:
        parse_json(path)
    figures = {"seconds": time.perf_counter() - started, "cpu": time.process_time() - cpu,
               "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    # bench/run.py's throughput figure (the "parse over the golden corpus"): the
    # parser alone over the texts already read.
    from aqe_inspect.parsing import parse_text

    texts = [path.read_text("utf-8") for path in files]
    started = time.perf_counter()
    for text in texts:
        parse_text(text)
    figures["parse_text"] = time.perf_counter() - started
    return figures


def child(kind: str, files: List[Path], stats_out: Optional[Path], out: Path) -> dict:
    """Run this script again for one measurement, in a fresh process: (its JSON figures)."""
    argv = [sys.executable, __file__, "--child", kind, "--child-out", str(out)]
    if stats_out is not None:
        argv += ["--child-stats", str(stats_out)]
    argv += ["--child-files", *map(str, files)]
    with out.open("wb") as sink:  # what parse writes to standard output
        done = subprocess.run(argv, stdout=sink, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the {kind} run failed:\n{done.stderr}")
    return json.loads(out.with_name(out.name + ".figures").read_text())


# ---- the report ----------------------------------------------------------------------------------

def _where(key) -> str:
    filename, line, name = key
    if filename == "~":
        return name  # a built-in: <method 'find' of 'bytes' objects>
    path = Path(filename)
    parts = path.parts
    if "aqe_inspect" in parts:
        shown = "/".join(parts[parts.index("aqe_inspect") + 1:])
    elif "site-packages" in parts:
        shown = "/".join(parts[parts.index("site-packages") + 1:])
    else:
        shown = path.name
    return f"{shown}:{line} {name}"


def _module(key) -> str:
    filename, _, name = key
    if filename == "~":
        return "(built-in)"
    parts = Path(filename).parts
    if "aqe_inspect" in parts:
        return "aqe_inspect/" + "/".join(parts[parts.index("aqe_inspect") + 1:])
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1]
    return Path(filename).name


def by_module(rows, per_call: float = 0.0) -> Dict[str, List[float]]:
    """Per module: [own time of its Python functions, time of the built-ins it called (bytes.find,
    re's match, len...: a built-in's own time split among its callers in proportion to the time
    of each caller's calls)]. With `per_call`, each function's own time less that much a call
    (the profiler's own cost, `unprofiled_own`)."""
    modules: Dict[str, List[float]] = defaultdict(lambda: [0.0, 0.0])
    for key, (_, calls, own, _, callers) in rows.items():
        own = max(own - calls * per_call, 0.0)
        if _module(key) != "(built-in)" or not callers:
            modules[_module(key)][0] += own
            continue
        spent = sum(figures[2] for figures in callers.values()) or 1.0
        for caller, figures in callers.items():
            modules[_module(caller)][1] += own * figures[2] / spent
    return modules


#: The parts of the work a compiled core could take, by the modules doing it (first match).
GROUPS = (
    ("driver-log skim", ("aqe_inspect/sources/skim.py",)),
    ("line walk (logical_lines, find_plans, headings)",
     ("aqe_inspect/sources/lines.py", "aqe_inspect/sources/extract.py",
      "aqe_inspect/sources/__init__.py", "aqe_inspect/sources/reading.py")),
    ("plan-change log reader", ("aqe_inspect/sources/planchange.py",
                                "aqe_inspect/sources/filebytes.py")),
    ("operator-line and detail-block lexer", ("aqe_inspect/parsing/lexer.py",
                                              "aqe_inspect/parsing/operator_line.py")),
    ("parser and tree builder", ("aqe_inspect/parsing/", "aqe_inspect/plan/model.py", "lark")),
    ("event-log line scanner and event decoding", ("aqe_inspect/sources/eventlog/events.py",
                                                   "aqe_inspect/sources/eventlog/deepjson.py",
                                                   "aqe_inspect/sources/eventlog/codecs.py",
                                                   "aqe_inspect/sources/eventlog/files.py")),
    ("metrics walk", ("aqe_inspect/sources/eventlog/planinfo.py",
                      "aqe_inspect/sources/eventlog/runtime.py")),
    ("assemble", ("aqe_inspect/sources/assemble.py",)),
    ("detectors and alignment (the diff)", ("aqe_inspect/rewrites/", "aqe_inspect/plan/",
                                            "aqe_inspect/whynot/")),
    ("report JSON", ("aqe_inspect/formats/",)),
)


def group_of(module: str) -> str:
    # The formatted-plan builder is in parsing/: its own group, before the parser's.
    if module == "aqe_inspect/parsing/formatted_plan.py":
        return "formatted-plan builder"
    for name, prefixes in GROUPS:
        if module.startswith(prefixes):
            return name
    return "the rest (start-up, imports, CLI, stdlib)"


def top(stats_path: Path, count: int, megabytes: float, lines: int, out=sys.stdout,
        unprofiled: float = 0.0) -> None:
    """The tables of one profile. With `unprofiled` (the CPU seconds of the same work without
    the profiler), each part's share is also estimated as it would be unprofiled (cProfile's
    cost is about the same for every call, Python's
    and for built-ins alike: the profiled total less the unprofiled one, spread evenly over
    every call the profile counted, is taken off each function's own time)."""
    stats = pstats.Stats(str(stats_path), stream=io.StringIO())
    rows = stats.stats  # key -> (primitive calls, calls, tottime, cumtime, callers)
    total = sum(row[2] for row in rows.values())
    print(f"\nTop {count} functions by own time (of {total:.2f} s profiled):\n", file=out)
    print("| function | own s | share | cum s | calls | per MB | per 1k lines |", file=out)
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |", file=out)
    for key, (_, calls, own, cum, _) in sorted(rows.items(), key=lambda r: -r[1][2])[:count]:
        print(f"| `{_where(key)}` | {own:.2f} | {own / total:.1%} | {cum:.2f} | {calls:,} | "
              f"{calls / megabytes:,.0f} | {calls / lines * 1000:,.0f} |", file=out)
    print(f"\nTop {count} functions of aqe_inspect by cumulative time (the stages):\n",
          file=out)
    print("| function | cum s | share | own s | calls |", file=out)
    print("| --- | ---: | ---: | ---: | ---: |", file=out)
    ours = [(key, row) for key, row in rows.items() if "aqe_inspect" in Path(key[0]).parts
            and not key[0].endswith(("cli.py", "api.py", "__main__.py"))]
    for key, (_, calls, own, cum, _) in sorted(ours, key=lambda r: -r[1][3])[:count]:
        print(f"| `{_where(key)}` | {cum:.2f} | {cum / total:.1%} | {own:.2f} | {calls:,} |",
              file=out)
    modules = by_module(rows)
    groups: Dict[str, List[float]] = defaultdict(lambda: [0.0, 0.0])
    for name, (own, called) in modules.items():
        groups[group_of(name)][0] += own
        groups[group_of(name)][1] += called
    # cProfile's cost is about the same for every call it sees, Python's or a built-in's: the
    # profiled total less the unprofiled one, spread over every call, is taken off each
    # function's own time for the estimate (a function of few long calls, bytes.find over
    # megabytes, keeps its time; one of many short calls, len, loses most of it).
    calls = sum(row[1] for row in rows.values())
    per_call = max(total - unprofiled, 0.0) / calls if unprofiled and calls else 0.0
    estimated: Dict[str, List[float]] = defaultdict(lambda: [0.0, 0.0])
    for name, (own, called) in by_module(rows, per_call).items():
        estimated[group_of(name)][0] += own
        estimated[group_of(name)][1] += called
    left = sum(map(sum, estimated.values())) or 1.0
    print("\nTime by part of the work (the modules grouped; built-ins charged to callers; the "
          f"estimate without the profiler takes {per_call * 1e6:.2f} us off every call):\n",
          file=out)
    print("| part | Python s | built-ins s | share of all | share, estimated unprofiled |",
          file=out)
    print("| --- | ---: | ---: | ---: | ---: |", file=out)
    for name, (own, called) in sorted(groups.items(), key=lambda g: -sum(g[1])):
        print(f"| {name} | {own:.2f} | {called:.2f} | {(own + called) / total:.1%} | "
              f"{sum(estimated[name]) / left:.1%} |", file=out)
    print("\nTime by module: its Python functions' own time, and the built-ins it called:\n",
          file=out)
    print("| module | Python s | built-ins s | share of all |", file=out)
    print("| --- | ---: | ---: | ---: |", file=out)
    for name, (own, called) in sorted(modules.items(), key=lambda m: -sum(m[1]))[:count]:
        print(f"| `{name}` | {own:.2f} | {called:.2f} | {(own + called) / total:.1%} |",
              file=out)


def report(kind: str, files: List[Path], args, out=sys.stdout) -> None:
    size = sum(p.stat().st_size for p in files)
    megabytes = size / 1e6
    lines = 0
    for path in files:
        with path.open("rb") as handle:
            while True:
                block = handle.read(1 << 24)
                if not block:
                    break
                lines += block.count(b"\n")
    grep = baseline(kind, files, args.runs)
    scratch = args.cache / f"report-{kind}.json"
    whole, parse_only = [], float("inf")
    for _ in range(args.runs):
        if kind == "corpus":
            figures = child("corpus-plain", files, None, scratch)
            whole.append((figures["seconds"], figures["cpu"], figures["peak"], figures["peak"]))
            parse_only = min(parse_only, figures["parse_text"])
        else:
            whole.append(run_whole([*cli(), "diff", str(files[0]), "--format", "json"],
                                   scratch))
    seconds, cpu, largest, tree = min(whole)
    profiles = []
    for run in range(args.runs):
        stats_path = args.cache / f"profile-{kind}-{run}.pstats"
        profiles.append((child(kind, files, stats_path, scratch), stats_path))
    best, stats_path = min(profiles, key=lambda p: p[0]["seconds"])
    load = os.getloadavg()[0]
    profiled = [(figures["seconds"],) for figures, _ in profiles]
    name = files[0].name if len(files) == 1 else f"{len(files)} files"
    print(f"\n### {kind}: {LABELS[kind]}\n", file=out)
    print(f"{megabytes:.0f} MB ({name}), {lines:,} lines; load average {load:.1f} after; "
          f"fastest of {args.runs} runs each (all runs: whole "
          f"{', '.join(f'{w[0]:.2f}' for w in whole)} s; profiled "
          f"{', '.join(f'{figures[0]:.2f}' for figures in profiled)} s)\n", file=out)
    print("| figure | value |", file=out)
    print("| --- | ---: |", file=out)
    what = "in one process, no start-up" if kind == "corpus" else "whole process, its pool"
    print(f"| grep -c over the same bytes | {grep:.3f} s |", file=out)
    print(f"| aqe-inspect, {what} | {seconds:.2f} s = {seconds / grep:.1f}x grep, "
          f"{megabytes / seconds:.1f} MB/s |", file=out)
    if kind == "corpus":
        print(f"| the parser alone (`parse_text` of the texts read, as bench/run.py) | "
              f"{parse_only:.2f} s = {megabytes / parse_only:.1f} MB/s |", file=out)
    print(f"| CPU of every process | {cpu:.2f} s ({megabytes / cpu:.1f} MB/s of CPU) |", file=out)
    print(f"| peak memory, largest process / process tree | {largest / 1e6:.0f} / "
          f"{tree / 1e6:.0f} MB |", file=out)
    print(f"| profiled, one process (cProfile) | {best['seconds']:.2f} s wall, {best['cpu']:.2f} s "
          f"CPU ({best['cpu'] / cpu:.1f}x the unprofiled CPU), peak {best['peak'] / 1e6:.0f} MB |",
          file=out)
    # The unprofiled CPU of the same work in one process: the driver logs' and the corpus's
    # runs are one process; the event logs' pool adds its own costs (pickles, a second
    # interpreter), so their estimate leans on the side of the built-ins.
    top(stats_path, args.top, megabytes, lines, out, cpu)
    out.flush()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "aqe-inspect-profile")
    parser.add_argument("--only", default=",".join(KINDS))
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--report", type=Path, help="also write the report (Markdown) here")
    parser.add_argument("--single-mb", type=float, default=1024)
    parser.add_argument("--mixed-mb", type=float, default=1024)
    parser.add_argument("--driver-mb", type=float, default=100)
    parser.add_argument("--production-mb", type=float, default=1024)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-stats", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-files", nargs="*", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        figures = unprofiled_corpus(args.child_files, args.child_out) \
            if args.child == "corpus-plain" else \
            profile_one(args.child, args.child_files, args.child_stats, args.child_out)
        args.child_out.with_name(args.child_out.name + ".figures").write_text(
            json.dumps(figures))
        return 0
    os.environ.setdefault("NO_COLOR", "1")
    # The package byte-compiled, as installing a wheel does: with PYTHONDONTWRITEBYTECODE set
    # (as on these machines) an editable install compiles every module at every start.
    import compileall

    compileall.compile_dir(str(ROOT / "aqe_inspect"), quiet=1)
    made = inputs(args)
    sink = args.report.open("w") if args.report else None
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start; "
          f"{sys.version.split()[0]}", file=sys.stdout)
    try:
        for kind in KINDS:
            if kind not in made:
                continue
            buffer = io.StringIO()
            report(kind, made[kind], args, buffer)
            sys.stdout.write(buffer.getvalue())
            sys.stdout.flush()
            if sink:
                sink.write(buffer.getvalue())
                sink.flush()
    finally:
        if sink:
            sink.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
