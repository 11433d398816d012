"""The lines of a run of plain detail blocks, matched: the pure Python twin of
`_blockrows_c.pyx` (same functions, equal results; aqe_inspect.native.load), and the blocks
they make. Read by `formatted_plan._read_blocks`, the fast reader of an event log's plan
descriptions."""

from __future__ import annotations

import re
from sys import intern
from typing import Any, Callable, Dict, List, Optional, Tuple

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


#: A block read: its title (interned), the codegen stage its heading names, its fields.
Block = Tuple[str, Optional[int], Dict[str, str]]


def read_blocks(text: str, start: int, end: int, headings: Dict[str, Tuple[str, Optional[int]]],
                keys: Dict[str, str], heading_of: Callable[[str], Any], known_max: int,
                max_digits: int) -> Optional[Tuple[Dict[int, Block], int]]:
    """The detail blocks of `text[start:end]` (whole lines) by id in printed order, and the
    last one's id, when every line there is a block's header, its field or an empty line
    (`block_rows`), a header leads every run of lines, and no id has more than `max_digits`
    digits nor is printed twice; else None. `heading_of(heading)` is a header's (title,
    codegen stage), or None when it cannot be read; `headings` and `keys` keep the headings'
    and keys' readings (each emptied when it holds `known_max`)."""
    return blocks_of_rows(block_rows(text, start, end), headings, keys, heading_of,
                          known_max, max_digits)


def blocks_of_rows(rows: Optional[List[Row]], headings: Dict[str, Tuple[str, Optional[int]]],
                   keys: Dict[str, str], heading_of: Callable[[str], Any], known_max: int,
                   max_digits: int) -> Optional[Tuple[Dict[int, Block], int]]:
    """`read_blocks` of the rows `block_rows` gave (None: a line did not match); the
    compiled kernel makes a text's blocks so when the text is not ASCII, from its own rows."""
    if rows is None:
        return None
    blocks: Dict[int, Block] = {}
    fields: Optional[Dict[str, str]] = None  # the open block's; None after an empty line
    last = -1
    for block_id, heading, key, value in rows:
        if key:
            if fields is None:
                return None  # a field line after an empty one: stray text
            name = keys.get(key)
            if name is None:
                name = intern(key.rstrip())
                if len(key) <= 100:
                    if len(keys) >= known_max:
                        keys.clear()
                    keys[key] = name
            value = value.strip()
            before = fields.get(name)
            fields[name] = value if before is None else f"{before}\n{value}"
        elif block_id:
            if len(block_id) > max_digits:
                return None  # an error, raised where it stands by the line reading
            title_stage = headings.get(heading)
            if title_stage is None:
                read = heading_of(heading)
                if read is None:
                    return None
                title_stage = (intern(read[0]), read[1])
                if len(heading) <= 1024:
                    if len(headings) >= known_max:
                        headings.clear()
                    headings[heading] = title_stage
            last = int(block_id)
            if last in blocks:
                return None  # a block printed twice: read line by line
            fields = {}
            blocks[last] = (title_stage[0], title_stage[1], fields)
        else:
            fields = None
    return blocks, last
