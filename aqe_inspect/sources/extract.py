"""Find the plans in a stream of lines: explain outputs, and the plans AQE logs.

A plan starts at a section header (`== Physical Plan ==`, `== Parsed Logical Plan ==`,
`Found N WholeStageCodegen subtrees.`), at an operator line with a tree under it, at a tree
whose top was cut (`+- Project ...`), or right after an AQE message heading (`Final plan:`,
`Plan changed from`). It runs as far as Spark's explain layout goes: tree lines, then blank
lines and formatted mode's detail blocks and subquery sections, or codegen subtrees. A new
log message always ends it. AQE's `Plan changed:` messages print the plan before and after
side by side; they are split into their two plans here.

Plans are yielded one at a time, with at most one plan's lines held.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Deque, Iterable, Iterator, List, Optional

from ..parsing.lexer import (
    CODEGEN_FOUND, CODEGEN_SUBTREE_HEADER, COMMENT, DETAIL_HEADER, ELISION, GENERATED_CODE_START,
    LOGICAL_HEADER, OPERATOR_START, OPTIMIZED_OUT_HEADER, PHYSICAL_HEADER, STAGE_HEADER,
    STAGE_ROOT, SUBPLAN_HEADER, SUBQUERIES_HEADER, SUBQUERY_HEADER, TREE_GLYPHS, TREE_LINE,
    PlanLines, looks_like_tree_root,
)
from .lines import Line

#: Roles of a plan found in a text.
EXPLAIN = "explain"
AQE_BEFORE = "aqe-before"    # the plan before a re-planning AQE logged
AQE_AFTER = "aqe-after"      # the plan after it
AQE_FINAL = "aqe-final"      # `Final plan:`
ORIGIN = {EXPLAIN: "explain output", AQE_BEFORE: "AQE log 'Plan changed' (before)",
          AQE_AFTER: "AQE log 'Plan changed' (after)", AQE_FINAL: "AQE log 'Final plan'"}
PLAN_HEADERS = {"Final plan:": AQE_FINAL, "Plan changed from": AQE_BEFORE, "to": AQE_AFTER,
                "Transformed Plan:": EXPLAIN}
GENERATED_LINE_START = "/* "
#: The first characters of what `_starts_section` recognises: `== ...`, `===== ...`, `(N) `,
#: `Subquery:`, `Subplan:`, `Generated code:`. (An empty text starts nothing.)
SECTION_STARTS = frozenset("=(SG")


@dataclass
class Region:
    """One plan's lines, cut out of the text, and what it is."""

    plan: PlanLines
    role: str = EXPLAIN
    notes: List[str] = field(default_factory=list)

    @property
    def first_line(self) -> int:
        return self.plan.numbers[0] if self.plan.numbers else 0


def find_plans(lines: Iterable[Line], max_chars: int = 0) -> Iterator[Region]:
    """Every plan in `lines`, in order."""
    stream = _Peekable(lines)
    while True:
        line = stream.peek()
        if line is None:
            return
        if line.header.startswith("=== "):
            # A plan-change rule block (a rule's plans side by side, its output information,
            # its metrics): what one rule did, not a query's plan; skipped up to the next
            # message or explain section.
            stream.next()
            while stream.peek() is not None and not stream.peek().message_start and \
                    not _is_section_header(stream.peek().text.strip()):
                stream.next()
            continue
        if line.header == "Plan changed:":
            stream.next()
            yield from _side_by_side(stream)
            continue
        role = PLAN_HEADERS.get(line.header)
        if role is not None and not line.text.strip():
            stream.next()  # the heading alone; the plan starts on the next line
            following = stream.peek()
            if following is not None and not following.message_start and \
                    _starts_plan(following, stream.peek(1), True):
                yield _region(stream, role, max_chars)
            continue
        if _starts_plan(line, stream.peek(1), role is not None):
            yield _region(stream, role or EXPLAIN, max_chars)
            continue
        stream.next()


def _starts_plan(line: Line, following: Optional[Line], announced: bool) -> bool:
    text = line.text.lstrip(" ")
    if not text:
        return False
    first = text[:1]  # each pattern below starts with a fixed character, or one of a few
    if first == "=" and (PHYSICAL_HEADER.match(text) or LOGICAL_HEADER.match(text)) or \
            first == "F" and CODEGEN_FOUND.match(text):
        return True
    indent = len(line.text) - len(text)
    after = following.text[indent:] if following is not None and \
        not following.message_start and following.text[:indent].strip() == "" else ""
    if announced and OPERATOR_START.match(text):
        return True
    glyph = first in "+:|"  # what TREE_LINE and STAGE_HEADER start with, blanks taken off
    tree = TREE_LINE.match(text) if glyph else None
    if tree and OPERATOR_START.match(tree["rest"]) and (TREE_GLYPHS.match(after) or
                                                        STAGE_HEADER.match(after)):
        return True  # a tree whose top was cut off
    if glyph and STAGE_HEADER.match(text):
        return True
    return looks_like_tree_root([text, after], 0)


class _Peekable:
    def __init__(self, lines: Iterable[Line]):
        self._it = iter(lines)
        self._buffer: Deque[Line] = deque()

    def peek(self, ahead: int = 0) -> Optional[Line]:
        buffer = self._buffer
        if len(buffer) > ahead:
            return buffer[ahead]
        while len(buffer) <= ahead:
            try:
                buffer.append(next(self._it))
            except StopIteration:
                return None
        return buffer[ahead]

    def next(self) -> Optional[Line]:
        if self._buffer:
            return self._buffer.popleft()
        return next(self._it, None)  # None: the stream has ended


class _Collect:
    """The lines of one region, with the common indentation of its first line taken off."""

    def __init__(self, indent: int, max_chars: int):
        self.indent = indent
        self.lines: List[str] = []
        self.numbers: List[int] = []
        self.columns: List[int] = []
        self.notes: List[str] = []
        self.chars = 0
        self.max_chars = max_chars

    def fits(self, line: Line) -> bool:
        indent = self.indent
        return not indent or line.text[:indent].strip() == "" or not line.text.strip()

    def add(self, line: Line, fits: Optional[bool] = None) -> None:
        """Keep `line` (`fits`: whether it holds the region's indentation, when known)."""
        indent = self.indent
        if fits is None:
            fits = self.fits(line)
        if fits and indent:
            text = line.text[indent:]
            self.columns.append(line.column + indent)
        else:
            text = line.text
            self.columns.append(line.column)
        self.lines.append(text)
        self.numbers.append(line.number)
        if line.damage:
            self.notes.append(f"line {line.number}: {line.damage}")
        self.chars += len(text) + 1
        if self.max_chars and self.chars > self.max_chars:
            self.refuse()

    def refuse(self) -> None:
        from ..errors import InspectError
        raise InspectError(f"a plan of more than {self.max_chars:,} characters starts at "
                           f"line {self.numbers[0]}; raise --max-size to read it",
                           line=self.numbers[0])


def _region(stream: _Peekable, role: str, max_chars: int) -> Region:
    first = stream.peek()
    indent = len(first.text) - len(first.text.lstrip(" "))
    out = _Collect(indent, max_chars)
    out.add(stream.next())
    state = "codegen" if CODEGEN_FOUND.match(first.text.strip()) else (
        _starts_section(first.text.strip()) or "tree")
    # The stream's lines are taken here without its peek and next (a step or two a line):
    # a line that does not belong to the region goes back to the front of its buffer.
    buffer, pull = stream._buffer, stream._it
    kept_lines, kept_numbers, kept_columns = out.lines, out.numbers, out.columns
    tree_glyphs = TREE_GLYPHS.match
    chars = out.chars  # out.chars, kept here (and handed back around out.add)
    while True:
        if buffer:
            line = buffer.popleft()
        else:
            line = next(pull, None)
            if line is None:
                break
        full = line.text
        if line.message_start or indent and full[:indent].strip() and full.strip():
            buffer.appendleft(line)  # a new message, or a line that leaves the indentation
            break
        text = full[indent:] if indent else full
        if not text or text.isspace():
            buffer.appendleft(line)
            following = _next_content(stream)
            if following is None or following.message_start or not out.fits(following):
                break
            if not _continues_after_blank(following.text[indent:], state):
                break
            out.chars = chars
            out.add(buffer.popleft())
            chars = out.chars
            continue
        if state == "tree" and text[:1] not in SECTION_STARTS and tree_glyphs(text):
            pass  # a tree line goes on with the tree (what _continues says, asked first)
        else:
            next_state = _continues(text, state)
            if next_state is None:
                buffer.appendleft(line)
                break
            state = next_state
        # out.add(line, True), inline: it fits (asked above)
        kept_lines.append(text)
        kept_numbers.append(line.number)
        kept_columns.append(line.column + indent)
        if line.damage:
            out.notes.append(f"line {line.number}: {line.damage}")
        chars += len(text) + 1
        if max_chars and chars > max_chars:
            out.refuse()
    out.chars = chars
    while out.lines and not out.lines[-1].strip():
        out.lines.pop()
        out.numbers.pop()
        out.columns.pop()
    return Region(PlanLines(out.lines, out.numbers, out.columns, announced=role != EXPLAIN),
                  role, out.notes)


def _next_content(stream: _Peekable) -> Optional[Line]:
    ahead = 0
    while True:
        line = stream.peek(ahead)
        if line is None or line.text.strip() or line.message_start:
            return line
        ahead += 1
        if ahead > 200:
            return None


def _is_section_header(text: str) -> bool:
    return bool(PHYSICAL_HEADER.match(text) or LOGICAL_HEADER.match(text)
                or CODEGEN_FOUND.match(text))


def _starts_section(text: str) -> Optional[str]:
    """A line after which a plan goes on past a blank line, and the state it puts us in."""
    if text[:1] not in SECTION_STARTS:
        return None  # each pattern below starts with one of these characters
    if PHYSICAL_HEADER.match(text):
        return "tree-next"
    if LOGICAL_HEADER.match(text):
        return "header"
    if DETAIL_HEADER.match(text):
        return "detail"
    if SUBQUERIES_HEADER.match(text) or OPTIMIZED_OUT_HEADER.match(text):
        return "subqueries"
    if SUBQUERY_HEADER.match(text) or SUBPLAN_HEADER.match(text):
        return "tree-next"
    if CODEGEN_SUBTREE_HEADER.match(text):
        return "tree-next"
    if text.startswith(GENERATED_CODE_START):
        return "code"
    return None


def _continues_after_blank(text: str, state: str) -> bool:
    section = _starts_section(text)
    if state == "header":
        return section is not None
    if state in ("tree", "detail", "subqueries", "tree-next"):
        return section in ("detail", "subqueries", "tree-next", "code") or \
            (state in ("subqueries", "tree-next") and bool(OPERATOR_START.match(text)))
    if state in ("code", "codegen"):
        return section in ("tree-next", "code")
    return False


def _continues(text: str, state: str) -> Optional[str]:
    """The state after `text` when it belongs to the plan being read, else None."""
    section = _starts_section(text)
    if section is not None:
        return section
    if state == "header":
        return "header"  # a logical plan's lines: any text until a blank line
    if state == "detail":
        return "detail"  # fields until a blank line
    if state == "code":
        return "code" if text.startswith(GENERATED_LINE_START) else None
    if state == "tree-next":
        return "tree" if OPERATOR_START.match(text) or TREE_GLYPHS.match(text) else None
    if state in ("tree", "subqueries", "codegen"):
        if TREE_GLYPHS.match(text) or STAGE_HEADER.match(text):
            return "tree"
        stripped = text.strip()
        if STAGE_ROOT.match(text) and text.startswith(" ") and OPERATOR_START.match(stripped):
            return "tree"  # the root of a plan stage, indented under its header
        if ELISION.match(stripped) or COMMENT.match(stripped):
            return "tree"
        if state == "subqueries" and OPERATOR_START.match(text):
            return "tree"
    return None


# ---- AQE's side-by-side `Plan changed:` blocks ---------------------------------------------
def _side_by_side(stream: _Peekable) -> Iterator[Region]:
    """Spark's sideBySide: a marker column (`!` where the two differ), the plan before padded
    to its longest line plus three spaces, then the plan after."""
    block: List[Line] = []
    while True:
        line = stream.peek()
        if line is None or line.message_start or not line.text[:1] in (" ", "!"):
            break
        block.append(stream.next())
    if not block:
        return
    split = _split_column(block)
    if split is None:
        yield Region(PlanLines([], []), AQE_BEFORE,
                     [f"line {block[0].number}: an AQE 'Plan changed' block whose two plans "
                      "could not be told apart; skipped"])
        return
    for role, pick in ((AQE_BEFORE, lambda t: t[1:split - 3].rstrip()),
                       (AQE_AFTER, lambda t: t[split:].rstrip())):
        lines, numbers, columns = [], [], []
        for line in block:
            text = pick(line.text)
            if text:
                lines.append(text)
                numbers.append(line.number)
                columns.append(line.column + (1 if role == AQE_BEFORE else split))
        if lines:
            yield Region(PlanLines(lines, numbers, columns, announced=True), role)


def _split_column(block: List[Line]) -> Optional[int]:
    """The column the plan after starts at: 1 + the longest line before + 3."""
    first = block[0].text
    candidates = []
    run = 0
    for index, char in enumerate(first):
        if char == " ":
            run += 1
        else:
            if run >= 3 and index > 4:
                candidates.append(index)
            run = 0
    for column in candidates:
        longest = False
        for line in block:
            text = line.text
            if len(text) > column - 3 and text[column - 3:column].strip():
                break
            if len(text) >= column - 3 and text[column - 4:column - 3].strip():
                longest = True
        else:
            if longest:
                return column
    return None
