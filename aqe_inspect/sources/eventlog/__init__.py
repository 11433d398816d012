"""Spark event logs and History Server JSON: every SQL execution's plans.

    files.py     a path -> each application's log and its parts (file, rolling, Databricks)
    codecs.py    a part -> its decompressed bytes in chunks (zstd, lz4, snappy, lzf, gzip, plain)
    events.py    chunks -> SQL executions (raw events), streamed; one execution -> Query
    planinfo.py  sparkPlanInfo -> Node trees; run-time SQL metrics onto parsed trees
    history.py   the History Server's (or live UI's) `/sql` JSON -> Queries; `--url`

Each execution is one `Query` whose `execution` holds its id, description, re-plans, times
and the AQE configs in force; the `Document` holds the application (id, name, version).
"""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

from ...model import Document, Query
from .codecs import DEFAULT_CHUNK_SIZE, read_chunks
from .files import EventLog, Part, find_event_logs, looks_like_event_log

__all__ = ["DEFAULT_CHUNK_SIZE", "EventLog", "Part", "find_event_logs", "is_event_log",
           "iter_event_log", "looks_like_event_log", "read_chunks", "read_event_logs"]

#: Below this many executions, parsing in a second process costs more than it saves.
POOL_MIN_EXECUTIONS = 64


def is_event_log(path: str) -> bool:
    from . import files

    return files.looks_like_event_log(path)


def read_event_logs(path: str, workers: Optional[int] = None) -> List[Document]:
    """One Document per application found at `path` (a file or a directory)."""
    from . import files

    logs = files.find_event_logs(path)
    documents = []
    for log in logs:
        from .events import Scanner, build_queries

        notes: List[str] = []
        queries = []
        scanner = Scanner(log, notes)
        for query, query_notes in build_queries(scanner, workers, POOL_MIN_EXECUTIONS):
            notes.extend(query_notes)
            if query is not None:
                queries.append(query)
        app = scanner.app.application()
        queries.sort(key=lambda q: q.execution.execution_id if q.execution else -1)
        if not queries:
            notes.append(f"{log.name}: no SQL execution in this event log")
        documents.append(Document(queries=tuple(queries), source=log.name, notes=tuple(notes),
                                  application=app))
    return documents


def iter_event_log(log, notes: List[str], workers: Optional[int] = None
                   ) -> Iterator[Tuple[Optional[Query], object]]:
    """(query, application) for each SQL execution of one log, in the order they end; notes
    about the log are appended to `notes` as they are found."""
    from .events import Scanner, build_queries

    scanner = Scanner(log, notes)
    for query, query_notes in build_queries(scanner, workers, POOL_MIN_EXECUTIONS):
        notes.extend(query_notes)
        yield query, scanner.app.application()
