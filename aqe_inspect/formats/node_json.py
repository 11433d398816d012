"""A plan node's fields in the JSON contracts (parse/v1, and the trees of report/v1)."""

from __future__ import annotations

import re
from typing import Any, Dict

from ..plan.model import Node


def node_fields(node: Node) -> Dict[str, Any]:
    """One node's JSON fields, with the nodes under it (children, inner, initial) left as Node
    objects for the caller to expand."""
    data: Dict[str, Any] = {
        "name": node.name,
        "id": node.id,
        "args": node.args,
        "details": dict(node.details),
        "children": list(node.children),
    }
    if node.title and node.title != node.name:
        data["title"] = node.title
    if node.codegen_stage is not None:
        data["codegen_stage"] = node.codegen_stage
    if node.statistics is not None:
        data["statistics"] = node.statistics
        if _size_unknown(node.statistics):
            # Spark's size for "no estimate" (Long.MaxValue bytes, printed 8.0 EiB).
            data["statistics_size_unknown"] = True
    if node.description is not None:
        data["description"] = node.description
    if node.inner:
        data["inner"] = list(node.inner)
    if node.metrics:
        data["metrics"] = dict(node.metrics)
    if node.is_adaptive_root:
        data["is_final_plan"] = node.is_final_plan
        data["initial"] = node.initial
    data["line"] = node.line
    return data


def node_to_json(node: Node) -> Dict[str, Any]:
    """The whole tree under `node` as dictionaries (built with a stack, not recursion)."""
    root = node_fields(node)
    pending = [root]
    while pending:
        data = pending.pop()
        for key in ("children", "inner"):
            if key in data:
                data[key] = [node_fields(child) for child in data[key]]
                pending.extend(data[key])
        if isinstance(data.get("initial"), Node):
            data["initial"] = node_fields(data["initial"])
            pending.append(data["initial"])
    return root


def _size_unknown(statistics: str) -> bool:
    from ..plan.units import is_unknown_size

    match = re.search(r"\bsizeInBytes=([^,()]+)", statistics)
    return match is not None and is_unknown_size(match.group(1))
