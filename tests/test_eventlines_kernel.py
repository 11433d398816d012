"""The compiled walk of an event log's lines (sources/eventlog/_eventlines_c.pyx) gives what
its pure-Python twin (_eventlines_py.py: `bytes.find` from newline to newline, each line's
head told by `startswith`) gives, on the same buffer, bounds and markers: the same entries
(line number, bounds, the marker found or FOREIGN), lines walked and where the walk stopped,
or the same error. Held equal on arbitrary bytes built of the pieces that make and break an
event's head, on lines short and long (the walk's sample), and on the sample event logs.

The compiled side is skipped, with its reason, when it is not built; under CI=true it must
be built, so the test fails instead.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.sources.eventlog import _eventlines_py, events

from .conftest import SAMPLE_PLANS, compiled_kernel


def _compiled():
    return compiled_kernel("aqe_inspect.sources.eventlog._eventlines_c")


MARKERS = (events.SQL_EVENT, b'"Event":"SparkListenerStage', events.LOG_START,
           events.APP_START, events.ENVIRONMENT)
PIECES = [b'{"Event":"', b'{', b'"Event":"', b"org.apache.spark.sql.execution.ui.SparkListener",
          b'SparkListenerStage', b'SparkListenerLogStart"', b'SparkListenerApplicationStart"',
          b"\n", b"\r\n", b"x", b" ", b'"', b"Submitted", b'{"Event": "', b"\xff", b"\x00",
          b"SQLExecutionStart\"", b"}" * 5, b"a" * 300]


def _outcome(module, buffer, begin, end, markers, sample, line_bytes):
    try:
        return module.event_lines(buffer, begin, end, markers, sample, line_bytes)
    except Exception as error:  # noqa: BLE001 - the same error either way
        return type(error).__name__


def _same(buffer, begin, end, markers=MARKERS, sample=events.WALK_SAMPLE,
          line_bytes=events.WALK_LINE_BYTES):
    kernel = _compiled()
    made = _outcome(kernel, buffer, begin, end, markers, sample, line_bytes)
    assert made == _outcome(_eventlines_py, buffer, begin, end, markers, sample, line_bytes)
    return made


buffers = st.one_of(st.lists(st.sampled_from(PIECES), max_size=60).map(b"".join),
                    st.binary(max_size=80))
marker_sets = st.one_of(st.just(MARKERS), st.lists(st.sampled_from(
    [*MARKERS, b"", b'"Event":"', b'"Event":"SparkListenerStageSubmitted"', b"x\ny"]),
    max_size=6).map(tuple))


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(buffers, marker_sets, st.data())
def test_the_kernel_walks_the_lines_as_the_twin_does(buffer, markers, data):
    last = buffer.rfind(b"\n")
    end = data.draw(st.one_of(st.just(last), st.integers(-1, len(buffer))))
    begin = data.draw(st.one_of(st.just(0), st.integers(0, max(0, len(buffer)))))
    sample = data.draw(st.sampled_from([events.WALK_SAMPLE, 1, 2, 3]))
    line_bytes = data.draw(st.sampled_from([events.WALK_LINE_BYTES, 1, 10, 40]))
    _same(buffer, begin, end, markers, sample, line_bytes)


def test_the_kernel_stops_where_the_twin_does_on_short_lines():
    buffer = b'{"Event":"SparkListenerTaskEnd"}\n' * 300 + b'{"Event":"SparkListenerStageX"}\n'
    entries, walked, rest = _same(buffer, 0, len(buffer) - 1)
    assert walked == events.WALK_SAMPLE and rest == 33 * events.WALK_SAMPLE and entries == []


def test_the_twin_tells_each_line_by_its_head():
    buffer = (b'{"Event":"SparkListenerLogStart","Spark Version":"3.5.0"}\n'
              b'{"Event":"SparkListenerTaskEnd"}\n'
              b'not an event "Event":"SparkListenerStageSubmitted"\n')
    entries, walked, rest = _eventlines_py.event_lines(buffer, 0, len(buffer) - 1, MARKERS,
                                                       events.WALK_SAMPLE, 0)
    assert (walked, rest) == (3, -1)
    assert [(number, kind) for number, _, _, kind in entries] == [(0, 2), (2, -1)]
    assert buffer[entries[0][1]:entries[0][2]].endswith(b'"3.5.0"}')


def test_the_kernel_walks_the_sample_event_logs_as_the_twin_does():
    checked = 0
    for path in sorted(SAMPLE_PLANS.rglob("eventlog*")):
        if not path.is_file() or path.suffix not in (".json", ".inprogress"):
            continue
        buffer = path.read_bytes()
        last = buffer.rfind(b"\n")
        if last < 0:
            continue
        _same(buffer, 0, last)
        checked += 1
    assert checked > 10
