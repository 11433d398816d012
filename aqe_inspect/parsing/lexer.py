"""Turn explain text into the line tokens of `grammars/explain.lark`.

Spark draws an operator tree with glyph prefixes, three characters a level:

    AdaptiveSparkPlan isFinalPlan=true
    +- == Final Plan ==
       *(2) HashAggregate(keys=[k#1], ...)          <- stage root: indented, no connector
       +- AQEShuffleRead coalesced
          +- ShuffleQueryStage 0
    +- == Initial Plan ==
       ...

A tree is indentation-sensitive, so this lexer does what a Python lexer does: it measures each
line's level and emits `_INDENT` / `_DEDENT` between `OPERATOR` tokens. Two quirks of Spark's
printer need care:

* subquery expressions and cached plans are printed two levels below their operator (an
  `inner` block in the grammar), so a jump of two levels is legal;
* the trees under `== Final Plan ==` / `== Initial Plan ==` are printed with their own
  indentation, which for an adaptive plan nested in another one's stage does not line up with
  the operator above it. Each stage therefore gets a frame that maps printed columns back to
  the logical level of the stage's `AdaptiveSparkPlan`.

Everything that is not a tree (section headers, formatted-mode detail blocks, the subquery
section, codegen output) is recognised line by line from the state the lexer is in.

The lexer reads a `PlanLines`: the lines of one plan as the sources layer cut them out of a
log, a notebook or a pasted text, each with its line and column in the original file, so
every token, error and note points at the original. Damage a person's paste brings (an
elided `...` line, a comment line, a tree whose top was cut, indentation that jumps) is read
through and recorded as `Damage`, never silently.
"""

from __future__ import annotations

import re
import contextvars
from dataclasses import dataclass, field
from typing import Iterator, List, Optional, Sequence

from lark.lexer import Lexer, Token

from ..errors import PlanSyntaxError
from .. import native
from ..plan.model import INCOMPLETE_TAIL

#: What an operator line starts with: an optional codegen marker (`*(3) ` simple, `* `
#: formatted, `*` alone where Spark's test golden files hide the stage number, `^(3) ` and
#: `^ ` Gluten's columnar stages, `!` RAPIDS' operators that stay on the CPU) and a name.
CODEGEN_MARKER = r"(?:[*^]\(\d+\) |[*^] ?|!)"
TREE_LINE = re.compile(r"(?P<pre>(?:[ :|]  )*)(?P<conn>[+:]- )(?P<rest>.*)")
#: TREE_LINE up to its connector (what follows it, `rest`, is the rest of the line): where
#: only whether a line is a tree line matters, or where its operator starts.
TREE_GLYPHS = re.compile(r"(?:[ :|]  )*[+:]- ")
#: TREE_GLYPHS (the match ends where they do), and whether OPERATOR_START matches what
#: follows them (the group `operator`, looked ahead at; None when it does not match): the tree
#: lexer asks both of every tree line.
TREE_OPERATOR = re.compile(r"(?:[ :|]  )*[+:]- (?:(?=(?P<operator>" + CODEGEN_MARKER +
                           r"?[A-Za-z_]))|)")
STAGE_HEADER = re.compile(r"(?P<pre>[ :|]*)\+- == (?P<which>Final|Initial|Current) Plan ==\s*$")
STAGE_ROOT = re.compile(r"(?P<pre>[ :|]*)(?P<rest>\S.*)")
PHYSICAL_HEADER = re.compile(r"== Physical Plan ==\s*$")
LOGICAL_HEADER = re.compile(r"== (?:Parsed|Analyzed|Optimized) Logical Plan ==\s*$")
SUBQUERIES_HEADER = re.compile(r"=+ Subqueries =+\s*$")
OPTIMIZED_OUT_HEADER = re.compile(r"=+ Adaptively Optimized Out Exchanges =+\s*$")
SUBQUERY_HEADER = re.compile(r"Subquery:\d+ Hosting operator id = ")
SUBPLAN_HEADER = re.compile(r"Subplan:\d+\s*$")
DETAIL_HEADER = re.compile(r"\(\d+\) \S")
CODEGEN_FOUND = re.compile(r"Found \d+ WholeStageCodegen subtrees?\.\s*$")
CODEGEN_SUBTREE_HEADER = re.compile(r"== Subtree \d+ / \d+ .*==\s*$")
GENERATED_CODE_START = "Generated code:"
OPERATOR_START = re.compile(CODEGEN_MARKER + r"?[A-Za-z_][\w$]*")
ADAPTIVE_OPERATOR = re.compile(CODEGEN_MARKER + r"?AdaptiveSparkPlan\b")
#: A line an author put in place of operators they left out: `...`, `…`, `(...)`, `[...]`.
ELISION = re.compile(r"(?:\.{3,}|\u2026|\(\.{3,}\)|\[\.{3,}\])(?: .{0,80})?$")
#: TREE_OPERATOR and DETAIL_HEADER asked of a line without a match object (`_treescan_c.pyx`,
#: or its pure twin `_treescan_py.py`, which holds the same patterns).
_treescan = native.load("aqe_inspect.parsing._treescan")
_tree_operator, _is_detail_header = _treescan.tree_operator, _treescan.is_detail_header
#: A comment line an author inserted: `// ...`, `-- ...`, `# ...`, `<-- ...`.
COMMENT = re.compile(r"(?://|--|#+|<--)")
#: The first characters an ELISION or a COMMENT can have (after blank space): a tree line
#: starting otherwise (with an operator's name) is neither, without asking the regexes.
INSERTED_STARTS = ".\u2026([/-#<"
#: What every STAGE_HEADER line holds.
STAGE_MARK = " Plan =="
#: The root of a tree whose top was cut off: the operators above its first line are missing.
CUT_ROOT = "(cut)"


class BlockToken(Token):
    """A DETAIL_HEADER token standing for a run of detail blocks: `blocks` holds each one's
    header, FIELD lines and line number (see `_LineLexer._detail_block`)."""

    __slots__ = ("blocks",)


class TreeTokens(list):
    """The tokens of one operator tree, from its root's OPERATOR to its _TREE_END, in order,
    each as the tuple `(type, value, line, column)` it is made from (`tokens()`): the tree
    builder reads them so (parser._direct_tree), and only a tree it refuses goes through
    Lark's tables as tokens."""

    def tokens(self) -> List[Token]:
        """The tokens themselves."""
        return [_new_token(Token, kind, value, line, column)
                for kind, value, line, column in self]


_new_str = str.__new__


def _new_token(token_class: type, kind: str, value: str, line: int, column: int) -> Token:
    """`Token(kind, value, 0, line, column, line, column + len(value), len(value))`, without
    the argument handling of Token's constructor (a few hundred thousand tokens a run)."""
    token = _new_str(token_class, value)
    token.type, token.value, token.start_pos = kind, value, 0
    token.line, token.column, token.end_line = line, column, line
    token.end_column, token.end_pos = column + len(value), len(value)
    return token


@dataclass(frozen=True)
class Damage:
    """Something in a plan's text that is not as Spark prints it, read through and reported.

    `incomplete` says operators may be missing, so the counts of a report are lower bounds.
    """

    line: int
    message: str
    incomplete: bool = True

    def note(self) -> str:
        tail = INCOMPLETE_TAIL if self.incomplete else ""
        return f"line {self.line}: {self.message}{tail}"


@dataclass
class PlanLines:
    """The lines of one plan and where each stands in the original text (1-based line, and
    the 0-based column its first character had there)."""

    lines: List[str]
    numbers: List[int]
    columns: List[int] = field(default_factory=list)
    #: Said to be a plan by what came before it (`Final plan:` in a log): a single operator
    #: line is then a whole plan.
    announced: bool = False

    def __post_init__(self):
        if not self.columns:
            self.columns = [0] * len(self.lines)

    @classmethod
    def from_text(cls, text: str, first_line: int = 1) -> "PlanLines":
        lines = text.split("\n")
        if "\r" in text:
            lines = [line[:-1] if line.endswith("\r") else line for line in lines]
        return cls(lines, list(range(first_line, first_line + len(lines))), [0] * len(lines))

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def line_number(self, index: int) -> int:
        if not self.numbers:
            return 1
        return self.numbers[min(max(index, 0), len(self.numbers) - 1)]

    def column(self, index: int, column: int) -> int:
        if not self.columns:
            return column + 1
        return self.columns[min(max(index, 0), len(self.columns) - 1)] + column + 1


@dataclass
class _StageFrame:
    """One `== X Plan ==` block being read: maps its printed columns to logical levels."""

    kind: str  # "final" (Final or Current) or "initial"
    adaptive_level: int
    root_raw: int
    offset: int


def _raw_level(match: "re.Match") -> int:
    return (len(match["pre"]) + 3) // 3


class _LineLexer:
    """The state machine over lines; `tokens()` yields the whole stream."""

    def __init__(self, plan: PlanLines, text: Optional[str] = None):
        self.plan = plan
        self.lines = plan.lines
        self.text = plan.text if text is None else text  # the lines joined, as Lark is given
        self.damage: List[Damage] = []
        # Where each line stood, read straight from the lists when they cover every line.
        self._numbers, self._columns = plan.numbers, plan.columns
        self._direct = len(plan.numbers) == len(plan.columns) == len(plan.lines)

    # ---- helpers -----------------------------------------------------------------------------
    def _line(self, index: int) -> str:
        return self.lines[index]

    def _entry(self, kind: str, value: str, index: int, column: int = 0) -> tuple:
        """`_token(kind, value, index, column)` as an entry of a TreeTokens list."""
        last = len(self.lines) - 1
        if index > last:
            index = last  # tokens closing the text sit on its last line
        if self._direct:
            return (kind, value, self._numbers[index], self._columns[index] + column + 1)
        return (kind, value, self.plan.line_number(index), self.plan.column(index, column))

    def _token(self, kind: str, value: str, index: int, column: int = 0,
               token_class: type = Token) -> Token:
        last = len(self.lines) - 1
        if index > last:
            index = last  # tokens closing the text sit on its last line
        if self._direct:
            line, column = self._numbers[index], self._columns[index] + column + 1
        else:
            line, column = self.plan.line_number(index), self.plan.column(index, column)
        return _new_token(token_class, kind, value, line, column)

    def _line_number(self, index: int) -> int:
        return self._numbers[index] if self._direct else self.plan.line_number(index)

    def _error(self, index: int, column: int, message: str) -> PlanSyntaxError:
        return PlanSyntaxError(message, line=self.plan.line_number(index),
                               column=self.plan.column(index, column))

    def _damaged(self, index: int, message: str, incomplete: bool = True) -> None:
        self.damage.append(Damage(self.plan.line_number(index), message, incomplete))

    def _skip_blank(self, index: int) -> int:
        lines = self.lines
        count = len(lines)
        while index < count and (not lines[index] or lines[index].isspace()):  # blank
            index += 1
        return index

    # ---- the document --------------------------------------------------------------------------
    def tokens(self) -> Iterator[Token]:
        """The tokens, one by one."""
        for chunk in self.chunks():
            if chunk.__class__ is TreeTokens:
                yield from chunk.tokens()
            else:
                yield chunk

    def chunks(self) -> "Iterator[Token | TreeTokens]":
        """The tokens, a tree's as one `TreeTokens` list."""
        index = self._skip_blank(0)
        if index >= len(self.lines):
            raise self._error(0, 0, "expected a Spark plan, found an empty text")
        first = self._line(index)
        if not self._is_header(first):
            announced = self.plan.announced and OPERATOR_START.match(first)
            if not (announced or self._looks_like_bare_root(index) or
                    self._starts_cut_tree(index)):
                raise self._error(
                    index, 0, "expected '== Physical Plan ==' or an operator tree, found "
                    + _quote(first)
                )
            index = yield from self._tree(index)
        while True:
            index = self._skip_blank(index)
            if index >= len(self.lines):
                return
            index = yield from self._top_level_line(index)

    @staticmethod
    def _is_header(line: str) -> bool:
        return bool(
            PHYSICAL_HEADER.match(line) or LOGICAL_HEADER.match(line) or CODEGEN_FOUND.match(line)
        )

    def _looks_like_bare_root(self, index: int) -> bool:
        """A plan pasted without its header: an operator line with a node id, a codegen
        marker, or a child line under it. One word of prose is none of these."""
        return looks_like_tree_root(self.lines, index)

    def _starts_cut_tree(self, index: int) -> bool:
        line = self._line(index)
        tree = TREE_LINE.match(line)
        return bool(tree and OPERATOR_START.match(tree["rest"])) or bool(STAGE_HEADER.match(line))

    def _top_level_line(self, index: int) -> Iterator[Token]:
        line = self._line(index)
        # Each pattern starts with a fixed character: ask only those that can match.
        first = line[:1]
        if first == "=" and PHYSICAL_HEADER.match(line):
            yield self._token("PHYSICAL_HEADER", line.strip(), index)
            return (yield from self._expect_tree(index + 1, "'== Physical Plan =='"))
        if first == "=" and LOGICAL_HEADER.match(line):
            yield self._token("LOGICAL_HEADER", line.strip(), index)
            return (yield from self._logical_section(index + 1))
        if first == "(" and DETAIL_HEADER.match(line):
            return (yield from self._detail_block(index))
        if first == "=" and SUBQUERIES_HEADER.match(line):
            yield self._token("SUBQUERIES_HEADER", line.strip(), index)
            return index + 1
        if SUBQUERY_HEADER.match(line):
            yield self._token("SUBQUERY_HEADER", line, index)
            following = self._skip_blank(index + 1)
            if following < len(self.lines) and self._starts_tree(following):
                return (yield from self._tree(following))
            return index + 1
        if first == "=" and OPTIMIZED_OUT_HEADER.match(line):
            yield self._token("OPTIMIZED_OUT_HEADER", line.strip(), index)
            return index + 1
        if SUBPLAN_HEADER.match(line):
            yield self._token("SUBPLAN_HEADER", line.strip(), index)
            return (yield from self._expect_tree(index + 1, _quote(line.strip())))
        if CODEGEN_FOUND.match(line):
            yield self._token("CODEGEN_FOUND", line.strip(), index)
            return index + 1
        if CODEGEN_SUBTREE_HEADER.match(line):
            yield self._token("CODEGEN_SUBTREE_HEADER", line.strip(), index)
            return (yield from self._expect_tree(index + 1, "the codegen subtree header"))
        if line.startswith(GENERATED_CODE_START):
            return (yield from self._generated_code(index))
        # Not a line any section can hold here: the parser reports what it expected instead.
        yield self._token("STRAY_LINE", line, index)
        return index + 1

    def _starts_tree(self, index: int) -> bool:
        line = self._line(index)
        return bool(OPERATOR_START.match(line)) and not (
            SUBQUERY_HEADER.match(line) or SUBPLAN_HEADER.match(line) or self._is_header(line)
        )

    def _expect_tree(self, index: int, after: str) -> Iterator[Token]:
        index = self._skip_blank(index)
        if index >= len(self.lines):
            raise self._error(
                min(index, len(self.lines) - 1), 0,
                f"expected an operator tree after {after}, found the end of the text",
            )
        if not (OPERATOR_START.match(self._line(index)) or self._starts_cut_tree(index)):
            raise self._error(
                index, 0, f"expected an operator line after {after}, found "
                + _quote(self._line(index)),
            )
        return (yield from self._tree(index))

    def _logical_section(self, index: int) -> Iterator[Token]:
        while index < len(self.lines):
            line = self._line(index)
            if not line.strip() or PHYSICAL_HEADER.match(line) or LOGICAL_HEADER.match(line):
                break
            yield self._token("TEXT_LINE", line, index)
            index += 1
        return index

    def _detail_block(self, index: int) -> Iterator[Token]:
        """One token for a run of detail blocks (blank lines between them): the first one's
        header, carrying each block's header, FIELD lines and line number. The parser's cost
        is per token; field lines only follow their header, and a block only follows another
        where the first was accepted, so the run reads as its blocks one by one would."""
        blocks: list = []
        end = _detail_blocks(self, index, blocks)
        token = self._token("DETAIL_HEADER", self.lines[index], index, token_class=BlockToken)
        token.blocks = blocks
        yield token
        return end

    def _generated_code(self, index: int) -> Iterator[Token]:
        start = index
        index += 1
        while index < len(self.lines) and not CODEGEN_SUBTREE_HEADER.match(self._line(index)):
            index += 1
        end = index
        while end > start and not self._line(end - 1).strip():
            end -= 1
        yield self._token("GENERATED_CODE", "\n".join(self.lines[start:end]), start)
        return index

    # ---- trees --------------------------------------------------------------------------------
    def _tree(self, index: int) -> Iterator[Token]:
        """Lex the tree whose root is at `index`; return the index of the first line after it.

        The tree's tokens are handed over as one `TreeTokens` list (`chunks()`; `tokens()`
        hands them on one by one); when the tree cannot be read, the tokens before the error,
        then the error."""
        out = TreeTokens()
        try:
            index = self._tree_tokens(index, out)
        except PlanSyntaxError:
            yield from out.tokens()
            raise
        yield out
        return index

    def _tree_tokens(self, index: int, out: List[Token]) -> int:
        """`_tree`'s tokens appended to `out` (`_tree_tokens` below)."""
        return _tree_tokens(self, index, out)

    def _skip_inserted(self, index: int, content: str) -> None:
        if ELISION.match(content):
            self._damaged(index, f"{_quote(content)} stands for operators the author left out")
        else:
            self._damaged(index, f"skipped a comment line {_quote(content)}", incomplete=False)

    def _move_into(self, out: List[Token], level: int, target: int, index: int) -> None:
        if target == level:
            return
        # One token for every step: they are the same token, at the same place.
        out.extend([self._entry("_INDENT" if target > level else "_DEDENT", "", index)] *
                   abs(target - level))


def _tree_tokens(lexer: _LineLexer, index: int, out: List[Token]) -> int:
    """`lexer._tree`'s tokens appended to `out`: the tree whose root is at `index`; the index
    of the first line after it. (A function of the module: Cython gives its locals C types,
    lexer.pxd.)"""
    emit = out.append
    root = lexer._line(index)
    first_tree = TREE_LINE.match(root)
    first_stage = STAGE_HEADER.match(root)
    cut_top = bool(first_tree or first_stage)
    level = 0
    frames: List[_StageFrame] = []
    if first_tree or first_stage:
        # The top of the tree was cut off: stand a placeholder root in for what is missing.
        pre = len(first_tree["pre"]) if first_tree else len(first_stage["pre"])
        base = pre // 3
        lexer._damaged(index, "the tree begins mid-way (its top was cut off); the "
                       "operators above this line are missing")
        if first_stage:
            which = first_stage["which"]
            flag = {"Final": "true", "Current": "false"}.get(which)
            value = ADAPTIVE_ROOT_TEXT + (f" isFinalPlan={flag}" if flag else "")
            emit(lexer._entry("OPERATOR", value, index, pre))
            last_level, last_adaptive = 0, True
        else:
            emit(lexer._entry("OPERATOR", CUT_ROOT, index, pre))
            last_level, last_adaptive = 0, False
    else:
        root_column = len(root) - len(root.lstrip(" "))
        if root_column % 3:
            raise lexer._error(index, 0, "expected an operator tree indented in steps of three")
        base = root_column // 3
        emit(lexer._entry("OPERATOR", root[root_column:], index, root_column))
        last_level, last_adaptive = 0, bool(ADAPTIVE_OPERATOR.match(root[root_column:]))
        index += 1
    pending_stage: Optional[_StageFrame] = None
    # The glyphs before the last operator read: lines[last_operator][:last_glyphs_end]
    last_glyphs_end = 0
    last_operator = index
    lines = lexer.lines
    tree_operator = _tree_operator  # TREE_OPERATOR.match, as where it ends
    direct, numbers, columns = lexer._direct, lexer._numbers, lexer._columns
    while index < len(lines):
        line = lines[index]
        if pending_stage is not None:
            match = STAGE_ROOT.match(line)
            if not match or not OPERATOR_START.match(match["rest"]):
                raise lexer._error(
                    index, 0, "expected the root operator of the plan stage printed above, "
                    "found " + _quote(line),
                )
            raw = len(match["pre"]) // 3
            pending_stage.root_raw = raw
            pending_stage.offset = raw - (pending_stage.adaptive_level + 1)
            frames.append(pending_stage)
            pending_stage = None
            emit(lexer._entry("OPERATOR", match["rest"], index, len(match["pre"])))
            last_level = level
            last_adaptive = bool(ADAPTIVE_OPERATOR.match(match["rest"]))
            last_glyphs_end, last_operator = len(match["pre"]), index
            index += 1
            continue

        stage = STAGE_HEADER.match(line) if STAGE_MARK in line else None
        if stage:
            if stage["which"] == "Initial" and frames:
                while frames and frames[-1].kind != "final":
                    frames.pop()
            if stage["which"] == "Initial" and frames:
                adaptive_level = frames.pop().adaptive_level
                kind = "initial"
            elif stage["which"] == "Initial" and last_adaptive:
                # Databricks prints `AdaptiveSparkPlan isFinalPlan=false` over a lone
                # `== Initial Plan ==`: the plan AQE has not started re-planning.
                adaptive_level, kind = last_level, "initial"
            elif stage["which"] == "Initial":
                raise lexer._error(
                    index, 0, "'== Initial Plan ==' without a final or current plan above it"
                )
            else:
                if not last_adaptive:
                    raise lexer._error(
                        index, 0, f"'== {stage['which']} Plan ==' must follow an "
                        "AdaptiveSparkPlan operator",
                    )
                adaptive_level, kind = last_level, "final"
            lexer._move_into(out, level, adaptive_level + 1, index)
            level = adaptive_level + 1
            emit(lexer._entry("STAGE_HEADER", stage["which"], index, len(stage["pre"])))
            pending_stage = _StageFrame(kind, adaptive_level, 0, 0)
            index += 1
            continue

        # Where TREE_OPERATOR's match ends (minus that without the group `operator`; -1
        # without a match): TREE_LINE's groups, by where they end, are `pre`, the connector
        # (3 characters), `rest`
        glyphs_end = tree_operator(line)
        if glyphs_end == -1:
            content = line.strip()
            if content and (ELISION.match(content) or COMMENT.match(content)):
                lexer._skip_inserted(index, content)
                index += 1
                continue
            break  # a blank line or anything else ends the tree
        content_column = glyphs_end if glyphs_end > 0 else -glyphs_end
        rest = line[content_column:]
        first = rest[:1]
        if (first in INSERTED_STARTS or first.isspace()) and (
                ELISION.match(rest.strip()) or COMMENT.match(rest)):
            lexer._skip_inserted(index, rest.strip())
            index += 1
            continue
        raw = content_column // 3
        while frames and raw <= frames[-1].root_raw:
            frames.pop()
        logical = raw - (frames[-1].offset if frames else base)
        if logical < 1 and cut_top and not frames:
            # A fragment whose first line sat deeper than the lines after it: they hang
            # under the missing top too.
            base = raw - 1
            logical = 1
        if logical < 1:
            raise lexer._error(index, 0, "expected a child line indented under its parent")
        if logical > level + 2:
            lexer._damaged(index, f"the tree's indentation jumps {logical - level} levels "
                           "here; lines above it are missing")
            logical = level + 1
        if glyphs_end < 0:  # no group `operator`: not OPERATOR_START.match(rest)
            raise lexer._error(index, content_column, "expected an operator name, found "
                               + _quote(rest))
        if logical != level:
            if direct:
                # lexer._move_into(out, level, logical, index), inline: index is a line
                entry = ("_INDENT" if logical > level else "_DEDENT", "", numbers[index],
                         columns[index] + 1)
                out.extend([entry] * (logical - level if logical > level else level - logical))
            else:
                lexer._move_into(out, level, logical, index)
        level = last_level = logical
        last_adaptive = ADAPTIVE_ROOT_TEXT in rest and bool(ADAPTIVE_OPERATOR.match(rest))
        last_glyphs_end, last_operator = content_column, index
        # lexer._entry("OPERATOR", rest, index, content_column), inline: index is a line
        if direct:
            emit(("OPERATOR", rest, numbers[index], columns[index] + content_column + 1))
        else:
            emit(lexer._entry("OPERATOR", rest, index, content_column))
        index += 1

    if pending_stage is not None:
        raise lexer._error(
            min(index, len(lexer.lines) - 1), 0,
            "expected the root operator of a plan stage, found the end of the tree",
        )
    if last_glyphs_end and ":" in lines[last_operator][:last_glyphs_end]:
        # `:- ` and `:  ` say more children follow below: the text stopped before them.
        lexer._damaged(last_operator, "the tree stops where its last line says more "
                       "operators follow; the plan looks cut short")
    lexer._move_into(out, level, 0, index)
    emit(lexer._entry("_TREE_END", "", index))
    return index


def _detail_blocks(lexer: _LineLexer, index: int, blocks: list) -> int:
    """`lexer._detail_block`'s blocks from `index` on, appended to `blocks`: the index of the
    first line after them. (A function of the module: Cython gives its locals C types,
    lexer.pxd.)"""
    lines = lexer.lines
    count = len(lines)
    direct, numbers = lexer._direct, lexer._numbers
    while True:
        start = index
        index += 1
        while index < count:
            line = lines[index]
            if not line:
                break
            head = line[0]  # (a C character in Cython: lexer.pxd)
            if head.isspace() and line.isspace() or head == "(" and _is_detail_header(line) \
                    or head == "=" and SUBQUERIES_HEADER.match(line):
                break
            index += 1
        blocks.append((lines[start], lines[start + 1:index],
                       numbers[start] if direct else lexer._line_number(start)))
        following = index  # lexer._skip_blank(index), inline
        while following < count:
            line = lines[following]
            if line and not (line[0].isspace() and line.isspace()):
                break
            following += 1
        if following < count and lines[following][:1] == "(" and \
                _is_detail_header(lines[following]):
            index = following
            continue
        return index


#: The root Spark's stage headers hang under, when a pasted tree begins with one.
ADAPTIVE_ROOT_TEXT = "AdaptiveSparkPlan"


def looks_like_tree_root(lines: Sequence[str], index: int) -> bool:
    """Whether `lines[index]` is the root of a tree printed without a header: an operator line
    with a node id or a codegen marker, or with a child line (or stage header) under it."""
    line = lines[index]
    if not OPERATOR_START.match(line):
        return False
    if line.startswith(("*", "^")) or OPERATOR_ID_AT_END.search(line):
        return True
    following = lines[index + 1] if index + 1 < len(lines) else ""
    return bool(TREE_LINE.match(following) or STAGE_HEADER.match(following))


#: ` (12)` closing a formatted tree line, or followed by `, ...`.
OPERATOR_ID_AT_END = re.compile(r" \(\d{1,9}\)(?:, |$)")


def _quote(text: str, limit: int = 60) -> str:
    text = text.strip()
    if not text:
        return "a blank line"
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return repr(text)


#: The plan the parser is reading now; the lexer takes it from here, since Lark passes a
#: custom lexer only the text. Set by `parser.parse_lines`.
CURRENT_PLAN: "contextvars.ContextVar[Optional[_LineLexer]]" = contextvars.ContextVar(
    "aqe_inspect_current_plan", default=None)


class ExplainLexer(Lexer):
    """Lark's entry point for the line lexer (`lexer=ExplainLexer` in the parser)."""

    def __init__(self, lexer_conf):  # noqa: D107 - Lark's interface
        pass

    def lex(self, text: str) -> Iterator[Token]:  # Lark's plain custom-lexer interface
        current = CURRENT_PLAN.get()
        if current is not None and current.text is text:
            return current.tokens()
        return _LineLexer(PlanLines.from_text(text)).tokens()
