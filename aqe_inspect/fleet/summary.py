"""The fleet summary: what the fleet table (`table.py`) says, for people.

`summarize(rows)` reads the rows once (one per application and SQL execution, an unreadable
file one row with `error` set) into a `FleetSummary`:

- overall: files, applications, executions read, files with errors (each with its error),
  files skipped (found in folders, not event logs: the job gives them no row, the caller
  passes them as `skipped`), and per rewrite kind how many executions hold at least one rewrite of it (its rate: of the
  executions read) and how many rewrites there are;
- per application: its executions, the same rates, the shuffle partitions its coalesced reads
  started from and left;
- executions where AQE did nothing although it was on (`aqe_enabled` true, or unknown: said
  so), every rewrite count 0;
- the largest skew splits (`skew_splits`, then `skewed_partitions`);
- sort-merge joins that stayed although small: from `stayed_sort_merge_joins`, the joins
  whose smaller side is at most `small_bytes` at run time (Spark's default broadcast
  threshold, 10 MiB), with the why-not reason and its config key where known, smallest first.

Memory stays bounded by the applications and `top`: the lists keep their `top` first entries
(and count the rest), so a day of a fleet's logs can be summed up on one machine.

`summary_formats.write_summary(rows, stream, format)` writes it as text (a terminal or a log: wrapped to the
width, as `render` does), markdown (GitHub-flavoured tables, e.g. for a CI job summary), or
html (one self-contained page with charts: `fleet/html.py`). Rows may come straight from the
job, from Spark (`Row.asDict()`), or from the CSV output read back as text: numbers and flags
written as text are read as numbers and flags, empty cells as unknown.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, Generic, Iterable, List, Optional, TextIO, Tuple, \
    TypeVar

from ..errors import printable
from ..formats.markdown_text import md
from ..formats.terminal import Screen
from ..plan.units import show_bytes
from .table import KIND_COLUMNS

#: The rewrite kinds as the rest of aqe-inspect names them (`smj-to-bhj`), in the table's order.
KINDS: Tuple[str, ...] = tuple(column.replace("_", "-") for column in KIND_COLUMNS)
#: "Small" for a sort-merge join's smaller side: Spark's default broadcast threshold
#: (`spark.sql.autoBroadcastJoinThreshold`, 10 MiB).
SMALL_JOIN_BYTES = 10 * 1024 * 1024
#: How many entries each list keeps (the rest are counted).
TOP = 20
#: How many of the skipped files (not event logs) the note names.
SKIPPED_NAMED = 5
FORMATS = ("text", "markdown", "html")


# ---- what the summary holds -----------------------------------------------------------------

@dataclass(frozen=True)
class KindRate:
    """One rewrite kind over some executions: `executions` of the `read` hold at least one
    rewrite of it, `count` rewrites of it in all."""

    kind: str
    executions: int
    count: int
    read: int

    @property
    def rate(self) -> Optional[float]:
        return self.executions / self.read if self.read else None


@dataclass(frozen=True)
class Where:
    """An execution of an application, as the lists show it."""

    app_id: str
    app_name: str
    source: str
    execution_id: Optional[int]
    description: str

    @property
    def application(self) -> str:
        return _app_label(self.app_id, self.app_name, self.source)


@dataclass(frozen=True)
class ApplicationSummary:
    """One application's executions (rows without error) and rates."""

    app_id: str
    app_name: str
    spark_version: str
    sources: Tuple[str, ...]
    executions: int
    rates: Tuple[KindRate, ...]
    partitions_before: Optional[int]
    partitions_after: Optional[int]

    @property
    def label(self) -> str:
        return _app_label(self.app_id, self.app_name, self.sources[0] if self.sources else "")


@dataclass(frozen=True)
class Idle:
    """An execution where AQE did nothing: `aqe_enabled` True, or None when the log did not
    say (the default then depends on the Spark version: on from 3.2)."""

    where: Where
    aqe_enabled: Optional[bool]


@dataclass(frozen=True)
class SkewSplit:
    where: Where
    skew_splits: int
    skewed_partitions: Optional[int]


@dataclass(frozen=True)
class StayedJoin:
    """A sort-merge join of a final plan whose smaller side was small at run time."""

    where: Where
    node: str
    smallest_side_bytes: int
    verdict: Optional[str]
    reason: Optional[str]
    config: Optional[str]


@dataclass(frozen=True)
class FileError:
    source: str
    message: str


@dataclass(frozen=True)
class Listed:
    """The first entries of a list (`shown`) and how many there are in all."""

    shown: Tuple[Any, ...]
    total: int

    @property
    def more(self) -> int:
        return self.total - len(self.shown)


@dataclass(frozen=True)
class FleetSummary:
    files: int
    applications: int
    executions: int
    aqe_on: int
    aqe_off: int
    aqe_unknown: int
    rates: Tuple[KindRate, ...]
    apps: Tuple[ApplicationSummary, ...]   # most executions first
    idle: Listed                    # of Idle, by application and execution
    skew: Listed                    # of SkewSplit, most splits first
    small_joins: Listed             # of StayedJoin, smallest side first
    unsized_joins: int              # sort-merge joins that stayed, of unknown size
    errors: Listed                  # of FileError, by file
    skipped: Listed                 # of str: files found in folders that are not event logs
    small_bytes: int
    top: int                        # how many entries a list shows (text, markdown: apps too)
    notes: Tuple[str, ...]

    @property
    def apps_shown(self) -> Listed:
        """The applications text and markdown show: the `top` with most executions."""
        return Listed(self.apps[:self.top], len(self.apps))


# ---- reading the rows -----------------------------------------------------------------------

T = TypeVar("T")


class _Top(Generic[T]):
    """The `size` smallest items by `key`, kept in bounded memory, and how many were offered."""

    def __init__(self, size: int, key: Callable[[T], Any]):
        self.size, self.key = size, key
        self.items: List[T] = []
        self.total = 0

    def add(self, item: T) -> None:
        self.total += 1
        self.items.append(item)
        if len(self.items) > 2 * self.size + 64:
            self._trim()

    def _trim(self) -> None:
        self.items.sort(key=self.key)
        del self.items[self.size:]

    def listed(self) -> Listed:
        self._trim()
        return Listed(tuple(self.items), self.total)


class _AppTally:
    __slots__ = ("app_id", "app_name", "spark_version", "sources", "executions", "with_kind",
                 "counts", "before", "after")

    def __init__(self, app_id: str):
        self.app_id = app_id
        self.app_name = self.spark_version = ""
        self.sources: Dict[str, None] = {}
        self.executions = 0
        self.with_kind = [0] * len(KINDS)
        self.counts = [0] * len(KINDS)
        self.before: Optional[int] = None
        self.after: Optional[int] = None

    def application(self) -> ApplicationSummary:
        return ApplicationSummary(self.app_id, self.app_name, self.spark_version, tuple(self.sources),
                           self.executions, _rates(self.with_kind, self.counts, self.executions),
                           self.before, self.after)


def summarize(rows: Iterable[Dict[str, Any]], small_bytes: int = SMALL_JOIN_BYTES,
              top: int = TOP, skipped: Iterable[str] = ()) -> FleetSummary:
    """The summary of the fleet table's rows (in any order: the result does not depend on it).
    A sort-merge join is small when its smaller side is at most `small_bytes`. `skipped`: the
    files the scan found in folders and skipped, not being event logs (they have no row)."""
    top = max(1, top)
    sources: Dict[str, None] = {}
    apps: Dict[str, _AppTally] = {}
    with_kind = [0] * len(KINDS)
    counts = [0] * len(KINDS)
    executions = on = off = unknown = unsized = 0
    bad_joins = 0
    idle: _Top[Idle] = _Top(top, lambda i: _where_key(i.where))
    skew: _Top[SkewSplit] = _Top(top, lambda s: (-s.skew_splits, -(s.skewed_partitions or 0),
                                                 _where_key(s.where)))
    joins: _Top[StayedJoin] = _Top(top, lambda j: (j.smallest_side_bytes,
                                                   _where_key(j.where), j.node))
    errors: Dict[str, str] = {}
    for row in rows:
        source = _text(row.get("source"))
        sources.setdefault(source, None)
        error = _text(row.get("error"))
        if error:
            errors.setdefault(source, error)
            continue
        executions += 1
        app_id = _text(row.get("app_id"))
        tally = apps.get(app_id or source)
        if tally is None:
            tally = apps[app_id or source] = _AppTally(app_id)
        tally.app_name = tally.app_name or _text(row.get("app_name"))
        tally.spark_version = tally.spark_version or _text(row.get("spark_version"))
        tally.sources.setdefault(source, None)
        tally.executions += 1
        where = Where(app_id, _text(row.get("app_name")), source,
                      _int(row.get("execution_id")), _text(row.get("description")))
        found = [_int(row.get(column)) or 0 for column in KIND_COLUMNS]
        for index, count in enumerate(found):
            if count > 0:
                with_kind[index] += 1
                tally.with_kind[index] += 1
                counts[index] += count
                tally.counts[index] += count
        before, after = _int(row.get("partitions_before")), _int(row.get("partitions_after"))
        if before is not None:
            tally.before = (tally.before or 0) + before
        if after is not None:
            tally.after = (tally.after or 0) + after
        enabled = _flag(row.get("aqe_enabled"))
        if enabled is None:
            unknown += 1
        elif enabled:
            on += 1
        else:
            off += 1
        # A plan AQE did not take (no shuffle to re-plan, a command) is not AQE idling.
        if enabled is not False and _flag(row.get("adaptive")) is not False and not any(found):
            idle.add(Idle(where, enabled))
        splits = _int(row.get("skew_splits"))
        if splits:
            skew.add(SkewSplit(where, splits, _int(row.get("skewed_partitions"))))
        stayed = _joins(row.get("stayed_sort_merge_joins"))
        if stayed is None:
            bad_joins += 1
            continue
        for join in stayed:
            size = _int(join.get("smallest_side_bytes"))
            if size is None:
                unsized += 1
            elif size <= small_bytes:
                joins.add(StayedJoin(where, _text(join.get("node")), size,
                                     _text(join.get("verdict")) or None,
                                     _text(join.get("reason")) or None,
                                     _text(join.get("config")) or None))
    notes = []
    if bad_joins:
        notes.append(f"{bad_joins} row(s) with an unreadable stayed_sort_merge_joins "
                     f"(not JSON): their joins are left out")
    error_list = _Top(top, lambda e: e.source)
    for source, message in errors.items():
        error_list.add(FileError(source, message))
    skipped_list: _Top[str] = _Top(min(top, SKIPPED_NAMED), lambda source: source)
    for source in dict.fromkeys(skipped):
        skipped_list.add(source)
    if skipped_list.total:
        listed = skipped_list.listed()
        more = f" and {listed.more} more" if listed.more else ""
        notes.append(f"skipped {_n(listed.total, 'file')} found in folders, not Spark event "
                     f"logs (as diff skips them): {', '.join(listed.shown)}{more}")
    tallies = sorted(apps.values(), key=lambda t: (-t.executions, t.app_name, t.app_id,
                                                   next(iter(t.sources), "")))
    return FleetSummary(
        files=len(sources), applications=len(apps), executions=executions,
        aqe_on=on, aqe_off=off, aqe_unknown=unknown,
        rates=_rates(with_kind, counts, executions),
        apps=tuple(t.application() for t in tallies),
        idle=idle.listed(), skew=skew.listed(), small_joins=joins.listed(),
        unsized_joins=unsized, errors=error_list.listed(), skipped=skipped_list.listed(),
        small_bytes=small_bytes, top=top, notes=tuple(notes))


def _rates(with_kind: List[int], counts: List[int], read: int) -> Tuple[KindRate, ...]:
    return tuple(KindRate(kind, with_kind[i], counts[i], read) for i, kind in enumerate(KINDS))


def _where_key(where: Where) -> tuple:
    return (where.app_name, where.app_id, where.source,
            -1 if where.execution_id is None else where.execution_id)


def _app_label(app_id: str, app_name: str, source: str) -> str:
    if app_name and app_id:
        return f"{app_name} ({app_id})"
    return app_name or app_id or source or "<unknown application>"


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _int(value: Any) -> Optional[int]:
    """A count as written by the job, by Spark, or read back from CSV; None when unknown."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else None
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            return None
        return int(number) if math.isfinite(number) else None


def _flag(value: Any) -> Optional[bool]:
    if isinstance(value, bool):
        return value
    text = _text(value).strip().lower()
    return {"true": True, "false": False, "1": True, "0": False}.get(text)


def _joins(value: Any) -> Optional[List[Dict[str, Any]]]:
    """The list of sort-merge joins that stayed; None when the cell is not that JSON."""
    if value is None or value == "":
        return []
    if isinstance(value, list):
        found = value
    else:
        try:
            found = json.loads(value)
        except (TypeError, ValueError, RecursionError):
            return None
    if not isinstance(found, list):
        return None
    return [join for join in found if isinstance(join, dict)]


# ---- shared wording -------------------------------------------------------------------------

def percent(rate: Optional[float]) -> str:
    return "-" if rate is None else f"{rate * 100:.1f}%"


def fraction(rate: KindRate) -> str:
    return f"{rate.executions}/{rate.read} ({percent(rate.rate)})"


def partitions(app: ApplicationSummary) -> str:
    if app.partitions_before is None and app.partitions_after is None:
        return "-"
    return f"{_or_dash(app.partitions_before)} -> {_or_dash(app.partitions_after)}"


def execution_name(where: Where) -> str:
    return "execution ?" if where.execution_id is None else f"execution {where.execution_id}"


def aqe_state(enabled: Optional[bool]) -> str:
    return "on" if enabled else "unknown (not in the log)"


def headline(summary: FleetSummary) -> str:
    text = (f"{_n(summary.files, 'file')}, {_n(summary.applications, 'application')}, "
            f"{_n(summary.executions, 'execution')} read")
    if summary.errors.total:
        text += f", {_n(summary.errors.total, 'file')} with errors"
    if summary.skipped.total:
        text += f", {_n(summary.skipped.total, 'file')} skipped (not event logs)"
    return text


def aqe_line(summary: FleetSummary) -> str:
    return (f"AQE on in {summary.aqe_on} execution(s), off in {summary.aqe_off}, "
            f"unknown in {summary.aqe_unknown}")


def small_heading(summary: FleetSummary) -> str:
    return (f"Sort-merge joins that stayed although small (smaller side at most "
            f"{show_bytes(summary.small_bytes)}; smallest first)")


def joins_after(summary: FleetSummary) -> str:
    """What the list of small joins leaves out, as a sentence (or "")."""
    parts = []
    if summary.small_joins.more:
        parts.append(f"{summary.small_joins.more} more not shown")
    if summary.unsized_joins:
        parts.append(f"{summary.unsized_joins} sort-merge join(s) that stayed are of unknown "
                     f"size")
    return "; ".join(parts)


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _or_dash(value: Optional[int]) -> str:
    return "-" if value is None else str(value)


def why_text(join: StayedJoin) -> str:
    text = join.reason or "why not: unknown"
    if join.verdict:
        text = f"{join.verdict}: {text}"
    return text


# ---- text -----------------------------------------------------------------------------------

def write_text(summary: FleetSummary, stream: TextIO, width: Optional[int]) -> None:
    out = Screen(stream, width)
    one = printable

    def heading(text: str) -> None:
        out.paragraph([])
        out.paragraph([(text, "bold")])

    def more(listed: Listed) -> None:
        if listed.more:
            out.paragraph([(f"... and {listed.more} more", "dim")], "  ", "  ")

    out.paragraph([("Fleet summary: ", "bold"), (headline(summary), "")])
    out.paragraph([(aqe_line(summary), "")])
    heading("Rewrite rates (executions with at least one / executions read)")
    name_width = max(len(kind) for kind in KINDS)
    lines = [f"{'kind'.ljust(name_width)}  {'executions':>12}  {'rate':>6}  {'rewrites':>8}"]
    lines += [f"{rate.kind.ljust(name_width)}  {f'{rate.executions}/{rate.read}':>12}  "
              f"{percent(rate.rate):>6}  {rate.count:>8}" for rate in summary.rates]
    for line in lines:
        out.paragraph([(line, "")], "  ", "  ")

    heading(f"Applications ({summary.applications}), most executions first")
    for app in summary.apps_shown.shown:
        spans = [(one(app.label), "bold")]
        if app.spark_version:
            spans.append((f", Spark {one(app.spark_version)}", ""))
        spans.append((f": {_n(app.executions, 'execution')}", ""))
        fired = [f"{rate.kind} {fraction(rate)}" for rate in app.rates if rate.executions]
        spans.append(("; " + (", ".join(fired) if fired else "no rewrite"), ""))
        if app.partitions_before is not None or app.partitions_after is not None:
            spans.append((f"; partitions {partitions(app)}", ""))
        out.paragraph(spans, "  ", "      ")
    more(summary.apps_shown)

    heading(f"Executions where AQE did nothing although it was on ({summary.idle.total})")
    for item in summary.idle.shown:
        where = item.where
        spans = [(one(where.application), "bold"), (f" {execution_name(where)}", "")]
        if where.description:
            spans.append((f": {one(where.description)}", ""))
        if item.aqe_enabled is None:
            spans.append((" [AQE setting unknown]", "yellow"))
        out.paragraph(spans, "  ", "      ")
    more(summary.idle)

    heading(f"Largest skew splits ({summary.skew.total} execution(s) with skew splits)")
    for item in summary.skew.shown:
        where = item.where
        skewed = (f" of {_n(item.skewed_partitions, 'skewed partition')}"
                  if item.skewed_partitions is not None else "")
        out.paragraph([(f"{_n(item.skew_splits, 'split')}{skewed}", "bold"),
                       (f": {one(where.application)} {execution_name(where)}", ""),
                       (f": {one(where.description)}" if where.description else "", "")],
                      "  ", "      ")
    more(summary.skew)

    heading(f"{small_heading(summary)}: {summary.small_joins.total}")
    for join in summary.small_joins.shown:
        where = join.where
        spans = [(f"data size {show_bytes(join.smallest_side_bytes)}", "bold"),
                 (f" {one(join.node)} in {one(where.application)} {execution_name(where)}", ""),
                 (f": {one(why_text(join))}", "")]
        if join.config:
            spans.append((f" [{one(join.config)}]", "cyan"))
        out.paragraph(spans, "  ", "      ")
    after = joins_after(summary)
    if after:
        out.paragraph([(after, "dim")], "  ", "  ")

    if summary.errors.total:
        heading(f"Files with errors ({summary.errors.total})")
        for item in summary.errors.shown:
            out.paragraph([(one(item.source), "bold"), (f": {one(item.message)}", "red")],
                          "  ", "      ")
        more(summary.errors)
    for note in summary.notes:
        out.paragraph([(f"note: {one(note)}", "yellow")])
    out.flush()


# ---- markdown -------------------------------------------------------------------------------

def _cell(text: object) -> str:
    """Text in a GitHub-flavoured table cell or line: one line, no pipe ending the cell, no
    markup, HTML or link read in it (the escape of every Markdown output)."""
    return md(text)


def _table(out: List[str], header: Tuple[str, ...], rows: Iterable[Tuple[object, ...]],
           numeric: Tuple[int, ...] = ()) -> None:
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "|".join("---:" if i in numeric else "---"
                              for i in range(len(header))) + "|")
    for row in rows:
        out.append("| " + " | ".join(_cell(value) for value in row) + " |")
    out.append("")


def write_markdown(summary: FleetSummary, stream: TextIO) -> None:
    out: List[str] = ["## AQE fleet summary", "",
                      f"{_cell(headline(summary))}. {_cell(aqe_line(summary))}.", ""]

    def more(listed: Listed) -> None:
        if listed.more:
            out.extend([f"... and {listed.more} more.", ""])

    out += ["### Rewrite rates", "", "Executions with at least one rewrite of the kind, of the "
            "executions read.", ""]
    _table(out, ("kind", "executions", "rate", "rewrites"),
           ((r.kind, f"{r.executions}/{r.read}", percent(r.rate), r.count)
            for r in summary.rates), numeric=(1, 2, 3))
    out += [f"### Applications ({summary.applications})", ""]
    _table(out, ("application", "Spark", "executions", *KINDS, "partitions"),
           ((app.label, app.spark_version, app.executions,
             *(fraction(rate) for rate in app.rates), partitions(app))
            for app in summary.apps_shown.shown), numeric=tuple(range(2, 3 + len(KINDS))))
    more(summary.apps_shown)
    out += [f"### Executions where AQE did nothing although it was on ({summary.idle.total})",
            ""]
    if summary.idle.shown:
        _table(out, ("application", "execution", "description", "AQE"),
               ((i.where.application, _or_dash(i.where.execution_id), i.where.description,
                 aqe_state(i.aqe_enabled)) for i in summary.idle.shown), numeric=(1,))
    more(summary.idle)
    out += [f"### Largest skew splits ({summary.skew.total})", ""]
    if summary.skew.shown:
        _table(out, ("splits", "skewed partitions", "application", "execution", "description"),
               ((s.skew_splits, _or_dash(s.skewed_partitions), s.where.application,
                 _or_dash(s.where.execution_id), s.where.description)
                for s in summary.skew.shown), numeric=(0, 1, 3))
    more(summary.skew)
    out += [f"### {_cell(small_heading(summary))}: {summary.small_joins.total}", ""]
    if summary.small_joins.shown:
        _table(out, ("smaller side's data size", "join", "application", "execution", "verdict",
                     "why not",
                     "config"),
               ((show_bytes(j.smallest_side_bytes), j.node, j.where.application,
                 _or_dash(j.where.execution_id), j.verdict or "-", j.reason or "-",
                 j.config or "-") for j in summary.small_joins.shown), numeric=(0, 3))
    after = joins_after(summary)
    if after:
        out.extend([_cell(after) + ".", ""])
    if summary.errors.total:
        out += [f"### Files with errors ({summary.errors.total})", ""]
        _table(out, ("file", "error"), ((e.source, e.message) for e in summary.errors.shown))
        more(summary.errors)
    for note in summary.notes:
        out.extend([f"note: {_cell(note)}", ""])
    stream.write("\n".join(out))


# ---- the front door -------------------------------------------------------------------------
