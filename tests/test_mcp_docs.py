"""docs/mcp.md as written: each client set-up's JSON starts a server that answers, and each
tool's example call, run against `aqe-inspect mcp --allow sample_plans` in a folder holding
the samples (as the page says), answers the text the page shows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .conftest import AQE_INSPECT, ROOT
from .mcp_client import call, http_server, run, stdio_session

PAGE = ROOT / "docs" / "mcp.md"
BLOCK = re.compile(r"<!-- mcp-(config|call): ([a-z_]+) -->\n```json\n(.*?)\n```"
                   r"(?:\n\n```text\n(.*?)\n```)?", re.S)


def _examples(kind: str):
    return [(name, json.loads(body), shown) for what, name, body, shown
            in BLOCK.findall(PAGE.read_text("utf-8")) if what == kind]


def _checkout_like(tmp_path: Path) -> Path:
    (tmp_path / "sample_plans").symlink_to(ROOT / "sample_plans", target_is_directory=True)
    return tmp_path


def test_the_page_shows_every_tool_and_both_set_ups():
    assert sorted(name for name, _, _ in _examples("call")) == sorted(
        ["list_executions", "diff", "plans", "why", "advise", "check", "compare", "rules"])
    assert sorted(name for name, _, _ in _examples("config")) == ["http", "stdio"]


@pytest.mark.parametrize("name,arguments,shown", _examples("call"),
                         ids=[name for name, _, _ in _examples("call")])
def test_each_example_call_answers_what_the_page_shows(name, arguments, shown, tmp_path):
    folder = _checkout_like(tmp_path)

    async def main():
        async with stdio_session("--allow", "sample_plans", cwd=str(folder)) as session:
            return await call(session, name, **arguments)

    error, text, data = run(main)
    assert not error, text
    assert text == shown
    assert data and data.get("schema", "").startswith("aqe-inspect/")


def test_the_stdio_set_up_starts_a_server_that_answers(tmp_path):
    folder = _checkout_like(tmp_path)
    (config,) = [body for name, body, _ in _examples("config") if name == "stdio"]
    server = config["mcpServers"]["aqe-inspect"]
    assert server["command"] == "aqe-inspect" and Path(AQE_INSPECT[0]).name == "aqe-inspect"

    async def main():
        async with stdio_session(*server["args"][1:], cwd=str(folder)) as session:
            return (await session.list_tools()).tools, await call(
                session, "list_executions", source="spark-4.3.0/skew_join/eventlog.json")

    assert server["args"][0] == "mcp"
    tools, (error, text, _) = run(main)
    assert len(tools) == 8 and not error, text


def test_the_http_set_up_names_the_url_the_server_serves():
    (config,) = [body for name, body, _ in _examples("config") if name == "http"]
    server = config["mcpServers"]["aqe-inspect"]
    assert server["type"] == "http"
    shape = re.compile(r"http://127\.0\.0\.1:\d+/mcp")
    assert shape.fullmatch(server["url"])
    with http_server() as (url, _):
        assert shape.fullmatch(url)


def _install_command() -> str:
    """The one line of the ```sh block after the page's `<!-- mcp-install -->` marker."""
    after = PAGE.read_text("utf-8").split("<!-- mcp-install -->\n", 1)[1]
    block = re.match(r"```sh\n(.*?)```", after, re.S)
    assert block, "the page shows no install command after <!-- mcp-install -->"
    (line,) = [line for line in block.group(1).splitlines() if line.strip()]
    return line


def test_the_install_command_installs_a_server_that_answers(tmp_path):
    """The page's install command, run as written in a copy of the checkout (a fresh venv, a
    clean environment): it installs the server from the checkout (aqe-inspect is not on an
    index yet), which answers a client. The build skips the compiled core
    (AQE_INSPECT_PURE_PYTHON=1 at build time): the README's own command, run as written by
    test_as_written.py, compiles it; here the page's command is what is tested, and a second
    compile would cost CI minutes for nothing more."""
    from .test_as_written import _bash, _checkout, _clean_env

    command = _install_command()
    clone = _checkout(tmp_path / "aqe-inspect")
    done = _bash(command, clone, _clean_env(tmp_path, AQE_INSPECT_PURE_PYTHON="1"),
                 timeout=1500)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    script = clone / ".venv" / "bin" / "aqe-inspect"
    assert script.is_file()

    async def main():
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=str(script),
                                       args=["mcp", "--allow", "sample_plans"], cwd=str(clone),
                                       env=_clean_env(tmp_path))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return (await session.list_tools()).tools, await call(
                    session, "list_executions", source="spark-4.3.0/skew_join/eventlog.json")

    tools, (error, text, _) = run(main)
    assert len(tools) == 8 and not error, text
