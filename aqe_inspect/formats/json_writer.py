"""The writer of every JSON the commands print.

`write_json` prints exactly what `json.dumps(value, indent=2, ensure_ascii=False)` would, but
in chunks as it goes and with an explicit stack: a plan tree thousands of levels deep is
written (the json module's encoder recurses), and no copy of the whole output is ever held.
Nodes met in the value are turned into their JSON fields one at a time (`node_fields`,
imported when the first is met).
"""

from __future__ import annotations

import json
from collections import abc
from typing import Any, Callable, Iterator, List, TextIO

from ..plan.model import Node
from .node_json import node_fields

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


#: The scalars msgspec's encoder writes as `json.dumps` does (not floats: msgspec writes
#: `1e16` and NaN as null where json writes `1e+16` and NaN).
_SAME_SCALARS = (str, int, bool, type(None))


def plain_json_text(value: Any, base: int = 0) -> str:
    """`"".join(iter_json(value, base))`: the same text, written by msgspec's encoder and
    indented by its `format` (several times faster) when `value` holds only dicts with string
    keys, lists, tuples, strings, integers, booleans and None; by `iter_json` otherwise (a
    float, a Node, a string msgspec refuses such as a lone surrogate, a value nested deeper
    than msgspec goes)."""
    if _plain(value):
        try:
            import msgspec

            text = msgspec.json.format(msgspec.json.encode(value), indent=2).decode("utf-8")
        except (ImportError, TypeError, ValueError, OverflowError, UnicodeError,
                RecursionError):
            pass
        else:
            return text.replace("\n", "\n" + INDENT * base) if base else text
    return "".join(iter_json(value, base=base))


def _plain(value: Any) -> bool:
    """Whether `value` is made of what `plain_json_text` writes with msgspec (walked with a
    stack: any depth). Only containers go on the stack; the scalars are checked where they
    stand."""
    kind = value.__class__
    if kind is not dict and kind is not list and kind is not tuple:
        return kind in _SAME_SCALARS
    stack = [value]
    while stack:
        item = stack.pop()
        if item.__class__ is dict:
            for key in item:
                if key.__class__ is not str:
                    return False
            item = item.values()
        for member in item:
            kind = member.__class__
            if kind is str or kind is int or member is None or kind is bool:
                continue
            if kind is dict or kind is list or kind is tuple:
                stack.append(member)
            else:
                return False
    return True


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
