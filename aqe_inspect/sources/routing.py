"""Any input a user names, to what reads it, told by content rather than by name: a Spark
event log (file, rolling directory, or standard input; any codec) is read as a stream of its
SQL executions; saved History Server JSON as a Document; anything else as text (explain output,
logs, pasted plans)."""

from __future__ import annotations

import os
import stat
import sys
from typing import TYPE_CHECKING, Optional, Union

from ..errors import InspectError
from ..plan.model import Document
from .reading import DEFAULT_MAX_SIZE, STDIN

if TYPE_CHECKING:  # pragma: no cover
    from .eventlog import LogStream


def read_input(path: str, max_size: int = DEFAULT_MAX_SIZE, task_metrics: bool = False
               ) -> Union[Document, "LogStream"]:
    """What `path` (or `-`) holds: a `LogStream` for an event log (reading each task's
    metrics too with `task_metrics`: `LogStream.read_task_metrics`), else a `Document`."""
    from . import read_document

    if path == STDIN:
        if sys.stdin is None:  # started with standard input closed (`<&-`)
            raise InspectError("cannot read: standard input is closed", source="<stdin>")
        if sys.stdin.closed:
            return read_document(path, max_size, plan_changes=True)  # (says so)
        from .reading import stdin_peeked

        return _read_once(stdin_peeked(), "<stdin>", path, max_size, task_metrics)
    if _is_pipe(path):
        # A pipe (`<(zcat log)`, a named pipe) is read once, as standard input is: its first
        # bytes, peeked at to tell what it holds, are read again by its reader.
        from .opening import open_file
        from .reading import Peeked

        try:
            handle = open_file(path)  # (refused, not waited on, by the MCP server: a swap)
        except OSError as error:
            raise InspectError(f"cannot read: {error.strerror or error}", source=path) from None
        return _read_once(Peeked(handle, owned=True), path, path, max_size, task_metrics)
    found = _read_events(path, task_metrics, max_size)
    if found is not None:
        return found
    return read_document(path, max_size, plan_changes=True)


def _is_pipe(path: str) -> bool:
    """Whether `path` names an input that can be read only once: neither a file nor a
    folder (a pipe, a character device)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False  # the text reader says what is wrong
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _read_once(peeked, name: str, path: str, max_size: int, task_metrics: bool
               ) -> Union[Document, "LogStream"]:
    """What an input read once holds (standard input, a pipe; `name` as reports call it),
    told by its first bytes (`peeked`), as a file's are: an event log, History Server JSON,
    or text."""
    log = _event_log_of(peeked, name)
    if log is not None:
        from .eventlog import LogStream

        return LogStream(name, [log], task_metrics=task_metrics, max_size=max_size)
    history = _history_of(peeked, name, max_size)
    if history is not None:
        return history
    from . import read_document

    return read_document(path, max_size, plan_changes=True,
                         stream=None if path == STDIN else peeked.stream())


def read_url(url: str, max_size: int = DEFAULT_MAX_SIZE) -> Document:
    """The SQL executions of a History Server (or live Spark UI) application; an answer
    longer than `max_size` bytes is refused (by its Content-Length before it is read)."""
    from .eventlog.history import fetch, read_history

    data, target, app_id = fetch(url, limit=max_size)
    return read_history(data, target, app_id)


def _event_log_of(peeked, name: str):
    """An input read once as an event log, when its first bytes say it is one: a compressed
    stream (told by its magic; an error when it cannot be read as an event log), or
    `{"Event":` text."""
    from .eventlog.files import event_stream_codec, stream_event_log

    try:
        codec = event_stream_codec(peeked.peek, name)
    except OSError as error:
        raise InspectError(f"cannot read: {error.strerror or error}", source=name) from None
    return None if codec is None else stream_event_log(name, codec, peeked.stream())


def _history_of(peeked, name: str, max_size: int) -> Optional[Document]:
    """An input read once as a History Server `/sql` answer, when its first bytes say it is
    one (as a file's are told): read whole, bounded by `max_size`, as `_history_bytes` reads
    a file."""
    from .magic import SNIFF_SIZE
    from .reading import read_bounded
    from .eventlog.history import looks_like_history_json, read_history

    try:
        if not looks_like_history_json(peeked.peek(SNIFF_SIZE)):
            return None
        data = read_bounded(peeked.stream(), max_size, name, "the History Server answer")
    except OSError as error:
        raise InspectError(f"cannot read: {error.strerror or error}", source=name) from None
    return read_history(data, name)


def _read_events(path: str, task_metrics: bool = False, max_size: int = DEFAULT_MAX_SIZE):
    """An event log (file or directory; a stream of its executions) or saved History Server
    JSON (a Document), told by content; None for anything else (the text reader takes it).
    A compressed file is an event log by its magic bytes, never text: what it holds if not
    events is said by the event-log reader. `max_size` bounds each event of a log, and a
    History Server answer whole (one JSON document: refused, not skipped)."""
    from .magic import SNIFF_SIZE, may_be_json_or_compressed
    from .opening import file_head

    if os.path.isdir(path):  # says so when it holds none
        from .eventlog import stream_event_logs

        return stream_event_logs(path, task_metrics=task_metrics, max_size=max_size)
    try:
        head = file_head(path, SNIFF_SIZE)
    except OSError:
        return None  # the text reader says what is wrong, as for any file
    if not may_be_json_or_compressed(head, path):  # a plan text or a log: no reader imported
        return None
    from .eventlog import stream_event_logs
    from .eventlog.files import may_be_event_log
    from .eventlog.history import looks_like_history_json, read_history

    if looks_like_history_json(head):
        return read_history(_history_bytes(path, max_size), path)
    if head and may_be_event_log(head, path):  # the bytes already read tell
        return stream_event_logs(path, task_metrics=task_metrics, max_size=max_size)
    return None


def _history_bytes(path: str, max_size: int) -> bytes:
    """A saved History Server answer whole (it is one JSON document), refused before it is read
    when the file is longer than `max_size`, and never held past it if it grows meanwhile."""
    from .opening import open_file
    from .reading import check_declared, read_bounded

    what = "the History Server answer"
    try:
        with open_file(path) as handle:
            check_declared(os.fstat(handle.fileno()).st_size, max_size, path, what)
            return read_bounded(handle, max_size, path, what)
    except OSError as error:
        raise InspectError(f"cannot read: {error.strerror or error}", source=path) from None
