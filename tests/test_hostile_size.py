"""--max-size bounds what every reader holds, checked while the input is decompressed.

An event longer than --max-size is skipped with a note naming its file and line, and the rest of
the log is read; a block a codec decodes whole (lz4, snappy) that would decode past it is refused
before it is decoded; the executions that never end are handed on as unfinished past MAX_OPEN
open at once or --max-size of their events; a History Server answer (one JSON document) longer
than --max-size is refused before it is read. The CLI runs in a subprocess, and its peak memory
(its largest process) is held to PEAK, with a small --max-size and with the default.

Material: the real event log of sample_plans/ (Spark 3.5.9, skew_join) and its History Server
answer, one field enlarged and written in each of Spark's codec framings (tests/hostile_sizes.py):
"bombs" of a few hundred KB that decompress to gigabytes among them.
"""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import List, Optional

import pytest

from aqe_inspect.errors import InspectError
from aqe_inspect.sources.eventlog import events, files
from aqe_inspect.sources.eventlog.events import MAX_OPEN, Scanner, build_queries
from aqe_inspect.sources.reading import DEFAULT_MAX_SIZE, check_declared, read_bounded

from .conftest import AQE_INSPECT
from .hostile_sizes import (SUFFIX, WRITERS, enlarged, line_of, never_ending, run_measured, sample,
                      write_plain, write_snappy, write_zstd)

pytest.importorskip("zstandard")
pytest.importorskip("lz4.block")
pytest.importorskip("cramjam")
pytest.importorskip("lzf")

MiB = 1 << 20
GiB = 1 << 30
#: The most memory a run may take, its largest process, whatever the input or --max-size.
PEAK = 300 * MiB
SOURCE = sample("skew_join", "3.5.9")
LINES = SOURCE.read_bytes().split(b"\n")
START = line_of(LINES, b"SQLExecutionStart")  # its line number is one more
DESCRIPTION = b'"description":"'
ORIGINAL = json.loads(LINES[START])["description"]
SMALL = "1M"


def run(path: Path, out: Path, *args: str):
    """`aqe-inspect diff PATH --format json --output OUT ARGS`: (exit code, standard error,
    the report or None, peak memory in bytes)."""
    result, peak = run_measured([*AQE_INSPECT, "diff", str(path), "--format", "json",
                                 "--output", str(out), *args], timeout=300)
    report = json.loads(out.read_text("utf-8")) if out.exists() else None
    if out.exists():
        out.unlink()
    return result.returncode, result.stderr.decode("utf-8", "replace"), report, peak


def skipped_note(path: Path, max_size: int) -> str:
    return (f"{path}:{START + 1}: a SparkListenerSQLExecutionStart event is longer than "
            f"--max-size ({max_size:,} bytes) and was skipped; raise --max-size to read it")


def counts(report: dict) -> dict:
    return {q["id"]: {k: v for k, v in q["counts"].items() if v} for q in report["queries"]}


@pytest.fixture(scope="module")
def real_counts(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("real") / "report.json"
    code, err, report, _ = run(SOURCE, out)
    assert (code, err) == (0, "")
    truth = json.loads((SOURCE.parent / "truth.json").read_text("utf-8"))["rewrites"]
    assert counts(report) == {"0": {kind: n for kind, n in truth.items() if n}}
    return counts(report)


# ---- an event longer than --max-size, in every codec -------------------------------------------

@pytest.mark.parametrize("codec", list(WRITERS))
def test_an_event_longer_than_max_size_is_skipped_with_a_note_and_the_rest_is_read(
        codec, tmp_path, real_counts):
    path = tmp_path / f"local-1795445853005{SUFFIX[codec]}"
    WRITERS[codec](enlarged(LINES, START, DESCRIPTION, 2 * MiB), path)
    code, err, report, peak = run(path, tmp_path / "out.json", "--max-size", SMALL)
    assert (code, err) == (0, "")
    assert report["notes"] == [skipped_note(path, MiB)]
    # The execution is still read, from its AQE updates: its start is what was skipped.
    assert counts(report) == real_counts
    (query,) = report["queries"]
    assert "execution 0: its start event is not in this log" in query["notes"]
    assert peak < PEAK
    # Within the default --max-size the same event is read whole.
    code, err, report, _ = run(path, tmp_path / "out.json")
    assert (code, err, report["notes"]) == (0, "", [])
    assert report["queries"][0]["description"] == "x" * (2 * MiB) + ORIGINAL


@pytest.mark.parametrize("codec, size", [
    ("zstd", 4 * GiB), ("gzip", 1 * GiB), ("plain", 300 * MiB), ("lz4", 300 * MiB),
    ("snappy", 300 * MiB), ("lzf", 300 * MiB)])
def test_a_bomb_is_read_in_bounded_memory_with_the_default_and_a_small_max_size(
        codec, size, tmp_path, real_counts):
    """A small file whose one line decompresses past any --max-size: a note, the rest read,
    and memory far below the line (it was 2x the line, 8.4 GB for 4 GiB of zstd)."""
    path = tmp_path / f"local-1795445853005{SUFFIX[codec]}"
    WRITERS[codec](enlarged(LINES, START, DESCRIPTION, size), path)
    if codec in ("zstd", "gzip"):
        assert path.stat().st_size < size // 500  # a bomb: 0.2 MB for 4 GiB, 1 MB for 1 GiB
    try:
        for max_size, given in ((DEFAULT_MAX_SIZE, ()), (MiB, ("--max-size", SMALL))):
            code, err, report, peak = run(path, tmp_path / "out.json", *given)
            assert (code, err) == (0, "")
            assert report["notes"] == [skipped_note(path, max_size)]
            assert counts(report) == real_counts
            assert peak < PEAK, f"--max-size {max_size:,}: peak {peak / MiB:.0f} MiB"
    finally:
        path.unlink()


# ---- blocks a codec decodes whole ----------------------------------------------------------------

def test_an_lz4_block_longer_than_max_size_is_refused_before_it_is_decoded(tmp_path):
    path = tmp_path / "local-1795445853005.lz4"
    WRITERS["lz4"]([SOURCE.read_bytes()], path)  # 64 KiB blocks (lz4-java's level 6)
    code, err, report, _ = run(path, tmp_path / "out.json", "--max-size", "32K")
    assert (code, report) == (2, None)
    assert err == (f"aqe-inspect: error: {path}: byte offset 0: the lz4 block decompresses to "
                   f"65,536 bytes, more than --max-size (32,768 bytes); raise --max-size to "
                   f"read it\n")


def _snappy_block(preamble: bytes, body: bytes) -> bytes:
    import struct

    return struct.pack(">i", len(preamble) + len(body)) + preamble + body


@pytest.mark.parametrize("preamble, body, said", [
    # A raw block whose preamble says 3 GiB: refused from its length, nothing allocated.
    (b"\x80\x80\x80\x80\x0c", b"\x00" * 64, "the snappy block decompresses to 3,221,225,472 "
     "bytes, more than --max-size (268,435,456 bytes); raise --max-size to read it"),
    # Longer than snappy could compress 10 bytes to.
    (b"\x0a", b"\x00" * 100, "the snappy block is damaged: impossible lengths"),
    (b"\xff\xff\xff\xff\xff\xff", b"", "the snappy block is damaged: no decoded length at its "
     "start"),
])
def test_a_snappy_block_with_impossible_or_huge_lengths_is_one_line(preamble, body, said,
                                                                    tmp_path):
    path = tmp_path / "local-1795445853005.snappy"
    path.write_bytes(b"\x82SNAPPY\x00" + bytes([0, 0, 0, 1, 0, 0, 0, 1])
                     + _snappy_block(preamble, body))
    code, err, _, peak = run(path, tmp_path / "out.json")
    assert (code, err) == (2, f"aqe-inspect: error: {path}: byte offset 16: {said}\n")
    assert peak < 100 * MiB


def test_an_lz4_block_longer_than_lz4_could_compress_to_is_damage(tmp_path):
    import struct

    path = tmp_path / "local-1795445853005.lz4"
    path.write_bytes(b"LZ4Block" + bytes([0x26]) + struct.pack("<iii", 5000, 100, 0)
                     + bytes(5000))
    code, err, _, _ = run(path, tmp_path / "out.json")
    assert (code, err) == (2, f"aqe-inspect: error: {path}: byte offset 0: the lz4 block header "
                              f"is damaged: impossible lengths\n")


# ---- executions that never end -------------------------------------------------------------------

NEVER = 3000
PAD = 100 << 10


@pytest.fixture(scope="module")
def never_ended(tmp_path_factory) -> Path:
    """3,000 starts (ids 1000 to 3999) that never end, 100 KB each (300 MB held if all were
    kept), before the real execution 0: a zstd file of a few hundred KB."""
    path = tmp_path_factory.mktemp("never") / "local-1795445853005.zstd"
    write_zstd(never_ending(LINES, NEVER, PAD), path)
    return path


def test_executions_that_never_end_are_bounded_in_number(never_ended, tmp_path):
    code, err, report, peak = run(never_ended, tmp_path / "out.json", "--query", "1000")
    assert (code, err) == (0, "")
    let_go = NEVER + 1 - MAX_OPEN  # every one but the last 1,000 open (execution 0 among them)
    assert report["notes"] == [
        f"{never_ended}: {let_go:,} executions were reported as unfinished before their end, "
        f"with the plan logged by then (more than {MAX_OPEN:,} executions were open at once)"]
    (query,) = report["queries"]
    assert query["notes"][0] == (
        f"execution 1000 was reported before its end, as unfinished, when more than "
        f"{MAX_OPEN:,} executions were open at once: its plan is the latest one logged by then, "
        f"and its later events were not read")
    assert query["status"] == "RUNNING"
    assert peak < PEAK  # all 3,000 held: more than 300 MB


def test_executions_that_never_end_are_bounded_in_memory_by_max_size(never_ended, tmp_path):
    code, err, report, peak = run(never_ended, tmp_path / "out.json", "--query", "0",
                                  "--max-size", SMALL)
    assert (code, err) == (0, "")
    (note,) = report["notes"]
    assert note.startswith(f"{never_ended}: ")
    assert note.endswith("executions were reported as unfinished before their end, with the "
                         "plan logged by then (the events held for the executions not yet "
                         "ended passed --max-size (1,048,576 bytes))")
    let_go = int(note.split(": ")[1].split(" ")[0].replace(",", ""))
    assert let_go > NEVER - 20  # at most 10 of 100 KB are held under 1 MiB
    (query,) = report["queries"]  # the real execution, whole: it started and ended in turn
    assert query["status"] == "COMPLETED" and query["counts"]["skew-join"] == 1
    assert peak < PEAK


def test_events_of_an_execution_let_go_are_skipped_and_counted(tmp_path):
    """The real execution's start, then 1,000 others: it is let go, and its three AQE updates,
    driver updates and end that follow are skipped (counted in the note), never reported as an
    execution of their own."""
    others = [re.sub(rb'"executionId":0', b'"executionId":%d' % number, LINES[START], count=1)
              for number in range(1000, 1000 + MAX_OPEN)]
    lines = LINES[:START + 1] + others + LINES[START + 1:]
    path = tmp_path / "local-1"
    write_plain([b"\n".join(lines)], path)
    notes: List[str] = []
    (log,) = files.find_event_logs(str(path))
    found = [(raw.execution_id, raw.let_go != "", raw.finished)
             for raw in Scanner(log, notes).executions()]
    assert found[0] == (0, True, False)
    assert sorted(found[1:]) == [(number, False, False) for number in range(1000, 2000)]
    late = sum(json.loads(line).get("executionId") == 0 for line in LINES[START + 1:]
               if b"org.apache.spark.sql.execution.ui.SparkListener" in line)
    assert late >= 4  # three AQE updates, the driver's updates, the end
    assert notes == [f"{path}: 1 execution was reported as unfinished before its end, with the "
                     f"plan logged by then (more than 1,000 executions were open at once); "
                     f"{late} later events of theirs were skipped"]


# ---- History Server answers ----------------------------------------------------------------------

HISTORY = sample("skew_join", "3.5.9", layout="history-sql")


def test_a_history_server_answer_longer_than_max_size_is_refused(tmp_path):
    lines = HISTORY.read_bytes().split(b"\n")
    key = b'"planDescription" : "'
    path = tmp_path / "sql.json"
    write_plain(enlarged(lines, line_of(lines, key), key, 2 * MiB), path)
    size = path.stat().st_size
    code, err, report, _ = run(path, tmp_path / "out.json", "--max-size", SMALL)
    assert (code, report) == (2, None)
    assert err == (f"aqe-inspect: error: {path}: the History Server answer ({size:,} bytes) is "
                   f"longer than --max-size (1,048,576 bytes); raise --max-size to read it\n")
    code, err, report, _ = run(path, tmp_path / "out.json")
    assert (code, err) == (0, "") and len(report["queries"]) == 1


def test_a_huge_history_server_file_is_refused_before_it_is_read(tmp_path):
    """4 GiB said by the file system (a sparse file behind a real answer's first bytes): refused
    at once, never read (it was read whole and decoded: 3.2 GB for 512 MB)."""
    path = tmp_path / "sql.json"
    path.write_bytes(HISTORY.read_bytes()[:60000])
    os.truncate(path, 4 * GiB)
    code, err, _, peak = run(path, tmp_path / "out.json")
    assert code == 2
    assert err == (f"aqe-inspect: error: {path}: the History Server answer ({4 * GiB:,} bytes) "
                   f"is longer than --max-size ({DEFAULT_MAX_SIZE:,} bytes); raise --max-size "
                   f"to read it\n")
    assert peak < 100 * MiB


class _Endless(io.RawIOBase):
    """A stream that never ends and says no size (a server that lies, a pipe)."""

    def __init__(self):
        self.given = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        buffer[:] = b"x" * len(buffer)
        self.given += len(buffer)
        return len(buffer)


def test_the_shared_guard_reads_no_more_than_max_size_plus_one():
    stream = _Endless()
    with pytest.raises(InspectError) as caught:
        read_bounded(stream, 5000, "http://host/sql", "the server's answer")
    assert str(caught.value) == ("http://host/sql: the server's answer is longer than "
                                 "--max-size (5,000 bytes); raise --max-size to read it")
    assert stream.given == 5001
    assert read_bounded(io.BytesIO(b"y" * 5000), 5000, "s", "it") == b"y" * 5000
    check_declared(None, 10, "s", "it")
    check_declared(10, 10, "s", "it")
    with pytest.raises(InspectError, match=r"^s: it \(11 bytes\) is longer than --max-size "
                                           r"\(10 bytes\)"):
        check_declared(11, 10, "s", "it")


# ---- the scanner: the same answer whatever the chunks, held in memory or not ---------------------

def _scan(path: Path, chunk_size: int, max_size: int):
    notes: List[str] = []
    (log,) = files.find_event_logs(str(path))
    found = [(raw.execution_id, raw.start is not None, raw.updates, raw.update_line,
              raw.accumulators, len(raw.runtime.completed), raw.finished)
             for raw in Scanner(log, notes, chunk_size=chunk_size, max_size=max_size,
                                task_metrics=True).executions()]
    return found, notes


@pytest.fixture(scope="module")
def enlarged_log(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("enlarged") / "local-1795445853005"
    write_plain(enlarged(LINES, START, DESCRIPTION, 2 * MiB), path)
    return path


@pytest.mark.parametrize("max_size", [MiB, DEFAULT_MAX_SIZE])
def test_chunk_boundaries_do_not_change_what_is_skipped_or_read(enlarged_log, max_size):
    whole = _scan(enlarged_log, 8 << 20, max_size)
    assert whole[0] and whole[0][0][1] is (max_size > 2 * MiB)
    for chunk_size in (97, 4096, 1 << 20):
        assert _scan(enlarged_log, chunk_size, max_size) == whole


def test_a_long_line_held_in_a_temporary_file_reads_the_same(enlarged_log, monkeypatch):
    whole = _scan(enlarged_log, 4096, DEFAULT_MAX_SIZE)
    made = []
    real = __import__("tempfile").TemporaryFile

    def counted(*args, **kwargs):
        made.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(events, "SPILL", 10_000)
    monkeypatch.setattr("tempfile.TemporaryFile", counted)
    assert _scan(enlarged_log, 4096, DEFAULT_MAX_SIZE) == whole
    assert made  # the long lines went to a temporary file


def test_a_long_line_stays_in_memory_when_no_temporary_file_can_be_written(enlarged_log,
                                                                          monkeypatch):
    whole = _scan(enlarged_log, 4096, DEFAULT_MAX_SIZE)

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(events, "SPILL", 10_000)
    monkeypatch.setattr("tempfile.TemporaryFile", full)
    assert _scan(enlarged_log, 4096, DEFAULT_MAX_SIZE) == whole


def test_the_pool_gives_the_serial_answer_under_a_small_max_size(enlarged_log):
    def ids(workers: int, max_size: Optional[int]):
        (log,) = files.find_event_logs(str(enlarged_log))
        scanner = Scanner(log, [], max_size=max_size)
        return [(q.execution.execution_id, q.notes) for q, _ in
                build_queries(scanner, workers, pool_min=0) if q is not None]

    assert ids(2, MiB) == ids(1, MiB) and ids(1, MiB)
