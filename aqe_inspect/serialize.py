"""The `aqe-inspect/parse/v1` JSON form of a parsed document (a stable contract)."""

from __future__ import annotations

from typing import Any, Dict

from .model import Document, Node, Query

PARSE_SCHEMA = "aqe-inspect/parse/v1"


def node_to_json(node: Node) -> Dict[str, Any]:
    data: Dict[str, Any] = {
        "name": node.name,
        "id": node.id,
        "args": node.args,
        "details": dict(node.details),
        "children": [node_to_json(child) for child in node.children],
    }
    if node.title and node.title != node.name:
        data["title"] = node.title
    if node.codegen_stage is not None:
        data["codegen_stage"] = node.codegen_stage
    if node.statistics is not None:
        data["statistics"] = node.statistics
    if node.description is not None:
        data["description"] = node.description
    if node.inner:
        data["inner"] = [node_to_json(child) for child in node.inner]
    if node.is_adaptive_root:
        data["is_final_plan"] = node.is_final_plan
        data["initial"] = node_to_json(node.initial) if node.initial is not None else None
    data["line"] = node.line
    return data


def query_to_json(query: Query) -> Dict[str, Any]:
    initial = query.initial
    return {
        "adaptive": query.adaptive,
        "is_final_plan": query.is_final_plan,
        "mode": query.mode,
        "line": query.line,
        "origin": query.origin,
        "notes": list(query.notes),
        "trees": {
            "final": node_to_json(query.root),
            "initial": node_to_json(initial) if initial is not None else None,
        },
        "subqueries": [node_to_json(tree) for tree in query.subquery_trees()],
        "subquery_uses": [
            {"index": s.index, "hosting_operator_id": s.hosting_operator_id,
             "hosting_expression": s.hosting_expression, "has_tree": s.tree is not None}
            for s in query.subqueries
        ],
        "optimized_out_exchanges": [node_to_json(tree) for tree in query.optimized_out],
    }


def document_to_json(document: Document) -> Dict[str, Any]:
    return {
        "schema": PARSE_SCHEMA,
        "source": document.source,
        "queries": [query_to_json(query) for query in document.queries],
        "notes": list(document.notes),
    }
