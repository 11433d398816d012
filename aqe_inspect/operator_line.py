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

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

CODEGEN_MARKER = re.compile(
    r"(?:\*\((?P<stage>\d+)\) |\^\((?P<columnar>\d+)\) |(?P<star>[*^] ?)|(?P<cpu>!))")
NAME = re.compile(r"[A-Za-z_][\w$]*")
#: The operator id of a formatted tree line: ` (N)` closing the line, or followed by `, ...`
#: (statistics, a description) or by ` (...)` (4.x InMemoryTableScan's columnar flags).
#: Spark 4 prints `(unknown)` for the logical plan kept under an EmptyRelation.
OPERATOR_ID = re.compile(
    r" \((?P<id>\d+|unknown)\)(?:$|, (?P<tail>.*)$| (?P<more>\(.*)$)"
)
STATISTICS = re.compile(r"(?:^|, )Statistics\((?P<stats>.*)\)$")
IS_FINAL_PLAN = re.compile(r"isFinalPlan=(?P<value>true|false)")

DETAIL_HEADER = re.compile(r"\((?P<id>\d+)\) (?P<title>.*?)(?: \[codegen id : (?P<stage>\d+)\])?\s*$")
FIELD = re.compile(r"(?P<key>[A-Za-z][A-Za-z0-9 _\-]*?)(?: \[\d+\])? ?:(?: (?P<value>.*))?$")
#: `Location [not included in comparison]/{warehouse_dir}/t]`: plan-stability golden files
#: hide paths this way, with no colon.
LOCATION_HIDDEN = re.compile(r"(?P<key>Location) (?P<value>\[.*)$")


@dataclass(frozen=True)
class OperatorLine:
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


def read_operator_line(text: str, line: int = 0, column: int = 0) -> OperatorLine:
    """Split an operator line (tree glyphs already removed) into its parts."""
    text = text.rstrip()
    stage: Optional[int] = None
    whole_stage = False
    marker = CODEGEN_MARKER.match(text)
    if marker:
        whole_stage = not marker["cpu"]
        digits = marker["stage"] or marker["columnar"]
        stage = int(digits) if digits else None
        text = text[marker.end():]
    name_match = NAME.match(text)
    name = name_match.group(0) if name_match else text.split(" ", 1)[0]
    rest = text[len(name):]
    plain_args = rest.strip()
    args, operator_id, statistics, description = plain_args, None, None, None
    id_match = OPERATOR_ID.search(rest)
    unnumbered = bool(id_match) and id_match["id"] == "unknown"
    if id_match:
        operator_id = None if unnumbered else int(id_match["id"])
        args = " ".join(x for x in (rest[: id_match.start()].strip(), id_match["more"]) if x)
        statistics, description = _split_tail(id_match["tail"])
    else:
        stats = STATISTICS.search(rest)
        if stats:
            statistics = stats["stats"]
            args = rest[: stats.start()].strip()
    return OperatorLine(
        name=name, args=args, id=operator_id, codegen_stage=stage,
        whole_stage_codegen=whole_stage, statistics=statistics, description=description,
        plain_args=plain_args, unnumbered=unnumbered, line=line, column=column,
    )


def _split_tail(tail: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    """What follows `(N), `: runtime statistics, a description (`coalesced`), or both."""
    if not tail:
        return None, None
    stats = STATISTICS.search(tail)
    if not stats:
        return None, tail.strip() or None
    description = tail[: stats.start()].strip().rstrip(",") or None
    return stats["stats"], description


def is_final_plan(args: str, details: Dict[str, str]) -> Optional[bool]:
    """The `isFinalPlan=` flag of an AdaptiveSparkPlan, wherever this Spark printed it."""
    for text in (args, details.get("Arguments", "")):
        match = IS_FINAL_PLAN.search(text)
        if match:
            return match["value"] == "true"
    return None


@dataclass(frozen=True)
class DetailBlock:
    id: int
    title: str
    codegen_stage: Optional[int]
    fields: Dict[str, str]
    line: int


def read_detail_block(header: str, field_lines: List[str], line: int) -> DetailBlock:
    match = DETAIL_HEADER.match(header)
    assert match, header  # the lexer only emits DETAIL_HEADER tokens that match
    fields: Dict[str, str] = {}
    last_key: Optional[str] = None
    for text in field_lines:
        field = FIELD.match(text) or LOCATION_HIDDEN.match(text)
        if field:
            key, value = field["key"].strip(), (field["value"] or "").strip()
            fields[key] = f"{fields[key]}\n{value}" if key in fields else value
            last_key = key
        elif last_key is not None:
            # A value Spark printed over several lines (a string literal holding a newline).
            fields[last_key] += "\n" + text
        else:
            last_key = "Text"
            fields[last_key] = text
    stage = match["stage"]
    return DetailBlock(
        id=int(match["id"]), title=match["title"].strip(),
        codegen_stage=int(stage) if stage else None, fields=fields, line=line,
    )
