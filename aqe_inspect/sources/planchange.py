"""Spark's plan-change log in a driver log: which rule changed each plan under AQE, and which
of AQE's re-plannings kept the plan they had.

With `spark.sql.planChangeLog.level` at the log's level (INFO), Spark's `PlanChangeLogger`
prints every rule that changed a plan (`=== Applying Rule <class> ===` and the plans before
and after, side by side, changed lines marked `!`), each batch's result (`=== Result of Batch
<name> ===`, or `Batch <name> has no effect.`) and metrics. AQE runs its rules through it:

* at each re-planning (`AdaptiveSparkPlanExec.reOptimize`): its logical optimizer
  (`AQEOptimizer`: AQEPropagateEmptyRelation, DynamicJoinSelection, EliminateLimits,
  OptimizeOneRowPlan, ...; their plans hold `LogicalQueryStage`), then, after the planner,
  the physical batch `AQE Replanning` (EnsureRequirements, OptimizeSkewedJoin, ...). AQE then
  logs `Plan changed:` (at spark.sql.adaptive.logLevel) when it adopts the new plan, and
  nothing when it keeps the one it had: a kept plan;
* for each new query stage and the final stage: `AQE Query Stage Optimization`
  (PlanAdaptiveDynamicPruningFilters, OptimizeSkewInRebalancePartitions,
  CoalesceShufflePartitions, OptimizeShuffleWithLocalRead, ...) and `AQE Post Stage
  Creation` (CollapseCodegenStages);
* once: `AQE Preparations` for the initial plan.

Spark 4's structured (JSON) logs are read the same way, each record's message decoded
(`{"msg": "\\n=== Applying Rule ... ===\\n..."}`), its events at the record's line.

The log does not say which query a message is about. A message goes to a query that may be
running where it stands (not ended by then, its run not after it: `_Owners`), and of those to
the one whose plans share most of the expression ids (`k#12L`) the message's plans carry:
Spark keeps them for the life of a query, and queries over the same DataFrames share them,
where the query running then is the one. A line with no plan (`Batch AQE Replanning has no
effect.`) goes with the blocks around it.

Read only when the log holds `=== Applying Rule` (one byte search); the bytes are searched
for the few headings, never split into lines. A block cut short or damaged is a note. A
driver log is read once: its plan-change log is read from the skim's own buffers as they
are read (`Stream`), and from the file again only when those cannot serve (`attach_streamed`).

May import: `plan`, `errors` (as every module of `sources`).
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Tuple

from .filebytes import FileBytes
from ..plan.model import Document, PlanChanges, Query, Replanning, RuleApplied

#: Every log with the plan-change log at its level holds this (the analyzer's rules alone).
SIGNATURE = b"=== Applying Rule "
RESULT = b"=== Result of Batch "
NO_EFFECT = b" has no effect."
PLAN_CHANGED = b"Plan changed"
FINAL_PLAN = b"Final plan:"
#: SparkContext's message as an application starts (sources.APPLICATION_START): one log file
#: can hold several applications' logs one after the other, each numbering its expression ids
#: from the start again, so a message goes only to a query of its own application.
APPLICATION = b"Submitted application: "
#: What read_events looks for, and its kind of event.
HEADINGS = ((SIGNATURE, "rule"), (RESULT, "result"), (NO_EFFECT, "no-effect"),
            (PLAN_CHANGED, "changed"), (FINAL_PLAN, "final"), (APPLICATION, "application"))
#: Where in each heading the two bytes the compiled search stops at begin (`_markers_c`: a
#: pair rare in a log's ordinary lines, `Ap` of `=== Applying Rule `, `t.` of `no effect.`).
HEADING_ANCHORS = (4, 14, 13, 0, 9, 2)

#: AQE's physical batches (AdaptiveSparkPlanExec), by the names PlanChangeLogger prints.
PREPARATIONS = "AQE Preparations"
REPLANNING = "AQE Replanning"
STAGE_OPTIMIZATION = "AQE Query Stage Optimization"
POST_STAGE = "AQE Post Stage Creation"
POST_PLANNER = "AQE Query Post Planner Strategy Rules"
AQE_PHYSICAL = frozenset({PREPARATIONS, REPLANNING, STAGE_OPTIMIZATION, POST_STAGE,
                          POST_PLANNER})
#: Those AQE runs only while the query runs (not when it plans, as explain does).
AQE_RUN = frozenset({REPLANNING, STAGE_OPTIMIZATION, POST_STAGE})
#: The batches of AQE's logical optimizer (AQEOptimizer) on 3.2-4.x; their rules are counted
#: when they run in a re-planning (before its `AQE Replanning` batch). A batch not named here
#: counts when its plans hold AQE's `LogicalQueryStage`.
AQE_LOGICAL = frozenset({"Propagate Empty Relations", "Dynamic Join Selection",
                         "Demote Broadcast Hash Join", "Eliminate Limits",
                         "Optimize One Row Plan", "User Provided Runtime Optimizers",
                         "Demote BroadcastHashJoin", "Eliminate Join to Empty Relation"})
#: The most operators of one block a finding is matched against (a rule that changed every
#: line of a deep plan is matched by its first ones).
MAX_TOUCHED = 64
#: A heading's name ends at ` ===` on its line; longer than this is not a heading.
MAX_NAME = 300
_NAME = re.compile(rb"([^\r\n=]{1,300}?) ===")
_BATCH_NO_EFFECT = re.compile(rb"Batch ([^\r\n]{1,300}?) has no effect\.")
_EXPRESSION_ID = re.compile(rb"#(\d{1,12})")
#: How a log message's first line starts (a log4j time stamp, a JSON record).
_MESSAGE_START = re.compile(rb"\s*(?:\[?\d|\{\")")
_HINT = re.compile(r"\b(left|right)Hint=\(strategy=(\w{1,60})")
#: An operator on one side of a plan line: tree glyphs, a codegen marker, the name, and for
#: the operators whose first words say what AQE made of them, those words.
_OPERATOR = re.compile(r"[\s:|+\-]*(?:[*^]\(\d{1,9}\)\s|[*^]\s?)?([A-Za-z_][\w$]{0,120})"
                       r"(\(skew=true\)|(?: (?:coalesced and skewed|coalesced|skewed|local))?)")


class _Event:
    """One heading found: `kind` is rule, result, no-effect, changed, final or application.
    (Slots: a log can hold millions of headings.)"""

    __slots__ = ("position", "kind", "name", "line", "ids", "removed", "added", "altered",
                 "touched", "hints", "logical_stage", "damage", "block_end", "bare")

    def __init__(self, position: int, kind: str, name: str = "", line: int = 0,
                 damage: str = "") -> None:
        self.position = position
        self.kind = kind
        self.name = name
        self.line = line
        self.ids: FrozenSet[str] = frozenset()
        self.removed: Tuple[str, ...] = ()
        self.added: Tuple[str, ...] = ()
        self.altered: Tuple[str, ...] = ()
        self.touched: Tuple[Tuple[str, str, FrozenSet[str]], ...] = ()
        self.hints: Tuple[str, ...] = ()
        self.logical_stage = False
        self.damage = damage
        self.block_end = 0  # where the plan lines read with it end
        self.bare = False  # a rule heading with nothing under it


@dataclass
class _Unit:
    """What goes to one query: a re-planning, or rules applied outside one."""

    line: int
    ids: set = field(default_factory=set)
    rules: List[RuleApplied] = field(default_factory=list)
    replanning: bool = False
    changed: Optional[bool] = None
    changed_line: Optional[int] = None
    added: Tuple[str, ...] = ()
    removed: Tuple[str, ...] = ()
    query: Optional[int] = None
    stream: Optional[int] = None  # the query its messages were read with, when one was named


#: A file's bytes are searched a window at a time, and each window's pages given back once
#: searched (a mapped file's pages count as the process's memory while mapped in).
WINDOW = 8 << 20


def _release(data, start: int, stop: int) -> None:
    """Give back the mapped pages of data[start:stop] (they are read again from the page
    cache should they be needed); nothing for bytes in memory."""
    advise = getattr(data, "madvise", None)
    flag = getattr(mmap, "MADV_DONTNEED", None)
    if advise is None or flag is None or stop <= start:
        return
    begin = start - start % mmap.PAGESIZE
    try:
        advise(flag, begin, stop - begin)
    except (OSError, ValueError):
        pass


def _find_all(data, markers: Sequence[Tuple[bytes, str]]) -> List[Tuple[int, str]]:
    """Where each marker stands in `data`, in order, searched a window at a time (a marker
    found at the start of a window and running past its end is found there)."""
    found: List[Tuple[int, str]] = []
    size = len(data)
    reach = max(len(marker) for marker, _ in markers) - 1
    for start in range(0, size, WINDOW):
        end = min(size, start + WINDOW)
        stop = min(size, end + reach)
        for marker, kind in markers:
            at = data.find(marker, start, stop)
            while 0 <= at < end:
                found.append((at, kind))
                at = data.find(marker, at + len(marker), stop)
        _release(data, start, end)
    found.sort()
    return found


_heading_search = None
#: The kind of each of HEADINGS, by its index.
_KINDS = tuple(kind for _, kind in HEADINGS)


def _heading_kernel():
    """The marker search (native.load) and its table of HEADINGS, made once."""
    global _heading_search
    if _heading_search is None:
        from .. import native

        kernel = native.load("aqe_inspect.sources._markers")
        _heading_search = (kernel, kernel.Table([marker for marker, _ in HEADINGS],
                                                HEADING_ANCHORS))
    return _heading_search


def _headings(data) -> List[Tuple[int, str, int]]:
    """Where each of HEADINGS stands in `data`, in order, with its kind and the number of
    its line: one pass over the bytes (`_markers_c`; its twin `_markers_py` searches each
    heading in turn), a window at a time when `data` is not bytes in memory (a heading
    found at the start of a window and running past its end is found there)."""
    kernel, table = _heading_kernel()
    kinds = _KINDS
    if data.__class__ is bytes:
        hits, _ = kernel.find_all(data, 0, len(data), table)
        return [(at, kinds[index], before + 1) for at, index, before in hits]
    return _headings_by_window(data, kernel, table, kinds)


def _headings_by_window(data, kernel, table, kinds) -> Iterator[Tuple[int, str, int]]:
    """`_headings` of a file's bytes (FileBytes) or a mapped file, a window at a time, each
    window's headings given before the next is read. A FileBytes keeps the window read (from
    a quarter window before it: a heading's line starts before it): the events read near
    its headings read no window again."""
    size = len(data)
    reach = max(len(marker) for marker, _ in HEADINGS) - 1
    keep = data.keep if isinstance(data, FileBytes) else None
    line = 1
    for start in range(0, size, WINDOW):
        end = min(size, start + WINDOW)
        stop = min(size, end + reach)
        if keep is not None:
            back = min(start, WINDOW // 4)
            window = keep(start - back, stop)
        else:
            back = 0
            window = data[start:stop]
        base = start - back
        hits, newlines = kernel.find_all(window, back, end - base, table)
        line_at = line
        line += newlines
        for at, index, before in hits:
            yield base + at, kinds[index], line_at + before
        _release(data, start, end)


def _newlines(data, start: int, stop: int) -> int:
    """`data[start:stop].count(b"\n")`, a window at a time (a slice of a mapped file is a
    copy)."""
    count = 0
    for at in range(start, stop, WINDOW):
        end = min(stop, at + WINDOW)
        count += data[at:end].count(b"\n")
        _release(data, at, end)
    return count


def has_plan_changes(data) -> bool:
    """Whether a log's bytes hold Spark's plan-change log."""
    if isinstance(data, (bytes, FileBytes)):  # (FileBytes: a window at a time, to the first)
        return data.find(SIGNATURE) >= 0
    return bool(_find_all(data, ((SIGNATURE, "rule"),)))


def attach_from_file(document: Document, path: str) -> Document:
    """`document` with each query's plan changes, when the file at `path` holds the
    plan-change log; else `document` itself (one byte search over the file)."""
    from .opening import open_file

    try:
        with open_file(path) as handle:
            if os.fstat(handle.fileno()).st_size == 0:
                return document
            # Read a window at a time, never mapped: a file cut while mapped (logrotate's
            # copytruncate) would end the process by SIGBUS; cut while read, it is an error.
            data = FileBytes(handle.fileno(), path)
            if not has_plan_changes(data):
                return document
            return attach(document, data)
    except (OSError, ValueError):
        return document  # read already: what cannot be mapped again adds nothing


class Stream:
    """The plan-change log read from a log's bytes as another reader reads them, a buffer
    at a time (skim.py: `feed`), so that the file is read once: the headings searched in
    each buffer's whole lines, their events read from it (a block that runs past a buffer
    is read with the next one, from its heading's line on).

    Only a log whose plan-change log shows in the first buffer is read so (`reading`): were
    it found later, the events before it would be gone with their buffers; past the first
    buffer, nothing is searched, and the file is read again (`attach_from_file`) should the
    skim think it holds the plan-change log (a log without one costs nothing more than
    before). `finish` says what was found."""

    #: What `finish` says when the buffers held no plan-change log.
    ABSENT = "absent"

    def __init__(self, eager: bool = False) -> None:
        """`eager`: the log is read whole from its first buffer on, SIGNATURE or not (an
        input that cannot be read again: standard input, a pipe); `finish` says ABSENT when
        no buffer held SIGNATURE, as the file's one search would."""
        self.state = "reading" if eager else "waiting"  # for SIGNATURE; or "off" (too late)
        self.eager = eager
        self.signed = False  # SIGNATURE was found (eager: in some buffer)
        self._reader = _EventReader()
        self._pending: List[Tuple[int, str, int]] = []  # headings found, not read yet
        self._scanned = 0  # the headings are searched up to this offset
        self._line = 1  # the number of the line at `_scanned`
        self._tail: Optional[Tuple[int, bytes]] = None  # the bytes of a heading not read yet
        self.size = 0  # the bytes seen: the end of the last buffer

    def feed(self, buffer: bytes, base: int, final: bool, scan=None) -> None:
        """The log's bytes from offset `base` (a line's start) on; `final`: to its end. Each
        buffer begins at or before the start of the line last not whole. `scan`: the
        marker kernel's Scan of `buffer` whose markers from its split on are those of
        HEADINGS (skim.py: the pass that finds its own markers finds the headings), used
        instead of a search of its own."""
        self.size = base + len(buffer)
        if self.state == "waiting":
            if base:
                # The buffers before this one are gone: the log is searched again, should
                # the skim think it holds the plan-change log (a log without one is not
                # searched here past its first buffer).
                self.state = "off"
                return
            if buffer.find(SIGNATURE, self._scanned) < 0:
                self._scanned = max(self._scanned, self.size - len(SIGNATURE) + 1)
                return
            self.state = "reading"
            self._scanned = 0
        if self.state != "reading":
            return
        data, data_base = buffer, base
        tail = self._tail
        if tail is not None and tail[0] < base:
            data_base, kept = tail
            data = kept + buffer[data_base + len(kept) - base:]
        upto = len(data) if final else data.rfind(b"\n") + 1
        start = self._scanned - data_base
        pending = self._pending
        if upto > start:
            if scan is not None and scan.buffer is buffer and self._scanned >= base:
                # (The bytes searched are the buffer's: data ends where it ends.)
                hits, newlines = scan.headings(self._scanned - base, data_base + upto - base)
                hits_base = base
            else:
                kernel, table = _heading_kernel()
                hits, newlines = kernel.find_all(data, start, upto, table)
                hits_base = data_base
            line = self._line
            kinds = _KINDS
            pending.extend([(hits_base + at, kinds[index], line + before)
                            for at, index, before in hits])
            if not self.signed:
                self.signed = any(index == 0 for _, index, _ in hits)  # (HEADINGS[0])
            self._line = line + newlines
            self._scanned = data_base + upto
        done = self._reader.read(data, data_base, pending, final)
        del pending[:done]
        self._tail = None
        if pending:
            first = pending[0][0] - data_base
            begin = data.rfind(b"\n", 0, first) + 1
            self._tail = (data_base + begin, data[begin:])

    def finish(self):
        """The events read and their notes; ABSENT when the log holds no plan-change log
        (all of it seen in the first buffer); None when it was not read here (`state`
        off)."""
        if self.state == "waiting" or self.eager and not self.signed:
            return self.ABSENT
        if self.state != "reading" or self._pending:
            return None
        return self._reader.events, self._reader.notes.said()


def attach_streamed(document: Document, path: str, stream: Optional[Stream], usable: bool
                    ) -> Document:
    """`document` with each query's plan changes: those `stream` read, when `usable` (the
    bytes it was fed are the file's, the file unchanged since: its size is what was read);
    else (or with no stream) read from the file again (`attach_from_file`)."""
    found = stream.finish() if usable and stream is not None else None
    if found is not None:
        try:
            unchanged = os.stat(path).st_size == stream.size
        except OSError:
            unchanged = False
        if unchanged:
            if found is Stream.ABSENT:
                return document
            return attach(document, None, found)
    return attach_from_file(document, path)


def attach_read_once(document: Document, stream: Optional[Stream]) -> Document:
    """`document` with each query's plan changes, read by `stream` (eager) from an input
    that cannot be read again (standard input, a pipe): what the same bytes in a file give."""
    found = stream.finish() if stream is not None else None
    if found is None or found is Stream.ABSENT:
        return document
    return attach(document, None, found)


def attach_from_text(document: Document, text: str) -> Document:
    data = text.encode("utf-8", "replace")
    return attach(document, data) if has_plan_changes(data) else document


def attach(document: Document, data, read: Optional[Tuple[List[_Event], List[str]]] = None
           ) -> Document:
    """`document` with the plan changes of `data` (a log's bytes) given to its queries; or
    of the events `read` from them already (`read_events`), when given."""
    adaptive = [index for index, query in enumerate(document.queries) if query.adaptive]
    if not adaptive:
        return document
    events, notes = read if read is not None else read_events(data)
    starts = [event.line for event in events if event.kind == "application"]
    # Each application's messages go to its own queries (the expression ids of two
    # applications are alike): the messages and queries after the N-th application start.
    segments: Dict[int, Tuple[List[_Event], List[int]]] = {}
    for event in events:
        if event.kind != "application":
            segments.setdefault(bisect_right(starts, event.line), ([], []))[0].append(event)
    for index in adaptive:
        segment = segments.get(bisect_right(starts, document.queries[index].line))
        if segment is not None:
            segment[1].append(index)
    units: List[_Unit] = []
    aqe_messages = False
    ambiguous: List[str] = []
    for segment_events, segment_queries in segments.values():
        if not segment_queries:
            continue
        owners = _Owners({index: _query_ids(document.queries[index])
                          for index in segment_queries}, segment_queries,
                         {index: (document.queries[index].ran_from,
                                  document.queries[index].ended_by)
                          for index in segment_queries})
        found, messages, guessed = _units(segment_events, owners)
        _assign(found, owners, segment_queries)
        units.extend(found)
        aqe_messages = aqe_messages or messages
        ambiguous.extend(guessed)
    if not units:
        return document
    notes = notes + summarised(ambiguous)
    given: Dict[int, List[_Unit]] = {}
    for unit in units:
        given.setdefault(unit.query, []).append(unit)
    queries = list(document.queries)
    for index in adaptive:
        mine = given.get(index)
        if not mine:
            continue
        replannings = []
        rules: List[RuleApplied] = []
        for unit in mine:
            rules.extend(unit.rules)
            if unit.replanning:
                replannings.append(Replanning(
                    number=len(replannings) + 1, line=unit.line, rules=tuple(unit.rules),
                    changed=unit.changed if aqe_messages else None,
                    changed_line=unit.changed_line, added=unit.added, removed=unit.removed))
        # The log's notes once, on the first query given its plan changes.
        queries[index] = dataclasses.replace(queries[index], plan_changes=PlanChanges(
            replannings=tuple(replannings), rules=tuple(rules), notes=tuple(notes)))
        notes = []
    return dataclasses.replace(document, queries=tuple(queries))


#: A query whose end the log does not show: it may be running to the log's end.
NEVER = 1 << 62


class _Owners:
    """Which query a plan-change message is of, among the queries of one application: one
    that may be running where the message stands (`advance`: the lines go by in order), and
    of those, the one sharing most of its expression ids (through an index of each id's
    queries: one look-up per id, whatever the number of queries).

    A query may be running up to the line that shows it ended (AQE's `Final plan:` of it,
    its plan printed after the action: `Query.ended_by`): an ended query receives no later
    message. Where its plan is printed before the action (`Query.ran_from`), AQE's run of
    it comes after that line: a message before it is of the query only when no query that
    may be running then shares its ids (the query's planning, logged before its plan is
    printed). Queries run one after the other over the same DataFrames share expression ids;
    where several share most of a message's, it goes with the message before it, else to
    the one that ends first: the query running then. Queries are shown running at once only
    where the log shows both running (`shown`): each named by a message of AQE's run (its
    plan printed before the action is not enough: it may never run), and neither ended."""

    def __init__(self, query_ids: Dict[int, FrozenSet[str]], candidates: Sequence[int],
                 spans: Optional[Dict[int, Tuple[int, int]]] = None):
        self.order = {index: rank for rank, index in enumerate(candidates)}
        self.query_ids = query_ids
        self.holders: Dict[str, List[int]] = {}
        for index in candidates:
            for expression_id in query_ids[index]:
                self.holders.setdefault(expression_id, []).append(index)
        spans = spans or {}
        self.start = started = {index: spans.get(index, (0, 0))[0] for index in candidates}
        self.end = {index: spans.get(index, (0, 0))[1] or NEVER for index in candidates}
        order = self.order
        self._starts = sorted((started[index], order[index], index) for index in candidates
                              if started[index])
        self._ends = sorted((self.end[index], order[index], index) for index in candidates)
        self._next_start = self._next_end = 0
        #: The queries that may be running at the line last advanced to; `shown`, those of
        #: them the log shows running.
        self.open = {index for index in candidates if not started[index]}
        self.shown: set = set()
        self._ended: set = set()
        self._future = {index for index in candidates if started[index]}  # not open yet

    def advance(self, line: int) -> None:
        """To `line` (never back): the queries printed before their action by then may be
        running, those ended before it no longer."""
        starts, ends = self._starts, self._ends
        while self._next_start < len(starts) and starts[self._next_start][0] <= line:
            index = starts[self._next_start][2]
            self._next_start += 1
            self._future.discard(index)
            if index not in self._ended:
                self.open.add(index)
        while self._next_end < len(ends) and ends[self._next_end][0] < line:
            index = ends[self._next_end][2]
            self._next_end += 1
            self._ended.add(index)
            self.open.discard(index)
            self.shown.discard(index)
            self._future.discard(index)

    def running(self, index: Optional[int], still: bool = True) -> None:
        """A message of AQE's run (a batch AQE runs only while a query runs) was the query's,
        by its ids: the log shows it running; or (not `still`) AQE's `Final plan:` of it, or
        of a plan inside it (a subquery's, whose ids it holds: the query is not closed, it
        is shown running again by its next message of AQE's run)."""
        if index is not None and index in self.open:
            if still:
                self.shown.add(index)
            else:
                self.shown.discard(index)

    def _first_to_end(self, among: Optional[Iterable[int]] = None) -> Optional[int]:
        """Of `among` (default: every open query), the one that ends first, one shown running
        before one that is not; with none open, the query printed next before its action (a
        query's planning is logged before its plan is printed)."""
        if among is not None:
            end, order, shown = self.end, self.order, self.shown
            return min(among, key=lambda index: (index not in shown, end[index], order[index]),
                       default=None)
        ends, open_, shown = self._ends, self.open, self.shown
        first = None
        for at in range(self._next_end, len(ends)):
            index = ends[at][2]
            if index in open_:
                if index in shown:
                    return index
                if first is None:
                    first = index
                    if not shown:
                        break
        if first is not None:
            return first
        if self._next_start < len(self._starts):
            return self._starts[self._next_start][2]
        return None

    def choose(self, ids: FrozenSet[str], current: Optional[int]) -> Tuple[Optional[int], int]:
        """The query of a message naming `ids` at the line last advanced to, and, when that
        is a guess, how many queries were shown running at once among those it could be of
        (0: decided). Of the queries that may be running then, the one sharing most of the
        ids; else, when none of them shares one, the query printed later before its action
        that does; else the query of the message before (`current`) when it may be, or the
        one that ends first (with none running, the next printed before its action)."""
        open_ = self.open
        pool: Optional[List[int]] = None
        if ids:
            shared = self._shared(ids, open_) if open_ else None
            if shared:
                most = max(shared.values())
                pool = [index for index, count in shared.items() if count == most]
                if len(pool) == 1:
                    return pool[0], 0
            elif self._future:
                later = self._shared(ids, self._future)
                if later:
                    most = max(later.values())
                    return min((index for index, count in later.items() if count == most),
                               key=lambda index: (self.start[index], self.order[index])), 0
        if pool is None:
            if len(open_) <= 1:
                return (next(iter(open_)) if open_ else self._first_to_end()), 0
            chosen = current if current in open_ else self._first_to_end()
            return chosen, self._at_once(open_)
        chosen = current if current in pool else self._first_to_end(pool)
        return chosen, self._at_once(pool)

    def _at_once(self, among: Iterable[int]) -> int:
        """How many of `among` are shown running (0 for fewer than two)."""
        shown = self.shown
        count = len(shown) if among is self.open else sum(index in shown for index in among)
        return count if count > 1 else 0

    def _shared(self, ids: FrozenSet[str], among: set) -> Counter:
        """How many of `ids` each query of `among` holds (those holding none left out)."""
        shared: Counter = Counter()
        if len(among) <= 8:  # a few queries: each one's ids asked
            query_ids = self.query_ids
            for index in among:
                count = len(ids & query_ids[index])
                if count:
                    shared[index] = count
            return shared
        holders = self.holders
        for expression_id in ids:
            held = holders.get(expression_id)
            if held:
                shared.update(index for index in held if index in among)
        return shared

    def of(self, ids: Iterable[str]) -> Optional[int]:
        """The query sharing most of `ids`, whenever it ran (the first of the candidates on a
        tie)."""
        shared: Counter = Counter()
        holders = self.holders
        for expression_id in ids:
            held = holders.get(expression_id)
            if held:
                shared.update(held)
        if not shared:
            return None
        order = self.order
        return min(shared, key=lambda index: (-shared[index], order[index]))


def _query_ids(query: Query) -> FrozenSet[str]:
    from ..plan.align import expression_ids

    ids: set = set()
    for node in query.walk():
        ids.update(expression_ids(node))
    return frozenset(ids)


# --- the bytes -> events ---------------------------------------------------------------------

def read_events(data) -> Tuple[List[_Event], List[str]]:
    """Every plan-change heading and AQE message of `data`, in order, with its line; and the
    notes on blocks that could not be read."""
    reader = _EventReader()
    reader.read(data, 0, _headings(data), True)
    return reader.events, reader.notes.said()


class _EventReader:
    """The events of the headings found in a log's bytes, read in order (`read`), all at
    once or a piece of the log at a time (`Stream`: what it has read so far is kept here,
    in the log's offsets)."""

    __slots__ = ("events", "notes", "line", "record_end", "released", "begin", "end",
                 "line_done", "no_effect", "consumed")

    def __init__(self) -> None:
        self.events: List[_Event] = []
        self.notes = _Notes()
        self.line = 1
        self.record_end = -1  # the end of the JSON log record last read
        self.released = 0  # the mapped pages before this are given back
        # Each line's bounds are found once, and what its markers can be: a heading starts
        # it, one AQE message (the first) and one `has no effect.` (its last) stand in it. A
        # marker inside a block already read (its plans' text) is part of that block, not an
        # event: each byte of the log is read once, whatever the markers in it.
        self.begin = self.end = -1
        self.line_done = False  # the line's AQE message was read
        self.no_effect: Optional[Tuple[int, str]] = None  # the line's last `Batch X has no effect.`
        self.consumed = 0  # the blocks read end here

    def read(self, data, base: int, found: Iterable[Tuple[int, str, int]], final: bool
             ) -> int:
        """Read the events of the headings `found` (their offsets in the log, kinds, lines)
        from `data`, the log's bytes from offset `base` on (from a line's start); returns
        how many were read. Unless `final` (data runs to the log's end), a heading whose
        event needs bytes past data's end (its block not ended in it) stops the reading:
        it and those after it are read again, with more bytes."""
        events = self.events
        notes = self.notes
        line, record_end, released = self.line, self.record_end, self.released
        begin, end, line_done = self.begin, self.end, self.line_done
        no_effect, consumed = self.no_effect, self.consumed
        done = 0
        for position, kind, line_of in found:
            if position < record_end or position < consumed:
                done += 1
                continue  # read with its record, or its block
            if not final:
                kept = (line, begin, end, line_done, no_effect)
            at = position - base
            if position > end:
                line = line_of
                begin, end = _line_bounds(data, at)
                begin += base
                end += base
                line_done, no_effect = False, None
                if begin - released >= WINDOW:
                    _release(data, released - base, begin - base)  # the blocks read before
                    released = begin
                if data[begin - base:begin - base + 64].lstrip()[:2] == b'{"':
                    # Spark 4's structured logging: the message is a JSON string of its
                    # record.
                    record_end = end
                    inner = _record_events(data[begin - base:end - base], line)
                    for event in inner:
                        if event.damage:
                            notes.add(line, event.damage)
                            event.damage = ""
                    events.extend(inner)
                    done += 1
                    continue
            if kind == "no-effect":
                if no_effect is None:
                    ended, name = _last_no_effect(data, begin - base, end - base)
                    no_effect = (ended + base if ended >= 0 else ended, name)
                if no_effect[0] != position + len(NO_EFFECT):
                    done += 1
                    continue
                event = _Event(position, "no-effect", no_effect[1], line)
            elif kind in ("changed", "final"):
                if line_done:
                    done += 1
                    continue
                event = _event(data, at, kind, line, begin - base, end - base)
                line_done = event is not None
            else:
                event = _event(data, at, kind, line, begin - base, end - base)
            if event is None:
                done += 1
                continue
            if not final and data.find(b"\n", event.block_end) < 0:
                # Its block (or the line after it) goes on past these bytes.
                line, begin, end, line_done, no_effect = kept
                break
            if base:
                event.position = position
                if event.block_end:
                    event.block_end += base
            consumed = max(consumed, event.block_end)
            if event.damage:
                notes.add(line, event.damage)
                event.damage = ""
            done += 1
            if event.bare and events:
                last = events[-1]
                if last.bare and last.name == event.name:
                    # Bare headings of one rule, one after the other, are that rule's
                    # application once: the note counts them (a log of a million is
                    # held as one).
                    continue
            events.append(event)
        self.line, self.record_end, self.released = line, record_end, released
        self.begin, self.end, self.line_done = begin, end, line_done
        self.no_effect, self.consumed = no_effect, consumed
        return done


class _Notes:
    """Notes `line N: <text>` kept as `summarised` says them, as they come: each text once,
    with its first line and how many more lines say it (a log of a million damaged headings
    holds one entry, not a million notes)."""

    __slots__ = ("first",)

    def __init__(self) -> None:
        self.first: Dict[str, List] = {}  # text -> [first note, more lines, last line]

    def add(self, line, text: str) -> None:
        """`text` said at `line` (a number, or a note's head `line N`)."""
        held = self.first.get(text)
        if held is None:
            head = line if isinstance(line, str) else f"line {line}"
            self.first[text] = [f"{head}: {text}", 0, line]
        elif line != held[2]:
            held[1] += 1
            held[2] = line

    def said(self) -> List[str]:
        out = []
        for note, more, last in self.first.values():
            if more:
                last = last if isinstance(last, str) else f"line {last}"
                note += f" (and {more:,} more like it, to {last})"
            out.append(note)
        return out


def summarised(notes: Iterable[str]) -> List[str]:
    """Notes `line N: <text>` with the same text said once, at its first line, with how many
    more lines say it (a log of a million damaged headings gives one note, not a million)."""
    kept = _Notes()
    for note in notes:
        head, _, text = note.partition(": ")
        kept.add(head, text)
    return kept.said()


def _record_events(record: bytes, line: int) -> List[_Event]:
    """The events of one JSON log record's message (Spark 4's structured logging), each at
    the record's line; none when it is not a JSON record with a message."""
    from . import deepjson

    try:
        value = deepjson.loads(record.decode("utf-8", "replace"))
    except ValueError:
        return []
    message = value.get("msg") if isinstance(value, dict) else None
    if not isinstance(message, str) or message.lstrip()[:2] == '{"':
        return []
    events, _ = read_events(message.encode("utf-8", "replace"))
    for event in events:
        event.line = line
    return events


def _line_bounds(data, position: int) -> Tuple[int, int]:
    begin = data.rfind(b"\n", 0, position) + 1
    end = data.find(b"\n", position)
    return begin, (len(data) if end < 0 else end)


def _last_no_effect(data, begin: int, end: int) -> Tuple[int, str]:
    """Where the last `Batch <name> has no effect.` of the line data[begin:end] ends, and
    its name; (-1, "") when there is none."""
    line = data[begin:end]
    first = line.find(b"Batch ")
    if first >= 0 and b"\r" not in line and line.find(b"Batch ", first + 6) < 0:
        # One `Batch ` only: the regex's one match is its name up to the first ` has no
        # effect.` after it (the shortest, one to MAX_NAME bytes, none a line break).
        after = line.find(NO_EFFECT, first + 7)
        if after < 0 or after - (first + 6) > MAX_NAME:
            return -1, ""
        return begin + after + len(NO_EFFECT), line[first + 6:after].decode("utf-8", "replace")
    match = None
    for match in _BATCH_NO_EFFECT.finditer(line):
        pass
    if match is None:
        return -1, ""
    return begin + match.end(), match.group(1).decode("utf-8", "replace")


def _event(data, position: int, kind: str, line: int, begin: int, end: int
           ) -> Optional[_Event]:
    """The event of a rule or batch heading, or an AQE message, at `position` on the line
    data[begin:end]; None when the marker is not one."""
    if kind in ("rule", "result"):
        if position != begin:
            return None  # a heading starts its line (the log message before it is empty)
        skip = len(SIGNATURE) if kind == "rule" else len(RESULT)
        named = _NAME.match(data[position + skip:end])  # a slice: data may be a FileBytes
        if named is None:
            what = "rule" if kind == "rule" else "batch"
            return _Event(position, kind, "", line,
                          damage=f"a plan-change {what} heading with no name closed by "
                                 f"' ===' was skipped")
        event = _Event(position, kind, _name(named.group(1)), line)
        _read_block(data, end + 1, event)
        return event
    # AQE's own messages: at a message's start (after a log prefix's `: `) or a line's.
    before = data[max(begin, position - 2):position]
    if position != begin and before not in (b": ", b"- ") and not before.endswith(b" "):
        return None
    if kind == "application":
        if position != begin and before != b": ":
            return None
        event = _Event(position, "application", "", line)
        event.block_end = position
        return event
    if kind == "changed":
        event = _Event(position, "changed", "", line)
        if data[position:end].rstrip().endswith(b"Plan changed:"):
            _read_block(data, end + 1, event)
        else:  # `Plan changed from <plan> to <plan>` (Spark 3.0-3.1): ids only
            event.block_end = _block_end(data, end + 1)
            event.ids = _ids(data[position:event.block_end])
        return event
    event = _Event(position, "final", "", line)
    event.block_end = _block_end(data, end + 1)
    event.ids = _ids(data[position:event.block_end])
    return event


#: The names of rules and batches read lately, by their bytes: a log names the same few again
#: and again (one string each, not one per heading). Emptied when it holds NAMES_KEPT.
_names: Dict[bytes, str] = {}
NAMES_KEPT = 1 << 12


def _name(raw: bytes) -> str:
    known = _names.get(raw)
    if known is None:
        if len(_names) >= NAMES_KEPT:
            _names.clear()
        known = _names[raw] = raw.decode("utf-8", "replace").strip()
    return known


def _block_end(data, start: int) -> int:
    """Where the plan lines from `start` end: at the first line that is blank or does not
    begin as a side-by-side plan line does (` ` or `!`: a log message, the file's end)."""
    at = start
    size = len(data)
    while at < size:
        end = data.find(b"\n", at)
        end = size if end < 0 else end
        first = data[at:at + 1]
        if first not in (b" ", b"!") or not data[at:end].strip():
            return at
        at = end + 1
    return size


#: The ids of a block naming none (one set for all of them).
_NO_IDS: FrozenSet[str] = frozenset()


def _ids(piece: bytes) -> FrozenSet[str]:
    # Each id decoded once (a plan's ids stand on both sides, and many times on each).
    found = set(_EXPRESSION_ID.findall(piece))
    return frozenset(map(bytes.decode, found)) if found else _NO_IDS


def _read_block(data, start: int, event: _Event) -> None:
    """The plans side by side under a heading: the operators that came, went or changed."""
    stop = _block_end(data, start)
    event.block_end = stop
    piece = data[start:stop]
    event.ids = _ids(piece)
    event.logical_stage = b"LogicalQueryStage" in piece
    if not piece.strip():
        end = data.find(b"\n", stop)
        following = data[stop:len(data) if end < 0 else end]
        if following.strip() and not _MESSAGE_START.match(following) and \
                not following.startswith(b"=== "):
            event.damage = (f"the plans of the plan-change block "
                            f"'{_simple(event.name) or 'Plan changed'}' are not side by side "
                            "as Spark prints them; its operators are not known")
        elif event.kind == "rule":
            event.damage = (f"the plan-change block of {_simple(event.name)} holds no plans "
                            "(cut short?); the rule is kept, its operators are not known")
        event.bare = event.kind == "rule"
        return
    whole = piece.decode("utf-8", "replace").rstrip("\n")
    lines = whole.split("\n")
    if "\r" in whole:
        lines = [text.rstrip("\r") for text in lines]
    column = right_column(lines)
    if column is None:
        event.damage = (f"the plans of the plan-change block "
                        f"'{_simple(event.name) or 'Plan changed'}' are not side by side as "
                        "Spark prints them; its operators are not known")
        return
    cut = column - 3
    lefts = [text[1:cut].rstrip() for text in lines]
    rights = [text[column:].rstrip() for text in lines]
    marked = [text[:1] == "!" for text in lines]
    operator = _operator
    before = [operator(side) for side in lefts]
    # A line the rule left as it was shows the same text on both sides: its operator is
    # the left one's (most lines of most blocks).
    after = [name if left == right else operator(right)
             for name, left, right in zip(before, lefts, rights)]
    if before == after:  # the same operators on both sides: none came or went
        came = went = Counter()
    else:
        named_after = Counter(filter(None, after))
        named_before = Counter(filter(None, before))
        came = named_after - named_before
        went = named_before - named_after
    event.added = tuple(sorted(came.elements()))
    event.removed = tuple(sorted(went.elements()))
    if not came and not went:
        event.altered = tuple(dict.fromkeys(name for name, mark in zip(after, marked)
                                            if name and mark))
    right_heads: Optional[_Heads] = None
    if came:
        right_heads = _Heads(rights)
        # The lines added: those of an added operator's name with no line of that name and
        # the same first line below it on the left (the others only moved down).
        left = _Heads(lefts)
        left_heads = Counter((name, left[index]) for index, name in enumerate(before)
                             if name in came)
        wanted = []
        for index, name in enumerate(after):
            if name in came and marked[index]:
                key = (name, right_heads[index])
                if left_heads[key] > 0:
                    left_heads[key] -= 1
                else:
                    wanted.append(index)
    elif not went:
        wanted = [index for index, name in enumerate(after) if name and marked[index]]
        if wanted:
            right_heads = _Heads(rights)
    else:
        wanted = []
    event.touched = tuple((after[i], right_heads[i], _subtree_ids(right_heads, i))
                          for i in wanted[:MAX_TOUCHED])
    if b"Hint=" in piece:  # (else neither side holds a hint)
        gained = Counter(_hints(rights)) - Counter(_hints(lefts))
        event.hints = tuple(sorted(gained.elements()))


def _hints(sides: Sequence[str]) -> List[str]:
    """The join hints a plan's lines hold: `rightHint=no_broadcast_hash`."""
    return [f"{side}Hint={strategy}" for text in sides if "Hint=" in text
            for side, strategy in _HINT.findall(text)]


def _head(text: str) -> str:
    """A plan line's operator and arguments, blanks, tree glyphs and codegen marker off."""
    match = _OPERATOR.match(text)
    body = text[match.start(1):] if match else text
    return "".join(body.split())


def _depth(text: str) -> int:
    return len(text) - len(text.lstrip(" :|+-"))


class _Heads:
    """`heads[i]`: for line i of one plan, the text of the first line at or below it naming
    an expression id (`_head`; "" for none). Which line that is, is found for every line in
    one pass from the bottom up; its text is made only for the lines asked for, once each."""

    __slots__ = ("sides", "depth", "lines", "made", "ids")

    def __init__(self, sides: Sequence[str]):
        self.sides = sides
        self.depth = depth = [_depth(text) for text in sides]
        lines: List[int] = [-1] * len(sides)  # the line whose _head is line i's; -1: none
        stack: List[int] = []  # lines whose subtree is open, deepest last
        for index in range(len(sides) - 1, -1, -1):
            child_line = -1
            while stack and depth[stack[-1]] > depth[index]:
                child = stack.pop()
                if lines[child] >= 0:  # the first child's, printed first
                    child_line = lines[child]
            text = sides[index]
            lines[index] = index if "#" in text and _EXPRESSION_ID.search(
                text.encode("utf-8", "replace")) else child_line
            stack.append(index)
        self.lines = lines
        self.made: Dict[int, str] = {}
        self.ids: Dict[int, List[bytes]] = {}  # the ids each line names (_subtree_ids)

    def __getitem__(self, index: int) -> str:
        line = self.lines[index]
        if line < 0:
            return ""
        head = self.made.get(line)
        if head is None:
            head = self.made[line] = _head(self.sides[line])
        return head


def _subtree_ids(heads: _Heads, index: int) -> FrozenSet[str]:
    """The expression ids of a plan's line and of the lines below it (deeper indented, up to
    the first that is not); `heads`: that plan's lines, their depths, each line's ids (read
    once for all the lines asked about)."""
    sides, depth, read = heads.sides, heads.depth, heads.ids
    top = depth[index]
    ids = set()
    for at in range(index, len(sides)):
        if at > index and depth[at] <= top:
            break
        found = read.get(at)
        if found is None:
            found = read[at] = _EXPRESSION_ID.findall(sides[at].encode("utf-8", "replace"))
        ids.update(found)
    return frozenset(found.decode() for found in ids)


def right_column(lines: Sequence[str]) -> Optional[int]:
    """Where the right-hand plan starts in Spark's side-by-side lines (`sideBySide`: a mark,
    the left line padded to the longest, three blanks, the right line): the first column
    with three blanks before it on every line that reaches it. None when there is none.

    A line allows the columns from three past its end, and those right after three of its
    blanks. From column 4, each line in turn moves the column to the next it allows (one
    search for three blanks), until every line allows it: a pass over the lines, again only
    when one moved it (rarely twice), so a block of thousands of long lines is read in about
    one pass. The longest line's end reached, the right-hand side is past every line: the
    right one is empty (a rule that removed everything) or shorter than the left, and it
    starts three blanks after the longest line's end."""
    if not lines or any(text[:1] not in (" ", "!") for text in lines):
        return None
    stripped = [text.rstrip() for text in lines]
    longest = max(len(text) for text in stripped)
    if longest < 2:
        return None
    column = 4
    moved = True
    while moved and column < longest:
        moved = False
        for text in stripped:
            if column < len(text) + 3:
                at = text.find("   ", column - 3)
                allowed = at + 3 if at >= 0 else len(text) + 3
                if allowed > column:
                    column = allowed
                    moved = True
                    if column >= longest:
                        break
    return column if column < longest else longest + 3


#: The operator of each plan line read lately (`_operator`), lines of up to OPERATOR_LINE
#: characters: a query's rule blocks print its plan again and again, mostly the same lines.
#: Emptied when it holds OPERATORS_KEPT (a few megabytes at most).
_operators: Dict[str, str] = {}
OPERATORS_KEPT = 1 << 13
OPERATOR_LINE = 256


def _operator(side: str) -> str:
    known = _operators.get(side)
    if known is not None:
        return known
    match = _OPERATOR.match(side)  # (a match holds a name: the side is not blank)
    name = "" if match is None else match.group(1) + match.group(2)
    if len(side) <= OPERATOR_LINE:
        if len(_operators) >= OPERATORS_KEPT:
            _operators.clear()
        _operators[side] = name
    return name


def _simple(name: str) -> str:
    """`org.apache.spark.sql.execution.adaptive.OptimizeSkewedJoin` -> `OptimizeSkewedJoin`;
    an inner object's `Optimizer$FinishAnalysis` -> `FinishAnalysis`."""
    return name.rsplit(".", 1)[-1].rsplit("$", 1)[-1] if name else ""


# --- events -> units (re-plannings, stage optimizations) -------------------------------------

class _Stream:
    """The messages of one query (concurrent queries' messages interleave in a driver log):
    rules since its last batch result, logical rules since its last AQE batch, its last
    re-planning waiting for `Plan changed`."""

    __slots__ = ("pending", "logical", "replanning")

    def __init__(self) -> None:
        self.pending: List[_Event] = []
        self.logical: List[Tuple[_Event, str]] = []
        self.replanning: Optional[_Unit] = None


#: The note on a message no query's expression ids name, read while queries ran at once.
AMBIGUOUS = ("a plan-change message names no expression id of one query while {count} queries "
             "ran at once; it is given to the query of the message before it, else to the one "
             "that ended first")


def _units(events: Iterable[_Event], owners: Optional["_Owners"] = None
           ) -> Tuple[List[_Unit], bool, List[str]]:
    """AQE's re-plannings and the rules it applied outside them, in log order; whether the
    log holds AQE's own messages (`Plan changed:`, `Final plan:`), without which a kept plan
    cannot be told from a changed one; and the notes on messages given to a query by guess.

    Each message goes to a query that may be running where it stands, the one its
    expression ids name (`owners.choose`), and is read with that query's other messages:
    the messages of queries run at once interleave. A message naming none of them goes with
    the message before it; when more than one query is shown running then, that is a guess,
    and a note says so."""
    units: List[_Unit] = []
    notes: List[str] = []
    aqe_messages = False
    streams: Dict[Optional[int], _Stream] = {}
    current: Optional[int] = None  # the query of the last message given one
    guessed: Dict[int, int] = {}  # the rules given to a query by guess (by id of the event):
    #                               how many queries ran at once then

    def note(line: int, count: int) -> None:
        notes.append(f"line {line}: " + AMBIGUOUS.format(count=count))

    for event in events:
        guess = 0  # when the event's query is a guess: how many queries ran at once
        if owners is not None:
            owners.advance(event.line)
            key, guess = owners.choose(event.ids, current)
            if not guess:
                if event.kind in ("result", "no-effect") and event.name in AQE_RUN:
                    owners.running(key)
                elif event.kind == "final":
                    owners.running(key, still=False)
        else:
            key = current
        if key is not None and current is None and None in streams:
            streams[key] = streams.pop(None)  # what came before any query was named
        if key is not None:
            current = key
        stream = streams.get(key)
        if stream is None:
            stream = streams[key] = _Stream()
        if event.kind == "rule":
            stream.pending.append(event)
            if guess:
                guessed[id(event)] = guess
            continue
        if event.kind in ("result", "no-effect"):
            batch = event.name
            if event.kind == "no-effect":
                # A batch with no effect applied no rule (Spark logs a rule only when it
                # changed the plan): the rules waiting are another batch's, one this batch
                # ran inside (4.x canonicalizes expressions while AQE re-plans: `Batch
                # CleanExpressions has no effect.` between EnsureRequirements and the result
                # of `AQE Replanning`), or, with queries running at once, another query's.
                rules = []
            else:
                rules, stream.pending = stream.pending, []
            if batch not in AQE_PHYSICAL:
                for rule in rules:
                    if batch in AQE_LOGICAL or rule.logical_stage:
                        stream.logical.append((rule, batch))
                continue
            if batch == POST_PLANNER:
                continue
            if batch == PREPARATIONS:
                stream.logical = []  # the optimizer's rules before AQE began: not AQE's
                continue
            applied = [_applied(rule, batch) for rule in rules]
            if batch == REPLANNING:
                unit = _Unit(line=event.line, replanning=True, changed=False, stream=key)
                unit.rules = [_applied(rule, name) for rule, name in stream.logical] + applied
                for rule, _ in stream.logical:
                    unit.ids.update(rule.ids)
                for rule in rules:
                    unit.ids.update(rule.ids)
                unit.ids.update(event.ids)
                was = guess or max((guessed.get(id(rule), 0) for rule, _ in stream.logical),
                                   default=0)
                if was:
                    note(event.line, was)
                stream.logical = []
                units.append(unit)
                stream.replanning = unit
            elif applied:
                unit = _Unit(line=rules[0].line, rules=applied, stream=key)
                for rule in rules:
                    unit.ids.update(rule.ids)
                if guess and not unit.ids:
                    note(event.line, guess)
                units.append(unit)
            for rule in rules:
                if id(rule) in guessed:
                    note(rule.line, guessed[id(rule)])
            continue
        if event.kind == "changed":
            aqe_messages = True
            replanning = stream.replanning
            if replanning is not None and replanning.changed_line is None and (
                    not replanning.ids or not event.ids or replanning.ids & event.ids):
                replanning.changed = True
                replanning.changed_line = event.line
                replanning.added, replanning.removed = event.added, event.removed
                replanning.ids.update(event.ids)
                stream.replanning = None
                if guess:
                    note(event.line, guess)
            continue
        if event.kind == "final":
            aqe_messages = True
            stream.replanning = None
    return units, aqe_messages, notes


def _applied(event: _Event, batch: str) -> RuleApplied:
    return RuleApplied(rule=_simple(event.name), line=event.line, batch=batch,
                       qualified=event.name, removed=event.removed, added=event.added,
                       altered=event.altered, touched=event.touched,
                       hints=event.hints)


def _assign(units: List[_Unit], owners: _Owners, candidates: Sequence[int]) -> None:
    """Give each unit the query its messages were read with (`_units`: one running where
    they stand); a unit read with none, the query sharing most of its expression ids, else
    the unit before it (or, at the start, the one after it)."""
    for unit in units:
        unit.query = unit.stream
        if unit.query is None and unit.ids:
            unit.query = owners.of(unit.ids)
    previous: Optional[int] = None
    for unit in units:
        if unit.query is None:
            unit.query = previous
        previous = unit.query
    following: Optional[int] = None
    for unit in reversed(units):
        if unit.query is None:
            unit.query = following
        following = unit.query
    if len(candidates) == 1:
        for unit in units:
            if unit.query is None:
                unit.query = candidates[0]
