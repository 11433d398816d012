"""A driver log read by byte searches (sources/skim.py) gives what reading every line gives.

`read_document` hands the line machinery only the log messages that can hold a plan; these
tests read the same inputs both ways and compare the Documents whole (queries, trees, lines,
notes), over every real driver log and text sample of sample_plans/, the published material
in tests/fixtures, logs made larger than one buffer, and logs damaged in the ways a user's
can be (CRLF, non-UTF-8 bytes, NUL bytes, invisible characters, lines longer than
--max-size, no newline at the end).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.errors import InspectError
from aqe_inspect.sources import _document, read_document
from aqe_inspect.sources import skim as skim_module
from aqe_inspect.sources.reading import InputReader
from aqe_inspect.sources.skim import Skimmer

from .conftest import ROOT, SAMPLE_PLANS

DRIVER_LOGS = sorted(SAMPLE_PLANS.glob("spark-*/*/driver*.log"))
TEXTS = sorted(SAMPLE_PLANS.glob("spark-*/*/*.txt"))
FIXTURES = sorted(p for p in (ROOT / "tests" / "fixtures").rglob("*")
                  if p.is_file() and p.suffix in (".txt", ".log") and p.stat().st_size < 5e6)


def every_line(path: Path, max_size: int = 256 << 20):
    """The Document (or the error) of reading every line, as before skim.py."""
    reader = InputReader(str(path), max_size)
    try:
        return _document(reader.lines(), reader.name, reader, max_size)
    except InspectError as error:
        return ("error", str(error))


def skimmed(path: Path, max_size: int = 256 << 20):
    try:
        return read_document(str(path), max_size)
    except InspectError as error:
        return ("error", str(error))


def test_the_inputs_are_there():
    assert len(DRIVER_LOGS) >= 50 and len(TEXTS) >= 100


@pytest.mark.parametrize("path", DRIVER_LOGS + FIXTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_real_log_reads_the_same(path):
    assert skimmed(path) == every_line(path)


def test_every_text_sample_reads_the_same():
    differ = [str(p) for p in TEXTS if skimmed(p) != every_line(p)]
    assert not differ


def test_most_of_a_log_is_passed_over(tmp_path):
    """The point of it: the messages around the plans are never handed to the line machinery
    (these logs are plan-dense: AQE's messages, explains, plan-change logs; still, most of
    their bytes are other messages)."""
    path = tmp_path / "all.log"
    path.write_bytes(b"".join(p.read_bytes() for p in DRIVER_LOGS))
    skimmer = Skimmer(InputReader(str(path)))
    handed = sum(len(text) + 1 for _, text in skimmer.lines())
    assert skimmer.skipped > 0.5 * path.stat().st_size
    assert handed + skimmer.skipped <= path.stat().st_size + 1


def _renumbered_copies(copies: int) -> bytes:
    data = b"".join(p.read_bytes() for p in DRIVER_LOGS)
    out = []
    for copy in range(copies):
        out.append(re.sub(rb"#(\d+)", lambda m: b"#%d" % (int(m.group(1)) + copy * 100000),
                          data))
    return b"".join(out)


def test_a_log_larger_than_a_buffer_reads_the_same(tmp_path, monkeypatch):
    """Small buffers: plans, messages and lines cut at every buffer's end."""
    path = tmp_path / "driver.log"
    path.write_bytes(_renumbered_copies(2))
    expected = every_line(path)
    for size in (1 << 16, 300_001):
        monkeypatch.setattr(skim_module, "BUFFER", size)
        monkeypatch.setattr(skim_module, "CHUNK", 4096)
        assert skimmed(path) == expected, size


@pytest.mark.parametrize("not_a_log", [1 << 30, 1 << 15])
def test_a_message_longer_than_a_buffer_reads_the_same(tmp_path, monkeypatch, not_a_log):
    """A message (or a text with no log message at all) longer than a buffer is read whole;
    past NOT_A_LOG with no message start, every line is handed on."""
    explains = b"\n".join(p.read_bytes() for p in TEXTS[:40])
    trace = b"".join(b"\tat org.apache.spark.Task.run(Task.scala:%d)\n" % i
                     for i in range(3000))
    log = DRIVER_LOGS[0].read_bytes()
    monkeypatch.setattr(skim_module, "BUFFER", 1 << 14)
    monkeypatch.setattr(skim_module, "CHUNK", 4096)
    monkeypatch.setattr(skim_module, "NOT_A_LOG", not_a_log)
    for name, data in (("explains.txt", explains),
                       ("trace.log", log + b"26/11/23 12:44:21 ERROR X: failed\n" + trace + log),
                       ("tail.log", log + explains)):
        path = tmp_path / name
        path.write_bytes(data)
        assert skimmed(path) == every_line(path), name


def _damaged(seed: int) -> bytes:
    """Real driver logs with damage put in at random lines."""
    rng = random.Random(seed)
    lines = b"".join(p.read_bytes() for p in rng.sample(DRIVER_LOGS, 4)).split(b"\n")
    for _ in range(12):
        at = rng.randrange(len(lines))
        kind = rng.randrange(6)
        if kind == 0:
            lines[at] += b"\r"
        elif kind == 1:
            lines[at] = b"\xff\xfe" + lines[at]
        elif kind == 2:
            lines[at] = lines[at][:5] + b"\x00" + lines[at][5:]
        elif kind == 3:
            lines[at] = "\u200b".encode() + lines[at]
        elif kind == 4:
            lines[at] = b"progress 10%\r" + lines[at]
        else:
            lines[at] = b"  *(3) Project [a#1]" if rng.random() < 0.5 else b"Sort (12)"
    data = b"\n".join(lines)
    return data if seed % 2 else data.rstrip(b"\n")


@pytest.mark.parametrize("seed", range(8))
def test_damaged_logs_read_the_same(tmp_path, monkeypatch, seed):
    path = tmp_path / "damaged.log"
    path.write_bytes(_damaged(seed))
    monkeypatch.setattr(skim_module, "BUFFER", 1 << 16)
    monkeypatch.setattr(skim_module, "CHUNK", 8192)
    assert skimmed(path) == every_line(path)


def test_a_line_longer_than_max_size_is_refused_the_same(tmp_path):
    path = tmp_path / "long.log"
    data = DRIVER_LOGS[0].read_bytes()
    path.write_bytes(data + b"26/11/23 12:44:21 INFO X: " + b"y" * 3_000_000 + b"\n" + data)
    for max_size in (1_000_000, 2_500_000, 10_000_000):
        assert skimmed(path, max_size) == every_line(path, max_size), max_size


def test_a_log_with_no_plan_says_so_the_same(tmp_path):
    path = tmp_path / "noise.log"
    path.write_bytes(b"".join(b"26/11/23 12:44:21 INFO SparkContext: message %d\n" % i
                              for i in range(1000)))
    result = skimmed(path)
    assert result == every_line(path)
    assert result[0] == "error" and "1000 messages" in result[1]


NOISE = [b"26/11/23 12:44:21 INFO DAGScheduler: Job 3 finished: collect at x.py:12, took 0.2 s",
         b"26/11/23 12:44:21 WARN TaskSetManager: Lost task 0.0 in stage 3.0 (TID 12)",
         b"\tat org.apache.spark.scheduler.Task.run(Task.scala:141)",
         b'{"ts":"2026-11-23T12:44:38.155Z","level":"INFO","msg":"Stage (12) done","logger":"X"}',
         b"", b"   ", b"=== Result of Batch Resolution ===", b"Exception in thread main",
         b"26/11/23 12:44:21 INFO PlanChangeLogger: "]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(st.sampled_from(NOISE),
                          st.sampled_from(range(len(DRIVER_LOGS)))), min_size=1, max_size=12),
       st.booleans())
def test_any_mix_of_noise_and_logs_reads_the_same(tmp_path_factory, pieces, newline_at_end):
    """Whole real logs and lines of noise in any order, cut into small buffers."""
    parts = []
    for piece in pieces:
        if isinstance(piece, int):
            lines = DRIVER_LOGS[piece].read_bytes().split(b"\n")
            parts.append(b"\n".join(lines[:200]))
        else:
            parts.append(piece)
    data = b"\n".join(parts) + (b"\n" if newline_at_end else b"")
    path = tmp_path_factory.mktemp("mix") / "mix.log"
    path.write_bytes(data)
    expected = every_line(path)
    saved = skim_module.BUFFER, skim_module.CHUNK
    skim_module.BUFFER, skim_module.CHUNK = 1 << 14, 4096
    try:
        assert skimmed(path) == expected
    finally:
        skim_module.BUFFER, skim_module.CHUNK = saved


_LOG_LINE_PARTS = st.sampled_from(
    ["24/01/01 10:00:00 ", "2024-01-01 10:00:00,123 ", "[2024-01-01T10:00:00.1Z] ", "10:00:00",
     "INFO ", "WARN  ", "ERROR", "[main] ", "[dag-scheduler-event-loop] ", "SparkContext: ",
     "o.a.s.Logger - ", "Submitted application: x", "\t", " ", "\x1c", "\x00", "\r", "é", "]",
     "[", ":", "-", "0", "7", "{\"", "=== Applying Rule x ===", "Plan changed:", "a", "#"])


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(_LOG_LINE_PARTS, min_size=1, max_size=8))
def test_a_message_start_is_told_as_the_line_machinery_tells_it(parts):
    """`_is_start`'s shortcut for log4j lines of plain ASCII (lines.LOG_PREFIX alone) says
    what lines.message_header says of the line."""
    from aqe_inspect.sources.lines import message_header

    line = "".join(parts).encode("utf-8")
    expected = skim_module._may_start_message(line) and message_header(
        line.decode("utf-8", "replace").replace("\x00", "\ufffd")) is not None
    skimmer = Skimmer(InputReader("-"))
    assert skimmer._is_start(line) == expected
