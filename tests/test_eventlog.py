"""Spark event logs and History Server JSON: real logs (Spark's own test resources, and runs of
PySpark 3.5 and 4.3 in tests/fixtures/eventlogs/generated), read into one query per SQL
execution, with the damage a log can carry said in notes."""

from __future__ import annotations

import dataclasses
import functools
import gzip
import http.server
import json
import os
import subprocess
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import AQE_INSPECT

from aqe_inspect.errors import InspectError
from aqe_inspect.rewrites.engine import diff_document, diff_query
from aqe_inspect.sources.eventlog import files, read_event_logs, stream_event_logs
from aqe_inspect.sources.eventlog.events import Scanner, build_query, build_queries
from aqe_inspect.sources.eventlog.history import (graph_tree, metric_figure, read_history,
                                                  sql_url)
from aqe_inspect.sources.eventlog.planinfo import build_tree, usable_description

GENERATED = Path(__file__).parent / "fixtures" / "eventlogs" / "generated"
CLI = AQE_INSPECT
V33 = "v3.3/other/local-1642039451826"
V31 = "v3.1/other/local-1596020211915"

#: What each generated scenario was built to make AQE do (see the fixtures' README).
SCENARIOS = {
    "coalesce: group by": {"coalesced": 1},
    "join: smj to bhj": {"smj-to-bhj": 1, "local-read": 2},
    "join: skew": {"skew-join": 1},
    "write: parquet": {"coalesced": 1},
}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, timeout=120)


@functools.lru_cache(maxsize=None)
def _plain(name: str, tmp: str) -> str:
    target = Path(tmp) / name.replace(".gz", "")
    target.write_bytes(gzip.decompress((GENERATED / name).read_bytes()))
    return str(target)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The generated logs as plain files (stored gzipped only to keep the repository small)."""
    tmp = str(tmp_path_factory.mktemp("eventlogs"))
    return {key: _plain(name, tmp) for key, name in (
        ("3.5", "spark35_local-1795444629345.gz"),
        ("4.3", "spark43_formatted_local-1795444604650.gz"),
        ("4.3-simple", "spark43_simple_local-1795444641232.gz"))}


def _document(path: str):
    documents = read_event_logs(path)
    assert len(documents) == 1
    return documents[0]


def _raws(path: str, notes=None):
    return list(Scanner(files.find_event_logs(path)[0], [] if notes is None else notes)
                .executions())


# ---- Spark's own event logs ----------------------------------------------------------------

def test_spark33_adaptive_log(corpus):
    document = _document(str(corpus / V33))
    app = document.application
    assert (app.app_id, app.name, app.spark_version) == \
        ("local-1642039451826", "Spark shell", "3.3.0-SNAPSHOT")
    assert [q.execution.execution_id for q in document.queries] == [0, 1]
    for query in document.queries:
        execution = query.execution
        assert execution.description == "count at <console>:23" == query.label
        assert execution.replans == 3 and execution.finished
        assert execution.duration_ms > 0
        assert query.adaptive and query.is_final_plan and query.initial is not None
        assert query.origin == "event log"
    # The final plan of execution 0 has two query stages; the repartition's exchange (10
    # partitions) posted its partition count as a driver metric.
    exchanges = [n for n in document.queries[0].final.walk() if n.name == "Exchange"]
    assert {n.metrics.get("number of partitions") for n in exchanges} == {1, 10}
    assert document.notes == ()


def test_spark31_streaming_log_static_plans(corpus):
    document = _document(str(corpus / V31))
    assert len(document.queries) == 24
    assert sorted(q.execution.execution_id for q in document.queries) == list(range(24))
    assert all(not q.adaptive and q.execution.replans == 0 for q in document.queries)
    assert document.queries[0].execution.description.strip().startswith("id = 8d268dc2")
    assert document.queries[0].execution.configs == {"spark.sql.shuffle.partitions": "2"}
    assert document.application.spark_version == "3.1.0-SNAPSHOT"


# ---- generated logs: PySpark 3.5 and 4.3 -----------------------------------------------------

@pytest.mark.parametrize("version", ["3.5", "4.3", "4.3-simple"])
def test_generated_scenarios(generated, version):
    report = diff_document(_document(generated[version]))
    by_description = {q.query.execution.description: q for q in report.queries}
    assert len(report.queries) == 5
    for description, expected in SCENARIOS.items():
        counts = by_description[description].counts
        assert {k: v for k, v in counts.items() if v} == expected, description
    assert report.application.spark_version == ("3.5.9" if version == "3.5" else "4.3.0")
    assert all(q.id == str(q.query.execution.execution_id) for q in report.queries)


@pytest.mark.parametrize("version", ["3.5", "4.3", "4.3-simple"])
def test_run_time_figures_in_findings(generated, version):
    report = diff_document(_document(generated[version]))
    by_description = {q.query.execution.description: q for q in report.queries}
    coalesced = by_description["coalesce: group by"].rewrites[0]
    assert coalesced.message.endswith("coalesced 20 -> 1 partitions")
    assert (coalesced.numbers["partitions_before"], coalesced.numbers["partitions_after"]) == \
        (20, 1)
    skew = by_description["join: skew"].rewrites[0]
    assert "(1 skewed partition(s) split into 2 tasks)" in skew.message
    # The aggregation under the write command is found and its figures attached.
    write = by_description["write: parquet"].rewrites[0]
    assert write.kind == "coalesced" and write.numbers["partitions_after"] == 1


def test_configs_overlay_modified_configs(generated):
    """The application's properties, overlaid by each execution's modifiedConfigs (3.4+): the
    generator set spark.sql.adaptive.autoBroadcastJoinThreshold to -1 only for the skew join."""
    document = _document(generated["3.5"])
    configs = {q.execution.description: q.execution.configs for q in document.queries}
    assert configs["join: smj to bhj"]["spark.sql.adaptive.autoBroadcastJoinThreshold"] == "10MB"
    assert configs["join: skew"]["spark.sql.adaptive.autoBroadcastJoinThreshold"] == "-1"
    assert configs["join: skew"]["spark.sql.shuffle.partitions"] == "20"


# ---- sparkPlanInfo trees ----------------------------------------------------------------------

def _without_text(raw, text=""):
    def blank(data):
        if data is None:
            return None
        event = json.loads(data)
        event["physicalPlanDescription"] = text
        return json.dumps(event).encode()

    return dataclasses.replace(raw, start=blank(raw.start), update=blank(raw.update))


def _logs(generated, corpus_dir):
    return [generated["3.5"], generated["4.3"], generated["4.3-simple"],
            str(corpus_dir / V33), str(corpus_dir / V31)]


def test_plan_info_trees_find_what_the_text_finds(generated, corpus):
    checked = 0
    for path in _logs(generated, corpus):
        for raw in _raws(path):
            text_query, _ = build_query(raw, path, {})
            info_query, _ = build_query(_without_text(raw), path, {})
            assert info_query.mode == "simple"
            text, info = diff_query(text_query, "t"), diff_query(info_query, "i")
            assert text.counts == info.counts, (path, raw.execution_id)
            checked += sum(text.counts.values())
    assert checked >= 15  # the comparison saw rewrites of every kind the logs hold


def test_truncated_description_falls_back_with_a_note(generated):
    raw = next(r for r in _raws(generated["3.5"]) if r.execution_id == 2)
    cut = _without_text(raw, "== Physical Plan ==\nAdaptiveSparkPlan (29)\n... Truncated plan "
                             "of 40123 characters")
    query, _ = build_query(cut, "log", {})
    assert any("is cut short; the tree is built from sparkPlanInfo" in n for n in query.notes)
    assert diff_query(query, "2").counts["skew-join"] == 1
    assert not usable_description("x Truncated plan of 12 characters")


def test_plan_info_tree_is_built_without_recursion():
    depth = 5000
    info = {"nodeName": "Range", "simpleString": "Range (0, 1, step=1, splits=1)",
            "children": [], "metadata": {}, "metrics": []}
    for number in range(depth):
        name = "WholeStageCodegen (1)" if number % 2 else "Project"
        info = {"nodeName": name, "simpleString": f"{name} [a#{number}]", "children": [info],
                "metadata": {}, "metrics": [{"name": "number of output rows",
                                             "accumulatorId": number, "metricType": "sum"}]}
    root = build_tree(info, {1: 7})
    nodes = list(root.walk())
    assert len(nodes) == depth // 2 + 1  # the codegen wrappers are stages, not operators
    assert all(n.codegen_stage == 1 for n in nodes)


# ---- streaming: chunks, pool, damage ----------------------------------------------------------

def _ids_and_updates(path, chunk_size):
    scanner = Scanner(files.find_event_logs(path)[0], [], chunk_size=chunk_size)
    return [(r.execution_id, r.updates, r.update_line, r.accumulators)
            for r in scanner.executions()]


def test_chunk_boundaries_do_not_change_what_is_found(generated):
    path = generated["3.5"]
    assert _ids_and_updates(path, 997) == _ids_and_updates(path, 8 << 20)


def test_pool_gives_the_serial_answer(generated):
    log = files.find_event_logs(generated["3.5"])[0]
    serial = [q.execution for q, _ in build_queries(Scanner(log, []), workers=1)]
    pooled = [q.execution for q, _ in build_queries(Scanner(log, []), workers=2, pool_min=1)]
    assert serial == pooled and len(serial) == 5


@pytest.mark.parametrize("batch_most", [1, 2, 3])
def test_pool_in_batches_gives_the_serial_answer(generated, monkeypatch, batch_most):
    """Executions go to the pool in batches: whole batches, one left over at the end, and a
    batch of one give the serial queries, in order."""
    from aqe_inspect.sources.eventlog import events

    log = files.find_event_logs(generated["3.5"])[0]
    serial = [q for q, _ in build_queries(Scanner(log, []), workers=1)]
    monkeypatch.setattr(events, "BATCH_MOST", batch_most)
    pooled = [q for q, _ in build_queries(Scanner(log, []), workers=2, pool_min=1)]
    assert [q.execution for q in pooled] == [q.execution for q in serial]
    assert [q.root for q in pooled] == [q.root for q in serial] and len(serial) == 5


def test_pool_in_batches_keeps_what_came_before_damage(generated, tmp_path, monkeypatch):
    """A log damaged part way, read in the pool: the executions before the damage are all
    reported, the one left in a batch not yet full too, and the damage is the error."""
    from aqe_inspect.errors import InspectError
    from aqe_inspect.sources.eventlog import events

    whole = Path(generated["3.5"]).read_bytes()
    path = tmp_path / "damaged.zst"
    lines = whole.split(b"\n")
    last_end = max(i for i, line in enumerate(lines) if b"SQLExecutionEnd" in line)
    import zstandard

    head = b"\n".join(lines[:last_end + 1]) + b"\n"
    path.write_bytes(zstandard.ZstdCompressor().compress(head) + b"\x28\xb5\x2f\xfd junk")
    monkeypatch.setattr(events, "BATCH_MOST", 2)
    log = files.find_event_logs(str(path))[0]

    def read(workers):
        found = []
        with pytest.raises(InspectError):
            for query, _ in build_queries(Scanner(log, [], chunk_size=997), workers=workers,
                                          pool_min=1):
                found.append(query.execution.execution_id)
        return found

    serial = read(1)
    found = read(2)
    assert len(serial) >= 3  # batches of two and one left over
    assert found == serial


def _scanned(data: bytes, tmp_path, name: str, by_markers: bool, chunk_size: int):
    """What a Scanner finds in `data`: each execution's events and lines, and the notes;
    `by_markers` searches every marker over every byte instead of walking the lines."""
    from aqe_inspect.sources.eventlog import events

    (tmp_path / name).mkdir()
    path = tmp_path / name / "eventlog.json"  # one name: the notes name the file
    path.write_bytes(data)
    notes: list = []
    scanner = Scanner(files.find_event_logs(str(path))[0], notes, chunk_size=chunk_size)
    if by_markers:
        scanner._lines = scanner._marker_lines  # type: ignore[method-assign]
    found = [(r.execution_id, r.start, r.start_line, r.update, r.update_line, r.updates,
              r.accumulators, r.finished, r.end_time, r.runtime.completed)
             for r in scanner.executions()]
    assert events.WALK_SAMPLE > 0
    return found, notes, scanner.app


_SAMPLE_LINES = None


def _sample_lines():
    global _SAMPLE_LINES
    if _SAMPLE_LINES is None:
        root = Path(__file__).resolve().parent.parent / "sample_plans" / "spark-4.3.0"
        _SAMPLE_LINES = [
            (root / name / "eventlog.json").read_bytes().split(b"\n")
            for name in ("five_way_join", "skew_join", "dpp_subquery")]
    return _SAMPLE_LINES


@given(st.integers(0, 2), st.lists(st.one_of(
    st.tuples(st.integers(0, 10_000), st.sampled_from([
        b"", b"x", b" " + b'{"Event":"SparkListenerLogStart","Spark Version":"9.9"}',
        b"\xef\xbb\xbf", b"junk " * 80, b'{"Event":"SparkListenerTaskStart","x":1}']),
        st.just(False)),
    st.tuples(st.integers(0, 10_000), st.sampled_from([b" ", b"\xef\xbb\xbf", b"junk " * 80]),
              st.just(True))), max_size=12), st.sampled_from([997, 4096, 1 << 20]))
@settings(max_examples=60, deadline=None)
def test_lines_walked_find_what_the_markers_find(tmp_path_factory, which, changes, chunk):
    """The scanner walks lines and tells each by its head; what it finds equals the search of
    every marker over every byte, on real logs with something put in front of events (a
    byte order mark, white space, junk: searched as before), odd and short lines added
    between them, in any chunk size."""
    lines = list(_sample_lines()[which])
    for where, piece, before in changes:
        at = 1 + where % (len(lines) - 1)  # the first line stays: it tells an event log
        if before:
            lines[at] = piece + lines[at]
        else:
            lines.insert(at, piece)
    data = b"\n".join(lines)
    tmp = tmp_path_factory.mktemp("walk")
    walked = _scanned(data, tmp, "walked", False, chunk)
    searched = _scanned(data, tmp, "searched", True, chunk)
    assert walked[0] == searched[0]
    assert [n.replace("walked", "") for n in walked[1]] == \
        [n.replace("searched", "") for n in searched[1]]
    assert vars(walked[2]) == vars(searched[2])


def test_a_line_is_the_event_its_head_names(tmp_path):
    """Two events glued on one line (a writer that lost a newline) are one line to Spark's
    own reader, the event its head names: a task's start here, which is not read. The SQL
    execution's end inside it is not taken; the execution is still reported, with a note
    that its end is not in the log."""
    lines = list(_sample_lines()[0])
    end = next(i for i, line in enumerate(lines) if b"SQLExecutionEnd" in line)
    lines[end] = b'{"Event":"SparkListenerTaskStart","Stage ID":1}' + lines[end]
    log = tmp_path / "glued.json"
    log.write_bytes(b"\n".join(lines))
    (document,) = read_event_logs(str(log))
    (query,) = document.queries
    assert not query.execution.finished
    assert any("has no end in this log" in note for note in query.notes)


def test_short_lines_are_searched_by_marker(tmp_path, monkeypatch):
    """Lines shorter than WALK_LINE_BYTES on average are searched marker by marker after the
    first WALK_SAMPLE (a Python step a line would cost more): same executions either way."""
    from aqe_inspect.sources.eventlog import events

    real = _sample_lines()[0]
    short = [b'{"Event":"SparkListenerTaskStart","Stage ID":%d}' % n for n in range(2000)]
    data = b"\n".join([*real[:3], *short, *real[3:]])
    calls = []
    original = Scanner._marker_lines

    def counted(self, buffer, begin, end, part, line):
        calls.append(end - begin)
        return (yield from original(self, buffer, begin, end, part, line))

    monkeypatch.setattr(Scanner, "_marker_lines", counted)
    walked = _scanned(data, tmp_path, "short", False, 1 << 20)
    assert any(size > 100_000 for size in calls)  # the rest of the chunk, by marker
    monkeypatch.setattr(Scanner, "_marker_lines", original)
    assert walked[0] == _scanned(data, tmp_path, "short2", True, 1 << 20)[0]
    assert len(walked[0]) == 1 and walked[0][0][7]  # the execution, ended
    assert events.WALK_LINE_BYTES > len(short[0])


@given(st.lists(st.sampled_from([b"\n", b"x", b"{}", b"\n\n", b"a" * 300]), max_size=400),
       st.integers(0, 50), st.integers(0, 50))
@settings(max_examples=300, deadline=None)
def test_count_newlines_is_bytes_count(pieces, cut_begin, cut_end):
    """The scanner's newline count hops from line to line, then counts past HOPS lines: always
    `bytes.count`, on spans of long lines, short lines and none."""
    from aqe_inspect.sources.eventlog.events import count_newlines

    data = b"".join(pieces)
    begin, end = min(cut_begin, len(data)), max(len(data) - cut_end, 0)
    assert count_newlines(data, begin, end) == data.count(b"\n", begin, end)


def _queries(log, spans: bool):
    scanner = Scanner(log, [], spans=spans, chunk_size=1 << 16)
    return [build_query(raw, log.name, scanner.app.configs) for raw in scanner.executions()]


@pytest.mark.parametrize("name", ["five_way_join", "skew_join", "dpp_subquery", "aqe_off"])
def test_events_kept_as_spans_build_the_same_queries(name, tmp_path):
    """The scanner may keep a plain file's events as spans (where they stand), which the
    worker reads back: the same queries and notes as from the bytes, for a whole file and for
    a rolling log's parts."""
    from aqe_inspect.sources.eventlog.events import Span

    sample = Path(__file__).resolve().parent.parent / "sample_plans" / "spark-4.3.0" / name
    log = files.find_event_logs(str(sample / "eventlog.json"))[0]
    assert _queries(log, True) == _queries(log, False)
    scanner = Scanner(log, [], spans=True)
    raws = list(scanner.executions())
    assert any(isinstance(raw.update, Span) or isinstance(raw.start, Span) for raw in raws)
    # A rolling log: the same events over two part files, an execution across both.
    lines = (sample / "eventlog.json").read_bytes().split(b"\n")
    folder = tmp_path / "eventlog_v2_app-1"
    folder.mkdir()
    half = len(lines) // 2
    (folder / "events_1_app-1").write_bytes(b"\n".join(lines[:half]) + b"\n")
    (folder / "events_2_app-1").write_bytes(b"\n".join(lines[half:]))
    (folder / "appstatus_app-1").write_bytes(b"")
    rolling = files.find_event_logs(str(folder))[0]
    assert len(rolling.parts) == 2
    assert [q for q, _ in _queries(rolling, True)] == [q for q, _ in _queries(rolling, False)]


def test_spans_of_a_file_cut_since_its_scan_are_an_error(tmp_path):
    """A file cut after it was scanned, before its executions are built: what its spans now
    hold is not taken for the events scanned (issue 36): an error naming the file."""
    sample = Path(__file__).resolve().parent.parent / "sample_plans" / "spark-4.3.0"
    path = tmp_path / "eventlog.json"
    path.write_bytes((sample / "five_way_join" / "eventlog.json").read_bytes())
    log = files.find_event_logs(str(path))[0]
    scanner = Scanner(log, [], spans=True)
    raws = list(scanner.executions())
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(InspectError, match="changed while it was read") as caught:
        for raw in raws:
            build_query(raw, log.name, scanner.app.configs)
    assert caught.value.source == str(path)


def test_compressed_events_are_kept_as_bytes(tmp_path):
    """Only a plain file's events have a place to be read again: a compressed log's are
    kept as their bytes, spans asked for or not, and build the same queries."""
    import zstandard

    from aqe_inspect.sources.eventlog.events import Span

    sample = Path(__file__).resolve().parent.parent / "sample_plans" / "spark-4.3.0"
    path = tmp_path / "eventlog.zstd"
    path.write_bytes(zstandard.ZstdCompressor().compress(
        (sample / "five_way_join" / "eventlog.json").read_bytes()))
    log = files.find_event_logs(str(path))[0]
    raws = list(Scanner(log, [], spans=True).executions())
    assert raws and all(isinstance(raw.update, bytes) and isinstance(raw.start, bytes)
                        for raw in raws)
    assert not any(isinstance(text, Span) for raw in raws for _, text in raw.runtime.completed)
    assert _queries(log, True) == _queries(log, False)


def _lines(path):
    return Path(path).read_bytes().split(b"\n")


def test_malformed_sql_event_is_a_note(generated, tmp_path):
    lines = _lines(generated["3.5"])
    end = next(i for i, line in enumerate(lines) if b"SQLExecutionEnd" in line)
    lines[end] = lines[end][:90] + b"}"  # the first execution's end event is damaged
    path = tmp_path / "damaged"
    path.write_bytes(b"\n".join(lines))
    document = _document(str(path))
    assert f"{path}:{end + 1}: malformed JSON" in "\n".join(document.notes)
    first = document.queries[0]
    assert first.execution.execution_id == 0 and first.execution.finished is False
    assert len(document.queries) == 5


def test_log_cut_mid_line_is_a_note(generated, tmp_path):
    data = Path(generated["3.5"]).read_bytes()
    start = data.index(b'"Event":"org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd"'
                       b',"executionId":2')
    path = tmp_path / "cut.inprogress"
    path.write_bytes(data[:start + 30])
    line = data[:start].count(b"\n") + 1
    document = _document(str(path))
    assert any(n.startswith(f"{path}:{line}: the last line is cut short") for n in document.notes)
    assert [q.execution.execution_id for q in document.queries] == [0, 1, 2]
    running = document.queries[2]
    assert running.execution.finished is False
    assert any("has no end in this log" in n for n in running.notes)
    assert diff_query(running, "2").counts["skew-join"] == 1


def test_log_without_sql_is_a_note_and_exit_0(corpus, tmp_path):
    lines = [line for line in _lines(str(corpus / V33)) if b"execution.ui" not in line]
    path = tmp_path / "app-no-sql"
    path.write_bytes(b"\n".join(lines))
    result = run("diff", str(path), "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["queries"] == [] and "no SQL execution" in data["notes"][0]
    assert data["application"]["app_id"] == "local-1642039451826"


# ---- History Server JSON ----------------------------------------------------------------------

def test_history_json_matches_the_event_log(generated):
    """The same 3.5 run read two ways: the live UI's /sql answer and the event log."""
    history = diff_document(read_history((GENERATED / "spark35_history_sql.json").read_bytes(),
                                         "h.json"))
    events = diff_document(_document(generated["3.5"]))
    assert [q.id for q in history.queries] == [q.id for q in events.queries]
    for mine, theirs in zip(history.queries, events.queries):
        assert mine.counts == theirs.counts
        assert mine.query.execution.description == theirs.query.execution.description
        assert mine.query.execution.status == "COMPLETED"
        assert mine.query.execution.replans is None
    coalesced = history.queries[0].rewrites[0]
    assert coalesced.message.endswith("coalesced 20 -> 1 partitions")


def test_history_single_execution_and_graph():
    data = (GENERATED / "spark35_history_sql_1.json").read_bytes()
    document = read_history(data, "one.json")
    assert [q.execution.description for q in document.queries] == ["join: smj to bhj"]
    assert diff_document(document).queries[0].counts["smj-to-bhj"] == 1
    item = json.loads((GENERATED / "spark43_history_sql.json").read_bytes())[2]
    tree = graph_tree(item["nodes"], item["edges"])
    reads = [n for n in tree.walk() if n.name == "AQEShuffleRead"]
    assert sorted(n.metrics.get("number of skewed partitions", 0) for n in reads) == [0, 1]
    assert metric_figure("total (min, med, max (stageId: taskId))\n2.2 KiB (0.0 B, 1 B)") == 2252
    assert metric_figure("20,000") == 20000


def test_sql_url():
    base = "http://h:18080/api/v1/applications/app-1"
    assert sql_url(base) == f"{base}/sql?details=true&planDescription=true"
    assert sql_url(f"{base}/sql/3?details=false") == f"{base}/sql/3?details=false&planDescription=true"


@pytest.fixture()
def history_server(tmp_path):
    """A local http.server serving the saved answer of a real run at the REST path."""
    root = tmp_path / "api/v1/applications/local-1795444629345"
    root.mkdir(parents=True)
    (root / "sql").write_bytes((GENERATED / "spark35_history_sql.json").read_bytes())

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(tmp_path), **kwargs)

        def translate_path(self, path):
            return super().translate_path(path.split("?")[0])

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/api/v1/applications/local-1795444629345"
    server.shutdown()


def test_url_reads_a_history_server(history_server):
    result = run("diff", "--url", history_server, "--format", "json", "--query", "skew")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [q["execution_id"] for q in data["queries"]] == [2]
    assert data["queries"][0]["counts"]["skew-join"] == 1
    assert data["application"]["app_id"] == "local-1795444629345"


def test_url_unreachable_is_one_line():
    result = run("diff", "--url", "http://127.0.0.1:9/api/v1/applications/x")
    assert result.returncode == 2
    err = result.stderr.decode()
    assert err.startswith("aqe-inspect: error: http://127.0.0.1:9/api/v1/applications/x/sql?")
    assert err.count("\n") == 1


# ---- the command line -------------------------------------------------------------------------

def test_cli_query_filter_and_json_keys(generated):
    result = run("diff", generated["4.3"], "--query", "3", "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["schema"] == "aqe-inspect/report/v1"
    assert data["application"] == {"app_id": "local-1795444604650", "name": "aqe-evgen",
                                   "spark_version": "4.3.0"}
    (query,) = data["queries"]
    assert query["execution_id"] == 3 and query["description"] == "write: parquet"
    assert query["id"] == "3" and query["replans"] == 3 and query["finished"] is True
    assert query["duration_ms"] == query["end_time"] - query["start_time"]
    by_regex = json.loads(run("diff", generated["4.3"], "-q", "^join", "-f", "json").stdout)
    assert [q["execution_id"] for q in by_regex["queries"]] == [1, 2]
    missing = run("diff", generated["4.3"], "--query", "99")
    assert missing.returncode == 2 and b"no execution matches" in missing.stderr
    bad = run("diff", generated["4.3"], "--query", "(")
    assert bad.returncode == 2 and bad.stderr.count(b"\n") == 1


def test_cli_text_sections_and_parse(generated):
    result = run("diff", generated["3.5"])
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert "Application local-1795444629345 (aqe-evgen), Spark 3.5.9" in out
    # The execution by its id (the glossary, docs/inputs.md), whatever the width wraps.
    assert "Execution 2: " in " ".join(out.split())
    assert "description 'join: skew', 0.87 s, 3 re-plan(s)" in " ".join(out.split())
    assert "Query " not in out
    parsed = json.loads(run("parse", generated["3.5"], "-f", "json", "-q", "0").stdout)
    (query,) = parsed["queries"]
    assert query["execution_id"] == 0 and parsed["application"]["spark_version"] == "3.5.9"
    reads = [n for n in query["trees"]["final"]["children"][0]["children"]]
    assert reads  # the tree is there, metrics ride on its nodes
    assert '"number of coalesced partitions": 1' in run(
        "parse", generated["3.5"], "-f", "json", "-q", "0").stdout.decode()


def test_directory_and_rolling_parts(generated, tmp_path):
    rolling = tmp_path / "eventlog_v2_local-1795444629345"
    rolling.mkdir()
    data = Path(generated["3.5"]).read_bytes()
    middle = data.index(b"\n", len(data) // 2) + 1
    (rolling / "events_1_local-1795444629345").write_bytes(data[:middle])
    (rolling / "events_2_local-1795444629345").write_bytes(data[middle:])
    (rolling / "appstatus_local-1795444629345").write_bytes(b"")
    whole = diff_document(_document(generated["3.5"]))
    parts = diff_document(_document(str(rolling)))
    assert [q.counts for q in parts.queries] == [q.counts for q in whole.queries]
    result = run("diff", str(tmp_path), "-f", "json")
    assert result.returncode == 0 and len(json.loads(result.stdout)["queries"]) == 5


def test_plain_text_still_goes_to_the_text_reader(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("nothing here\n")
    result = run("diff", str(path))
    assert result.returncode == 2 and b"starts a Spark plan" in result.stderr
    assert os.path.exists(path)


def test_a_log_stream_reads_as_it_is_asked(generated):
    stream = stream_event_logs(generated["3.5"], workers=1)
    assert stream.application is None  # nothing read yet
    query = next(stream.queries)
    assert query.execution.execution_id == 0
    assert stream.application.app_id == "local-1795444629345"  # written before any execution
    assert len(list(stream.queries)) == 4 and stream.notes == []


def test_reports_diffed_in_the_pool_are_the_serial_ones(generated, monkeypatch):
    import aqe_inspect.sources.eventlog as eventlog
    from aqe_inspect.rewrites.engine import diff_built
    from aqe_inspect.sources.eventlog import stream_event_logs

    def reports(workers):
        stream = stream_event_logs(generated["3.5"], workers=workers)
        return [(r.id, r.counts, tuple(x.message for x in r.rewrites), r.notes)
                for r in stream.built_into(diff_built)]

    serial = reports(1)
    monkeypatch.setattr(eventlog, "POOL_MIN_EXECUTIONS", 1)
    assert reports(2) == serial
    assert len(serial) == 5 and any(sum(counts.values()) for _, counts, _, _ in serial)


def test_json_written_in_the_pool_is_the_json_of_the_report(generated, monkeypatch, capsys):
    """`diff LOG -f json` has each execution written by the process that diffed it: the same
    JSON, byte for byte, as the library's report of the whole log."""
    import io

    import aqe_inspect.sources.eventlog as eventlog
    from aqe_inspect.cli import main
    from aqe_inspect.formats.json_writer import write_json
    from aqe_inspect.formats.report_json import report_to_json

    (document,) = read_event_logs(generated["3.5"])
    expected = io.StringIO()
    write_json(report_to_json(diff_document(document)), expected)
    monkeypatch.setattr(eventlog, "POOL_MIN_EXECUTIONS", 1)
    assert main(["diff", generated["3.5"], "--format", "json"]) == 0
    assert capsys.readouterr().out == expected.getvalue()
