"""The lines of a log that can hold a plan, found with byte searches over large buffers.

Most of a driver log is not plans: task and stage messages, block manager chatter, stack
traces. Reading it as `reading.InputReader.lines` does (every line split, decoded, cleaned by
`lines.logical_lines` and looked at by `extract.find_plans`) costs Python work per line. Here
the file is read in buffers of some megabytes and searched with `bytes.find` (and two
byte-pattern searches) for what any plan start needs (`MARKERS`, `MARKER_PATTERNS`): tree
glyphs (`+- `, `:- `), section headers (`== Physical Plan ==`, `=== Applying Rule`), AQE's
messages (`Plan changed`, `Final plan:`, `Transformed Plan:`), codegen's `WholeStageCodegen
subtrees`, a codegen marker starting an operator (`*(3) Project`), a formatted operator id
(` (12)`). Only the log messages holding one are handed on as lines; the rest is counted
(its newlines) and passed over.

Why the result is the same as reading every line: a line that starts a log message (a log4j
prefix, a JSON log record, a plan-change rule heading: `lines.message_header`) ends any plan
being read and resets every state of the line machinery, whatever came before it. So the text
is cut at such lines only: a run of whole messages with no marker in it (and nothing that
would be a note: only ASCII, no NUL byte) holds no plan start, and the machinery reading
it would only step over it. A plan-change rule's block (`=== Applying Rule ...`, spark.sql.planChangeLog) with no
explain section in it is passed over too: find_plans steps over it whole. A run that is not
plain ASCII is handed on whole (its damage
notes, its invalid bytes are the reader's to report). A text with no message starts at all
(an explain output, not a log) is handed on whole, as before.

The caller reads the file again line by line when no plan is found: the errors then (a log
with N messages and no plan, an empty text) count every line.
"""

from __future__ import annotations

import re
from typing import Iterator, List, Optional, Sequence, Tuple

from ..errors import InspectError
from .lines import LOG_PREFIX, message_header
from .reading import CHUNK, InputReader, over_max_size

#: What any line that starts a plan holds (extract.find_plans, lines.logical_lines), as
#: bytes: tree lines and stage headers; explain, logical, codegen-subtree and plan-change rule
#: headers; AQE's messages; codegen's count of subtrees; a JSON escape of an ASCII character
#: (which could spell any of these inside a JSON log record); and the messages that start and
#: stop an application (lines.APPLICATION_START, APPLICATION_STOP: no plan, but where one
#: application's plans end, and whether the log holds its end).
MARKERS = (b"+- ", b":- ", b"== ", b"Plan changed", b"Final plan:", b"Transformed Plan:",
           b"WholeStageCodegen subtree", b"\\u00", b"Submitted application: ",
           b"Successfully stopped SparkContext")
#: What makes extract.find_plans stop stepping over a plan-change rule's block: an explain
#: section's header.
SECTION_MARKERS = (b"== Physical Plan ==", b"Logical Plan ==", b"WholeStageCodegen subtree")
#: Where in each of SECTION_MARKERS the pair the compiled search stops at begins.
SECTION_ANCHORS = (0, 13, 0)
#: An operator line that is a tree's root with nothing under it: a codegen marker before
#: an operator name, or a formatted operator id (lexer.looks_like_tree_root). Each is found
#: by its first bytes, then matched there.
MARKER_PATTERNS = ((b"*", re.compile(rb"\*(?:\(\d+\) | ?)[A-Za-z_]")),
                   (b"^", re.compile(rb"\^(?:\(\d+\) | ?)[A-Za-z_]")),
                   (b" (", re.compile(rb" \(\d{1,9}\)")))
#: Where in each of MARKERS the two bytes the compiled search stops at begin (`_markers_c`: a
#: pair rare in a log's ordinary lines, `n:` of `Final plan:`, not `Fi` of `Finished task`;
#: `kC` of `SparkContext`).
MARKER_ANCHORS = (0, 0, 1, 0, 9, 12, 0, 0, 2, 25)
#: What every log holding the plan-change log holds (planchange.SIGNATURE).
PLAN_CHANGE_LOG = b"=== Applying Rule "
#: Read this much before searching it.
BUFFER = 4 << 20
#: A run this long with no message start in it: the text is not a log; the rest is handed on
#: line by line.
NOT_A_LOG = 16 << 20
#: Bytes a line must begin with (after blanks, for a JSON record) to start a log message,
#: when it is plain ASCII with no carriage return (lines.message_header decides).
_MESSAGE_FIRST = frozenset(b"0123456789[=")
_BLANKS = b" \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"
#: A newline before a line of plain ASCII that may start a message (`_may_start_message`).
_NEXT_MAY_START = re.compile(rb"\n(?=[0-9\[=]|[ \t\x0b\x0c\r\x1c-\x1f]*\{\")")
#: Bytes a log4j line begins with: such a line of plain ASCII (no carriage return, no NUL)
#: starts a message exactly when lines.LOG_PREFIX matches it (what logical_lines does
#: with it: not a JSON record, not a rule heading), told without the line machinery.
_PREFIX_FIRST = frozenset(b"0123456789[")


_kernel = None
_table = None
_sections = None


def _markers():
    """The marker search (`_markers_c`, or its twin `_markers_py`: native.load) and its table
    of MARKERS and MARKER_PATTERNS, made once."""
    global _kernel, _table, _sections
    if _kernel is None:
        from .. import native

        kernel = native.load("aqe_inspect.sources._markers")
        _table = kernel.Table(MARKERS, MARKER_ANCHORS, MARKER_PATTERNS)
        _sections = kernel.Table(SECTION_MARKERS, SECTION_ANCHORS)
        _kernel = kernel
    return _kernel, _table


def _may_start_message(line: bytes) -> bool:
    """Whether message_header must be asked (False: it would say no)."""
    if not line:
        return False
    if line[0] in _MESSAGE_FIRST or b"\r" in line or not line.isascii():
        return True
    return line.lstrip(_BLANKS)[:2] == b'{"'


def _over_max_size(chunk: bytes, pending: int, max_size: int) -> int:
    """Where in `chunk` the first line longer than `max_size` bytes ends (its newline; the
    line began `pending` bytes before the chunk); -1 when none does. Only the first line can
    be when a chunk is no longer than the bound."""
    end = chunk.find(b"\n")
    if pending + end > max_size:
        return end
    if len(chunk) <= max_size:
        return -1
    while True:
        start = end + 1
        end = chunk.find(b"\n", start)
        if end < 0:
            return -1
        if end - start > max_size:
            return end


class Skimmer:
    """`lines()`: the (number, text) of the lines of `reader`'s file that can hold a plan
    (and of every run that is not plain ASCII), in order, decoded as `reader` decodes them
    (its `binary` is set the same way)."""

    def __init__(self, reader: InputReader):
        self.reader = reader
        self.skipped = 0  # bytes passed over
        self.rule_blocks = 0  # plan-change rule blocks passed over (planchange.py reads them)
        # The buffer last looked at whole, and whether it is all plain ASCII with no NUL.
        self._checked: Optional[bytes] = None
        self._clean = False
        # Where the last search for a message's end stopped (a newline), when the message ran
        # past its buffer: the next buffer starts at the message's start, and its search for
        # the end resumes there (`_resume`, an offset in it) rather than from the start.
        self._reached = -1
        self._resume = -1
        self._kernel, self._table = _markers()
        # Given each buffer read (its bytes, its offset in the text read, whether it runs to
        # the end): planchange.Stream, which reads the plan-change log from the same bytes;
        # made (`plan_changes`) when the first buffer holds a rule heading (PLAN_CHANGE_LOG),
        # so that a log without one imports nothing of planchange.py.
        self.sink = None
        self.plan_changes = False
        # An input read once (standard input, a pipe: `once`): its plan-change log is read
        # from the first buffer on, whatever the first buffer holds, and every line is handed
        # on until a plan has been read (`plan_read`, set by the reader of the lines), so
        # that a text with no plan is counted as reading every line counts it: nothing can
        # be read again.
        self.once = False
        self.plan_read = False
        self.bom = False  # the file began with a byte-order mark (taken off)
        # The Scan of the buffer being searched, when the plan-change log is read from it
        # (`_scan_of`: it serves `_search` too), and the table it searches for.
        self._scan = None
        self._both = None

    def _is_start(self, line: bytes) -> bool:
        if not _may_start_message(line):
            return False
        if line[0] in _PREFIX_FIRST and line.isascii() and b"\r" not in line and \
                b"\x00" not in line:
            found = LOG_PREFIX.match(line.decode("ascii"))
            return found is not None and found.end() > 0
        text = line.decode("utf-8", "replace").replace("\x00", "\ufffd")
        return message_header(text) is not None

    def _message_end(self, buffer: bytes, at: int, final: bool) -> int:
        """Where the message holding buffer[at] ends: the start of the next line that starts
        a message (the buffer's end when `final` and none does); -1 when that is not known
        in this buffer. Lines of plain ASCII are looked at only when their first bytes can
        start a message (`_NEXT_MAY_START`)."""
        size = len(buffer)
        if self._resume > at:  # the lines up to there were looked at with the last buffer
            at = self._resume
        self._resume = -1
        while True:
            found = _NEXT_MAY_START.search(buffer, at)
            upto = found.start() if found else size
            if buffer.find(b"\r", at, upto) >= 0 or not (
                    self._checked is buffer and self._clean or buffer[at:upto].isascii()):
                return self._message_end_by_line(buffer, at, final)
            if found is None:
                if final:
                    return size
                # Every whole line after `at` is no message start; the last may not be whole.
                self._reached = max(at, buffer.rfind(b"\n", at))
                return -1
            following = upto + 1
            end = buffer.find(b"\n", following)
            if end < 0:
                if not final:
                    self._reached = upto
                    return -1
                return following if self._is_start(buffer[following:]) else size
            if self._is_start(buffer[following:end]):
                return following
            at = end

    def _message_end_by_line(self, buffer: bytes, at: int, final: bool) -> int:
        """`_message_end`, every line looked at."""
        size = len(buffer)
        end = buffer.find(b"\n", at)
        while end >= 0:
            following = end + 1
            after = buffer.find(b"\n", following)
            if after < 0:
                if not final:
                    self._reached = end
                    return -1
                return following if following == size or self._is_start(
                    buffer[following:]) else size
            if self._is_start(buffer[following:after]):
                return following
            end = after
        if not final:
            self._reached = at
            return -1
        return size

    def _rule_block(self, buffer: bytes, start: int, stop: int) -> bool:
        """Whether buffer[start:stop] is one plan-change rule's block (spark.sql.planChangeLog:
        `=== Applying Rule ... ===` and the plans side by side) with no explain section in
        it: extract.find_plans steps over all of it."""
        end = buffer.find(b"\n", start, stop)
        first = buffer[start:end if end >= 0 else stop]
        if b"=== " not in first:
            return False
        header = message_header(first.decode("utf-8", "replace").replace("\x00", "\ufffd"))
        if header is None or not header.startswith("=== "):
            return False
        passed = not self._kernel.holds(buffer, start, stop, _sections)  # one pass
        self.rule_blocks += passed
        return passed

    def lines(self) -> Iterator[Tuple[int, str]]:
        reader = self.reader
        handle = reader._open()
        try:
            for batch in self._lines(handle):  # the lines of one run handed on, a list
                yield from batch
        except OSError as error:
            raise InspectError(f"cannot read: {error.strerror or error}",
                               source=reader.name) from None
        finally:
            handle.close()

    def _lines(self, handle) -> "Iterator[Sequence[Tuple[int, str]]]":
        reader = self.reader
        buffer = b""
        number = 1  # the number of buffer's first line
        offset = 0  # where the buffer begins in the text read
        sink = self.sink
        wanted = self.plan_changes and sink is None
        first = True
        failure: Optional[InspectError] = None
        every_line = False
        while True:
            parts: List[bytes] = [buffer]
            size = len(buffer)
            # Where the line being read began (for the --max-size check, made after each
            # CHUNK read as InputReader does) and its number.
            last_newline = buffer.rfind(b"\n")
            ended = False
            # At least one more chunk each time round, and twice what is kept: a message (or
            # a line) longer than a buffer is searched again with each round's text, so the
            # rounds must grow geometrically for the searches to add up to linear time.
            target = max(BUFFER, size + CHUNK, 2 * size)
            while size < target:
                # (A chunk at a time: pieces of a chunk are reused by the allocator as they
                # are freed; a fresh buffer of megabytes read whole costs a page fault for
                # each of its pages.)
                chunk = handle.read(CHUNK)
                if not chunk:
                    ended = True
                    break
                if first:
                    if chunk.startswith(b"\xef\xbb\xbf"):
                        chunk = chunk[3:]
                        self.bom = True
                    reader._refuse_binary(chunk)
                    first = False
                newline = chunk.rfind(b"\n")
                if newline >= 0:
                    # A line that ends in this chunk is refused as one that goes on past it
                    # (each line of the chunk, when a chunk can hold a line over the bound).
                    over = _over_max_size(chunk, size - last_newline - 1, reader.max_size)
                    if over >= 0:
                        line = self._lines_in(number, parts) + chunk.count(b"\n", 0, over)
                        before = chunk.rfind(b"\n", 0, over)
                        if before >= 0:  # the lines before it are whole: read first
                            parts.append(chunk[:before + 1])
                            last_newline = size + before
                        failure = InspectError(over_max_size(f"line {line}", reader.max_size),
                                               source=reader.name, line=line, column=1)
                        break
                    last_newline = size + newline
                parts.append(chunk)
                size += len(chunk)
                if size - last_newline - 1 > reader.max_size:
                    line = self._lines_in(number, parts)  # the line not ended yet
                    failure = InspectError(over_max_size(f"line {line}", reader.max_size),
                                           source=reader.name, line=line, column=1)
                    break
            buffer = b"".join(parts)
            parts = []
            search = self._search if not every_line else self._every_line
            if failure is not None:
                # Every whole line before the one too long is read; then the refusal.
                yield from search(buffer[:last_newline + 1], number, True)
                raise failure
            if wanted:
                if offset:  # (a rule heading only past the first buffer: read again later)
                    wanted = False
                elif self.once or buffer.find(PLAN_CHANGE_LOG) >= 0:
                    from .planchange import Stream

                    sink = self.sink = Stream(eager=self.once)
                    wanted = False
            # While the plan-change log is read from these buffers, one pass over each
            # serves both the skim's markers and the plan-change headings.
            self._scan = None
            if sink is not None and sink.state != "off":
                self._scan = self._scan_of(buffer)
            if sink is not None:
                sink.feed(buffer, offset, ended, self._scan)
            if ended:
                yield from search(buffer, number, True)
                return
            keep, number = yield from search(buffer, number, False)
            self._scan = None  # (with it the buffer searched: not kept past its round)
            if keep == 0 and len(buffer) > NOT_A_LOG and not every_line:
                # No message start in so much text: not a log; every line is handed on, from
                # this buffer's on (only the line not whole yet is kept).
                every_line = True
                keep, number = yield from self._every_line(buffer, number, False)
            buffer = buffer[keep:]
            offset += keep

    def _scan_of(self, buffer: bytes):
        """The kernel's Scan of `buffer` for MARKERS and MARKER_PATTERNS (`next`) and the
        plan-change headings (planchange.HEADINGS: `headings`); its table made once."""
        if self._both is None:
            from .planchange import HEADING_ANCHORS, HEADINGS

            self._both = self._kernel.Table(
                MARKERS + tuple(marker for marker, _ in HEADINGS),
                MARKER_ANCHORS + tuple(HEADING_ANCHORS), MARKER_PATTERNS)
        return self._kernel.Scan(buffer, self._both, len(MARKERS))

    def _lines_in(self, number: int, parts: Sequence[bytes]) -> int:
        """The number of the line after the text `parts` (its first line is line `number`)."""
        count = self._kernel.count_newlines
        return number + sum(count(part, 0, len(part)) for part in parts)

    def _search(self, buffer: bytes, number: int, final: bool
                ) -> "Iterator[Sequence[Tuple[int, str]]]":
        """Hand on the lines of `buffer` (its first line is line `number`, a message start or
        the file's first) that can hold a plan. Returns where the text not handled yet
        begins (a message start, read again with the next buffer; `len(buffer)` when
        `final`) and the number of its line."""
        size = len(buffer)
        pos = 0  # handled up to here: a message start (or the buffer's start)
        line = number  # the number of the line at pos
        # Where the next marker or pattern at or after a position begins (the compiled
        # kernel reads the bytes once; its twin keeps each marker's next occurrence): the
        # buffer's Scan when the plan-change headings were searched with it.
        scan = self._scan
        finder = scan if scan is not None and scan.buffer is buffer else \
            self._kernel.Finder(buffer, self._table)
        while True:
            hit = finder.next(pos)
            if hit < 0:
                break
            # The message holding the hit starts at or before the hit's line.
            start = buffer.rfind(b"\n", pos, hit) + 1 or pos
            while start > pos:
                end = buffer.find(b"\n", start)
                if self._is_start(buffer[start:end if end >= 0 else size]):
                    break
                start = buffer.rfind(b"\n", pos, start - 1) + 1 or pos
            # It runs up to the next message start.
            stop = self._message_end(buffer, hit, final)
            if stop < 0:
                if not final:  # it may go on in the next buffer: read it again with it
                    line = yield from self._pass(buffer, pos, start, line)
                    self._resume = self._reached - start
                    return start, line
                stop = size
            if self._rule_block(buffer, start, stop):
                line = yield from self._pass(buffer, pos, stop, line)
            else:
                line = yield from self._pass(buffer, pos, start, line)
                line = yield from self._hand_on(buffer, start, stop, line)
            pos = stop
            if pos >= size:
                return size, line
        if final:
            line = yield from self._pass(buffer, pos, size, line)
            return size, line
        # Keep the text from its last message start on: the next buffer starts there.
        keep = pos
        at = buffer.rfind(b"\n", pos) + 1  # the line not whole yet begins here
        while at > pos:
            previous = buffer.rfind(b"\n", pos, at - 1) + 1 or pos
            if self._is_start(buffer[previous:at - 1]):
                keep = previous
                break
            at = previous
        line = yield from self._pass(buffer, pos, keep, line)
        return keep, line

    def _every_line(self, buffer: bytes, number: int, final: bool
                    ) -> "Iterator[Sequence[Tuple[int, str]]]":
        """Every line of `buffer` handed on (the last, not whole yet, kept unless `final`);
        returns where the text kept begins and the number of its line."""
        keep = len(buffer) if final else buffer.rfind(b"\n") + 1
        line = yield from self._hand_on(buffer, 0, keep, number)
        return keep, line

    def _pass(self, buffer: bytes, start: int, stop: int, line: int
              ) -> "Iterator[Sequence[Tuple[int, str]]]":
        """Pass over buffer[start:stop] (whole messages, no plan start in them; `line` is the
        number of its first) unless it is not plain ASCII or holds a NUL byte: then hand it
        on. Returns the number of the line at `stop`."""
        if start >= stop:
            return line
        if self.once and not self.plan_read:
            return (yield from self._hand_on(buffer, start, stop, line))
        if self._checked is not buffer:  # is the whole buffer plain ASCII with no NUL?
            self._checked, self._clean = buffer, self._plain(buffer)
        if self._clean or self._plain(buffer[start:stop]):
            self.skipped += stop - start
            return line + self._kernel.count_newlines(buffer, start, stop)
        return (yield from self._hand_on(buffer, start, stop, line))

    @staticmethod
    def _plain(piece: bytes) -> bool:
        return piece.isascii() and b"\x00" not in piece

    def _hand_on(self, buffer: bytes, start: int, stop: int, line: int
                 ) -> "Iterator[Sequence[Tuple[int, str]]]":
        """The lines of buffer[start:stop], decoded, in batches of about a chunk (all of a
        batch at once when plain ASCII, else one by one, each decoded as it is asked for);
        returns the number of the line after."""
        decode = self.reader._decode
        while start < stop:
            cut = stop
            if stop - start > CHUNK:
                cut = buffer.find(b"\n", start + CHUNK, stop) + 1 or stop
            piece = buffer[start:cut]
            start = cut
            if self._plain(piece):  # as reader._decode would, at once
                texts = piece.decode("ascii").split("\n")
                if piece.endswith(b"\n"):
                    texts.pop()
                yield list(zip(range(line, line + len(texts)), texts))
                line += len(texts)
                continue
            pieces = piece.split(b"\n")
            if piece.endswith(b"\n"):
                pieces.pop()
            for text in pieces:
                yield ((line, decode(text, line)),)
                line += 1
        return line
