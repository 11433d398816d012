"""The command line as users run it: output formats, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import AQE_INSPECT, require_corpus

CLI = AQE_INSPECT


def run(*args: str, stdin: bytes = b"", env=None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, timeout=120,
                          env={**os.environ, **(env or {})})


def corpus_plan() -> Path:
    return require_corpus() / "v4.2/tpcds/approved-plans-v1_4/q2/explain.txt"


def test_parse_json_contract():
    result = run("parse", str(corpus_plan()), "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["schema"] == "aqe-inspect/parse/v1"
    query = data["queries"][0]
    assert set(query) >= {"adaptive", "is_final_plan", "trees", "subqueries"}
    assert query["adaptive"] is False and query["is_final_plan"] is None
    root = query["trees"]["final"]
    assert set(root) >= {"name", "id", "args", "details", "children"}
    assert (root["name"], root["id"]) == ("Sort", 37)
    assert query["trees"]["initial"] is None


def test_parse_reads_stdin_and_prints_a_tree():
    result = run("parse", "-", stdin=corpus_plan().read_bytes(), env={"NO_COLOR": "1"})
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert "BroadcastHashJoin (34) Inner BuildRight" in out
    assert "\x1b[" not in out, "no colour codes when not on a terminal"


@pytest.mark.parametrize("content, expected", [
    (b"", "expected a Spark plan, found an empty text"),
    (b"hello world\nthis is not a plan\n", ":1:1: expected '== Physical Plan =='"),
    (b"== Physical Plan ==\n", "expected an operator tree after '== Physical Plan =='"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "binary data"),
    (b"\xff\xfe\x00garbage", "found binary data"),
    (b"\xff\xfe garbage", "expected UTF-8 plan text"),
])
def test_bad_input_is_one_line_with_exit_2(tmp_path, content, expected):
    path = tmp_path / "input.txt"
    path.write_bytes(content)
    for command in ("parse", "diff"):
        result = run(command, str(path))
        err = result.stderr.decode()
        assert result.returncode == 2
        assert err.startswith(f"aqe-inspect: error: {path}"), err
        assert expected in err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert result.stdout == b""


def test_truncated_formatted_plan_is_read_with_a_note_naming_the_line(tmp_path):
    """A formatted plan cut inside its detail blocks: the tree is read, and the report says
    which operators lost their details, at which line, and that counts may be incomplete."""
    lines = corpus_plan().read_text("utf-8").splitlines()
    path = tmp_path / "cut.txt"
    path.write_text("\n".join(lines[:60]) + "\n")
    result = run("parse", str(path), "--format", "json")
    assert result.returncode == 0, result.stderr
    notes = json.loads(result.stdout)["queries"][0]["notes"]
    assert any(n.startswith("line ") and "no detail block" in n and "cut short" in n
               and "counts may be incomplete" in n for n in notes), notes


def test_missing_path_and_directory(tmp_path):
    result = run("parse", str(tmp_path / "nope.txt"))
    assert result.returncode == 2
    assert result.stderr.decode() == f"aqe-inspect: error: {tmp_path / 'nope.txt'}: no such file\n"
    result = run("diff", str(tmp_path))
    assert result.returncode == 2 and "is a directory" in result.stderr.decode()


def test_usage_errors_are_one_line_exit_2():
    result = run("parse", "x", "--format", "xml")
    assert result.returncode == 2
    assert result.stderr.decode().startswith("aqe-inspect: error: ")
    assert result.stderr.decode().count("\n") == 1


def test_help_and_version():
    assert run("--help").returncode == 0
    assert run("--version").stdout.decode().startswith("aqe-inspect ")
    rules = run("rules")
    assert rules.returncode == 0
    for kind in ("coalesced", "skew-join", "smj-to-bhj", "smj-to-shj", "empty-relation",
                 "local-read"):
        assert kind in rules.stdout.decode()


def test_parse_does_not_import_pyspark_or_rich_for_json():
    code = ("import sys; from aqe_inspect.cli import main; "
            f"main(['parse', {str(corpus_plan())!r}, '--format', 'json']); "
            "print('pyspark' in sys.modules, 'rich' in sys.modules, file=sys.stderr)")
    result = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, timeout=60)
    assert result.stderr.decode().split()[-2:] == ["False", "False"]


def test_parser_tables_are_cached_between_runs(tmp_path):
    """The LALR tables are built once and loaded by later runs, not rebuilt every time."""
    env = {"XDG_CACHE_HOME": str(tmp_path), "NO_COLOR": "1"}
    assert run("parse", str(corpus_plan()), "--format", "json", env=env).returncode == 0
    cached = list((tmp_path / "aqe-inspect").glob("explain-grammar-*.cache"))
    assert len(cached) == 1 and cached[0].stat().st_size > 1000
    stamp = cached[0].stat().st_mtime_ns
    assert run("parse", str(corpus_plan()), "--format", "json", env=env).returncode == 0
    assert cached[0].stat().st_mtime_ns == stamp, "the second run rebuilt the tables"
