"""One event log -> its rows of the fleet table (`table.py`), with the library code `diff` uses.

Pure Python (no PySpark): the fleet job calls it in its executors, a plain loop can call it
too. Every SQL execution of the log is one row; the log is read as `diff` reads it (a
`LogStream`, one execution diffed at a time), in this process (no pool: in the fleet job the
executors are the parallelism).

What cannot be read never raises: a file that is not an event log (garbage, a History Server
JSON, an empty file), a log damaged before its first execution, a log without any SQL execution,
is ONE row whose `error` is the line `aqe-inspect diff` would print (after `aqe-inspect: error: `).
A log damaged part way gives the rows of the executions read before the damage, then one error
row. Notes about a log read whole (a cut `.inprogress` file, a malformed event skipped) are not
errors: its rows keep `error` empty, as `diff` exits 0 for it.

A file the fleet scan found in a folder (not one it was given) is first told to be an event log
or not as `diff` tells the files of a folder (`is_skipped_file`, `is_skipped_bytes`): notes,
CSV, driver logs, History Server JSON, empty files beside the logs are skipped and counted, not
rows; a compressed file that cannot be decoded is an error row (diff reports it too).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..rewrites.engine import diff_built
from ..errors import InspectError
from ..sources.eventlog import LogStream
from ..sources.eventlog.codecs import magic_codec
from ..sources.eventlog.files import (SNIFF_SIZE, EventLog, event_stream_codec, events_codec,
                                      file_head, first_text, log_from_bytes, may_be_event_log,
                                      search_event_logs)
from ..sources.eventlog.history import looks_like_history_json
from .table import error_row, row_from_report

Row = Dict[str, Any]

NO_EXECUTION = "no SQL execution in this event log"
HISTORY_JSON = ("History Server SQL JSON, not an event log: the fleet scan reads event logs "
                "(`aqe-inspect diff` reads this file)")
NOT_EVENTS = ("not a Spark event log: its text does not start with {\"Event\": (plain or "
              "compressed JSON lines)")


def rows_of_log(path: str, source: Optional[str] = None, task_metrics: bool = False
                ) -> List[Row]:
    """The rows of the event log at `path` (a file of any codec, a rolling `eventlog_v2_*` or
    Databricks folder; a folder of applications gives each its rows, named by its own log),
    `source` naming it in the rows (default: `path`); a log in the folder that cannot be read
    is one error row naming it. Never raises on what the log holds."""
    try:
        found = search_event_logs(path)
        if not found.logs:
            raise found.nothing_read()
        logs = found.logs
        if len(logs) == 1 and logs[0].layout == "file" and not found.failed:
            _refuse_non_events(file_head(logs[0].name), logs[0].name)
    except InspectError as error:
        return [error_row(source or path, str(error))]
    if len(logs) == 1 and not found.failed:
        return rows_of_event_log(logs[0], source or path, task_metrics)
    rows = [row for log in logs for row in rows_of_event_log(log, log.name, task_metrics)]
    return rows + [error_row(error.source, str(error)) for error in found.failed]


def rows_of_bytes(source: str, layout: str, parts: Sequence[Tuple[str, bytes]],
                  task_metrics: bool = False) -> List[Row]:
    """The rows of one application's log whose files' bytes are at hand, (name, bytes) in
    reading order (`files.folder_parts`): what the fleet job's executors get from Spark's
    binaryFile source. Never raises on what the bytes hold."""
    try:
        log = log_from_bytes(source, layout, parts)
        if layout == "file" and parts:
            name, data = parts[0]
            # A compressed stream damaged at its start, or not of events: as the file says it.
            event_stream_codec(lambda size: bytes(data[:size]), name)
            _refuse_non_events(bytes(data[:SNIFF_SIZE]), name)
    except InspectError as error:
        return [error_row(source, str(error))]
    return rows_of_event_log(log, source, task_metrics)


def rows_of_event_log(log: EventLog, source: str, task_metrics: bool = False) -> List[Row]:
    """The rows of one application's log: one per SQL execution, in the order they end, then
    an error row if the reading stopped; one error row if no execution was read."""
    stream = LogStream(source, [log], workers=1, task_metrics=task_metrics)
    rows: List[Row] = []
    try:
        for report in stream.built_into(diff_built):
            rows.append(row_from_report(report, source, stream.application))
    except InspectError as error:
        rows.append(error_row(source, str(error.located(source)), stream.application))
    except MemoryError:
        rows.append(error_row(source, f"{source}: not enough memory to read this log",
                              stream.application))
    except Exception as error:  # noqa: BLE001 - a bug in one log must not fail a fleet
        detail = " ".join(str(error).split())[:300]
        rows.append(error_row(source, f"{source}: internal error ({type(error).__name__}: "
                                      f"{detail}); please report it with this log",
                              stream.application))
    if not rows:
        rows.append(error_row(source, f"{source}: {NO_EXECUTION}", stream.application))
    return rows


def is_skipped_file(path: str) -> bool:
    """Whether the file at `path`, found in a folder, is passed over as `diff` passes over such
    a file of a folder: empty, or its text (decompressed) does not start with {"Event":. A
    file that cannot be read, or a compressed one that cannot be decoded, is not skipped: its
    row says why, as `diff` reports it."""
    try:
        return _skipped(lambda size: file_head(path, size), path)
    except OSError:
        return False


def is_skipped_bytes(data: bytes, name: str) -> bool:
    """`is_skipped_file` for a file whose bytes are `data`."""
    return _skipped(lambda size: bytes(data[:size]), name)


def _skipped(read_head: Callable[[int], bytes], name: str) -> bool:
    head = read_head(SNIFF_SIZE)
    if not head:
        return True
    codec = magic_codec(head, name)
    try:
        text = head if codec is None else first_text(read_head, codec, name)
    except InspectError:  # a compressed log that cannot be read
        return False
    # No text: a compressed log cut in its first block, read as a log.
    return bool(text) and not may_be_event_log(text, name)


def _refuse_non_events(head: bytes, name: str) -> None:
    """An InspectError for a file `diff` would read as something else than an event log (a
    History Server answer, or text): the fleet table holds event logs only."""
    if looks_like_history_json(head):
        raise InspectError(HISTORY_JSON, source=name)
    if events_codec(head, name) is None:
        raise InspectError(NOT_EVENTS, source=name)
