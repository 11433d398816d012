"""The lines of a run of plain detail blocks, matched: the pure Python twin of
`_blockrows_c.pyx` (same function, equal results; aqe_inspect.native.load). Read by
`formatted_plan._read_blocks`, the fast reader of an event log's plan descriptions."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

#: One line of a run of plain detail blocks, matched line by line over the text in one call:
#: a header `(N) Title` (DETAIL_HEADER), a field `Key [n]: value` (operator_line.FIELD, the
#: same groups), or an empty line. Any other line (a value printed over several lines, a
#: whitespace-only line, a section header, a hidden location) leaves a line unmatched, and the
#: blocks are then read line by line (`formatted_plan._read_sections`).
BLOCK_ROW = re.compile(
    r"^(?:\((\d+)\) (\S.*)|([A-Za-z][A-Za-z0-9 _\-]*)(?: \[\d+\])? ?:(?: (.*))?|)$",
    re.MULTILINE)

#: A line matched: (header's id, header's title, field's key, field's value), "" for each
#: part the line does not have (an empty line: four "").
Row = Tuple[str, str, str, str]


def block_rows(text: str, start: int, end: int) -> Optional[List[Row]]:
    """`BLOCK_ROW.findall(text, start, end)` when every line of `text[start:end]` (which
    begins a line) matches, one row a line; None when any line does not."""
    rows = BLOCK_ROW.findall(text, start, end)
    return rows if len(rows) == text.count("\n", start, end) + 1 else None
