"""The parser against plans Apache Spark's own test suites printed, Spark 3.0 to 5.0-SNAPSHOT."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator, List, Tuple


import aqe_inspect
from aqe_inspect.rewrites.engine import diff_document

from .conftest import require_corpus

DETAIL_HEADER_ID = re.compile(r"(?m)^\((\d+)\) ")
QUERY_OUTPUT = re.compile(r"-- !query output\n(.*?)(?=\n-- !query\n|\Z)", re.S)


def operator_ids(document: aqe_inspect.Document) -> set:
    return {node.id for query in document.queries for node in query.walk()
            if node.id is not None}


def explain_files() -> List[Path]:
    return sorted(require_corpus().rglob("explain.txt"))


def sql_out_plans() -> Iterator[Tuple[str, str]]:
    """Each `-- !query output` block of the .sql.out golden files that prints a plan."""
    for path in sorted(require_corpus().rglob("*.sql.out")):
        text = path.read_text("utf-8")
        for match in QUERY_OUTPUT.finditer(text):
            if "== Physical Plan ==" in match.group(1):
                line = text.count("\n", 0, match.start(1)) + 1
                yield f"{path}:{line}", match.group(1)


def event_log_plans() -> Iterator[Tuple[str, str]]:
    """physicalPlanDescription strings of the event logs in the corpus."""
    for path in sorted(require_corpus().glob("*/other/*")):
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            event = json.loads(line)
            description = event.get("physicalPlanDescription")
            if description:
                yield f"{path}:{number}", description


def test_every_explain_txt_parses_with_exactly_its_operator_ids():
    files = explain_files()
    assert len(files) >= 400, "the corpus lost its plan-stability files"
    failures = []
    for path in files:
        text = path.read_text("utf-8")
        document = aqe_inspect.parse(text, str(path))
        want = {int(i) for i in DETAIL_HEADER_ID.findall(text)}
        got = operator_ids(document)
        if got != want:
            failures.append(f"{path}: missing {sorted(want - got)[:5]} extra {sorted(got - want)[:5]}")
        assert all(q.mode == "formatted" for q in document.queries), path
    assert not failures, "\n".join(failures[:20])


def test_formatted_nodes_carry_their_detail_fields(corpus):
    path = next(p for p in explain_files() if "v1_4/q2/" in str(p) and "v4.2" in str(p))
    document = aqe_inspect.parse(path.read_text("utf-8"), str(path))
    nodes = {node.id: node for node in document.queries[0].walk()}
    assert nodes[1].title == "Scan parquet spark_catalog.default.web_sales"
    assert nodes[1].details["ReadSchema"] == "struct<ws_ext_sales_price:decimal(7,2)>"
    assert nodes[2].codegen_stage == 1 and nodes[2].whole_stage_codegen
    join = nodes[12]
    assert join.name == "BroadcastHashJoin" and join.args == "Inner BuildRight"
    assert join.details["Join type"] == "Inner"
    assert [child.id for child in join.children] == [7, 11]


def test_subquery_section_keeps_hosting_operators(corpus):
    path = corpus / "master/tpcds/approved-plans-v1_4/q14a/explain.txt"
    query = aqe_inspect.parse(path.read_text("utf-8"), str(path)).queries[0]
    first = query.subqueries[0]
    assert (first.index, first.hosting_operator_id) == (1, 66)
    assert first.hosting_expression.startswith("Subquery scalar-subquery#51")
    assert first.tree is not None and first.tree.id == 124
    reused = [s for s in query.subqueries if s.tree is None]
    assert reused, "subqueries printed only as hosting lines must be kept"


def test_every_sql_out_plan_parses(corpus):
    plans = list(sql_out_plans())
    assert len(plans) >= 250
    failures = []
    for where, text in plans:
        try:
            aqe_inspect.parse(text, where)
        except aqe_inspect.PlanSyntaxError as error:
            failures.append(str(error))
    assert not failures, "\n".join(failures[:20])


def test_sql_out_adaptive_plans_are_adaptive(corpus):
    adaptive = [aqe_inspect.parse(text, where) for where, text in sql_out_plans()
                if "AdaptiveSparkPlan" in text.split("== Physical Plan ==", 1)[1][:200]]
    assert len(adaptive) >= 30
    for document in adaptive:
        query = document.queries[0]
        assert query.adaptive and query.is_final_plan is False
        # The single-tree form: nothing ran yet, so the initial plan is the current one.
        assert query.initial is query.final


def test_event_log_plans_parse_with_both_adaptive_sides(corpus):
    plans = list(event_log_plans())
    assert plans
    sides = 0
    for where, text in plans:
        document = aqe_inspect.parse(text, where)
        want = {int(i) for i in DETAIL_HEADER_ID.findall(text)}
        assert operator_ids(document) == want, where
        for query in document.queries:
            if query.adaptive and query.initial is not query.final:
                sides += 1
                assert query.initial is not None
    assert sides >= 2, "the 3.3 event log holds Final/Current and Initial plans"


def test_corpus_plans_report_no_rewrite_they_do_not_show(corpus):
    """Static plans and unexecuted adaptive plans hold no AQE rewrite: a detector that fires
    on them is matching text it should not."""
    for path in explain_files()[::7]:
        report = diff_document(aqe_inspect.parse(path.read_text("utf-8"), str(path)))
        assert all(not q.rewrites for q in report.queries), path
    for where, text in sql_out_plans():
        report = diff_document(aqe_inspect.parse(text, where))
        assert all(not q.rewrites for q in report.queries), where
