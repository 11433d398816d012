"""Event logs written by others (NVIDIA spark-rapids-tools, kubeflow's History Server MCP,
Apache Gluten: see tests/fixtures/published_eventlogs/SOURCES.json) read by the event-log
reader, against what the independent survey (`survey.py`) recorded of each: the application,
every SQL execution with its description and re-plans, the malformed and cut lines, and what
the final plans show."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .conftest import AQE_INSPECT

from aqe_inspect.rewrites.engine import diff_query
from aqe_inspect.sources.eventlog import read_event_logs

FIXTURES = Path(__file__).parent / "fixtures" / "published_eventlogs"
LOGS = json.loads((FIXTURES / "SOURCES.json").read_text("utf-8"))["logs"]


def _path(entry) -> Path:
    return FIXTURES / entry["name"]


def _adaptive(query) -> bool:
    """An AdaptiveSparkPlan anywhere (a write command holds it below its root)."""
    return any(node.is_adaptive_root for node in query.root.walk())


def _document(entry):
    (document,) = read_event_logs(str(_path(entry)))
    return document


@pytest.mark.parametrize("entry", LOGS, ids=lambda e: e["name"])
def test_the_application_and_every_execution_are_read(entry):
    expect = entry["expect"]
    document = _document(entry)
    app = document.application
    assert app.app_id == expect["app_id"]
    assert app.name == expect["app_name"]
    # From SparkListenerLogStart, or Databricks' DBCEventLoggingListenerMetadata.
    assert app.spark_version == expect["spark_version"], expect["spark_version_event"]
    found = {q.execution.execution_id: q for q in document.queries}
    wanted = {e["id"]: e for e in expect["executions"]}
    assert set(found) == set(wanted)
    for execution_id, execution in wanted.items():
        query = found[execution_id]
        assert query.execution.description == execution["description"]
        assert query.execution.replans == execution["adaptive_updates"]
        assert _adaptive(query) is execution["adaptive"], execution_id
    if not expect["executions"]:
        assert any("no SQL execution" in note for note in document.notes)
    if expect["cut_last_line"]:
        assert any("cut" in note for note in document.notes), document.notes


@pytest.mark.parametrize("entry", [e for e in LOGS if e["expect"]["adaptive_executions"]],
                         ids=lambda e: e["name"])
def test_final_plans_show_what_the_survey_saw(entry):
    """Counted over the executions whose final plan prints one: a coalesced shuffle read is a
    coalesced finding, a BroadcastHashJoin in an adaptive final plan that started as a
    sort-merge join is a switch, and a final plan is final."""
    expect = entry["expect"]
    document = _document(entry)
    adaptive = [q for q in document.queries if _adaptive(q) and q.execution.replans]
    assert len(adaptive) == expect["executions_with_updates"] or \
        len(adaptive) <= expect["adaptive_executions"]
    reports = [diff_query(q, str(q.execution.execution_id)) for q in adaptive]
    markers = expect["final_plan_markers"]
    coalesced = sum(1 for r in reports if r.counts["coalesced"])
    if markers["coalesced"]:
        assert coalesced >= 1, [r.notes for r in reports]
    else:
        assert coalesced == 0
    for query, report in zip(adaptive, reports):
        if query.execution.finished:
            roots = [n for n in query.root.walk() if n.is_adaptive_root]
            assert all(root.is_final_plan for root in roots), query.execution
        assert not any("without the initial plan" in note for note in report.notes), report


def test_a_log_with_a_malformed_line_is_read_around_it():
    entry = next(e for e in LOGS if e["expect"]["malformed_lines"])
    result = subprocess.run([*AQE_INSPECT, "diff", str(_path(entry)),
                             "--format", "json"], capture_output=True, check=False)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert len(report["queries"]) == entry["expect"]["sql_executions"]
