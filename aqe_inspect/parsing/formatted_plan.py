"""A formatted-mode plan description in its plain shape, read with string operations.

An event log holds one formatted plan description (`spark.sql.ui.explainMode`, formatted by
default) per SQL execution, and a long log holds thousands: the grammar's parse of each
(parser.py) is most of the time such a log takes. Those descriptions nearly all have one
plain shape, the one Spark's `ExplainUtils` prints when nothing is cut or odd:

    == Physical Plan ==
    AdaptiveSparkPlan (76)
    +- == Final Plan ==
       ResultQueryStage (48), Statistics(sizeInBytes=8.0 EiB)
       +- * HashAggregate (47)
          ...
    +- == Initial Plan ==
       HashAggregate (75)
       ...

    (1) Range [codegen id : 1]
    Output [1]: [id#0L]
    ...

`read_formatted` reads exactly that shape: the header, one tree (with the final or current
and the initial plan of its root `AdaptiveSparkPlan`, or a plain tree), then the detail
blocks, every tree line with its `(N)` and every block joined to one tree line. Each line is
split by the same functions the grammar's parser uses (`read_operator_line`,
`read_detail_block`) and the nodes are made as its builder makes them, so the `Query` is the
one `parse_text` gives (tests hold the two equal over every sample and golden plan).
Anything else (a `===== Subqueries =====` section, a plan nested in a tree, an elision, a
cut text, a line of an unexpected kind, a block missing or twice) gives None: the caller
parses the text with the grammar, which reads and notes every such case.
"""

from __future__ import annotations

import dataclasses
import re
from sys import intern
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..plan.model import ADAPTIVE_ROOT, Node, Query, Subquery
from .operator_line import DetailBlock, OperatorLine, is_final_plan, read_detail_block, \
    read_operator_line

HEADER = "== Physical Plan =="
#: What a stage header line holds: `+- == Final Plan ==`, at the root's level only.
STAGES = {"+- == Final Plan ==": "Final", "+- == Current Plan ==": "Current",
          "+- == Initial Plan ==": "Initial"}
#: The glyphs a tree line's indentation is made of, three characters a level.
GLYPHS = frozenset(" :|")
#: As the lexer and the parser read them (lexer.py, parser.py).
DETAIL_HEADER = re.compile(r"\(\d+\) \S")
SUBQUERIES_HEADER = re.compile(r"=+ Subqueries =+\s*$")
SUBQUERY_HEADER = re.compile(
    r"Subquery:(?P<index>\d{1,9}) Hosting operator id = (?P<host>-?\d{1,9})?"
    r"(?: Hosting Expression = (?P<expr>.*))?"
)
OPERATOR_START = re.compile(r"(?:[*^]\(\d+\) |[*^] ?|!)?[A-Za-z_][\w$]*")
#: A tree line's glyphs: whole groups of a glyph and two spaces, then its connector.
TREE_LINE = re.compile(r"(?:[ :|]  )*[+:]- ")
#: What may start an operator's name (after an optional codegen marker `* `).
NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


class _Line:
    """One tree line: its parts, and the lines that hang under it."""

    __slots__ = ("op", "children", "stages")

    def __init__(self, op: OperatorLine):
        self.op = op
        self.children: List["_Line"] = []
        self.stages: List[Tuple[str, "_Line"]] = []


# ---- nodes made quickly ------------------------------------------------------------------------
#
# A frozen dataclass's constructor sets each field through object.__setattr__: some 4.5 us a
# Node, a sixth of this reader's time over a long event log. A Node has no __post_init__ and no
# __slots__, so the same object is made by filling its __dict__: the fields given, every other
# field at its default (each default_factory called, as the constructor does).

_FIELDS = dataclasses.fields(Node)
_DEFAULTS = {f.name: f.default for f in _FIELDS if f.default is not dataclasses.MISSING}
_FACTORIES = [(f.name, f.default_factory) for f in _FIELDS
              if f.default_factory is not dataclasses.MISSING]  # type: ignore[misc]
_FAST = not hasattr(Node, "__slots__") and not hasattr(Node, "__post_init__")


def new_node(values: Mapping[str, Any]) -> Node:
    """`Node(**values)`, made faster (see above)."""
    if not _FAST:  # pragma: no cover - a Node made otherwise
        return Node(**values)
    node = object.__new__(Node)
    fields = node.__dict__
    fields.update(_DEFAULTS)
    for name, factory in _FACTORIES:
        fields[name] = factory()
    fields.update(values)
    return node


def node_with(node: Node, values: Mapping[str, Any]) -> Node:
    """`dataclasses.replace(node, **values)`, made faster (see above)."""
    if not _FAST:  # pragma: no cover
        return dataclasses.replace(node, **values)
    new = object.__new__(Node)
    fields = new.__dict__
    fields.update(node.__dict__)
    fields.update(values)
    return new


def read_formatted(text: str) -> Optional[Query]:
    """The query of a formatted plan description in the plain shape (see above), as
    `parse_text(text).queries[0]` gives it before its source, origin and notes are set;
    None for any other text."""
    if "\x00" in text or "\r" in text:
        return None
    lines = text.split("\n")
    count = len(lines)
    index = 0
    while index < count and not lines[index].strip():
        index += 1
    if index >= count or lines[index].rstrip() != HEADER:
        return None
    header_line = index + 1
    tree = _read_tree(lines, index + 1)
    if tree is None:
        return None
    root, index = tree
    blocks: Dict[int, DetailBlock] = {}
    #: The subquery section's entries: (header match, its line, its tree or None).
    entries: List[Tuple[Any, int, Optional[_Line]]] = []
    in_subqueries = False
    while True:
        while index < count and not lines[index].strip():
            index += 1
        if index >= count:
            break
        line = lines[index]
        if line[:1] == "(" and DETAIL_HEADER.match(line):
            if in_subqueries and not entries:
                return None
            start = index
            index += 1
            while index < count:
                following = lines[index]
                if not following.strip() or following[:1] == "(" and \
                        DETAIL_HEADER.match(following) or \
                        following[:1] == "=" and SUBQUERIES_HEADER.match(following):
                    break
                index += 1
            block = read_detail_block(line, lines[start + 1:index], start + 1)
            if block.id in blocks:
                return None
            blocks[block.id] = block
        elif not in_subqueries and line[:1] == "=" and SUBQUERIES_HEADER.match(line):
            in_subqueries = True
            index += 1
        elif in_subqueries and line.startswith("Subquery:"):
            header = SUBQUERY_HEADER.match(line)
            if header is None or header["host"] is None:
                return None  # the grammar's parse notes a header without its host
            at = index + 1
            index += 1
            while index < count and not lines[index].strip():
                index += 1
            sub_root = None
            if index < count and _starts_tree(lines[index]):
                sub_tree = _read_tree(lines, index)
                if sub_tree is None:
                    return None
                sub_root, index = sub_tree
            entries.append((header, at, sub_root))
        else:
            return None  # optimized-out exchanges, a codegen section, stray text
    if not blocks or in_subqueries and not entries:
        return None
    roots = [sub_root for _, _, sub_root in entries if sub_root is not None]
    built = _build([*roots, root], blocks)
    if built is None:
        return None
    trees = iter(built)
    subqueries = tuple(
        Subquery(index=int(header["index"]), hosting_operator_id=int(header["host"]),
                 hosting_expression=(header["expr"] or "").strip(),
                 tree=next(trees) if sub_root is not None else None, line=at)
        for header, at, sub_root in entries)
    return Query(root=built[-1], subqueries=subqueries, mode="formatted", line=header_line)


def _starts_tree(line: str) -> bool:
    """An operator line at column 0, as the lexer asks after a subquery's header (the rest is
    checked as the tree is read)."""
    return bool(OPERATOR_START.match(line)) and not line.startswith(("Subquery:", "Subplan:"))


def _operator(rest: str, line: int, column: int) -> Optional[OperatorLine]:
    """The parts of a tree line's operator; None when it is not one in the plain shape."""
    first = rest[:1]
    if first == "*":
        if rest[1:2] != " " or rest[2:3] not in NAME_START:
            return None
    elif first not in NAME_START:
        return None
    op = read_operator_line(rest, line, column)
    if op.id is None or op.unnumbered:
        return None
    return op


def _read_tree(lines: List[str], index: int) -> Optional[Tuple[_Line, int]]:
    """The tree from `lines[index]` (its root, at column 0) to the blank line after it."""
    count = len(lines)
    if index >= count:
        return None
    root_op = _operator(lines[index], index + 1, 1)
    if root_op is None:
        return None
    root = _Line(root_op)
    adaptive = root_op.name == ADAPTIVE_ROOT
    # path[level] is the line at that level the next deeper line hangs under.
    path: List[_Line] = [root]
    staged = False  # the root's lines are under `== ... Plan ==` stage headers
    last_glyphs = ""
    index += 1
    while index < count:
        line = lines[index]
        if not line.strip():
            break
        stage = STAGES.get(line.rstrip()) if line[:5] == "+- ==" else None
        if stage is not None:
            if not adaptive or (not staged and root.children):
                return None
            index += 1
            if index >= count:
                return None
            stage_line = lines[index]
            if stage_line[:3] != "   " or stage_line[3:4] in GLYPHS:
                return None
            op = _operator(stage_line[3:], index + 1, 4)
            if op is None or op.name == ADAPTIVE_ROOT:
                return None
            stage_root = _Line(op)
            root.stages.append((stage, stage_root))
            staged = True
            path = [root, stage_root]
            last_glyphs = "   "
            index += 1
            continue
        glyphs = TREE_LINE.match(line)
        if glyphs is None:
            return None
        at = glyphs.end() - 3
        level = at // 3 + 1
        if staged and level < 2 or level > len(path):
            return None  # back at the root's level under stages, or a jump (an inner plan)
        op = _operator(line[at + 3:], index + 1, at + 4)
        if op is None or op.name == ADAPTIVE_ROOT:
            return None
        node = _Line(op)
        del path[level:]
        path[-1].children.append(node)
        path.append(node)
        last_glyphs = line[:at + 3]
        index += 1
    if ":" in last_glyphs:
        return None  # the last line says more children follow: cut short
    if adaptive and root.stages:
        kinds = [kind for kind, _ in root.stages]
        if kinds not in (["Final", "Initial"], ["Current", "Initial"]):
            return None
    return root, index


def _build(roots: List[_Line], blocks: Dict[int, DetailBlock]) -> Optional[List[Node]]:
    """The model's nodes, made as the grammar's builder makes a formatted plan's (children
    first, without recursion); None when a line has no block or a block no line. (Lines may
    share a block: the initial plan prints the operators AQE left alone with their final ids.)"""
    order: List[_Line] = []
    stack = list(reversed(roots))
    while stack:
        raw = stack.pop()
        order.append(raw)
        if raw.stages:
            stack.extend(reversed([stage_root for _, stage_root in raw.stages]))
        stack.extend(reversed(raw.children))
    built: Dict[int, Node] = {}
    used = set()
    for raw in reversed(order):
        op = raw.op
        block = blocks.get(op.id)  # type: ignore[arg-type]
        if block is None:
            return None
        used.add(op.id)
        fields = dict(block.fields)
        children = [built[id(child)] for child in raw.children]
        initial: Optional[Node] = None
        adaptive = op.name == ADAPTIVE_ROOT
        if raw.stages:
            for kind, stage_root in raw.stages:
                if kind == "Initial":
                    initial = built[id(stage_root)]
                else:
                    children.insert(0, built[id(stage_root)])
        elif adaptive and children:
            initial = children[0]
        stage = op.codegen_stage if op.codegen_stage is not None else block.codegen_stage
        name = intern(op.name)
        built[id(raw)] = new_node({
            "name": name, "args": op.args, "id": op.id, "codegen_stage": stage,
            "whole_stage_codegen": op.whole_stage_codegen, "title": intern(block.title),
            "details": fields, "children": tuple(children), "statistics": op.statistics,
            "description": op.description, "initial": initial,
            "is_final_plan": is_final_plan(op.args, fields) if adaptive else None,
            "line": op.line})
    if len(used) != len(blocks):
        return None
    return [built[id(root)] for root in roots]


def parse_formatted(text: str, source: str = "") -> Optional[Query]:
    """`parse_text(text, source).queries[0]` for a formatted plan description in the plain
    shape (its notes on signs of a cut text included, `damage.check_query`); None for any
    other text (then parse it with the grammar)."""
    from .damage import check_query
    from .lexer import PlanLines

    query = read_formatted(text)
    if query is None:
        return None
    notes = check_query(query, PlanLines.from_text(text), True)
    return dataclasses.replace(query, source=source, notes=tuple(dict.fromkeys(notes)))
