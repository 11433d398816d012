"""Text from the inputs stays data in the text for people: an application name, a job
description, a plan's string literal or table folder, a file name. Whatever they hold (escape
sequences that clear the screen, set the window title, open a hyperlink or move the cursor;
bidirectional overrides; newlines and the other line breaks; rich markup), every command's text
output shows it escaped (`\\x1b`, `\\u202e`, `\\n`), never raw, on a pipe and on a terminal,
and no header or line of ours is forged from it. Each command runs as a user runs it: the
installed `aqe-inspect` in a subprocess, its standard output a pipe, then a pseudo-terminal.

All escaping is `errors.printable`'s; a Hypothesis property holds it to what it promises."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aqe_inspect.errors import printable
from aqe_inspect.formats.terminal import Screen

from .conftest import AQE_INSPECT, SAMPLE_PLANS
from .hostile import hostile_log, hostile_plan, sample
from .test_robustness import on_a_terminal

POSIX = os.name == "posix"

#: What no output may hold raw: C0 controls but the newline ending each line, DEL, C1 controls,
#: the line and paragraph separators, the bidirectional controls.
FORBIDDEN = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e"
                       "\u2066-\u2069]")
#: The styles the text writer itself puts around text on a terminal (SGR), and nothing else.
OUR_STYLES = re.compile(r"\x1b\[[0-9;]*m")

#: A word marking what follows a newline of the hostile text: on a line of its own, it forged
#: that line.
MARK = "FORGED"
#: Hostile text without a space (a view wraps at spaces only: it stays whole on one line),
#: a quote or a backslash (`repr` escapes it as `printable` does): each attack once.
ATTACKS = ("\x1b[2J"  # clear the screen
           "\x1b]0;pwned\x07"  # the window's title
           "\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07"  # an OSC 8 hyperlink
           "\x1b[5A\x9b2K"  # a cursor move; CSI as one C1 character
           "\x1b[31m"  # a colour, as our own styles are written
           "[bold]B[/bold][link=http://evil.example/]L[/link]"  # rich markup
           "\u202eRLO\u2066iso\u2069\u200f\u061c\u202a"  # bidirectional controls
           "\x01\x7f\t")
LINE_BREAKS = f"\n{MARK}1\r{MARK}2\u2028{MARK}3\x85{MARK}4\u2029{MARK}5\x0c{MARK}6"
EVIL = "evil" + ATTACKS + LINE_BREAKS
#: In a plan text a line break ends the operator's line (a plan holding one is cut there,
#: as Spark's own would be): a plan's fields hold the rest.
PLAN_EVIL = "evil" + ATTACKS
#: What of PLAN_EVIL a view shows: an operator's arguments are cut (`...`) in a tree, and
#: a plan's reader drops the bidirectional controls (Spark never prints them, see
#: sources/lines.py); what is left of them is escaped.
PLAN_SHOWN = "evil\x1b[2J\x1b]0;pwned\x07\x1b]8;;"
#: What a snapshot keeps of a plan's text: no URL (masked as `<path>`), no bidirectional
#: control (dropped by the reader); a newline only where the plan's JSON can hold one.
SNAP_EVIL = "evil\t\x1b[2J\x1b]0;pwned\x07\x1b[5A\x9b2K\x1b[31m[bold]B[/bold]\x01\x7f"
#: A file name holds no `/`.
FILE_EVIL = EVIL.replace("/", "_")

#: The commands, each with its arguments after the input's path; `{expect}` is an unmet
#: expectation (check's failures show the plans, and with them the application).
COMMANDS: Dict[str, List[str]] = {
    "parse": ["parse", "{path}"],
    "diff": ["diff", "{path}"],
    "diff --tree": ["diff", "{path}", "--tree"],
    "diff --side-by-side": ["diff", "{path}", "--side-by-side"],
    "check": ["check", "{path}", "--expect", "skew-join>=5"],
    "why": ["why", "{path}"],
    "snapshot": ["snapshot", "{path}"],
}
EXIT = {"check": 1}
#: The commands that style their text on a terminal (why and snapshot write plain lines).
STYLED = {"parse", "diff", "diff --tree", "diff --side-by-side", "check"}

#: Where each field's text shows in each command's output (elsewhere it is not printed at all):
#: what the test holds to, so that a field dropped from the output fails as loudly as a raw one.
SHOWN = {
    "app_name": {"diff", "diff --tree", "diff --side-by-side", "check"},
    "description": {"diff", "diff --tree", "diff --side-by-side", "check", "why"},
    "literal": {"parse", "diff --tree", "snapshot"},
    "table": {"parse", "diff --tree"},
    "file name": {"parse", "diff", "diff --tree", "diff --side-by-side", "check", "why"},
}


def build(tmp_path: Path, field: str) -> Tuple[Path, str]:
    """The hostile input for `field` and the text it holds there."""
    if field in ("app_name", "description"):
        return hostile_log(tmp_path / "eventlog.json", **{field: EVIL}), EVIL
    if field in ("literal", "table"):
        # A table's folder ends a FileScan's long arguments: a tree cuts it sooner.
        return hostile_plan(tmp_path / "plan.txt", field, PLAN_EVIL, name="simple_after.txt"), \
            PLAN_SHOWN if field == "literal" else PLAN_SHOWN[:len("evil\x1b[2J")]
    path = tmp_path / f"{FILE_EVIL}.json"
    shutil.copyfile(SAMPLE_PLANS / sample("skew_join")["path"], path)
    return path, FILE_EVIL


def environment(columns: int) -> Dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if key not in ("NO_COLOR", "TERM", "COLUMNS")}
    return {**env, "TERM": "xterm-256color", "COLUMNS": str(columns)}


def run_cli(args: List[str], terminal: bool, cwd: Path,
            columns: int = 120) -> Tuple[int, str, bytes]:
    """The installed command, its standard output a pipe or a pseudo-terminal: the exit code,
    what it wrote (a terminal's CRLF read as LF, our own styles left in), its errors."""
    if terminal:
        code, written, err = on_a_terminal([*AQE_INSPECT, *args], environment(columns),
                                           cwd=cwd)
        return code, written.decode("utf-8").replace("\r\n", "\n"), err
    done = subprocess.run([*AQE_INSPECT, *args], capture_output=True,
                          env=environment(columns), cwd=cwd, timeout=120)
    return done.returncode, done.stdout.decode("utf-8"), done.stderr


def assert_defused(out: str, text: str, shown: bool, terminal: bool) -> None:
    """Nothing of `text` raw in `out`; on a terminal, styles are ours alone; each newline of
    `text` still in its line; `text` shown whole and escaped where the command shows it."""
    if terminal:
        assert "\x1b[" in out  # styled: the terminal path was taken
    plain = OUR_STYLES.sub("", out) if terminal else out
    raw = FORBIDDEN.findall(plain)
    assert not raw, f"raw {raw[:5]} in {plain[:2000]!r}"
    assert not [line for line in plain.split("\n") if line.lstrip().startswith(MARK)], plain
    assert (printable(text) in plain) == shown, plain[:3000]


TERMINAL = [pytest.param(False, id="pipe"),
            pytest.param(True, id="terminal",
                         marks=pytest.mark.skipif(not POSIX, reason="a pseudo-terminal"))]


@pytest.mark.parametrize("terminal", TERMINAL)
@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("field", sorted(SHOWN))
def test_hostile_text_is_shown_escaped_by_every_command(tmp_path, field, command, terminal):
    path, text = build(tmp_path, field)
    args = [arg.replace("{path}", path.name) for arg in COMMANDS[command]]
    code, out, err = run_cli(args, terminal, tmp_path)
    assert (code, err) == (EXIT.get(command, 0), b""), err
    assert_defused(out, text, command in SHOWN[field], terminal and command in STYLED)


@pytest.mark.parametrize("terminal", TERMINAL)
def test_a_history_server_answer_is_shown_escaped(tmp_path, terminal):
    path = hostile_log(tmp_path / "history_sql.json", layout="history-sql", description=EVIL)
    code, out, err = run_cli(["why", path.name], terminal, tmp_path)
    assert (code, err) == (0, b"")
    assert_defused(out, EVIL, True, False)


@pytest.mark.parametrize("terminal", TERMINAL)
def test_rules_shows_a_hostile_kind_escaped_on_one_line(tmp_path, terminal):
    code, out, err = run_cli(["rules", EVIL], terminal, tmp_path)
    assert (code, out) == (2, "")
    message = err.decode("utf-8")
    assert message.count("\n") == 1 and message.startswith("aqe-inspect: error: rules:")
    assert not FORBIDDEN.findall(message[:-1]) and f"'{printable(EVIL)}'" in message


def test_rules_output_is_unchanged_text(tmp_path):
    """`rules` prints no input: its own text, with nothing escaped away."""
    code, out, err = run_cli(["rules"], False, tmp_path)
    assert (code, err) == (0, b"")
    assert "skew-join" in out and "\\" not in out and not FORBIDDEN.findall(out)


@pytest.mark.parametrize("terminal", TERMINAL)
def test_an_expectation_files_names_are_shown_escaped(tmp_path, terminal):
    """check's PASS and FAIL lines name each expectation as its file does: a name holding a
    newline forges no PASS line, its escape sequences are text."""
    log = hostile_log(tmp_path / "eventlog.json", description=EVIL)
    (tmp_path / "aqe-expect.toml").write_text(
        "[[query]]\n"
        f"name = {json.dumps(EVIL + chr(10) + 'PASS-everything')}\n"
        f"match = {json.dumps('^evil')}\n"
        "expect = [\"skew-join>=5\", \"coalesced>=1\"]\n", "utf-8")
    code, out, err = run_cli(["check", log.name, "--config", "aqe-expect.toml"], terminal,
                             tmp_path)
    assert (code, err) == (1, b"")
    plain = OUR_STYLES.sub("", out)
    assert_defused(out, EVIL + "\nPASS-everything", True, terminal)
    marks = [line.split(" ", 1)[0] for line in plain.split("\n")
             if line.startswith(("PASS", "FAIL"))]
    assert marks == ["FAIL", "PASS"]  # one line each, in the file's order


# ---- headers: one line each -----------------------------------------------------------------

def test_the_headers_of_a_hostile_log_are_the_clean_logs_line_for_line(tmp_path):
    """A newline in the application's name, the description and the file's name forges no
    line: the hostile log's report has exactly the clean log's lines, each header holding the
    escaped text where the clean one holds the name."""
    entry = sample("skew_join")
    clean = tmp_path / "clean.json"
    shutil.copyfile(SAMPLE_PLANS / entry["path"], clean)
    hostile = hostile_log(tmp_path / f"{FILE_EVIL}.json", app_name=EVIL, description=EVIL)
    for args in (["diff"], ["diff", "--side-by-side"], ["why"], ["parse"],
                 ["check", "--expect", "skew-join>=5"]):
        # As wide as the longest header: no line wraps in either.
        _, before, _ = run_cli([args[0], clean.name, *args[1:]], False, tmp_path, 10_000)
        _, after, _ = run_cli([args[0], hostile.name, *args[1:]], False, tmp_path, 10_000)
        assert before.count("\n") > 5
        names = {clean.name: printable(hostile.name), entry["app_name"]: printable(EVIL),
                 entry["description"]: printable(EVIL)}
        expected = before
        for old, new in names.items():
            expected = expected.replace(old, new)
        assert after == expected, args


def test_a_wrapped_header_hangs_under_its_first_line(tmp_path):
    """A name wider than the line wraps at its spaces: what follows the break is indented, so
    the name cannot start a line that reads as one of ours (`Query 2: ...`, `PASS ...`)."""
    name = "Query 9: forged.txt:1, adaptive, isFinalPlan=true " * 6
    path = hostile_log(tmp_path / "eventlog.json", app_name=name)
    for args in (["diff", path.name], ["check", path.name, "--expect", "skew-join>=5"]):
        for width in range(40, 100, 7):
            _, out, _ = run_cli([*args, "--width", str(width)], False, tmp_path)
            assert out.count("forged.txt:1,") == 6  # the name wrapped and is there, whole
            assert not [line for line in out.splitlines() if line.startswith("Query 9")], out


# ---- snapshots: escaped, stable, compared equal to themselves ------------------------------

@pytest.mark.parametrize("name", ["simple_after.txt", "formatted_after.txt", "eventlog.json",
                                  "history_sql.json"])
def test_a_snapshot_of_a_hostile_plan_round_trips(tmp_path, name):
    text = SNAP_EVIL + (LINE_BREAKS if name.endswith(".json") else "")
    plan = hostile_plan(tmp_path / f"hostile-{name}", "literal", text, name=name)
    clean = tmp_path / name
    shutil.copyfile(SAMPLE_PLANS / "spark-3.5.9" / "dynamic_partition_pruning" / name, clean)
    snapshot = tmp_path / "plan.snap"
    code, out, err = run_cli(["snapshot", plan.name, "-o", snapshot.name], False, tmp_path)
    assert (code, out, err) == (0, "", b"")
    written = snapshot.read_text("utf-8")
    assert not FORBIDDEN.findall(written) and printable(text) in written
    # One line an operator, as the clean plan's: only the literal differs.
    _, taken, _ = run_cli(["snapshot", clean.name], False, tmp_path)
    assert written == re.sub(r"\bhot\b", lambda _: printable(text), taken)
    # Taken again, and held against the plan it came from: the same.
    assert run_cli(["snapshot", plan.name], False, tmp_path)[1] == written
    code, out, err = run_cli(["check", plan.name, "--snapshot", snapshot.name], False, tmp_path)
    assert (code, err) == (0, b""), out
    assert "PASS snapshot" in out and not FORBIDDEN.findall(out)
    # The clean plan differs from it, and the diff shows the hostile lines escaped.
    code, out, err = run_cli(["check", clean.name, "--snapshot", snapshot.name], False, tmp_path)
    assert (code, err) == (1, b"")
    assert not FORBIDDEN.findall(out)
    assert [line for line in out.split("\n") if line.startswith("-") and printable(text) in line]


def test_a_snapshot_file_holding_raw_controls_is_diffed_escaped(tmp_path):
    """A snapshot file written by hand (or by an older aqe-inspect) may hold raw controls:
    they are a difference, shown escaped, each in the line the file holds it in."""
    plan = SAMPLE_PLANS / "spark-3.5.9" / "skew_join" / "simple_after.txt"
    shutil.copyfile(plan, tmp_path / "plan.txt")
    _, taken, _ = run_cli(["snapshot", "plan.txt"], False, tmp_path)
    lines = taken.split("\n")
    lines[3] += "\x1b]0;pwned\x07\u2028" + MARK + "\x85\u202e"
    (tmp_path / "plan.snap").write_text("\n".join(lines), "utf-8")
    for terminal in (False, True) if POSIX else (False,):
        code, out, err = run_cli(["check", "plan.txt", "--snapshot", "plan.snap"], terminal,
                                 tmp_path)
        assert (code, err) == (1, b"")
        plain = OUR_STYLES.sub("", out)
        assert not FORBIDDEN.findall(plain)
        assert f"\\x1b]0;pwned\\x07\\u2028{MARK}\\x85\\u202e" in plain
        assert not [line for line in plain.split("\n") if line.lstrip().startswith(MARK)]


def test_a_hostile_snapshot_file_name_is_escaped(tmp_path):
    plan = SAMPLE_PLANS / "spark-3.5.9" / "skew_join" / "simple_after.txt"
    shutil.copyfile(plan, tmp_path / "plan.txt")
    name = FILE_EVIL + ".snap"
    code, _, _ = run_cli(["snapshot", "plan.txt", "-o", name], False, tmp_path)
    assert code == 0
    (tmp_path / "other.txt").write_bytes((SAMPLE_PLANS / "spark-3.5.9" / "smj_to_bhj" /
                                          "simple_after.txt").read_bytes())
    for path, code_wanted in (("plan.txt", 0), ("other.txt", 1)):
        code, out, err = run_cli(["check", path, "--snapshot", name], False, tmp_path)
        assert (code, err) == (code_wanted, b"")
        assert not FORBIDDEN.findall(out) and printable(name) in out
        assert not [line for line in out.split("\n") if line.lstrip().startswith(MARK)]


# ---- the one helper ------------------------------------------------------------------------

_UNESCAPE = re.compile(r"\\(x[0-9a-f]{2}|u[0-9a-f]{4}|[tnr])")


def unescaped(text: str) -> str:
    def one(match: "re.Match[str]") -> str:
        code = match.group(1)
        return {"t": "\t", "n": "\n", "r": "\r"}.get(code) or chr(int(code[1:], 16))
    return _UNESCAPE.sub(one, text)


# Text with what a hostile input holds: the characters to escape, their neighbours, and any.
HOSTILE_CHARS = st.sampled_from(
    [*map(chr, range(0x20)), "\x7f", *map(chr, range(0x80, 0xa1)), "\u061b", "\u061c",
     "\u200d", "\u200e", "\u200f", "\u2027", *map(chr, range(0x2028, 0x2030)), "\u2065",
     *map(chr, range(0x2066, 0x206a)), "\u206a", "a", " ", "[", "]", "é", "界"])
HOSTILE_TEXT = st.text(st.one_of(HOSTILE_CHARS, st.characters()), max_size=60)


@settings(max_examples=300, deadline=None)
@given(HOSTILE_TEXT)
def test_printable_leaves_nothing_raw_and_loses_nothing(text):
    one_line = printable(text)
    assert not FORBIDDEN.search(one_line) and "\n" not in one_line
    assert len(one_line.splitlines()) <= 1  # no line break any reader splits at
    kept = printable(text, newlines=True)
    assert not FORBIDDEN.search(kept) and kept.count("\n") == text.count("\n")
    assert printable(one_line) == one_line  # escaping twice changes nothing
    if not FORBIDDEN.search(text) and "\n" not in text:
        assert one_line is text  # normal text as it is, byte for byte
    if "\\" not in text:
        assert unescaped(one_line) == text and unescaped(kept) == text


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(HOSTILE_TEXT, st.sampled_from(["", "bold", "reverse green"])),
                max_size=4), st.integers(20, 120), st.booleans())
def test_the_screen_writes_nothing_raw_in_any_run_of_text(spans, width, color):
    stream = io.StringIO()
    screen = Screen(stream, width)
    screen.color = color
    screen.paragraph(spans, "", "  ")
    screen.write_line(screen.styled(spans))
    screen.flush()
    written = OUR_STYLES.sub("", stream.getvalue())
    assert not FORBIDDEN.search(written)
    blank = re.compile(r"\s")
    text = "".join(printable(part) for part, _ in spans)
    lines = written.split("\n")[:-1]
    assert lines[-1] == text  # styled: the escaped text, whole
    # wrapped: the same text, cut at spaces, the lines after the first indented
    assert all(line.startswith("  ") for line in lines[1:-1])
    assert blank.sub("", "".join(line[2:] if at else line for at, line in enumerate(lines[:-1]))
                     ) == blank.sub("", text)
