"""The plan-change log read from the skim's own buffers (planchange.Stream, fed by skim.py a
buffer at a time) is what reading the whole file finds (planchange.read_events): the same
events, lines and notes, whatever the buffers' sizes and wherever they cut the blocks."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.sources import planchange
from aqe_inspect.sources import reading
from aqe_inspect.sources import skim as skim_module
from aqe_inspect.sources.reading import InputReader

from .conftest import SAMPLE_PLANS

LOGS = sorted(SAMPLE_PLANS.glob("spark-*/*/driver_planchange.log"))


def _fields(event):
    return (event.kind, event.name, event.line, sorted(event.ids), event.removed, event.added,
            event.altered, event.touched, event.hints, event.logical_stage, event.damage)


def _streamed(path, buffer, chunk):
    saved = skim_module.BUFFER, skim_module.CHUNK, reading.CHUNK
    # (reading.CHUNK: what each read of the file gives, NulGaps)
    skim_module.BUFFER, skim_module.CHUNK, reading.CHUNK = buffer, chunk, chunk
    try:
        skimmer = skim_module.Skimmer(InputReader(str(path)))
        stream = skimmer.sink = planchange.Stream()
        for _ in skimmer.lines():
            pass
    finally:
        skim_module.BUFFER, skim_module.CHUNK, reading.CHUNK = saved
    return stream


def _whole(data):
    events, notes = planchange.read_events(data)
    return [_fields(event) for event in events], notes


def _check(path, data, buffer, chunk):
    stream = _streamed(path, buffer, chunk)
    assert stream.size == len(data)
    found = stream.finish()
    if found is None:  # past the first buffer: not searched there, the file is read again
        assert stream.state == "off"
        assert planchange.SIGNATURE not in data[:buffer]
        return False
    if planchange.SIGNATURE not in data:
        assert found is planchange.Stream.ABSENT
        return False
    events, notes = found
    assert ([_fields(event) for event in events], notes) == _whole(data)
    return True


def test_every_sample_log_reads_alike_in_small_buffers(tmp_path):
    assert len(LOGS) >= 10
    checked = 0
    for index, log in enumerate(LOGS):
        # A rule heading first: the log is read by the stream whatever its first buffer.
        data = _PIECES[0] + log.read_bytes()
        path = tmp_path / f"{index}.log"
        path.write_bytes(data)
        for buffer, chunk in ((1 << 12, 1 << 10), (1 << 14, 1 << 12), (1 << 22, 1 << 20)):
            checked += _check(path, data, buffer, chunk)
    assert checked == 3 * len(LOGS)


_PIECES = [b"=== Applying Rule org.apache.spark.sql.X ===\n", b"=== Result of Batch AQE Replanning ===\n",
           b" Project [a#1]      Project [a#1, b#2]\n", b"!Filter (a#1 > 2)   Sort [b#2 ASC]\n",
           b"  +- Scan t[a#1]       +- Scan t[a#1,b#2]\n", b"\n", b"   \n",
           b"24/01/01 10:00:00 INFO PlanChangeLogger: Batch Infer has no effect.\n",
           b"24/01/01 10:00:00 INFO AdaptiveSparkPlanExec: Plan changed:\n",
           b"24/01/01 10:00:00 INFO AdaptiveSparkPlanExec: Final plan:\n",
           b"24/01/01 10:00:00 INFO SparkContext: Submitted application: app\n",
           b"24/01/01 10:00:00 INFO PlanChangeLogger: \n",
           b'  {"ts":"x","msg":"\\n=== Applying Rule R ===\\n Project [a#1]   Project [b#2]"}\n',
           b"Batch X has no effect. Batch Y has no effect.\n", b"=== Applying Rule cut",
           b"x" * 300 + b"\n", b"AdaptiveSparkPlan isFinalPlan=true\n"]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.sampled_from(_PIECES), max_size=80),
       buffer=st.integers(64, 2048), chunk=st.integers(16, 512))
def test_any_log_reads_alike_whatever_the_buffers(tmp_path, pieces, buffer, chunk):
    data = _PIECES[0] + b"".join(pieces)
    path = tmp_path / "log"
    path.write_bytes(data)
    assert _check(path, data, buffer, min(chunk, buffer))


def _fed(data, ends, backs):
    """A Stream fed `data` in buffers ending at `ends` (growing), each beginning at a line's
    start at or before the start of the line the last one left not whole (`backs`: how many
    lines before it)."""
    stream = planchange.Stream()
    begin = 0
    for end, back in zip(ends, backs):
        stream.feed(data[begin:end], begin, False)
        last = data.rfind(b"\n", begin, end) + 1 or begin
        starts = [begin] + [at + 1 for at in range(begin, last) if data[at] == 10]
        begin = starts[max(0, len(starts) - 1 - back)]
    stream.feed(data[begin:], begin, True)
    return stream.finish()


@settings(max_examples=150, deadline=None)
@given(pieces=st.lists(st.sampled_from(_PIECES), max_size=60),
       cuts=st.lists(st.tuples(st.integers(1, 400), st.integers(0, 3)), max_size=30))
def test_a_stream_fed_any_buffers_reads_what_the_whole_holds(pieces, cuts):
    data = _PIECES[0] + b"".join(pieces)
    ends, backs, at = [], [], 0
    for step, back in cuts:
        at += step
        if at >= len(data):
            break
        ends.append(at)
        backs.append(back)
    events, notes = _fed(data, ends, backs)
    assert ([_fields(event) for event in events], notes) == _whole(data)


def test_every_sample_log_reads_alike_fed_in_odd_buffers():
    for log in LOGS:
        data = _PIECES[0] + log.read_bytes()
        for step in (997, 4093):
            ends = list(range(step, len(data), step))
            events, notes = _fed(data, ends, [index % 3 for index in range(len(ends))])
            assert ([_fields(event) for event in events], notes) == _whole(data)


@settings(max_examples=500, deadline=None)
@given(parts=st.lists(st.sampled_from([b"Batch ", b"Batch", b" has no effect.", b" has no",
                                       b"x", b"\r", b" ", b"=", b"\xff", b"y" * 150]),
                      max_size=12))
def test_the_last_batch_with_no_effect_is_the_regex_s(parts):
    """`_last_no_effect`'s shortcut for a line of one `Batch ` gives the regex's last match."""
    line = b"".join(parts)
    match = None
    for match in planchange._BATCH_NO_EFFECT.finditer(line):
        pass
    expected = (-1, "") if match is None else (
        3 + match.end(), match.group(1).decode("utf-8", "replace"))
    assert planchange._last_no_effect(b"abc" + line + b"\n", 3, 3 + len(line)) == expected


def test_a_log_whose_plan_change_log_starts_past_the_first_buffer_is_read_again(
        tmp_path, monkeypatch):
    """Past the first buffer the stream searches nothing: the file is read again for it
    (attach_from_file), with the same findings as when the stream reads it."""
    from aqe_inspect.sources import read_document

    filler = b"".join(b"26/11/28 10:00:%02d INFO Executor: Finished task %d.0\n" % (i % 60, i)
                      for i in range(3000))
    path = tmp_path / "late.log"
    path.write_bytes(filler + LOGS[0].read_bytes())
    whole = read_document(str(path), plan_changes=True)
    again = []
    real = planchange.attach_from_file
    monkeypatch.setattr(planchange, "attach_from_file",
                        lambda document, name: again.append(name) or real(document, name))
    monkeypatch.setattr(skim_module, "BUFFER", 1 << 14)
    monkeypatch.setattr(skim_module, "CHUNK", 1 << 12)
    monkeypatch.setattr(reading, "CHUNK", 1 << 12)
    late = read_document(str(path), plan_changes=True)
    assert again == [str(path)]
    assert any(query.plan_changes is not None for query in late.queries)
    assert [q.plan_changes for q in late.queries] == [q.plan_changes for q in whole.queries]


def test_the_skim_knows_the_heading_of_the_plan_change_log():
    assert skim_module.PLAN_CHANGE_LOG == planchange.SIGNATURE


def test_a_log_without_a_rule_heading_in_its_first_buffer_imports_no_plan_change_reader(
        tmp_path):
    """The stream is made only when the first buffer holds a rule heading: reading a log
    without one imports nothing of planchange.py (start-up of `diff` on a small log)."""
    import subprocess
    import sys

    log = next(p for p in sorted(SAMPLE_PLANS.glob("spark-*/*/driver*.log"))
               if planchange.SIGNATURE not in p.read_bytes())
    code = ("import sys; from aqe_inspect.sources import read_document; "
            "read_document(sys.argv[1], plan_changes=True); "
            "print('aqe_inspect.sources.planchange' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr[-500:]
