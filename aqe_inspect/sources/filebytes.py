"""A file's bytes searched where it lies, read a window at a time: never mapped.

A mapped file that is cut while mapped (logrotate's copytruncate of a driver log) kills the
process with SIGBUS at the first touch of a page past its new end: no Python code runs, and
the user sees nothing. `FileBytes` gives what the readers ask of a mapping (`len`, `find`,
`rfind`, slices) by reading the file with `os.pread`, one window kept at a time, so that its
memory is a window whatever the file's size; and a file found shorter than it was when
opened is an error naming it (`aqe-inspect: error: FILE: changed while it was read ...`).
"""

from __future__ import annotations

import os
from typing import Optional, Tuple

from ..errors import InspectError

#: How much is read at once, and kept for the next searches and slices.
WINDOW = 8 << 20


class FileBytes:
    """The bytes of the open file `fd` (named `name`), as long as it was when opened."""

    def __init__(self, fd: int, name: str):
        self._fd = fd
        self.name = name
        self._size = os.fstat(fd).st_size
        self._kept: Tuple[int, bytes] = (0, b"")

    def __len__(self) -> int:
        return self._size

    def _pread(self, start: int, stop: int) -> bytes:
        """data[start:stop] read from the file, whole: an InspectError when the file no
        longer holds it (cut while it was read)."""
        parts = []
        at = start
        while at < stop:
            try:
                piece = os.pread(self._fd, stop - at, at)
            except OSError as error:
                raise InspectError(f"cannot read: {error.strerror or error}",
                                   source=self.name) from None
            if not piece:
                now = os.fstat(self._fd).st_size
                raise InspectError(f"changed while it was read (cut from {self._size:,} to "
                                   f"{now:,} bytes, as a log truncated in place is); read it "
                                   "again once it is still", source=self.name)
            parts.append(piece)
            at += len(piece)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _cover(self, start: int, stop: int) -> Tuple[int, bytes]:
        """A buffer holding data[start:stop] and where it begins in the file: the window
        kept when it holds them, else a new one read around them (from a quarter window
        before `start`: the readers look back to a line's start, then forward), kept for the
        next searches and slices. Searches run on it in place (no copy of a window per
        search: a search per line of a long file stays linear)."""
        kept_at, kept = self._kept
        if kept_at <= start and stop <= kept_at + len(kept):
            return kept_at, kept
        begin = max(0, start - WINDOW // 4)
        data = self._pread(begin, min(self._size, max(stop, begin + WINDOW)))
        self._kept = (begin, data)
        return begin, data

    def keep(self, start: int, stop: int) -> bytes:
        """data[start:stop] (0 <= start < stop <= len) read from the file and kept as the
        window for the next searches and slices: for a pass over the file a window at a
        time, what is read near each place found in it reading no window again."""
        data = self._pread(start, stop)
        self._kept = (start, data)
        return data

    def _read(self, start: int, stop: int) -> bytes:
        """data[start:stop] (0 <= start <= stop <= len)."""
        base, data = self._cover(start, stop)
        return data[start - base:stop - base]

    def _bounds(self, start: Optional[int], stop: Optional[int]) -> Tuple[int, int]:
        start, stop, _ = slice(start, stop).indices(self._size)
        return start, max(start, stop)

    def __getitem__(self, index):
        if index.__class__ is slice and index.step is None:
            start, stop = index.start, index.stop
            if start.__class__ is int and stop.__class__ is int and 0 <= start and 0 <= stop:
                # The readers' way (a slice of the window kept): no slice.indices.
                kept_at, kept = self._kept
                if kept_at <= start and stop <= kept_at + len(kept):
                    return kept[start - kept_at:stop - kept_at]
                stop = min(stop, self._size)
                return self._read(min(start, stop), stop)
        if isinstance(index, int):
            if index < 0:
                index += self._size
            if not 0 <= index < self._size:
                raise IndexError("index out of range")
            return self._read(index, index + 1)[0]
        if index.step not in (None, 1):
            raise ValueError("no step")
        return self._read(*self._bounds(index.start, index.stop))

    def _empty(self, start: Optional[int], stop: Optional[int], last: bool) -> int:
        """`find` and `rfind` of b"": bytes' answers (past the end: -1)."""
        size = self._size
        begin = 0 if start is None else max(start + size, 0) if start < 0 else start
        end = size if stop is None else max(stop + size, 0) if stop < 0 else min(stop, size)
        if begin > size or begin > end:
            return -1
        return end if last else begin

    def find(self, sub: bytes, start: Optional[int] = None, stop: Optional[int] = None) -> int:
        if not sub:
            return self._empty(start, stop, False)
        if start.__class__ is int and 0 <= start and stop is None:  # the readers' way
            stop = self._size
            start = min(start, stop)
        else:
            start, stop = self._bounds(start, stop)
        reach = len(sub) - 1
        at = start
        while at < stop:
            kept_at, kept = self._kept
            kept_end = kept_at + len(kept)
            if kept_at <= at and at + len(sub) <= kept_end:
                upto = min(stop, kept_end)  # the window kept holds the search's start
            else:
                upto = min(stop, at + WINDOW + reach)
                kept_at, kept = self._cover(at, upto)
            found = kept.find(sub, at - kept_at, upto - kept_at)
            if found >= 0:
                return kept_at + found
            if upto >= stop:
                break
            at = max(at + 1, upto - reach)  # a match across the window's end is found next
        return -1

    def rfind(self, sub: bytes, start: Optional[int] = None, stop: Optional[int] = None
              ) -> int:
        if not sub:
            return self._empty(start, stop, True)
        start, stop = self._bounds(start, stop)
        reach = len(sub) - 1
        end = stop
        while end > start:
            kept_at, kept = self._kept
            kept_end = kept_at + len(kept)
            if kept_at < end <= kept_end and end - kept_at >= len(sub):
                begin = max(start, kept_at)  # the window kept holds the search's end
            else:
                begin = max(start, end - max(WINDOW, 2 * len(sub)))
                kept_at, kept = self._cover(begin, end)
            found = kept.rfind(sub, begin - kept_at, end - kept_at)
            if found >= 0:
                return kept_at + found
            if begin <= start:
                break
            end = min(end - 1, begin + reach)  # a match across the window's start is found next
        return -1
