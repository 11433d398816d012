"""Run-time evidence from event logs and History Server JSON (`Node.metrics`, `Node.spreads`,
`Execution.configs`): read from the sample generator's real runs (PySpark 3.5.9 and 4.3.0),
each event log checked against the History Server answer of the same run, which Spark
computed from the same events by its own code."""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Dict, List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.errors import InspectError
from aqe_inspect.plan.model import Node, Query
from aqe_inspect.sources.eventlog import LogStream, read_event_logs
from aqe_inspect.sources.eventlog.events import AQE_CONFIGS
from aqe_inspect.sources.eventlog.history import metric_spread, read_history
from aqe_inspect.sources.eventlog.runtime import BYTES_READ_PER_TASK, spread_of
from aqe_inspect.sources.routing import read_input

from .conftest import SAMPLE_PLANS

MANIFEST = json.loads((SAMPLE_PLANS / "eventlogs.json").read_text("utf-8"))["logs"]
#: (version, scenario) of every run with both a plain event log and a History Server answer.
RUNS = sorted({(e["spark_version"], e["scenario"]) for e in MANIFEST
               if e["layout"] == "history-sql"})


def _path(version: str, scenario: str, name: str) -> Path:
    return SAMPLE_PLANS / f"spark-{version}" / scenario / name


def _event_log(version: str, scenario: str, task_metrics: bool = True) -> List[Query]:
    path = _path(version, scenario, "eventlog.json")
    documents = read_event_logs(str(path), workers=1, task_metrics=task_metrics)
    assert len(documents) == 1
    return list(documents[0].queries)


def _history(version: str, scenario: str) -> List[Query]:
    path = _path(version, scenario, "history_sql.json")
    return list(read_history(path.read_bytes(), str(path)).queries)


def _by_label(query: Query) -> Dict[str, Node]:
    return {node.label: node for node in query.final.walk() if node.metrics or node.spreads}


# ---- how Spark prints a figure (Utils.bytesToString, msDurationToString, NumberFormat) ------

def _half_up(value: float, places: str) -> str:
    return str(Decimal(repr(value)).quantize(Decimal(places), rounding=ROUND_HALF_UP))


def spark_bytes(size: int) -> str:
    for shift, unit in ((60, "EiB"), (50, "PiB"), (40, "TiB"), (30, "GiB"), (20, "MiB"),
                        (10, "KiB")):
        if size >= 2 << shift:
            return f"{_half_up(size / (1 << shift), '0.1')} {unit}"
    return f"{size}.0 B"


def spark_ms(ms: int) -> str:
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{_half_up(ms / 1000, '0.1')} s"
    return f"{_half_up(ms / 60_000, '0.1')} m"


def shown_like(value: int, display: str) -> str:
    """`value` printed the way the History Server printed the figure `display`."""
    if display.endswith("B"):
        return spark_bytes(value)
    if display.endswith((" ms", " s", " m")):
        return spark_ms(value)
    return f"{value:,}"


def _comparable(query: Query) -> bool:
    """Whether the History graph can be paired with the plan text operator by operator: its
    graph shares a reused exchange's node between its two readers, so a plan with a
    `ReusedExchange` pairs by place unreliably there (the event log pairs by plan id)."""
    return not any(node.name == "ReusedExchange" for node in query.walk())


# ---- event log against the History Server, every sample run ---------------------------------

@pytest.mark.parametrize("version,scenario", RUNS)
def test_event_log_figures_are_the_history_servers(version, scenario):
    """Every total and spread the History Server printed for an exchange or shuffle read is
    what the event log gives, printed the same way; tasks that reported nothing are absent
    from the UI's (min, med, max) and zeros in the event log's values."""
    events = {q.execution.execution_id: q for q in _event_log(version, scenario)}
    compared = 0
    for history in _history(version, scenario):
        query = events[history.execution.execution_id]
        if not _comparable(query):
            continue
        mine = _by_label(query)
        for label, node in _by_label(history).items():
            ours = mine[label]
            for name, total in node.metrics.items():
                unit = "B" if "size" in name or "bytes" in name else \
                    " ms" if "time" in name or "duration" in name else ""
                if name not in ours.metrics:  # no task updated it: the UI prints its 0
                    assert total == 0, (label, name)
                    continue
                # Timings are converted from ns per task and the UI's and the log's rounding
                # differ by a ms; the why-not answers read sizes and counts, not times.
                if name in node.spreads and unit != " ms":  # printed with its spread
                    spread = node.spreads[name]
                    theirs = [spread.minimum, spread.median, spread.maximum]
                    mine_spread = ours.spreads[name]
                    assert mine_spread.count == len(mine_spread.values)
                    reported = sorted(v for v in mine_spread.values if v) or [0]
                    candidates = ([mine_spread.minimum, mine_spread.median, mine_spread.maximum],
                                  [reported[0], reported[len(reported) // 2], reported[-1]])
                    assert any([shown_like(v, unit) for v in c] ==
                               [shown_like(v, unit) for v in theirs] for c in candidates), \
                        (label, name, theirs, candidates)
                assert shown_like(ours.metrics[name], unit) == shown_like(total, unit), \
                    (label, name)
                compared += 1
    if scenario in ("skew_join", "coalesced_aggregation", "multi_rewrite", "smj_to_bhj"):
        assert compared > 10, f"only {compared} figures compared in {scenario}"


@pytest.mark.parametrize("version", ["3.5.9", "4.3.0"])
def test_totals_come_without_task_metrics(version):
    """The stages' totals are always read; the tasks' spreads only when asked."""
    (query,) = _event_log(version, "skew_join", task_metrics=False)
    exchanges = [n for n in query.final.walk() if n.name == "Exchange"]
    assert exchanges
    for node in exchanges:
        assert {"data size", "shuffle bytes written", "local bytes read"} <= set(node.metrics)
        assert not node.spreads
    assert any(n.spreads for n in query.final.walk() if n.name == "AQEShuffleRead")


@pytest.mark.parametrize("version", ["3.5.9", "4.3.0"])
def test_skew_join_partition_sizes_and_bytes_read_per_task(version):
    """The skewed read's `partition data size`: one driver value per partition spec, in order,
    summing to the total, as many as the read's partitions; the exchange below it read by one
    task per spec, each task's bytes read (local + remote) within MapStatus's size encoding
    (a byte size rounded to a power of 1.1, so 10%) of its partition's size."""
    (query,) = _event_log(version, "skew_join")
    reads = [n for n in query.final.walk() if n.name == "AQEShuffleRead"]
    skewed = [n for n in reads if n.metrics.get("number of skewed partitions")]
    assert skewed
    for read in reads:
        sizes = read.spreads["partition data size"] if read.metrics["number of partitions"] > 1 \
            else None
        if sizes is None:
            continue
        assert sum(sizes.values) == read.metrics["partition data size"]
        assert sizes.count == len(sizes.values) == read.metrics["number of partitions"]
        exchange = read.children[0].children[0]
        per_task = exchange.spreads[BYTES_READ_PER_TASK]
        assert per_task.values == tuple(
            a + b for a, b in zip(exchange.spreads["local bytes read"].values,
                                  exchange.spreads["remote bytes read"].values))
        assert sum(per_task.values) == exchange.metrics["local bytes read"] + \
            exchange.metrics.get("remote bytes read", 0)
        assert len(per_task.values) == len(sizes.values)
        for read_bytes, size in zip(per_task.values, sizes.values):
            assert abs(read_bytes - size) <= 0.1 * size, (per_task.values, sizes.values)
    # The skewed side: its largest partition before the split is what made it skewed.
    side = skewed[0].children[0].children[0]
    spread = side.spreads[BYTES_READ_PER_TASK]
    assert spread.maximum > spread.median > 0
    assert spread == spread_of(spread.values)


def test_spread_median_is_sparks():
    """Spark's UI takes the value at n // 2 of the sorted values (the upper median)."""
    assert spread_of([5, 1, 4, 2]).median == 4
    assert spread_of([3]).count == 1
    assert spread_of([]) is None


# ---- History Server display strings ---------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("total (min, med, max (stageId: taskId))\n3.4 KiB (214.0 B, 833.0 B, 2.1 KiB "
     "(stage 4.0: task 7))", (214, 833, 2150)),
    ("total (min, med, max (stageId: taskId))\n7.4 KiB (1158.0 B, 1692.0 B, 3.0 KiB (driver))",
     (1158, 1692, 3072)),
    ("total (min, med, max)\n67 ms (26 ms, 41 ms, 1.5 s)", (26, 41, 1500)),  # Spark 3.0
    ("total (min, med, max (stageId: taskId))\n4.0 EiB (1.0 EiB, 1.0 EiB, 2.0 EiB (stage 1.0: "
     "task 3))", (1 << 60, 1 << 60, 2 << 60)),
])
def test_history_spread(text, expected):
    spread = metric_spread(text)
    assert (spread.minimum, spread.median, spread.maximum) == expected
    assert spread.count is None and spread.values == ()


@pytest.mark.parametrize("text", ["20,000", "3.9 KiB", "total (min, med, max)\nbroken", None])
def test_history_single_figures_have_no_spread(text):
    assert metric_spread(text) is None


# ---- configs -------------------------------------------------------------------------------

@pytest.mark.parametrize("version,scenario", [("3.5.9", "skew_join"), ("4.3.0", "skew_join"),
                                              ("4.3.0", "smj_to_bhj_off")])
def test_configs_in_force_are_complete_from_spark_3_4(version, scenario):
    """Spark 3.4+ logs the session's own settings (`modifiedConfigs`): the configs are whole,
    and every setting the run made that a why-not reads is there with its value."""
    truth = json.loads(_path(version, scenario, "truth.json").read_text("utf-8"))
    for query in _event_log(version, scenario, task_metrics=False):
        execution = query.execution
        assert execution.configs_complete
        for key, value in truth["confs"].items():
            if key in AQE_CONFIGS or key.startswith("spark.sql.adaptive."):
                assert execution.configs[key] == value, key
    for query in _history(version, scenario):
        assert not query.execution.configs_complete and not query.execution.configs


def test_configs_before_spark_3_4_are_not_complete(corpus):
    """Spark 3.1's log has no `modifiedConfigs`: absent keys may have been set in the session."""
    (document,) = read_event_logs(str(corpus / "v3.1/other/local-1596020211915"), workers=1)
    assert document.queries
    assert not any(q.execution.configs_complete for q in document.queries)


# ---- the API and damaged events --------------------------------------------------------------

def test_read_input_asks_for_task_metrics():
    path = str(_path("4.3.0", "skew_join", "eventlog.zstd"))
    plain = read_input(path)
    asked = read_input(path, task_metrics=True)
    assert isinstance(plain, LogStream) and isinstance(asked, LogStream)
    spreads = [set(n.spreads) for q in asked.queries for n in q.final.walk()
               if n.name == "Exchange"]
    assert spreads and all(BYTES_READ_PER_TASK in s for s in spreads)
    assert not any(BYTES_READ_PER_TASK in n.spreads for q in plain.queries
                   for n in q.final.walk())


def _lines(version: str, scenario: str) -> List[bytes]:
    return _path(version, scenario, "eventlog.json").read_bytes().split(b"\n")


def _read(tmp_path: Path, lines: List[bytes]):
    path = tmp_path / "eventlog.json"
    path.write_bytes(b"\n".join(lines))
    (document,) = read_event_logs(str(path), workers=1, task_metrics=True)
    return document


def test_damaged_task_and_stage_events_are_skipped_with_a_note(tmp_path):
    lines = _lines("4.3.0", "skew_join")
    task = next(i for i, line in enumerate(lines) if b'"SparkListenerTaskEnd"' in line)
    stage = next(i for i, line in enumerate(lines) if b'"SparkListenerStageCompleted"' in line)
    lines[task] = lines[task].replace(b'"Task Info":{', b'"Task Info":{{')
    lines[stage] = lines[stage].replace(b'"Accumulables":[', b'"Accumulables":[}')
    document = _read(tmp_path, lines)
    notes = [*document.notes, *(n for q in document.queries for n in q.notes)]
    assert any(f":{task + 1}: a task's end event" in n for n in notes), notes
    assert any(f":{stage + 1}: a stage's completion event" in n for n in notes), notes
    (query,) = document.queries
    assert any(BYTES_READ_PER_TASK in n.spreads for n in query.final.walk())


def test_failed_and_speculative_task_copies_are_dropped(tmp_path):
    """A second, failed attempt of a task and a second success of the same index (a
    speculative copy) change nothing: one value per partition, the first success's."""
    lines = _lines("4.3.0", "skew_join")
    (before,) = _read(tmp_path, lines).queries
    reading = [i for i, line in enumerate(lines) if b'"SparkListenerTaskEnd"' in line and
               b'"Name":"local bytes read"' in line]
    copies = []
    for index in reading:
        failed = lines[index].replace(b'"Reason":"Success"', b'"Reason":"ExceptionFailure"', 1)
        doubled = lines[index].replace(b'"Name":"local bytes read","Update":"',
                                       b'"Name":"local bytes read","Update":"9', 1)
        copies += [(index, failed), (index, doubled)]
    for index, line in sorted(copies, reverse=True):
        lines.insert(index + 1, line)
    (after,) = _read(tmp_path, lines).queries
    for old, new in zip(before.final.walk(), after.final.walk()):
        assert old.spreads == new.spreads


FUZZ = settings(max_examples=30, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


@FUZZ
@given(data=st.data())
def test_damaged_logs_read_with_task_metrics_never_fail_otherwise(tmp_path, data):
    """Any task or stage event cut, doubled or given junk: read as far as it goes, or one
    InspectError, with task metrics on."""
    lines = _lines(data.draw(st.sampled_from(["3.5.9", "4.3.0"])),
                   data.draw(st.sampled_from(["skew_join", "coalesced_aggregation"])))
    kept = [i for i, line in enumerate(lines) if b'"SparkListenerTask' in line or
            b'"SparkListenerStage' in line]
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.sampled_from(kept))
        line = lines[index]
        action = data.draw(st.sampled_from(["cut", "flip", "double", "junk"]))
        if action == "cut":
            lines[index] = line[:data.draw(st.integers(0, len(line)))]
        elif action == "flip" and line:
            at = data.draw(st.integers(0, len(line) - 1))
            lines[index] = line[:at] + bytes([line[at] ^ data.draw(st.integers(1, 255))]) + \
                line[at + 1:]
        elif action == "double":
            lines.insert(index, line)
        else:
            lines[index] = data.draw(st.binary(max_size=64))
    try:
        _read(tmp_path, lines)
    except InspectError:
        pass


def test_every_setting_the_why_not_reads_is_kept_from_an_event_log():
    """An execution's settings are filtered when read; every setting the why-not explainers look
    up (whynot.defaults.KEYS) must pass the filter, or a setting the user changed is lost and
    its default assumed (as happened to outputPartitioningExpandLimit and reuseBroadcastOnly)."""
    from aqe_inspect.sources.eventlog.events import aqe_configs
    from aqe_inspect.whynot.defaults import KEYS

    assert KEYS
    kept = aqe_configs({key: "set" for key in KEYS})
    assert sorted(set(KEYS) - set(kept)) == []
