"""Queries run one after another over the same DataFrames, with Spark's plan-change log on:
every AQE rule message goes to the query that was running, none to another; a query that has
ended receives no later message, and no note says queries ran at once, since they did not.

The logs are `sample_plans/spark-*/sequential_queries/sequential_planchange.log`, written by
`sample_plans/driver_logs.py --sequential` (`sequential_job.py`): four queries over the same
`orders`, `customers`, `items` and `payments` DataFrames, so that their plans share expression
ids (`customer_id#1L` in each). Query 2 is an anti join that AQEPropagateEmptyRelation
replaces by its left side; query 4 keeps its sort-merge joins through every re-planning.

Each log is read as written and without the job's own prints (its explains before and after
each action, `rows: N`...: what a job that prints no plan logs, AQE's `Plan changed:` and
`Final plan:` messages at spark.sql.adaptive.logLevel=INFO its only plans).

What was running where comes from the JVM, not from the tool: the job logs through the JVM's
log4j, in order with Spark's own lines, `SequentialJob: query N of 4 (NAME) starts` before
and `... ends (execution ids [...])` after each query; `queries.json` holds each query's SQL
executions from Spark's status store (id, submission and completion times) and its plans'
joins. Which rule messages are AQE's is read from the log here by a plain line search: a rule
heading whose batch (the next `=== Result of Batch`) is one of AQE's physical batches, or whose
plans hold AQE's `LogicalQueryStage`.

Was: every query shared ids with the others, so each message went to the first query sharing
most of them: rules of queries 2 and 4 given to query 1, a note that "4 queries ran at once";
without the job's prints, query 1's re-plannings and query 2's (its AQEPropagateEmptyRelation
among them) given to query 4 (7 re-plannings, 5 "kept"), query 2 none; and on 4.x a rule that
a nested executor's `Batch CleanExpressions has no effect.` followed (EnsureRequirements in
query 2's re-planning) given to no query.
"""

from __future__ import annotations

import atexit
import json
import re
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from aqe_inspect.sources import read_document

from .conftest import SAMPLE_PLANS

LINES = ("spark-3.5.9", "spark-4.3.0")
NAMES = ["revenue_by_country", "orders_without_customer", "orders_per_category",
         "kept_by_cost"]
AQE_BATCHES = {"AQE Replanning", "AQE Query Stage Optimization", "AQE Post Stage Creation"}
_MARK = re.compile(r"SequentialJob: query (\d) of 4 \((\w+)\) (starts|ends)")
_RULE = re.compile(r"=== Applying Rule (\S+) ===")
_RESULT = re.compile(r"=== Result of Batch (.+) ===")


VARIANTS = ("printed", "quiet")
#: What the job prints (standard output, no log prefix): each print runs to the next log record.
_PRINT = re.compile(r"(?:Spark \d|Query \d: |Plan (?:before|after) running the query:|rows: \d|"
                    r"done: |== Physical Plan ==)")
_RECORD = re.compile(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d ")
_QUIET = Path(tempfile.mkdtemp(prefix="aqe-sequential-"))  # the logs without prints
atexit.register(shutil.rmtree, _QUIET, True)


def folder(line: str) -> Path:
    return SAMPLE_PLANS / line / "sequential_queries"


def without_prints(text: str) -> str:
    """The log without what the job printed: only Spark's log records and their lines."""
    kept, dropping = [], False
    for line in text.split("\n"):
        if _RECORD.match(line):
            dropping = False
        elif _PRINT.match(line):
            dropping = True
        if not dropping:
            kept.append(line)
    return "\n".join(kept)


@lru_cache(maxsize=None)
def path_of(line: str, variant: str = "printed") -> Path:
    path = folder(line) / "sequential_planchange.log"
    if variant == "printed":
        return path
    quiet = _QUIET / f"{line}.log"
    quiet.write_text(without_prints(path.read_text("utf-8")), "utf-8")
    return quiet


@lru_cache(maxsize=None)
def log_lines(line: str, variant: str = "printed") -> List[str]:
    return path_of(line, variant).read_text("utf-8").split("\n")


def truth(line: str) -> dict:
    return json.loads((folder(line) / "queries.json").read_text("utf-8"))


@lru_cache(maxsize=None)
def spans(line: str, variant: str = "printed") -> Dict[int, Tuple[int, int]]:
    """Each query's number -> the lines of its `starts` and `ends` messages."""
    found: Dict[int, Dict[str, int]] = {}
    for number, text in enumerate(log_lines(line, variant), 1):
        mark = _MARK.search(text)
        if mark:
            found.setdefault(int(mark.group(1)), {})[mark.group(3)] = number
    return {query: (at["starts"], at["ends"]) for query, at in found.items()}


def running(line: str, at: int, variant: str = "printed") -> int:
    """The number of the query running at line `at` (0: none)."""
    return next((query for query, (start, end) in spans(line, variant).items()
                 if start < at < end), 0)


def aqe_rule_messages(line: str, variant: str = "printed") -> Dict[int, str]:
    """Every AQE rule message of the log: its heading's line -> the rule's simple name."""
    lines = log_lines(line, variant)
    found = {}
    for index, text in enumerate(lines):
        rule = _RULE.fullmatch(text)
        if not rule:
            continue
        block = []
        for following in lines[index + 1:]:
            if following[:1] not in (" ", "!") or not following.strip():
                break
            block.append(following)
        batch = next(_RESULT.fullmatch(text).group(1) for text in lines[index + 1:]
                     if _RESULT.fullmatch(text))
        if batch in AQE_BATCHES or any("LogicalQueryStage" in text for text in block):
            found[index + 1] = rule.group(1).rsplit(".", 1)[-1]
    return found


@lru_cache(maxsize=None)
def numbered(line: str, variant: str = "printed"):
    """The log's queries as the tool reads them, each with the number of the query whose
    run its plan is printed in."""
    queries = read_document(str(path_of(line, variant)), plan_changes=True).queries
    return [(running(line, query.line, variant), query) for query in queries]


BOTH = [(line, variant) for line in LINES for variant in VARIANTS]


@pytest.mark.parametrize("line", LINES)
def test_the_queries_ran_one_after_another_sharing_expression_ids(line):
    held = truth(line)
    assert [query["name"] for query in held["queries"]] == NAMES
    executions = [query["executions"] for query in held["queries"]]
    assert all(len(each) == 1 for each in executions)
    for before, after in zip(executions, executions[1:]):
        assert before[0]["completed_ms"] <= after[0]["submitted_ms"]
    found = spans(line)
    assert sorted(found) == [1, 2, 3, 4]
    ordered = [at for number in sorted(found) for at in found[number]]
    assert ordered == sorted(ordered)
    # Query 2's anti join went (its initial plan's sort-merge join, no join in its final
    # plan); query 4's joins stayed sort-merge.
    two, four = held["queries"][1], held["queries"][3]
    assert two["initial_joins"] == [{"operator": "SortMergeJoin", "join_type": "LeftAnti"}]
    assert two["joins"] == []
    assert [join["operator"] for join in four["joins"]] == ["SortMergeJoin"] * 2
    # The plans share expression ids: orders' customer id in every query's plan.
    text = "\n".join(log_lines(line))
    customer_id = re.search(r"customer_id#\d+L", text).group(0)
    for query, (start, end) in found.items():
        assert customer_id in "\n".join(log_lines(line)[start:end]), query


@pytest.mark.parametrize("line,variant", BOTH)
def test_every_rule_message_goes_to_the_query_that_was_running(line, variant):
    queries = numbered(line, variant)
    assert [number for number, _ in queries] == [1, 2, 3, 4]
    given = {}
    for number, query in queries:
        assert query.plan_changes is not None, number
        for rule in query.plan_changes.rules:
            assert rule.line not in given, rule
            given[rule.line] = (number, rule.rule)
    expected = {at: (running(line, at, variant), rule)
                for at, rule in aqe_rule_messages(line, variant).items()}
    assert len(expected) > 30 and all(number for number, _ in expected.values())
    assert given == expected


@pytest.mark.parametrize("line,variant", BOTH)
def test_every_replanning_goes_to_the_query_that_was_running(line, variant):
    """Each re-planning (its `AQE Replanning` batch's result, or that it had no effect) is its
    query's, and one AQE kept its plan through is counted kept: query 4 kept every one."""
    lines = log_lines(line, variant)
    replannings = [at for at, text in enumerate(lines, 1)
                   if text == "=== Result of Batch AQE Replanning ==="
                   or text.endswith("PlanChangeLogger: Batch AQE Replanning has no effect.")]
    changed = [at for at, text in enumerate(lines, 1)
               if text.endswith("AdaptiveSparkPlanExec: Plan changed:")]
    queries = numbered(line, variant)
    got = {number: [p.line for p in query.plan_changes.replannings] for number, query in queries}
    assert got == {number: [at for at in replannings if running(line, at, variant) == number]
                   for number in (1, 2, 3, 4)}
    for number, query in queries:
        for replanning in query.plan_changes.replannings:
            if replanning.changed:
                assert running(line, replanning.changed_line, variant) == number
        assert sum(p.changed for p in query.plan_changes.replannings) == \
            len([at for at in changed if running(line, at, variant) == number]), number
    four = dict(queries)[4]
    assert four.plan_changes.replannings and \
        not any(p.changed for p in four.plan_changes.replannings)


@pytest.mark.parametrize("line,variant", BOTH)
def test_no_note_says_the_queries_ran_at_once(line, variant):
    notes = [note for _, query in numbered(line, variant) for note in
             (query.plan_changes.notes if query.plan_changes else ())]
    assert not [note for note in notes if "ran at once" in note], notes


@pytest.mark.parametrize("line,variant", BOTH)
def test_the_empty_relation_rule_is_the_anti_join_query_s(line, variant):
    queries = dict(numbered(line, variant))
    where = {number: [rule.line for rule in query.plan_changes.rules
                      if rule.rule == "AQEPropagateEmptyRelation"]
             for number, query in queries.items()}
    (at,) = where[2]
    assert where == {1: [], 2: [at], 3: [], 4: []}
    assert aqe_rule_messages(line, variant)[at] == "AQEPropagateEmptyRelation"
    # It runs in a re-planning of query 2, which changed the plan.
    (replanning,) = [p for p in queries[2].plan_changes.replannings
                     if any(rule.line == at for rule in p.rules)]
    assert replanning.changed
