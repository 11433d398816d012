"""How an input reaches the event-log reader, through the CLI as users run it: a compressed log
is told by its magic bytes (never read as text: no "binary data"), as a file, in a folder and on
standard input, for every codec Spark writes; a codec library that cannot be imported is named
with the pip command; a folder reports every log it holds, says which files it passed over and
why, and reads the other logs when one cannot be read (a note; exit 2 only when none can be).

Material: the real event logs of sample_plans/ (sample_plans/eventlogs.json: zstd, lz4, snappy,
lzf, plain, rolling) and a real Spark log stored gzipped in tests/fixtures/eventlogs/generated;
folders are built from copies of them. Damaged and non-log files are made from those real files
or from real plan texts.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Dict, Optional, Sequence

import pytest

from aqe_inspect.sources.eventlog import find_event_logs, read_event_logs

from .conftest import ROOT, SAMPLE_PLANS

MANIFEST = json.loads((SAMPLE_PLANS / "eventlogs.json").read_text("utf-8"))
GENERATED = Path(__file__).parent / "fixtures" / "eventlogs" / "generated"
#: A real PySpark 4.3 event log, stored gzipped: Spark never gzips, Databricks' rolled files are.
GZIP_LOG = GENERATED / "spark43_formatted_local-1795444604650.gz"
#: What the generated log's executions were built to make AQE do (its README).
GZIP_EXPECT = {"coalesce: group by": {"coalesced": 1},
               "join: smj to bhj": {"smj-to-bhj": 1, "local-read": 2},
               "join: skew": {"skew-join": 1}, "write: parquet": {"coalesced": 1}}
LIBRARIES = {"zstd": ("zstandard", "zstandard"), "lz4": ("lz4.block", "lz4"),
             "snappy": ("cramjam", "cramjam"), "lzf": ("lzf", "python-neo-lzf")}
PLAN_TEXT = SAMPLE_PLANS / "spark-4.3.0" / "skew_join" / "formatted_after.txt"


#: The scenario whose compressed log each codec's tests read (a codec compresses the logs of
#: two scenarios; these tests were written against, and damage the bytes of, these ones).
CODEC_SCENARIOS = {"zstd": "skew_join", "lz4": "smj_to_bhj", "snappy": "coalesced_aggregation",
                   "lzf": "empty_relation"}


def _entry(codec: Optional[str], layout: str = "single") -> dict:
    wanted = CODEC_SCENARIOS.get(codec) if layout == "single" else None
    return next(e for e in MANIFEST["logs"] if e["spark_version"] == "4.3.0"
                and e["codec"] == codec and e["layout"] == layout
                and e["variant"] in ("plain", codec, "rolling")
                and wanted in (None, e["scenario"]))


def _truth(entry: dict) -> Dict[str, Dict[str, int]]:
    truth = json.loads((SAMPLE_PLANS / entry["truth"]).read_text("utf-8"))
    return {entry["description"]: {k: v for k, v in truth["rewrites"].items() if v}}


#: codec -> (the real log, the executions it must give: description -> non-zero counts)
LOGS = {codec: (SAMPLE_PLANS / _entry(codec)["path"], _truth(_entry(codec)))
        for codec in ("zstd", "lz4", "snappy", "lzf")}
LOGS["plain"] = (SAMPLE_PLANS / _entry(None)["path"], _truth(_entry(None)))
LOGS["gzip"] = (GZIP_LOG, GZIP_EXPECT)
ROLLING = _entry("zstd", "rolling")


def cli(*args: str, stdin: Optional[bytes] = None, block: Sequence[str] = ()):
    """`aqe-inspect ARGS` in a fresh, isolated interpreter (-I: the checkout is not on its
    sys.path, the installed package is run); `block` makes those modules unimportable
    (a broken environment: `sys.modules[name] = None` fails their import)."""
    code = "".join(f"import sys; sys.modules[{name!r}] = None\n" for name in block)
    code += "import sys\nsys.argv[0] = 'aqe-inspect'\nfrom aqe_inspect.cli import run\nrun()\n"
    return subprocess.run([sys.executable, "-I", "-c", code, *args], input=stdin,
                          stdin=None if stdin is not None else subprocess.DEVNULL,
                          capture_output=True, cwd=ROOT, timeout=120)


def report_of(result) -> dict:
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr == b""
    return json.loads(result.stdout)


def counts(report: dict, source: Optional[str] = None) -> Dict[str, Dict[str, int]]:
    return {q["description"]: {k: v for k, v in q["counts"].items() if v}
            for q in report["queries"] if source is None or q["source"] == source}


def one_line_error(result) -> str:
    assert result.returncode == 2, (result.stdout[-2000:], result.stderr)
    err = result.stderr.decode()
    assert err.startswith("aqe-inspect: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "internal error" not in err
    return err[len("aqe-inspect: error: "):-1]


def expected(codec: str) -> Dict[str, Dict[str, int]]:
    return LOGS[codec][1]


# -- every codec: a file, a folder holding it, standard input -------------------------------------

@pytest.mark.parametrize("codec", list(LOGS))
def test_a_log_of_each_codec_reads_as_a_file(codec):
    path = LOGS[codec][0]
    report = report_of(cli("diff", str(path), "--format", "json"))
    got = counts(report, str(path))
    assert {d: got.get(d) for d in expected(codec)} == expected(codec)
    assert report["notes"] == []


@pytest.mark.parametrize("codec", list(LOGS))
def test_a_log_of_each_codec_reads_in_a_folder(codec, tmp_path):
    path = LOGS[codec][0]
    folder = tmp_path / "spark-events"
    folder.mkdir()
    shutil.copyfile(path, folder / path.name)
    report = report_of(cli("diff", str(folder), "--format", "json"))
    got = counts(report, str(folder / path.name))
    assert {d: got.get(d) for d in expected(codec)} == expected(codec)
    assert report["notes"] == []


@pytest.mark.parametrize("codec", list(LOGS))
def test_a_log_of_each_codec_reads_on_standard_input(codec):
    path = LOGS[codec][0]
    report = report_of(cli("diff", "-", "--format", "json", stdin=path.read_bytes()))
    got = counts(report, "<stdin>")
    assert {d: got.get(d) for d in expected(codec)} == expected(codec)
    assert report["notes"] == []


def test_a_rolling_log_reads_as_its_folder_and_inside_a_folder_of_applications(tmp_path):
    rolling = SAMPLE_PLANS / ROLLING["path"]
    want = _truth(ROLLING)
    report = report_of(cli("diff", str(rolling), "--format", "json"))
    assert {d: counts(report).get(d) for d in want} == want and report["notes"] == []
    apps = tmp_path / "apps"
    shutil.copytree(rolling, apps / rolling.name)
    shutil.copyfile(LOGS["lz4"][0], apps / LOGS["lz4"][0].name)
    report = report_of(cli("diff", str(apps), "--format", "json"))
    got = counts(report, str(apps / rolling.name))
    assert {d: got.get(d) for d in want} == want
    assert set(counts(report, str(apps / LOGS["lz4"][0].name))) >= set(expected("lz4"))
    # appstatus_* and the .crc checksums beside the parts are the layout's, not skipped logs
    assert report["notes"] == []


# -- a codec library that cannot be imported ------------------------------------------------------

def _library_error(codec: str, source: str) -> str:
    _, package = LIBRARIES[codec]
    return (f"{source}: reading a {codec}-compressed event log needs the '{package}' package, "
            f"which cannot be imported here: pip install {package}")


@pytest.mark.parametrize("codec", list(LIBRARIES))
def test_a_missing_library_is_named_for_a_file_a_folder_and_stdin(codec, tmp_path):
    path = LOGS[codec][0]
    module = LIBRARIES[codec][0]
    assert one_line_error(cli("diff", str(path), block=[module])) == _library_error(codec,
                                                                                   str(path))
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copyfile(path, folder / path.name)
    assert one_line_error(cli("diff", str(folder), block=[module])) == \
        _library_error(codec, str(folder / path.name))
    assert one_line_error(cli("diff", "-", stdin=path.read_bytes(), block=[module])) == \
        _library_error(codec, "<stdin>")


def test_a_missing_library_is_named_for_a_rolling_folder():
    rolling = SAMPLE_PLANS / ROLLING["path"]
    first = sorted(rolling.glob("events_1_*"))[0]
    assert one_line_error(cli("diff", str(rolling), block=["zstandard"])) == \
        _library_error("zstd", str(first))


def test_a_missing_library_in_a_mixed_folder_is_a_note_and_the_rest_is_read(tmp_path):
    """The user's report: a plain and a zstd log in one folder, the zstd one dropped unsaid."""
    folder = tmp_path / "spark-events"
    folder.mkdir()
    for codec in ("plain", "zstd"):
        shutil.copyfile(LOGS[codec][0], folder / LOGS[codec][0].name)
    report = report_of(cli("diff", str(folder), "--format", "json", block=["zstandard"]))
    assert set(counts(report)) >= set(expected("plain"))
    zstd = folder / LOGS["zstd"][0].name
    assert report["notes"] == [_library_error("zstd", str(zstd)) + "; it was skipped"]


# -- a folder says what it passed over ------------------------------------------------------------

def test_a_folder_of_every_codec_reports_each_log_and_names_what_is_not_one(tmp_path):
    folder = tmp_path / "spark-events"
    folder.mkdir()
    for codec, (path, _) in LOGS.items():
        shutil.copyfile(path, folder / f"{codec}-{path.name}")
        (folder / f".{codec}-{path.name}.crc").write_bytes(b"crc\x00\x00\x02\x00")
    (folder / "README.txt").write_text("event logs of the nightly jobs\n")
    shutil.copyfile(PLAN_TEXT, folder / "plan.txt")
    (folder / "plan.txt.gz").write_bytes(gzip.compress(PLAN_TEXT.read_bytes()))
    shutil.copyfile(SAMPLE_PLANS / "spark-4.3.0" / "skew_join" / "history_sql.json",
                    folder / "history_sql.json")
    (folder / "_SUCCESS").write_bytes(b"")
    (folder / "empty.inprogress").write_bytes(b"")
    report = report_of(cli("diff", str(folder), "--format", "json"))
    for codec, (path, want) in LOGS.items():
        got = counts(report, str(folder / f"{codec}-{path.name}"))
        assert {d: got.get(d) for d in want} == want, codec
    assert report["notes"] == [
        f"{folder}: skipped 4 files that are not event logs: README.txt, history_sql.json, "
        f"plan.txt, plan.txt.gz",
        f"{folder}: skipped 1 empty file: empty.inprogress",
        f"{folder}: skipped 1 hidden file (its name starts with . or _): _SUCCESS"]


def test_a_folder_names_at_most_five_files_a_reason(tmp_path):
    from aqe_inspect.sources.eventlog.files import search_event_logs

    shutil.copyfile(LOGS["plain"][0], tmp_path / "app")
    for number in range(7):
        (tmp_path / f"notes-{number}.txt").write_text("not a log\n")
    (log,) = search_event_logs(str(tmp_path)).logs
    assert log.name == str(tmp_path / "app")
    assert search_event_logs(str(tmp_path)).notes() == [
        f"{tmp_path}: skipped 7 files that are not event logs: notes-0.txt, notes-1.txt, "
        f"notes-2.txt, notes-3.txt, notes-4.txt and 2 more"]


def test_folders_too_deep_to_search_are_named(tmp_path):
    shutil.copyfile(LOGS["plain"][0], tmp_path / "app")
    deep = tmp_path / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    shutil.copyfile(LOGS["lz4"][0], deep / "app.lz4")  # level 5: not searched
    report = report_of(cli("diff", str(tmp_path), "--format", "json"))
    assert {q["source"] for q in report["queries"]} == {str(tmp_path / "app")}
    assert report["notes"] == [f"{tmp_path}: did not search 1 folder deeper than 4 levels: "
                               f"a/b/c/d"]
    (tmp_path / "app").unlink()
    error = one_line_error(cli("diff", str(tmp_path)))
    assert error.startswith(f"{tmp_path}: is a directory with no Spark event log in it")
    assert error.endswith("; did not search 1 folder deeper than 4 levels: a/b/c/d")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_pipes_and_broken_links_are_passed_over_with_a_note_never_opened(tmp_path):
    shutil.copyfile(LOGS["snappy"][0], tmp_path / "app.snappy")
    os.mkfifo(tmp_path / "pipe")  # opening it would wait for a writer for ever
    os.symlink(tmp_path / "gone", tmp_path / "link")
    report = report_of(cli("diff", str(tmp_path), "--format", "json"))
    assert set(counts(report)) >= set(expected("snappy"))
    assert report["notes"] == [f"{tmp_path}: skipped 2 entries that are neither a file nor a "
                               f"folder (pipes, sockets, broken links): link, pipe"]


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root reads any file")
def test_an_unreadable_log_in_a_folder_is_a_note(tmp_path):
    shutil.copyfile(LOGS["plain"][0], tmp_path / "app")
    locked = tmp_path / "locked.zstd"
    shutil.copyfile(LOGS["zstd"][0], locked)
    locked.chmod(0)
    try:
        report = report_of(cli("diff", str(tmp_path), "--format", "json"))
    finally:
        locked.chmod(0o644)
    assert report["notes"] == [f"{locked}: cannot read: Permission denied; it was skipped"]


# -- damage: a log that cannot be read does not stop the others -----------------------------------

def _damaged(source: Path, target: Path) -> None:
    raw = bytearray(source.read_bytes())
    middle = len(raw) // 2
    raw[middle:middle + 64] = bytes(64)
    target.write_bytes(bytes(raw))


def test_a_damaged_log_in_a_folder_is_a_note_and_the_others_are_read(tmp_path):
    shutil.copyfile(LOGS["plain"][0], tmp_path / "app")
    broken = tmp_path / "broken.zstd"
    _damaged(LOGS["zstd"][0], broken)
    report = report_of(cli("diff", str(tmp_path), "--format", "json"))
    assert set(counts(report, str(tmp_path / "app"))) >= set(expected("plain"))
    (note,) = report["notes"]
    assert note.startswith(f"{broken}: byte offset ") and "the zstd frame is damaged" in note
    assert note.endswith("; the rest of this log was not read")


def test_a_folder_whose_only_log_is_damaged_fails(tmp_path):
    broken = tmp_path / "broken.lz4"
    _damaged(LOGS["lz4"][0], broken)
    error = one_line_error(cli("diff", str(tmp_path)))
    assert error.startswith(f"{broken}: byte offset ") and "damaged" in error


def test_a_file_with_the_gzip_magic_that_is_not_gzip_is_a_damaged_stream(tmp_path):
    fake = tmp_path / "notes.txt"
    fake.write_bytes(b"\x1f\x8b" + PLAN_TEXT.read_bytes())
    error = one_line_error(cli("diff", str(fake)))
    assert error.startswith(f"{fake}: byte offset 0: the gzip member is damaged")
    assert "binary data" not in error
    shutil.copyfile(LOGS["plain"][0], tmp_path / "app")
    report = report_of(cli("diff", str(tmp_path), "--format", "json"))
    assert report["notes"] == [f"{error}; it was skipped"]


# -- compressed, but not Spark events -------------------------------------------------------------

def test_a_compressed_file_that_holds_no_events_is_said_to_be_one(tmp_path):
    packed = tmp_path / "plan.txt.gz"
    packed.write_bytes(gzip.compress(PLAN_TEXT.read_bytes()))
    error = one_line_error(cli("diff", str(packed)))
    assert error == (f"{packed}: a gzip stream that does not hold Spark events (its text starts "
                     f"'== Physical Plan =='); decompress it to read it as plan text")
    assert one_line_error(cli("diff", "-", stdin=packed.read_bytes())) == \
        error.replace(str(packed), "<stdin>")


def test_a_compressed_stream_cut_inside_its_first_block_is_nothing_read(tmp_path):
    """No event of it can be read: no application, no query, so no report (exit 2, saying
    where it is cut), never an empty report that a gate would take for a run."""
    cut = tmp_path / "app.lz4.inprogress"
    cut.write_bytes(LOGS["lz4"][0].read_bytes()[:1000])
    expected = (f"{cut}: no Spark application or SQL execution could be read: no event of a "
                f"Spark application in it (the last lz4 block (byte offset 0) is cut short; "
                f"read up to it)")
    assert one_line_error(cli("diff", str(cut), "--format", "json")) == expected
    assert one_line_error(cli("diff", "-", stdin=cut.read_bytes())) == \
        expected.replace(str(cut), "<stdin>")


def _gzip_with_comment(data: bytes, comment: bytes) -> bytes:
    """A gzip member (RFC 1952) whose header carries a comment: the first text comes only
    after it, however long it is."""
    deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflate.compress(data) + deflate.flush()
    return (b"\x1f\x8b\x08\x10" + struct.pack("<I", 0) + b"\x00\xff" + comment + b"\x00" + body
            + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF))


def test_a_first_block_longer_than_the_sniff_still_reads(tmp_path):
    """The first decompressed bytes may need more than the first 64 KB of the file."""
    text = gzip.decompress(GZIP_LOG.read_bytes())
    late = tmp_path / "eventlog-2021-06-15--15-00.gz"
    late.write_bytes(_gzip_with_comment(text, b"x" * (300 << 10)))
    assert gzip.decompress(late.read_bytes()) == text
    for result in (cli("diff", str(late), "--format", "json"),
                   cli("diff", "-", "--format", "json", stdin=late.read_bytes())):
        got = counts(report_of(result))
        assert {d: got.get(d) for d in GZIP_EXPECT} == GZIP_EXPECT


# -- telling a compressed stream by its magic -----------------------------------------------------

@pytest.mark.parametrize("head, name, codec", [
    (b"\x28\xb5\x2f\xfd\x04", "x", "zstd"), (b"LZ4Block", "x", "lz4"),
    (b"\x82SNAPPY\x00", "x", "snappy"), (b"ZV\x01", "x", "lzf"), (b"\x1f\x8b", "notes.txt", "gzip"),
    (b"\x28\xb5", "x", "zstd"),  # cut inside the magic, no text could start so
    (b"LZ4Bl", "app.lz4.inprogress", "lz4"),  # cut inside the magic, the name says
    (b"LZ4Bl", "notes.txt", None), (b"ZV", "notes.txt", None), (b"Z", "x", None),
    (b'{"Event":"SparkListenerLogStart"}', "x.zstd", None), (b"== Physical Plan ==", "x", None),
])
def test_the_magic_bytes_tell_a_compressed_stream(head, name, codec):
    from aqe_inspect.sources.eventlog.codecs import magic_codec

    assert magic_codec(head, name) == codec


def test_a_short_text_that_begins_a_magic_goes_to_the_text_reader(tmp_path):
    short = tmp_path / "notes.txt"
    short.write_bytes(b"ZV")
    error = one_line_error(cli("diff", str(short)))
    assert "lzf" not in error and "event log" not in error


# -- the library: the same notes, where they belong -----------------------------------------------

def test_read_event_logs_carries_the_folder_notes(tmp_path):
    shutil.copyfile(LOGS["plain"][0], tmp_path / "app")
    (tmp_path / "README.txt").write_text("not a log\n")
    (document,) = read_event_logs(str(tmp_path))
    assert document.notes[-1] == (f"{tmp_path}: skipped 1 file that is not an event log: "
                                  f"README.txt")
    assert [log.name for log in find_event_logs(str(tmp_path))] == [str(tmp_path / "app")]


def test_the_fleet_rows_of_a_folder_have_an_error_row_for_a_log_that_cannot_be_read(tmp_path):
    from aqe_inspect.fleet.rows import rows_of_log

    shutil.copyfile(LOGS["plain"][0], tmp_path / "app")
    fake = tmp_path / "fake.gz"
    fake.write_bytes(b"\x1f\x8b" + PLAN_TEXT.read_bytes())
    shutil.copyfile(LOGS["lz4"][0], tmp_path / "app.lz4")
    rows = rows_of_log(str(tmp_path))
    errors = [row for row in rows if row["error"]]
    assert [row["source"] for row in errors] == [str(fake)]
    assert errors[0]["error"].startswith(f"{fake}: byte offset 0: the gzip member is damaged")
    assert {row["source"] for row in rows if not row["error"]} == {str(tmp_path / "app"),
                                                                   str(tmp_path / "app.lz4")}


def test_executions_read_before_the_damage_are_kept_when_parsed_in_the_pool(tmp_path):
    """A long log is parsed in a pool of processes: the executions in flight when the reading
    hits damage are still given, as the serial reading gives them."""
    from aqe_inspect.errors import InspectError
    from aqe_inspect.sources.eventlog.events import Scanner, build_queries

    folder = tmp_path / Path(ROLLING["path"]).name
    shutil.copytree(SAMPLE_PLANS / ROLLING["path"], folder)
    second = sorted(folder.glob("events_2_*"))[0]
    _damaged(second, second)

    def read(workers: int):
        (log,) = find_event_logs(str(folder))
        ids = []
        with pytest.raises(InspectError, match="damaged"):
            for query, _ in build_queries(Scanner(log, []), workers, pool_min=1):
                ids.append(query.execution.execution_id)
        return ids

    serial = read(1)
    assert len(serial) >= 10
    assert read(2) == serial
