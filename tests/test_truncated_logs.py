"""Driver logs that logrotate's `copytruncate` left NUL bytes in (issue 36).

copytruncate copies a log and cuts it to nothing while the writer keeps its offset: the writer's
next line lands there, and the file reads as that many NUL bytes, then log text. Such a log was
refused whole as binary data. The run of NUL bytes is now skipped with a note and the rest
read; a binary file is still refused (exit 2, one line).

The logs are real runs' driver logs from sample_plans/ (log4j text, Spark 4's JSON records, a
plan-change log), with NUL bytes put where copytruncate leaves them: at the start (a few, and
more than the 4 MB buffer the skimming reader reads in), and at the start of a line further on
(the logs of two rotations read as one).
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aqe_inspect.cli import main
from aqe_inspect.sources import reading
from aqe_inspect.sources.skim import BUFFER

from .conftest import AQE_INSPECT, SAMPLE_PLANS

LOGS = [SAMPLE_PLANS / "spark-3.5.9" / "smj_to_bhj" / "driver.log",
        SAMPLE_PLANS / "spark-4.3.0" / "skew_join" / "driver_json.log",
        SAMPLE_PLANS / "spark-3.5.9" / "coalesced_aggregation" / "driver_planchange.log"]
#: A few, and more than the skimming reader's buffer (and not a whole number of chunks).
RUNS = {"small": 4097, "over-4MB": BUFFER + reading.CHUNK // 3}
WHY = "(a file truncated while it was written, e.g. by logrotate copytruncate)"


def sample(path: Path) -> bytes:
    return path.read_bytes()  # sample_plans/ is part of the repository


def expected_kinds(log: Path) -> list:
    truth = json.loads((log.parent / "truth.json").read_text("utf-8"))
    return [kind for kind, count in truth["rewrites"].items() if count]


def run(*args) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def results(name: str, kinds: list) -> dict:
    """What diff and check say of the log at `name` (JSON), each with its notes apart."""
    found = {}
    expect = [arg for kind in kinds for arg in ("--expect", kind)]
    for command, args in (("diff", ()), ("check", expect)):
        code, out, err = run(command, name, "--format", "json", *args)
        assert code == 0, err
        data = json.loads(out)
        found[command] = (data, data.pop("notes", None))
    return found


def a_message_start_in_the_middle(data: bytes) -> int:
    """The offset of a line near the middle of `data` that starts a log message (a log4j
    date, a JSON record): where a writer's next line lands."""
    for match in re.finditer(rb"\n(?=\d{2,4}[-/]\d\d|\{\")", data):
        if match.end() >= len(data) // 2:
            return match.end()
    raise AssertionError("no log message starts past the middle")


@pytest.mark.parametrize("run_name", RUNS)
@pytest.mark.parametrize("log", LOGS, ids=lambda path: f"{path.parent.parent.name}-{path.name}")
def test_nul_bytes_at_the_start_are_skipped_with_a_note(tmp_path, monkeypatch, log, run_name):
    data = sample(log)
    monkeypatch.chdir(tmp_path)
    Path("driver.log").write_bytes(data)
    kinds = expected_kinds(log)
    assert kinds
    untouched = results("driver.log", kinds)
    if "planchange" in log.name:  # the plan-change log is read too (a search of its own)
        assert untouched["diff"][0]["queries"][0]["plan_changes"]["rules"]
    count = RUNS[run_name]
    Path("driver.log").write_bytes(b"\x00" * count + data)
    truncated = results("driver.log", kinds)
    note = f"skipped {count:,} NUL bytes at the start {WHY}"
    for command in ("diff", "check"):
        data_before, notes_before = untouched[command]
        data_after, notes_after = truncated[command]
        assert data_after == data_before, command
        assert notes_after == [*notes_before, note], command


@pytest.mark.parametrize("run_name", RUNS)
@pytest.mark.parametrize("log", LOGS, ids=lambda path: f"{path.parent.parent.name}-{path.name}")
def test_nul_bytes_starting_a_line_further_on_are_skipped(tmp_path, monkeypatch, log, run_name):
    """Two rotations' logs read as one (`cat driver.log.1 driver.log`): the later one's NUL
    bytes begin a line in the middle."""
    data = sample(log)
    monkeypatch.chdir(tmp_path)
    Path("driver.log").write_bytes(data)
    kinds = expected_kinds(log)
    untouched = results("driver.log", kinds)
    at, count = a_message_start_in_the_middle(data), RUNS[run_name]
    Path("driver.log").write_bytes(data[:at] + b"\x00" * count + data[at:])
    truncated = results("driver.log", kinds)
    note = f"skipped {count:,} NUL bytes at byte {at:,} {WHY}"
    for command in ("diff", "check"):
        assert truncated[command][0] == untouched[command][0], command
        assert truncated[command][1] == [*untouched[command][1], note], command


def test_standard_input_that_starts_with_nul_bytes_is_read_the_same():
    data = sample(LOGS[0])
    count = RUNS["over-4MB"]
    untouched = subprocess.run([*AQE_INSPECT, "diff", "-", "--format", "json"], input=data,
                               capture_output=True, timeout=120)
    truncated = subprocess.run([*AQE_INSPECT, "diff", "-", "--format", "json"],
                               input=b"\x00" * count + data, capture_output=True, timeout=120)
    assert untouched.returncode == truncated.returncode == 0, truncated.stderr[-500:]
    before, after = json.loads(untouched.stdout), json.loads(truncated.stdout)
    assert after.pop("notes") == [*before.pop("notes"),
                                  f"skipped {count:,} NUL bytes at the start {WHY}"]
    assert after == before


# ---- binary data is still refused -----------------------------------------------------------

def one_error(err: str) -> str:
    assert err.startswith("aqe-inspect: error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("command", ["diff", "check", "parse", "why"])
def test_binary_data_after_nul_bytes_is_refused(tmp_path, monkeypatch, command):
    """A compressed event log's bytes behind NUL bytes (so not told by its magic): the NUL
    bytes are skipped, what follows is binary, and the file is refused as before."""
    monkeypatch.chdir(tmp_path)
    snappy = sample(SAMPLE_PLANS / "spark-3.5.9" / "coalesced_aggregation" / "eventlog.snappy")
    Path("junk.log").write_bytes(b"\x00" * 100 + snappy)
    extra = ["--expect", "coalesced"] if command == "check" else []
    code, out, err = run(command, "junk.log", *extra)
    assert code == 2 and out == ""
    assert one_error(err).startswith(
        "aqe-inspect: error: junk.log:1:8: expected plan text, found binary data (a NUL byte "
        "after 100 NUL bytes at the start)")


@pytest.mark.parametrize("data", [b"\x00\x01binary junk\xff" * 100, b"\x00" * 4096 + b"\x02\x03",
                                  b"\x00\x00\n2024-01-01 text"],
                         ids=["control-byte-after-one-NUL", "control-bytes-after-a-run",
                              "newline-after-a-run"])
def test_nul_bytes_not_followed_by_text_are_binary_data_as_before(tmp_path, monkeypatch, data):
    monkeypatch.chdir(tmp_path)
    Path("junk.log").write_bytes(data)
    code, out, err = run("diff", "junk.log")
    assert code == 2 and out == ""
    assert one_error(err).startswith(
        "aqe-inspect: error: junk.log:1:1: expected plan text, found binary data (a NUL byte)")


def test_a_file_of_nul_bytes_only_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("cut.log").write_bytes(b"\x00" * (BUFFER + 5))
    code, out, err = run("diff", "cut.log")
    assert code == 2 and out == ""
    assert one_error(err) == (
        f"aqe-inspect: error: cut.log: holds nothing but {BUFFER + 5:,} NUL bytes (a file "
        "truncated while it was written, e.g. by logrotate copytruncate, and nothing written "
        "since?)\n")


# ---- the gaps, at any chunk boundary --------------------------------------------------------

#: The spec of NulGaps, as one regular expression over the whole text: a run of NUL bytes at
#: the start or after a newline, followed by a byte that begins text or by the end.
GAP = re.compile(rb"(?:\A|(?<=\n))\x00+(?=[\x09\x20-\x7e\x80-\xff]|\Z)")


def gaps_removed(data: bytes, chunk: int, monkeypatch) -> tuple:
    monkeypatch.setattr(reading, "CHUNK", chunk)
    gaps = reading.NulGaps(io.BytesIO(data))
    pieces = []
    while True:
        piece = gaps.read(chunk)
        if not piece:
            break
        pieces.append(piece)
    return b"".join(pieces), gaps


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from([b"\x00", b"\x00" * 7, b"\n", b"a", b"2024 x", b"\x01",
                                       b"\xc3\xa9", b"\t", b"\x7f", b"\x00\x00\x00"]),
                      max_size=30),
       chunk=st.integers(1, 9))
def test_the_gaps_taken_out_are_the_runs_that_begin_a_line_before_text(parts, chunk):
    data = b"".join(parts)
    with pytest.MonkeyPatch.context() as monkeypatch:
        out, gaps = gaps_removed(data, chunk, monkeypatch)
    assert out == GAP.sub(b"", data)
    runs = [match for match in GAP.finditer(data)]
    leading = runs[0].end() if runs and runs[0].start() == 0 else 0
    assert gaps.leading == leading
    later = [match for match in runs if match.start() > 0]
    assert gaps.gaps == len(later)
    assert gaps.gap_bytes == sum(match.end() - match.start() for match in later)
    assert gaps.first_gap == (later[0].start() if later else None)


def test_a_log_without_nul_bytes_is_handed_on_in_the_chunks_read(monkeypatch):
    data = sample(LOGS[0])
    out, gaps = gaps_removed(data, 1000, monkeypatch)
    assert out == data and gaps.notes() == [] and gaps.handed_on == len(data)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
