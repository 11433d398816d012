"""An agent's arguments are untrusted: each hostile call to `aqe-inspect mcp` is one tool error
with the command line's one line, no traceback, and the server answers the next call."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from .conftest import SAMPLE_PLANS
from .mcp_client import call, run, stdio_session

GOOD_LOG = SAMPLE_PLANS / "spark-4.3.0/multi_rewrite/eventlog.json"


@pytest.fixture()
def folder(tmp_path):
    """An open folder holding a real log, and the hostile things an agent may point at."""
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    shutil.copy(GOOD_LOG, open_folder / "app.json")
    outside = tmp_path / "secret.txt"
    outside.write_text("not for agents\n")
    (open_folder / "link_out").symlink_to(outside)
    (open_folder / "zero").symlink_to("/dev/zero")
    os.mkfifo(open_folder / "never_written")
    with open(open_folder / "huge.log", "wb") as huge:  # sparse: 1 GB of NUL bytes
        huge.truncate(1 << 30)
    (open_folder / "junk.bin").write_bytes(bytes(range(256)) * 64)
    (open_folder / "long_line.log").write_bytes(b"x" * (2 << 20) + b"\n")  # past --max-size 1M
    (open_folder / "cut.json").write_bytes(GOOD_LOG.read_bytes()[:len(GOOD_LOG.read_bytes()) // 3])
    logs = open_folder / "logs"
    logs.mkdir()
    (logs / "events_1_x").symlink_to(outside)
    return open_folder


CALLS = [
    # (tool, arguments, what the one line says)
    ("diff", {"source": "/etc/passwd"}, "outside the folders open to this server"),
    ("diff", {"source": "link_out"}, "outside the folders open to this server"),
    ("diff", {"source": "../secret.txt"}, "a path with '..' is refused"),
    ("diff", {"source": "zero"}, "outside the folders open to this server"),
    ("diff", {"source": "never_written"}, "not a regular file"),
    ("diff", {"source": "logs"}, "links outside the folders open to this server"),
    ("diff", {"source": "huge.log"}, "NUL bytes"),
    ("diff", {"source": "junk.bin"}, "binary data"),
    ("diff", {"source": "long_line.log"}, ""),
    ("diff", {"source": "missing.json"}, "no such file or folder"),
    ("diff", {"source": "-"}, "standard input is the server's own channel"),
    ("diff", {"source": "app.json\x00.txt"}, "NUL"),
    ("diff", {"source": "http://169.254.169.254/latest/meta-data"}, "no host is open"),
    ("list_executions", {"source": "https://example.com/api/v1/applications/x"},
     "no host is open"),
    ("diff", {"source": 5}, "invalid arguments: source"),
    ("diff", {}, "invalid arguments: source"),
    ("plans", {"source": "app.json", "limit": -1}, "limit: expected 1 to"),
    ("plans", {"source": "app.json", "cursor": "eyJrIjoiMSIsIm8iOi0xfQ"}, "cursor"),
    ("why", {"source": "app.json", "kind": ["not-a-kind"]}, "not a rewrite kind"),
    ("check", {"source": "app.json"}, "nothing to check"),
    ("check", {"source": "app.json", "expect": ["coalesced>=x"]}, ""),
    ("check", {"source": "app.json", "config": "/etc/hosts"}, "outside the folders"),
    ("diff", {"source": "app.json", "query": "("}, "--query"),
    ("diff", {"source": "app.json", "query": "99"}, "no execution matches"),
    ("compare", {"old": "app.json", "new": "http://example.com/x"}, "not URLs"),
    ("no_such_tool", {}, "Unknown tool"),
]


def test_each_hostile_call_is_one_tool_error_and_the_server_goes_on(folder):
    async def main():
        answers = []
        async with stdio_session("--allow", str(folder), "--max-size", "1M") as session:
            for tool, arguments, _ in CALLS:
                answers.append(await call(session, tool, **arguments))
                # the next call is answered, and right
                good = await call(session, "list_executions", source="app.json")
                assert not good[0] and len(good[2]["executions"]) == 1, good[1]
        return answers

    for (tool, arguments, said), (error, text, data) in zip(CALLS, run(main)):
        assert error, (tool, arguments, text)
        assert data is None
        assert text.startswith("aqe-inspect: error: "), (tool, arguments, text)
        assert "\n" not in text and "Traceback" not in text, text
        assert said in text, (tool, arguments, text)
    # nothing outside the folder was read into an answer, nothing in it was changed
    assert (folder.parent / "secret.txt").read_text() == "not for agents\n"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["app.json", "link_out", "zero", "never_written", "huge.log", "junk.bin", "cut.json",
         "logs", "long_line.log"])


def test_a_cut_log_is_read_with_what_it_holds_and_says_so(folder):
    async def main():
        async with stdio_session("--allow", str(folder)) as session:
            return (await call(session, "check", source="cut.json", expect=["coalesced"]),
                    await call(session, "list_executions", source="cut.json"))

    (check_error, check_text, checked), (_, _, listed) = run(main)
    # never PASS on incomplete evidence: the cut execution is unfinished, and fails
    assert not check_error and checked["passed"] is False, check_text
    assert checked["status"] in ("unfinished", "failed")
    assert all(row["finished"] is False for row in listed["executions"])


def test_a_relative_path_cannot_climb_out_through_a_linked_folder(tmp_path):
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(GOOD_LOG, elsewhere / "app.json")
    (open_folder / "door").symlink_to(elsewhere, target_is_directory=True)

    async def main():
        async with stdio_session("--allow", str(open_folder)) as session:
            return await call(session, "diff", source="door/app.json")

    error, text, _ = run(main)
    assert error and "outside the folders open to this server" in text
    assert Path(elsewhere / "app.json").exists()


def test_text_from_an_input_cannot_restyle_the_agents_terminal(tmp_path):
    text = GOOD_LOG.read_text("utf-8")
    assert '"description":"aqe-sample:multi_rewrite"' in text
    (tmp_path / "app.json").write_text(text.replace(
        '"description":"aqe-sample:multi_rewrite"',
        '"description":"aqe-sample:\\u001b[2J\\u202emulti_rewrite"'), "utf-8")

    async def main():
        async with stdio_session("--allow", str(tmp_path)) as session:
            return await call(session, "diff", source="app.json")

    error, said, data = run(main)
    assert not error, said
    assert "\x1b" not in said and "\u202e" not in said
    assert "\\x1b[2J" in said
    # the structured answer keeps the description as it is (JSON escapes it on the wire)
    assert data["queries"][0]["description"] == "aqe-sample:\x1b[2J\u202emulti_rewrite"
