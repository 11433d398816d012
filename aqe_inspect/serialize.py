"""The `aqe-inspect/parse/v1` JSON form of a parsed document (a stable contract), and the
writer of every JSON the CLI prints.

`write_json` prints exactly what `json.dumps(value, indent=2, ensure_ascii=False)` would, but
in chunks as it goes and with an explicit stack: a plan tree thousands of levels deep is
written (the json module's encoder recurses), and no copy of the whole output, nor of the
document as dictionaries, is ever held. Nodes met in the value are turned into their JSON
fields one at a time (`node_fields`).
"""

from __future__ import annotations

import json
from collections import abc
from typing import Any, Callable, Dict, Iterator, List, Optional, TextIO, Tuple

from .errors import InspectError
from .model import Document, Node, Query

PARSE_SCHEMA = "aqe-inspect/parse/v1"

#: How many times more nodes the JSON may hold than the plan printed. An adaptive plan printed
#: as one tree (`isFinalPlan=false`, no stage headers) is its own initial plan, and the JSON
#: writes that tree twice, as `children` and as `initial`; nested N deep, 2**N times. Real
#: plans nest two or three deep; a text nesting more would make output exponential in it.
MAX_REPEAT = 16
MAX_REPEAT_SLACK = 10_000


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


def _query_fields(query: Query) -> Dict[str, Any]:
    from .serialize_report import application_fields, execution_fields

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


def _document_fields(document: Document) -> Dict[str, Any]:
    from .serialize_report import application_fields

    return {"schema": PARSE_SCHEMA, "source": document.source,
            "queries": [_query_fields(query) for query in document.queries],
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
    write_json(_document_fields(document), stream)


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

_ENCODE_STRING = json.encoder.encode_basestring  # what json.dumps uses with ensure_ascii=False
INDENT = "  "
CHUNK = 1 << 16


def write_json(value: Any, stream: TextIO) -> None:
    """Print `value` as `json.dumps(value, indent=2, ensure_ascii=False)` would, then a
    newline; Nodes in it are written as their JSON fields."""
    pending: List[str] = []
    size = 0
    for chunk in iter_json(value):
        pending.append(chunk)
        size += len(chunk)
        if size >= CHUNK:
            stream.write("".join(pending))
            pending, size = [], 0
    pending.append("\n")
    stream.write("".join(pending))


def iter_json(value: Any, base: int = 0) -> Iterator[str]:
    """The chunks of `json.dumps(value, indent=2, ensure_ascii=False)`, without recursion; as
    written `base` levels deep in a larger document (for `Raw`)."""
    # Each open container is (iterator over its items, is it a dict, its depth, any item yet).
    stack: List[list] = []
    while True:
        if isinstance(value, Node):
            value = node_fields(value)
        if isinstance(value, Later):
            value = value.value()
        elif not isinstance(value, _PLAIN) and isinstance(value, abc.Iterator):
            # A stream of items (a report's queries as they are diffed): written as a list,
            # one item at a time, never held whole.
            first = next(value, _END)
            value = [] if first is _END else _Stream(first, value)
        if isinstance(value, (dict, list, tuple, _Stream)):
            if not value:
                yield "{}" if isinstance(value, dict) else "[]"
            else:
                is_dict = isinstance(value, dict)
                yield "{" if is_dict else "["
                stack.append([iter(value.items() if is_dict else value), is_dict,
                              base + len(stack) + 1, False])
        elif isinstance(value, Raw):
            yield value.text
        else:
            yield _scalar(value)
        # The next value to write: the next item of the innermost open container.
        while stack:
            frame = stack[-1]
            items, is_dict, depth, started = frame
            item = next(items, _END)
            if item is _END:
                stack.pop()
                yield "\n" + INDENT * (depth - 1) + ("}" if is_dict else "]")
                continue
            frame[3] = True
            lead = ",\n" if started else "\n"
            if is_dict:
                key, value = item
                yield f"{lead}{INDENT * depth}{_key(key)}: "
            else:
                value = item
                yield lead + INDENT * depth
            break
        else:
            return


_END = object()
#: What is never a stream (checked first: the abstract Iterator check is slow).
_PLAIN = (dict, list, tuple, str, int, float, type(None))


class Raw:
    """JSON already written (by `iter_json` at the depth it stands at): what a worker process
    rendered, written as it is."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class Later:
    """A value `iter_json` asks for only when it comes to write it: what a stream written
    before it fills (the notes of a log whose queries are written as they are read)."""

    def __init__(self, value: Callable[[], Any]):
        self.value = value


class _Stream:
    """A non-empty iterator, written by `iter_json` as a list."""

    def __init__(self, first: Any, rest: Iterator[Any]):
        self._first, self._rest = first, rest

    def __bool__(self) -> bool:
        return True

    def __iter__(self) -> Iterator[Any]:
        yield self._first
        del self._first
        yield from self._rest


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return _ENCODE_STRING(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return json.dumps(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _key(key: Any) -> str:
    if isinstance(key, str):
        return _ENCODE_STRING(key)
    if isinstance(key, (bool, type(None), int, float)):
        return _ENCODE_STRING(_scalar(key))
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
