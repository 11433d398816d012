"""`aqe-inspect mcp --http PORT`: streamable HTTP at /mcp on loopback, driven by the SDK's client;
50 tool calls at once are all answered, with the server's memory bounded; the server ends on
SIGTERM with no traceback."""

from __future__ import annotations

import signal
from pathlib import Path

import anyio

from .conftest import SAMPLE_PLANS
from .mcp_client import call, cli_json, http_server, http_session, run

LOGS = sorted(str(path.relative_to(SAMPLE_PLANS))
              for path in SAMPLE_PLANS.glob("spark-4.3.0/*/eventlog.json"))


def _peak_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_http_answers_as_the_command_line_does():
    log = "spark-4.3.0/skew_join/eventlog.json"
    with http_server("--allow", str(SAMPLE_PLANS)) as (url, process):
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")

        async def main():
            async with http_session(url) as session:
                tools = (await session.list_tools()).tools
                prompts = (await session.list_prompts()).prompts
                return tools, prompts, await call(session, "diff", source=log)

        tools, prompts, (error, text, answer) = run(main)
        assert len(tools) == 8 and len(prompts) == 3
        assert not error, text
        assert answer == cli_json("diff", str((SAMPLE_PLANS / log).resolve()), "--format",
                                  "json")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) in (0, -signal.SIGTERM, 128 + signal.SIGTERM)
        assert "Traceback" not in process.stderr.read()


def test_fifty_calls_at_once_are_all_answered_with_memory_bounded():
    assert len(LOGS) >= 25, LOGS
    with http_server("--allow", str(SAMPLE_PLANS)) as (url, process):
        async def one_round(count: int):
            answers = [None] * count

            async def ask(at: int):
                async with http_session(url) as session:
                    tool = ("diff", "why", "list_executions", "plans", "check")[at % 5]
                    extra = {"expect": ["coalesced"]} if tool == "check" else {}
                    answers[at] = (tool, await call(session, tool, source=LOGS[at % len(LOGS)],
                                                    **extra))

            async with anyio.create_task_group() as group:
                for at in range(count):
                    group.start_soon(ask, at)
            return answers

        warm = run(one_round, 5)  # every tool once: the modules loaded, the caches made
        before = _peak_kb(process.pid)
        answers = run(one_round, 50)
        after = _peak_kb(process.pid)
        again = run(one_round, 50)
        last = _peak_kb(process.pid)
    for tool, (error, text, data) in (*warm, *answers, *again):
        assert not error, (tool, text)
        assert data and text
    # At most BUSY tools read at once: 50 calls hold about what a few do, and a second
    # round of 50 adds nothing more.
    assert after - before < 150 * 1024, (before, after)
    assert last - after < 30 * 1024, (after, last)
