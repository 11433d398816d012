"""Two runs of the same job compared: which queries lost an adaptive rewrite, which gained one.

    summary.py       one execution as a comparison keeps it (counts, figures, settings,
                     its shape, its joins' rewrites), and the why-not of a rewrite it did not
                     make
    replacement.py   what a stronger rewrite or an empty relation took over: replaced,
                     not lost
    matching.py      which execution of the new run is which of the old (description, shape)
    gate.py          `--fail-on`: which changes fail the comparison
    result.py        Pair, Comparison, FleetGroup; the JSON contract `aqe-inspect/compare/v1`
    fleet_tables.py  two `fleet` tables (CSV, Parquet) compared per application and description

`compare(old, new)` reads each side as `diff` does (an event log, a folder of them, a driver
log, plan texts, History Server JSON) or as a fleet table, and returns a `Comparison`. The old
side is read whole into summaries first; the new side is then streamed, and the why-not of a
rewrite is asked only where an old execution that could be its partner made it, so memory
follows the number of executions, not the size of the logs.

May import: `sources`, `parsing`, `plan`, `rewrites`, `whynot`, `expectations`, `errors`.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable, Iterator, List, Sequence, Tuple

from ..errors import InspectError
from ..rewrites.findings import QueryReport, rewrite_kinds
from .gate import Gate, Rule, parse_gate
from .matching import Partners, match
from .result import SCHEMA, Comparison, FleetGroup, KindRates, Pair, Side, to_json
from .summary import ExecutionSummary, cut_off_unfinished, summarize, why_not

DEFAULT_MAX_SIZE = 256 << 20

__all__ = ["Comparison", "ExecutionSummary", "FleetGroup", "Gate", "Pair", "Rule", "SCHEMA",
           "compare", "parse_gate", "to_json"]


def compare(old: str, new: str, fail_on: Iterable[str] = ("lost",),
            max_size: int = DEFAULT_MAX_SIZE, plans: bool = False,
            judge_unfinished: bool = False, allow_missing: bool = False) -> Comparison:
    """Compare the run at `old` with the run at `new` (paths, or `-` for standard input on
    one side). `fail_on`: the gate's rules (see `gate`). `plans`: keep each final plan's
    outline (the HTML page draws them side by side). `judge_unfinished`: judge a pair whose
    execution had not finished on either side on what it holds, rather than call it
    `unfinished` (no verdict, failing). `allow_missing`: leave an execution of the old run
    that the new run does not hold (it failed or stopped before it, or no longer runs it) out
    of the verdict, rather than call it unfinished. An InspectError for input that cannot be read, or a
    fleet table compared with anything but a fleet table."""
    from .fleet_tables import table_files

    gate = parse_gate(fail_on)
    if old == "-" and new == "-":
        raise InspectError("compare reads standard input on one side only")
    old_table, new_table = table_files(old) if old != "-" else None, \
        table_files(new) if new != "-" else None
    if (old_table is None) != (new_table is None):
        table, other = (old, new) if old_table is not None else (new, old)
        raise InspectError(f"{table} is a fleet table and {other} is not: compare two fleet "
                           "tables, or two runs' logs or plans", source=other)
    if old_table is not None:
        return _compare_tables(old, new, gate)
    return dataclasses.replace(_compare_runs(old, new, gate, max_size, plans),
                               judge_unfinished=judge_unfinished, allow_missing=allow_missing)


# ---- runs: event logs, plan texts, History Server JSON --------------------------------------

class _SideReader:
    """One side's executions, as summaries; notes and applications gathered as it goes."""

    def __init__(self, path: str, max_size: int):
        from ..sources.routing import read_input

        self.path = path
        self.read = read_input(path, max_size)
        self.versions: List[str] = []
        self._texts: dict = {}
        self._values: dict = {}

    def _stream(self):
        from ..sources.eventlog import LogStream

        return self.read if isinstance(self.read, LogStream) else None

    @property
    def source(self) -> str:
        return getattr(self.read, "source", self.path) or self.path

    @property
    def notes(self) -> Tuple[str, ...]:
        return tuple(self.read.notes)

    @property
    def not_ended(self) -> bool:
        """The side's log ends before its application does (read whole first): an event log
        with no application end, a driver log whose last application did not stop."""
        from ..rewrites.findings import log_not_ended

        stream = self._stream()
        return log_not_ended(stream if stream is not None else self.read)

    @property
    def not_ended_why(self) -> Tuple[str, ...]:
        """Why the side's input may lack executions (`not_ended`), as its reader said: no
        application end, a part of a rolling log missing or compacted, an execution still
        running in a History Server answer, an application that never stopped."""
        from ..rewrites.findings import not_ended_why

        stream = self._stream()
        return not_ended_why(stream if stream is not None else self.read)

    def _noted(self, summary: ExecutionSummary) -> ExecutionSummary:
        """The summary, its values shared with the summaries before that hold the same (the
        settings, counts, names of thousands of executions are mostly the same few)."""
        if summary.spark_version and summary.spark_version not in self.versions:
            self.versions.append(summary.spark_version)
        texts, values = self._texts, self._values
        return dataclasses.replace(
            summary,
            counts=values.setdefault(("counts", tuple(summary.counts.items())), summary.counts),
            configs=values.setdefault(("configs", summary.configs), summary.configs),
            joins=values.setdefault(("joins", summary.joins), summary.joins),
            join_sites=values.setdefault(("join_sites", summary.join_sites),
                                         summary.join_sites),
            rewrite_places=values.setdefault(("rewrite_places", summary.rewrite_places),
                                             summary.rewrite_places),
            emptied=values.setdefault(("emptied", summary.emptied), summary.emptied),
            source=texts.setdefault(summary.source, summary.source),
            description=texts.setdefault(summary.description, summary.description),
            shape=texts.setdefault(summary.shape, summary.shape),
            app_id=texts.setdefault(summary.app_id, summary.app_id),
            app_name=texts.setdefault(summary.app_name, summary.app_name),
            spark_version=texts.setdefault(summary.spark_version, summary.spark_version))

    def summaries(self, plans: bool) -> Iterator[ExecutionSummary]:
        """Each execution's summary, diffed where it is built (in the pool for a long log)."""
        from .summary import summarize_built, summarize_built_with_plan

        stream = self._stream()
        if stream is None:
            yield from (summary for _, summary in self.reports(plans))
            return
        for summary in stream.built_into(summarize_built_with_plan if plans
                                         else summarize_built):
            yield self._noted(_with_application(summary, stream.current_application))

    def reports(self, plans: bool) -> Iterator[Tuple[QueryReport, ExecutionSummary]]:
        """Each execution's report and summary (the new side: its why-not answers need the
        report)."""
        from ..rewrites.engine import diff_built, diff_document

        stream = self._stream()
        if stream is None:
            document = self.read
            for report in diff_document(document).queries:
                yield report, self._noted(summarize(report, self.source, document.application,
                                                    plan=plans))
            return
        for report in stream.built_into(diff_built):
            yield report, self._noted(summarize(report, self.source,
                                                stream.current_application, plan=plans))


def _with_application(summary: ExecutionSummary, application) -> ExecutionSummary:
    if application is None or summary.app_id:
        return summary
    return dataclasses.replace(summary, app_id=application.app_id, app_name=application.name,
                               spark_version=application.spark_version)


def _compare_runs(old: str, new: str, gate: Gate, max_size: int, plans: bool) -> Comparison:
    kinds = rewrite_kinds()
    # Both opened first: a new side that cannot be read fails before a long old one is read.
    old_reader = _SideReader(old, max_size)
    new_reader = _SideReader(new, max_size)
    olds = list(old_reader.summaries(plans))
    if not olds:
        raise InspectError("no SQL execution or plan to compare", source=old_reader.source)
    partners = Partners(olds)
    news: List[ExecutionSummary] = []
    for report, summary in new_reader.reports(plans):
        most = partners.most(summary)
        missing = tuple(kind for kind in kinds if most.get(kind, 0) > summary.counts[kind])
        if missing:
            summary = dataclasses.replace(
                summary, why_not=why_not(report, missing, summary.spark_version))
        news.append(summary)
    if not news:
        raise InspectError("no SQL execution or plan to compare", source=new_reader.source)
    # The logs are read whole: where one ends before its application does, the executions
    # its end cut off while they ran are unfinished.
    if old_reader.not_ended:
        olds = [cut_off_unfinished(summary) for summary in olds]
    if new_reader.not_ended:
        news = [cut_off_unfinished(summary) for summary in news]
    pairs, old_left, new_left = match(olds, news)
    return Comparison(
        old=Side(old_reader.source, len(olds), tuple(old_reader.versions), old_reader.notes,
                 old_reader.not_ended, old_reader.not_ended_why),
        new=Side(new_reader.source, len(news), tuple(new_reader.versions), new_reader.notes,
                 new_reader.not_ended, new_reader.not_ended_why),
        kinds=kinds, gate=gate,
        pairs=tuple(Pair(olds[o], news[n], basis, kinds) for o, n, basis in pairs),
        unmatched_old=tuple(olds[i] for i in old_left),
        unmatched_new=tuple(news[i] for i in new_left),
        notes=tuple(f"old: {note}" for note in old_reader.notes)
        + tuple(f"new: {note}" for note in new_reader.notes))


# ---- fleet tables -------------------------------------------------------------------------

def _compare_tables(old: str, new: str, gate: Gate) -> Comparison:
    from .fleet_tables import read_groups

    kinds = rewrite_kinds()
    old_groups, old_rows, old_errors = read_groups(old, kinds)
    new_groups, new_rows, new_errors = read_groups(new, kinds)

    def rates(figures: Sequence[int]):
        return {kind: KindRates(figures[1 + 2 * i], figures[2 + 2 * i])
                for i, kind in enumerate(kinds)}

    empty = [0] * (1 + 2 * len(kinds))

    def group(key, before, after) -> FleetGroup:
        return FleetGroup(key[0], key[1], before[0], after[0], rates(before), rates(after),
                          kinds)

    both = [group(key, old_groups[key], figures) for key, figures in new_groups.items()
            if key in old_groups]
    only_new = [group(key, empty, figures) for key, figures in new_groups.items()
                if key not in old_groups]
    only_old = [group(key, figures, empty) for key, figures in old_groups.items()
                if key not in new_groups]
    order: Callable[[FleetGroup], Tuple[str, str]] = lambda g: (g.app_name, g.description)
    notes = []
    for name, errors in ((old, old_errors), (new, new_errors)):
        if errors:
            notes.append(f"{name}: {errors} row(s) of files the scan could not read, left out")
    return Comparison(
        old=Side(old, old_rows), new=Side(new, new_rows), kinds=kinds, gate=gate,
        groups=tuple(sorted(both, key=order)), groups_old_only=tuple(sorted(only_old, key=order)),
        groups_new_only=tuple(sorted(only_new, key=order)), fleet=True, notes=tuple(notes))
