"""Event logs that change under the reader, and logs written again with JSON blanks (issue 36).

The logs are real runs from sample_plans/; the hostile part is made here: a file replaced by
another of the same size, cut, renamed or deleted while the log is read (by a hook on the
read-back of the events kept as spans, `events.resolved`), and a log written again by
Python's `json.dumps` (blanks after `:` and `,`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from aqe_inspect import cli
from aqe_inspect.errors import InspectError
from aqe_inspect.sources import eventlog
from aqe_inspect.sources.eventlog import events, files, read_event_logs
from aqe_inspect.sources.eventlog.events import Scanner

SAMPLES = Path(__file__).resolve().parent.parent / "sample_plans"
THREE_QUERIES = SAMPLES / "spark-3.5.9" / "dynamic_partition_pruning" / "eventlog.json"
OTHER = SAMPLES / "spark-4.3.0" / "five_way_join" / "eventlog.json"


def _run(capsys, *args: str):
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _hook(monkeypatch, act):
    """`act()` once, at the first read-back of an execution's spans: the log changes after
    the scan read it and before its executions are built."""
    done = []
    real = events.resolved

    def hooked(raw):
        if not done:
            done.append(True)
            act()
        return real(raw)

    monkeypatch.setattr(events, "resolved", hooked)


def _same_size(data: bytes, size: int) -> bytes:
    """Another log's bytes made `size` long (cut, or padded with blank lines)."""
    return (data + b"\n" * size)[:size]


# ---- 1: a file replaced by another of the same size ---------------------------------------

def test_a_log_replaced_by_another_of_its_size_is_an_error(tmp_path, monkeypatch, capsys):
    path = tmp_path / "eventlog.json"
    shutil.copyfile(THREE_QUERIES, path)
    other = _same_size(OTHER.read_bytes(), path.stat().st_size)

    def replace() -> None:
        (tmp_path / "new").write_bytes(other)
        os.replace(tmp_path / "new", path)

    _hook(monkeypatch, replace)
    code, out, err = _run(capsys, "diff", str(path), "--format", "json")
    assert code == 2
    assert err.startswith(f"aqe-inspect: error: {path}: changed while it was read")
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_a_log_rewritten_in_place_with_other_ids_is_an_error(tmp_path, monkeypatch):
    """The same inode, the same size, other events at the places scanned: each event read
    back is checked to be the one scanned (its name and execution id)."""
    path = tmp_path / "eventlog.json"
    data = THREE_QUERIES.read_bytes()
    path.write_bytes(data)
    swapped = data.replace(b'"executionId":0,', b'"executionId":9,')
    assert swapped != data and len(swapped) == len(data)

    def rewrite() -> None:
        with open(path, "r+b") as handle:
            handle.write(swapped)
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))

    _hook(monkeypatch, rewrite)
    with pytest.raises(InspectError, match="changed while it was read") as caught:
        read_event_logs(str(path), workers=1)
    assert caught.value.source == str(path)


def test_a_log_replaced_while_pooled_workers_read_it_is_an_error(tmp_path, monkeypatch):
    """The same, with the executions built in the pool's processes: the error crosses back
    whole (its file named), and no query of the mix is given."""
    path = tmp_path / "eventlog.json"
    shutil.copyfile(THREE_QUERIES, path)
    other = _same_size(OTHER.read_bytes(), path.stat().st_size)
    flag = tmp_path / "replaced"

    def replace() -> None:
        if not flag.exists():
            flag.write_bytes(b"")
            (tmp_path / "new").write_bytes(other)
            os.replace(tmp_path / "new", path)

    monkeypatch.setattr(eventlog, "POOL_MIN_EXECUTIONS", 0)
    _hook(monkeypatch, replace)
    with pytest.raises(InspectError, match="changed while it was read") as caught:
        read_event_logs(str(path), workers=2)
    assert caught.value.source == str(path)


def test_a_log_unchanged_reads_as_before(tmp_path):
    """The checks cost no false alarm: the same log read twice gives the same queries."""
    path = tmp_path / "eventlog.json"
    shutil.copyfile(THREE_QUERIES, path)
    first = read_event_logs(str(path), workers=1)[0]
    second = read_event_logs(str(path), workers=1)[0]
    assert len(first.queries) == 3
    assert [q.execution.execution_id for q in first.queries] == \
        [q.execution.execution_id for q in second.queries]
    assert not [note for note in first.notes if "malformed" in note]


def test_a_log_grown_since_its_scan_is_read(tmp_path, monkeypatch):
    """A running application's log grows while it is read: bytes added at its end change
    nothing scanned, and are no error."""
    path = tmp_path / "eventlog.json"
    shutil.copyfile(THREE_QUERIES, path)

    def grow() -> None:
        with open(path, "ab") as handle:
            handle.write(b'{"Event":"SparkListenerExecutorAdded","Timestamp":1}\n')

    _hook(monkeypatch, grow)
    document = read_event_logs(str(path), workers=1)[0]
    assert len(document.queries) == 3


def test_a_log_cut_while_it_is_scanned_is_an_error(tmp_path, monkeypatch):
    """logrotate's copytruncate while the scan reads: what was read cannot be trusted."""
    path = tmp_path / "eventlog.json"
    shutil.copyfile(THREE_QUERIES, path)
    real = files.decode

    def cut_after_first_chunk(handle, *args, **kwargs):
        for number, chunk in enumerate(real(handle, *args, **kwargs)):
            if number == 0:
                os.truncate(path, 100)
            yield chunk

    monkeypatch.setattr(files, "decode", cut_after_first_chunk)
    notes: list = []
    scanner = Scanner(files.find_event_logs(str(path))[0], notes, chunk_size=1 << 16)
    with pytest.raises(InspectError, match="changed while it was read") as caught:
        list(scanner.executions())
    assert caught.value.source == str(path)


# ---- 2: .inprogress renamed, a rolling part deleted ---------------------------------------

def test_an_inprogress_log_renamed_mid_read_is_followed(tmp_path, monkeypatch, capsys):
    """Spark renames `<app>.inprogress` to `<app>` at the application's end: the events read
    back are read from the renamed file (the same inode), all executions kept, no note."""
    path = tmp_path / "local-1.inprogress"
    shutil.copyfile(THREE_QUERIES, path)
    code, expected, _ = _run(capsys, "parse", str(path), "--format", "json")
    assert code == 0
    _hook(monkeypatch, lambda: os.rename(path, tmp_path / "local-1"))
    code, out, err = _run(capsys, "parse", str(path), "--format", "json")
    assert code == 0, err
    assert out == expected
    assert "malformed" not in out
    assert len(json.loads(out)["queries"]) == 3


def test_a_log_renamed_to_another_name_is_followed(tmp_path, monkeypatch):
    path = tmp_path / "eventlog.json"
    shutil.copyfile(THREE_QUERIES, path)
    _hook(monkeypatch, lambda: os.rename(path, tmp_path / "moved.json"))
    document = read_event_logs(str(path), workers=1)[0]
    assert len(document.queries) == 3
    assert not [note for note in document.notes if "malformed" in note]


def _rolling(tmp_path: Path) -> Path:
    """The sample log as a rolling log of two parts, cut between its executions' events."""
    folder = tmp_path / "eventlog_v2_local-1"
    folder.mkdir()
    lines = THREE_QUERIES.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    (folder / "events_1_local-1").write_bytes(b"".join(lines[:half]))
    (folder / "events_2_local-1").write_bytes(b"".join(lines[half:]))
    (folder / "appstatus_local-1").write_bytes(b"")
    return folder


def test_a_rolling_part_deleted_mid_read_is_an_error(tmp_path, monkeypatch, capsys):
    """Compaction deletes a rolling log's older parts: their events cannot be read back, and
    that is said (one line, exit 2), not thousands of 'malformed JSON' notes and exit 0."""
    folder = _rolling(tmp_path)
    code, out, err = _run(capsys, "parse", str(folder), "--format", "json")
    assert code == 0 and len(json.loads(out)["queries"]) == 3
    part = folder / "events_1_local-1"
    _hook(monkeypatch, lambda: os.unlink(part))
    code, out, err = _run(capsys, "parse", str(folder), "--format", "json")
    assert code == 2
    assert err.startswith(f"aqe-inspect: error: {part}: went away while it was read")
    assert "malformed" not in err


# ---- 9: JSON blanks --------------------------------------------------------------------------

def _respaced(data: bytes, **dumps) -> bytes:
    return b"".join(json.dumps(json.loads(line), **dumps).encode() + b"\n"
                    for line in data.splitlines() if line.strip())


@pytest.mark.parametrize("sample", ["spark-3.5.9/dynamic_partition_pruning",
                                    "spark-4.3.0/five_way_join", "spark-3.5.9/local_read"])
@pytest.mark.parametrize("dumps", [{}, {"separators": (", ", " : ")},
                                   {"ensure_ascii": False, "separators": (",", ": ")}])
def test_a_log_written_again_with_json_blanks_reads_the_same(tmp_path, capsys, sample, dumps):
    """Python's json.dumps (blanks after `:` and `,`) and other writers' blanks: the same
    queries as the log Spark wrote, not 'no SQL execution in this event log'."""
    original = (SAMPLES / sample / "eventlog.json").read_bytes()
    compact, spaced = tmp_path / "compact" / "log", tmp_path / "spaced" / "log"
    compact.parent.mkdir()
    spaced.parent.mkdir()
    compact.write_bytes(original)
    spaced.write_bytes(_respaced(original, **dumps))
    code, expected, _ = _run(capsys, "parse", str(compact), "--format", "json")
    assert code == 0
    code, out, err = _run(capsys, "parse", str(spaced), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["queries"]
    assert out.replace(str(spaced), str(compact)) == expected


@pytest.mark.parametrize("chunk_size", [4096, 65536, 8 << 20])
def test_json_blanks_at_any_chunk_boundary_and_mixed_forms(tmp_path, chunk_size):
    """Blanks found part way (the first half as Spark wrote it, the rest written again),
    read in chunks of any size: the same executions and updates as the compact log."""
    original = THREE_QUERIES.read_bytes()
    lines = original.splitlines(keepends=True)
    half = len(lines) // 2
    mixed = b"".join(lines[:half]) + _respaced(b"".join(lines[half:]))
    paths = []
    for name, data in (("compact", original), ("mixed", mixed),
                       ("spaced", _respaced(original))):
        paths.append(tmp_path / name)
        paths[-1].write_bytes(data)
    found = []
    for path in paths:
        raws = list(Scanner(files.find_event_logs(str(path))[0], [],
                            chunk_size=chunk_size).executions())
        found.append([(raw.execution_id, raw.updates, raw.finished, raw.start_line,
                       raw.update_line) for raw in raws])
    assert found[0] and found[0] == found[1] == found[2]


def test_compacting_keeps_strings_and_line_numbers():
    from aqe_inspect.sources.eventlog.events import compact_json_lines

    text = b'{"Event": "X", "a b": "c  d\\" e", "n": [1, 2.5e3]}\r\n{ "Event" : "Y" }\n'
    assert compact_json_lines(text) == \
        b'{"Event":"X","a b":"c  d\\" e","n":[1,2.5e3]}\n{"Event":"Y"}\n'
