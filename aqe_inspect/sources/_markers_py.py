"""Byte searches for markers over a buffer (skim.py, planchange.py): the pure-Python twin of
`_markers_c.pyx`, with the same functions and results (tests/test_markers_kernel.py holds
them equal). Each marker is searched with `bytes.find` (a pattern with its regex), the
next occurrence of each kept until passed: the C kernel instead reads the bytes once, stopping
at each marker's anchor pair (`anchors`: where in it; this twin ignores them), and serves
the skim and the plan-change headings from one pass (`Scan`)."""

from __future__ import annotations

from typing import List, Sequence, Tuple


class Table:
    """What to search for: `markers` (bytes, two or more), each found by its two bytes from
    `anchors[i]` in the compiled kernel; `patterns` (first bytes, compiled regex),
    skim.MARKER_PATTERNS."""

    def __init__(self, markers: Sequence[bytes], anchors: Sequence[int],
                 patterns: Sequence = ()):
        if len(markers) != len(anchors) or any(
                not 0 <= at < len(marker) - 1 for marker, at in zip(markers, anchors)):
            raise ValueError("one anchor in each marker, a pair of its bytes: where it begins")
        self.markers = tuple(markers)
        self.anchors = tuple(anchors)
        self.patterns = tuple(patterns)


class Finder:
    """`next(pos)`: where the first marker or pattern of `table` at or after `pos` begins in
    `buffer` (-1 when none). Positions asked for (>= 0) must not go down."""

    def __init__(self, buffer: bytes, table: Table):
        self._buffer = buffer
        self._upcoming = [[-2, marker] for marker in table.markers] + [
            [-2, pattern] for pattern in table.patterns]

    def next(self, pos: int) -> int:
        buffer = self._buffer
        hit = -1
        for entry in self._upcoming:
            at = entry[0]
            if at == -1:
                continue
            if at < pos:
                finder = entry[1]
                if finder.__class__ is bytes:
                    at = buffer.find(finder, pos)
                else:
                    # The pattern starts with its first bytes: the regex engine scans for
                    # them itself, with no Python step per occurrence.
                    found = finder[1].search(buffer, pos)
                    at = found.start() if found else -1
                entry[0] = at
                if at < 0:
                    continue
            if hit < 0 or at < hit:
                hit = at
        return hit


class Scan:
    """Two searches over `buffer`: the markers of `table` before `split` and its patterns
    (the skim's: `next`, as Finder's) and the markers from `split` on (the plan-change
    headings: `headings`, as find_all's with a table of them alone). The compiled kernel
    serves both from one pass; this twin runs the two searches apart."""

    def __init__(self, buffer: bytes, table: Table, split: int):
        if not 0 <= split <= len(table.markers):
            raise ValueError("split: at most the table's markers")
        self.buffer = buffer
        self._finder = Finder(buffer, Table(table.markers[:split], table.anchors[:split],
                                            table.patterns))
        self._headings = Table(table.markers[split:], table.anchors[split:])

    def next(self, pos: int) -> int:
        """Finder(buffer, table).next(pos) with the markers before `split`."""
        return self._finder.next(pos)

    def headings(self, start: int, end: int) -> Tuple[List[Tuple[int, int, int]], int]:
        """find_all(buffer, start, end, TABLE) where TABLE holds the markers from `split` on
        (their indexes counted from `split`)."""
        return find_all(self.buffer, start, end, self._headings)


def find_all(buffer: bytes, start: int, end: int, table: Table
             ) -> Tuple[List[Tuple[int, int, int]], int]:
    """Every position from `start` to before `end` where a marker of `table` begins in
    `buffer` (the marker whole in it), in order: (position, the marker's index, the
    newlines of buffer[start:position]), markers beginning at one position in the table's
    order; and the newlines of buffer[start:end] (0 <= start <= end <= len(buffer))."""
    found = []
    for index, marker in enumerate(table.markers):
        # Those beginning before `end` (the search bounded there: no pass to the buffer's
        # end for each of many short ranges).
        bound = end + len(marker) - 1
        at = buffer.find(marker, start, bound)
        while 0 <= at < end:
            found.append((at, index))
            at = buffer.find(marker, at + 1, bound)  # (one that overlaps itself found again)
    found.sort()
    hits = []
    line, counted = 0, start
    for at, index in found:
        line += buffer.count(b"\n", counted, at)
        counted = at
        hits.append((at, index, line))
    return hits, line + buffer.count(b"\n", counted, end)


def count_newlines(buffer: bytes, start: int, stop: int) -> int:
    """buffer.count(b"\\n", start, stop)."""
    return buffer.count(b"\n", start, stop)


def holds(buffer: bytes, start: int, stop: int, table: Table) -> bool:
    """Whether a marker of `table` (its markers; not its patterns) stands whole in
    buffer[start:stop] (0 <= start)."""
    return any(buffer.find(marker, start, stop) >= 0 for marker in table.markers)
