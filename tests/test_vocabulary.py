"""One vocabulary in every command and format (the glossary, docs/inputs.md): an event log's
plans are `execution N` (Spark's execution id), a plan text's or driver log's `query N` (its
position in the file); every `line N` and `FILE:N` printed is a line of the file given, and
holds what it points at; a line inside an event log's plan string is said as `plan line N`.

Each command is run on bundled samples (real runs) as a user runs it, wide enough that no
line wraps, and every line number it prints is looked up in the input."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest

from .conftest import AQE_INSPECT, ROOT

S43 = "sample_plans/spark-4.3.0"
S35 = "sample_plans/spark-3.5.9"

#: Inputs whose plans are SQL executions (named by id) and whose plans are strings in JSON.
EXECUTIONS = [
    f"{S43}/broadcast_just_above/eventlog.json",
    f"{S43}/multi_rewrite/eventlog.json",
    f"{S43}/scalar_subquery/eventlog_explain_simple.json",
    f"{S35}/cached_table/eventlog_explain_extended.json",
    f"{S43}/multi_rewrite/history_sql.json",
    f"{S43}/scalar_subquery/history_sql.json",
]
#: Inputs whose plans are queries of a text (named by position), lines those of the file.
QUERIES = [
    f"{S43}/multi_rewrite/formatted_after.txt",
    f"{S43}/multi_rewrite/simple_after.txt",
    f"{S43}/multi_rewrite/driver.log",
    f"{S43}/multi_rewrite/driver_json.log",
    f"{S35}/skew_join/formatted_after.txt",
]

#: Each command as a user runs it on one input: `{}` is the input.
COMMANDS = {
    "diff": ["diff", "{}"],
    "diff-tree": ["diff", "{}", "--tree"],
    "diff-side-by-side": ["diff", "{}", "--side-by-side"],
    "why": ["why", "{}"],
    "parse": ["parse", "{}"],
    "check": ["check", "{}", "--expect", "skew-join", "--forbid", "coalesced"],
    "check-each": ["check", "{}", "--each", "--expect", "skew-join"],
    "diff-github": ["diff", "{}", "--format", "github"],
    "diff-junit": ["diff", "{}", "--format", "junit"],
    "check-junit": ["check", "{}", "--forbid", "coalesced", "--format", "junit"],
    "check-github": ["check", "{}", "--forbid", "coalesced", "--format", "github"],
}

#: A number naming an execution or a query, in any case (`Execution 0`, `query 1`).
EXECUTION_WORD = re.compile(r"\b[Ee]xecution (\d+)")
QUERY_WORD = re.compile(r"\b[Qq]uery (\d+)")
#: The unit said at all: numbered, or counted (`in all queries`, `1 execution read`).
SAYS_EXECUTIONS = re.compile(r"\b[Ee]xecutions?\b")
SAYS_QUERIES = re.compile(r"\b[Qq]uer(?:ies\b|y\b(?! stage))")
#: `line N`, `plan line N`, with the operator named before it when there is one:
#: `Exchange (line 12)`, `AQEShuffleRead (6), line 8`, `Exchange (plan line 3)`.
LINE = re.compile(r"(?:(?P<name>\w+) (?:\(\d+\), |\())?(?P<plan>plan )?line (?P<n>\d+)")
#: `FILE:N` naming a file of the samples.
FILE_LINE = re.compile(r"(?P<file>sample_plans/[^\s:,()\"'<>]+):(?P<n>\d+)")


def run(args: List[str]) -> str:
    env = {**os.environ, "COLUMNS": "2000", "NO_COLOR": "1"}
    done = subprocess.run([*AQE_INSPECT, *args], capture_output=True, cwd=ROOT, env=env,
                          timeout=300)
    assert done.returncode in (0, 1), done.stderr.decode()
    return done.stdout.decode()


def file_lines(path: str) -> List[str]:
    return (ROOT / path).read_text(encoding="utf-8").splitlines()


def is_executions(path: str) -> bool:
    return path in EXECUTIONS


def check_line(path: str, lines: List[str], number: int, name: str, said: str) -> None:
    """Line `number` of the input is real and holds what the output says is there."""
    assert 1 <= number <= len(lines), f"{said!r}: {path} has {len(lines)} lines"
    text = lines[number - 1]
    if path.endswith(".json") and "history" in path:
        assert "{" in text, f"{said!r}: line {number} of {path} begins no execution: {text!r}"
    elif path.endswith(".json"):
        assert '"executionId"' in text, \
            f"{said!r}: line {number} of {path} is no SQL execution's event: {text[:120]!r}"
    elif name and name not in ("log", "the"):
        assert name in text, f"{said!r}: line {number} of {path} does not hold {name}: {text!r}"


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("path", EXECUTIONS + QUERIES)
def test_every_command_names_its_units_and_lines_in_the_input(path, command):
    args = [part.replace("{}", path) for part in COMMANDS[command]]
    out = run(args)
    assert out.strip(), args
    lines = file_lines(path)
    if is_executions(path):
        assert SAYS_EXECUTIONS.search(out), f"{args}: no 'execution' in:\n{out[:2000]}"
        assert not QUERY_WORD.search(out), \
            f"{args}: an event log's execution called a query: {QUERY_WORD.search(out)[0]!r}"
    else:
        assert SAYS_QUERIES.search(out), f"{args}: no 'query' in:\n{out[:2000]}"
        assert not EXECUTION_WORD.search(out), \
            f"{args}: a plan text's query called an execution: {EXECUTION_WORD.search(out)[0]!r}"
        assert "plan line" not in out, f"{args}: a plan text's lines are the file's"
    for found in LINE.finditer(out):
        if found["plan"]:
            assert is_executions(path), f"{args}: {found[0]!r} in a plan text"
            continue
        check_line(path, lines, int(found["n"]), found["name"] or "", found[0])
    for found in FILE_LINE.finditer(out):
        assert found["file"] == path, f"{args}: {found[0]!r} names another file"
        check_line(path, lines, int(found["n"]), "", found[0])


@pytest.mark.parametrize("path", [f"{S43}/scalar_subquery/eventlog_explain_simple.json",
                                  f"{S43}/broadcast_just_above/eventlog.json"])
def test_a_plan_line_is_a_line_of_the_plan_string_it_is_in(path):
    """`plan line N` of an execution: line N of the plan `parse --format json` reads holds the
    operator named (the text is the event's plan string, its lines counted from 1)."""
    import json

    out = run(["why", path])
    plans = plan_strings(path)
    said = re.findall(r"Execution (\d+)|(\w+) (?:\(\d+\), |\()plan line (\d+)", out)
    assert any(line for _, _, line in said), out
    execution = None
    for number, name, line in said:
        if number:
            execution = int(number)
            continue
        plan = plans[execution].splitlines()
        assert name in plan[int(line) - 1], (execution, name, line, plan[int(line) - 1])
    assert json  # the plans are read from the log's JSON events


def plan_strings(path: str) -> Dict[int, str]:
    """Each execution's last plan string in an event log (its last event holding one)."""
    import json

    found: Dict[int, str] = {}
    for text in file_lines(path):
        event = json.loads(text)
        if "physicalPlanDescription" in event and "executionId" in event:
            found[event["executionId"]] = event["physicalPlanDescription"]
    return found


@pytest.mark.parametrize("path, unit, number", [
    (f"{S43}/multi_rewrite/formatted_after.txt", "queries", "1"),
    (f"{S43}/multi_rewrite/eventlog.json", "executions", "0"),
])
def test_check_says_what_query_narrowed_to(path, unit, number):
    out = run(["check", path, "--query", number, "--expect", "skew-join"])
    assert f"in the {unit} --query {number} matched" in out, out
    assert "all queries" not in out and "all executions" not in out, out
    wide = run(["check", path, "--expect", "skew-join"])
    assert f"in all {unit}," in wide, wide


def test_a_query_number_no_text_holds_says_what_a_number_is():
    done = subprocess.run([*AQE_INSPECT, "diff", f"{S43}/multi_rewrite/formatted_after.txt",
                           "--query", "4"], capture_output=True, cwd=ROOT, timeout=120)
    error = done.stderr.decode()
    assert done.returncode == 2
    assert "no query matches (the input holds 1 query; a number is a query's position in " \
           "the file" in error, error


def test_the_glossary_is_in_the_docs():
    text = (ROOT / "docs" / "inputs.md").read_text(encoding="utf-8")
    assert "## Glossary: executions, queries and lines" in text
    for word in ("**Execution N**", "**Query N**", "**plan line N**", "**line N**"):
        assert word in text, word
    assert Path(ROOT / "docs" / "commands" / "check.md").read_text(encoding="utf-8").count(
        "glossary") >= 1
