"""The `aqe-inspect/parse/v1` JSON form of a parsed document (a stable contract): a plan's
nodes, its queries, and the execution and application fields the report contract shares.

Written by `json_writer.write_json`, which prints exactly what `json.dumps(value, indent=2, ensure_ascii=False)` would, but
in chunks as it goes and with an explicit stack: a plan tree thousands of levels deep is
written (the json module's encoder recurses), and no copy of the whole output, nor of the
document as dictionaries, is ever held. Nodes met in the value are turned into their JSON
fields one at a time (`node_fields`).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, TextIO, Tuple

from ..errors import InspectError
from ..plan.model import Application, Document, Execution, Node, Query
from .json_writer import Raw, plain_json_text, write_json
from .node_json import node_to_json

PARSE_SCHEMA = "aqe-inspect/parse/v1"

#: How many times more nodes the JSON may hold than the plan printed. An adaptive plan printed
#: as one tree (`isFinalPlan=false`, no stage headers) is its own initial plan, and the JSON
#: writes that tree twice, as `children` and as `initial`; nested N deep, 2**N times. Real
#: plans nest two or three deep; a text nesting more would make output exponential in it.
MAX_REPEAT = 16
MAX_REPEAT_SLACK = 10_000


def _query_fields(query: Query) -> Dict[str, Any]:
    return {
        "source": query.source,
        "adaptive": query.adaptive,
        "is_final_plan": query.is_final_plan,
        "mode": query.mode,
        "line": query.line,
        "origin": query.origin,
        "notes": list(query.notes),
        "trees": {"final": query.root, "initial": query.initial},
        "subqueries": list(query.subquery_trees()),
        "subquery_uses": [
            {"index": s.index, "hosting_operator_id": s.hosting_operator_id,
             "hosting_expression": s.hosting_expression, "has_tree": s.tree is not None}
            for s in query.subqueries
        ],
        "optimized_out_exchanges": list(query.optimized_out),
        **execution_fields(query.execution),
        "application": application_fields(query.application),
    }


def _document_fields(document: Document, expanded: bool = True) -> Dict[str, Any]:
    return {"schema": PARSE_SCHEMA, "source": document.source,
            "queries": [_query_fields(query) for query in document.queries] if expanded
            else [],
            "notes": list(document.notes),
            "application": application_fields(document.application)}


def query_to_json(query: Query) -> Dict[str, Any]:
    return _expanded(_query_fields(query))


def document_to_json(document: Document) -> Dict[str, Any]:
    return _expanded(_document_fields(document))


def _expanded(value: Any) -> Any:
    """`value` with every Node in it (at any depth of dicts and lists) made dictionaries."""
    if isinstance(value, Node):
        return node_to_json(value)
    if isinstance(value, dict):
        return {key: _expanded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_expanded(item) for item in value]
    return value


def write_document_json(document: Document, stream: TextIO) -> None:
    """Print the parse/v1 JSON of `document` as it is made."""
    _check_repeats(document)
    fields = _document_fields(document, expanded=False)
    # Each query written whole as it comes (msgspec's encoder where it writes the same text,
    # `plain_json_text`), at the depth it stands at in the document: one query's
    # dictionaries held at a time.
    fields["queries"] = (Raw(plain_json_text(_expanded(_query_fields(query)), base=2))
                         for query in document.queries)
    write_json(fields, stream)


def _check_repeats(document: Document) -> None:
    """Refuse a document whose JSON would repeat its nodes exponentially (see MAX_REPEAT)."""
    written: Dict[int, int] = {}  # id(node) -> nodes its JSON holds
    distinct = 0
    total = 0
    roots: List[Optional[Node]] = []
    for query in document.queries:
        roots.extend((query.root, query.initial, *query.subquery_trees(), *query.optimized_out))
    for root in roots:
        if root is None:
            continue
        # Post-order without recursion: a node is summed once all below it are.
        stack: List[Tuple[Node, bool]] = [(root, False)]
        while stack:
            node, ready = stack.pop()
            key = id(node)
            if key in written:
                continue
            below = [*node.children, *node.inner]
            if node.is_adaptive_root and node.initial is not None:
                below.append(node.initial)
            if not ready:
                stack.append((node, True))
                stack.extend((child, False) for child in below if id(child) not in written)
                continue
            written[key] = 1 + sum(written[id(child)] for child in below)
            distinct += 1
        total += written[id(root)]
        if total > MAX_REPEAT * distinct + MAX_REPEAT_SLACK:
            raise InspectError(
                f"expected adaptive plans printed as one tree nested a few deep, found them "
                f"nested so that the JSON would repeat the plan's {distinct} operators "
                f"{total // max(distinct, 1)} times or more", source=document.source,
                line=root.line, column=1)


# ---- the writer ----------------------------------------------------------------------------


def execution_fields(execution: Optional[Execution]) -> Dict[str, Any]:
    """The SQL execution keys of a query (event logs, History Server); null otherwise."""
    if execution is None:
        return {"execution_id": None, "description": None}
    return {
        "execution_id": execution.execution_id,
        "description": execution.description,
        "replans": execution.replans,
        "start_time": execution.start_time,
        "end_time": execution.end_time,
        "duration_ms": execution.duration_ms,
        "finished": execution.finished,
        "status": execution.status,
        "configs": dict(execution.configs),
    }


def application_fields(application: Optional[Application]) -> Optional[Dict[str, Any]]:
    if application is None:
        return None
    return {"app_id": application.app_id, "name": application.name,
            "spark_version": application.spark_version}
