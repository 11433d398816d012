"""The library's public API (`aqe_inspect.api`): every command is one call of it and one
`write`, so what a program gets from the API is what the command prints, byte for byte; the API
is typed (`py.typed`, every public function annotated) and light to import."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys

import pytest

from aqe_inspect import api
from aqe_inspect.plan.model import Document

from .conftest import AQE_INSPECT, ROOT, SAMPLE_PLANS

SKEW = SAMPLE_PLANS / "spark-4.3.0" / "skew_join"
MULTI = SAMPLE_PLANS / "spark-4.3.0" / "multi_rewrite"
LOG = SKEW / "eventlog.json"
PLAN = MULTI / "formatted_after.txt"


def command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*AQE_INSPECT, *args], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "COLUMNS": "100", "NO_COLOR": "1"})


def written(capsys, result, *args, **kwargs) -> str:
    capsys.readouterr()
    api.write(result, *args, **kwargs)
    return capsys.readouterr().out


# ---- reading ------------------------------------------------------------------------------

def test_read_routes_a_plan_text_to_a_document_and_an_event_log_to_a_stream():
    document = api.read(str(PLAN))
    assert isinstance(document, Document) and len(document.queries) == 1
    stream = api.read(str(LOG))
    assert not isinstance(stream, Document)
    queries = list(stream.queries)
    assert queries and all(query.execution is not None for query in queries)
    assert stream.application is not None and stream.application.spark_version == "4.3.0"


def test_read_document_reads_an_event_log_whole_each_query_naming_its_application():
    document = api.read_document(str(LOG))
    assert document.queries and document.application is not None
    assert all(query.application == document.application for query in document.queries)


def test_query_selects_and_none_matching_is_an_error_once_read():
    whole = api.read_document(str(LOG))
    first = whole.queries[0].execution.execution_id
    chosen = api.read_document(str(LOG), query=str(first))
    assert [q.execution.execution_id for q in chosen.queries] == [first]
    with pytest.raises(api.InspectError, match="no execution matches"):
        api.read_document(str(LOG), query="99999")
    # Not required (as `check` reads): none matching is no error, only nothing.
    assert list(api.read(str(LOG), query="99999", required=False).queries) == []


def test_read_takes_one_input_and_a_size_as_the_command_line_writes_it(tmp_path):
    with pytest.raises(api.InspectError, match="give one input"):
        api.read()
    with pytest.raises(api.InspectError, match="give one input"):
        api.read(str(PLAN), url="http://localhost:1/api/v1/applications/x")
    assert api.size("64M") == 64 << 20 and api.size("2g") == 2 << 30 and api.size(500) == 500
    for bad in ("lots", "0", -1, "1.5x"):
        with pytest.raises(api.InspectError, match="--max-size"):
            api.size(bad)
    with pytest.raises(api.InspectError, match="no such file"):
        api.read(str(tmp_path / "absent.txt"))


# ---- each command is one call and one write -----------------------------------------------

@pytest.mark.parametrize("format_name", api.FORMAT_NAMES)
def test_diff_input_written_is_what_the_diff_command_prints(capsys, format_name):
    chosen = api.report_format(format_name)
    report = api.diff_input(str(LOG), for_format=chosen)
    assert written(capsys, report, chosen) == command("diff", str(LOG), "-f", format_name).stdout


def test_parse_check_why_snapshot_rules_written_are_what_the_commands_print(capsys):
    assert written(capsys, api.read_document(str(PLAN)), "json") == \
        command("parse", str(PLAN), "-f", "json").stdout
    result = api.check_input(str(PLAN), expect=["coalesced", "smj-to-bhj=1"],
                             forbid=["skew-join"])
    assert result.passed
    assert written(capsys, result) == command("check", str(PLAN), "-e", "coalesced", "-e",
                                              "smj-to-bhj=1", "--forbid", "skew-join").stdout
    answers = api.why(str(LOG), kinds=["skew-join"], for_format="json")
    assert written(capsys, answers, "json") == \
        command("why", str(LOG), "-k", "skew-join", "-f", "json").stdout
    assert written(capsys, api.snapshot(str(PLAN))) == command("snapshot", str(PLAN)).stdout
    assert written(capsys, api.rules("skew-join")) == command("rules", "skew-join").stdout


def test_diff_input_of_two_texts_pairs_initial_and_final():
    report = api.diff_input([str(MULTI / "simple_before.txt"), str(MULTI / "simple_after.txt")])
    assert report.source.endswith("simple_after.txt") and " -> " in report.source
    kinds = {rewrite.kind for query in report.queries for rewrite in query.rewrites}
    assert {"coalesced", "smj-to-bhj"} <= kinds
    with pytest.raises(api.InspectError, match="one plan text, or an initial and a final"):
        api.diff_input([str(PLAN)] * 3)


def test_an_event_log_report_is_a_stream_diffed_as_read():
    report = api.diff_input(str(LOG))
    assert not isinstance(report.queries, tuple)  # walked once, as read
    queries = list(report.queries)
    assert any(r.kind == "skew-join" for query in queries for r in query.rewrites)


def test_check_input_fails_and_says_why_with_the_same_verdict_as_the_command():
    result = api.check_input(str(PLAN), forbid=["coalesced"])
    assert not result.passed and result.failures
    ran = command("check", str(PLAN), "--forbid", "coalesced")
    assert ran.returncode == 1 and result.verdict in ran.stdout


def test_check_input_reads_a_config_file_and_finds_one_in_a_folder(tmp_path):
    (tmp_path / "aqe-expect.toml").write_text('expect = ["coalesced>=1"]\nforbid = '
                                              '["skew-join"]\n', "utf-8")
    found = api.check_input(str(PLAN), config_folder=str(tmp_path))
    given = api.check_input(str(PLAN), config=str(tmp_path / "aqe-expect.toml"))
    assert found.passed and given.passed
    assert len(found.outcomes) == len(given.outcomes) == 2
    with pytest.raises(api.InspectError, match="nothing to check"):
        api.check_input(str(PLAN), config_folder=str(tmp_path / "empty"))


def test_a_snapshot_taken_then_checked_holds_and_another_plan_fails(tmp_path):
    kept = tmp_path / "plan.snap"
    api.write(api.snapshot(str(PLAN)), output=str(kept))
    assert api.check_input(str(PLAN), snapshot=str(kept)).passed
    other = api.check_input(str(SKEW / "formatted_after.txt"), snapshot=str(kept))
    assert not other.passed


def test_why_answers_each_query_under_the_settings_given():
    answers = api.why(str(PLAN), conf=["spark.sql.autoBroadcastJoinThreshold=-1"])
    assert answers.user["spark.sql.autoBroadcastJoinThreshold"].value == "-1"
    listed = list(answers.queries())
    assert listed and all(answer.candidates for _, answer, _ in listed)
    kinds = {candidate.kind for _, answer, _ in listed for candidate in answer.candidates}
    assert "smj-to-bhj" in kinds
    only = api.why(str(PLAN), kinds=["coalesced"])
    assert {c.kind for _, a, _ in only.queries() for c in a.candidates} == {"coalesced"}


def test_why_and_rules_refuse_what_is_no_kind_and_why_a_format_before_reading(tmp_path):
    with pytest.raises(api.InspectError, match="not a rewrite kind"):
        api.why(str(PLAN), kinds=["skew"])
    with pytest.raises(api.InspectError, match="unknown rewrite kind"):
        api.rules("skew")
    with pytest.raises(api.InspectError, match="expected text or json"):
        api.why(str(tmp_path / "never-read.log"), for_format="html")
    assert "skew-join" in api.rules().kinds and api.rules("skew-join").kinds == ("skew-join",)


def test_report_format_checks_its_view_and_width():
    assert api.report_format("text", view="tree", width=80).name == "text"
    with pytest.raises(api.InspectError, match="is a view of the text format"):
        api.report_format("json", view="tree")
    with pytest.raises(api.InspectError, match="--width"):
        api.report_format("text", width=3)
    with pytest.raises(api.InspectError, match="unknown format"):
        api.report_format("pdf")


# ---- writing to a file --------------------------------------------------------------------

def test_write_to_a_file_writes_it_whole_and_prints_the_summary_line(tmp_path, capsys):
    out = tmp_path / "report.json"
    report = api.diff_input(str(PLAN), for_format="json", output=str(out))
    api.write(report, "json", str(out), summary="written")
    assert json.loads(out.read_text("utf-8"))["schema"] == "aqe-inspect/report/v1"
    assert capsys.readouterr().out == "written\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temporary file left


def test_an_output_that_is_an_input_is_refused_before_anything_is_read(tmp_path):
    plan = tmp_path / "plan.txt"
    plan.write_bytes(PLAN.read_bytes())
    before = plan.read_bytes()
    for call in (lambda: api.diff_input(str(plan), output=str(plan)),
                 lambda: api.check_input(str(plan), expect=["coalesced"], output=str(plan)),
                 lambda: api.why(str(plan), output=str(plan)),
                 lambda: api.snapshot(str(plan), output=str(plan)),
                 lambda: api.diff_input(str(LOG.parent), output=str(LOG.parent / "x.json"))):
        with pytest.raises(api.InspectError, match="--output is (the input|inside the input)"):
            call()
    assert plan.read_bytes() == before


def test_a_failed_write_leaves_the_file_as_it_was(tmp_path):
    out = tmp_path / "report.txt"
    out.write_text("the old report\n", "utf-8")

    def broken():
        yield from api.diff_input(str(PLAN)).queries
        raise api.InspectError("cut short", source="input")

    from aqe_inspect.rewrites.findings import ReportStream

    with pytest.raises(api.InspectError, match="cut short"):
        api.write(ReportStream(broken(), "input", [], lambda: None), "text", str(out))
    assert out.read_text("utf-8") == "the old report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.txt"]


def test_write_refuses_what_it_cannot_write():
    with pytest.raises(TypeError, match="nothing to write of a int"):
        api.write(3)  # type: ignore[arg-type]
    with pytest.raises(api.InspectError, match="expected tree or json"):
        api.write(api.read_document(str(PLAN)), "html")


# ---- fleet --------------------------------------------------------------------------------

def test_fleet_checks_its_formats_before_starting_spark(tmp_path):
    with pytest.raises(api.InspectError, match="expected parquet or csv"):
        api.fleet([str(LOG)], str(tmp_path / "table"), table_format="orc")
    with pytest.raises(api.InspectError, match="expected text, markdown or html"):
        api.fleet([str(LOG)], str(tmp_path / "table"), summary_format="pdf")
    with pytest.raises(api.InspectError, match="--output is inside the input folder"):
        api.fleet([str(tmp_path)], str(tmp_path / "table"), summary=str(tmp_path / "s.txt"))
    assert not (tmp_path / "table").exists()


# ---- typed, documented, light -------------------------------------------------------------

def test_every_public_function_is_typed_and_documented():
    functions = [getattr(api, name) for name in api.__all__
                 if inspect.isfunction(getattr(api, name))
                 and getattr(api, name).__module__ == api.__name__]
    assert len(functions) >= 18
    for function in functions:
        signature = inspect.signature(function)
        untyped = [name for name, parameter in signature.parameters.items()
                   if parameter.annotation is inspect.Parameter.empty]
        assert not untyped, (function.__name__, untyped)
        assert signature.return_annotation is not inspect.Signature.empty, function.__name__
        assert function.__doc__ and len(function.__doc__) > 40, function.__name__


def test_the_package_says_it_is_typed():
    from importlib.resources import files

    assert files("aqe_inspect").joinpath("py.typed").is_file()


def test_importing_the_cli_imports_only_the_light_foundations():
    """The CLI imports the API at load (typer and the commands' declarations only for a run
    that needs them); the API imports the plan model, the parser, the readers, the formats,
    rich and Lark only in the function that needs them."""
    code = ("import sys, aqe_inspect.cli; print(' '.join(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('aqe_inspect', 'lark', 'rich', 'pyspark'))))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True, timeout=60).stdout.split())
    assert loaded == {"aqe_inspect", "aqe_inspect.api", "aqe_inspect.cli", "aqe_inspect.cli.work",
                      "aqe_inspect.errors", "aqe_inspect.formats", "aqe_inspect.native",
                      "aqe_inspect.signals", "aqe_inspect.version"}


@pytest.mark.parametrize("sample", ["formatted_after.txt", "driver.log"])
def test_reading_a_plan_text_imports_no_event_log_reader(sample):
    """A plan text or a driver log is told from an event log by its first bytes alone: the
    event-log, History Server and plan-change readers (and their start-up cost) are not
    imported to read one; an event log still is read by them."""
    plan = ROOT / "sample_plans" / "spark-4.3.0" / "five_way_join" / sample
    code = ("import sys; from aqe_inspect import api; d = api.read(sys.argv[1]); "
            "print(len(d.queries), ' '.join(m for m in sys.modules if m.startswith("
            "('aqe_inspect.sources.eventlog', 'aqe_inspect.sources.planchange'))))")
    out = subprocess.run([sys.executable, "-c", code, str(plan)], capture_output=True,
                         text=True, check=True, timeout=60).stdout.split()
    assert int(out[0]) >= 1 and out[1:] == []
    log = ROOT / "sample_plans" / "spark-4.3.0" / "five_way_join" / "eventlog.json"
    assert len(list(api.read(str(log)).queries)) == 1


# ---- the library page's examples run as written -------------------------------------------

LIBRARY_PAGE = ROOT / "docs" / "library.md"


def _page_examples() -> list:
    """Each ```python block of docs/library.md that runs (not a bare signature)."""
    blocks = re.findall(r"^```python\n(.*?)^```", LIBRARY_PAGE.read_text("utf-8"), re.S | re.M)
    return [pytest.param(block, id=f"example {number}")
            for number, block in enumerate(blocks, 1) if not block.lstrip().startswith("def ")]


def test_the_library_page_documents_every_public_function():
    page = LIBRARY_PAGE.read_text("utf-8")
    for name in api.__all__:
        function = getattr(api, name)
        if inspect.isfunction(function) and function.__module__ == api.__name__ \
                and name != "stop_workers":
            assert f"def {name}(" in page, name
    assert len(_page_examples()) >= 12


@pytest.mark.parametrize("block", _page_examples())
def test_a_library_example_runs_as_written(block, tmp_path):
    for name in ("sample_plans",):
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    ran = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert ran.returncode == 0, ran.stderr[-3000:]
