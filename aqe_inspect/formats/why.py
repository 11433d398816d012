"""The `why` answers written out: text for people, JSON (`aqe-inspect/why/v1`) for tools,
each query written as it is answered (an event log's executions as they are read).

`write_why` takes the answers `api.why` gives: `queries()` yields (the query's report, its
answer, the Spark version its defaults were taken at); `user` (the settings the user gave),
`source`, `application` and `notes` (whole once the queries are walked).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Tuple

from ..plan.model import Application
from ..rewrites.findings import QueryReport
from ..whynot.evidence import SkewEvidence
from ..whynot.margins import margin_json, margin_text
from ..whynot.verdicts import Candidate, QueryWhy

if TYPE_CHECKING:
    from .terminal import Screen

SCHEMA = "aqe-inspect/why/v1"


def candidate_json(found: Candidate) -> Dict[str, Any]:
    return {
        "kind": found.kind,
        "node": found.node,
        "line": found.line or None,
        "verdict": found.verdict,
        "reasons": [{"config": r.config, "value": r.value, "measure": r.measure,
                     "source": r.source, "text": r.text}
                    for r in found.reasons],
        "needs": list(found.needs),
        **({"skew": [skew_json(e) for e in found.skew]} if found.kind == "skew-join" else {}),
        "margins": [margin_json(m) for m in found.margins],
    }


def skew_json(evidence: SkewEvidence) -> Dict[str, Any]:
    """One side of a skew decision: its partition sizes' figures (bytes), the bar a partition
    must exceed and how many do (null where a setting is unknown), or `missing`: what the
    input lacks of them."""
    figures = evidence.figures
    if figures is None:
        return {"side": evidence.side, "partitions": None, "missing": evidence.missing}
    return {"side": evidence.side, "partitions": figures.count, "min": figures.minimum,
            "median": figures.median, "p95": figures.p95, "max": figures.maximum,
            "threshold": figures.threshold, "factor": figures.factor, "bar": figures.bar,
            "over": figures.over, "source": figures.source, "where": figures.where,
            "missing": None}


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


def candidate_lines(found: Candidate, indent: str = "  ", line_word: str = "line"
                    ) -> List[str]:
    """`kind  node`, then the verdict beside the first reason, one reason or need a line."""
    return [first + text for first, text, _ in candidate_rows(found, indent, line_word)]


def candidate_rows(found: Candidate, indent: str = "  ", line_word: str = "line"
                   ) -> List[Tuple[str, str, str]]:
    """`candidate_lines` as rows to wrap: each row's first indent (the kind or the verdict
    column), its text, and the indent of its lines after the first (under the text: the node
    under the node, a reason under the reasons). `line_word` is the query's (`line` of the
    file, or `plan line` of a plan inside an event log: `Query.line_word`)."""
    node = found.node
    if found.line and "line" not in found.node:
        node += f", {line_word} {found.line}"
    verdict = found.verdict.replace("-", " ")
    from .views import margin_lines, skew_lines

    said = [r.text for r in found.reasons] + [f"needs {need}" for need in found.needs] + \
        margin_lines(found.margins)
    # The sizes' figures; what is missing of them, unless a need already asks for them.

    asked = any("partition size" in need for need in found.needs)
    said.extend(skew_lines(e for e in found.skew if e.figures is not None or not asked))
    under_node = indent + " " * (KIND_WIDTH + 2)
    pad = f"{indent}  " + " " * (VERDICT_WIDTH + 2)
    rows = [(f"{indent}{found.kind:<{KIND_WIDTH}}  ", node, under_node),
            (f"{indent}  {verdict:<{VERDICT_WIDTH}}  ", said[0] if said else "-", pad)]
    rows.extend((pad, text, pad) for text in said[1:])
    return rows


def write_text_query(answer: QueryWhy, heading: str, stream, width: Optional[int] = None,
                     out: Optional["Screen"] = None, line_word: str = "line") -> None:
    """A query's answer as text for people, wrapped to `width` (None: the terminal's, as
    `diff` prints; or `out`'s), each run of text escaped (`errors.printable`, by `Screen`),
    the lines a row wraps into indented under its text."""
    from .terminal import HANG, Screen

    screen = out if out is not None else Screen(stream, width)
    wrapped(screen, heading, "", HANG)
    if not answer.candidates:
        wrapped(screen, "no operator where AQE could have rewritten", "  ", "  " + HANG)
    for found in answer.candidates:
        for first, text, rest in candidate_rows(found, line_word=line_word):
            wrapped(screen, text, first, rest)
    for note in answer.notes:
        wrapped(screen, f"note: {note}", "  ", "  " + HANG)
    screen.flush()


def wrapped(out: "Screen", text: str, first: str, rest: str) -> None:
    """`text` after `first`, wrapped to the screen's width, its lines after the first after
    `rest`. On a screen too narrow for the columns (more than half the width), the indent is
    cut to half the width and the column before the text (`first`: a kind, a verdict) takes a
    line of its own: the words keep the other half."""
    from .terminal import HANG

    room = max(len(HANG), out.width // 2)
    rest = rest[:room]
    if len(first) > room:
        column = first.strip()
        out.paragraph([(column, "")], first[:len(first) - len(first.lstrip())][:room], rest)
        first = rest
    width = out.width - max(len(first), len(rest))
    prefix = first
    for line, cells in out.lines([(text, "")], width):
        if cells > width:
            # One word wider than the room beside the indent (a long KEY=VALUE): on a line of
            # its own, hung lower (at the largest indent that holds it), never past the width.
            if prefix.strip():
                out.write_line(prefix.rstrip())
            out.write_line(" " * max(0, min(len(rest), out.width - cells)) + line)
        else:
            out.write_line(prefix + line)
        prefix = rest


def heading(report: QueryReport, version: Optional[str], settings_note: str) -> str:
    """A query's first line: `Query N (Nth in the file) - label - file:line - Spark V -
    settings: ...`, or `Execution ID - ...` for one of an event log."""
    from .views import where_read

    query = report.query
    parts = [report.title]
    if query.label:
        parts.append(query.label)
    where = where_read(query, query.source) if query.source else ""
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


def write_why(answers, stream, as_json: bool, width: Optional[int] = None) -> None:
    """Every query's answer, written as it comes: one JSON document, or text for people
    wrapped to `width` (None: the terminal's; when not a terminal, COLUMNS, else 100)."""
    if as_json:
        def items():
            for query, answer, _ in answers.queries():
                yield query_json(answer, query.query.label)
        write_json(items(), stream, answers.source, answers)
        return
    from .terminal import HANG, Screen

    out = Screen(stream, width)
    count = 0
    for query, answer, found in answers.queries():
        if count:
            out.write_line("")
        count += 1
        write_text_query(answer, heading(query, found, settings_note(query, answers.user)),
                         stream, out=out, line_word=query.query.line_word)  # flushed: each query shown as it is answered
    for note in answers.notes:
        wrapped(out, f"note: {note}", "", HANG)
    out.flush()
