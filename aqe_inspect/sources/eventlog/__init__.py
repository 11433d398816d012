"""Spark event logs and History Server JSON: every SQL execution's plans.

    files.py     a path -> each application's log and its parts (file, rolling, Databricks)
    codecs.py    a part -> its decompressed bytes in chunks (zstd, lz4, snappy, lzf, gzip, plain)
    events.py    chunks -> SQL executions (raw events), streamed; one execution -> Query
    _eventlines_c.pyx, _eventlines_py.py  a buffer's lines -> those of the kept events (kernel)
    runtime.py   stage and task events -> SQL metric totals and spreads (Node.spreads)
    planinfo.py  sparkPlanInfo -> Node trees; run-time SQL metrics onto parsed trees
    connect_labels.py  a Spark Connect server's executions labelled by tags, not protobuf
    history.py   the History Server's (or live UI's) `/sql` JSON -> Queries; `--url`

Each execution is one `Query` whose `execution` holds its id, description, re-plans, times
and the AQE configs in force; the `Document` holds the application (id, name, version).
Exchanges, query stages and shuffle reads carry their SQL metrics (`Node.metrics`) and, where
the source says, how they spread (`Node.spreads`); per-task spreads of an event log cost a
read of every task's end event, so they come only with `task_metrics=True`.

May import: `parsing`, `plan`, `errors`, `signals` (and the rest of `sources`).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, List, Optional

from ...errors import InspectError
from ...plan.model import LOG_NOT_ENDED, Application, Document, Query
from ..opening import Swapped
from ..reading import DEFAULT_MAX_SIZE
from .codecs import DEFAULT_CHUNK_SIZE
from .files import EventLog, Part, find_event_logs, looks_like_event_log, read_chunks, \
    search_event_logs

__all__ = ["DEFAULT_CHUNK_SIZE", "EventLog", "Part", "find_event_logs",
           "LogStream", "looks_like_event_log", "read_chunks", "read_event_logs",
           "search_event_logs", "stream_event_logs"]

#: Below this many executions, parsing in a second process costs more than it saves.
POOL_MIN_EXECUTIONS = 64


def read_event_logs(path: str, workers: Optional[int] = None, task_metrics: bool = False,
                    max_size: int = DEFAULT_MAX_SIZE) -> List[Document]:
    """One Document per application found at `path` (a file or a directory), its executions in
    the order of their ids (with `task_metrics`, the spreads of task metrics too); an event
    longer than `max_size` bytes is skipped with a note (`LogStream`). In a folder,
    the first Document's notes say what was passed over and which logs could not be read (a
    log damaged part way keeps the executions read before, with a note); an InspectError when
    no log can be read."""
    found = search_event_logs(path)
    if not found.logs:
        raise found.nothing_read()
    several = len(found.logs) > 1
    documents = []
    errors: List[InspectError] = []  # of the logs of which nothing could be read
    for log in found.logs:
        stream = LogStream(log.name, [log], workers, task_metrics=task_metrics,
                           keep_going=several, max_size=max_size)
        queries = sorted(stream.queries, key=lambda q: q.execution.execution_id
                         if q.execution is not None else -1)
        if stream.failed and not queries:
            errors.append(stream.failed[0])
        notes = (*found.notes(), *stream.notes) if not documents else tuple(stream.notes)
        documents.append(Document(queries=tuple(queries), source=log.name,
                                  notes=notes, application=stream.application,
                                  ended=stream.ended, unended=tuple(stream.unended)))
    if len(errors) == len(documents):
        raise errors[0]
    return documents


def stream_event_logs(path: str, workers: Optional[int] = None, task_metrics: bool = False,
                      max_size: int = DEFAULT_MAX_SIZE) -> "LogStream":
    """The SQL executions of every application at `path`, read as they are asked for; the
    stream's notes start with what a folder's search passed over and could not read."""
    found = search_event_logs(path)
    if not found.logs:
        raise found.nothing_read()
    stream = LogStream(path, found.logs, workers, task_metrics=task_metrics, max_size=max_size)
    stream.notes.extend(found.notes())
    stream.unended.extend(unread(error, 0) for error in found.failed)
    return stream


def unread(error: InspectError, read: int) -> str:
    """Why a folder's counts are lower bounds when one of its logs could not be read (to its
    end, after `read` executions): the executions it holds are not all counted
    (`Document.unended`; the log's note says the same)."""
    if read:
        return (f"{error}: the rest of this log could not be read, so the executions it holds "
                "after that are not counted")
    return f"{error}: this log could not be read, so the executions it holds are not counted"


class LogStream:
    """The SQL executions of one or more applications' logs, read lazily: `queries` yields
    each as it ends (walk it once); `notes` fills as the logs are read and is whole once
    `queries` is exhausted; `application` is the one application's (None for several), known
    once the first query came, since Spark writes the application's events first. Memory is
    that of the executions in flight, not of the log. With `task_metrics` (or
    `read_task_metrics()` before the walk), every task's SQL metric updates are read too: the
    per-task `Node.spreads` of exchanges (`local bytes read`, `bytes read per task`, ...).

    Of several logs, one that cannot be read (damaged part way) is a note and the others are
    read; its error is in `failed`, and the stream raises the first only when every log failed
    before giving a query. With `keep_going`, a single log's error is such a note too and is
    never raised (the caller decides).

    `max_size` (--max-size) bounds what is held at once: an event longer than it is skipped
    with a note naming its file and line, a block a codec decodes whole is refused past it,
    and the events held for executions not yet ended stay under it (events.py, MAX_OPEN)."""

    def __init__(self, source: str, logs, workers: Optional[int] = None,
                 task_metrics: bool = False, keep_going: bool = False,
                 max_size: int = DEFAULT_MAX_SIZE):
        self.source = source
        self.notes: List[str] = []
        self.failed: List[InspectError] = []
        self._keep_going = keep_going
        self._logs = list(logs)
        self._workers = workers
        self._scanner = None
        self._then = None
        self._keep_replans = False
        self._task_metrics = task_metrics
        self._max_size = max_size
        #: The logs read whose application has no end in them (`not_ended_note`).
        self.not_ended: List[str] = []
        #: Why the logs read may lack executions of their application (`Document.unended`):
        #: no application end, a rolling log's part missing or compacted; each naming its
        #: log where the stream reads several.
        self.unended: List[str] = []
        #: Whether a log has been read to its end (`ended` is known then).
        self._read_whole = False
        self.selected = False
        self.queries: Iterator[Query] = self._read()

    def built_into(self, then: Callable[[Query, str, str, str], Any]) -> Iterator[Any]:
        """What `then(query, name, source, spark_version)` makes of each execution instead of its Query (its
        diff, that diff as JSON...), made where the query is built (in the pool's processes
        for a long log, so `then` is a module-level function). Walk either this or `queries`,
        once; not after `select`, whose choice is made on queries."""
        if self.selected:
            raise ValueError("the queries of this stream are selected: diff them one by one")
        self._then = then
        return self.queries

    def keep_replans(self) -> None:
        """Keep every AQE update of each execution and say what changed at each
        (`Execution.timeline`): costs a parse per update, so only the HTML page asks.
        Call before the queries are walked."""
        self._keep_replans = True

    def read_task_metrics(self) -> None:
        """Read each task's SQL metric updates (per-task `Node.spreads`): a decode of every
        task's end event, so only a why-not asks. Call before the queries are walked."""
        self._task_metrics = True

    def select(self, keep: Callable[[Iterator[Query]], Iterator[Query]]) -> None:
        """Only the queries `keep` passes on (a generator over the queries)."""
        self.queries = keep(self.queries)
        self.selected = True

    @property
    def application(self) -> Optional[Application]:
        if len(self._logs) != 1 or self._scanner is None:
            return None
        return self._scanner.app.application()

    @property
    def ended(self) -> Optional[bool]:
        """Whether every log read holds its application's end (SparkListenerApplicationEnd):
        False once one does not (cut short, still being written, its driver killed: the
        executions after its end could not be read), which a folder of logs says here and a
        single log in `application.ended` too; None before a log was read to its end."""
        if self.not_ended or self.unended:
            return False
        return True if self._read_whole else None

    @property
    def current_application(self) -> Optional[Application]:
        """The application of the log being read: the one the query last yielded ran in."""
        return self._scanner.app.application() if self._scanner is not None else None

    def _read(self) -> Iterator[Query]:
        from .events import Scanner, build_queries

        keep_going = self._keep_going or len(self._logs) > 1
        several = len(self._logs) > 1
        read = 0
        for log in self._logs:
            for missing in log.missing:  # said first: the log may fail part way
                self.notes.append(missing)
                self.unended.append(missing)
            self._scanner = Scanner(log, self.notes, keep_replans=self._keep_replans,
                                    task_metrics=self._task_metrics, max_size=self._max_size,
                                    spans=True)
            found = 0
            first_note = len(self.notes)
            try:
                for query, query_notes in build_queries(self._scanner, self._workers,
                                                        POOL_MIN_EXECUTIONS, self._then):
                    self.notes.extend(query_notes)
                    if query is not None:
                        found += 1
                        yield query
            except InspectError as error:
                if not keep_going or isinstance(error, Swapped):
                    raise  # (a file swapped under the reader stops the run: never a note)
                self.failed.append(error.located(log.name))
                self.notes.append(f"{error}; the rest of this log was not read")
                self.unended.append(unread(error, found))
                continue
            finally:
                read += found
            app = self._scanner.app
            self._read_whole = True
            if app.started and app.ended is False:
                self.not_ended.append(log.name)
                self.notes.append(not_ended_note(log.name, app.application()))
                self.unended.append(f"{log.name}: {LOG_NOT_ENDED}" if several
                                    else LOG_NOT_ENDED)
            if found:
                continue
            empty = nothing_read(log.name, self._scanner.app, self.notes[first_note:])
            if empty is None:  # an application that ran no SQL: said, not an error
                self.notes.append(f"{log.name}: no SQL execution in this event log")
                continue
            if not keep_going:
                raise empty
            self.failed.append(empty)
            self.notes.append(f"{empty}; it was skipped")
            self.unended.append(unread(empty, 0))
        if self.failed and not self._keep_going and len(self.failed) == len(self._logs) \
                and not read:
            raise self.failed[0]  # nothing at all could be read

    def document(self) -> Document:
        """Everything at once, as a Document (for `parse`)."""
        queries = tuple(self.queries)
        return Document(queries=queries, source=self.source, notes=tuple(self.notes),
                        application=self.application, ended=self.ended,
                        unended=tuple(self.unended))


def not_ended_note(name: str, application: Application) -> str:
    """The note on a log `name` whose application has no end in it."""
    which = " ".join(part for part in (application.app_id, f"({application.name})"
                                       if application.name else "") if part)
    return (f"{name}: the application {which + ' ' if which else ''}has no end in this log (no "
            "SparkListenerApplicationEnd): the log is cut short, still being written, or its "
            "driver was killed; executions run after the log's end could not be read")


def nothing_read(source: str, app: Any, notes: List[str]) -> Optional[InspectError]:
    """The error of a log that gave no SQL execution and no application (`app`, the scanner's
    `AppState`): nothing in it can be judged (a file cut before its application's start event,
    a compressed stream cut in its first block, a log of other events). None when its
    application started: it ran no SQL, which is no error. The log's first notes (where it is
    cut, what was skipped) say why."""
    if app.started:
        return None
    if app.events:
        what = ("its events end before the application's start event "
                "(SparkListenerApplicationStart)")
    else:
        what = "no event of a Spark application in it"
    said = [_unprefixed(note, source) for note in notes[:2]]
    why = f" ({'; '.join(said)})" if said else ""
    return InspectError(f"no Spark application or SQL execution could be read: {what}{why}",
                        source=source)


def _unprefixed(note: str, source: str) -> str:
    """A note of the log, without the log's name it starts with (the error names it)."""
    if not note.startswith(source + ":"):
        return note
    rest = note[len(source) + 1:]
    number, colon, said = rest.partition(":")
    if colon and number.isdigit():
        return f"line {number}:{said}"
    return rest.lstrip()
