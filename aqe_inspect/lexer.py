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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator, List, Optional

from lark.lexer import Lexer, Token

from .errors import PlanSyntaxError

TREE_LINE = re.compile(r"(?P<pre>(?:[ :|]  )*)(?P<conn>[+:]- )(?P<rest>.*)")
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
#: What an operator line starts with: an optional codegen marker (`*(3) ` simple, `* `
#: formatted, `*` alone where Spark's test golden files hide the stage number, `^(3) `
#: Gluten's columnar stages) and an operator name.
CODEGEN_MARKER = r"(?:[*^]\(\d+\) |\* ?)"
OPERATOR_START = re.compile(CODEGEN_MARKER + r"?[A-Za-z_][\w$]*")
ADAPTIVE_OPERATOR = re.compile(CODEGEN_MARKER + r"?AdaptiveSparkPlan\b")


@dataclass
class _StageFrame:
    """One `== X Plan ==` block being read: maps its printed columns to logical levels."""

    kind: str  # "final" (Final or Current) or "initial"
    adaptive_level: int
    root_raw: int
    offset: int


class _LineLexer:
    """The state machine over lines; `tokens()` yields the whole stream."""

    def __init__(self, text: str):
        self.lines = text.split("\n")
        self.offsets: List[int] = []
        offset = 0
        for line in self.lines:
            self.offsets.append(offset)
            offset += len(line) + 1

    # ---- helpers -----------------------------------------------------------------------------
    def _line(self, index: int) -> str:
        return self.lines[index].rstrip("\r")

    def _token(self, kind: str, value: str, index: int, column: int = 0) -> Token:
        index = min(index, len(self.lines) - 1)  # tokens closing the text sit on its last line
        start = self.offsets[index] + column
        return Token(
            kind, value, start_pos=start, line=index + 1, column=column + 1,
            end_line=index + 1, end_column=column + len(value) + 1, end_pos=start + len(value),
        )

    def _error(self, index: int, column: int, message: str) -> PlanSyntaxError:
        return PlanSyntaxError(message, line=index + 1, column=column + 1)

    def _skip_blank(self, index: int) -> int:
        while index < len(self.lines) and not self._line(index).strip():
            index += 1
        return index

    # ---- the document --------------------------------------------------------------------------
    def tokens(self) -> Iterator[Token]:
        index = self._skip_blank(0)
        if index >= len(self.lines):
            raise self._error(0, 0, "expected a Spark plan, found an empty text")
        first = self._line(index)
        if not self._is_header(first):
            if not self._looks_like_bare_root(index):
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
        line = self._line(index)
        match = OPERATOR_START.match(line)
        if not match:
            return False
        if line.startswith(("*", "^")) or re.search(r" \(\d+\)(?:, |$)", line):
            return True
        following = self._line(index + 1) if index + 1 < len(self.lines) else ""
        return bool(TREE_LINE.match(following) or STAGE_HEADER.match(following))

    def _top_level_line(self, index: int) -> Iterator[Token]:
        line = self._line(index)
        if PHYSICAL_HEADER.match(line):
            yield self._token("PHYSICAL_HEADER", line.strip(), index)
            return (yield from self._expect_tree(index + 1, "'== Physical Plan =='"))
        if LOGICAL_HEADER.match(line):
            yield self._token("LOGICAL_HEADER", line.strip(), index)
            return (yield from self._logical_section(index + 1))
        if DETAIL_HEADER.match(line):
            return (yield from self._detail_block(index))
        if SUBQUERIES_HEADER.match(line):
            yield self._token("SUBQUERIES_HEADER", line.strip(), index)
            return index + 1
        if SUBQUERY_HEADER.match(line):
            yield self._token("SUBQUERY_HEADER", line, index)
            following = self._skip_blank(index + 1)
            if following < len(self.lines) and self._starts_tree(following):
                return (yield from self._tree(following))
            return index + 1
        if OPTIMIZED_OUT_HEADER.match(line):
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
        if not OPERATOR_START.match(self._line(index)):
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
        yield self._token("DETAIL_HEADER", self._line(index), index)
        index += 1
        while index < len(self.lines):
            line = self._line(index)
            if not line.strip() or DETAIL_HEADER.match(line) or SUBQUERIES_HEADER.match(line):
                break
            yield self._token("FIELD", line, index)
            index += 1
        return index

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
        """Lex the tree whose root is at `index`; return the index of the first line after it."""
        root = self._line(index)
        root_column = len(root) - len(root.lstrip(" "))
        if root_column % 3:
            raise self._error(index, 0, "expected an operator tree indented in steps of three")
        base = root_column // 3
        yield self._token("OPERATOR", root[root_column:], index, root_column)
        level = 0
        frames: List[_StageFrame] = []
        last_level, last_adaptive = 0, bool(ADAPTIVE_OPERATOR.match(root[root_column:]))
        pending_stage: Optional[_StageFrame] = None
        index += 1
        while index < len(self.lines):
            line = self._line(index)
            if pending_stage is not None:
                match = STAGE_ROOT.match(line)
                if not match or not OPERATOR_START.match(match["rest"]):
                    raise self._error(
                        index, 0, "expected the root operator of the plan stage printed above, "
                        "found " + _quote(line),
                    )
                raw = len(match["pre"]) // 3
                pending_stage.root_raw = raw
                pending_stage.offset = raw - (pending_stage.adaptive_level + 1)
                frames.append(pending_stage)
                pending_stage = None
                yield self._token("OPERATOR", match["rest"], index, len(match["pre"]))
                last_level = level
                last_adaptive = bool(ADAPTIVE_OPERATOR.match(match["rest"]))
                index += 1
                continue

            stage = STAGE_HEADER.match(line)
            if stage:
                if stage["which"] == "Initial":
                    while frames and frames[-1].kind != "final":
                        frames.pop()
                    if not frames:
                        raise self._error(
                            index, 0, "'== Initial Plan ==' without a final or current plan above it"
                        )
                    adaptive_level = frames.pop().adaptive_level
                    kind = "initial"
                else:
                    if not last_adaptive:
                        raise self._error(
                            index, 0, f"'== {stage['which']} Plan ==' must follow an "
                            "AdaptiveSparkPlan operator",
                        )
                    adaptive_level, kind = last_level, "final"
                yield from self._move(level, adaptive_level + 1, index)
                level = adaptive_level + 1
                yield self._token("STAGE_HEADER", stage["which"], index, len(stage["pre"]))
                pending_stage = _StageFrame(kind, adaptive_level, 0, 0)
                index += 1
                continue

            match = TREE_LINE.match(line)
            if not match:
                break  # a blank line or anything else ends the tree
            raw = (len(match["pre"]) + 3) // 3
            while frames and raw <= frames[-1].root_raw:
                frames.pop()
            logical = raw - (frames[-1].offset if frames else base)
            content_column = len(match["pre"]) + 3
            rest = match["rest"]
            if logical < 1:
                raise self._error(index, 0, "expected a child line indented under its parent")
            if logical > level + 2:
                raise self._error(
                    index, content_column, "expected a child line at most two levels below the "
                    "line above it",
                )
            if not OPERATOR_START.match(rest):
                raise self._error(index, content_column, "expected an operator name, found "
                                  + _quote(rest))
            yield from self._move(level, logical, index)
            level = last_level = logical
            last_adaptive = bool(ADAPTIVE_OPERATOR.match(rest))
            yield self._token("OPERATOR", rest, index, content_column)
            index += 1

        if pending_stage is not None:
            raise self._error(
                min(index, len(self.lines) - 1), 0,
                "expected the root operator of a plan stage, found the end of the tree",
            )
        yield from self._move(level, 0, index)
        yield self._token("_TREE_END", "", index)
        return index

    def _move(self, level: int, target: int, index: int) -> Iterator[Token]:
        kind = "_INDENT" if target > level else "_DEDENT"
        for _ in range(abs(target - level)):
            yield self._token(kind, "", index)


def _quote(text: str, limit: int = 60) -> str:
    text = text.strip()
    if not text:
        return "a blank line"
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return repr(text)


class ExplainLexer(Lexer):
    """Lark's entry point for the line lexer (`lexer=ExplainLexer` in the parser)."""

    def __init__(self, lexer_conf):  # noqa: D107 - Lark's interface
        pass

    def lex(self, text: str) -> Iterator[Token]:  # Lark's plain custom-lexer interface
        return _LineLexer(text).tokens()
