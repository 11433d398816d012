"""`aqe-inspect check` as a CI job runs it: exit codes, expectation files and their errors,
`--output`, the default file in the working directory."""

from __future__ import annotations

import io
import re
import json
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from aqe_inspect.cli import main

from .conftest import SAMPLE_PLANS, verdict

MULTI = SAMPLE_PLANS / "spark-4.3.0" / "multi_rewrite"
PLAN = MULTI / "formatted_after.txt"  # coalesced 1, smj-to-bhj 1, local-read 2
LOG = MULTI / "eventlog.json"
SKEW_LOG = SAMPLE_PLANS / "spark-3.5.9" / "skew_join" / "eventlog.json"


def run(*args: str):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["check", *args])
    return code, out.getvalue(), err.getvalue()


def one_error(err: str) -> str:
    assert err.startswith("aqe-inspect: error: ") and err.count("\n") == 1, err
    return err[len("aqe-inspect: error: "):].rstrip("\n")


# ---- exit codes --------------------------------------------------------------------------

@pytest.mark.parametrize("args, code", [
    (["--expect", "coalesced"], 0),
    (["--expect", "coalesced=1", "--expect", "local-read>=2", "--forbid", "skew-join"], 0),
    (["--expect", "coalesced>=2"], 1),
    (["--forbid", "local-read"], 1),
    (["--expect", "smj-to-shj"], 1),
    (["--expect", "local-read<2"], 1),
    (["--expect", "local-read", "--each"], 0),
])
def test_exit_code_says_whether_every_expectation_holds(args, code):
    got, out, err = run(str(PLAN), *args)
    assert (got, err) == (code, ""), out


@pytest.mark.parametrize("args, message", [
    (["--expect", "coalesce"], "--expect 'coalesce': unknown rewrite kind; did you mean "
                               "'coalesced'?"),
    (["--expect", "coalesced>=x"], "--expect 'coalesced>=x': expected a whole number"),
    (["--expect", "coalesced=>2"], "--expect 'coalesced=>2': expected a whole number"),
    (["--forbid", "skew-join>=1"], "--forbid 'skew-join>=1': forbid takes a kind alone"),
    (["--expect", ""], "--expect '': expected a rewrite kind"),
    (["--expect", "coalesced", "--query", "("], "--query: '(' is neither an execution id"),
    (["--expect", "coalesced", "--format", "xml"], "Invalid value for '--format' / '-f'"),
    ([], "nothing to check: give --expect KIND or --forbid KIND"),
])
def test_bad_usage_is_exit_2_in_one_line(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)  # no aqe-expect.toml here
    code, out, err = run(str(PLAN), *args)
    assert code == 2 and out == ""
    assert one_error(err).startswith(message) or message in err, err


def test_a_missing_input_is_exit_2_after_the_expectations_are_read(tmp_path):
    code, out, err = run(str(tmp_path / "nope.txt"), "--expect", "coalesced")
    assert code == 2 and out == ""
    assert one_error(err) == f"{tmp_path / 'nope.txt'}: no such file"


def test_query_scopes_the_check_by_execution_id_and_by_description():
    assert run(str(SKEW_LOG), "--expect", "skew-join", "--query", "aqe-sample:skew")[0] == 0
    code, out, _ = run(str(SKEW_LOG), "--expect", "skew-join", "--query", "no such job")
    assert code == 1
    assert "nothing in the input matches --query no such job" in " ".join(out.split())


def test_a_failure_prints_the_query_plan_diff():
    code, out, _ = run(str(PLAN), "--forbid", "local-read")
    assert code == 1
    assert "FAIL forbid local-read" in out
    # The query's initial and final plans side by side, the rewritten operators marked in
    # both, and the finding's line.
    assert re.search(r"\* Exchange \(23\).*[│|]", out) and "* AQEShuffleRead (6) local" in out
    assert "local-read: AQEShuffleRead (6): reads Exchange (4) (was Exchange (23))" in out
    assert verdict(out) == f"1 of 1 expectation(s) not met (1 query read from {PLAN})"


# ---- expectation files -------------------------------------------------------------------

CONFIG = """\
# What AQE must do to the sample query.
[[query]]
name = "the sample"
match = "^aqe-sample:multi_rewrite$"
expect = ["coalesced", "smj-to-bhj=1"]
forbid = ["skew-join"]

[[query]]
id = 0
expect = [
  "local-read>=2",
]
"""


def test_an_expectation_file_is_read_with_its_scopes(tmp_path):
    config = tmp_path / "aqe-expect.toml"
    config.write_text(CONFIG, "utf-8")
    code, out, err = run(str(LOG), "--config", str(config), "--format", "json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert [(e["expectation"], e["origin"]["line"], e["passed"]) for e in data["expectations"]] \
        == [("coalesced", 5, True), ("smj-to-bhj=1", 5, True), ("forbid skew-join", 6, True),
            ("local-read>=2", 11, True)]
    assert data["expectations"][0]["scope"] == {"match": "^aqe-sample:multi_rewrite$",
                                                "id": None}
    assert data["expectations"][3]["scope"] == {"match": None, "id": 0}


def test_the_working_directory_file_is_found_and_command_line_flags_replace_it(tmp_path,
                                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "aqe-expect.toml").write_text('expect = ["skew-join"]\n', "utf-8")
    code, out, _ = run(str(LOG))
    assert code == 1 and "FAIL skew-join" in out and "aqe-expect.toml:1" in out
    assert run(str(LOG), "--expect", "coalesced")[0] == 0  # flags alone: the file is not read


def test_pyproject_tool_table_is_found(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.aqe-inspect]\nforbid = ["skew-join"]\n\n'
        '[[tool.aqe-inspect.query]]\nmatch = "multi"\nexpect = ["smj-to-shj"]\n', "utf-8")
    code, out, _ = run(str(LOG), "--format", "json")
    data = json.loads(out)
    assert code == 1
    assert [(e["expectation"], e["origin"]["line"], e["passed"]) for e in data["expectations"]] \
        == [("forbid skew-join", 5, True), ("smj-to-shj", 9, False)]


# Each malformed file: its text, the line the error must name, and what it must say.
MALFORMED = {
    "toml syntax": ('[[query]]\nexpect = ["coalesced"\nforbid = []\n', 3, "not valid TOML"),
    "unterminated string": ('[[query]]\nmatch = "abc\n', 2, "not valid TOML"),
    "unknown top key": ('# x\nexpects = ["coalesced"]\n', 2, "unknown key 'expects' in the "
                        "top level (known: expect, forbid, each, query, margin); did you mean 'expect'?"),
    "unknown query key": ('[[query]]\nexpect = ["coalesced"]\n\n[[query]]\nexpect = []\n'
                          'mach = "x"\n', 6, "unknown key 'mach' in a [[query]] table"),
    "unknown kind": ('[[query]]\nexpect = [\n  "coalesced",\n  "skew_join",\n]\n', 4,
                     "expect 'skew_join': unknown rewrite kind; did you mean 'skew-join'?"),
    "unknown forbid kind": ('forbid = ["bhj"]\n', 1, "forbid 'bhj': unknown rewrite kind"),
    "counted forbid": ('[[query]]\nforbid = ["skew-join<=1"]\n', 2, "forbid 'skew-join<=1': "
                       "forbid takes a kind alone"),
    "bad count": ('expect = ["coalesced>=many"]\n', 1, "expect 'coalesced>=many': expected a "
                  "whole number"),
    "expect not an array": ('[[query]]\nmatch = "x"\nexpect = "coalesced"\n', 3,
                            "expect must be an array, found a string 'coalesced'"),
    "item not a string": ('[[query]]\nexpect = ["coalesced", 2]\n', 2,
                          "expect items must be strings"),
    "match not a string": ('[[query]]\nmatch = 3\nexpect = ["coalesced"]\n', 2,
                           "match must be a string, found an integer 3"),
    "bad regex": ('[[query]]\nname = "n"\nmatch = "(unclosed"\nexpect = ["coalesced"]\n', 3,
                  "match: '(unclosed' is neither an execution id nor a regular expression"),
    "id a boolean": ('[[query]]\nid = true\nexpect = ["coalesced"]\n', 2,
                     "id must be an integer, found a boolean True"),
    "negative id": ('[[query]]\nid = -1\nexpect = ["coalesced"]\n', 2,
                    "id must be an execution id"),
    "match and id": ('[[query]]\nmatch = "x"\nid = 1\nexpect = ["coalesced"]\n', 3,
                     "a [[query]] table takes match or id, not both"),
    "each not a boolean": ('[[query]]\neach = "yes"\nexpect = ["coalesced"]\n', 2,
                           "each must be a boolean"),
    "query not tables": ('query = 3\n', 1, "query must be an array, found an integer"),
    "query of strings": ('query = ["coalesced"]\n', 1, "query must be an array of tables"),
    "empty table": ('expect = ["coalesced"]\n\n[[query]]\nname = "nothing"\n', 3,
                    "this [[query]] table expects nothing"),
    "empty file": ("# nothing yet\n", 1, "holds no expectation"),
    "nested table": ('[[query]]\nexpect = ["coalesced"]\n[query.x]\ny = 1\n', 3,
                     "unknown key 'x' in a [[query]] table"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_expectation_file_is_exit_2_naming_file_and_line(tmp_path, name):
    text, line, message = MALFORMED[name]
    config = tmp_path / "aqe-expect.toml"
    config.write_text(text, "utf-8")
    code, out, err = run(str(PLAN), "--config", str(config))
    assert code == 2 and out == ""
    error = one_error(err)
    assert error.startswith(f"{config}:{line}:"), error
    assert message in error, error


def test_a_malformed_pyproject_table_names_its_line(tmp_path):
    config = tmp_path / "pyproject.toml"
    config.write_text('[project]\nname = "x"\n\n[tool.aqe-inspect]\nexpect = ["coalesced"]\n'
                      '\n[[tool.aqe-inspect.query]]\nmatch = "m"\nforbid = ["smj-2-bhj"]\n',
                      "utf-8")
    code, _, err = run(str(PLAN), "--config", str(config))
    assert code == 2
    assert one_error(err).startswith(f"{config}:9:"), err


@pytest.mark.parametrize("content, message", [
    (b'[project]\nname = "x"\n', "has no [tool.aqe-inspect] table"),
    (b'expect = ["coalesced"]\n\xff\xfe\n', "2: not UTF-8 text"),
])
def test_other_unreadable_expectation_files(tmp_path, content, message):
    config = tmp_path / ("pyproject.toml" if b"project" in content else "aqe-expect.toml")
    config.write_bytes(content)
    code, _, err = run(str(PLAN), "--config", str(config))
    assert code == 2 and message in one_error(err), err


def test_a_missing_expectation_file_is_exit_2(tmp_path):
    code, _, err = run(str(PLAN), "--config", str(tmp_path / "aqe-expect.toml"))
    assert code == 2 and "cannot read" in one_error(err)


# ---- --output ------------------------------------------------------------------------------

@pytest.mark.parametrize("format_name", ["text", "json", "junit", "github", "sarif"])
def test_output_writes_the_report_to_a_file_and_the_summary_to_stdout(tmp_path, format_name):
    target = tmp_path / f"report.{format_name}"
    code, out, err = run(str(PLAN), "--forbid", "local-read", "--format", format_name,
                         "--output", str(target))
    assert (code, err) == (1, "")
    assert out == "aqe-inspect check: 1 of 1 expectation(s) not met\n"
    assert target.read_text("utf-8").strip()
    assert os.listdir(tmp_path) == [target.name]


def test_output_is_not_left_half_written_when_the_input_fails(tmp_path):
    """A log cut inside its first execution's event: the report fails, the old file stays."""
    target = tmp_path / "report.xml"
    target.write_text("previous report", "utf-8")
    broken = tmp_path / "broken.json"
    broken.write_bytes(b"\x00\x01binary junk\xff" * 100)
    code, _, err = run(str(broken), "--expect", "coalesced", "--format", "junit", "--output",
                       str(target))
    assert code == 2 and one_error(err)
    assert target.read_text("utf-8") == "previous report"
    assert sorted(os.listdir(tmp_path)) == ["broken.json", "report.xml"]


def test_output_into_a_missing_directory_is_exit_2(tmp_path):
    code, _, err = run(str(PLAN), "--expect", "coalesced", "--output",
                       str(tmp_path / "no" / "such" / "report.txt"))
    assert code == 2 and "cannot write the report" in one_error(err)


def test_diff_takes_every_format_and_output_too(tmp_path):
    target = tmp_path / "diff.sarif"
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["diff", str(LOG), "--format", "sarif", "--output", str(target)])
    assert (code, out.getvalue(), err.getvalue()) == (0, "", "")
    results = json.loads(target.read_text("utf-8"))["runs"][0]["results"]
    assert sorted(r["ruleId"] for r in results) == ["coalesced", "local-read", "local-read",
                                                    "smj-to-bhj"]


def test_check_reads_standard_input_event_logs(monkeypatch):
    stdin = io.TextIOWrapper(io.BytesIO(Path(LOG).read_bytes()), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stdin)
    code, out, _ = run("-", "--expect", "smj-to-bhj", "--format", "github")
    assert code == 0 and "PASS smj-to-bhj" in out


# ---- the library -------------------------------------------------------------------------

def test_the_library_checks_a_plan_text_as_the_command_line_does():
    from aqe_inspect.api import check

    result = check(PLAN.read_text("utf-8"), expect=["coalesced", "smj-to-bhj=2"],
                   forbid=["skew-join"], query="1")
    assert [o.passed for o in result.outcomes] == [True, False, True]
    assert result.failures[0].message == ("expected exactly 2 smj-to-bhj in query 1, found 1 "
                                          "in 1 query")
    with pytest.raises(Exception, match="unknown rewrite kind"):
        check(PLAN.read_text("utf-8"), expect=["broadcast"])


# ---- --query N on a plan text: the query keeps its own number -----------------------------

#: A driver log of three queries (the same job run three times: twin, control, twin).
RERUNS_LOG = SAMPLE_PLANS / "spark-3.5.9" / "reruns" / "smj_to_bhj_off.log"


def _several_plans(tmp_path: Path) -> Path:
    """A plan text of two plans, as two explains pasted one after the other."""
    path = tmp_path / "two_plans.txt"
    path.write_text("".join((SAMPLE_PLANS / "spark-4.3.0" / scenario / "simple_after.txt")
                            .read_text("utf-8") for scenario in ("coalesced_aggregation",
                                                                 "smj_to_bhj_off")),
                    "utf-8")
    return path


def _in_process(monkeypatch, stdin: Path = None, *args: str):
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.read_bytes()),
                                                          encoding="utf-8"))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("route", ["driver log", "plan text", "standard input"])
def test_query_n_keeps_its_own_number_in_every_command_and_format(tmp_path, monkeypatch,
                                                                  route):
    """`--query 2` of a driver log or plan text is query 2 wherever it is named, as an event
    log's execution keeps its id: the headers, the JSON ids, check's messages and why-not
    lines, every format, and an expectation file's `id = 2` scope."""
    path = RERUNS_LOG if route != "plan text" else _several_plans(tmp_path)
    stdin = path if route == "standard input" else None
    given = "-" if stdin is not None else str(path)
    shown = "<stdin>" if stdin is not None else str(path)

    def cli(*args: str):
        return _in_process(monkeypatch, stdin, *args)

    code, out, err = cli("diff", given, "--query", "2")
    assert (code, err) == (0, "") and " ".join(out.split()).startswith(
        f"Query 2 (2nd in the file): {shown}:")
    assert "Query 1" not in out
    code, out, _ = cli("diff", given, "--query", "2", "--format", "json")
    assert [query["id"] for query in json.loads(out)["queries"]] == ["2"]
    code, out, _ = cli("parse", given, "--query", "2")
    assert out.startswith("Query 2 (2nd in the file):")
    # The second query did not split a skewed join: the why-not lines name it.
    code, out, err = cli("check", given, "--query", "2", "--expect", "skew-join", "--each")
    assert (code, err) == (1, ""), out
    assert out.startswith("FAIL skew-join @ query 2  expected at least 1 skew-join in query 2")
    assert "why not: query 2: " in out and "query 1" not in out.lower()
    code, out, _ = cli("check", given, "--query", "2", "--expect", "skew-join",
                       "--format", "json")
    data = json.loads(out)
    assert data["expectations"][0]["queries"] == ["2"]
    why = data["expectations"][0]["why"]
    assert why and {answer["query"] for answer in why} == {"2"}
    for name in ("junit", "github", "sarif", "html"):
        code, out, _ = cli("check", given, "--query", "2", "--expect", "skew-join",
                           "--format", name)
        assert code == 1 and "query 2" in out.lower() and "query 1" not in out.lower(), name
    config = tmp_path / "aqe-expect.toml"
    config.write_text('[[query]]\nid = 2\nforbid = ["skew-join"]\n', "utf-8")
    code, out, err = cli("check", given, "--query", "2", "--config", str(config))
    assert (code, err) == (0, ""), out
    assert out.startswith("PASS forbid skew-join [id 2]  no skew-join in query 2: found 0 in "
                          "1 query")
