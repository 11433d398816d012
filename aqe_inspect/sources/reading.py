"""Read what the user named: a file, or `-` for standard input, as a stream of lines; and the
one size guard every reader shares.

Input is read in chunks and decoded line by line, so a log of any size streams through; only
one line (and, further on, one plan) is held at a time, each up to `max_size` characters.
Bytes that are not UTF-8 are replaced and remembered: they fail the run only when no plan
could be read at all (a binary file), else they become a note.

**NUL gaps.** logrotate's `copytruncate` copies a log and cuts it to nothing while the writer
keeps its offset: its next line lands there, and the file reads as that many NUL bytes and then
text. Such a run (`NulGaps`: NUL bytes that begin a line and are followed by text) is taken
out and said in a note, at the file's start or later (logs of several rotations joined); a
run followed by anything else is left for the binary test, so a binary file is still refused.

**The size guard.** `--max-size` (`max_size`, default DEFAULT_MAX_SIZE) bounds whatever one
reader must hold whole: a line of text, a plan, an event of an event log (checked while it is
decompressed, before more of it is held: events.py skips it with a note), a block a codec
decodes whole (codecs.py), the events held for executions that have not ended (events.py), a
History Server answer (a saved file: `read_bounded`; a download: `check_declared` on its
Content-Length, then `read_bounded` on the body). Every refusal says it the same way
(`over_max_size`): what, how large, the bound, and "raise --max-size to read it".
"""

from __future__ import annotations

import io
import os
import re
import sys
from typing import BinaryIO, Iterator, List, Optional, Tuple

from ..errors import InspectError

STDIN = "-"
CHUNK = 1 << 20
#: The most text held at once (one line, one plan) unless --max-size says otherwise.
DEFAULT_MAX_SIZE = 256 * 1024 * 1024


def over_max_size(what: str, max_size: int, size: Optional[int] = None,
                  skipped: bool = False) -> str:
    """The words of every refusal by size: `what` ("line 4", "the History Server answer")
    is longer than `max_size` bytes (`size`, when known) [and was skipped]: raise --max-size
    to read it."""
    known = f" ({size:,} bytes)" if size is not None else ""
    outcome = " and was skipped" if skipped else ""
    return (f"{what}{known} is longer than --max-size ({max_size:,} bytes){outcome}; raise "
            f"--max-size to read it")


def check_declared(size: Optional[int], max_size: int, source: str, what: str) -> None:
    """Refuse, before anything is read, what says it is longer than `max_size` bytes (a file's
    size, an HTTP answer's Content-Length): an InspectError naming `source`. `size` None (not
    said) passes: `read_bounded` still bounds it."""
    if size is not None and size > max_size:
        raise InspectError(over_max_size(what, max_size, size), source=source)


def read_bounded(stream: BinaryIO, max_size: int, source: str, what: str) -> bytes:
    """All the bytes of `stream` (a file, an HTTP answer), read in pieces of at most CHUNK
    bytes and refused as soon as they pass `max_size`: never more than `max_size` + 1 held,
    whatever the stream holds or says it holds. An InspectError naming `source` past the
    bound; OSError from the stream is the caller's to word."""
    parts = []
    held = 0
    read = getattr(stream, "read1", None) or stream.read
    while True:
        data = read(min(CHUNK, max_size + 1 - held))
        if not data:
            break
        parts.append(data)
        held += len(data)
        if held > max_size:
            parts.clear()
            raise InspectError(over_max_size(what, max_size), source=source)
    data = b"".join(parts)
    parts.clear()
    return data


def display_name(path: str) -> str:
    return "<stdin>" if path == STDIN else path


class Peeked:
    """An input read once (standard input, a pipe) whose first bytes are read ahead, to tell
    what it holds by content, and given again to whoever reads it next (`stream`)."""

    def __init__(self, source: BinaryIO, owned: bool = False):
        self.source = source
        self.owned = owned  # closed with the stream handed on (a pipe opened here)
        self.head = b""  # the bytes peeked at, not yet handed on
        self.ended = False  # the input ended within them
        self.taken = False  # handed on (`stream`): nothing more to peek

    def peek(self, size: int) -> bytes:
        """Up to `size` first bytes, read now and given again by `stream`. A larger `size`
        later reads on (a compressed stream whose first block is long)."""
        if self.taken:
            return b""
        if len(self.head) < size and not self.ended:
            parts, got = [self.head], len(self.head)
            source = self.source
            while got < size:
                data = source.read1(size - got) if hasattr(source, "read1") else \
                    source.read(size - got)
                if not data:
                    self.ended = True
                    break
                parts.append(data)
                got += len(data)
            self.head = b"".join(parts)
        return self.head[:size]

    def stream(self) -> BinaryIO:
        """The input's bytes from the first (those `peek` read included)."""
        head, self.head, self.taken = self.head, b"", True
        if not head:
            return self.source
        return io.BufferedReader(_Replay(head, self.source, self.owned), CHUNK)


_stdin: Optional[Tuple[object, Peeked]] = None  # sys.stdin, and what was peeked of it: another
#                                                 one (the library given a new standard input,
#                                                 in one process) starts again


def stdin_peeked() -> Peeked:
    """Standard input as `Peeked` (a new one for another `sys.stdin`)."""
    global _stdin
    if _stdin is None or _stdin[0] is not sys.stdin:
        _stdin = (sys.stdin, Peeked(sys.stdin.buffer))
    return _stdin[1]


def peek_stdin(size: int) -> bytes:
    """Up to `size` first bytes of standard input, read now and given again to whoever reads
    standard input next (`stdin_stream`): what it holds is told by content."""
    return stdin_peeked().peek(size)


def stdin_stream() -> BinaryIO:
    """Standard input's bytes from the first (those `peek_stdin` read included)."""
    return stdin_peeked().stream()


class _Replay(io.RawIOBase):
    """An input with its peeked first bytes put back in front."""

    def __init__(self, head: bytes, rest: BinaryIO, owned: bool = False):
        self._head = memoryview(head)
        self._rest = rest
        self._owned = owned

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            size = min(len(buffer), len(self._head))
            buffer[:size] = self._head[:size]
            self._head = self._head[size:]
            return size
        read = getattr(self._rest, "read1", self._rest.read)
        data = read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if self._owned and not self.closed:
            self._rest.close()
        super().close()


_NUL_RUN = re.compile(rb"\x00+")
#: Why a file holds a run of NUL bytes before its text.
TRUNCATED_WHILE_WRITTEN = "a file truncated while it was written, e.g. by logrotate copytruncate"


def _text_follows(byte: int) -> bool:
    """Whether a byte after a run of NUL bytes begins text (a log line): printable ASCII, a
    tab, or a byte of a UTF-8 sequence; a control byte is no line a writer starts."""
    return byte >= 0x20 and byte != 0x7f or byte == 0x09


class NulGaps:
    """The bytes of `raw` without the gaps a copy-truncate leaves: each run of NUL bytes that
    begins a line (the file's start, or after a newline) and is followed by text
    (`_text_follows`) or by the file's end. `read(size)` gives a piece of the rest (at most
    one chunk read from `raw`, never empty before the end); what was taken out is counted:
    `leading` (at the file's start), `gaps`, `gap_bytes`, `first_gap` (the later runs, by
    their offset in the file). A run followed by anything else is handed on as it is."""

    def __init__(self, raw: BinaryIO):
        self._raw = raw
        self._pieces = self._read_pieces()
        self.leading = 0
        self.gaps = 0
        self.gap_bytes = 0
        self.first_gap: Optional[int] = None
        self.handed_on = 0  # bytes handed on

    def read(self, size: int = -1) -> bytes:
        piece = next(self._pieces, b"")
        self.handed_on += len(piece)
        return piece

    def close(self) -> None:
        self._raw.close()

    def _skipped(self, at: int, count: int) -> None:
        if at == 0:
            self.leading = count
            return
        self.gaps += 1
        self.gap_bytes += count
        if self.first_gap is None:
            self.first_gap = at

    def notes(self) -> List[str]:
        """What was taken out, as notes."""
        said = []
        if self.leading:
            said.append(f"skipped {self.leading:,} NUL byte{'s' * (self.leading != 1)} at "
                        f"the start ({TRUNCATED_WHILE_WRITTEN})")
        if self.gaps == 1:
            said.append(f"skipped {self.gap_bytes:,} NUL byte{'s' * (self.gap_bytes != 1)} "
                        f"at byte {self.first_gap:,} ({TRUNCATED_WHILE_WRITTEN})")
        elif self.gaps:
            said.append(f"skipped {self.gap_bytes:,} NUL bytes in {self.gaps:,} runs that "
                        f"begin lines, the first at byte {self.first_gap:,} "
                        f"({TRUNCATED_WHILE_WRITTEN})")
        return said

    def _read_pieces(self) -> Iterator[bytes]:
        raw = self._raw
        offset = 0  # the file's offset of `chunk`'s first byte
        line_start = True  # the next byte begins a line
        run = run_at = 0  # a run that begins a line, reaching the end of the chunk before
        while True:
            chunk = raw.read(CHUNK)
            if not chunk:
                break
            base, offset = offset, offset + len(chunk)
            if not run and b"\x00" not in chunk:
                line_start = chunk[-1] == 0x0a
                yield chunk
                continue
            pos = scan = 0  # chunk[pos:] not handed on yet; NULs searched from scan
            if run:
                end = _NUL_RUN.match(chunk).end() if chunk[0] == 0 else 0
                run += end
                if end == len(chunk):
                    continue
                if _text_follows(chunk[end]):
                    self._skipped(run_at, run)
                else:
                    yield from _nuls(run)
                run = 0
                pos = scan = end
            while True:
                nul = chunk.find(b"\x00", scan)
                if nul < 0:
                    break
                if not (chunk[nul - 1] == 0x0a if nul else line_start):
                    scan = nul + 1
                    continue
                end = _NUL_RUN.match(chunk, nul).end()
                if end == len(chunk):  # the run may go on: decided with the next chunk
                    if nul > pos:
                        yield chunk[pos:nul]
                    run, run_at = end - nul, base + nul
                    pos = end
                    break
                if _text_follows(chunk[end]):
                    if nul > pos:
                        yield chunk[pos:nul]
                    self._skipped(base + nul, end - nul)
                    pos = end
                scan = end
            if pos < len(chunk):
                yield chunk[pos:]
            line_start = chunk[-1] == 0x0a
        if run:  # NUL bytes up to the end: nothing written after the cut yet
            self._skipped(run_at, run)


def _nuls(count: int) -> Iterator[bytes]:
    while count:
        piece = min(count, CHUNK)
        yield b"\x00" * piece
        count -= piece


class InputReader:
    """The lines of one input; `binary` holds where the first non-text byte was found,
    `gaps` what NUL bytes a copy-truncate left were taken out (`NulGaps`)."""

    def __init__(self, path: str, max_size: int = DEFAULT_MAX_SIZE,
                 stream: Optional[BinaryIO] = None):
        self.path = path
        self.name = display_name(path)
        self.max_size = max_size
        self.stream = stream  # the input opened already (a pipe, its first bytes peeked at)
        self.binary: Optional[Tuple[int, int, str]] = None  # (line, column, what)
        self.gaps: Optional[NulGaps] = None

    def gap_notes(self) -> List[str]:
        return self.gaps.notes() if self.gaps is not None else []

    def only_nuls(self) -> int:
        """The count of NUL bytes the input held when it held nothing else, else 0."""
        gaps = self.gaps
        if gaps is None or gaps.handed_on:
            return 0
        return gaps.leading

    def _open(self) -> BinaryIO:
        self.gaps = NulGaps(self._open_raw())
        return self.gaps  # type: ignore[return-value]

    def _open_raw(self) -> BinaryIO:
        if self.stream is not None:
            return self.stream
        try:
            if self.path == STDIN:
                if sys.stdin is None or sys.stdin.closed:
                    raise InspectError("cannot read standard input: it is closed",
                                       source=self.name)
                return stdin_stream()
            if os.path.isdir(self.path):
                raise InspectError("is a directory, expected a file holding a plan",
                                   source=self.name)
            from .opening import open_file

            return open_file(self.path, self.name)
        except FileNotFoundError:
            raise InspectError("no such file", source=self.name) from None
        except PermissionError:
            raise InspectError("permission denied", source=self.name) from None
        except OSError as error:
            raise InspectError(f"cannot read: {error.strerror or error}",
                               source=self.name) from None

    def lines(self) -> Iterator[Tuple[int, str]]:
        handle = self._open()
        try:
            yield from self._lines(handle)
        except OSError as error:
            raise InspectError(f"cannot read: {error.strerror or error}",
                               source=self.name) from None
        finally:
            if self.path != STDIN:
                handle.close()

    def _lines(self, handle: BinaryIO) -> Iterator[Tuple[int, str]]:
        pending = bytearray()
        number = 0
        first = True
        while True:
            chunk = handle.read(CHUNK)
            if not chunk:
                break
            if first:
                if chunk.startswith(b"\xef\xbb\xbf"):
                    chunk = chunk[3:]
                self._refuse_binary(chunk)
            first = False
            searched = len(pending)  # the bytes before it hold no line break
            pending += chunk
            start = 0
            while True:
                end = pending.find(b"\n", max(start, searched))
                if end < 0:
                    break
                if end - start > self.max_size:  # a line that ends in this chunk, too
                    raise InspectError(over_max_size(f"line {number + 1}", self.max_size),
                                       source=self.name, line=number + 1, column=1)
                number += 1
                yield number, self._decode(bytes(pending[start:end]), number)
                start = end + 1
            del pending[:start]
            if len(pending) > self.max_size:
                raise InspectError(over_max_size(f"line {number + 1}", self.max_size),
                                   source=self.name, line=number + 1, column=1)
        if pending or number == 0:
            number += 1
            yield number, self._decode(bytes(pending), number)

    def _refuse_binary(self, head: bytes) -> None:
        """A NUL byte among the first 8,000 bytes (git's test) marks a binary file: no plan
        text starts that way, and reading it on would only fill memory."""
        nul = head.find(b"\x00", 0, 8000)
        if nul >= 0:
            line = head.count(b"\n", 0, nul) + 1
            column = nul - (head.rfind(b"\n", 0, nul) + 1) + 1
            after = self.gaps.leading if self.gaps is not None else 0
            skipped = f" after {after:,} NUL bytes at the start" if after else ""
            raise InspectError(f"expected plan text, found binary data (a NUL byte{skipped})",
                               source=self.name, line=line, column=column)

    def _decode(self, data: bytes, number: int) -> str:
        nul = data.find(b"\x00")
        if nul >= 0 and self.binary is None:
            self.binary = (number, nul + 1, "binary data (a NUL byte)")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            if self.binary is None:
                self.binary = (number, error.start + 1, "binary data")
            text = data.decode("utf-8", errors="replace")
        return text.replace("\x00", "\ufffd") if nul >= 0 else text
