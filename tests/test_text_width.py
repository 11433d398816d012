"""Every command's text for people fits the width it is given, `--width 80` or `COLUMNS=80`
(standard output not a terminal): no line of `why`, `diff`, `check`, `parse` or `compare`
is wider, unless it is one word too long for any line (cut, it would read as two), or, in a
tree or side by side, one such word a column. Run on every sample input (each scenario's
plan texts, driver log and event log, both Spark lines) at COLUMNS=80, on each scenario's
formatted plan and event log with `--width 80` (the same writers, the width from the
option), and on the sample pairs of runs compared."""

from __future__ import annotations

import io
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import List

import pytest

from aqe_inspect.cli import main

from .conftest import ROOT, SAMPLE_PLANS

WIDTH = 80
VERSIONS = ("spark-3.5.9", "spark-4.3.0")
#: The commands run on each sample input, and the options they are run with (`parse` has no
#: `--width`: only COLUMNS).
COMMANDS = {
    "why": ["why"],
    "diff": ["diff"],
    "diff-tree": ["diff", "--tree"],
    "diff-side-by-side": ["diff", "--side-by-side"],
    "check": ["check", "--expect", "coalesced"],
    "parse": ["parse"],
}


#: A tree's guides: what separates the columns of a tree or side-by-side line.
GUIDES = re.compile("[\u2502\u251c\u2514\u2500]+")
#: The depth a tree too deep for the width shows instead of its guides (`57:`).
DEPTH = re.compile(r"^\s*\d+:")


def inputs(version: str, every: bool = True) -> List[Path]:
    """The sample inputs of `version`: each scenario's plan texts, driver log and event log,
    or (not `every`) its formatted plan and event log."""
    found = []
    for scenario in sorted((SAMPLE_PLANS / version).iterdir()):
        if scenario.is_dir():
            plans = sorted(scenario.glob("*.txt")) if every else \
                [scenario / "formatted_after.txt"]
            found += [path for path in (*plans, scenario / "driver.log",
                                        scenario / "eventlog.zstd")
                      if path.is_file() and (every or path.name != "driver.log")]
    return found


def unbreakable(line: str) -> bool:
    """A line no wrapping could make narrower: one word alone after its indent (a path too
    long for the room a hanging indent leaves), or a word wider than the whole width. In a
    tree's or a side-by-side column a word wider than the column is cut, so a line of two
    columns is never wider for it."""
    rest = GUIDES.sub(" ", DEPTH.sub("", line)).split()
    return len(rest) == 1 or any(len(word) > WIDTH for word in rest)


def too_wide(args: List[str]) -> List[str]:
    """The lines of the command's standard output wider than WIDTH that are not one word
    (`check`'s and `compare`'s verdict, their last line, included)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(args)
    assert code in (0, 1), (args, code, err.getvalue())
    printed = out.getvalue().splitlines()
    return [line for line in printed if len(line) > WIDTH and not unbreakable(line)]


def over(args: List[str], with_option: bool, monkeypatch) -> List[str]:
    if with_option:
        monkeypatch.setenv("COLUMNS", "200")  # the option wins over the environment
        return too_wide([*args, "--width", str(WIDTH)])
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    return too_wide(args)


# parse prints at the terminal's width (it has no --width): COLUMNS only.
@pytest.mark.parametrize("command,with_option", [
    (command, with_option) for command in sorted(COMMANDS) for with_option in (False, True)
    if not (command == "parse" and with_option)],
    ids=lambda value: {False: "COLUMNS", True: "--width"}.get(value, value)
    if isinstance(value, bool) else value)
@pytest.mark.parametrize("version", VERSIONS)
def test_sample_inputs_fit_the_width(command, version, with_option, monkeypatch):
    monkeypatch.chdir(ROOT)
    paths = inputs(version, every=not with_option)
    assert len(paths) > 40, f"the samples of {version} are missing"
    wide = {}
    for path in paths:
        name, *options = COMMANDS[command]
        lines = over([name, str(path.relative_to(ROOT)), *options], with_option, monkeypatch)
        if lines:
            wide[str(path)] = max(lines, key=len)
    assert not wide, f"{len(wide)} input(s) print lines wider than {WIDTH}, e.g. " \
        f"{sorted(wide.items())[:3]}"


@pytest.mark.parametrize("with_option", [False, True], ids=["COLUMNS", "--width"])
@pytest.mark.parametrize("version", VERSIONS)
def test_compared_runs_fit_the_width(version, with_option, monkeypatch):
    monkeypatch.chdir(ROOT)
    runs = sorted((SAMPLE_PLANS / "compare" / version).glob("*.zstd"))
    assert len(runs) > 2, f"the compared runs of {version} are missing"
    baseline = SAMPLE_PLANS / "compare" / version / "baseline.zstd"
    wide = {}
    for run in runs:
        for old, new in ((baseline, run), (run, baseline)):
            args = ["compare", str(old.relative_to(ROOT)), str(new.relative_to(ROOT)),
                    "--fail-on", "none"]
            lines = over(args, with_option, monkeypatch)
            if lines:
                wide[f"{old.name} -> {new.name}"] = max(lines, key=len)
    assert not wide, f"{len(wide)} comparison(s) print lines wider than {WIDTH}, e.g. " \
        f"{sorted(wide.items())[:3]}"


def test_unbreakable_lines_are_told_apart():
    long = "CachedRDDBuilder(org.apache.spark.sql.execution.columnar." + "x" * 40
    assert unbreakable(f"  {long}")
    assert unbreakable(f"19:      │      {long}")
    assert unbreakable("     sample_plans/spark-3.5.9/dynamic_partition_pruning_off/formatted_before.txt:1,")
    assert not unbreakable("  hashpartitioning(_groupingexpression#380L, │   b(2," + " " * 40)
    assert not unbreakable("  happened     AQEShuffleRead (6) coalesces")


@pytest.mark.parametrize("with_option", [False, True], ids=["COLUMNS", "width="])
def test_fleet_text_summary_fits_the_width(with_option, monkeypatch, capsys):
    """The fleet scan's text summary (its rows made as the fleet job makes them, from each
    sample event log: no PySpark needed), written by `api.write` as the command does."""
    from aqe_inspect import api
    from aqe_inspect.fleet.table import row_from_report
    from aqe_inspect.rewrites.engine import diff_queries
    from aqe_inspect.sources.routing import read_input

    rows = []
    for version in VERSIONS:
        for scenario in sorted((SAMPLE_PLANS / version).iterdir()):
            logs = [scenario / name for name in ("eventlog.zstd", "eventlog.json")
                    if (scenario / name).is_file()]
            for path in logs[:1]:
                stream = read_input(str(path))
                rows += [row_from_report(report, str(path), stream.application)
                         for report in diff_queries(stream.queries)]
    assert len(rows) > 40
    monkeypatch.setenv("COLUMNS", "200" if with_option else str(WIDTH))
    api.write(api.FleetResult(rows, "fleet-out"), width=WIDTH if with_option else None)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) > 10
    wide = [line for line in printed if len(line) > WIDTH and not unbreakable(line)]
    assert not wide, wide[:3]


def test_why_at_the_narrowest_width_keeps_its_words_apart(monkeypatch):
    """At `--width 20` the kind and verdict columns take lines of their own rather than
    running into the text beside them."""
    monkeypatch.chdir(ROOT)
    log = "sample_plans/spark-3.5.9/skew_join/eventlog.zstd"
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        assert main(["why", log, "--width", "20"]) == 0
    printed = out.getvalue().splitlines()
    assert [line for line in printed if len(line) > 20 and not unbreakable(line)] == []
    words = {word for line in printed for word in line.split()}
    assert {"coalesced", "skew-join", "happened", "blocked"} <= words
