"""Text from the inputs stays data in every machine format: an application name, a job
description, an expectation file's names, a file name cannot become a GitHub Actions workflow
command (judged by tests/actions_runner.py, the runner's own parsing re-implemented), nor
break the JUnit XML (validated against the schema) or the SARIF JSON."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aqe_inspect.errors import printable

from .actions_runner import (NET_WHITESPACE, commands, parse_line, processed, runner_lines)
from .conftest import SAMPLE_PLANS
from .hostile import hostile_log, run, sample
from .schemas import validate_junit, validate_sarif

LOG_BYTES = (SAMPLE_PLANS / sample("skew_join")["path"]).read_bytes()
# Each a way into the runner, with a piece of its text that must still show in the output.
INJECTIONS = {
    "newline": ("\n::set-output name=x::injected", "set-output name=x"),
    "indented": ("\n  ::add-mask::injected", "add-mask::injected"),
    "old syntax": ("text ##[error]injected", "[error]injected"),
    "stop-commands": ("\n::stop-commands::token", "stop-commands::token"),
    "pre-encoded": ("%0A::set-output name=pre::injected%0D%0A::error::x", "%0A::set-output"),
    "line separator": ("\u2028::error::injected", "error::injected"),
    "next line": ("\u0085::warning::injected", "warning::injected"),
    "no-break space": ("\n\u00a0::notice::injected", "notice::injected"),
    "ideographic space": ("\n\u3000::error::injected", "error::injected"),
    "zero width": ("\n\u200b::error::injected", "error::injected"),
    "soft hyphen": ("#\u00ad#[error]injected", "[error]injected"),
    "tab": ("\n\t::debug::injected", "debug::injected"),
    "carriage return": ("\r::error::injected", "error::injected"),
    "crlf": ("\r\n  ::group::injected", "group::injected"),
    "upper case": ("\n::SET-OUTPUT name=x::injected", "SET-OUTPUT"),
    "bidi": ("\u202e\n::error::injected", "error::injected"),
}
ALL = "evil" + "".join(text for text, _ in INJECTIONS.values())
FIELDS = ("app_name", "description")


def names(found) -> list:
    return [command.name for command in found]


def shape(found) -> list:
    """The commands' names, a stop token (a hash of the output) as `<token>`."""
    tokens = {command.data.lower() for command in found if command.name == "stop-commands"}
    return ["<token>" if command.name.lower() in tokens else command.name for command in found]


def expected_check_commands(text: str) -> list:
    """What `check --format github` means to say for one failure with its plans shown: the
    error, the group, its stop-commands and the resumption, the group's end. Nothing else."""
    found = commands(text)
    assert names(found)[:3] == ["error", "group", "stop-commands"], names(found)
    token = found[2].data
    assert re.fullmatch(r"aqe-inspect-[0-9a-f]{32}", token)
    return ["error", "group", "stop-commands", token, "endgroup"]


def check_github(path: Path) -> str:
    code, out, err = run("check", str(path), "--expect", "skew-join>=5", "--format", "github")
    assert (code, err) == (1, "")
    return out


# ---- the model of the runner ----------------------------------------------------------------

@pytest.mark.parametrize("line, name, properties, data", [
    ("::set-output name=x::y", "set-output", {"name": "x"}, "y"),
    ("   ::add-mask::secret", "add-mask", {}, "secret"),
    ("\u00a0\u2028::error::x", "error", {}, "x"),
    ("text ##[error]boom", "error", {}, "boom"),
    ("a ##[set-output name=x;other=y]v%3Bw", "set-output", {"name": "x", "other": "y"}, "v;w"),
    ("::error file=a%2Cb%3Ac.txt,line=3,title=t%0At::m%0A%25%0A", "error",
     {"file": "a,b:c.txt", "line": "3", "title": "t\nt"}, "m\n%\n"),
    ("\u200b::error::hidden", "error", {}, "hidden"),  # culture-sensitive: stricter than ordinal
])
def test_the_model_reads_commands_as_the_runner_does(line, name, properties, data):
    command = parse_line(line)
    assert command is not None
    assert (command.name, command.properties, command.data) == (name, properties, data)


@pytest.mark.parametrize("line", ["plain text", ":: no second separator", "::::empty name",
                                  "x ::set-output name=x::y", "##[ no end", "\\x3a:error::x",
                                  "#\\x23[error]x"])
def test_the_model_reads_no_command_where_the_runner_reads_none(line):
    assert parse_line(line) is None


def test_the_model_splits_lines_where_the_runner_does():
    assert runner_lines("a\rb\r\nc\nd\u2028e\x85f\n") == ["a", "b", "c", "d\u2028e\x85f"]


def test_the_model_honours_stop_commands():
    text = "::stop-commands::tok\n::error::silenced\n::TOK::\n::error::heard\n"
    assert [(c.name, c.data) for c in processed(text)] == [
        ("stop-commands", "tok"), ("TOK", ""), ("error", "heard")]


# ---- github: app names and descriptions ------------------------------------------------------

@pytest.fixture(scope="module")
def clean_check(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("clean") / "eventlog.json"
    path.write_bytes((SAMPLE_PLANS / sample("skew_join")["path"]).read_bytes())
    return check_github(path)


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("injection", sorted(INJECTIONS))
def test_no_app_name_or_description_is_a_workflow_command(tmp_path, field, injection,
                                                          clean_check):
    hostile, shown = INJECTIONS[injection]
    path = hostile_log(tmp_path / "eventlog.json", **{field: f"evil{hostile}"})
    out = check_github(path)
    meant = expected_check_commands(out)
    assert names(commands(out)) == meant
    assert names(processed(out)) == meant  # the stop-commands block ends where we mean
    # Nothing but those: the clean log's output says the same commands in the same order.
    assert shape(commands(out)) == shape(commands(clean_check))
    # The hostile text did reach the log, defused: the test is not passing on an empty group.
    group = out[out.index("::group::"):out.index("::endgroup::")]
    assert shown in group, group


@pytest.mark.parametrize("field", FIELDS)
def test_every_injection_at_once_in_check_and_diff(tmp_path, field):
    path = hostile_log(tmp_path / "eventlog.json", **{field: ALL})
    out = check_github(path)
    assert names(commands(out)) == expected_check_commands(out)
    for line in runner_lines(out):
        body = line.lstrip("".join(NET_WHITESPACE))
        if parse_line(line) is None:  # a plain line: nothing that starts or holds a command
            assert not body.startswith("::") and "##[" not in line, line
    code, diff, err = run("diff", str(path), "--format", "github")
    assert (code, err) == (0, "")
    assert names(commands(diff)) == ["notice"] * 4  # 3 coalesced, 1 skew-join


def test_a_history_server_description_is_no_command(tmp_path):
    path = hostile_log(tmp_path / "history_sql.json", layout="history-sql",
                       description="evil" + INJECTIONS["indented"][0])
    code, out, err = run("check", str(path), "--expect", "skew-join>=5", "--format", "github")
    assert (code, err) == (1, "")
    assert names(commands(out)) == expected_check_commands(out)
    assert "add-mask::injected" in out


def test_a_line_that_would_stop_commands_is_inside_our_own_stop(tmp_path):
    """Even a line the runner did read as `::stop-commands::` (were the defusing gone) sits
    between our stop and its token: the runner still runs the end of the group and after."""
    from aqe_inspect.formats.github import _plain_block

    block = _plain_block(["Application x", "::stop-commands::theirs", "  ##[error]x"])
    assert block[1:-1] == ["Application x", "\\x3a:stop-commands::theirs", "  #\\x23[error]x"]
    token = block[0].split("::")[2]
    assert block[-1] == f"::{token}::" and all(token not in line for line in block[1:-1])
    text = "\n".join(["::group::g", *block, "::endgroup::", "::error::after"]) + "\n"
    assert names(processed(text)) == ["group", "stop-commands", token, "endgroup", "error"]


# ---- github: expectation files and file names -------------------------------------------------

HOSTILE_NAME = "n%0A::set-output name=t::u,k:v\n  ::add-mask::m ##[error]e"


def hostile_config(tmp_path: Path) -> Path:
    config = tmp_path / "aqe-expect.toml"
    config.write_text(
        "[[query]]\n"
        f"name = {json.dumps(HOSTILE_NAME)}\n"
        f"match = {json.dumps('%0D%0A::set-output name=m::n')}\n"
        "expect = [\"skew-join>=5\"]\n", "utf-8")
    return config


def test_an_expectation_files_names_stay_in_their_annotation(tmp_path):
    config = hostile_config(tmp_path)
    log = hostile_log(tmp_path / "eventlog.json", description="%0D%0A::set-output name=m::n")
    code, out, err = run("check", str(log), "--config", str(config), "--format", "github")
    assert (code, err) == (1, "")
    found = commands(out)
    assert names(found) == expected_check_commands(out)
    error = found[0]
    # The runner unescapes what we escaped: the very name, its `%0A` a text, not a newline.
    assert error.properties["title"] == f"aqe-inspect: skew-join>=5 [{HOSTILE_NAME}]"
    assert "/%0D%0A::set-output name=m::n/" in error.data
    assert error.properties["file"] == str(log)


def test_a_hostile_file_name_is_the_annotations_file(tmp_path, monkeypatch):
    name = "a,b:c\n::set-output name=f::g %0A ##[error]h.json"
    (tmp_path / name).write_bytes((SAMPLE_PLANS / sample("skew_join")["path"]).read_bytes())
    monkeypatch.chdir(tmp_path)
    code, out, err = run("diff", name, "--format", "github")
    assert (code, err) == (0, "")
    found = commands(out)
    assert names(found) == ["notice"] * 4
    assert {command.properties["file"] for command in found} == {name}


# ---- JUnit and SARIF --------------------------------------------------------------------------

CONTROL = "ctl\x00\x01\x08\x0b\x0c\x1b[31mred\x7f\x85\x9b\u2028\ufffe\uffff\ud800end"


@pytest.mark.parametrize("command", ["diff", "check"])
def test_control_characters_in_a_description_make_valid_junit(tmp_path, command):
    path = hostile_log(tmp_path / "eventlog.json", description=CONTROL, app_name=CONTROL,
                       ascii_only=True)
    args = ["--expect", "skew-join>=5"] if command == "check" else []
    code, out, err = run(command, str(path), *args, "--format", "junit")
    assert (code, err) == (1 if command == "check" else 0, "")
    validate_junit(out)
    if command == "diff":  # the description names the test case, every character escaped
        case = ElementTree.fromstring(out).find(".//testcase")
        assert case.get("name") == "execution 0: " + re.sub(
            "[\ud800\ufffe\uffff]", lambda m: f"\\u{ord(m.group()):04x}", printable(CONTROL))


def test_hostile_names_and_files_make_valid_junit_and_sarif(tmp_path, monkeypatch):
    config = hostile_config(tmp_path)
    name = "r\x01\x1b[2J,x:%0A ##[error] <&>\".json"
    hostile_log(tmp_path / name, description=CONTROL + HOSTILE_NAME, app_name=CONTROL,
                ascii_only=True)
    monkeypatch.chdir(tmp_path)
    code, out, err = run("check", name, "--config", str(config), "--format", "junit")
    assert (code, err) == (1, "")
    validate_junit(out)
    failure = ElementTree.fromstring(out).find(".//failure")
    assert HOSTILE_NAME.replace("\n", "\\n") not in failure.text  # a name is never raw...
    assert "::set-output name=t::u" in ElementTree.fromstring(out).find(
        ".//testcase").get("name")  # ...yet there
    code, out, err = run("check", name, "--config", str(config), "--format", "sarif")
    assert (code, err) == (1, "")
    document = json.loads(out)
    validate_sarif(document)
    result = document["runs"][0]["results"][0]
    assert "/%0D%0A::set-output name=m::n/" in result["message"]["text"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert "\x01" not in uri and "%01" in uri
    code, out, err = run("diff", name, "--format", "sarif")
    assert (code, err) == (0, "")
    validate_sarif(json.loads(out))


def test_the_unicode_line_separators_stay_in_their_line(tmp_path):
    """U+2028 and U+0085 are line ends to some readers: in the line formats they are written
    escaped and end nothing; JSON holds them as the data they are."""
    description = "a\u2028b\x85c"
    path = hostile_log(tmp_path / "eventlog.json", description=description)
    for format_name in ("github", "junit", "text", "json"):
        code, out, err = run("check", str(path), "--expect", "skew-join>=5", "--format",
                             format_name)
        assert (code, err) == (1, "")
        if format_name == "json":
            assert json.loads(out)["queries"][0]["description"] == description
        else:
            assert "\u2028" not in out and "\x85" not in out, format_name
            if format_name != "junit":  # (a check's JUnit names no description)
                assert "a\\u2028b\\x85c" in out, format_name


def test_nothing_is_left_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    hostile_log(tmp_path / "eventlog.json", description=ALL)
    assert run("check", "eventlog.json", "--expect", "skew-join>=5", "--format", "github")[0] == 1
    assert os.listdir(tmp_path) == ["eventlog.json"]


@pytest.mark.skipif(os.name != "posix" or sys.getfilesystemencoding() != "utf-8",
                    reason="a file name of raw bytes needs a POSIX UTF-8 file system API")
@pytest.mark.parametrize("relative", [True, False])
def test_a_file_name_that_is_no_utf8_in_every_machine_format(tmp_path, monkeypatch, relative):
    """`bad\\xff.json` (Python holds it as `bad\\udcff.json`): SARIF's URI is the file's bytes,
    percent-encoded; JUnit, GitHub and JSON write it escaped; none fails."""
    raw = b"bad\xff.json"
    with open(os.path.join(os.fsencode(tmp_path), raw), "wb") as handle:
        handle.write(LOG_BYTES)
    name = os.fsdecode(raw)
    (tmp_path / "elsewhere").mkdir()  # (a path under the working directory is relative)
    monkeypatch.chdir(tmp_path if relative else tmp_path / "elsewhere")
    given = name if relative else str(tmp_path / name)
    for format_name in ("sarif", "junit", "github", "json"):
        code, out, err = run("check", given, "--expect", "skew-join>=5", "--format",
                             format_name)
        assert (code, err) == (1, ""), format_name
        if format_name == "sarif":
            document = json.loads(out)
            validate_sarif(document)
            uri = document["runs"][0]["results"][0]["locations"][0]["physicalLocation"][
                "artifactLocation"]["uri"]
            assert uri.endswith("bad%FF.json") and (relative or uri.startswith("file:///"))
        elif format_name == "junit":
            validate_junit(out)
            assert "bad\\udcff.json" in out
        elif format_name == "github":
            assert commands(out)[0].properties["file"].endswith("bad\\udcff.json")
        else:
            json.loads(out)


# ---- any text at all --------------------------------------------------------------------------

# Text that leans on what the runner reads: its separators, white space, escapes, and any
# character besides (surrogates included: a file name may hold them).
_PIECES = st.sampled_from(["::", "##[", "]", "%0A", "%25", "%3A", ",", "=", " ", "\n", "\r",
                           "\u2028", "\x85", "\xa0", "\u200b", "\u00ad", "\ufe0f", "\t",
                           "stop-commands", "set-output name=x", "error"])
HOSTILE_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=4)), max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(HOSTILE_TEXT)
def test_no_text_is_a_command_once_plain(text):
    from aqe_inspect.formats.github import _plain

    line = _plain(text)
    assert runner_lines(line) == ([line] if line else [])
    assert parse_line(line) is None


@settings(max_examples=300, deadline=None)
@given(HOSTILE_TEXT, HOSTILE_TEXT, HOSTILE_TEXT)
def test_an_annotation_is_one_command_holding_its_text(message, title, path):
    """Whatever the text, the runner reads one command, and reads back exactly the text
    aqe-inspect meant to show (control and invisible characters escaped)."""
    from aqe_inspect.formats.github import _clean, command
    from aqe_inspect.rewrites.locations import Location

    location = Location(path, 3)
    line = command("error", message, location, title=title)
    assert len(runner_lines(line)) == 1
    found = parse_line(line)
    assert (found.name, found.syntax, found.data) == ("error", "v2", _clean(message))
    # (The runner trims the properties' text: spaces at its end are lost, nothing else.)
    assert found.properties.get("title", "") == _clean(title).rstrip(" ")
    if location.has_file:  # (never last: `line` follows it)
        assert found.properties["file"] == _clean(location.path)
        assert found.properties["line"] == "3"
