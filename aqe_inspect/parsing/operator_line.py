"""Read the parts of one operator line and of one formatted-mode detail block.

Tree lines across Spark 3.0 to 4.x:

    *(2) HashAggregate(keys=[k#1], functions=[count(1)])         simple, codegen stage 2
    * BroadcastHashJoin Inner BuildRight (34)                      formatted, id 34
    ShuffleQueryStage (5), Statistics(sizeInBytes=12.5 KiB, rowCount=400)
    AQEShuffleRead (16), coalesced                                 formatted, Spark 4.2+
    ^(3) ProjectExecTransformer [a#1]                              Gluten's columnar stages

Detail blocks (formatted mode):

    (6) AQEShuffleRead [codegen id : 3]
    Input [2]: [k#1, count#9L]
    Arguments: coalesced
"""

from __future__ import annotations

import functools
import re
from typing import Dict, List, NamedTuple, Optional, Tuple

from ..errors import PlanSyntaxError
from .. import native
from ..plan.model import MAX_DIGITS
#: A detail block's field lines (`Input [2]: [k#1, count#9L]`; read by hand in the compiled
#: twin).
from ._fields_py import CODEGEN_ID, FIELD, LOCATION_HIDDEN  # noqa: F401 - named here as before

#: The fields of a detail block (`_fields_c.pyx`, or its pure twin `_fields_py.py`).
_fields = native.load("aqe_inspect.parsing._fields")
_read_fields, _read_block = _fields.read_fields, _fields.read_block
_new_tuple = tuple.__new__


CODEGEN_MARKER = re.compile(
    r"(?:\*\((?P<stage>\d+)\) |\^\((?P<columnar>\d+)\) |(?P<star>[*^] ?)|(?P<cpu>!))")
#: What a CODEGEN_MARKER starts with.
MARKER_STARTS = "*^!"
NAME = re.compile(r"[A-Za-z_][\w$]*")
#: The operator id of a formatted tree line: ` (N)` closing the line, or followed by `, ...`
#: (statistics, a description) or by ` (...)` (4.x InMemoryTableScan's columnar flags).
#: Spark 4 prints `(unknown)` for the logical plan kept under an EmptyRelation.
#: Searched over the rest of a line: each alternative after `(N)` either ends the match (`.*$`
#: takes the rest) or fails at its first character, so the search stays linear.
OPERATOR_ID = re.compile(
    r" \((?P<id>\d+|unknown)\)(?:$|, (?P<tail>.*)$| (?P<more>\(.*)$)"
)
IS_FINAL_PLAN = re.compile(r"isFinalPlan=(?P<value>true|false)")

#: `(6) AQEShuffleRead [codegen id : 3]`: the id; the title and the codegen stage after it are
#: read with string operations (a regex with a lazy title before an optional group and `\s*$`
#: backtracks quadratically on a long run of spaces).
DETAIL_ID = re.compile(r"\((?P<id>\d+)\) ")
class OperatorLine(NamedTuple):
    """The parts of one tree line. (A NamedTuple: the parser makes one a line, and a frozen
    dataclass takes three times as long to build.)"""

    name: str
    args: str
    id: Optional[int]
    codegen_stage: Optional[int]
    whole_stage_codegen: bool
    statistics: Optional[str]
    description: Optional[str]
    #: The args as they read when the line is not formatted mode (id and tail kept).
    plain_args: str
    #: Printed with `(unknown)` for an id: a logical operator with no detail block.
    unnumbered: bool
    line: int
    column: int


#: Tree lines up to this many characters are remembered by their text: an event log prints
#: the same plan for every run of a query, and formatted mode's tree lines carry no
#: expression ids (detail blocks do, new ones each run). The cache outlives the plan it read.
CACHED_TEXT = 1024


def read_operator_line(text: str, line: int = 0, column: int = 0) -> OperatorLine:
    """Split an operator line (tree glyphs already removed) into its parts."""
    if len(text) <= CACHED_TEXT:
        try:
            parts = _cached_operator_line(text)
        except PlanSyntaxError:
            pass  # read again below, for the error's place
        else:
            return _new_tuple(OperatorLine, parts + (line, column))  # OperatorLine._make
    return _read_operator_line(text, line, column)


@functools.lru_cache(maxsize=4096)
def _cached_operator_line(text: str) -> tuple:
    """The parts of `read_operator_line(text)` but its place (an error is not remembered)."""
    return tuple(_read_operator_line(text))[:-2]


def _read_operator_line(text: str, line: int = 0, column: int = 0) -> OperatorLine:
    text = text.rstrip()
    stage: Optional[int] = None
    whole_stage = False
    marker = CODEGEN_MARKER.match(text) if text[:1] in MARKER_STARTS else None
    offset = 0  # of `text` in the line as printed, for the columns of errors
    if marker:
        whole_stage = not marker["cpu"]
        digits = marker["stage"] or marker["columnar"]
        stage = read_number(digits, "a codegen stage", line, column + 2) if digits else None
        offset = marker.end()
        text = text[offset:]
    name_match = NAME.match(text)
    name = name_match.group(0) if name_match else text.split(" ", 1)[0]
    rest = text[len(name):]
    plain_args = rest.strip()
    args, operator_id, statistics, description = plain_args, None, None, None
    id_match = OPERATOR_ID.search(rest)
    unnumbered = bool(id_match) and id_match["id"] == "unknown"
    if id_match:
        operator_id = None if unnumbered else read_number(
            id_match["id"], "an operator id", line,
            column + offset + len(name) + id_match.start("id"))
        before, more = rest[: id_match.start()].strip(), id_match["more"]
        args = f"{before} {more}" if before and more else before or more or ""
        statistics, description = _split_tail(id_match["tail"])
    else:
        start, stats = _closing_statistics(rest)
        if stats is not None:
            statistics = stats
            args = rest[:start].strip()
    return OperatorLine(
        name=name, args=args, id=operator_id, codegen_stage=stage,
        whole_stage_codegen=whole_stage, statistics=statistics, description=description,
        plain_args=plain_args, unnumbered=unnumbered, line=line, column=column,
    )


def read_number(digits: str, what: str, line: int, column: int) -> int:
    """`digits` as an int; more than MAX_DIGITS of them is a PlanSyntaxError at line:column."""
    if len(digits) > MAX_DIGITS:
        raise PlanSyntaxError(f"expected {what} of at most {MAX_DIGITS} digits, found "
                              f"{len(digits)} digits", line=line, column=column)
    return int(digits)


def _split_tail(tail: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    """What follows `(N), `: runtime statistics, a description (`coalesced`), or both."""
    if not tail:
        return None, None
    start, stats = _closing_statistics(tail)
    if stats is None:
        return None, tail.strip() or None
    description = tail[:start].strip().rstrip(",") or None
    return stats, description


def _closing_statistics(text: str) -> Tuple[int, Optional[str]]:
    """`Statistics(...)` closing `text`, at its start or after `, `: where that starts (the
    `, ` included) and what is inside, else (-1, None). The first such opening counts, and
    the last `)` closes it. (A regex `.*\\)$` searched from every opening is quadratic.)"""
    if not text.endswith(")"):
        return -1, None
    if text.startswith("Statistics("):
        return 0, text[len("Statistics("):-1]
    start = text.find(", Statistics(")
    if start < 0:
        return -1, None
    return start, text[start + len(", Statistics("):-1]


def is_final_plan(args: str, details: Dict[str, str]) -> Optional[bool]:
    """The `isFinalPlan=` flag of an AdaptiveSparkPlan, wherever this Spark printed it."""
    for text in (args, details.get("Arguments", "")):
        match = IS_FINAL_PLAN.search(text)
        if match:
            return match["value"] == "true"
    return None


class DetailBlock(NamedTuple):
    """One formatted-mode detail block, read (a NamedTuple, as OperatorLine)."""

    id: int
    title: str
    codegen_stage: Optional[int]
    fields: Dict[str, str]
    line: int


def read_detail_blocks(blocks: list, into: list) -> list:
    """`read_detail_block(header, field_lines, line)` of each of `blocks` appended to `into`
    (a lexer's run of blocks, `lexer.BlockToken.blocks`); `into`."""
    append = into.append
    for header, field_lines, line in blocks:
        parts = _read_block(header, field_lines, line)
        append(_new_tuple(DetailBlock, parts) if parts is not None else
               read_detail_block(header, field_lines, line))
    return into


def read_detail_block(header: str, field_lines: List[str], line: int) -> DetailBlock:
    parts = _read_block(header, field_lines, line)
    if parts is not None:
        return _new_tuple(DetailBlock, parts)
    match = DETAIL_ID.match(header)
    assert match, header  # the lexer only emits DETAIL_HEADER tokens that match
    title, stage = title_and_stage(header[match.end():], line, match.end() + 1)
    fields = _read_fields(field_lines)
    return DetailBlock(id=read_number(match["id"], "an operator id", line, 2), title=title,
                       codegen_stage=stage, fields=fields, line=line)


def title_and_stage(heading: str, line: int, column: int) -> Tuple[str, Optional[int]]:
    """`AQEShuffleRead [codegen id : 3]` -> ('AQEShuffleRead', 3); no stage -> (title, None)."""
    heading = heading.rstrip()
    if heading.endswith("]"):
        at = heading.rfind(CODEGEN_ID)
        digits = heading[at + len(CODEGEN_ID):-1] if at >= 0 else ""
        if digits.isdecimal():  # what the regex `\d+` matches in str patterns
            stage = read_number(digits, "a codegen stage", line, column + at + len(CODEGEN_ID))
            return heading[:at].strip(), stage
    return heading.strip(), None
