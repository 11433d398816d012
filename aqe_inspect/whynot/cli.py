"""`aqe-inspect why`: every query of a report answered and written as it comes."""

from __future__ import annotations

from typing import Iterator, Mapping, Optional, Tuple

from ..rewrites.findings import QueryReport
from . import explain_query, query_settings
from .settings import Given
from .writing import query_json, write_json, write_line, write_text_query


def heading(report: QueryReport, version: Optional[str], settings_note: str) -> str:
    query = report.query
    parts = [f"query {report.id}"]
    if query.label:
        parts.append(query.label)
    where = query.source + (f":{query.line}" if query.line else "")
    if where:
        parts.append(where)
    if version:
        parts.append(f"Spark {version}")
    parts.append(settings_note)
    return " - ".join(parts)


def settings_note(report: QueryReport, user: Mapping[str, Given]) -> str:
    execution = report.query.execution
    if user:
        return "settings: given, others at Spark's defaults"
    if execution is not None and execution.configs_complete:
        return "settings: recorded by the event log"
    if execution is not None and execution.configs:
        return "settings: the application's (session settings not recorded)"
    return "settings: unknown (pass --conf or read the event log)"


def run_why(report, stream, user: Mapping[str, Given], version: Optional[str],
            kinds: Optional[Tuple[str, ...]], as_json: bool) -> None:
    def answers() -> Iterator[Tuple[QueryReport, object, Optional[str]]]:
        for query in report.queries:
            app = report.application
            found = version or (app.spark_version if app is not None else None) or None
            settings = query_settings(query, user, version=found)
            yield query, explain_query(query, settings, kinds), found

    if as_json:
        def items():
            for query, answer, _ in answers():
                yield query_json(answer, query.query.label)
        write_json(items(), stream, report.source, report)
        return
    count = 0
    for query, answer, found in answers():
        if count:
            stream.write("\n")
        count += 1
        write_text_query(answer, heading(query, found, settings_note(query, user)), stream)
    for note in report.notes:
        write_line(stream, f"note: {note}")
