"""The fields of formatted-mode detail blocks (`Input [2]: [k#1, count#9L]`), read: the pure
Python twin of `_fields_c.pyx` (same functions, equal results; aqe_inspect.native.load)."""

from __future__ import annotations

import re
from sys import intern
from typing import Dict, List, Optional

from ..plan.model import MAX_DIGITS

#: What comes before a detail block's codegen stage (`(6) AQEShuffleRead [codegen id : 3]`).
CODEGEN_ID = " [codegen id : "

#: `Input [2]: [k#1, count#9L]`: a key (its trailing spaces are stripped), an optional count,
#: the colon, and the value. The key can hold neither `:` nor `[`, so its greedy run backs off
#: at most past one ` [N]` group: linear.
FIELD = re.compile(r"(?P<key>[A-Za-z][A-Za-z0-9 _\-]*)(?: \[\d+\])? ?:(?: (?P<value>.*))?$")
#: `Location [not included in comparison]/{warehouse_dir}/t]`: plan-stability golden files
#: hide paths this way, with no colon.
LOCATION_HIDDEN = re.compile(r"(?P<key>Location) (?P<value>\[.*)$")


def read_fields(field_lines: List[str]) -> Dict[str, str]:
    """A detail block's fields by key, from its lines after the header: `Key [N]: value`
    (a key printed twice keeps both values, a line apart), a line that is no field going on
    with the value before it (a string literal holding a newline), or `Text` when first."""
    fields: Dict[str, str] = {}
    last_key: Optional[str] = None
    field_match = FIELD.match
    for text in field_lines:
        field = field_match(text) or LOCATION_HIDDEN.match(text)
        if field:
            key, value = field.groups()
            # (it starts with a letter); one string per key name, however many plans are
            # held (`Output [2]`, `Arguments`: a long log holds hundreds of thousands)
            key = intern(key.rstrip())
            value = value.strip() if value else ""
            before = fields.get(key)
            fields[key] = value if before is None else f"{before}\n{value}"
            last_key = key
        elif last_key is not None:
            # A value Spark printed over several lines (a string literal holding a newline).
            fields[last_key] += "\n" + text
        else:
            last_key = "Text"
            fields[last_key] = text
    return fields


def read_block(header: str, field_lines: List[str], line: int) -> Optional[tuple]:
    """`(id, title, codegen stage, fields, line)` of a detail block whose header reads as
    `operator_line.read_detail_block` reads it without an error (the id and the stage of at
    most MAX_DIGITS ASCII digits); None for any other header, which that function then reads
    (for its result or its error)."""
    if not header.startswith("("):
        return None
    close = header.find(") ")
    digits = header[1:close]
    if close < 2 or len(digits) > MAX_DIGITS or not (digits.isascii() and digits.isdigit()):
        return None
    heading = header[close + 2:].rstrip()
    stage: Optional[int] = None
    if heading.endswith("]"):
        at = heading.rfind(CODEGEN_ID)
        stage_digits = heading[at + len(CODEGEN_ID):-1] if at >= 0 else ""
        if stage_digits.isdecimal():
            if len(stage_digits) > MAX_DIGITS:
                return None
            return (int(digits), heading[:at].strip(), int(stage_digits),
                    read_fields(field_lines), line)
    return int(digits), heading.strip(), stage, read_fields(field_lines), line

