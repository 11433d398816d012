"""From an event log's bytes to its SQL executions, streamed.

An event log is one JSON object a line; almost all of its bytes are task and stage events
this reader never needs. So lines are not split one by one: each chunk is searched with
`bytes.find` for the few events kept (SQL events, the application's start, version and
properties), newlines are counted with `bytes.count` to name lines, and only the lines found
are decoded as JSON.

Per open execution only the start event and the LAST `SparkListenerSQLAdaptiveExecutionUpdate`
are kept, as raw bytes, with the count of updates (AQE's re-plans), the driver-side metric
values (`SparkListenerDriverAccumUpdates`: partition counts, coalesced and skew figures,
partition sizes) and the run-time evidence of its stages (runtime.py): the raw
`SparkListenerStageCompleted` events of the stages it submitted (their metric totals) and,
only when asked (`task_metrics`), each successful task's metric updates. An execution is
handed on at its `SparkListenerSQLExecutionEnd`, or at the end of the log marked as not
finished. Memory is bounded by the largest event and the executions open at once.

`build_query` turns one such execution into a `Query` (in a worker process when there are many):
the final plan text (the last update's description, which prints the initial plan too) is
parsed; when it is missing or cut, the tree is built from `sparkPlanInfo` (planinfo.py).
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Generator, Iterator, List, Mapping, Optional, Tuple

from ...errors import InspectError
from ...model import Application, Execution, Query
from . import codecs
from .planinfo import adaptive_tree, attach_metrics, build_tree, info_carriers, read_description
from .runtime import (COMPLETED, STAGE_EVENT, SUBMITTED, TASK_END, Evidence, RunTime, stage_head,
                      submitted_stage, task_result)

SQL_EVENT = b'"Event":"org.apache.spark.sql.execution.ui.SparkListener'
START = b"SQLExecutionStart\""
END = b"SQLExecutionEnd\""
UPDATE = b"SQLAdaptiveExecutionUpdate\""
ACCUMS = b"DriverAccumUpdates\""
LOG_START = b'"Event":"SparkListenerLogStart"'
APP_START = b'"Event":"SparkListenerApplicationStart"'
ENVIRONMENT = b'"Event":"SparkListenerEnvironmentUpdate"'
#: Databricks writes no SparkListenerLogStart; this event of its own carries the version.
DATABRICKS_START = b'"Event":"DBCEventLoggingListenerMetadata"'
APP_EVENTS = (LOG_START, DATABRICKS_START, APP_START, ENVIRONMENT)
#: Where an SQL event says which execution it belongs to (Spark writes it second).
EXECUTION_ID = re.compile(rb'"executionId":(\d+)')
ID_WINDOW = 400

ORIGIN = "event log"
#: The AQE updates of one execution a timeline keeps (the rest are counted, with a note).
MAX_REPLANS_KEPT = 32

#: The settings that decide what AQE does (every key the why-not explainers read), kept from
#: the application's properties and each execution's `modifiedConfigs`.
AQE_CONFIG_PREFIXES = ("spark.sql.adaptive.",)
AQE_CONFIGS = frozenset((
    "spark.sql.autoBroadcastJoinThreshold", "spark.sql.join.preferSortMergeJoin",
    "spark.sql.shuffle.partitions", "spark.sql.optimizer.excludedRules",
    "spark.sql.exchange.reuse", "spark.sql.optimizer.dynamicPartitionPruning.enabled",
    "spark.sql.ui.explainMode", "spark.sql.maxPlanStringLength",
))


def aqe_configs(properties: Mapping[str, Any]) -> Dict[str, str]:
    return {str(k): str(v) for k, v in properties.items()
            if k in AQE_CONFIGS or str(k).startswith(AQE_CONFIG_PREFIXES)}


@dataclass
class AppState:
    """What the application's own events said: filled while scanning."""

    app_id: str = ""
    name: str = ""
    spark_version: str = ""
    configs: Dict[str, str] = field(default_factory=dict)

    def application(self) -> Application:
        return Application(app_id=self.app_id, name=self.name, spark_version=self.spark_version)


@dataclass
class RawExecution:
    """One SQL execution as found: raw event bytes, not yet decoded (picklable, cheap)."""

    execution_id: int
    part: str
    start: Optional[bytes] = None
    start_line: int = 0
    update: Optional[bytes] = None
    update_line: int = 0
    updates: int = 0
    accumulators: Dict[int, int] = field(default_factory=dict)
    end_time: Optional[int] = None
    finished: bool = False
    #: Its stages' events: metric totals, every driver update, task updates (runtime.py).
    runtime: RunTime = field(default_factory=RunTime)
    #: With `Scanner(keep_replans=True)`: each update's (line, plan text), the first
    #: MAX_REPLANS_KEPT of them.
    replans: List[Tuple[int, str]] = field(default_factory=list)


def _part_name(part: Any) -> str:
    return str(getattr(part, "name", None) or part)


class Scanner:
    """Finds the kept events of one event log, chunk by chunk; `executions()` yields each SQL
    execution as it ends. Notes (malformed events, a cut last line) go to `notes`."""

    def __init__(self, log: Any, notes: List[str], chunk_size: int = 8 << 20,
                 keep_replans: bool = False, task_metrics: bool = False):
        self.log = log
        #: Keep every update's plan text (the HTML page's timeline); off, only the last is.
        self.keep_replans = keep_replans
        #: Read each task's SQL metric updates (`Node.spreads` over tasks); off, the task
        #: events are not even looked at.
        self.task_metrics = task_metrics
        self.notes = notes
        self.chunk_size = chunk_size
        self.app = AppState()
        self._open: Dict[int, RawExecution] = {}
        self._app_events = list(APP_EVENTS)
        self._markers = (SQL_EVENT, STAGE_EVENT, TASK_END) if task_metrics \
            else (SQL_EVENT, STAGE_EVENT)
        #: The open executions' stages: stage id -> execution id (from StageSubmitted).
        self._stage_owner: Dict[int, int] = {}
        self.events = 0  # SQL events found

    def executions(self) -> Iterator[RawExecution]:
        part = None
        pending: List[bytes] = []  # the start of a line that continues in the next chunk
        line = 1  # the number of the next line to be handled
        for chunk_part, chunk in codecs.read_chunks(self.log, self.notes, self.chunk_size):
            if chunk_part is not part:
                if part is not None:
                    yield from self._tail(b"".join(pending), part, line)
                part, pending, line = chunk_part, [], 1
            first = chunk.find(b"\n")
            if first < 0:
                pending.append(chunk)
                continue
            if pending:  # the line begun in earlier chunks ends here
                pending.append(chunk[:first + 1])
                joined = b"".join(pending)
                line = yield from self._lines(joined, 0, len(joined) - 1, part, line)
                begin = first + 1
            else:
                begin = 0
            last = chunk.rfind(b"\n")
            if last >= begin:
                line = yield from self._lines(chunk, begin, last, part, line)
            pending = [chunk[last + 1:]] if last + 1 < len(chunk) else []
        if part is not None:
            yield from self._tail(b"".join(pending), part, line)
        for raw in self._open.values():  # still running when the log ends
            yield raw
        self._open.clear()

    def _lines(self, buffer: bytes, begin: int, end: int, part: Any, line: int
               ) -> Generator[RawExecution, None, int]:
        """Handle the kept events among the whole lines of buffer[begin:end + 1] (`end` is a
        newline); returns the number of the line after them. Newlines are counted once."""
        hits: List[Tuple[int, bytes]] = []
        for marker in (*self._markers, *self._app_events):
            at = buffer.find(marker, begin, end)
            while at >= 0:
                hits.append((at, marker))
                at = buffer.find(marker, at + len(marker), end)
        if len(hits) > 1:
            hits.sort()
        counted = begin
        for at, marker in hits:
            start = buffer.rfind(b"\n", begin, at) + 1 or begin
            stop = buffer.find(b"\n", at, end + 1)
            line += buffer.count(b"\n", counted, start)
            counted = start
            text = buffer[start:stop]
            if text.endswith(b"\r"):
                text = text[:-1]
            yield from self._event(text, marker, at - start, part, line)
        return line + buffer.count(b"\n", counted, end + 1)

    def _tail(self, pending: bytes, part: Any, line: int) -> Iterator[RawExecution]:
        """The part's last line when it has no newline: a whole event, or one cut short."""
        text = pending.strip()
        if not text:
            return
        if not text.endswith(b"}"):
            self.notes.append(f"{_part_name(part)}:{line}: the last line is cut short "
                              f"({len(text):,} bytes with no end); it was skipped")
            return
        for marker in (*self._markers, *self._app_events):
            at = text.find(marker)
            if at >= 0:
                yield from self._event(text, marker, at, part, line)
                return

    def _event(self, text: bytes, marker: bytes, at: int, part: Any, line: int
               ) -> Iterator[RawExecution]:
        if marker is STAGE_EVENT or marker is TASK_END:
            self._stage_event(text, marker, at, part, line)
            return
        if marker is not SQL_EVENT:
            self._app_event(text, marker, part, line)
            return
        kind = text[at + len(SQL_EVENT):at + len(SQL_EVENT) + 32]
        self.events += 1
        if kind.startswith(START) or kind.startswith(UPDATE):
            number = self._execution_id(text, part, line)
            if number is None:
                return
            raw = self._open.get(number)
            if kind.startswith(START):
                if raw is not None:  # the same id started again: the earlier one never ended
                    yield self._close(number)
                self._open[number] = RawExecution(number, _part_name(part), start=text,
                                                  start_line=line)
            else:
                if raw is None:
                    raw = self._open[number] = RawExecution(number, _part_name(part))
                raw.update, raw.update_line = text, line
                raw.updates += 1
                if self.keep_replans and len(raw.replans) < MAX_REPLANS_KEPT:
                    event = self._decode(text, part, line)
                    plan = event.get("physicalPlanDescription") if event is not None else None
                    raw.replans.append((line, plan if isinstance(plan, str) else ""))
        elif kind.startswith(ACCUMS) or kind.startswith(END):
            event = self._decode(text, part, line)
            if event is None:
                return
            number = event.get("executionId")
            raw = self._open.get(number) if isinstance(number, int) else None
            if raw is None:
                return
            if kind.startswith(END):
                raw.end_time = event.get("time")
                raw.finished = True
                yield self._close(number)
            else:
                values = raw.runtime.driver_values
                for item in event.get("accumUpdates") or ():
                    if isinstance(item, list) and len(item) == 2 and \
                            all(isinstance(x, int) for x in item):
                        raw.accumulators[item[0]] = raw.accumulators.get(item[0], 0) + item[1]
                        values.setdefault(item[0], []).append(item[1])

    def _close(self, number: int) -> RawExecution:
        raw = self._open.pop(number)
        for stage in raw.runtime.task_counts:
            if self._stage_owner.get(stage) == number:
                del self._stage_owner[stage]
        return raw

    def _stage_event(self, text: bytes, marker: bytes, at: int, part: Any, line: int) -> None:
        """A stage's submission (whose execution it is), its completion (kept raw, for its
        metric totals) or, with task metrics, a task's end (its metric updates)."""
        if marker is STAGE_EVENT:
            kind = text[at + len(STAGE_EVENT):at + len(STAGE_EVENT) + 12]
            if kind.startswith(SUBMITTED):
                found = submitted_stage(text)
                if found is not None and found[1] in self._open:
                    stage, number, tasks = found
                    self._stage_owner[stage] = number
                    self._open[number].runtime.submitted(stage, tasks)
                return
            if not kind.startswith(COMPLETED):
                return  # SparkListenerStageExecutorMetrics
        stage, attempt = stage_head(text)
        number = self._stage_owner.get(stage) if stage is not None else None
        raw = self._open.get(number) if number is not None else None
        if raw is None:
            return
        if marker is STAGE_EVENT:
            raw.runtime.completed.append((line, text))
            return
        try:
            result = task_result(text)
        except (ValueError, KeyError, UnicodeDecodeError):
            self._skip(part, line, "a task's end event that could not be read")
            return
        if result is not None:
            raw.runtime.stage(stage).add(attempt, *result)

    def _execution_id(self, text: bytes, part: Any, line: int) -> Optional[int]:
        match = EXECUTION_ID.search(text, 0, ID_WINDOW)
        if match:
            return int(match.group(1))
        event = self._decode(text, part, line)
        number = event.get("executionId") if event is not None else None
        if not isinstance(number, int):
            if event is not None:
                self._skip(part, line, "an SQL event without an executionId")
            return None
        return number

    def _decode(self, text: bytes, part: Any, line: int) -> Optional[Dict[str, Any]]:
        try:
            event = json.loads(text)
        except ValueError as error:
            self._skip(part, line, f"malformed JSON ({str(error).split(':')[0]})")
            return None
        if not isinstance(event, dict):
            self._skip(part, line, "a JSON value that is not an event object")
            return None
        return event

    def _skip(self, part: Any, line: int, why: str) -> None:
        self.notes.append(f"{_part_name(part)}:{line}: {why}; the event was skipped")

    def _app_event(self, text: bytes, marker: bytes, part: Any, line: int) -> None:
        if marker not in self._app_events:  # a second copy in the same chunk: the first holds
            return
        event = self._decode(text, part, line)
        if event is None:
            return
        self._app_events.remove(marker)  # each is written once, at the start
        if marker is LOG_START or marker is DATABRICKS_START:
            for other in (LOG_START, DATABRICKS_START):  # one of the two says the version
                if other in self._app_events:
                    self._app_events.remove(other)
            self.app.spark_version = str(event.get("Spark Version") or "")
        elif marker is APP_START:
            self.app.app_id = str(event.get("App ID") or "")
            self.app.name = str(event.get("App Name") or "")
        else:
            properties = event.get("Spark Properties") or {}
            if isinstance(properties, list):  # Spark 1.x wrote [key, value] pairs
                properties = {pair[0]: pair[1] for pair in properties
                              if isinstance(pair, list) and len(pair) == 2
                              and isinstance(pair[0], str)}
            self.app.configs = aqe_configs(properties if isinstance(properties, dict) else {})


# ---- one execution into a Query -------------------------------------------------------------

def build_query(raw: RawExecution, source: str, app_configs: Mapping[str, str]
                ) -> Tuple[Optional[Query], List[str]]:
    """The execution's Query (None when its events cannot be read) and notes about it."""
    notes: List[str] = []
    start = _load(raw.start, raw.part, raw.start_line, notes)
    update = _load(raw.update, raw.part, raw.update_line, notes)
    if start is None and update is None:
        return None, notes
    start = start or {}
    label = f"execution {raw.execution_id}"
    configs = dict(app_configs)
    modified = start.get("modifiedConfigs")  # Spark 3.4+: the session's own settings
    if isinstance(modified, dict):
        configs.update(aqe_configs(modified))
    description = start.get("description")
    execution = Execution(
        execution_id=raw.execution_id,
        description=description if isinstance(description, str) else "",
        replans=raw.updates, start_time=_int(start.get("time")), end_time=_int(raw.end_time),
        finished=raw.finished, status="COMPLETED" if raw.finished else "RUNNING",
        configs=configs, configs_complete=isinstance(modified, dict))
    if raw.replans:
        from ...timeline import replan_steps

        execution = dataclasses.replace(execution, timeline=replan_steps(raw.replans, source))
    event, line = (update, raw.update_line) if update is not None else (start, raw.start_line)
    text = event.get("physicalPlanDescription")
    query_notes: List[str] = []
    if not raw.finished:
        query_notes.append(f"{label} has no end in this log (still running, or the log was "
                           "cut); its plan is the latest one logged")
    if raw.start is None:
        query_notes.append(f"{label}: its start event is not in this log")
    if raw.replans and raw.updates > len(raw.replans):
        query_notes.append(f"{label}: the timeline shows the first {len(raw.replans)} of its "
                           f"{raw.updates} AQE updates")
    query, note = read_description(text, source, f"{raw.part}:{line}: the plan description "
                                   f"of {label}", "sparkPlanInfo")
    if note:
        query_notes.append(note)
    info = event.get("sparkPlanInfo")
    evidence = Evidence(raw.accumulators, raw.runtime, notes, raw.part)
    if query is not None:
        # A tree read from text takes only the figures of sparkPlanInfo, when the log has any.
        if isinstance(info, dict) and evidence:
            carriers = info_carriers(info, raw.accumulators, evidence)
            query = dataclasses.replace(query, root=attach_metrics(query.root, carriers))
    elif isinstance(info, dict):
        info_tree = build_tree(info, raw.accumulators, line, evidence)
        initial = start.get("sparkPlanInfo") if update is not None else None
        initial_tree = build_tree(initial, {}, raw.start_line) \
            if isinstance(initial, dict) else None
        query = Query(root=adaptive_tree(initial_tree, info_tree), mode="simple")
    else:
        notes.append(f"{raw.part}:{line}: {label} has neither a plan description nor "
                     "sparkPlanInfo; it was skipped")
        return None, notes
    query = dataclasses.replace(
        query, source=source, line=line, label=execution.description or label, origin=ORIGIN,
        execution=execution, notes=(*query_notes, *query.notes))
    return query, notes


def build_queries(scanner: Scanner, workers: Optional[int] = None, pool_min: int = 64,
                  diff: bool = False, json: bool = False) -> Iterator[Tuple[Any, List[str]]]:
    """`build_query` of each execution the scanner finds, in order (with `diff`, its
    `QueryReport` instead: diffed where it is built; with `json` too, that report as the JSON
    of report/v1's `queries` list, written where it is built). The first `pool_min` are built here;
    past that, in a pool of `workers` processes (default: the CPUs, at most 2 - the scan
    itself keeps this one busy), a bounded number at a time. `workers=1` never pools."""
    import os

    source = scanner.log.name
    executions = scanner.executions()
    work = build_report_json if json else build_report if diff else build_query
    if workers is None:
        workers = min(2, os.cpu_count() or 1)
    for count, raw in enumerate(executions, 1):
        yield work(raw, source, scanner.app.configs)
        if count >= pool_min and workers > 1:
            break
    else:
        return
    yield from _pooled(executions, source, scanner, workers, work)


def build_report(raw: RawExecution, source: str, app_configs: Mapping[str, str]
                 ) -> Tuple[Any, List[str]]:
    """`build_query`, then its diff (named by the execution id, as the Spark UI names it)."""
    from ...engine import diff_query

    query, notes = build_query(raw, source, app_configs)
    if query is None:
        return None, notes
    return diff_query(query, str(raw.execution_id)), notes


def build_report_json(raw: RawExecution, source: str, app_configs: Mapping[str, str]
                      ) -> Tuple[Any, List[str]]:
    """`build_report`, written as JSON (a `serialize.Raw`): the process that diffs an execution
    writes it, and only text comes back."""
    from ...serialize_report import query_report_raw

    report, notes = build_report(raw, source, app_configs)
    return (None if report is None else query_report_raw(report, source)), notes


def _pooled(executions: Iterator[RawExecution], source: str, scanner: Scanner, workers: int,
            work) -> Iterator[Tuple[Any, List[str]]]:
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor

    window = workers * 8  # executions in flight: bounds the memory the pool holds
    with ProcessPoolExecutor(max_workers=workers) as pool:
        pending: deque = deque()
        try:
            for raw in executions:
                pending.append(pool.submit(work, raw, source, dict(scanner.app.configs)))
                if len(pending) >= window:
                    yield pending.popleft().result()
        except InspectError:  # the log is damaged here: what was read before it still counts
            while pending:
                yield pending.popleft().result()
            raise
        while pending:
            yield pending.popleft().result()


def _load(text: Optional[bytes], part: str, line: int, notes: List[str]
          ) -> Optional[Dict[str, Any]]:
    if text is None:
        return None
    try:
        event = json.loads(text)
    except ValueError as error:
        notes.append(f"{part}:{line}: malformed JSON ({str(error).split(':')[0]}); "
                     "the event was skipped")
        return None
    return event if isinstance(event, dict) else None


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_log(log: Any) -> None:
    """Refuse what is not there before any work: one line naming it."""
    if not getattr(log, "parts", None):
        raise InspectError("expected an event log, found no event files",
                           source=_part_name(log))
