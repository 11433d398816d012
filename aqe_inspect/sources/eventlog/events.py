"""From an event log's bytes to its SQL executions, streamed.

An event log is one JSON object a line; almost all of its bytes are task and stage events
this reader never needs. So lines are not split or decoded: each chunk is walked from newline
to newline with the C library's vectorised search (the kernel `_eventlines`, or its twin's
`bytes.find`), each line told by its head, `{"Event":"<name>"`, which Spark writes first (a
line that does not begin so is searched for the kept events' markers anywhere in it, and
where lines are short the whole rest of the chunk is), and only the lines of the few events
kept (SQL events, stages, the application's start, version and properties) are read: the
ids of starts, updates and stages where they stand in the chunk, the rest decoded as JSON.
Two events glued on one line are, as to Spark's own reader, the one line its head names.

Per open execution only the start event and the LAST `SparkListenerSQLAdaptiveExecutionUpdate`
are kept, as raw bytes, with the count of updates (AQE's re-plans), the driver-side metric
values (`SparkListenerDriverAccumUpdates`: partition counts, coalesced and skew figures,
partition sizes) and the run-time evidence of its stages (runtime.py): the raw
`SparkListenerStageCompleted` events of the stages it submitted (their metric totals) and,
only when asked (`task_metrics`), each successful task's metric updates. An execution is
handed on at its `SparkListenerSQLExecutionEnd`, or at the end of the log marked as not
finished. Memory is bounded by the largest event and the executions open at once.

Read by `LogStream` from a plain file, the start, update and stage events are kept as `Span`s
(where their lines stand) rather than their bytes: the worker process that builds the
execution reads them back itself, so that they are not pickled, piped and unpickled.

`build_query` turns one such execution into a `Query` (in a worker process when there are many):
the final plan text (the last update's description, which prints the initial plan too) is
parsed; when it is missing or cut, the tree is built from `sparkPlanInfo` (planinfo.py).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import signal
import sys
import weakref
from dataclasses import dataclass, field
from typing import (IO, Any, Callable, Dict, Generator, Iterator, List, Mapping, NamedTuple,
                    Optional, Set, Tuple, Union)

from .. import deepjson
from ...errors import InspectError
from ...signals import ENDING_SIGNALS
from ...signals import hold as _hold_signals
from ...signals import release as _release_signals
from ...plan.model import Application, Execution, Query
from ..reading import DEFAULT_MAX_SIZE, over_max_size
from ... import native
from . import files
from .planinfo import adaptive_tree, attach_metrics, build_tree, info_carriers, read_description
from .connect_labels import PREFIX as CONNECT_PREFIX, connect_description
from .runtime import (COMPLETED, STAGE_EVENT, SUBMITTED, TASK_END, Evidence, RunTime, stage_head,
                      submitted_stage, task_result)

SQL_EVENT = b'"Event":"org.apache.spark.sql.execution.ui.SparkListener'
START = b"SQLExecutionStart\""
END = b"SQLExecutionEnd\""
UPDATE = b"SQLAdaptiveExecutionUpdate\""
ACCUMS = b"DriverAccumUpdates\""
LOG_START = b'"Event":"SparkListenerLogStart"'
APP_START = b'"Event":"SparkListenerApplicationStart"'
#: The last event Spark writes to an application's log (a few may follow it: looked for in
#: the last TAIL bytes).
APP_END = b'"Event":"SparkListenerApplicationEnd"'
TAIL = 1 << 16
ENVIRONMENT = b'"Event":"SparkListenerEnvironmentUpdate"'
#: Databricks writes no SparkListenerLogStart; this event of its own carries the version.
DATABRICKS_START = b'"Event":"DBCEventLoggingListenerMetadata"'
APP_EVENTS = (LOG_START, DATABRICKS_START, APP_START, ENVIRONMENT)
#: Where an SQL event says which execution it belongs to (Spark writes it second): a whole
#: number of at most a Java long's 19 digits (anything else, `1.5`, `[]`, `"7"`, is read the
#: general way, which says what is wrong with it).
EXECUTION_ID = re.compile(rb'"executionId":(\d{1,19})(?![\d.eE])')
ID_WINDOW = 400

ORIGIN = "event log"
#: The AQE updates of one execution a timeline keeps (the rest are counted, with a note).
MAX_REPLANS_KEPT = 32

#: What one task of the event-log pool carries: executions until they hold this many bytes of
#: events, or BATCH_MOST of them. A task per execution cost the parent a future, two pickles
#: and a wake-up each, about a small execution's own work; a batch of a few milliseconds of
#: work costs them once. BATCHES_PER_WORKER batches in flight a worker keep it fed.
BATCH_BYTES = 1 << 20
#: A log of at least POOL_BYTES (its files' size) is handed to the pool after its first
#: POOL_MIN_LARGE executions rather than `build_queries`' `pool_min`: the executions this
#: process builds are that many the scan waits for while the other core has no work yet.
POOL_BYTES = 64 << 20
POOL_MIN_LARGE = 1
#: The processes a long log's executions are built in when the caller does not say: None
#: for the CPUs (at most 2); the MCP server sets 1 (a fork beside its threads could hang).
POOL_WORKERS: Optional[int] = None
BATCH_MOST = 32
BATCHES_PER_WORKER = 3

#: The most executions held open (started, not yet ended) at once. Spark runs a few SQL
#: executions at a time (a busy Thrift server, some hundreds); a log whose starts have no end
#: (a driver killed, a hostile file) would else hold them all. Past it, or past --max-size of
#: events held for the open executions together, the one open longest is handed on as
#: unfinished, with a note (`RawExecution.let_go`), and its later events are skipped, counted.
MAX_OPEN = 1000
#: What one metric value and one task's entry held for an open execution cost, about (their
#: Python objects): counted with the raw events' bytes against --max-size.
HELD_PER_VALUE = 64
HELD_PER_TASK = 200
#: A line longer than a chunk is told by its first HEAD bytes: `{"Event":"<name>"`, which
#: Spark writes first. One that names an event not kept is never held.
HEAD = 256
EVENT_KEY = b'"Event":"'
#: Why the line begun is not held: not an event kept, or longer than --max-size.
OTHER, LONG = "other", "long"
#: A line longer than this, not yet whole, is held in a temporary file rather than in memory
#: (`_HeldLine`): one that turns out longer than --max-size costs no memory.
SPILL = 32 << 20

#: The settings that decide what AQE does (every key the why-not explainers read), kept from
#: the application's properties and each execution's `modifiedConfigs`.
AQE_CONFIG_PREFIXES = ("spark.sql.adaptive.",)
AQE_CONFIGS = frozenset((
    "spark.sql.autoBroadcastJoinThreshold", "spark.sql.join.preferSortMergeJoin",
    "spark.sql.shuffle.partitions", "spark.sql.optimizer.excludedRules",
    "spark.sql.exchange.reuse", "spark.sql.optimizer.dynamicPartitionPruning.enabled",
    "spark.sql.ui.explainMode", "spark.sql.maxPlanStringLength",
    "spark.sql.execution.broadcastHashJoin.outputPartitioningExpandLimit",
    "spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly",
))


def aqe_configs(properties: Mapping[str, Any]) -> Dict[str, str]:
    return {str(k): deepjson.text(v) for k, v in properties.items()
            if k in AQE_CONFIGS or str(k).startswith(AQE_CONFIG_PREFIXES)}


@dataclass
class AppState:
    """What the application's own events said: filled while scanning."""

    app_id: str = ""
    name: str = ""
    spark_version: str = ""
    configs: Dict[str, str] = field(default_factory=dict)
    #: The application's start event was read: an application ran (whether it ran SQL or not).
    started: bool = False
    #: The application's events read (its log start, environment, start), however few.
    events: int = 0
    #: The log holds the application's end (known once the log is read whole: None before).
    ended: Optional[bool] = None

    def application(self) -> Application:
        return Application(app_id=self.app_id, name=self.name, spark_version=self.spark_version,
                           ended=self.ended)


class Span(NamedTuple):
    """Where an event's line stands in a plain event-log file: what a worker process reads
    for itself (`resolved`) rather than being sent the event's bytes."""

    path: str
    offset: int
    length: int
    #: The file's identity when the scanner opened it (`files.identity`): checked when the
    #: span is read back, with the event's first bytes (`head`): its name and execution id,
    #: or stage id, as Spark writes them first.
    identity: Optional[Tuple[int, int, int, int]] = None
    head: bytes = b""


#: How many of an event's first bytes a span keeps, to check the event read back is it.
SPAN_HEAD = 160


@dataclass
class RawExecution:
    """One SQL execution as found: raw event bytes, not yet decoded (picklable, cheap). With
    `Scanner(spans=True)`, the events of a plain file are `Span`s instead (`resolved` reads
    them)."""

    execution_id: int
    part: str
    start: Optional[Union[bytes, Span]] = None
    start_line: int = 0
    update: Optional[Union[bytes, Span]] = None
    update_line: int = 0
    updates: int = 0
    accumulators: Dict[int, int] = field(default_factory=dict)
    end_time: Optional[int] = None
    finished: bool = False
    #: Its stages' events: metric totals, every driver update, task updates (runtime.py).
    runtime: RunTime = field(default_factory=RunTime)
    #: With `Scanner(keep_replans=True)`: each update's (line, plan text), the first
    #: MAX_REPLANS_KEPT of them.
    replans: List[Tuple[int, str]] = field(default_factory=list)
    #: About how many bytes its held events take (raw events, plan texts, metric values).
    held: int = 0
    #: Why the scanner handed it on before its end (MAX_OPEN, --max-size); "" when it did not.
    let_go: str = ""


#: How every event's line begins as Spark writes it: `{` and then the `"Event":"` key that
#: every marker starts with.
LINE_HEAD = b'{"Event":"'
#: `Scanner._lines` walks lines one by one while they average at least WALK_LINE_BYTES over
#: the first WALK_SAMPLE of a chunk; shorter, a Python step a line costs more than searching
#: each marker over every byte (about 0.2 s a gigabyte a marker).
WALK_SAMPLE = 256
WALK_LINE_BYTES = 1024

#: How a start's and an update's lines begin (`Scanner._sql_in_place`).
_START_HEAD = b"{" + SQL_EVENT + START
_UPDATE_HEAD = b"{" + SQL_EVENT + UPDATE
#: The walk of a buffer's lines to those of kept events (`_eventlines_c.pyx`, or its twin
#: `_eventlines_py.py`).
_event_lines = native.load("aqe_inspect.sources.eventlog._eventlines").event_lines

#: Past this many lines in one span, `count_newlines` counts the rest byte by byte.
HOPS = 64


#: A line that begins as an event does with JSON blanks in it (`{"Event": "...`, as Python's
#: `json.dumps` and other tools write it): the log is not in Spark's compact form.
SPACED_HEAD = re.compile(rb'[ \t\r]*\{[ \t\r]*"Event"[ \t\r]*:[ \t\r]*"')
#: A JSON string (kept as it is: its blanks are its text), or blanks outside one. A string
#: never runs past its line (a raw newline is not JSON), so a malformed line cannot take the
#: next line's blanks for its text.
_STRING_OR_BLANKS = re.compile(rb'("[^"\\\n]*(?:\\[^\n][^"\\\n]*)*")|[ \t\r]+')


def compact_json_lines(data: bytes) -> bytes:
    """JSON lines with the blanks between their tokens taken out (`{"Event": "X", "a": 1}`
    becomes `{"Event":"X","a":1}`, as Spark writes it); strings, numbers and newlines are
    kept as they are, so every line keeps its number. `data` holds whole lines."""
    return _STRING_OR_BLANKS.sub(rb"\1", data)


def _spaced_at(chunk: bytes, at: int) -> bool:
    """Whether the line at chunk[at] begins as an event with JSON blanks, not as Spark
    writes it (one look at the line's head: the compact form's fast path costs nothing)."""
    return not chunk.startswith(LINE_HEAD, at) and SPACED_HEAD.match(chunk, at) is not None


def _spaced_chunk(chunk: bytes, first: int) -> bool:
    """Whether a chunk (whose first newline is at `first`) shows JSON blanks at the head of
    its first whole line, its last whole line or the line it ends in: a log written again
    from some point on is found in the chunk where that point falls."""
    last = chunk.rfind(b"\n")
    return _spaced_at(chunk, first + 1) or _spaced_at(chunk, last + 1) or \
        _spaced_at(chunk, chunk.rfind(b"\n", 0, last) + 1)


def _compacted(chunks: Iterator[Tuple[Any, bytes]], max_size: int
               ) -> Iterator[Tuple[Any, bytes, bool]]:
    """Each (part, chunk) of `chunks`, and whether its blanks were taken out: a part is read
    as it is while its lines begin as Spark writes them (`{"Event":"`); from a chunk whose
    first whole line begins with JSON blanks (`{"Event": "`: a log written again by another
    tool; its last lines are looked at too), the rest of the part is handed on in whole
    lines without the blanks between tokens (`compact_json_lines`), so that the markers the
    scanner looks for are found whatever the blanks: JSON whitespace is JSON. A line is held to be made whole up to
    `max_size` bytes; a longer one is handed on as it is (the scanner skips it with a note)."""
    part = None
    spaced = False
    carry = b""
    for chunk_part, chunk in chunks:
        if chunk_part is not part:
            if carry:
                yield part, compact_json_lines(carry), True
            part, spaced, carry = chunk_part, False, b""
            if _spaced_at(chunk, 0):
                spaced = True
        if not spaced:
            first = chunk.find(b"\n")
            if first < 0 or not _spaced_chunk(chunk, first):
                yield chunk_part, chunk, False
                continue
            spaced = True
            yield chunk_part, chunk[:first + 1], False  # the end of a line begun before
            chunk = chunk[first + 1:]
        data = carry + chunk if carry else chunk
        last = data.rfind(b"\n")
        if last < 0:
            if len(data) > max_size:  # one line past --max-size: handed on, not held
                yield chunk_part, data, True
                carry = b""
            else:
                carry = data
            continue
        carry = data[last + 1:]
        yield chunk_part, compact_json_lines(data[:last + 1]), True
    if carry:
        yield part, compact_json_lines(carry), True


def count_newlines(buffer: bytes, begin: int, end: int) -> int:
    """`buffer.count(b"\\n", begin, end)`, three times faster on an event log's long lines:
    `find` hops from newline to newline with the C library's vectorised search where `count`
    looks at each byte in turn. Past HOPS lines in the span (short lines: a Python step each
    would cost more), `count` does the rest."""
    found = 0
    find = buffer.find
    at = find(b"\n", begin, end)
    while at >= 0:
        found += 1
        if found == HOPS:
            return found + buffer.count(b"\n", at + 1, end)
        at = find(b"\n", at + 1, end)
    return found


def resolved(raw: RawExecution) -> RawExecution:
    """`raw`, its events held as `Span`s read from their files (each file opened once) in
    their place. What is read back must be what was scanned: the same file (its device and
    inode; a file renamed since, as Spark renames an `.inprogress` log at its application's
    end, is followed by its inode), neither cut nor rewritten in place (its size, and its
    modification time unless it only grew, as a running application's log does), and at
    each span the same event (its first bytes: its name and execution or stage id). Else an
    InspectError naming the file (`files.changed`): never one file's events taken for
    another's."""
    spans = [item for item in (raw.start, raw.update) if isinstance(item, Span)]
    completed = raw.runtime.completed
    spans.extend(text for _, text in completed if isinstance(text, Span))
    if not spans:
        return raw
    import os

    texts: Dict[Span, bytes] = {}
    pread = getattr(os, "pread", None)  # one system call a span where there is one
    for path in {span.path for span in spans}:
        mine = [span for span in spans if span.path == path]
        with _reopened(path, mine[0].identity) as handle:
            for span in mine:
                if pread is not None:
                    text = pread(handle.fileno(), span.length, span.offset)
                else:  # pragma: no cover - Windows
                    handle.seek(span.offset)
                    text = handle.read(span.length) or b""
                if len(text) != span.length or not text.startswith(span.head):
                    raise files.changed(path, f"the event at byte {span.offset:,} is no "
                                              "longer the one read there")
                texts[span] = text
    if isinstance(raw.start, Span):
        raw.start = texts[raw.start]
    if isinstance(raw.update, Span):
        raw.update = texts[raw.update]
    raw.runtime.completed = [(line, texts[text] if isinstance(text, Span) else text)
                             for line, text in completed]
    return raw


def _reopened(path: str, opened: Optional[Tuple[int, int, int, int]]) -> IO[bytes]:
    """The file scanned at `path` (whose identity was `opened`) opened again, checked to be
    the same file, unchanged but for bytes added at its end; followed by its inode when
    renamed (the name without `.inprogress`, else any name in its folder); an InspectError
    naming it when it is gone (a rolling part deleted by compaction) or changed."""
    from ..opening import open_file

    try:
        handle = open_file(path, buffering=0)
    except FileNotFoundError:
        handle = _renamed(path, opened)
    except OSError as error:
        raise InspectError(f"cannot read it again: {error.strerror or error}",
                           source=path) from None
    if opened is None:
        return handle
    try:
        now = files.identity(handle)
    except OSError as error:
        handle.close()
        raise InspectError(f"cannot read it again: {error.strerror or error}",
                           source=path) from None
    why = ""
    if now[:2] != opened[:2]:
        why = "its path now names another file: it was replaced"
    elif now[2] < opened[2]:
        why = f"cut from {opened[2]:,} to {now[2]:,} bytes"
    elif now[2] == opened[2] and now[3] != opened[3]:
        why = "rewritten in place: the same size, modified since"
    if why:
        handle.close()
        raise files.changed(path, why)
    return handle


def _renamed(path: str, opened: Optional[Tuple[int, int, int, int]]) -> IO[bytes]:
    """The file once at `path`, opened under the name it was renamed to: the same device and
    inode, looked for first without `.inprogress` (Spark's rename at an application's end),
    then in `path`'s folder; an InspectError naming `path` when it is nowhere."""
    import os

    from ..opening import open_file

    if opened is not None:
        folder = os.path.dirname(path) or "."
        candidates = [path[:-len(".inprogress")]] if path.endswith(".inprogress") else []
        try:
            with os.scandir(folder) as entries:
                candidates.extend(entry.path for entry in entries
                                  if entry.inode() == opened[1])
        except OSError:
            pass
        for candidate in candidates:
            try:
                handle = open_file(candidate, path, buffering=0)
            except (OSError, InspectError):
                continue
            if files.identity(handle)[:2] == opened[:2]:
                return handle
            handle.close()
    raise InspectError("went away while it was read (renamed where it cannot be followed, "
                       "or deleted, as compaction deletes a rolling log's parts): its events "
                       "cannot be read back; read the log again", source=path)


def _length(text: Union[bytes, Span, None]) -> int:
    return 0 if text is None else text.length if isinstance(text, Span) else len(text)


def _part_name(part: Any) -> str:
    return str(getattr(part, "name", None) or part)


def _event_name(data: bytes, at: int) -> str:
    """The short name of the event whose `"Event":"` key is at data[at] (`SparkListenerTaskEnd`,
    `SparkListenerSQLExecutionStart`)."""
    start = at + len(EVENT_KEY)
    stop = data.find(b'"', start, start + 160)
    name = data[start:stop if stop >= 0 else start + 160].decode("utf-8", "replace")
    return name.rsplit(".", 1)[-1]


class _HeldLine:
    """The bytes of the line being read, held: in memory up to SPILL bytes, past that in an
    unnamed temporary file (the system removes it however the process ends), so that a line
    that turns out longer than --max-size never took memory; given back whole (`take`) when it
    ends within --max-size. When no temporary file can be written (no room), the line stays
    in memory: --max-size still bounds it."""

    def __init__(self) -> None:
        self._parts: List[bytes] = []
        self._in_memory = 0
        self._file: Optional[IO[bytes]] = None
        self._no_file = False

    def add(self, piece: bytes) -> None:
        if self._file is not None:
            try:
                self._file.write(piece)
                return
            except OSError:  # no room: the rest is held in memory
                self._parts = [self._read_back()]
                self._in_memory = len(self._parts[0])
                self._no_file = True
        self._parts.append(piece)
        self._in_memory += len(piece)
        if self._in_memory > SPILL and not self._no_file:
            self._spill()

    def take(self) -> bytes:
        """Every byte added since the last `clear` (or `take`), and clear."""
        if self._file is not None:
            data = self._read_back()
        else:
            data = b"".join(self._parts) if len(self._parts) != 1 else self._parts[0]
        self.clear()
        return data

    def clear(self) -> None:
        self._parts = []
        self._in_memory = 0
        self._no_file = False
        if self._file is not None:
            self._file.close()
            self._file = None

    def _spill(self) -> None:
        import tempfile

        try:
            spill = tempfile.TemporaryFile()
        except OSError:
            self._no_file = True
            return
        try:
            for part in self._parts:
                spill.write(part)
        except OSError:
            spill.close()
            self._no_file = True
            return
        self._file = spill
        self._parts = []
        self._in_memory = 0

    def _read_back(self) -> bytes:
        spill, self._file = self._file, None
        try:
            spill.seek(0)
            return spill.read()
        finally:
            spill.close()


class Scanner:
    """Finds the kept events of one event log, chunk by chunk; `executions()` yields each SQL
    execution as it ends. Notes (malformed events, a cut last line, an event longer than
    `max_size`, executions let go before their end) go to `notes`.

    What it holds is bounded by `max_size` (--max-size): a line that continues past a chunk is
    held only when it is an event kept (told by its first bytes, `{"Event":"<name>"`, which
    Spark writes first) and only up to `max_size` bytes; past that, the event is skipped with a
    note naming its file and line, and the rest of the line passes without being held. The
    executions open at once are at most MAX_OPEN and their held events at most `max_size`
    bytes together: past either, the one open longest is handed on as unfinished (`let_go`)."""

    def __init__(self, log: Any, notes: List[str], chunk_size: int = 8 << 20,
                 keep_replans: bool = False, task_metrics: bool = False,
                 max_size: int = DEFAULT_MAX_SIZE, spans: bool = False):
        self.log = log
        #: Keep the start, update and stage events of a plain file as `Span`s (where they
        #: stand) rather than their bytes: the pool's workers read them back themselves,
        #: instead of the bytes being pickled, sent and unpickled (`resolved`).
        self.spans = spans
        #: The file offset of the chunk whose lines are read, when its events may be kept as
        #: spans; the offset of the event being read (`_lines`), else None.
        self._base: Optional[int] = None
        self._text_at: Optional[int] = None
        #: Keep every update's plan text (the HTML page's timeline); off, only the last is.
        self.keep_replans = keep_replans
        #: Read each task's SQL metric updates (`Node.spreads` over tasks); off, the task
        #: events are not even looked at.
        self.task_metrics = task_metrics
        self.notes = notes
        self.chunk_size = chunk_size
        self.max_size = max_size
        self.app = AppState()
        self._open: Dict[int, RawExecution] = {}
        self._app_events = list(APP_EVENTS)
        self._markers = (SQL_EVENT, STAGE_EVENT, TASK_END) if task_metrics \
            else (SQL_EVENT, STAGE_EVENT)
        #: The open executions' stages: stage id -> execution id (from StageSubmitted).
        self._stage_owner: Dict[int, int] = {}
        self.events = 0  # SQL events found
        self._held = 0  # bytes the open executions hold (`RawExecution.held` summed)
        #: The executions handed on before their end, and why (reason -> how many).
        self._let_go: Set[int] = set()
        self._let_go_why: Dict[str, int] = {}
        self._late = 0  # their events that came after (skipped)
        # The line begun in an earlier chunk: its bytes (while held), its size so far, its
        # first HEAD bytes, its event's name once told ("" when its first bytes name none),
        # why it is not held (None, OTHER: not an event kept, LONG: past max_size), its last
        # bytes.
        self._held_line = _HeldLine()
        #: Each plain file's identity when it was opened (`files.read_chunks`), kept with its
        #: spans: a file changed before they are read back is an error (`resolved`).
        self._identities: Dict[str, Tuple[int, int, int, int]] = {}
        self._size = 0
        self._head = b""
        self._kind: Optional[str] = None
        self._drop: Optional[str] = None
        self._last = b""

    def executions(self) -> Iterator[RawExecution]:
        part = None
        line = 1  # the number of the next line to be handled
        offset = 0  # of the chunk in its part's file
        spannable = False
        tail = b""  # the last TAIL bytes of the last part read: where its end event stands
        chunks = files.read_chunks(self.log, self.notes, self.chunk_size,
                                   max_size=self.max_size, identities=self._identities)
        for chunk_part, chunk, compacted in _compacted(chunks, self.max_size):
            if chunk_part is not part:
                if part is not None:
                    yield from self._tail(part, line)
                tail = b""
                part, line, offset = chunk_part, 1, 0
                # A plain file's chunks are its bytes in order: an event's place is known
                # (not so once its blanks are taken out: `_compacted`).
                spannable = self.spans and chunk_part.codec == "plain" and \
                    chunk_part.stream is None
            if compacted:
                spannable = False
                self._new_line()
            tail = chunk[-TAIL:] if len(chunk) >= TAIL else (tail + chunk)[-TAIL:]
            base, offset = offset, offset + len(chunk)
            first = chunk.find(b"\n")
            if first < 0:
                self._grow(chunk, part, line)
                continue
            begin = 0
            if self._size:  # the line begun in earlier chunks ends here
                line = yield from self._end_line(chunk, first, part, line)
                begin = first + 1
            last = chunk.rfind(b"\n")
            if last >= begin:
                self._base = base if spannable else None
                line = yield from self._lines(chunk, begin, last, part, line)
                self._base = None
            self._new_line()
            if last + 1 < len(chunk):
                self._grow(chunk[last + 1:], part, line)
        if part is not None:
            yield from self._tail(part, line)
        self.app.ended = APP_END in tail
        for raw in self._open.values():  # still running when the log ends
            yield raw
        self._open.clear()
        self._held = 0
        if self._let_go_why:
            self.notes.append(self._let_go_note())

    # -- a line longer than a chunk ----------------------------------------------------------

    def _new_line(self) -> None:
        self._held_line.clear()
        self._size = 0
        self._head = b""
        self._kind = self._drop = None
        self._last = b""

    def _grow(self, piece: bytes, part: Any, line: int) -> None:
        """More of the line begun (`piece` holds no newline): held while it may be an event
        kept and is no longer than max_size; else let pass (a note when it was kept)."""
        self._size += len(piece)
        if piece:
            self._last = piece[-64:]
        if self._drop is not None:
            return
        if self._kind is None:
            if len(self._head) < HEAD:
                self._head += piece[:HEAD - len(self._head)]
            if len(self._head) >= HEAD or self._size > self.max_size:
                self._kind = self._head_kind()
                if self._kind is None:  # not an event this reader keeps: it is not held
                    self._held_line.clear()
                    self._drop = OTHER
                    return
        if self._size > self.max_size:  # refused before it is held
            self._held_line.clear()
            self._drop = LONG
            self._too_long(self._kind or "", part, line)
            return
        self._held_line.add(piece)

    def _head_kind(self) -> Optional[str]:
        """The event the held line's first bytes name, when it is kept; "" when they name no
        event (read as any line would be); None for an event not kept."""
        head = self._head
        at = head.find(EVENT_KEY)
        if at < 0 or len(head) < at + len(SQL_EVENT) + 40:  # no name, or not whole here
            return ""
        if not any(head.startswith(marker, at) for marker in (*self._markers,
                                                                *self._app_events)):
            return None
        return _event_name(head, at)

    def _end_line(self, chunk: bytes, first: int, part: Any, line: int
                  ) -> Generator[RawExecution, None, int]:
        """The line begun in earlier chunks ends at chunk[first] (a newline): read it when
        it was held; returns the number of the line after it."""
        if self._drop is None:
            self._grow(chunk[:first], part, line)
        if self._drop is not None:
            return line + 1
        self._held_line.add(b"\n")
        joined = self._held_line.take()
        return (yield from self._lines(joined, 0, len(joined) - 1, part, line))

    def _too_long(self, kind: str, part: Any, line: int) -> None:
        what = f"a {kind} event" if kind else "a line"
        self.notes.append(f"{_part_name(part)}:{line}: "
                          f"{over_max_size(what, self.max_size, skipped=True)}")

    # -- lines within a chunk -----------------------------------------------------------------

    def _lines(self, buffer: bytes, begin: int, end: int, part: Any, line: int
               ) -> Generator[RawExecution, None, int]:
        """Handle the kept events among the whole lines of buffer[begin:end + 1] (`end` is a
        newline); returns the number of the line after them.

        The lines are walked from newline to newline and each is told by its head,
        `{"Event":"<name>"`, which Spark writes first on every event's line: an event log's
        lines are mostly long (task, stage and SQL events of kilobytes), and this reads a
        gigabyte in a third of the time that searching for each marker over every byte and
        counting the newlines takes. The walk is the kernel `_eventlines` (`memchr` and a
        comparison of each line's head in C; its twin `_eventlines_py.py`): only the lines of
        kept events come back to Python. A line that does not begin that way is searched for
        the markers anywhere in it, as `_marker_lines` does. Where the lines turn out short
        (under WALK_LINE_BYTES on average over the first WALK_SAMPLE lines: a log of small
        events, or lines that are not events), the rest is searched marker by marker
        instead."""
        markers = (*self._markers, *self._app_events)
        entries, walked, rest = _event_lines(buffer, begin, end, markers, WALK_SAMPLE,
                                             WALK_LINE_BYTES)
        first = line
        max_size = self.max_size
        for number, at, stop, kind in entries:
            line = first + number
            if kind < 0:
                yield from self._marker_lines(buffer, at, stop, part, line)
                continue
            if stop - at > max_size:  # only when max_size is below the chunk
                self._too_long(_event_name(buffer, at + 1), part, line)
                continue
            if kind == 1:  # a stage's event: read where it stands, its bytes not copied
                self._stage(buffer, at, stop - 1 if buffer[stop - 1] == 13 else stop, at + 1,
                            part, line, None if self._base is None else self._base + at)
                if len(self._open) > MAX_OPEN or self._held > max_size:
                    yield from list(self._let_go_oldest())
                continue
            if kind == 0 and self._base is not None and (
                    buffer.startswith(_START_HEAD, at) or (
                        not self.keep_replans and buffer.startswith(_UPDATE_HEAD, at))):
                # A start or update of a file read in place: kept as a span, not copied.
                ended = self._sql_in_place(buffer, at, stop - 1 if buffer[stop - 1] == 13
                                           else stop, part, line)
                if ended:
                    yield from ended
                continue
            text = buffer[at:stop]
            if text.endswith(b"\r"):
                text = text[:-1]
            self._text_at = None if self._base is None else self._base + at
            ended = self._event(text, markers[kind], 1, part, line)
            self._text_at = None
            if ended:
                yield from ended
        line = first + walked
        if rest >= 0:
            return (yield from self._marker_lines(buffer, rest, end, part, line))
        return line

    def _marker_lines(self, buffer: bytes, begin: int, end: int, part: Any, line: int
                      ) -> Generator[RawExecution, None, int]:
        """`_lines` by searching each marker over every byte: the kept events among the whole
        lines of buffer[begin:end + 1] (`end` is a newline), wherever a marker stands in
        its line; returns the number of the line after them. Newlines are counted once."""
        hits: List[Tuple[int, bytes]] = []
        for marker in (*self._markers, *self._app_events):
            at = buffer.find(marker, begin, end)
            while at >= 0:
                hits.append((at, marker))
                at = buffer.find(marker, at + len(marker), end)
        if len(hits) > 1:
            hits.sort()
        counted = begin
        for at, marker in hits:
            start = buffer.rfind(b"\n", begin, at) + 1 or begin
            stop = buffer.find(b"\n", at, end + 1)
            line += count_newlines(buffer, counted, start)
            counted = start
            if stop - start > self.max_size:  # only when max_size is below the chunk size
                self._too_long(_event_name(buffer, at), part, line)
                continue
            text = buffer[start:stop]
            if text.endswith(b"\r"):
                text = text[:-1]
            self._text_at = None if self._base is None else self._base + start
            ended = self._event(text, marker, at - start, part, line)
            self._text_at = None
            if ended:
                yield from ended
        return line + count_newlines(buffer, counted, end + 1)

    def _tail(self, part: Any, line: int) -> Iterator[RawExecution]:
        """The part's last line when it has no newline: a whole event, or one cut short."""
        drop, size = self._drop, self._size
        text = (self._last if drop is not None else self._held_line.take()).strip()
        self._new_line()
        if not text or drop == LONG:  # nothing, or said already
            return
        if not text.endswith(b"}"):
            self.notes.append(f"{_part_name(part)}:{line}: the last line is cut short "
                              f"({size if drop is not None else len(text):,} bytes with no "
                              f"end); it was skipped")
            return
        if drop is not None:  # a whole event, not one kept
            return
        for marker in (*self._markers, *self._app_events):
            at = text.find(marker)
            if at >= 0:
                yield from self._event(text, marker, at, part, line)
                return

    # -- events -------------------------------------------------------------------------------

    def _event(self, text: bytes, marker: bytes, at: int, part: Any, line: int
               ) -> List[RawExecution]:
        """The executions this event hands on (most events hand on none): a list, not a
        generator, since the scanner reads some hundred thousand events a gigabyte."""
        closed = self._read_event(text, marker, at, part, line)
        ended = [closed] if closed is not None else []
        if len(self._open) > MAX_OPEN or self._held > self.max_size:
            ended.extend(self._let_go_oldest())
        return ended

    def _sql_in_place(self, buffer: bytes, at: int, stop: int, part: Any, line: int
                      ) -> List[RawExecution]:
        """`_event` of the SQLExecutionStart or SQLAdaptiveExecutionUpdate at buffer[at:stop]
        (its line, without its newline or a `\r` before it) of a file read in place, without
        copying its bytes: only its head is read (its execution id, where Spark writes it
        second) and kept, with where it stands (`Span`). An event whose head holds no id is
        read the general way."""
        match = EXECUTION_ID.search(buffer, at, min(at + ID_WINDOW, stop))
        if match is None or int(match.group(1)) > deepjson.MAX_ID:
            self._text_at = self._base + at  # type: ignore[operator]
            try:
                return self._event(buffer[at:stop], SQL_EVENT, 1, part, line)
            finally:
                self._text_at = None
        self.events += 1
        number = int(match.group(1))
        raw = self._open.get(number)
        size = stop - at
        span = Span(part.path, self._base + at, size,  # type: ignore[operator]
                    self._identities.get(part.path),
                    buffer[at:at + SPAN_HEAD if size > SPAN_HEAD else stop])
        ended = []
        if buffer.startswith(_START_HEAD, at):
            if raw is not None:  # the same id started again: the earlier one never ended
                ended.append(self._close(number))
            self._let_go.discard(number)
            raw = self._open[number] = RawExecution(number, _part_name(part), start=span,
                                                    start_line=line)
            self._hold(raw, size)
        else:
            if raw is None:
                if number in self._let_go:
                    self._late += 1
                    return []
                raw = self._open[number] = RawExecution(number, _part_name(part))
            grown = size - _length(raw.update)
            raw.update, raw.update_line = span, line
            raw.updates += 1
            self._hold(raw, grown)
        if len(self._open) > MAX_OPEN or self._held > self.max_size:
            ended.extend(self._let_go_oldest())
        return ended

    def _read_event(self, text: bytes, marker: bytes, at: int, part: Any, line: int
                    ) -> Optional[RawExecution]:
        """Take in one kept event; the execution it ends, if any (its end, or its id started
        again)."""
        if marker is STAGE_EVENT or marker is TASK_END:
            self._stage_event(text, marker, at, part, line)
            return None
        if marker is not SQL_EVENT:
            self._app_event(text, marker, part, line)
            return None
        closed = None
        kind = text[at + len(SQL_EVENT):at + len(SQL_EVENT) + 32]
        self.events += 1
        if kind.startswith(START) or kind.startswith(UPDATE):
            number = self._execution_id(text, part, line)
            if number is None:
                return None
            raw = self._open.get(number)
            if kind.startswith(START):
                if raw is not None:  # the same id started again: the earlier one never ended
                    closed = self._close(number)
                self._let_go.discard(number)
                raw = self._open[number] = RawExecution(number, _part_name(part),
                                                        start=self._kept(text, part),
                                                        start_line=line)
                self._hold(raw, len(text))
            else:
                if raw is None:
                    if number in self._let_go:
                        self._late += 1
                        return None
                    raw = self._open[number] = RawExecution(number, _part_name(part))
                grown = len(text) - _length(raw.update)
                raw.update, raw.update_line = self._kept(text, part), line
                raw.updates += 1
                if self.keep_replans and len(raw.replans) < MAX_REPLANS_KEPT:
                    event = self._decode(text, part, line)
                    plan = event.get("physicalPlanDescription") if event is not None else None
                    raw.replans.append((line, plan if isinstance(plan, str) else ""))
                    grown += len(raw.replans[-1][1])
                self._hold(raw, grown)
        elif kind.startswith(ACCUMS) or kind.startswith(END):
            event = self._decode(text, part, line)
            if event is None:
                return None
            value = event.get("executionId")
            number = deepjson.json_id(value)
            if number is None:
                if value is not None:  # no id at all is left unsaid, as it always was
                    self._skip(part, line, _id_why(value))
                return None
            raw = self._open.get(number)
            if raw is None:
                if number in self._let_go:
                    self._late += 1
                return None
            if kind.startswith(END):
                raw.end_time = event.get("time")
                raw.finished = True
                return self._close(number)
            else:
                values = raw.runtime.driver_values
                count = 0
                updates = event.get("accumUpdates")
                for item in updates if isinstance(updates, list) else ():
                    if isinstance(item, list) and len(item) == 2 and \
                            isinstance(item[0], int) and isinstance(item[1], int):
                        raw.accumulators[item[0]] = raw.accumulators.get(item[0], 0) + item[1]
                        values.setdefault(item[0], []).append(item[1])
                        count += 1
                self._hold(raw, count * HELD_PER_VALUE)
        return closed

    def _kept(self, text: bytes, part: Any) -> Union[bytes, Span]:
        """What an execution keeps of an event: where it stands in a plain file (with
        `spans`), else its bytes. Either way its length counts against --max-size."""
        if self._text_at is None:
            return text
        return Span(part.path, self._text_at, len(text), self._identities.get(part.path),
                    text[:SPAN_HEAD])

    def _hold(self, raw: RawExecution, size: int) -> None:
        raw.held += size
        self._held += size

    def _close(self, number: int) -> RawExecution:
        raw = self._open.pop(number)
        self._held -= raw.held
        for stage in raw.runtime.task_counts:
            if self._stage_owner.get(stage) == number:
                del self._stage_owner[stage]
        return raw

    def _let_go_oldest(self) -> Iterator[RawExecution]:
        """Hand on the executions open longest, as unfinished, until at most MAX_OPEN are open
        and they hold at most max_size bytes; their later events are skipped."""
        while self._open and (len(self._open) > MAX_OPEN or self._held > self.max_size):
            why = (f"more than {MAX_OPEN:,} executions were open at once"
                   if len(self._open) > MAX_OPEN else
                   f"the events held for the executions not yet ended passed --max-size "
                   f"({self.max_size:,} bytes)")
            number = next(iter(self._open))
            raw = self._close(number)
            raw.let_go = why
            self._let_go.add(number)
            self._let_go_why[why] = self._let_go_why.get(why, 0) + 1
            yield raw

    def _let_go_note(self) -> str:
        count = sum(self._let_go_why.values())
        why = "; ".join(f"{number:,} when {reason}" if len(self._let_go_why) > 1 else reason
                        for reason, number in self._let_go_why.items())
        late = (f"; {self._late:,} later events of theirs were skipped" if self._late
                else "")
        return (f"{_part_name(self.log)}: {count:,} execution{'s were' if count > 1 else ' was'}"
                f" reported as unfinished before {'their' if count > 1 else 'its'} end, "
                f"with the plan logged by then ({why}){late}")

    def _stage_event(self, text: bytes, marker: bytes, at: int, part: Any, line: int) -> None:
        """A stage's submission (whose execution it is), its completion (kept raw, for its
        metric totals) or, with task metrics, a task's end (its metric updates)."""
        if marker is STAGE_EVENT:
            self._stage(text, 0, len(text), at, part, line, self._text_at)
            return
        stage, attempt = stage_head(text)
        number = self._stage_owner.get(stage) if stage is not None else None
        raw = self._open.get(number) if number is not None else None
        if raw is None:
            return
        try:
            result = task_result(text)
        except (ValueError, KeyError, UnicodeDecodeError):
            self._skip(part, line, "a task's end event that could not be read")
            return
        if result is not None:
            raw.runtime.stage(stage).add(attempt, *result)
            self._hold(raw, HELD_PER_TASK + HELD_PER_VALUE * len(result[1]))

    def _stage(self, buffer: bytes, begin: int, stop: int, at: int, part: Any, line: int,
               file_at: Optional[int]) -> None:
        """A stage's submission or completion: the event at buffer[begin:stop] (its line,
        without its newline or a `\r` before it), its marker at buffer[at], read where it
        stands. A completion is kept as a `Span` where it stands in its file (`file_at`), else
        as its bytes."""
        kind = at + len(STAGE_EVENT)
        if buffer.startswith(SUBMITTED, kind):
            found = submitted_stage(buffer, begin, stop)
            if found is not None and found[1] in self._open:
                stage, number, tasks = found
                self._stage_owner[stage] = number
                self._open[number].runtime.submitted(stage, tasks)
                self._hold(self._open[number], HELD_PER_VALUE)
            return
        if not buffer.startswith(COMPLETED, kind):
            return  # SparkListenerStageExecutorMetrics
        stage, _ = stage_head(buffer, begin, stop)
        number = self._stage_owner.get(stage) if stage is not None else None
        raw = self._open.get(number) if number is not None else None
        if raw is None:
            return
        size = stop - begin
        if file_at is not None:
            kept: Union[bytes, Span] = Span(
                part.path, file_at, size, self._identities.get(part.path),
                buffer[begin:begin + SPAN_HEAD if size > SPAN_HEAD else stop])
        else:
            kept = buffer if begin == 0 and stop == len(buffer) else buffer[begin:stop]
        raw.runtime.completed.append((line, kept))
        self._hold(raw, size)

    def _execution_id(self, text: bytes, part: Any, line: int) -> Optional[int]:
        match = EXECUTION_ID.search(text, 0, ID_WINDOW)
        if match and int(match.group(1)) <= deepjson.MAX_ID:
            return int(match.group(1))
        event = self._decode(text, part, line)
        if event is None:
            return None
        value = event.get("executionId")
        number = deepjson.json_id(value)
        if number is None:
            self._skip(part, line, _id_why(value))
        return number

    def _decode(self, text: bytes, part: Any, line: int) -> Optional[Dict[str, Any]]:
        try:
            event = deepjson.loads(text)
        except ValueError as error:
            self._skip(part, line, json_problem(error))
            return None
        if not isinstance(event, dict):
            self._skip(part, line, "a JSON value that is not an event object")
            return None
        return event

    def _skip(self, part: Any, line: int, why: str) -> None:
        self.notes.append(f"{_part_name(part)}:{line}: {why}; the event was skipped")

    def _app_event(self, text: bytes, marker: bytes, part: Any, line: int) -> None:
        if marker not in self._app_events:  # a second copy in the same chunk: the first holds
            return
        event = self._decode(text, part, line)
        if event is None:
            return
        self._app_events.remove(marker)  # each is written once, at the start
        self.app.events += 1
        if marker is LOG_START or marker is DATABRICKS_START:
            for other in (LOG_START, DATABRICKS_START):  # one of the two says the version
                if other in self._app_events:
                    self._app_events.remove(other)
            self.app.spark_version = deepjson.text(event.get("Spark Version") or "")
        elif marker is APP_START:
            self.app.started = True
            self.app.app_id = deepjson.text(event.get("App ID") or "")
            self.app.name = deepjson.text(event.get("App Name") or "")
        else:
            properties = event.get("Spark Properties") or {}
            if isinstance(properties, list):  # Spark 1.x wrote [key, value] pairs
                properties = {pair[0]: pair[1] for pair in properties
                              if isinstance(pair, list) and len(pair) == 2
                              and isinstance(pair[0], str)}
            self.app.configs = aqe_configs(properties if isinstance(properties, dict) else {})


def _id_why(value: Any) -> str:
    """Why an SQL event is skipped for its executionId `value` (`deepjson.json_id` refused
    it): none, or what is wrong with it."""
    if value is None:
        return "an SQL event without an executionId"
    return f"an SQL event whose {deepjson.id_problem('executionId', value)}"


# ---- one execution into a Query -------------------------------------------------------------

def build_query(raw: RawExecution, source: str, app_configs: Mapping[str, str],
                spark_version: str = "") -> Tuple[Optional[Query], List[str]]:
    """The execution's Query (None when its events cannot be read) and notes about it. Events
    `raw` holds as spans are read in its place first (`resolved`). `spark_version`, the
    application's, is for `build_then`'s `then` (a Query names its application later)."""
    notes: List[str] = []
    spans = [span for span in (raw.start, raw.update) if isinstance(span, Span)]
    raw = resolved(raw)
    update = _load(raw.update, raw.part, raw.update_line, notes)
    # With an update to read the plan from, only a few of the start event's fields are used:
    # those are decoded (`_start_fields`), its plans are not.
    start = _start_fields(raw.start) if update is not None else None
    whole_start = start is None
    if whole_start:
        start = _load(raw.start, raw.part, raw.start_line, notes)
    for event in (start, update):  # read back from a file: the execution's own events
        number = event.get("executionId") if spans and event is not None else None
        if isinstance(number, int) and number != raw.execution_id:
            raise files.changed(spans[0].path, f"an event of execution {raw.execution_id} "
                                               f"read back is one of execution {number}")
    if start is None and update is None:
        return None, notes
    start = start or {}
    label = f"execution {raw.execution_id}"
    configs = dict(app_configs)
    modified = start.get("modifiedConfigs")  # Spark 3.4+: the session's own settings
    if isinstance(modified, dict):
        configs.update(aqe_configs(modified))
    description = start.get("description")
    description = connect_description(start, description)  # a Connect server's protobuf dump
    execution = Execution(
        execution_id=raw.execution_id,
        description=deepjson.text(description) if description is not None else "",
        replans=raw.updates, start_time=_int(start.get("time")), end_time=_int(raw.end_time),
        finished=raw.finished, status="COMPLETED" if raw.finished else "RUNNING",
        configs=configs, configs_complete=isinstance(modified, dict),
        part="" if raw.part == source else raw.part)
    if raw.replans:
        execution = dataclasses.replace(execution, updates=tuple(
            (update_line, read_description(update_text, source, "", "")[0])
            for update_line, update_text in raw.replans))
    event, line = (update, raw.update_line) if update is not None else (start, raw.start_line)
    text = event.get("physicalPlanDescription")
    query_notes: List[str] = []
    if raw.let_go:
        query_notes.append(f"{label} was reported before its end, as unfinished, when "
                           f"{raw.let_go}: its plan is the latest one logged by then, and its "
                           "later events were not read")
    elif not raw.finished:
        query_notes.append(f"{label} has no end in this log (still running, or the log was "
                           "cut); its plan is the latest one logged")
    if raw.start is None:
        query_notes.append(f"{label}: its start event is not in this log")
    if raw.replans and raw.updates > len(raw.replans):
        query_notes.append(f"{label}: the timeline shows the first {len(raw.replans)} of its "
                           f"{raw.updates} AQE updates")
    query, note = read_description(text, source, f"{raw.part}:{line}: the plan description "
                                   f"of {label}", "sparkPlanInfo")
    if note:
        query_notes.append(note)
    info = event.get("sparkPlanInfo")
    evidence = Evidence(raw.accumulators, raw.runtime, notes, raw.part)
    root = None
    if query is not None:
        # A tree read from text takes only the figures of sparkPlanInfo, when the log has any.
        root = query.root
        if isinstance(info, dict) and evidence:
            root = attach_metrics(root, info_carriers(info, raw.accumulators, evidence))
    elif isinstance(info, dict):
        info_tree = build_tree(info, raw.accumulators, line, evidence)
        if update is not None and not whole_start:  # its plan is wanted after all
            start = _load(raw.start, raw.part, raw.start_line, []) or {}
        initial = start.get("sparkPlanInfo") if update is not None else None
        initial_tree = build_tree(initial, {}, raw.start_line) \
            if isinstance(initial, dict) else None
        query = Query(root=adaptive_tree(initial_tree, info_tree), mode="simple")
        root = query.root
    else:
        notes.append(f"{raw.part}:{line}: {label} has neither a plan description nor "
                     "sparkPlanInfo; it was skipped")
        return None, notes
    query = dataclasses.replace(
        query, root=root, source=source, line=line, label=execution.description or label,
        origin=ORIGIN, execution=execution, notes=(*query_notes, *query.notes))
    return query, notes


def build_queries(scanner: Scanner, workers: Optional[int] = None, pool_min: int = 64,
                  then: Optional[Callable[[Query, str, str, str], Any]] = None
                  ) -> Iterator[Tuple[Any, List[str]]]:
    """`build_query` of each execution the scanner finds, in order; with `then`, what
    `then(query, name, source, spark_version)` makes of it (a diff, its JSON...), made where
    the query is built: `then` must be a module-level function, sent by name to the pool's processes.
    The first `pool_min` are built here;
    past that, in a pool of `workers` processes (default: the CPUs, at most 2 - the scan
    itself keeps this one busy), a bounded number at a time. `workers=1` never pools."""
    import os

    source = scanner.log.name
    executions = scanner.executions()
    work = build_query if then is None else functools.partial(build_then, then)
    if workers is None:
        workers = POOL_WORKERS or min(2, os.cpu_count() or 1)
    if pool_min > POOL_MIN_LARGE and _log_size(scanner.log) >= POOL_BYTES:
        pool_min = POOL_MIN_LARGE  # a long log: the pool from the start (see POOL_BYTES)
    for count, raw in enumerate(executions, 1):
        yield work(raw, source, scanner.app.configs, scanner.app.spark_version)
        if count >= pool_min and workers > 1:
            break
    else:
        return
    yield from _pooled(executions, source, scanner, workers, work)


def _log_size(log: Any) -> int:
    """The bytes of the log's files, as found (0 where unknown: standard input)."""
    return sum(getattr(part, "size", 0) or 0 for part in getattr(log, "parts", ()))


def build_then(then: Callable[[Query, str, str, str], Any], raw: RawExecution, source: str,
               app_configs: Mapping[str, str], spark_version: str = ""
               ) -> Tuple[Any, List[str]]:
    """`build_query`, then `then(query, name, source, spark_version)` of it: the query named
    by its execution id, as the Spark UI names it; the application's Spark version (what a
    diff's settings default to, before the query names its application)."""
    query, notes = build_query(raw, source, app_configs)
    if query is None:
        return None, notes
    return then(query, str(raw.execution_id), source, spark_version), notes


def _pooled(executions: Iterator[RawExecution], source: str, scanner: Scanner, workers: int,
            work) -> Iterator[Tuple[Any, List[str]]]:
    """Each execution built in a pool of `workers` processes, in order, handed over in
    batches (`BATCH_BYTES`, `BATCH_MOST`). At most `workers * BATCHES_PER_WORKER` batches are
    in flight, holding at most --max-size of events together (at least one batch). The pool
    is shut down in order when the log is read (or damaged: what was read before still
    counts); when anything else ends the walk (an interruption, an error, a consumer that
    stops), its workers are ended at once, not waited for (`stop_workers`)."""
    from collections import deque
    from concurrent.futures import BrokenExecutor

    window = workers * BATCHES_PER_WORKER
    pool = _start_pool(workers)
    done = False
    try:
        pending: deque = deque()  # (future, its batch, the events it holds)
        held = 0
        batch: List[Tuple[RawExecution, Dict[str, str], str]] = []
        batch_held = 0
        configs: Optional[Dict[str, str]] = None
        damage: Optional[InspectError] = None
        try:
            for raw in executions:
                if configs is None or configs != scanner.app.configs:
                    configs = dict(scanner.app.configs)  # one copy for the batch's pickle
                batch.append((raw, configs, scanner.app.spark_version))
                batch_held += raw.held
                if len(batch) < BATCH_MOST and batch_held < BATCH_BYTES:
                    continue
                pending.append((_submit(pool, build_batch, work, batch, source), batch,
                                batch_held))
                held += batch_held
                batch, batch_held = [], 0
                while pending and (len(pending) >= window or held > scanner.max_size):
                    future, done_batch, done_held = pending.popleft()
                    held -= done_held
                    yield from _results(future, done_batch, source, work)
        except InspectError as error:  # damaged here: what was read before it still counts
            damage = error
        if batch:
            pending.append((_submit(pool, build_batch, work, batch, source), batch, 0))
        while pending:
            yield from _results(*pending.popleft()[:2], source, work)
        done = True
        if damage is not None:
            raise damage
    except BrokenExecutor:
        raise InspectError("a process reading the executions ended unexpectedly (killed, or "
                           "out of memory); the rest of the log was not read",
                           source=source) from None
    finally:
        if done:
            pool.shutdown(wait=True)
        else:
            _end_pool(pool)


def build_batch(work, batch: List[Tuple[RawExecution, Dict[str, str], str]], source: str
                ) -> List[Tuple[Any, List[str]]]:
    """`work` of each execution of a batch, in a pool's process: what comes back is one
    list, so a batch costs one future, one pickle each way and one wake-up of the parent.
    The worker's cyclic garbage collector is off (`_worker_started`); what the batch left
    behind in reference cycles is collected here, once a batch."""
    import gc

    results = [work(raw, source, configs, version) for raw, configs, version in batch]
    gc.collect(1)
    return results


def _results(future: Any, batch: List[Tuple[RawExecution, Dict[str, str], str]], source: str,
             work) -> List[Tuple[Any, List[str]]]:
    """A pooled batch's results; when one is too deep for pickle to send back (a plan some
    300 operators deep: pickle recurses), the batch is built again here."""
    try:
        return future.result()
    except RecursionError:
        return [work(raw, source, configs, version) for raw, configs, version in batch]


# ---- the pool's processes and signals ----------------------------------------------------------
#
# Ctrl-C reaches every process of the terminal's process group, the pool's workers too; SIGTERM
# and SIGHUP reach whoever they are sent to. The workers leave every signal to the parent: they
# ignore SIGINT and SIGHUP, die silently on SIGTERM (its default action), and die with the
# parent (PR_SET_PDEATHSIG, on Linux) should it be killed outright. The parent, told by the CLI
# (`stop_workers`) or leaving `_pooled` any way but the end of the log, kills them and does not
# wait for the pool's queues: an interruption ends the run in well under a second, with no
# traceback from any process and no worker left behind. Signals are held (blocked) while a
# worker is forked, so that none starts with the parent's handlers.

#: The pools whose workers may be running (weakly held: a pool shut down and dropped goes).
_POOLS: "weakref.WeakSet" = weakref.WeakSet()
#: The signals the workers leave to the parent: those that end a run.
_PARENT_SIGNALS = ENDING_SIGNALS


def _start_pool(workers: int):
    """A process pool whose workers leave signals to this process (`_worker_started`)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork where it is safe (Linux, and BSDs): the workers start at once, before the pool's
    # threads do, with this process's blocked signals (not so under spawn or forkserver).
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork") if "fork" in methods and \
        sys.platform != "darwin" else None
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context,
                               initializer=_worker_started)
    _POOLS.add(pool)
    return pool


def _submit(pool, *args):
    """`pool.submit(*args)` with the parent's signals held: a worker forked now starts with
    them blocked (it sets its own dispositions before it takes them), and so do the pool's
    threads started now (they never run a signal's work). A signal that came meanwhile is
    raised here, once the submission is done."""
    held = _hold_signals()
    try:
        return pool.submit(*args)
    finally:
        _release_signals(held)


def _worker_started() -> None:
    """A worker's first act: Ctrl-C and SIGHUP are ignored (the parent ends the run and this
    process with it), SIGTERM ends it silently, the parent's death ends it; then the signals
    held since it was forked are let through."""
    for name, action in (("SIGINT", signal.SIG_IGN), ("SIGHUP", signal.SIG_IGN),
                         ("SIGTERM", signal.SIG_DFL), ("SIGPIPE", signal.SIG_DFL)):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), action)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the parent
        except (OSError, AttributeError):  # no libc to ask: the parent ends it still
            pass
    # The objects inherited from the parent (modules, caches) are never garbage: frozen, the
    # collector never walks them (nor copies their pages, touching their headers). It runs
    # once a batch (`build_batch`), not every few hundred allocations: the build makes many
    # small objects and almost no cycles, and each automatic pass cost some 5% of the work.
    import gc

    gc.freeze()
    gc.disable()
    if _PARENT_SIGNALS and hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _PARENT_SIGNALS)


def _end_pool(pool) -> None:
    """Kill the pool's workers, reap them, and leave its threads without waiting on them."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        try:
            process.kill()
        except (OSError, ValueError, AttributeError):  # gone already, or closed
            pass
    try:
        pool.shutdown(wait=False, cancel_futures=True)
    except Exception:  # noqa: BLE001 - a pool already broken or shut down
        pass
    for process in processes:
        try:
            process.join(5)
        except (OSError, ValueError, AssertionError):
            pass
    _POOLS.discard(pool)


def stop_workers() -> bool:
    """End every pool's workers now (the CLI calls it when a signal ends the run); whether
    there were any (then the pool's threads may be left waiting: the process should leave
    with os._exit once its own cleaning is done)."""
    pools = list(_POOLS)
    for pool in pools:
        _end_pool(pool)
    return bool(pools)


#: The start event's fields `build_query` reads when an update holds the plan (a Connect
#: execution's description reads more: `connect_description`); a msgspec Struct type made
#: on first use (False without msgspec).
_START_FIELDS = ("executionId", "description", "time", "modifiedConfigs")
_START_DECODE: Any = None


def _start_decoder() -> Any:
    global _START_DECODE
    if _START_DECODE is None:
        try:
            import msgspec
        except ImportError:  # pragma: no cover - a dependency, but the reader works without
            _START_DECODE = False
        else:
            fields = type("StartFields", (msgspec.Struct,), {
                "__annotations__": {name: Any for name in _START_FIELDS},
                **{name: None for name in _START_FIELDS}})
            _START_DECODE = msgspec.json.Decoder(fields).decode
    return _START_DECODE


def _start_fields(text: Optional[bytes]) -> Optional[Dict[str, Any]]:
    """The start event's `_START_FIELDS` (None for those it lacks), decoded without its
    plans: what `_load` gives of them, at a fifth of the cost. None where that is not
    certain, to be decoded whole: an event msgspec refuses (malformed, an array, too deep),
    one with bytes past ASCII (msgspec passes over invalid UTF-8 in the fields it skips,
    which `_load` finds malformed), a Connect execution's description (it reads more)."""
    if text is None or text.__class__ is not bytes or not text.isascii():
        return None
    decode = _START_DECODE if _START_DECODE is not None else _start_decoder()
    if not decode:
        return None
    try:
        found = decode(text)
    except Exception:  # noqa: BLE001 - DecodeError, ValidationError, RecursionError
        return None
    description = found.description
    if isinstance(description, str) and description.startswith(CONNECT_PREFIX):
        return None
    return {"executionId": found.executionId, "description": description,
            "time": found.time, "modifiedConfigs": found.modifiedConfigs}


def _load(text: Optional[bytes], part: str, line: int, notes: List[str]
          ) -> Optional[Dict[str, Any]]:
    if text is None:
        return None
    try:
        event = deepjson.loads(text)
    except ValueError as error:
        notes.append(f"{part}:{line}: {json_problem(error)}; the event was skipped")
        return None
    return event if isinstance(event, dict) else None


def json_problem(error: ValueError) -> str:
    """What is wrong with an event's JSON, for a note: `malformed JSON (Expecting value)`,
    `JSON nested deeper than 10,000 levels`."""
    if isinstance(error, deepjson.TooDeep):
        return f"JSON {error.msg}"
    return f"malformed JSON ({str(error).split(':')[0]})"


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_log(log: Any) -> None:
    """Refuse what is not there before any work: one line naming it."""
    if not getattr(log, "parts", None):
        raise InspectError("expected an event log, found no event files",
                           source=_part_name(log))
