"""Parse a plan text printed again in the same input once.

A log can print one plan text again, character for character: `df.explain()` called twice,
the same explain after two actions, a plan AQE logs again unchanged, a job run again in one
session over cached data (Spark keeps its expression ids), the micro-batches of a stream whose
plan did not change; and a log made of several runs' logs put together. Only the place in
the file differs. `RepeatedPlans.parse` parses a text once and hands out, for every later
exact repeat of it, a copy of the Document with its line numbers moved to where the repeat
stands: what parsing it again would give (tests/test_driverlog_speed.py compares).

How much it saves depends on the log: 6 of the 417 plans of the sample driver logs read one
by one are repeats; 177 of 752 in bench/'s driver log, which puts the logs of the same jobs
run on several Spark lines one after the other (they print the same plans). bench/ measures
with and without it (`--no-repeats`: MAX_ENTRIES = 0).

What makes a repeat: the same lines, said to be a plan the same way (`announced`), at the
same distances from each other (line numbers relative to the first: a JSON log record's
message lines share one number), for the same source and origin. Only results with no note
are kept (a note names a line inside its text), and no error (an error is raised again by
parsing the text again). Columns only ever reach errors, never a parsed Document.

The cache is bounded (entries and characters), most recent kept: repeats stand close together.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Dict, Optional, Tuple

from ..plan.model import Document, Node, Query, Subquery
from .. import native

#: A Node moved to another line (`_node_c.pyx`, or its pure twin: plan.model.moved_node).
moved_node = native.load("aqe_inspect.parsing._node").moved_node

#: The most entries kept, and the most characters of text over all of them.
MAX_ENTRIES = 64
MAX_CHARS = 4 << 20


class RepeatedPlans:
    """`parse(plan, source, origin)`: `parser.parse_lines`, each exact repeat parsed once."""

    def __init__(self, max_entries: Optional[int] = None, max_chars: Optional[int] = None):
        self._kept: "OrderedDict[tuple, Tuple[int, Document]]" = OrderedDict()
        self._chars = 0
        # (the module's bounds as they are now: bench/ sets MAX_ENTRIES = 0 to measure
        # without the cache)
        self.max_entries = MAX_ENTRIES if max_entries is None else max_entries
        self.max_chars = MAX_CHARS if max_chars is None else max_chars
        self.hits = 0

    def parse(self, plan, source: str = "", origin: str = "") -> Document:
        from .parser import parse_lines

        numbers = plan.numbers
        lines = plan.lines
        if not lines or len(numbers) != len(lines):
            return parse_lines(plan, source, origin)
        first = numbers[0]
        text = "\n".join(lines)
        key = (text, plan.announced, source, origin,
               tuple([number - first for number in numbers]))
        kept = self._kept.get(key)
        if kept is not None and kept[0] != first:  # (at the same place: parsed again, so
            # that no two plans of the input are one object)
            self._kept.move_to_end(key)
            self.hits += 1
            at, document = kept
            return relocated(document, first - at)
        document = parse_lines(plan, source, origin)
        if self.max_entries and not document.notes and \
                not any(query.notes for query in document.queries) and \
                len(text) <= self.max_chars:
            self._kept[key] = (first, document)
            self._chars += len(text)
            while len(self._kept) > self.max_entries or self._chars > self.max_chars:
                old = self._kept.popitem(last=False)[0][0]
                self._chars -= len(old)
        return document


_new = object.__new__
_set = object.__setattr__


_NAMES: Dict[type, Tuple[str, ...]] = {}


def _fields(instance) -> dict:
    """The fields of a dataclass instance by name, read one by one (asking for its
    `__dict__` would make one for it to keep)."""
    cls = type(instance)
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(field.name for field in dataclasses.fields(cls))
    return {name: getattr(instance, name) for name in names}


def _filled(cls, fields: dict):
    """An instance of the frozen dataclass `cls` holding `fields`, set one by one as its
    constructor sets them (filling its `__dict__` at once makes a dict of its own per object,
    twice the memory of the keys the class's instances share)."""
    made = _new(cls)
    for name, value in fields.items():
        _set(made, name, value)
    return made


def relocated(document: Document, delta: int) -> Document:
    """`document` with every line number moved by `delta` (the same objects when 0)."""
    if not delta:
        return document
    memo: Dict[int, Node] = {}
    queries = []
    for query in document.queries:
        roots = [query.root, *query.optimized_out,
                 *(sub.tree for sub in query.subqueries if sub.tree is not None)]
        for root in roots:
            _move_tree(root, delta, memo)
        fields = _fields(query)
        fields.update(
            root=memo[id(query.root)], line=query.line + delta if query.line else 0,
            optimized_out=tuple(memo[id(node)] for node in query.optimized_out),
            subqueries=tuple(_move_subquery(sub, delta, memo) for sub in query.subqueries),
        )
        queries.append(_filled(Query, fields))
    fields = _fields(document)
    fields["queries"] = tuple(queries)
    return _filled(Document, fields)


def _move_subquery(sub: Subquery, delta: int, memo: Dict[int, Node]) -> Subquery:
    fields = _fields(sub)
    fields.update(line=sub.line + delta if sub.line else 0,
                  tree=memo[id(sub.tree)] if sub.tree is not None else None)
    return _filled(Subquery, fields)


def _move_tree(root: Node, delta: int, memo: Dict[int, Node]) -> None:
    """Copy every node under `root` (children, inner plans, initial trees; a node two of them
    share is copied once and stays shared) into `memo` by the id of the original, without
    recursion: everything under a node is copied before it."""
    stack = [(root, False)]
    while stack:
        node, ready = stack.pop()
        key = id(node)
        if key in memo:
            continue
        if not ready:
            stack.append((node, True))
            stack.extend((child, False) for child in node.children if id(child) not in memo)
            stack.extend((child, False) for child in node.inner if id(child) not in memo)
            if node.initial is not None and id(node.initial) not in memo:
                stack.append((node.initial, False))
            continue
        children, inner, initial = node.children, node.inner, node.initial
        memo[key] = moved_node(
            node, node.line + delta if node.line else 0,
            tuple([memo[id(child)] for child in children]) if children else children,
            tuple([memo[id(child)] for child in inner]) if inner else inner,
            memo[id(initial)] if initial is not None else None)
