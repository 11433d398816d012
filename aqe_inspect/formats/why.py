"""The `why` answers written out: text for people, JSON (`aqe-inspect/why/v1`) for tools,
each query written as it is answered (an event log's executions as they are read).

`write_why` takes the answers `api.why` gives: `queries()` yields (the query's report, its
answer, the Spark version its defaults were taken at); `user` (the settings the user gave),
`source`, `application` and `notes` (whole once the queries are walked).
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Mapping, Optional

from ..errors import printable
from ..plan.model import Application
from ..rewrites.findings import QueryReport
from ..whynot.verdicts import Candidate, QueryWhy

SCHEMA = "aqe-inspect/why/v1"


def candidate_json(found: Candidate) -> Dict[str, Any]:
    return {
        "kind": found.kind,
        "node": found.node,
        "line": found.line or None,
        "verdict": found.verdict,
        "reasons": [{"config": r.config, "value": r.value, "source": r.source, "text": r.text}
                    for r in found.reasons],
        "needs": list(found.needs),
    }


def query_json(answer: QueryWhy, label: str = "") -> Dict[str, Any]:
    data: Dict[str, Any] = {"id": answer.id}
    if label:
        data["label"] = label
    data["candidates"] = [candidate_json(c) for c in answer.candidates]
    data["notes"] = list(answer.notes)
    return data


def write_json(answers: Iterable[Dict[str, Any]], stream, source: str, report) -> None:
    """The whole answer as one JSON document: queries are written as they come, the
    application and the reading notes (whole once the queries are read) last."""
    stream.write('{"schema": "%s", "source": %s, ' % (SCHEMA, json.dumps(source)))
    stream.write('"queries": [')
    for index, item in enumerate(answers):
        stream.write((",\n" if index else "\n") + json.dumps(item))
    application: Optional[Application] = report.application
    notes: List[str] = list(report.notes)
    app = None if application is None else {
        "id": application.app_id, "name": application.name,
        "spark_version": application.spark_version}
    stream.write('\n], "application": %s, "notes": %s}\n' % (json.dumps(app),
                                                           json.dumps(list(notes))))


#: How wide the kind column is (the longest kind, `empty-relation`).
KIND_WIDTH = 14
#: How wide the verdict column is (`cannot tell`).
VERDICT_WIDTH = 11


def candidate_lines(found: Candidate, indent: str = "  ") -> List[str]:
    """`kind  node`, then the verdict beside the first reason, one reason or need a line."""
    head = f"{indent}{found.kind:<{KIND_WIDTH}}  {found.node}"
    if found.line and "line" not in found.node:
        head += f", line {found.line}"
    verdict = found.verdict.replace("-", " ")
    said = [r.text for r in found.reasons] + [f"needs {need}" for need in found.needs]
    pad = f"{indent}  " + " " * (VERDICT_WIDTH + 2)
    lines = [head, f"{indent}  {verdict:<{VERDICT_WIDTH}}  " + (said[0] if said else "-")]
    lines.extend(pad + text for text in said[1:])
    return lines


def write_line(stream, line: str) -> None:
    """One line of the text answer, escaped by `errors.printable`: what it says of an input (a
    description, a path, an operator, a setting's value) cannot restyle the terminal nor
    forge a line."""
    stream.write(printable(line) + "\n")


def write_text_query(answer: QueryWhy, heading: str, stream) -> None:
    write_line(stream, heading)
    if not answer.candidates:
        write_line(stream, "  no operator where AQE could have rewritten")
    for found in answer.candidates:
        for line in candidate_lines(found):
            write_line(stream, line)
    for note in answer.notes:
        write_line(stream, f"  note: {note}")


def heading(report: QueryReport, version: Optional[str], settings_note: str) -> str:
    """A query's first line: `query ID - label - file:line - Spark V - settings: ...`."""
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


def settings_note(report: QueryReport, user: Mapping[str, Any]) -> str:
    """Where the settings of a query's answer came from."""
    execution = report.query.execution
    if user:
        return "settings: given, others at Spark's defaults"
    if execution is not None and execution.configs_complete:
        return "settings: recorded by the event log"
    if execution is not None and execution.configs:
        return "settings: the application's (session settings not recorded)"
    return "settings: unknown (pass --conf or read the event log)"


def write_why(answers, stream, as_json: bool) -> None:
    """Every query's answer, written as it comes: one JSON document, or text for people."""
    if as_json:
        def items():
            for query, answer, _ in answers.queries():
                yield query_json(answer, query.query.label)
        write_json(items(), stream, answers.source, answers)
        return
    count = 0
    for query, answer, found in answers.queries():
        if count:
            stream.write("\n")
        count += 1
        write_text_query(answer, heading(query, found, settings_note(query, answers.user)),
                         stream)
    for note in answers.notes:
        write_line(stream, f"note: {note}")
