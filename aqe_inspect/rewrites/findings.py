"""What `diff` finds, as frozen dataclasses: the library's answer and the CLI's input."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Tuple, Union

from ..plan.model import (DRIVER_LOG_NOT_ENDED, LOG_NOT_ENDED, Application, Node, Query, title,
                          unit_name)
from .detectors.base import Rewrite, describe
from .kinds import REWRITE_KINDS, kind_hint, rewrite_kinds

__all__ = ["REWRITE_KINDS", "Observation", "QueryReport", "Report", "ReportStream", "Rewrite",
           "describe", "kind_hint", "rewrite_kinds"]


@dataclass(frozen=True)
class Observation:
    """Something worth knowing that is not a rewrite: dynamic pruning, reuse, query stages."""

    kind: str
    node: Optional[Node]
    message: str


@dataclass(frozen=True)
class QueryReport:
    id: str
    query: Query
    rewrites: Tuple[Rewrite, ...]
    info: Tuple[Observation, ...] = ()
    #: What could not be judged from this text, said rather than guessed.
    notes: Tuple[str, ...] = ()
    #: The main plan's initial tree when it was given apart (`diff BEFORE AFTER`); None when
    #: the query's own text holds it.
    initial: Optional[Node] = None

    @property
    def name(self) -> str:
        """`execution 3` (Spark's SQL execution id) or `query 2` (the position in the file):
        how every output names this query (see `plan.model.unit_name`)."""
        return unit_name(self.query, self.id)

    @property
    def title(self) -> str:
        """`name`, capitalised, saying a query's number is its position: `Execution 3`,
        `Query 2 (2nd in the file)`."""
        return title(self.query, self.id)

    @property
    def counts(self) -> Dict[str, int]:
        counts = {kind: 0 for kind in rewrite_kinds()}
        for rewrite in self.rewrites:
            counts[rewrite.kind] += 1
        return counts


@dataclass(frozen=True)
class Report:
    queries: Tuple[QueryReport, ...]
    source: str = ""
    #: What was skipped or put together while reading the input, each with its line.
    notes: Tuple[str, ...] = ()
    #: The application, when read from an event log or the History Server.
    application: Optional[Application] = None
    #: Whether a driver log holds the end of its last application (`Document.ended`).
    ended: Optional[bool] = None
    #: Why the input may lack queries of an application it holds (`Document.unended`).
    unended: Tuple[str, ...] = ()


def log_not_ended(read) -> bool:
    """Whether the input `read` came from (a Report, a ReportStream, a Document, an event
    log's stream) may lack queries of an application it holds (`Document.unended`): an event
    log with no application end, a driver log with an application that did not stop, a
    rolling log with a part missing or compacted, a History Server answer with an execution
    still running. Read whole first: a stream knows it at its end."""
    application = getattr(read, "application", None)
    return application is not None and application.ended is False or \
        getattr(read, "ended", None) is False or bool(getattr(read, "unended", ()))


def not_ended_why(read) -> Tuple[str, ...]:
    """Why `read` may lack queries (`log_not_ended`), each reason once, in order: what the
    reader said (`Document.unended`), else what an application with no end means in its kind
    of log (`LOG_NOT_ENDED`, `DRIVER_LOG_NOT_ENDED`); () when nothing is missing."""
    if not log_not_ended(read):
        return ()
    said = tuple(dict.fromkeys(getattr(read, "unended", ()) or ()))
    if said:
        return said
    application = getattr(read, "application", None)
    if application is None and getattr(read, "ended", None) is False:
        return (DRIVER_LOG_NOT_ENDED,)
    return (LOG_NOT_ENDED,)


def read_whole(report: Union[Report, "ReportStream"]) -> Report:
    """The report with every query read: a stream's walked now (its notes are whole after)."""
    if isinstance(report, Report):
        return report
    queries = tuple(report.queries)
    return Report(queries, report.source, tuple(report.notes), report.application,
                  getattr(report, "ended", None), tuple(getattr(report, "unended", ())))


class ReportStream:
    """A report whose queries are diffed as they are read (an event log's executions): the
    writers take it as they take a `Report`. `queries` is walked once; `notes` fills as the
    input is read and is whole once `queries` is exhausted (the writers print notes last);
    `application` is asked for once the first query came."""

    def __init__(self, queries: Iterator[QueryReport], source: str, notes: List[str],
                 application: Callable[[], Optional[Application]],
                 ended: Callable[[], Optional[bool]] = lambda: None,
                 unended: Callable[[], Tuple[str, ...]] = lambda: ()):
        self.queries = queries
        self.source = source
        self.notes = notes
        self._application = application
        self._ended = ended
        self._unended = unended

    @property
    def application(self) -> Optional[Application]:
        return self._application()

    @property
    def ended(self) -> Optional[bool]:
        """Whether every log read holds its application's end (`LogStream.ended`: a folder
        of logs, one of them cut, says False here); whole once `queries` is exhausted."""
        return self._ended()

    @property
    def unended(self) -> Tuple[str, ...]:
        """Why the logs may lack executions of an application they hold (`LogStream.unended`);
        whole once `queries` is exhausted."""
        return self._unended()
