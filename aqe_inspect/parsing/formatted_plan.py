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
and the initial plan of each `AdaptiveSparkPlan`, a cached relation's nested one included;
inner plans printed two levels below their operator, as a command's query; operators printed
`(unknown)` under an EmptyRelation), then the detail blocks and the `===== Subqueries =====`
section's entries, every tree line with its `(N)` and every
block joined to one tree line. Lines are split as the grammar's parser splits them
(`read_operator_line`; `read_detail_block`, or for runs of plain blocks one regex call over
the text that gives the same fields) and the nodes are made as its builder makes them, so
the `Query` is the one `parse_text` gives (tests hold the two equal over every sample and
golden plan, and over altered ones). Anything else (an elision, a cut text, a jump of more
than two levels, a stage without its initial plan, a line of an unexpected kind, a block
missing or twice) gives None: the caller parses the text with the grammar, which reads and
notes every such case.

The notes `damage.check_query` makes on signs of a cut are asked only when the reader has
not proved there are none (`_read_plain`): a long log's descriptions nearly all show none.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from sys import intern
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .. import native
from ..errors import PlanSyntaxError
from ..plan.model import ADAPTIVE_ROOT, MAX_DIGITS, Node, Query, Subquery
from ._blockrows_py import BLOCK_ROW  # noqa: F401 - named here as before
from .operator_line import OperatorLine, is_final_plan, read_detail_block, \
    read_operator_line, title_and_stage

HEADER = "== Physical Plan =="
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



#: Node's fields in its order, as `_plain_node` fills them; when Node changes, the reader makes
#: its nodes with `new_node` instead.
_NODE_FIELDS = ("name", "args", "id", "codegen_stage", "whole_stage_codegen", "title",
                "details", "children", "inner", "statistics", "description", "initial",
                "is_final_plan", "line", "plan_line", "metrics", "spreads")
_LITERAL = _FAST and tuple(f.name for f in _FIELDS) == _NODE_FIELDS and \
    _DEFAULTS.get("inner") == () and _DEFAULTS.get("plan_line") is False and [name for name, _ in _FACTORIES] == [
        "details", "metrics", "spreads"] and all(factory is dict for _, factory in _FACTORIES)


def _plain_node(name: str, args: str, op_id: int, stage: Optional[int], whole_stage: bool,
                title: str, details: Dict[str, str], children: Tuple[Node, ...],
                inner: Tuple[Node, ...], statistics: Optional[str], description: Optional[str],
                initial: Optional[Node], final: Optional[bool], line: int) -> Node:
    """`new_node` of one formatted-plan operator, its __dict__ filled by one literal (the
    reader makes a node per tree line: the defaults' loop was a tenth of its time)."""
    if not _LITERAL:  # pragma: no cover - a Node with other fields
        return new_node({
            "name": name, "args": args, "id": op_id, "codegen_stage": stage,
            "whole_stage_codegen": whole_stage, "title": title, "details": details,
            "children": children, "inner": inner, "statistics": statistics,
            "description": description, "initial": initial, "is_final_plan": final,
            "line": line})
    node = _new_object(Node)
    node.__dict__.update({
        "name": name, "args": args, "id": op_id, "codegen_stage": stage,
        "whole_stage_codegen": whole_stage, "title": title, "details": details,
        "children": children, "inner": inner, "statistics": statistics,
        "description": description, "initial": initial, "is_final_plan": final, "line": line,
        "plan_line": False, "metrics": {}, "spreads": {}})
    return node


_new_object = object.__new__


# ---- tree lines --------------------------------------------------------------------------------

#: The parts of a tree line's operator that do not depend on where it stands: name (interned),
#: args, id (None for `(unknown)`), codegen stage, whole-stage flag, statistics, description;
#: then what `damage.leaf_rules` says of its name (it needs a child; it is a join), which
#: `_build` asks.
Parts = Tuple[str, str, Optional[int], Optional[int], bool, Optional[str], Optional[str], bool,
              bool]


def _parts(op: OperatorLine) -> Parts:
    from .damage import leaf_rules

    return (intern(op.name), op.args, op.id, op.codegen_stage,  # type: ignore[return-value]
            op.whole_stage_codegen, op.statistics, op.description, *leaf_rules(op.name))


#: Child tree lines read before, by their whole text: (level, whether the glyphs hold a `:`,
#: the parts). An event log prints the same plan for every run of a query, and formatted
#: mode's tree lines carry no expression ids, so a long log reads most of its tree lines once.
#: Only lines that read as a plain operator are kept (never one that gives None or an error,
#: which is read again where it stands). Bounded; emptied when full.
_TREE_LINES: Dict[str, Tuple[int, bool, Parts]] = {}
_TREE_LINES_MAX = 4096
#: Longer lines are read each time (the operator line cache keeps them as long).
_TREE_LINE_CACHED = 1024


class _Tree:
    """One tree's operator lines in printed order (a parent before what hangs under it), each
    with its parts, line number and parent's position (-1 for the root and for a stage's
    root; `inner_of(p)` for a line that starts or continues an inner plan of the line at p);
    each staged AdaptiveSparkPlan's stage roots, by its position: [(kind, position)]."""

    __slots__ = ("parts", "numbers", "parents", "stages")

    def __init__(self):
        self.parts: List[Parts] = []
        self.numbers: List[int] = []
        self.parents: List[int] = []
        self.stages: Dict[int, List[Tuple[str, int]]] = {}


def inner_of(owner: int) -> int:
    """The parent a line has in `_Tree.parents` when it is an inner plan's root of the line at
    position `owner`: at most -2, apart from the root's -1 (its own inverse)."""
    return -owner - 2


#: As the lexer reads a stage header anywhere in a tree, and the root line under it.
STAGE_MARK = " Plan =="
STAGE_HEADER = re.compile(r"(?P<pre>[ :|]*)\+- == (?P<which>Final|Initial|Current) Plan ==\s*$")
STAGE_ROOT = re.compile(r"(?P<pre>[ :|]*)(?P<rest>\S.*)")
#: The stage kinds one AdaptiveSparkPlan may have, in order (anything else the grammar notes).
STAGE_KINDS = (["Final", "Initial"], ["Current", "Initial"])


def _starts_tree(line: str) -> bool:
    """An operator line at column 0, as the lexer asks after a subquery's header (the rest is
    checked as the tree is read)."""
    return bool(OPERATOR_START.match(line)) and not line.startswith(("Subquery:", "Subplan:"))


def _operator(rest: str, line: int, column: int) -> Optional[OperatorLine]:
    """The parts of a tree line's operator; None when it is not one in the plain shape: with
    its `(N)`, or `(unknown)` (a logical operator Spark 4 prints under an EmptyRelation)."""
    first = rest[:1]
    if first == "*":
        if rest[1:2] != " " or rest[2:3] not in NAME_START:
            return None
    elif first not in NAME_START:
        return None
    op = read_operator_line(rest, line, column)
    if op.id is None and not op.unnumbered:
        return None
    return op


def _read_tree(lines: List[str], index: int, shape_from: List[int]
               ) -> Optional[Tuple[_Tree, int]]:
    """The tree from `lines[index]` (its root, at column 0) to the blank line after it, its
    levels read as the lexer reads them: three columns a level, two levels down an inner plan,
    and under each `== X Plan ==` stage a frame that maps the columns its lines are printed at
    to levels below its AdaptiveSparkPlan (a nested one's do not line up with the lines above).

    The number of the first line past the shape this reader once stopped at (an inner plan,
    a nested AdaptiveSparkPlan's stages) is put in `shape_from` (when it is empty) before the
    line is read: `_read_plain` gives None for an error from there on."""
    count = len(lines)
    if index >= count:
        return None
    root_op = _operator(lines[index], index + 1, 1)
    if root_op is None:
        return None
    if root_op.unnumbered and not shape_from:
        shape_from.append(index + 2)
    tree = _Tree()
    parts, numbers, parents, stages = tree.parts, tree.numbers, tree.parents, tree.stages
    parts.append(_parts(root_op))
    numbers.append(index + 1)
    parents.append(-1)
    # path[level] is the position of the line at that level the next deeper line hangs under
    # (inner_of(owner) where an inner plan of owner opens).
    path: List[int] = [0]
    #: The stage frames open: (the column level of its root, the levels its lines are printed
    #: off by, its AdaptiveSparkPlan's position and level, "final" or "initial").
    frames: List[Tuple[int, int, int, int, str]] = []
    last_colon = False  # the last line's glyphs say more children follow
    known = _TREE_LINES
    index += 1
    while index < count:
        line = lines[index]
        entry = known.get(line)
        if entry is None:
            if not line.strip():
                break
            stage = STAGE_HEADER.match(line) if STAGE_MARK in line else None
            if stage is not None:
                which = stage["which"]
                if which == "Initial":
                    while frames and frames[-1][4] != "final":
                        frames.pop()
                    if not frames:
                        return None  # a lone initial plan, or an error: the grammar's
                    _, _, owner, level, _ = frames.pop()
                    if len(path) <= level or path[level] != owner or \
                            len(stages.get(owner, ())) != 1:
                        return None
                else:
                    owner, level = path[-1], len(path) - 1
                    if parts[owner][0] != ADAPTIVE_ROOT or owner in stages:
                        return None
                if owner != 0 or line.rstrip() != "+- == " + which + " Plan ==":
                    if not shape_from:
                        shape_from.append(index + 1)
                index += 1
                if index >= count:
                    return None
                stage_line = lines[index]
                root = STAGE_ROOT.match(stage_line)
                if root is None:
                    return None
                pre = root["pre"]
                if pre != "   " and not shape_from:
                    shape_from.append(index)  # (the header's line)
                op = _operator(root["rest"], index + 1, len(pre) + 1)
                if op is None or op.name == ADAPTIVE_ROOT:
                    return None
                if op.unnumbered and not shape_from:
                    shape_from.append(index + 2)
                at = len(parts)
                stages.setdefault(owner, []).append((which, at))
                parts.append(_parts(op))
                numbers.append(index + 1)
                parents.append(-1)
                raw = len(pre) // 3
                frames.append((raw, raw - (level + 1), owner, level,
                               "initial" if which == "Initial" else "final"))
                del path[level + 1:]
                path.append(at)
                last_colon = ":" in pre
                index += 1
                continue
            glyphs = TREE_LINE.match(line)
            if glyphs is None:
                return None
            at = glyphs.end() - 3
            raw = at // 3 + 1
        else:
            raw = entry[0]
        while frames and raw <= frames[-1][0]:
            frames.pop()
        level = raw - frames[-1][1] if frames else raw
        if level < 1 or level > len(path) + 1:
            return None  # above the root, or a jump (a cut): the grammar's error or note
        if level > len(path) and not shape_from:
            shape_from.append(index + 1)
        if entry is None:
            op = _operator(line[at + 3:], index + 1, at + 4)
            if op is None:
                return None
            entry = (raw, ":" in line[:at + 3], _parts(op))
            if len(line) <= _TREE_LINE_CACHED:
                if len(known) >= _TREE_LINES_MAX:
                    known.clear()
                known[line] = entry
        if (entry[2][0] == ADAPTIVE_ROOT or entry[2][2] is None) and not shape_from:
            # a nested AdaptiveSparkPlan, an unnumbered operator: from the next line
            shape_from.append(index + 2)
        if level > len(path):
            # Two levels below the line above: an inner plan of it (a command's query, a
            # cached relation's plan), as the lexer reads a jump of two.
            path.append(inner_of(path[-1]))
        del path[level:]
        if path[-1] in stages:
            return None  # beside an AdaptiveSparkPlan's stages: the grammar's case
        parents.append(path[-1])
        path.append(len(parts))
        parts.append(entry[2])
        numbers.append(index + 1)
        last_colon = entry[1]
        index += 1
    if last_colon:
        return None  # the last line says more children follow: cut short
    for kinds in stages.values():
        if [kind for kind, _ in kinds] not in STAGE_KINDS:
            return None
    return tree, index


# ---- detail blocks -----------------------------------------------------------------------------

#: A block read: its title (interned), the codegen stage its heading names, its fields.
Block = Tuple[str, Optional[int], Dict[str, str]]

#: A run of plain detail blocks, read at once (`_blockrows_c.pyx`, or its pure twin
#: `_blockrows_py.py`): each line a header `(N) Title`, a field `Key [n]: value` or an empty
#: line (the regex BLOCK_ROW). Any other line (a value printed over
#: several lines, a whitespace-only line, a section header, a hidden location) leaves a line
#: unmatched, and the blocks are then read line by line (`_read_sections`).
_read_block_run = native.load("aqe_inspect.parsing._blockrows").read_blocks
#: What `_plain_blocks` gives when the blocks are not all plain: read them line by line.
_ASK_LINES: Any = object()
#: Headings and field keys read before, by their text (bounded, emptied when full): a log
#: prints the same few hundred again and again.
_HEADINGS: Dict[str, Tuple[str, Optional[int]]] = {}
_KEYS: Dict[str, str] = {}
_KNOWN_MAX = 4096


def _plain_blocks(text: str, start: int, end: int) -> Any:
    """The detail blocks in `text[start:end]` (whole lines), when every line there is a
    block's header, its field or an empty line, a header leads every run of lines, and no
    number is too long or block printed twice: (the blocks by id in printed order, the last
    one's id); else _ASK_LINES. Each block reads as `read_detail_block` reads it."""
    return _read_blocks(text, start, end)


def _read_blocks(text: str, start: int, end: int) -> Any:
    """`_plain_blocks`, which tests replace to read every block line by line; this is what
    it reads with (`_blockrows_c.pyx`, or its pure twin `_blockrows_py.py`)."""
    read = _read_block_run(text, start, end, _HEADINGS, _KEYS, _heading, _KNOWN_MAX,
                           MAX_DIGITS)
    return _ASK_LINES if read is None else read


def _heading(heading: str) -> Optional[Tuple[str, Optional[int]]]:
    """A block header's (title, codegen stage), or None when it cannot be read (a stage of
    more digits than a number can have: an error, raised where it stands by the line
    reading)."""
    try:
        return title_and_stage(heading, 0, 0)
    except PlanSyntaxError:
        return None


#: Lines that end a run of detail blocks read at once: a section header (`=====
#: Subqueries =====`), a subquery's entry. (Searched as `\n` and these.)
RUN_ENDS = ("\n=", "\nSubquery:")


def _run_end(text: str, start: int) -> int:
    """Where the run of detail blocks from `start` ends: at the `\n` before the next line
    that can end it (RUN_ENDS), else at the end of the text."""
    end = len(text)
    for mark in RUN_ENDS:
        found = text.find(mark, start, end)
        if found >= 0:
            end = found
    return end


#: A `===== Subqueries =====` entry: its header's match, its line number, its tree or None.
Entry = Tuple[Any, int, Optional[_Tree]]


def _read_sections(text: str, lines: List[str], index: int, offset: int,
                   shape_from: List[int]
                   ) -> Optional[Tuple[Dict[int, Block], List[Entry], Optional[int]]]:
    """What follows the tree from `lines[index]` (at `offset` in `text`): the detail blocks,
    the subquery section's entries, and the last block's id when the text's last line is in
    it (-1 when that line is an entry's alone, None when it is anything else); None when
    anything else is there. Each run of blocks that ends with a
    blank line (before a section or an entry) or the text is read at once when it is plain
    (`_plain_blocks`); otherwise the rest is read line by line, as the grammar's lexer reads
    it."""
    count = len(lines)
    blocks: Dict[int, Block] = {}
    entries: List[Entry] = []
    in_subqueries = False
    last_block: Optional[int] = None
    by_lines = False  # a run was not plain: the rest is read line by line
    known_index, known_offset = index, offset  # a line whose offset in the text is known
    while True:
        while index < count and not lines[index].strip():
            index += 1
        if index >= count:
            break
        line = lines[index]
        if line[:1] == "(" and DETAIL_HEADER.match(line):
            if in_subqueries and not entries:
                return None
            if not by_lines:
                offset = known_offset + sum(map(len, lines[known_index:index])) + \
                    index - known_index
                end = _run_end(text, offset)
                plain = _ASK_LINES
                if end == len(text) or text[end - 1] == "\n":  # the run ends with a blank line
                    plain = _plain_blocks(text, offset, end)
                if plain is not _ASK_LINES and blocks.keys().isdisjoint(plain[0]):
                    blocks.update(plain[0])
                    last_block = plain[1] if end == len(text) else None
                    index += text.count("\n", offset, end) + 1
                    known_index, known_offset = index, end + 1
                    continue
                by_lines = True
            last_block = None
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
            blocks[block.id] = (intern(block.title), block.codegen_stage, block.fields)
        elif not in_subqueries and line[:1] == "=" and SUBQUERIES_HEADER.match(line):
            in_subqueries = True
            last_block = None
            index += 1
        elif in_subqueries and line.startswith("Subquery:"):
            header = SUBQUERY_HEADER.match(line)
            if header is None or header["host"] is None:
                return None  # the grammar's parse notes a header without its host
            at = index + 1
            index += 1
            while index < count and not lines[index].strip():
                index += 1
            sub_tree = None
            if index < count and _starts_tree(lines[index]):
                read = _read_tree(lines, index, shape_from)
                if read is None:
                    return None
                sub_tree, index = read
            entries.append((header, at, sub_tree))
            # An entry without a tree after a blank line, when the text ends with it: its
            # last line is no tree line and closes no detail block (-1: no block to ask of).
            last_block = -1 if sub_tree is None and not lines[at - 2].strip() else None
        else:
            return None  # optimized-out exchanges, a codegen section, stray text
    if not blocks or in_subqueries and not entries:
        return None
    return blocks, entries, last_block


# ---- the query ---------------------------------------------------------------------------------

def read_formatted(text: str) -> Optional[Query]:
    """The query of a formatted plan description in the plain shape (see above), as
    `parse_text(text).queries[0]` gives it before its source, origin and notes are set;
    None for any other text."""
    read = _read_plain(text)
    if read is None:
        return None
    _LAST_READ.read = read
    return read[0]


#: The last `_read_plain` of this thread, for `parse_formatted` (which reads through
#: `read_formatted`, the one place a caller or a test replaces this reader).
_LAST_READ = threading.local()


def _read_plain(text: str) -> Optional[Tuple[Query, bool]]:
    """`read_formatted`'s query, and whether the text shows no sign of a cut that
    `damage.check_query` would note (True only when that is certain; see `_whole`).

    An operator id or codegen stage of more digits than a number can have is an error where
    it stands, as the grammar's parse makes it; but from the first line of a shape this
    reader once gave to the grammar (an inner plan, a nested AdaptiveSparkPlan's stages:
    `_read_tree`) on, where the grammar's error is a note on the execution, it gives None."""
    shape_from: List[int] = []
    try:
        return _read_parts(text, shape_from)
    except PlanSyntaxError as error:
        if shape_from and error.line is not None and error.line >= shape_from[0]:
            return None
        raise


def _read_parts(text: str, shape_from: List[int]) -> Optional[Tuple[Query, bool]]:
    """`_read_plain`, its errors raised where they stand (`shape_from`: see `_read_tree`)."""
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
    read = _read_tree(lines, index + 1, shape_from)
    if read is None:
        return None
    tree, index = read
    sections = _read_sections(text, lines, index, sum(map(len, lines[:index])) + index,
                              shape_from)
    if sections is None:
        return None
    blocks, entries, last_block = sections
    trees = [sub_tree for _, _, sub_tree in entries if sub_tree is not None]
    built = _build([*trees, tree], blocks, last_block)
    if built is None:
        return None
    roots, signs = built
    next_root = iter(roots)
    subqueries = tuple(
        Subquery(index=int(header["index"]), hosting_operator_id=int(header["host"]),
                 hosting_expression=(header["expr"] or "").strip(),
                 tree=next(next_root) if sub_tree is not None else None, line=at)
        for header, at, sub_tree in entries)
    query = Query(root=roots[-1], subqueries=subqueries, mode="formatted", line=header_line,
                  number=1)  # the one plan of its text, as the grammar numbers it
    whole = last_block is not None and not signs and _whole(query, text, lines)
    return query, whole


def _whole(query: Query, text: str, lines: List[str]) -> bool:
    """The rest of the proof that `check_query` notes nothing of a plain text whose last line
    is in a run of plain blocks (so it is no tree line, and its block is the last one) and
    whose nodes show no sign (`_build`): the last line's brackets close, and every subquery
    is printed and has its entries (asked only when there are subqueries or a detail names
    one)."""
    from .damage import SUBQUERY_MARKS, last_line_unbalanced, subqueries_cut

    if (query.subqueries or any(mark in text for mark in SUBQUERY_MARKS)) and \
            subqueries_cut(query):
        return False
    index = len(lines) - 1
    while not lines[index].strip():
        index -= 1
    return not last_line_unbalanced(lines[index])


def _build(trees: List[_Tree], blocks: Dict[int, Block], last_block: Optional[int]
           ) -> Optional[Tuple[List[Node], bool]]:
    """Each tree's root node, made as the grammar's builder makes a formatted plan's (children
    first: a tree's lines from the last, as a parent is printed before its children); None
    when a line has no block or a block no line. (Lines may share a block: the initial plan
    prints the operators AQE left alone with their final ids.) With them, whether a node
    shows a sign `check_query` notes: a leaf that needs a child, a join with one input, an
    adaptive root without its flag, or the last block (`last_block`) lacking a field."""
    from .damage import missing_fields

    used = set()
    roots: List[Node] = []
    signs = False
    literal, new_object = _LITERAL, _new_object
    for tree in trees:
        all_parts, numbers, parents = tree.parts, tree.numbers, tree.parents
        stages = tree.stages
        # each line's children and inner plans made so far, last first (None before the first)
        below: List[Optional[List[Node]]] = [None] * len(all_parts)
        inside: List[Optional[List[Node]]] = [None] * len(all_parts)
        stage_roots: Dict[int, Node] = {}
        for at in range(len(all_parts) - 1, -1, -1):
            (name, args, op_id, op_stage, whole_stage, statistics, description, needs_child,
             join) = all_parts[at]
            if op_id is None:  # `(unknown)`: a logical operator, without a detail block
                title, block_stage, details = name, None, {}
            else:
                block = blocks.get(op_id)
                if block is None:
                    return None
                title, block_stage, fields = block
                if op_id in used:
                    details = dict(fields)
                else:
                    used.add(op_id)
                    details = fields
            kids = below[at]
            if kids is None:
                children: Tuple[Node, ...] = ()
            else:
                kids.reverse()
                children = tuple(kids)
            kids = inside[at]
            if kids is None:
                inner: Tuple[Node, ...] = ()
            else:
                kids.reverse()
                inner = tuple(kids)
            initial = None
            final = None
            if name == ADAPTIVE_ROOT:
                own = stages.get(at)
                if own is not None:  # [(Final or Current, its root), (Initial, its root)]
                    children = (stage_roots[own[0][1]],)
                    initial = stage_roots[own[1][1]]
                elif children:
                    initial = children[0]
                final = is_final_plan(args, details)
                if final is None:
                    signs = True
            stage = op_stage if op_stage is not None else block_stage
            if literal:  # `_plain_node`, written out: one call less a node
                node = new_object(Node)
                node.__dict__.update({
                    "name": name, "args": args, "id": op_id, "codegen_stage": stage,
                    "whole_stage_codegen": whole_stage, "title": title, "details": details,
                    "children": children, "inner": inner, "statistics": statistics,
                    "description": description, "initial": initial, "is_final_plan": final,
                    "line": numbers[at], "plan_line": False, "metrics": {}, "spreads": {}})
            else:  # pragma: no cover - a Node with other fields
                node = _plain_node(name, args, op_id, stage, whole_stage, title, details,
                                   children, inner, statistics, description, initial, final,
                                   numbers[at])
            if children:
                if join and len(children) == 1:
                    signs = True
            elif needs_child:
                signs = True
            if op_id == last_block and op_id is not None and missing_fields(node):
                signs = True
            parent = parents[at]
            if parent == -1:
                stage_roots[at] = node  # (or the root)
            elif parent >= 0:
                siblings = below[parent]
                if siblings is None:
                    below[parent] = [node]
                else:
                    siblings.append(node)
            elif parent < -1:
                owner = inner_of(parent)
                siblings = inside[owner]
                if siblings is None:
                    inside[owner] = [node]
                else:
                    siblings.append(node)
        roots.append(node)  # the last made: the root
    if len(used) != len(blocks):
        return None
    return roots, signs


def parse_formatted(text: str, source: str = "") -> Optional[Query]:
    """`parse_text(text, source).queries[0]` for a formatted plan description in the plain
    shape (its notes on signs of a cut text included, `damage.check_query`); None for any
    other text (then parse it with the grammar)."""
    _LAST_READ.read = None
    query = read_formatted(text)
    if query is None:
        return None
    read, _LAST_READ.read = _LAST_READ.read, None
    if read is not None and read[0] is query and read[1]:
        notes: Tuple[str, ...] = ()  # nothing check_query would note (see _read_plain)
    else:
        from .damage import check_query
        from .lexer import PlanLines

        notes = tuple(dict.fromkeys(check_query(query, PlanLines.from_text(text), True)))
    return dataclasses.replace(query, source=source, notes=notes)
