"""The command line as users run it: output formats, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import AQE_INSPECT, SAMPLE_PLANS, require_corpus

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


def test_a_codegen_dump_is_one_query_and_says_what_codegen_mode_shows():
    for path in sorted(SAMPLE_PLANS.glob("spark-*/skew_join/codegen_after.txt")):
        # COLUMNS: each line whole, wherever the checkout lives.
        result = run("diff", str(path), env={"NO_COLOR": "1", "COLUMNS": "10000"})
        assert result.returncode == 0, result.stderr
        out = result.stdout.decode()
        assert out.count("Query ") == 1 and "static" not in out
        assert ":1, codegen mode, WholeStageCodegen subtrees only" in out
        assert "skew-join: SortMergeJoin" in out and "Counts: coalesced=3, skew-join=1" in out
        assert "explain in formatted mode" in out
        data = json.loads(run("diff", str(path), "--format", "json").stdout)
        (query,) = data["queries"]
        assert query["mode"] == "codegen" and query["line"] == 1
        assert {kind: n for kind, n in query["counts"].items() if n} == \
            {"coalesced": 3, "skew-join": 1}


def test_a_codegen_dump_without_subtrees_says_so():
    paths = [path for path in sorted(SAMPLE_PLANS.glob("spark-*/*/codegen_after.txt"))
             if path.read_text("utf-8").startswith("Found 0 ")]
    assert paths
    for path in paths:
        result = run("diff", str(path), env={"NO_COLOR": "1", "COLUMNS": "10000"})
        assert result.returncode == 0, result.stderr
        assert "note: codegen mode found no WholeStageCodegen subtree" in result.stdout.decode()
        data = json.loads(run("diff", str(path), "--format", "json").stdout)
        assert data["queries"] == [] and "no WholeStageCodegen subtree" in data["notes"][0]


# ---- a driver log without plans ---------------------------------------------------------

LOG4J = re.compile(r"\d{2}/\d{2}/\d{2} \d{2}:\d{2}:\d{2} [A-Z]+ ")


def without_plans(log: Path) -> str:
    """A real driver log with every plan cut out, as a run without explain or AQE logging
    writes it: only its log messages (log4j lines or Spark 4's JSON records), none of
    AdaptiveSparkPlanExec's and none running over several lines."""
    kept = []
    for line in log.read_text("utf-8").splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if record.get("logger") != "AdaptiveSparkPlanExec" and "\n" not in record["msg"]:
                kept.append(line)
        elif LOG4J.match(line) and "AdaptiveSparkPlanExec" not in line:
            kept.append(line)
    return "\n".join(kept) + "\n"


DRIVER_LOGS = sorted(SAMPLE_PLANS.glob("spark-*/skew_join/driver*.log"))


@pytest.mark.parametrize("log", DRIVER_LOGS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_a_driver_log_without_a_plan_says_how_to_have_plans_logged(tmp_path, log):
    path = tmp_path / log.name
    path.write_text(without_plans(log), "utf-8")
    assert "Physical Plan" not in path.read_text("utf-8")
    for command in ("diff", "parse"):
        result = run(command, str(path))
        assert result.returncode == 2 and result.stdout == b""
        err = result.stderr.decode()
        assert err.count("\n") == 1 and "Traceback" not in err
        assert err.startswith(f"aqe-inspect: error: {path}: a log (")
        for hint in ("spark.sql.adaptive.logLevel=INFO", "'Plan changed:'", "'Final plan:'",
                     'df.explain("formatted") after the action', "spark.eventLog.enabled=true"):
            assert hint in err, hint
    assert run("diff", str(log)).returncode == 0  # the log as Spark wrote it has its plans


def test_a_text_that_is_no_log_gets_no_log_hint(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("the plan is below\nbut nothing follows\n", "utf-8")
    err = run("diff", str(path)).stderr.decode()
    assert "starts a Spark plan" in err and "logLevel" not in err


# ---- the quick route (parse PATH, diff PATH: no typer) ------------------------------------

QUICK_SAMPLES = ("spark-3.5.9/aqe_declines/formatted_after.txt",
                 "spark-4.3.0/five_way_join/eventlog.json", "spark-4.3.0/five_way_join/driver.log")


@pytest.mark.parametrize("sample", QUICK_SAMPLES)
@pytest.mark.parametrize("command", [["parse"], ["parse", "-f", "json"], ["diff"],
                                     ["diff", "--format", "json"], ["diff", "-f", "sarif"]])
def test_the_quick_route_prints_what_typer_prints(sample, command, capsys, monkeypatch):
    """`parse PATH` and `diff PATH` (with `--format`) skip typer; the same command line with
    an option only typer takes (`--max-size` at its default) goes through typer: one output."""
    from aqe_inspect.cli import main

    monkeypatch.setenv("COLUMNS", "100")
    path = str(SAMPLE_PLANS / sample)
    outputs = []
    for args in ([*command, path], [command[0], path, *command[1:], "--max-size", "256M"]):
        assert main(args) == 0
        outputs.append(capsys.readouterr())
    assert outputs[0] == outputs[1] and outputs[0].out


def test_the_quick_route_does_not_import_typer_and_help_does_not_build_every_command():
    plan = SAMPLE_PLANS / "spark-3.5.9" / "aqe_declines" / "formatted_after.txt"
    code = ("import sys, io, contextlib; from aqe_inspect.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    main(['parse', {str(plan)!r}, '--format', 'json'])\n"
            "print('typer' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split()
    assert out == ["False"]
    code = ("import io, contextlib; from aqe_inspect import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    cli.main(['--help'])\n"
            "from aqe_inspect.cli import commands\n"
            "group = commands.command_group()\n"
            "print(len(group.commands), len(group.commands._built))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split()
    assert int(out[0]) >= 8 and out[1] == "0"
