"""`check`: hold a report against expectations, query by query as it is read.

The report may be a stream (an event log's executions, diffed as read): each query is seen
once, counted for every expectation whose scope takes it, and kept only while an expectation
may need to show it (a bounded number each), so a log of any length is checked in bounded
memory. An expectation whose scope takes no query fails: the query it is about did not run.

A query whose plan may not be the one it ended with (`Query.unfinished`: its execution had
not ended where the log ends, or its plan is not final, `isFinalPlan=false`) is no evidence
for a verdict: an expectation whose scope takes one is `unfinished`, which fails, saying what
is missing; unless what is there already breaks it (a forbidden rewrite AQE made is not
undone), or the caller asked to judge what is there (`judge_unfinished`). A plan text with
operators missing (`Query.incomplete`: cut short, elided) counts lower bounds: what they
settle (at least N found; more than allowed found) is judged, the rest is `unfinished` too.
So is an input that may lack queries of an application it holds (`Document.unended`, each
reason naming the log, part or application): an event log that ends before its application
does (`Application.ended` False: cut, still being written, a driver killed), a folder's log
that could not be read, a rolling log with a part missing or compacted, a History Server
answer showing an execution RUNNING, a driver log one of whose applications started and did
not stop: its counts are lower bounds. What they settle passes, saying why they are lower
bounds; but an execution the log's end cut off while it ran (no end of its own, its plan
final: `Query.cut_off`) is no evidence for a PASS there: its expectations are `unfinished`
too. With `judge_unfinished`, what they do not settle is judged, saying it judged lower bounds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import (TYPE_CHECKING, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple,
                    Union)

from .config import Expectation
from ..rewrites.locations import Location, kind_location
from ..plan.model import DRIVER_LOG_NOT_ENDED, LOG_NOT_ENDED, Application, units
from ..rewrites.findings import (QueryReport, Report, ReportStream, describe, not_ended_why,
                                 rewrite_kinds)

if TYPE_CHECKING:  # pragma: no cover
    from ..whynot.settings import Given
    from ..whynot.verdicts import Candidate, Margin

#: The kinds whose rule holds a run-time size against a setting: their expectations take a
#: margin (`check --margin`, `margin` in aqe-expect.toml).
MARGIN_KINDS = ("smj-to-bhj", "smj-to-shj", "skew-join", "coalesced")

#: Queries shown with an unmet expectation (their plan diffs); the rest are counted.
SHOWN = 5


@dataclass(frozen=True)
class Outcome:
    """One expectation held against the input (or, with `each`, against one query)."""

    expectation: Expectation
    actual: int
    passed: bool
    message: str
    #: How many queries the scope took.
    query_count: int
    #: The ids of the queries counted.
    query_ids: Tuple[str, ...] = ()
    #: The queries that tell why it failed (at most SHOWN): those holding a forbidden
    #: rewrite, else those in scope without enough of it.
    shown: Tuple[QueryReport, ...] = ()
    location: Optional[Location] = None
    #: What the input calls the queries counted: `query` (a plan text: its position in the
    #: file) or `execution` (an event log: Spark's execution id). See `Query.unit`.
    unit: str = "query"
    #: What a reader needs beyond the message: for a snapshot (`check --snapshot`), the
    #: unified diff between the snapshot and the plan; empty otherwise.
    detail: str = ""
    #: For an expected rewrite that did not happen (enough): why not, in each query shown,
    #: as (query id, candidate) of the expectation's kind (or AQE's own, for a static plan).
    why: Tuple[Tuple[str, "Candidate"], ...] = ()
    #: Not judged: a query in scope had not finished (`passed` is False then). With
    #: `judge_unfinished`, judged on what was there: False, and `message` says so.
    unfinished: bool = False
    #: Held to a margin (`--margin`, `margin`): the percent asked, and the decision nearest
    #: to turning it (the query it is in); None when no margin was asked or none measured.
    margin_asked: Optional[float] = None
    margin: Optional["Margin"] = None
    margin_query: str = ""
    #: Met, but by less than the margin asked, or by a margin the input cannot measure.
    fragile: bool = False

    @property
    def status(self) -> str:
        """`met`, `not met` or `unfinished`: what every format calls the outcome."""
        if self.passed:
            return "met"
        return "unfinished" if self.unfinished else "not met"

    def why_lines(self) -> Tuple[str, ...]:
        """`query 3: SortMergeJoin (15): blocked: ...`, one line per candidate."""
        return tuple(f"{self.unit} {query_id}: {found.node}: {found.summary()}"
                     for query_id, found in self.why)

    @property
    def name(self) -> str:
        """The expectation's id, and with `each` the query's: unique within a check (JUnit
        readers drop test cases of one name)."""
        if self.expectation.each and self.query_ids:
            return f"{self.expectation.id} @ {self.unit} {self.query_ids[0]}"
        return self.expectation.id


@dataclass(frozen=True)
class CheckResult:
    outcomes: Tuple[Outcome, ...]
    source: str
    #: Every query read, whether or not an expectation took it.
    query_count: int
    notes: Tuple[str, ...] = ()
    application: Optional[Application] = None
    #: What the input calls its queries (`Outcome.unit`).
    unit: str = "query"

    @property
    def passed(self) -> bool:
        return all(outcome.passed for outcome in self.outcomes)

    @property
    def failures(self) -> Tuple[Outcome, ...]:
        """What did not pass: unmet and unfinished alike."""
        return tuple(outcome for outcome in self.outcomes if not outcome.passed)

    @property
    def unfinished(self) -> Tuple[Outcome, ...]:
        return tuple(outcome for outcome in self.outcomes if outcome.unfinished)

    @property
    def verdict(self) -> str:
        """`2 of 5 expectation(s) not met`, `1 of 5 expectation(s) unfinished`, or `all 5
        expectation(s) met`: how every report sums the check up."""
        total = len(self.outcomes)
        unfinished = len(self.unfinished)
        unmet = len(self.failures) - unfinished
        if unmet and unfinished:
            return (f"{unmet} of {total} expectation(s) not met, {unfinished} unfinished "
                    "(no verdict on what had not finished)")
        if unmet:
            return f"{unmet} of {total} expectation(s) not met"
        if unfinished:
            return (f"{unfinished} of {total} expectation(s) unfinished (no verdict on what "
                    "had not finished)")
        return f"all {total} expectation(s) met"

    @property
    def queries_read(self) -> str:
        """`4 queries read from plan.txt`, `4 executions read from app.zstd`."""
        return f"{units(self.query_count, self.unit)} read from {self.source or '<input>'}"

    @property
    def shown_queries(self) -> Tuple[QueryReport, ...]:
        """The queries failed outcomes show, each once, in input order."""
        seen: Dict[int, QueryReport] = {}
        for outcome in self.failures:
            for report in outcome.shown:
                seen.setdefault(id(report), report)
        return tuple(sorted(seen.values(), key=_input_order))


def _input_order(report: QueryReport) -> Tuple[str, int, str]:
    query = report.query
    return (query.source, query.line, report.id)


@dataclass
class _Tally:
    """What one expectation has seen so far."""

    expectation: Expectation
    actual: int = 0
    ids: List[str] = field(default_factory=list)
    with_kind: List[QueryReport] = field(default_factory=list)
    without_kind: List[QueryReport] = field(default_factory=list)
    first: Optional[QueryReport] = None
    #: The queries in scope that had not finished: how many, and the first few.
    unfinished: int = 0
    unfinished_shown: List[QueryReport] = field(default_factory=list)
    #: The queries in scope whose plan text misses operators (counts are lower bounds).
    incomplete: int = 0
    incomplete_shown: List[QueryReport] = field(default_factory=list)
    #: The executions in scope with no end of their own, their plan final (`Query.cut_off`):
    #: unfinished where the log ends before its application does.
    cut_off: int = 0
    cut_off_shown: List[QueryReport] = field(default_factory=list)

    def add(self, report: QueryReport, count: int) -> None:
        self.actual += count
        self.ids.append(report.id)
        if self.first is None:
            self.first = report
        kept = self.with_kind if count else self.without_kind
        if len(kept) < SHOWN:
            kept.append(report)
        if report.query.unfinished:
            self.unfinished += 1
            if len(self.unfinished_shown) < SHOWN:
                self.unfinished_shown.append(report)
        elif report.query.incomplete:
            self.incomplete += 1
            if len(self.incomplete_shown) < SHOWN:
                self.incomplete_shown.append(report)
        if report.query.cut_off:
            self.cut_off += 1
            if len(self.cut_off_shown) < SHOWN:
                self.cut_off_shown.append(report)



def check(report: Union[Report, ReportStream], expectations: Sequence[Expectation],
          selected_by: Optional[str] = None, settings: Optional[Mapping[str, "Given"]] = None,
          spark_version: Optional[str] = None, judge_unfinished: bool = False,
          margin: Optional[float] = None) -> CheckResult:
    """Every expectation held against every query of the report. `selected_by` is the
    `--query` that chose the report's queries from the input, for the messages; `settings`
    and `spark_version` (`--conf`, `--spark-version`) what the why-not answers take as the
    job's settings beyond what the input recorded. `judge_unfinished`: judge queries that had
    not finished on what they hold, rather than call their expectations `unfinished`.
    `margin`: the percent by which the size decisions behind an expectation of a
    `MARGIN_KINDS` kind must have held (an expectation's own `margin` overrides it)."""
    totals = {id(e): _Tally(e) for e in expectations if not e.each}
    each: Dict[int, List[Outcome]] = {id(e): [] for e in expectations if e.each}
    # The outcomes held query by query of executions with no end (`Query.cut_off`), judged
    # again once the log is read: where it ends before its application does, unfinished.
    cut_off: List[Tuple[List[Outcome], int, Expectation, QueryReport, int]] = []
    index = 0
    unit = "query"
    margins = _Margins(expectations, margin, settings or {}, spark_version)
    for index, query_report in enumerate(report.queries, 1):
        unit = query_report.query.unit
        counts = query_report.counts
        margins.start(query_report, getattr(report, "application", None))
        for expectation in expectations:
            scope = expectation.scope
            if scope is not None and not scope.selects(index, query_report.query):
                continue
            margins.add(expectation, query_report)
            count = counts[expectation.kind]
            if expectation.each:  # judged now: only a failing query is kept
                found = each[id(expectation)]
                if query_report.query.cut_off:
                    cut_off.append((found, len(found), expectation, query_report, count))
                found.append(_one_query(expectation, query_report, count, report.source,
                                        judge_unfinished))
            else:
                totals[id(expectation)].add(query_report, count)
    source = report.source
    reasons = not_ended_why(report)  # the log is read whole now
    open_log = not judge_unfinished and bool(reasons)
    if open_log:
        for found, at, expectation, query_report, count in cut_off:
            found[at] = _one_query(expectation, query_report, count, source, cut_off=True)
    outcomes: List[Outcome] = []
    for expectation in expectations:
        if expectation.each:
            found = each[id(expectation)]
            outcomes.extend(found or [_nothing_matched(expectation, index, source, selected_by,
                                                       unit)])
        else:
            outcomes.append(_summed(totals[id(expectation)], index, source, selected_by,
                                    judge_unfinished, unit, open_log))
    application = report.application
    if reasons:
        outcomes = _log_not_ended(outcomes, expectations, source, unit, reasons,
                                  judged=judge_unfinished)
    outcomes = [margins.held(_with_why(outcome, application, settings or {}, spark_version))
                for outcome in outcomes]
    return CheckResult(tuple(outcomes), source, index, tuple(report.notes), application, unit)


#: What a PASS that stands in a log that ends before its application does (`LOG_NOT_ENDED`)
#: says (the log's note names the file and the application), and in a driver log.
NOT_ENDED_PASS = ("the application has no end in the log (no SparkListenerApplicationEnd; "
                  "see the note): executions after its end could not be read")
DRIVER_NOT_ENDED_PASS = ("the application has no end in the log (no 'Successfully stopped "
                         "SparkContext'; see the note): queries after its end could not be "
                         "read")
#: The most reasons an outcome names (a folder of many cut logs): the notes name them all.
REASONS_SHOWN = 3


def _reasons(reasons: Sequence[str], passed: bool = False) -> str:
    """The reasons an input's counts are lower bounds (`Document.unended`), as an outcome
    says them: a PASS that stands says what an application's missing end means for it
    (`NOT_ENDED_PASS`)."""
    said = []
    for reason in reasons[:REASONS_SHOWN]:
        if passed and reason.endswith(LOG_NOT_ENDED):
            reason = reason[:-len(LOG_NOT_ENDED)] + NOT_ENDED_PASS
        elif passed and reason.endswith(DRIVER_LOG_NOT_ENDED):
            reason = reason[:-len(DRIVER_LOG_NOT_ENDED)] + DRIVER_NOT_ENDED_PASS
        said.append(reason)
    if len(reasons) > REASONS_SHOWN:
        said.append(f"and {len(reasons) - REASONS_SHOWN} more (see the notes)")
    return "; ".join(said)


def _log_not_ended(outcomes: List[Outcome], expectations: Sequence[Expectation],
                   source: str, unit: str = "execution",
                   reasons: Sequence[str] = (LOG_NOT_ENDED,), judged: bool = False
                   ) -> List[Outcome]:
    """The outcomes over an input that may lack queries of an application it holds (an
    application with no end, a rolling log's part missing...: `reasons`): what its counts,
    lower bounds, settle stands (at least N found; more than allowed found); the rest is
    `unfinished`, or with `judged` (--judge-unfinished) judged on what was read, saying its
    counts are lower bounds. An expectation held query by query (`each`) stands for the
    queries read, and is `unfinished` for those the input does not hold."""
    import dataclasses

    why = _reasons(reasons)
    found: List[Outcome] = []
    for outcome in outcomes:
        expectation = outcome.expectation
        settled = outcome.unfinished or expectation.kind == "snapshot" or (
            (outcome.passed or outcome.query_count) and
            _lower_bounds_settle(expectation, outcome.passed, outcome.actual))
        if settled or (expectation.each and outcome.query_count):
            if outcome.passed and expectation.kind != "snapshot":
                # It stands on what was read, every one of which had ended: said, as the
                # application never did.
                ended = ", every one of which ended" if unit == "execution" and \
                    not judged else ""
                said = _reasons(reasons, passed=True)
                outcome = dataclasses.replace(outcome,
                                              message=f"{outcome.message}{ended}; {said}")
            found.append(outcome)
            continue
        if judged:
            found.append(dataclasses.replace(
                outcome, message=f"{outcome.message} (judged though its counts are lower "
                                 f"bounds: {why})"))
            continue
        found.append(dataclasses.replace(
            outcome, passed=False, unfinished=True,
            message=f"unfinished: {outcome.message}, so far; {why}",
            location=outcome.location or (Location(source) if source else None)))
    for expectation in expectations:
        mine = [o for o in found if o.expectation is expectation]
        if expectation.each and mine and all(o.passed for o in mine) and not judged:
            found.append(Outcome(
                expectation, 0, False, f"unfinished: {expectation.wants} in "
                f"{expectation.scope_words(unit)}, beyond the {units(len(mine), unit)} "
                f"read: {why}", 0, location=Location(source) if source else None,
                unfinished=True, unit=unit))
    return found


def _with_why(outcome: Outcome, application: Optional[Application],
              settings: Mapping[str, "Given"], spark_version: Optional[str]) -> Outcome:
    """The outcome with why-not answers, when it failed for too few of its rewrite."""
    import dataclasses

    expectation = outcome.expectation
    if outcome.passed or outcome.unfinished or _too_many(expectation, outcome.actual) or \
            not outcome.shown or \
            expectation.kind not in rewrite_kinds():
        return outcome
    from ..whynot import explain_query, query_settings
    from ..whynot.verdicts import HAPPENED

    version = spark_version or (application.spark_version if application is not None
                                else None)
    found = []
    for report in outcome.shown:
        answer = explain_query(report, query_settings(report, settings, version=version or None),
                               (expectation.kind,))
        found.extend((report.id, c) for c in answer.candidates if c.verdict != HAPPENED)
    return dataclasses.replace(outcome, why=tuple(found))


def _summed(tally: _Tally, total: int, source: str, selected_by: Optional[str],
            judge_unfinished: bool = False, unit: str = "query",
            open_log: bool = False) -> Outcome:
    """The outcome of an expectation over the queries it took; `open_log`: the log ends
    before its application does, so the executions it cut off are unfinished too."""
    expectation = tally.expectation
    if tally.first is None:
        return _nothing_matched(expectation, total, source, selected_by, unit)
    unit = tally.first.query.unit
    passed = expectation.holds(tally.actual)
    scope = expectation.scope_words(unit, selected_by)
    found = f"found {tally.actual} in {units(len(tally.ids), unit)}"
    unfinished, unfinished_shown = tally.unfinished, tally.unfinished_shown
    if open_log and tally.cut_off:
        unfinished += tally.cut_off
        unfinished_shown = sorted((*unfinished_shown, *tally.cut_off_shown),
                                  key=_input_order)[:SHOWN]
    pending = _pending(expectation, passed, tally.actual, unfinished,
                       unfinished_shown, tally.incomplete, tally.incomplete_shown)
    if pending:
        # What is there cannot settle it: the rewrite may yet come (or go).
        missing, shown_pending = pending
        if not judge_unfinished:
            message = (f"unfinished: {expectation.wants} in {scope} cannot be judged, "
                       f"{found} so far; {missing}")
            shown = tuple(shown_pending)
            return Outcome(expectation, tally.actual, False, message, len(tally.ids),
                           tuple(tally.ids), shown,
                           kind_location(shown[0], expectation.kind, source),
                           unfinished=True, unit=unit)
        found = f"{found} (judged though {missing})"
    if passed:
        message = f"{expectation.wants} in {scope}: {found}"
        shown: Tuple[QueryReport, ...] = ()
    else:
        message = f"expected {expectation.wants} in {scope}, {found}"
        too_many = _too_many(expectation, tally.actual)
        shown = tuple(tally.with_kind if too_many and tally.with_kind else
                      (tally.without_kind or tally.with_kind))
    located = shown[0] if shown else tally.first
    return Outcome(expectation, tally.actual, passed, message, len(tally.ids),
                   tuple(tally.ids), shown, kind_location(located, expectation.kind, source),
                   unit=unit)


def _too_many(expectation: Expectation, actual: int) -> bool:
    """Whether an unmet expectation failed for too many of its rewrite (else too few)."""
    return expectation.operator in ("<=", "<") or actual > expectation.count


def _one_query(expectation: Expectation, report: QueryReport, count: int,
               source: str, judge_unfinished: bool = False, cut_off: bool = False) -> Outcome:
    """The outcome of an expectation held on one query; `cut_off`: an execution the log's end
    cut off while it ran (`Query.cut_off`, the log ending before its application does)."""
    passed = expectation.holds(count)
    where = report.name
    unit = report.query.unit
    query = report.query
    pending = _pending(expectation, passed, count, 1 if query.unfinished or cut_off else 0,
                       [report], 1 if query.incomplete else 0, [report])
    if pending:
        missing = pending[0]
        if not judge_unfinished:
            message = (f"unfinished: {expectation.wants} in {where} cannot be judged, found "
                       f"{count} so far; {missing}")
            return Outcome(expectation, count, False, message, 1, (report.id,), (report,),
                           kind_location(report, expectation.kind, source), unfinished=True,
                           unit=unit)
        where = f"{where} (judged though {missing})"
    message = (f"{expectation.wants} in {where}: found {count}" if passed else
               f"expected {expectation.wants} in {where}, found {count}")
    return Outcome(expectation, count, passed, message, 1, (report.id,),
                   () if passed else (report,), kind_location(report, expectation.kind, source),
                   unit=unit)


def _pending(expectation: Expectation, passed: bool, actual: int, unfinished: int,
             unfinished_shown: Sequence[QueryReport], incomplete: int,
             incomplete_shown: Sequence[QueryReport]
             ) -> Optional[Tuple[str, Sequence[QueryReport]]]:
    """What keeps the verdict open (what is missing, and the queries to show), or None when
    what is there settles it: more than allowed found is a failure whatever comes after
    (AQE does not undo a rewrite it made); of a text missing operators, whose counts are
    lower bounds, at least as many as wanted found is met as well."""
    too_many = not passed and _too_many(expectation, actual)
    if too_many:
        return None
    if unfinished:
        return _missing(unfinished_shown, unfinished, "unfinished"), unfinished_shown
    if incomplete and not _lower_bounds_settle(expectation, passed, actual):
        return _missing(incomplete_shown, incomplete, "incomplete"), incomplete_shown
    return None


def _lower_bounds_settle(expectation: Expectation, passed: bool, actual: int) -> bool:
    """Whether counts that are lower bounds (more may be in what was not read) settle the
    expectation: at least as many as wanted found meets it, more than allowed breaks it."""
    if passed:
        return expectation.operator in (">=", ">")
    return _too_many(expectation, actual)


def _missing(reports: Sequence[QueryReport], count: int, why: str) -> str:
    """What an unfinished verdict lacks: `query 1 (line 12): its plan is not final ...`,
    `execution 3 (line 40, the event of its plan): ...`."""
    first = reports[0]
    line = first.query.line
    is_ = first.query.line_is
    where = first.name + (f" (line {line}, {is_})" if line and is_
                          else f" (line {line})" if line else "")
    more = f" and {_plural(count - 1, 'other', 'others')}" if count > 1 else ""
    if why == "unfinished":
        return f"{where}{more}: {first.query.unfinished or first.query.cut_off_why}"
    return (f"{where}{more}: its plan text is incomplete, so its counts are lower bounds "
            f"({first.query.incomplete})")


def _nothing_matched(expectation: Expectation, total: int, source: str,
                     selected_by: Optional[str], unit: str = "query") -> Outcome:
    if total == 0 and selected_by is not None:
        message = (f"expected {expectation.wants}, but nothing in the input matches --query "
                   f"{selected_by}" + (" (a number is an event log's execution id, a plan "
                                       "text's query position)"
                                       if selected_by.strip().isdigit() else ""))
    elif total == 0:
        message = f"expected {expectation.wants}, but the input holds no query"
    else:
        message = (f"expected {expectation.wants} in {expectation.scope_words(unit)}, but "
                   f"none of the {units(total, unit)} read is one of them")
    return Outcome(expectation, 0, False, message, 0, location=Location(source) if source
                   else None, unit=unit)


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def rewrites_of(report: QueryReport, kind: str) -> Iterable[str]:
    """`AQEShuffleRead (20)`: the operators of a query holding a rewrite of `kind`."""
    return (describe(r.final_node) or "-" for r in report.rewrites if r.kind == kind)


# ---- margins ---------------------------------------------------------------------------------


@dataclass
class _Held:
    """The nearest margin an expectation held by so far, and what kept one from measuring."""

    margin: Optional["Margin"] = None
    query: str = ""
    unknown: str = ""


class _Margins:
    """The size decisions behind each expectation held to a margin, query by query as the
    report is read: a rewrite that happened by its fired decisions (`Candidate.closest`), one
    that did not by those that kept it from firing. Of all, the nearest to turning."""

    def __init__(self, expectations: Sequence[Expectation], default: Optional[float],
                 settings: Mapping[str, "Given"], spark_version: Optional[str]):
        self.asked = {id(e): (e.margin if e.margin is not None else default)
                      for e in expectations}
        self.kinds = tuple(sorted({e.kind for e in expectations
                                   if self.asked[id(e)] is not None and
                                   e.kind in MARGIN_KINDS}))
        self.settings, self.spark_version = settings, spark_version
        self.totals: Dict[int, _Held] = {}
        self.each: Dict[Tuple[int, str], _Held] = {}
        self._answer: Optional[Tuple["Candidate", ...]] = None
        self._report: Optional[QueryReport] = None
        self._application: Optional[Application] = None

    def start(self, report: QueryReport, application: Optional[Application]) -> None:
        self._report, self._application, self._answer = report, application, None

    def _candidates(self) -> Tuple["Candidate", ...]:
        if self._answer is None:
            from ..whynot import explain_query, query_settings

            report, application = self._report, self._application
            assert report is not None
            version = self.spark_version or (application.spark_version
                                             if application is not None else None)
            settings = query_settings(report, self.settings, version=version or None)
            self._answer = explain_query(report, settings, self.kinds).candidates
        return self._answer

    def add(self, expectation: Expectation, report: QueryReport) -> None:
        if expectation.kind not in self.kinds or self.asked[id(expectation)] is None:
            return
        held = (self.each.setdefault((id(expectation), report.id), _Held())
                if expectation.each else self.totals.setdefault(id(expectation), _Held()))
        fired_side = expectation.operator in (">=", ">") or (
            expectation.operator in ("==", "=") and expectation.count > 0)
        unfired_side = expectation.operator in ("<=", "<", "==", "=")
        from ..whynot.verdicts import CANNOT_TELL, HAPPENED

        for found in self._candidates():
            if found.kind != expectation.kind:
                continue
            happened = found.verdict == HAPPENED
            if (happened and not fired_side) or (not happened and not unfired_side):
                continue
            nearest = found.closest
            if nearest is not None:
                if held.margin is None or (nearest.percent or 0) < (held.margin.percent or 0):
                    held.margin, held.query = nearest, report.id
            elif (happened or found.verdict == CANNOT_TELL) and not held.unknown:
                lacks = "; ".join(found.needs) or (
                    "the run-time sizes and settings it was decided by (an event log)")
                held.unknown = (f"{report.query.unit} {report.id}: {found.node}: its margin "
                                f"cannot be measured: needs {lacks}")

    def held(self, outcome: Outcome) -> Outcome:
        """The outcome held to its margin: a met expectation whose nearest decision held by
        less than the margin asked, or by one the input cannot measure, fails."""
        import dataclasses

        expectation = outcome.expectation
        asked = self.asked.get(id(expectation))
        if asked is None or expectation.kind not in MARGIN_KINDS or not outcome.passed:
            return outcome
        if expectation.each:
            held = self.each.get((id(expectation), outcome.query_ids[0] if outcome.query_ids
                                  else ""))
        else:
            held = self.totals.get(id(expectation))
        held = held or _Held()
        from ..whynot.margins import margin_text, show_percent

        want = show_percent(asked)
        margin = held.margin
        if held.unknown:
            return dataclasses.replace(
                outcome, passed=False, fragile=True, margin_asked=asked, margin=margin,
                margin_query=held.query,
                message=f"{outcome.message}, but not held to --margin {want}: "
                        f"{held.unknown}")
        if margin is None:
            return dataclasses.replace(
                outcome, margin_asked=asked,
                message=f"{outcome.message}; no size decision to hold to --margin {want} "
                        "(settings or the plan's shape decided it)")
        said = f"{outcome.unit} {held.query}: {margin_text(margin)}"
        if margin.percent is not None and margin.percent < asked:
            return dataclasses.replace(
                outcome, passed=False, fragile=True, margin_asked=asked, margin=margin,
                margin_query=held.query,
                message=f"{outcome.message}, but by only {show_percent(margin.percent)}, "
                        f"under --margin {want}: {said}")
        return dataclasses.replace(
            outcome, margin_asked=asked, margin=margin, margin_query=held.query,
            message=f"{outcome.message}; held by {show_percent(margin.percent)} "
                    f"(--margin {want}): {said}")
