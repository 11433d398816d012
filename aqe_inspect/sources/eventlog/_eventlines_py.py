"""The kept events' lines of an event-log buffer (events.py `Scanner._lines`): the pure-Python
twin of `_eventlines_c.pyx`, with the same function and results (tests/test_eventlines_kernel.py
holds them equal). The lines are walked from newline to newline with `bytes.find`; each is told
by its head, `{"Event":"<name>"`: the C kernel walks the same lines with `memchr`, so that no
Python step is taken for a line that holds no kept event."""

from __future__ import annotations

from typing import List, Sequence, Tuple

#: How every event's line begins as Spark writes it.
LINE_HEAD = b'{"Event":"'
#: The kind of an entry whose line does not begin so: its markers are searched anywhere in it.
FOREIGN = -1


def event_lines(buffer: bytes, begin: int, end: int, markers: Sequence[bytes],
                sample: int, line_bytes: int) -> Tuple[List[Tuple[int, int, int, int]], int, int]:
    """The lines of buffer[begin:end + 1] (`end` is a newline) that hold a kept event or may:
    `(entries, walked, rest)`.

    Each entry is `(number, at, stop, kind)`: the line's number among the walked lines (0 for
    the first), where it begins and its newline; `kind` the index of the first of `markers`
    found right after its `{` when it begins with LINE_HEAD, or FOREIGN when it does not begin
    so (its markers may stand anywhere in it). A line that begins with LINE_HEAD and no marker
    is passed over. `walked` is how many lines were walked; `rest` where the walk stopped
    (-1 when it went to the end): when, after `sample` lines, those averaged under
    `line_bytes` bytes, the rest from `rest` is better searched marker by marker."""
    if not (0 <= begin and 0 <= end < len(buffer)) or buffer[end] != 10:
        raise ValueError("the lines must end at a newline within the buffer")
    found: List[Tuple[int, int, int, int]] = []
    markers = tuple(markers)
    find = buffer.find
    starts = buffer.startswith
    at = begin
    walked = 0
    while at <= end:
        stop = find(b"\n", at, end + 1)
        if starts(LINE_HEAD, at):
            if starts(markers, at + 1):
                kind = 0
                while not starts(markers[kind], at + 1):
                    kind += 1
                found.append((walked, at, stop, kind))
        else:
            found.append((walked, at, stop, FOREIGN))
        at = stop + 1
        walked += 1
        if walked == sample and at <= end and at - begin < sample * line_bytes:
            return found, walked, at
    return found, walked, -1
