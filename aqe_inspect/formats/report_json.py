"""The `aqe-inspect/report/v1` JSON form of a diff report (a stable contract)."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Union

from ..plan.model import Application, PlanChanges, Query, RuleApplied
from ..rewrites.findings import QueryReport, Report, ReportStream, describe
from ..rewrites.kinds import MEASURED_KINDS, measured
from .json_writer import Later, Raw, iter_json, plain_json_text
from .parse_json import application_fields, execution_fields

REPORT_SCHEMA = "aqe-inspect/report/v1"


def query_report_to_json(report: QueryReport, source: str,
                         application: Optional[Application] = None,
                         spark_version: str = "") -> Dict[str, Any]:
    """A query's report; `application` is the input's one application, for a query that
    does not name its own; `spark_version` its Spark version where neither is known yet (an
    event log's reader writes the JSON before the query names its application)."""
    query = report.query
    app = query.application or application
    version = (app.spark_version if app is not None else "") or spark_version or None
    margins = _margins(report, version)
    return {
        "id": report.id,
        "source": query.source or source,
        "line": query.line,
        "mode": query.mode,
        "origin": query.origin,
        "adaptive": query.adaptive,
        "is_final_plan": query.is_final_plan,
        "rewrites": [
            {
                "kind": rewrite.kind,
                "final_node": describe(rewrite.final_node),
                "initial_node": describe(rewrite.initial_node),
                "message": rewrite.message,
                "evidence": list(rewrite.evidence),
                "numbers": dict(rewrite.numbers),
                # A skew-join's partition sizes, each side (see `why.skew_json`).
                **({"skew": _skew(report, rewrite, version)}
                   if rewrite.kind == "skew-join" else {}),
                # A kind that holds a figure against a setting: each size decision behind
                # it the input measures (see `why`'s candidates).
                **({"margins": margins[number]} if rewrite.kind in MEASURED_KINDS else {}),
                # Only where a driver log's plan-change log named the rule.
                **({"rule": rule_applied_fields(rewrite.fired)}
                   if rewrite.fired is not None else {}),
            }
            for number, rewrite in enumerate(report.rewrites)
        ],
        "counts": report.counts,
        "info": [{"kind": o.kind, "node": describe(o.node), "message": o.message}
                 for o in report.info],
        "notes": list(report.notes),
        **execution_fields(query.execution),
        **({"plan_changes": plan_changes_fields(query.plan_changes)}
           if query.plan_changes is not None else {}),
        # Last: with_application fills it in JSON a worker process wrote (see there).
        "application": application_fields(query.application or application),
    }


def _margins(report: QueryReport, version: Optional[str]) -> Any:
    """Each rewrite's margins as JSON (`why.margin_json`), in the report's order."""
    from .views import rewrite_margins

    if not measured(report.rewrites):
        return [()] * len(report.rewrites)
    from ..whynot.margins import margin_json

    return [[margin_json(m) for m in found] for found in rewrite_margins(report, version)]


def _skew(report: QueryReport, rewrite, version: Optional[str]) -> Any:
    from ..whynot import rewrite_skew
    from .why import skew_json

    return [skew_json(side) for side in rewrite_skew(report, rewrite, version)]


def rule_applied_fields(applied: RuleApplied) -> Dict[str, Any]:
    """One rule application of a plan-change log: `rule` null for AQE's re-planning itself
    (the planner's choice, no rule logged)."""
    return {"rule": applied.rule or None, "qualified": applied.qualified or None,
            "batch": applied.batch or None, "line": applied.line,
            "removed": list(applied.removed), "added": list(applied.added),
            "altered": list(applied.altered)}


def plan_changes_fields(changes: PlanChanges) -> Dict[str, Any]:
    """What the plan-change log said of a query: its re-plannings (`changed` null when the
    log holds none of AQE's own messages) and every rule applied under AQE."""
    return {
        "replannings": len(changes.replannings),
        "changed": changes.changed,
        "kept": changes.kept,
        "replanning": [{"number": r.number, "line": r.line, "changed": r.changed,
                        "changed_line": r.changed_line, "added": list(r.added),
                        "removed": list(r.removed),
                        "rules": [rule_applied_fields(a) for a in r.rules]}
                       for r in changes.replannings],
        "rules": [rule_applied_fields(a) for a in changes.rules],
        "notes": list(changes.notes),
    }


def report_to_json(report: Union[Report, ReportStream]) -> Dict[str, Any]:
    """The report as `write_json` takes it. The queries are a generator and the notes come
    after them, so a streamed report is written as it is read and its notes are whole."""
    return {
        "schema": REPORT_SCHEMA,
        "application": application_fields(report.application),
        "queries": (q if isinstance(q, Raw) else
                    query_report_to_json(q, report.source, report.application)
                    for q in report.queries),
        "notes": Later(lambda: list(report.notes)),
    }


def query_report_raw(report: QueryReport, source: str, spark_version: str = "") -> Raw:
    """A query's report as the JSON it is in a report's `queries` list, written now (in the
    process that diffed it)."""
    return Raw(plain_json_text(query_report_to_json(report, source,
                                                    spark_version=spark_version), base=2))


def diff_built_json(query: Query, query_id: str, source: str, spark_version: str = "") -> Raw:
    """A query's diff written as JSON where an event log's reader builds it (in the pool's
    processes for a long log: only text comes back; `LogStream.built_into`), its margins and
    skew figures held to the defaults of the application's Spark version."""
    from ..rewrites.engine import diff_query

    return query_report_raw(diff_query(query, query_id), source, spark_version)


#: How a query's JSON written by `query_report_raw` ends when it names no application.
_NO_APPLICATION_END = '"application": null\n    }'


def with_application(item: Union[QueryReport, Raw], application: Optional[Application]
                     ) -> Union[QueryReport, Raw]:
    """A query's report (or its JSON, written by `query_report_raw`) naming the application
    it ran in: where one input holds several applications' event logs, each query says whose
    it is."""
    if application is None:
        return item
    if isinstance(item, Raw):
        if not item.text.endswith(_NO_APPLICATION_END):
            return item
        named = "".join(iter_json(application_fields(application), base=3))
        return Raw(item.text[:-len(_NO_APPLICATION_END)] + f'"application": {named}\n    }}')
    return dataclasses.replace(item, query=dataclasses.replace(item.query,
                                                               application=application))
