"""What `diff` finds, as frozen dataclasses: the library's answer and the CLI's input."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Tuple, Union

from .model import Application, Node, Query

def rewrite_kinds() -> Tuple[str, ...]:
    """The rewrite kinds, in the order reports list them (a stable contract), read from
    `detectors.DETECTORS`, the only list of kinds (lazily: the detectors import this module).
    Also importable as `REWRITE_KINDS`."""
    kinds = globals().get("REWRITE_KINDS")
    if kinds is None:
        from .detectors import DETECTORS

        kinds = globals()["REWRITE_KINDS"] = tuple(detector.kind for detector in DETECTORS)
    return kinds


def kind_hint(kind: str) -> str:
    """What to say of a kind that is not one: `did you mean 'skew-join'? the kinds are ...`."""
    import difflib

    kinds = rewrite_kinds()
    close = difflib.get_close_matches(kind, kinds, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{hint}the kinds are {', '.join(kinds)}"


def __getattr__(name: str):
    if name == "REWRITE_KINDS":
        return rewrite_kinds()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def describe(node: Optional[Node]) -> Optional[str]:
    """How a finding names an operator: `AQEShuffleRead (16)`, or with its line in simple mode."""
    if node is None:
        return None
    if node.id is not None:
        return node.label
    return f"{node.name} (line {node.line})" if node.line else node.name


@dataclass(frozen=True)
class Rewrite:
    """One thing AQE changed, where, and the text that proves it."""

    kind: str
    final_node: Optional[Node]
    initial_node: Optional[Node]
    message: str
    evidence: Tuple[str, ...] = ()
    #: Figures the plan text holds: partition counts, runtime statistics, build side.
    numbers: Mapping[str, object] = field(default_factory=dict)


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


def read_whole(report: Union[Report, "ReportStream"]) -> Report:
    """The report with every query read: a stream's walked now (its notes are whole after)."""
    if isinstance(report, Report):
        return report
    queries = tuple(report.queries)
    return Report(queries, report.source, tuple(report.notes), report.application)


class ReportStream:
    """A report whose queries are diffed as they are read (an event log's executions): the
    writers take it as they take a `Report`. `queries` is walked once; `notes` fills as the
    input is read and is whole once `queries` is exhausted (the writers print notes last);
    `application` is asked for once the first query came."""

    def __init__(self, queries: Iterator[QueryReport], source: str, notes: List[str],
                 application: Callable[[], Optional[Application]]):
        self.queries = queries
        self.source = source
        self.notes = notes
        self._application = application

    @property
    def application(self) -> Optional[Application]:
        return self._application()
