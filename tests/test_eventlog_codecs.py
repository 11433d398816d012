"""The byte layer of the event-log reader: finding a log's parts and decompressing them.

Material: event logs Spark wrote (tests/fixtures/eventlogs/generated/, with the sha256 of the
text Spark's own JVM decoder returned for each file), and the published logs of
tests/fixtures/published_eventlogs/ (a real rolling folder, a Databricks-layout folder). Cut and
damaged files are made here from those real files.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from aqe_inspect.errors import InspectError
from aqe_inspect.sources.eventlog import find_event_logs, looks_like_event_log, read_chunks, \
    search_event_logs
from aqe_inspect.sources.eventlog.codecs import detect_codec

FIXTURES = Path(__file__).parent / "fixtures"
GENERATED = FIXTURES / "eventlogs" / "generated"
PUBLISHED = FIXTURES / "published_eventlogs"
RAPIDS = PUBLISHED / "nvidia-spark-rapids-tools"

pytest.importorskip("zstandard")
pytest.importorskip("lz4.block")
pytest.importorskip("cramjam")
pytest.importorskip("lzf")


def _manifest_entries():
    for manifest in sorted(GENERATED.glob("spark-*/manifest.json")):
        for rel, record in json.loads(manifest.read_text())["files"].items():
            yield pytest.param(manifest.parent / rel, record, id=f"{manifest.parent.name}/{rel}")


ENTRIES = list(_manifest_entries())
SINGLE = [entry for entry in ENTRIES if "eventlog_v2" not in str(entry.values[0])]
FINAL = [entry for entry in SINGLE if not str(entry.values[0]).endswith(".inprogress")]


def _decode(log, chunk_size=1 << 16):
    notes = []
    data = b"".join(chunk for _, chunk in read_chunks(log, notes, chunk_size))
    return data, notes


def _decode_path(path, chunk_size=1 << 16):
    (log,) = find_event_logs(str(path))
    return _decode(log, chunk_size)


def _full(path) -> bytes:
    return _decode_path(path)[0]


@pytest.fixture(scope="module")
def decoded():
    """Each generated single-file log's decoded text, read once."""
    return {str(entry.values[0]): _full(entry.values[0]) for entry in SINGLE}


# -- every codec, on files Spark wrote ---------------------------------------------------------

def test_the_fixtures_cover_every_codec_of_both_spark_versions():
    seen = {(entry.values[0].parent.name, entry.values[1]["codec"]) for entry in FINAL}
    for version in ("spark-3.5.9", "spark-4.3.0"):
        for codec in ("zstd", "lz4", "snappy", "lzf"):
            assert (version, codec) in seen


@pytest.mark.parametrize("path, record", SINGLE)
def test_decoded_text_is_what_spark_decodes(path, record, decoded):
    (log,) = find_event_logs(str(path))
    assert log.layout == "file" and len(log.parts) == 1
    assert log.parts[0].codec == record["codec"]
    data = decoded[str(path)]
    assert len(data) == record["decoded_bytes"]
    assert data.count(b"\n") == record["decoded_lines"]
    assert hashlib.sha256(data).hexdigest() == record["decoded_sha256"]
    assert data.startswith(b'{"Event":"SparkListenerLogStart","Spark Version":"')
    assert looks_like_event_log(str(path))


@pytest.mark.parametrize("path, record", FINAL)
def test_a_whole_log_is_json_lines_and_reads_without_notes(path, record, decoded):
    data = decoded[str(path)]
    _, notes = _decode_path(path)
    assert notes == []
    lines = data.split(b"\n")
    assert lines[-1] == b""
    events = [json.loads(line)["Event"] for line in lines[:-1]]
    assert events[0] == "SparkListenerLogStart" and events[-1] == "SparkListenerApplicationEnd"
    assert any(event.endswith("SparkListenerSQLAdaptiveExecutionUpdate") for event in events)


@pytest.mark.parametrize("chunk_size", [1, 777, 1 << 20])
@pytest.mark.parametrize("path, record", FINAL[:4])
def test_chunks_are_never_empty_and_join_to_the_text(path, record, chunk_size, decoded):
    (log,) = find_event_logs(str(path))
    chunks = [chunk for _, chunk in read_chunks(log, [], chunk_size)]
    assert all(chunks) and b"".join(chunks) == decoded[str(path)]
    if chunk_size == 1 << 20:
        assert len(chunks) == 1


def test_a_half_written_lz4_log_reads_its_whole_blocks_with_a_note(decoded):
    for path in GENERATED.glob("spark-*/*.lz4.inprogress"):
        data, notes = _decode_path(path)
        final = decoded[str(path)[: -len(".inprogress")]]
        assert final.startswith(data) and not data.endswith(b"\n")  # Spark held the rest
        assert len(data) % 32768 == 0  # whole 32 KB blocks (spark.io.compression.lz4.blockSize)
        assert notes == [f"{path}: the lz4 stream has no end mark (a log still being written: "
                         f"what Spark had not yet compressed is not in the file)"]


# -- rolling logs ------------------------------------------------------------------------------

def test_a_rolling_log_is_read_in_numeric_order_without_appstatus():
    (folder,) = GENERATED.glob("spark-4.3.0/eventlog_v2_*")
    (log,) = find_event_logs(str(folder))
    names = [os.path.basename(part.path) for part in log.parts]
    assert log.layout == "rolling"
    assert [int(name.split("_")[1]) for name in names] == list(range(1, 11))
    assert not any("appstatus" in name or name.endswith(".crc") for name in names)
    records = json.loads((folder.parent / "manifest.json").read_text())["files"]
    hashes = {part.path: hashlib.sha256() for part in log.parts}
    notes = []
    for part, chunk in read_chunks(log, notes):
        hashes[part.path].update(chunk)
    assert notes == []
    for part in log.parts:
        rel = os.path.relpath(part.path, folder.parent)
        assert hashes[part.path].hexdigest() == records[rel]["decoded_sha256"]


def test_each_rolled_part_ends_at_a_line_end_and_events_run_in_order():
    (folder,) = GENERATED.glob("spark-4.3.0/eventlog_v2_*")
    (log,) = find_event_logs(str(folder))
    texts = {part.path: [] for part in log.parts}
    for part, chunk in read_chunks(log, []):
        texts[part.path].append(chunk)
    jobs = []
    for pieces in texts.values():
        text = b"".join(pieces)
        assert text.startswith(b'{"Event":') and text.endswith(b"\n")
        jobs.extend(json.loads(line)["Job ID"] for line in text.splitlines()
                    if line.startswith(b'{"Event":"SparkListenerJobStart"'))
    assert jobs == sorted(jobs) and len(jobs) >= 14


def test_the_published_rolling_log_reads_in_order():
    folder = RAPIDS / "eventlog_v2_local-1623876083964"
    (log,) = find_event_logs(str(folder))
    assert [os.path.basename(part.path)[:9] for part in log.parts] == ["events_1_", "events_2_"]
    data, notes = _decode(log)
    expect = json.loads((PUBLISHED / "SOURCES.json").read_text())
    assert notes == [] and data.startswith(b'{"Event":"SparkListenerLogStart"')
    assert len(data) == _published_expect(expect, "eventlog_v2_local-1623876083964")


def _published_expect(sources, name):
    (entry,) = [entry for entry in sources["logs"] if entry["name"].endswith(name)]
    return entry["expect"]["decoded_bytes"]


def test_an_empty_rolling_folder_is_an_error(tmp_path):
    folder = tmp_path / "eventlog_v2_local-1"
    folder.mkdir()
    (folder / "appstatus_local-1.inprogress").write_bytes(b"")
    with pytest.raises(InspectError, match="without events_<N>_"):
        find_event_logs(str(folder))


# -- Databricks --------------------------------------------------------------------------------

def test_the_published_databricks_folder_reads_rolled_files_then_eventlog():
    folder = RAPIDS / "db_sim_eventlog"
    (log,) = find_event_logs(str(folder))
    assert log.layout == "databricks"
    assert [os.path.basename(part.path) for part in log.parts] == [
        "eventlog-2021-06-15--15-00.gz", "eventlog"]
    assert [part.codec for part in log.parts] == ["gzip", "plain"]
    data, notes = _decode(log)
    assert notes == []
    expect = json.loads((PUBLISHED / "SOURCES.json").read_text())
    assert len(data) == _published_expect(expect, "db_sim_eventlog")


def test_a_databricks_folder_made_from_a_real_log_is_read_in_time_order(tmp_path, decoded):
    # No real Databricks folder of several rolled files was found: split a real log at line ends,
    # gzip all but the last piece under Databricks' names (an hour before midnight and after).
    text = decoded[str(FINAL[0].values[0])]
    lines = text.splitlines(keepends=True)
    cuts = [0, len(lines) // 4, len(lines) // 2, 3 * len(lines) // 4, len(lines)]
    pieces = [b"".join(lines[a:b]) for a, b in zip(cuts, cuts[1:])]
    names = ["eventlog-2021-06-15--23-00.gz", "eventlog-2021-06-16--00-00.gz",
             "eventlog-2021-06-16--01-00.gz"]
    folder = tmp_path / "db"
    folder.mkdir()
    for name, piece in zip(names, pieces):
        half = len(piece) // 2  # two gzip members in one file, as concatenated logs have
        (folder / name).write_bytes(gzip.compress(piece[:half]) + gzip.compress(piece[half:]))
    (folder / "eventlog").write_bytes(pieces[-1])
    (log,) = find_event_logs(str(folder))
    assert [os.path.basename(part.path) for part in log.parts] == names + ["eventlog"]
    assert _decode(log) == (text, [])


# -- a folder of many applications -------------------------------------------------------------

def test_a_folder_of_applications_gives_each_in_a_stable_order(tmp_path):
    shutil.copytree(RAPIDS / "db_sim_eventlog", tmp_path / "cluster" / "driver" / "ctx1")
    (rolling,) = GENERATED.glob("spark-4.3.0/eventlog_v2_*")
    shutil.copytree(rolling, tmp_path / rolling.name)
    for entry in FINAL[:2]:
        shutil.copyfile(entry.values[0], tmp_path / entry.values[0].name)
    (tmp_path / "README.txt").write_text("not a log\n")
    (tmp_path / "notes.json").write_text('[{"id": 1}]\n')
    (tmp_path / "junk.gz").write_bytes(gzip.compress(b"hello"))
    logs = find_event_logs(str(tmp_path))
    assert [(os.path.relpath(log.name, tmp_path), log.layout) for log in logs] == [
        ("cluster/driver/ctx1", "databricks"), (rolling.name, "rolling"),
        (FINAL[0].values[0].name, "file"), (FINAL[1].values[0].name, "file")]
    assert find_event_logs(str(tmp_path)) == logs
    assert looks_like_event_log(str(tmp_path))


def test_a_folder_without_logs_is_an_error(tmp_path):
    (tmp_path / "plan.txt").write_text("== Physical Plan ==\n* Project\n")
    with pytest.raises(InspectError, match="is a directory with no Spark event log in it"):
        find_event_logs(str(tmp_path))
    assert not looks_like_event_log(str(tmp_path))


# -- cut files ---------------------------------------------------------------------------------

def _cut_offsets(size):
    return sorted({1, 3, 5, 8, 16, 20, 21, 22, 30, 100, size // 7, size // 3, size // 2,
                   2 * size // 3, size - 5, size - 21, size - 1} - {0})


@pytest.mark.parametrize("path, record", FINAL)
def test_a_cut_file_gives_whole_text_up_to_the_cut_and_a_note_or_an_error(
        path, record, decoded, tmp_path):
    full = decoded[str(path)]
    raw = path.read_bytes()
    for offset in _cut_offsets(len(raw)):
        cut = tmp_path / (path.name + ".inprogress")
        cut.write_bytes(raw[:offset])
        try:
            data, notes = _decode_path(cut, chunk_size=4096)
        except InspectError as error:
            assert str(error).startswith(str(cut))
            continue
        assert full.startswith(data), offset
        assert len(data) < len(full) or notes  # lz4 cut before its end mark: all text, a note
        if record["codec"] in ("zstd", "lz4"):  # these framings tell a cut from an end
            assert notes and all(note.startswith(f"{cut}: ") for note in notes), offset


@pytest.mark.parametrize("codec, offset, what", [
    ("zstd", 1000, "the last zstd frame"), ("lz4", 1000, "the last lz4 block"),
    ("snappy", 1000, "the last snappy block"), ("lzf", 1000, "the last lzf chunk"),
    ("lz4", 12, "the last lz4 block"), ("snappy", 10, "the snappy header")])
def test_the_note_names_the_cut_block_and_its_offset(codec, offset, what, tmp_path):
    (path,) = [entry.values[0] for entry in FINAL
               if entry.values[1]["codec"] == codec and "3.5" in str(entry.values[0])]
    cut = tmp_path / path.name
    cut.write_bytes(path.read_bytes()[:offset])
    data, notes = _decode_path(cut)
    assert len(notes) == 1
    assert notes[0].startswith(f"{cut}: {what} (byte offset ")
    assert notes[0].endswith(") is cut short; read up to it")


def test_a_cut_gzip_file_reads_what_it_holds_with_a_note(tmp_path, decoded):
    text = decoded[str(FINAL[0].values[0])]
    raw = gzip.compress(text)
    for offset in (5, 20, len(raw) // 2, len(raw) - 4):
        cut = tmp_path / "eventlog-2021-06-15--15-00.gz"
        cut.write_bytes(raw[:offset])
        data, notes = _decode_path(cut)
        assert text.startswith(data)
        assert notes == [f"{cut}: the last gzip member (byte offset 0) is cut short; "
                         f"read up to it"]


def test_a_file_cut_inside_its_magic_reads_nothing_with_a_note(tmp_path):
    cut = tmp_path / "app.lz4.inprogress"
    cut.write_bytes(b"LZ4Bl")
    assert detect_codec(b"LZ4Bl", str(cut)) == "lz4"
    data, notes = _decode_path(cut)
    assert data == b"" and notes == [f"{cut}: the last lz4 block (byte offset 0) is cut short; "
                                     f"read up to it"]


# -- damage ------------------------------------------------------------------------------------

@pytest.mark.parametrize("path, record", FINAL)
def test_a_damaged_block_in_the_middle_is_an_error_naming_file_and_offset(
        path, record, tmp_path):
    raw = bytearray(path.read_bytes())
    middle = len(raw) // 2
    raw[middle:middle + 64] = bytes(64)
    broken = tmp_path / path.name
    broken.write_bytes(bytes(raw))
    with pytest.raises(InspectError) as caught:
        _decode_path(broken)
    message = str(caught.value)
    assert message.startswith(f"{broken}: byte offset ")
    offset = int(message.split("byte offset ")[1].split(":")[0])
    assert offset <= middle + 64
    assert "damaged" in message


def test_an_lz4_checksum_mismatch_is_an_error(tmp_path):
    (path,) = [entry.values[0] for entry in FINAL
               if entry.values[1]["codec"] == "lz4" and "3.5" in str(entry.values[0])]
    raw = bytearray(path.read_bytes())
    raw[17] ^= 0x01  # the first block's checksum
    broken = tmp_path / path.name
    broken.write_bytes(bytes(raw))
    with pytest.raises(InspectError, match="byte offset 0: the lz4 block is damaged: its "
                                           "checksum does not match"):
        _decode_path(broken)


# -- concatenated streams and misleading names -------------------------------------------------

@pytest.mark.parametrize("codec", ["lz4", "snappy", "zstd", "lzf"])
def test_concatenated_streams_read_as_one(codec, tmp_path, decoded):
    (path,) = [entry.values[0] for entry in FINAL
               if entry.values[1]["codec"] == codec and "3.5" in str(entry.values[0])]
    both = tmp_path / path.name
    both.write_bytes(path.read_bytes() * 2)
    assert _decode_path(both) == (decoded[str(path)] * 2, [])


def test_the_content_decides_the_codec_over_the_name(tmp_path, decoded):
    (path,) = [entry.values[0] for entry in FINAL
               if entry.values[1]["codec"] == "zstd" and "3.5" in str(entry.values[0])]
    renamed = tmp_path / "app-1.lz4"
    shutil.copyfile(path, renamed)
    data, notes = _decode_path(renamed)
    assert data == decoded[str(path)]
    assert notes == [f"{renamed}: named like a lz4 file but holds zstd data; read as zstd"]


# -- missing libraries -------------------------------------------------------------------------

@pytest.mark.parametrize("codec, module, package", [
    ("zstd", "zstandard", "zstandard"), ("lz4", "lz4.block", "lz4"),
    ("snappy", "cramjam", "cramjam"), ("lzf", "lzf", "python-neo-lzf")])
def test_a_missing_codec_library_names_the_package(codec, module, package, monkeypatch):
    (path,) = [entry.values[0] for entry in FINAL
               if entry.values[1]["codec"] == codec and "3.5" in str(entry.values[0])]
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(InspectError) as caught:
        _decode_path(path)
    assert str(caught.value) == (
        f"{path}: reading a {codec}-compressed event log needs the '{package}' package, which "
        f"cannot be imported here: pip install {package}")


def test_lz4_reads_without_xxhash(monkeypatch, decoded):
    (path,) = [entry.values[0] for entry in FINAL
               if entry.values[1]["codec"] == "lz4" and "3.5" in str(entry.values[0])]
    monkeypatch.setitem(sys.modules, "xxhash", None)
    assert _decode_path(path) == (decoded[str(path)], [])


# -- what is not an event log ------------------------------------------------------------------

@pytest.mark.parametrize("content", [
    b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4,
    bytes(range(7, 256)) * 10,
    b"PK\x03\x04 a zip file",
])
def test_binary_junk_is_an_error(content, tmp_path):
    junk = tmp_path / "junk.zstd"
    junk.write_bytes(content)
    with pytest.raises(InspectError, match="not an event log: neither JSON lines nor a stream "
                                           "Spark compresses"):
        find_event_logs(str(junk))
    assert not looks_like_event_log(str(junk))


@pytest.mark.parametrize("content", [
    b"== Physical Plan ==\nAdaptiveSparkPlan isFinalPlan=true\n",
    b'[{"id": 1, "planDescription": "..."}]',
    gzip.compress(b"hello world\n"),
    b"LZ4Block\xff garbage",
    b"\x28\xb5\x2f\xfd" + bytes(100),
    b"",
])
def test_what_is_not_an_event_log_is_not_sniffed_as_one(content, tmp_path):
    path = tmp_path / "input"
    path.write_bytes(content)
    assert looks_like_event_log(str(path)) is False


def test_sniffing_never_raises():
    assert looks_like_event_log("/nonexistent/path") is False
    assert looks_like_event_log("/proc/self/mem") is False


def test_missing_and_empty_inputs_are_clear_errors(tmp_path):
    with pytest.raises(InspectError, match="no such file or directory"):
        find_event_logs(str(tmp_path / "missing"))
    empty = tmp_path / "local-1.inprogress"
    empty.write_bytes(b"")
    with pytest.raises(InspectError, match="the file is empty"):
        find_event_logs(str(empty))


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root reads any directory")
def test_an_unreadable_folder_is_an_error(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    folder.chmod(0)
    try:
        with pytest.raises(InspectError, match="cannot read the directory"):
            find_event_logs(str(folder))
    finally:
        folder.chmod(0o755)


# -- decoding ahead in a thread ----------------------------------------------------------------

def test_background_decoding_gives_the_same_chunks_notes_and_errors(tmp_path, decoded):
    for entry in FINAL[:4]:
        (log,) = find_event_logs(str(entry.values[0]))
        assert [chunk for _, chunk in read_chunks(log, [], 4096, background=True)] == \
            [chunk for _, chunk in read_chunks(log, [], 4096)]
    (path,) = [entry.values[0] for entry in FINAL
               if entry.values[1]["codec"] == "lz4" and "3.5" in str(entry.values[0])]
    cut = tmp_path / path.name
    cut.write_bytes(path.read_bytes()[:50000])
    (log,) = find_event_logs(str(cut))
    notes = []
    data = b"".join(chunk for _, chunk in read_chunks(log, notes, 4096, background=True))
    assert decoded[str(path)].startswith(data) and len(notes) == 1
    raw = bytearray(path.read_bytes())
    raw[17] ^= 1
    cut.write_bytes(bytes(raw))
    with pytest.raises(InspectError, match="checksum does not match"):
        list(read_chunks(log, [], 4096, background=True))
    import threading

    (log,) = find_event_logs(str(path))
    chunks = read_chunks(log, [], 1, background=True)  # a consumer that stops early
    assert decoded[str(path)].startswith(next(chunks)[1])
    chunks.close()
    assert not any(thread.name == "aqe-inspect-decode" for thread in threading.enumerate())


# -- every published log -------------------------------------------------------------------------

def test_every_published_log_is_found_and_decodes_to_the_surveyed_size():
    sources = json.loads((PUBLISHED / "SOURCES.json").read_text())["logs"]
    found = search_event_logs(str(PUBLISHED))
    expect = {entry["name"]: entry["expect"]["decoded_bytes"] for entry in sources}
    # rapids tools' Databricks-layout log is its rolling log's application laid out again:
    # in one folder, one application is read once (issue 48), the copy named in a note
    copies = [path for path, _, _ in found.duplicates]
    assert sorted(os.path.relpath(path, PUBLISHED) for path in found.duplicates[0][:2]) == \
        ["nvidia-spark-rapids-tools/db_sim_eventlog",
         "nvidia-spark-rapids-tools/eventlog_v2_local-1623876083964"]
    assert len(copies) == 1 and "(application local-1623876083964, a copy of " in \
        " ".join(found.notes())
    logs = [*found.logs, *(log for path in copies for log in find_event_logs(path))]
    assert sorted(os.path.relpath(log.name, PUBLISHED) for log in logs) == sorted(expect)
    for log in logs:
        notes = []
        size = sum(len(chunk) for _, chunk in read_chunks(log, notes))
        assert (size, notes) == (expect[os.path.relpath(log.name, PUBLISHED)], [])
