"""json: the stable contracts. A diff is `aqe-inspect/report/v1` (see `serialize_report`); a
check is `aqe-inspect/check/v1`:

    {"schema": "aqe-inspect/check/v1", "source": ..., "passed": false,
     "application": {...} | null, "query_count": 4,
     "expectations": [{"expectation": "coalesced>=2", "kind": "coalesced", "operator": ">=",
                       "count": 2, "scope": {"match": ..., "id": ...} | null, "each": false,
                       "name": "", "origin": {"file": ..., "line": 3} | null,
                       "passed": false, "actual": 1, "message": ..., "query_count": 1,
                       "queries": ["1"], "shown": ["1"], "location": {"file", "line"} | null,
                       "detail": "--- a.snap ..." (only `check --snapshot`'s, kind "snapshot":
                                 the unified diff)}],
     "queries": [the report/v1 query objects of every query a failure shows],
     "notes": [...]}
"""

from __future__ import annotations

from typing import Any, Dict, Optional, TextIO

from ..expectations.check import CheckResult, Outcome
from ..rewrites.locations import Location
from .json_writer import write_json
from .report_json import application_fields, query_report_to_json, report_to_json
from . import Format

CHECK_SCHEMA = "aqe-inspect/check/v1"


def check_to_json(result: CheckResult) -> Dict[str, Any]:
    return {
        "schema": CHECK_SCHEMA,
        "source": result.source,
        "passed": result.passed,
        "status": "passed" if result.passed else
        "unfinished" if len(result.unfinished) == len(result.failures) else "failed",
        "application": application_fields(result.application),
        "query_count": result.query_count,
        "expectations": [outcome_to_json(outcome) for outcome in result.outcomes],
        "queries": [query_report_to_json(report, result.source)
                    for report in result.shown_queries],
        "notes": list(result.notes),
    }


def outcome_to_json(outcome: Outcome) -> Dict[str, Any]:
    expectation = outcome.expectation
    scope = expectation.scope
    origin = expectation.origin
    found = {
        "expectation": expectation.text,
        "kind": expectation.kind,
        "operator": "==" if expectation.operator == "=" else expectation.operator,
        "count": expectation.count,
        "scope": None if scope is None else {
            "match": scope.text if scope.pattern is not None else None,
            "id": scope.number},
        "each": expectation.each,
        "name": expectation.name,
        "origin": {"file": origin.file, "line": origin.line} if origin.file else None,
        "passed": outcome.passed,
        "status": outcome.status,
        "actual": outcome.actual,
        "message": outcome.message,
        "query_count": outcome.query_count,
        "queries": list(outcome.query_ids),
        "shown": [report.id for report in outcome.shown],
        "location": _location(outcome.location),
    }
    if outcome.margin_asked is not None:  # held to a margin (--margin, `margin`)
        from ..whynot.margins import margin_json

        found["margin"] = {
            "asked": outcome.margin_asked, "fragile": outcome.fragile,
            "query": outcome.margin_query or None,
            "nearest": None if outcome.margin is None else margin_json(outcome.margin)}
    if outcome.detail:  # a snapshot's diff (kind "snapshot"); absent from expectations
        found["detail"] = outcome.detail
    if outcome.why:  # an expected rewrite that did not happen: why not, per query shown
        from .why import candidate_json

        found["why"] = [{"query": query_id, **candidate_json(candidate)}
                        for query_id, candidate in outcome.why]
    return found


def _location(location: Optional[Location]) -> Optional[Dict[str, Any]]:
    if location is None:
        return None
    return {"file": location.file, "line": location.line or None}


class JsonFormat(Format):
    name = "json"
    escapes_json = True

    def write_report(self, report, stream: TextIO) -> None:
        write_json(report_to_json(report), stream)

    def write_check(self, result: CheckResult, stream: TextIO) -> None:
        write_json(check_to_json(result), stream)


FORMAT = JsonFormat()
