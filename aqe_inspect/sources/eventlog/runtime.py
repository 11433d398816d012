"""Run-time evidence of one SQL execution: its SQL metrics' totals and how they spread.

Spark's SQL metrics are accumulators, named in `sparkPlanInfo` by id
(`{"name": "local bytes read", "accumulatorId": 301, "metricType": "size"}`). Their values
reach an event log three ways, and this module reads all three:

- **driver updates** (`SparkListenerDriverAccumUpdates`): figures the driver sets, such as an
  AQE shuffle read's partition counts; its `partition data size` is posted once per
  partition, zeros included, so its values in order are the read's partition sizes
  (events.py sums them; `driver_values` keeps every value of the `size` and `timing`
  metrics updated more than once);
- **stage totals** (`SparkListenerStageCompleted` -> `Stage Info` -> `Accumulables`, each
  `Value` the accumulator's total so far): every task metric's total, as the Spark UI shows it
  (an exchange's `data size`, `shuffle records written`, `local bytes read`). Few events, so
  always read; their bytes are kept and decoded where the execution's Query is built;
- **task updates** (`SparkListenerTaskEnd` -> `Task Info` -> `Accumulables`, each `Update`
  one task's value): only when asked (`task_metrics`), as they are most of a log's bytes.
  Kept per stage and partition: successful tasks only, the first success of a partition in
  a stage attempt, a later attempt's over an earlier one's.

Which execution a stage belongs to is read from its `SparkListenerStageSubmitted`, whose
`Properties` carry `spark.sql.execution.id`; the scanner matches them with the patterns
below without decoding the event.

`Evidence.figures` turns one sparkPlanInfo node's metrics into `Node.metrics` (totals; times
in ms, as the UI shows them, `nsTiming` metrics included) and `Node.spreads`: a driver
metric's values in partition order; a task metric's values in task-index order over the
stages that updated it (an exchange's read metrics over the stages that read it), zeros for
tasks that reported nothing; and the derived `bytes read per task` (local + remote), each
shuffle partition's size when the reading stage read one partition per task.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple

from .. import deepjson
from ...plan.model import Spread

#: One marker finds both stage events (`SparkListenerStageSubmitted`, `...Completed`).
STAGE_EVENT = b'"Event":"SparkListenerStage'
SUBMITTED = b'Submitted"'
COMPLETED = b'Completed"'
TASK_END = b'"Event":"SparkListenerTaskEnd"'
#: A stage's id and attempt: whole numbers (`1.5` is none: the event is not a stage's).
STAGE_ID = re.compile(rb'"Stage ID":(\d+)(?![\d.eE])')
STAGE_ATTEMPT = re.compile(rb'"Stage Attempt ID":(\d+)(?![\d.eE])')
NUMBER_OF_TASKS = re.compile(rb'"Number of Tasks":(\d+)')
#: Where a stage says which SQL execution ran it (in its `Properties`, at the event's end).
EXECUTION_PROPERTY = re.compile(rb'"spark\.sql\.execution\.id":"(\d+)"')
#: The literal each of the two patterns begins with (`_searched`).
EXECUTION_KEY = b'"spark.sql.execution.id":"'
TASKS_KEY = b'"Number of Tasks":'
#: How far into a stage or task event its stage id and attempt are (Spark writes them first).
HEAD_WINDOW = 300

#: An exchange's shuffle read metrics (`SQLShuffleReadMetricsReporter`): updated by the tasks
#: of the stages that read the exchange, so they spread over those stages' tasks together.
READ_METRICS = frozenset((
    "local bytes read", "remote bytes read", "remote bytes read to disk", "local blocks read",
    "remote blocks read", "records read", "fetch wait time", "remote reqs duration",
    "corrupt merged block chunks", "merged fetch fallback count", "remote merged blocks fetched",
    "local merged blocks fetched", "remote merged chunks fetched", "local merged chunks fetched",
    "remote merged bytes read", "local merged bytes read", "remote merged reqs duration",
))
#: The derived spread of an exchange: what each reading task read (local + remote bytes).
BYTES_READ_PER_TASK = "bytes read per task"
BYTES_READ = ("local bytes read", "remote bytes read")
#: The metric types whose several driver updates are values of their own (sizes, times);
#: several updates of a count add up to one figure.
SPREAD_TYPES = frozenset(("size", "timing", "nsTiming"))
NANOS_PER_MS = 1_000_000


def spread_of(values: Iterable[int]) -> Optional[Spread]:
    """Every value, with Spark's own minimum, median and maximum (the UI's median is the
    value at n // 2 of the sorted values); None for no values."""
    kept = tuple(values)
    if not kept:
        return None
    ordered = sorted(kept)
    return Spread(minimum=ordered[0], median=ordered[len(ordered) // 2], maximum=ordered[-1],
                  count=len(kept), values=kept)


@dataclass
class StageTasks:
    """The successful tasks of one stage: by partition, (stage attempt, {accumulator: update})."""

    count: int = 0  # the stage's `Number of Tasks` (the largest of its attempts)
    by_partition: Dict[int, Tuple[int, Dict[int, int]]] = field(default_factory=dict)

    def add(self, attempt: int, partition: int, updates: Dict[int, int]) -> None:
        held = self.by_partition.get(partition)
        if held is None or attempt > held[0]:  # a retry's result replaces the earlier one
            self.by_partition[partition] = (attempt, updates)

    def values(self, accumulator: int) -> List[int]:
        """One value per task of the stage, in partition order, 0 where nothing was reported."""
        count = self.count or max(self.by_partition, default=-1) + 1
        found = [0] * count
        for partition, (_, updates) in self.by_partition.items():
            if partition < count:  # a damaged index never sizes the list
                found[partition] = updates.get(accumulator, 0)
        return found

    def updated(self) -> Set[int]:
        return {key for _, updates in self.by_partition.values() for key in updates}


@dataclass
class RunTime:
    """What the stage and task events of one execution said, as the scanner found it
    (picklable: it travels with the execution to the process that builds its Query)."""

    #: (line, raw bytes) of each `SparkListenerStageCompleted` of the execution's stages.
    completed: List[Tuple[int, bytes]] = field(default_factory=list)
    #: Every driver update of each accumulator, in order (the scanner sums them too).
    driver_values: Dict[int, List[int]] = field(default_factory=dict)
    #: With task metrics: each stage's successful tasks.
    stages: Dict[int, StageTasks] = field(default_factory=dict)
    #: Each stage's `Number of Tasks` (the largest of its attempts), from its submission.
    task_counts: Dict[int, int] = field(default_factory=dict)

    def submitted(self, stage_id: int, tasks: int) -> None:
        """A stage (or a new attempt of it) was submitted with `tasks` tasks."""
        count = max(tasks, self.task_counts.get(stage_id, 0))
        self.task_counts[stage_id] = count
        if stage_id in self.stages:
            self.stages[stage_id].count = count

    def stage(self, stage_id: int) -> StageTasks:
        tasks = self.stages.get(stage_id)
        if tasks is None:
            tasks = self.stages[stage_id] = StageTasks(self.task_counts.get(stage_id, 0))
        return tasks


# ---- reading the events ------------------------------------------------------------------------

def stage_head(text: bytes, begin: int = 0, end: Optional[int] = None
               ) -> Tuple[Optional[int], int]:
    """(stage id, attempt) of a stage or task event, read from its first bytes. The event is
    text[begin:end] (the whole text by default): read where it stands in a buffer."""
    top = begin + HEAD_WINDOW
    if end is not None and end < top:
        top = end
    match = STAGE_ID.search(text, begin, top)
    attempt = STAGE_ATTEMPT.search(text, begin, top)
    return (int(match.group(1)) if match else None), (int(attempt.group(1)) if attempt else 0)


def submitted_stage(text: bytes, begin: int = 0, end: Optional[int] = None
                    ) -> Optional[Tuple[int, int, int]]:
    """(stage id, its SQL execution's id, number of tasks) of a `StageSubmitted` event
    (text[begin:end], as `stage_head`), None when it names no execution (a job run outside
    SQL)."""
    if end is None:
        end = len(text)
    stage, _ = stage_head(text, begin, end)
    execution = _searched(EXECUTION_PROPERTY, EXECUTION_KEY, text, begin, end)
    if stage is None or execution is None:
        return None
    tasks = _searched(NUMBER_OF_TASKS, TASKS_KEY, text, begin, end)
    return stage, int(execution.group(1)), int(tasks.group(1)) if tasks else 0


def _searched(pattern: Any, key: bytes, text: bytes, begin: int, end: int) -> Any:
    """`pattern.search(text, begin, end)` for a pattern that begins with the literal `key`:
    each place of the key is found by `bytes.find` (the C library's vectorised search; the
    regex engine steps byte by byte through the kilobytes before a stage's properties) and
    the pattern matched there, until it matches."""
    at = text.find(key, begin, end)
    while at >= 0:
        match = pattern.match(text, at, end)
        if match is not None:
            return match
        at = text.find(key, at + 1, end)
    return None


def value_after(text: bytes, key: bytes) -> Any:
    """The JSON value that follows `key` (`b'"Task Info":'`) in an event, decoded alone, so the
    rest of a large event is never decoded; raises ValueError (or KeyError when the key is
    not there)."""
    at = text.find(key)
    if at < 0:
        raise KeyError(key)
    tail = text[at + len(key):].decode("utf-8").lstrip()
    value, _ = deepjson.raw_decode(tail)
    return value


def accumulable_values(items: Any, field_name: str) -> Dict[int, int]:
    """`{accumulator id: value}` of an `Accumulables` list (`Value` or `Update`; SQL metrics
    write them as strings, Spark's own as numbers); entries that are not numbers are left out."""
    found: Dict[int, int] = {}
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        key = item.get("ID")
        value = _count(key, item.get(field_name))
        if value is not None:
            found[key] = value
    return found


def _count(key: Any, value: Any) -> Optional[int]:
    """An accumulable's value as a count (a string of digits read as one), or None when it is
    not one or its id is not an integer."""
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            return None
    if isinstance(key, int) and isinstance(value, int) and not isinstance(value, bool) \
            and value >= 0:
        return value
    return None


ACCUMULABLES = b'"Accumulables":'


def stage_totals(text: bytes) -> Dict[int, int]:
    """The accumulators' totals a `StageCompleted` event holds; raises ValueError/KeyError.

    The event is decoded whole by msgspec (C: half the time of decoding the text after the
    key with `json`) when its one `Accumulables` list is its stage's and holds no float
    (msgspec reads an integer past 64 bits as one, json as an int); else the text after the
    key is decoded (`value_after`), with the errors a damaged event raises."""
    if text.count(ACCUMULABLES) == 1:
        totals = _stage_accumulated(text)
        if totals is not None:
            return totals
        items = _stage_accumulables(text)
        if items is not None:
            return accumulable_values(items, "Value")
    return accumulable_values(value_after(text, ACCUMULABLES), "Value")


_DECODE: Any = None
#: A decoder of a StageCompleted event's `Stage Info`'s `Accumulables` alone (a msgspec Struct
#: type made on first use).
_DECODE_ACCUMULABLES: Any = None


#: A decoder of a StageCompleted event's `Stage Info`'s `Accumulables` as a list of objects
#: of which only `ID` and `Value` are read (msgspec Struct types made on first use).
_DECODE_ACCUMULATED: Any = None


def _stage_accumulated(text: bytes) -> Optional[Dict[int, int]]:
    """`accumulable_values(_stage_accumulables(text), "Value")` where the event is ASCII and
    its `Accumulables` a list of objects, each decoded for its `ID` and `Value` alone (the
    names and flags passed over); None when it cannot say (anything else: `stage_totals`
    reads it the general way)."""
    global _DECODE_ACCUMULATED
    if _DECODE_ACCUMULATED is None:
        try:
            import msgspec
        except ImportError:  # pragma: no cover - a dependency
            _DECODE_ACCUMULATED = False
        else:
            item = type("Accumulable", (msgspec.Struct,), {
                "__annotations__": {"ID": Any, "Value": Any}, "ID": None, "Value": None})
            info = type("StageAccumulables", (msgspec.Struct,), {
                "__annotations__": {"Accumulables": Optional[List[item]]},  # type: ignore
                "Accumulables": None})
            event = type("StageCompletedAccumulables", (msgspec.Struct,), {
                "__annotations__": {"info": info},
                "info": msgspec.field(default=None, name="Stage Info")})
            _DECODE_ACCUMULATED = msgspec.json.Decoder(event).decode
    if not _DECODE_ACCUMULATED or not text.isascii():
        return None
    try:
        found = _DECODE_ACCUMULATED(text)
    except Exception:  # noqa: BLE001 - DecodeError, ValidationError, RecursionError
        return None
    items = found.info.Accumulables if found.info is not None else None
    if items is None:
        return None
    totals: Dict[int, int] = {}
    for item in items:
        key, value = item.ID, item.Value
        if isinstance(value, float) or isinstance(key, float):
            return None  # as `_stage_accumulables` refuses them
        value = _count(key, value)
        if value is not None:
            totals[key] = value
    return totals


def _stage_accumulables(text: bytes) -> Optional[List[Any]]:
    """The `Stage Info`'s `Accumulables` of a StageCompleted event, decoded by msgspec; None
    when it cannot say (not installed, damaged or odd JSON, a float among them)."""
    global _DECODE, _DECODE_ACCUMULABLES
    if _DECODE is None:
        try:
            import msgspec
        except ImportError:  # pragma: no cover - a dependency
            _DECODE = _DECODE_ACCUMULABLES = False
        else:
            _DECODE = msgspec.json.Decoder().decode
            info = type("StageInfo", (msgspec.Struct,), {
                "__annotations__": {"Accumulables": Any}, "Accumulables": None})
            event = type("StageCompleted", (msgspec.Struct,), {
                "__annotations__": {"info": info},
                "info": msgspec.field(default=None, name="Stage Info")})
            _DECODE_ACCUMULABLES = msgspec.json.Decoder(event).decode
    if not _DECODE:
        return None
    if text.isascii():
        # Only `Stage Info`'s `Accumulables` decoded, the rest (RDD Info...) passed over: the
        # same list, in half the time. (msgspec passes over invalid UTF-8 in what it skips,
        # which the whole decode refuses: so only for ASCII.) Any other shape (`Stage Info`
        # not an object, or null) is refused here as below.
        try:
            found = _DECODE_ACCUMULABLES(text)
        except Exception:  # noqa: BLE001 - DecodeError, ValidationError, RecursionError
            return None
        items = found.info.Accumulables if found.info is not None else None
    else:
        try:
            event = _DECODE(text)
        except Exception:  # noqa: BLE001 - DecodeError (a ValueError), RecursionError
            return None
        info = event.get("Stage Info") if isinstance(event, dict) else None
        items = info.get("Accumulables") if isinstance(info, dict) else None
    if not isinstance(items, list):
        return None
    for item in items:
        if isinstance(item, dict) and (isinstance(item.get("Value"), float) or
                                       isinstance(item.get("ID"), float)):
            return None
    return items


def task_result(text: bytes) -> Optional[Tuple[int, Dict[int, int]]]:
    """(partition, {accumulator: update}) of a successful task's `TaskEnd` event; None for a
    task that failed or was killed; raises ValueError/KeyError when the event is damaged."""
    reason = value_after(text, b'"Task End Reason":')
    if not isinstance(reason, dict) or reason.get("Reason") != "Success":
        return None
    info = value_after(text, b'"Task Info":')
    if not isinstance(info, dict) or info.get("Failed") or info.get("Killed"):
        return None
    partition = info.get("Partition ID")
    if not isinstance(partition, int) or partition < 0:
        partition = info.get("Index")
    if not isinstance(partition, int) or partition < 0:
        raise ValueError("no task index")
    return partition, accumulable_values(info.get("Accumulables"), "Update")


# ---- onto the plan -----------------------------------------------------------------------------

class Evidence:
    """An execution's run-time figures by accumulator id: `figures` gives one plan node's."""

    def __init__(self, totals: Mapping[int, int], runtime: Optional[RunTime] = None,
                 notes: Optional[List[str]] = None, part: str = ""):
        self.totals: Dict[int, int] = {}
        self.runtime = runtime or RunTime()
        for line, text in self.runtime.completed:
            try:
                self.totals.update(stage_totals(text))
            except (ValueError, KeyError, UnicodeDecodeError):
                if notes is not None:
                    notes.append(f"{part}:{line}: a stage's completion event could not be "
                                 "read (damaged Accumulables); the event was skipped")
        self.totals.update(totals)  # the driver's own figures (never updated by tasks)
        self._updated: Optional[Dict[int, List[int]]] = None
        self._keys: Optional[Mapping[int, Any]] = None  # see `_figure_keys`

    def __bool__(self) -> bool:
        return bool(self.totals or self.runtime.stages)

    def _stages_updating(self) -> Dict[int, List[int]]:
        """{accumulator: the stages whose tasks updated it, in id order}."""
        if self._updated is None:
            self._updated = {}
            for stage_id in sorted(self.runtime.stages):
                for key in self.runtime.stages[stage_id].updated():
                    self._updated.setdefault(key, []).append(stage_id)
        return self._updated

    def _task_values(self, accumulator: int, stages: List[int]) -> List[int]:
        values: List[int] = []
        for stage_id in stages:
            values.extend(self.runtime.stages[stage_id].values(accumulator))
        return values

    def _figure_keys(self) -> Mapping[int, Any]:
        """The accumulators that may give a figure: those with a total or driver values (the
        driver's are among the totals as a rule, as the scanner sums them: then the totals
        themselves serve, with nothing built)."""
        if self._keys is None:
            driver = self.runtime.driver_values
            self._keys = self.totals if self.totals.keys() >= driver.keys() \
                else {**driver, **self.totals}
        return self._keys

    def figures(self, metrics: Iterable[Any]) -> Tuple[Dict[str, int], Dict[str, Spread]]:
        """(`Node.metrics`, `Node.spreads`) of one sparkPlanInfo node's `metrics` list.

        Without task metrics, only the metrics whose accumulator has a total or driver values
        can give a figure: they are found first, in one pass in C (most of a plan's metrics
        have none when the log holds no stage totals, and many nodes have no metrics), and
        only they are read. An entry that is odd (not a dict, an unhashable id) sends the
        whole list the plain way, which sorts it out; an id equal to an accumulator's without
        being an int (`3.0`) is found here and dropped there, as it always was."""
        if self.runtime.stages:
            return self._figures_of(metrics, True)
        keys = self._keys
        if keys is None:
            keys = self._figure_keys()
        if metrics.__class__ is not list:
            metrics = list(metrics)  # read twice
        try:
            metrics = [metric for metric in metrics if metric.get("accumulatorId") in keys]
        except (AttributeError, TypeError):
            pass
        if not metrics:
            return {}, {}
        return self._figures_of(metrics, False)

    def _figures_of(self, metrics: Iterable[Any], with_tasks: bool
                    ) -> Tuple[Dict[str, int], Dict[str, Spread]]:
        """`figures`, read metric by metric; `with_tasks`: the execution has task metrics,
        so that every named metric may spread over tasks."""
        totals: Dict[str, int] = {}
        spreads: Dict[str, Spread] = {}
        named: List[Tuple[str, int, str]] = []
        held = self.totals
        driver_values = self.runtime.driver_values
        for metric in metrics:
            if not isinstance(metric, dict):
                continue
            key = metric.get("accumulatorId")
            if not isinstance(key, int):
                continue
            value = held.get(key)
            driver = driver_values.get(key)
            if driver is not None and len(driver) < 2:
                driver = None  # one update is the total, no spread
            if value is None and driver is None and not with_tasks:
                continue  # no figure of it: its name and type are not needed
            name = metric.get("name")
            if not name:
                continue
            if name.__class__ is not str:
                name = deepjson.text(name)
            kind = metric.get("metricType") or ""
            if kind.__class__ is not str:
                kind = deepjson.text(kind)
            if with_tasks:
                named.append((name, key, kind))
            if value is not None:
                totals[name] = value // NANOS_PER_MS if kind == "nsTiming" else value
            if driver is not None and kind in SPREAD_TYPES:
                spread = spread_of(_in_ms(driver, kind))
                if spread is not None:
                    spreads[name] = spread
        if with_tasks:
            spreads.update(self._task_spreads(named))
        return totals, spreads

    def _task_spreads(self, named: List[Tuple[str, int, str]]) -> Dict[str, Spread]:
        updated = self._stages_updating()
        reading = sorted({stage for name, key, _ in named if name in READ_METRICS
                          for stage in updated.get(key, ())})
        spreads: Dict[str, Spread] = {}
        per_task: Dict[str, List[int]] = {}
        for name, key, kind in named:
            stages = reading if name in READ_METRICS else updated.get(key, [])
            if not stages:
                continue
            values = _in_ms(self._task_values(key, stages), kind)
            per_task[name] = values
            spread = spread_of(values)
            if spread is not None:
                spreads[name] = spread
        parts = [per_task[name] for name in BYTES_READ if name in per_task]
        if parts:
            spread = spread_of([sum(column) for column in zip(*parts)])
            if spread is not None:
                spreads[BYTES_READ_PER_TASK] = spread
        return spreads


def _in_ms(values: List[int], kind: str) -> List[int]:
    return [v // NANOS_PER_MS for v in values] if kind == "nsTiming" else values
