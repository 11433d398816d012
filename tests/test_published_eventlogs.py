"""Published event logs: the fixtures are what SOURCES.json says they are.

The logs under tests/fixtures/published_eventlogs/ were written by Spark (and vendors) for other
projects' tests and copied byte for byte. These tests hold the inventory to its record (every file
listed, sizes and sha256 unchanged), recount each log's SQL events with a plain line match that
shares nothing with survey.py, and re-run survey.py to check the stored 'expect' facts that reader
tests compare with.
"""
from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import json
import re
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "published_eventlogs"
SOURCES = json.loads((FIXTURES / "SOURCES.json").read_text(encoding="utf-8"))
LOGS = SOURCES["logs"]
BOOKKEEPING = {"SOURCES.json", "README.md", "survey.py"}

# An event line starts with its "Event" field, as Spark's JsonProtocol writes it.
EVENT_LINE = re.compile(rb'^\{"Event":"(?:[\w$]+\.)*(\w+)"', re.MULTILINE)
LOG_START = re.compile(rb'^\{"Event":"SparkListenerLogStart","Spark Version":"([^"]+)"', re.MULTILINE)
DBC_METADATA = re.compile(rb'^\{"Event":"DBCEventLoggingListenerMetadata","Spark Version":"([^"]+)"',
                          re.MULTILINE)
APP_ID = re.compile(rb'^\{"Event":"SparkListenerApplicationStart".*?"App ID":"([^"]+)"', re.MULTILINE)


def _survey_module():
    spec = importlib.util.spec_from_file_location("published_eventlogs_survey",
                                                  FIXTURES / "survey.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _needs(log: dict) -> None:
    """Skip a log whose codec library is not installed (zstandard is not a test dependency yet)."""
    codecs = log["expect"]["codec"]
    if "zstd" in (codecs if isinstance(codecs, list) else [codecs]):
        pytest.importorskip("zstandard")


def _decoded(log: dict) -> bytes:
    """The log's text: its files in reading order, each decompressed on its own."""
    out = bytearray()
    for entry in _reading_order(log):
        data = (FIXTURES / entry["fixture"]).read_bytes()
        if data[:4] == b"\x28\xb5\x2f\xfd":
            import zstandard

            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data),
                                                                read_across_frames=True)
            out += reader.read()
        elif data[:2] == b"\x1f\x8b":
            out += gzip.decompress(data)
        else:
            out += data
    return bytes(out)


def _reading_order(log: dict) -> list[dict]:
    files = [f for f in log["files"] if not Path(f["fixture"]).name.startswith("appstatus_")]
    if log["expect"]["layout"] == "rolling":
        return sorted(files, key=lambda f: int(Path(f["fixture"]).name.split("_")[1]))
    if log["expect"]["layout"] == "databricks-rolled":
        return sorted(files, key=lambda f: (Path(f["fixture"]).name == "eventlog",
                                            Path(f["fixture"]).name))
    return files


def test_every_fixture_file_is_recorded_and_every_record_has_its_file():
    on_disk = {str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*")
               if p.is_file() and p.name not in BOOKKEEPING and "__pycache__" not in p.parts}
    recorded = [f["fixture"] for log in LOGS for f in log["files"]]
    assert len(recorded) == len(set(recorded))
    assert on_disk == set(recorded)


def test_sources_name_a_permissive_license_and_a_pinned_commit():
    for log in LOGS:
        assert log["license"] in {"Apache-2.0", "MIT", "BSD-3-Clause", "BSD-2-Clause"}, log["name"]
        assert re.fullmatch(r"[0-9a-f]{40}", log["commit"]), log["name"]
        assert log["repo"].count("/") == 1 and log["good_for"], log["name"]
        for f in log["files"]:
            assert f["source_path"].endswith(Path(f["fixture"]).name), f


def test_total_size_stays_small():
    total = sum(f["size"] for log in LOGS for f in log["files"])
    assert total < 4 * 1024 * 1024


@pytest.mark.parametrize("log", LOGS, ids=[log["name"] for log in LOGS])
def test_files_are_byte_for_byte_as_recorded(log):
    for f in log["files"]:
        data = (FIXTURES / f["fixture"]).read_bytes()
        assert len(data) == f["size"], f["fixture"]
        assert hashlib.sha256(data).hexdigest() == f["sha256"], f["fixture"]


@pytest.mark.parametrize("log", LOGS, ids=[log["name"] for log in LOGS])
def test_line_counts_agree_with_the_recorded_facts(log):
    _needs(log)
    text = _decoded(log)
    expect = log["expect"]
    kinds: dict[str, int] = {}
    for match in EVENT_LINE.finditer(text):
        name = match.group(1).decode()
        kinds[name] = kinds.get(name, 0) + 1
    assert kinds.get("SparkListenerSQLExecutionStart", 0) == expect["sql_executions"]
    assert kinds.get("SparkListenerSQLExecutionEnd", 0) == expect["sql_execution_ends"]
    assert (kinds.get("SparkListenerSQLAdaptiveExecutionUpdate", 0)
            == expect["adaptive_updates"])
    assert len(text) == expect["decoded_bytes"]
    versions = LOG_START.findall(text) or DBC_METADATA.findall(text)
    assert {v.decode() for v in versions} == ({expect["spark_version"]}
                                              if expect["spark_version"] else set())
    app_ids = {m.decode() for m in APP_ID.findall(text)}
    assert app_ids == ({expect["app_id"]} if expect["app_id"] else set())


@pytest.mark.parametrize("log", LOGS, ids=[log["name"] for log in LOGS])
def test_survey_reproduces_the_recorded_expectations(log):
    _needs(log)
    survey = _survey_module()
    assert survey.survey(FIXTURES / log["name"]) == log["expect"]


def test_the_set_covers_what_readers_meet():
    """The collection keeps its range: layouts, codecs, AQE on and off, vendors, damage, no SQL."""
    expects = [log["expect"] for log in LOGS]
    layouts = {e["layout"] for e in expects}
    assert {"file", "rolling", "databricks-rolled"} <= layouts
    codecs = set()
    for e in expects:
        codecs.update(e["codec"] if isinstance(e["codec"], list) else [e["codec"]])
    assert {"zstd", "gzip", "none"} <= codecs
    assert any(e["adaptive_updates"] for e in expects)
    assert any(e["sql_executions"] and not e["adaptive_executions"] for e in expects)
    assert any(not e["sql_executions"] for e in expects)
    assert any(e["malformed_lines"] for e in expects)
    assert any(not e["ends_with_newline"] for e in expects)
    assert any(op.startswith("Gpu") for e in expects for op in e["vendor_operators"])
    majors = {e["spark_version"].split(".")[0] for e in expects if e["spark_version"]}
    assert {"2", "3", "4"} <= majors
