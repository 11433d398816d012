"""Driving `aqe-inspect mcp` as a real client does: the MCP SDK's ClientSession over stdio (the
installed console script as a subprocess) or over streamable HTTP (the server started with
`--http 0` on loopback, its port read from the line it prints). Used by tests/test_mcp*.py."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import pytest

from .conftest import AQE_INSPECT, IN_CI

if sys.version_info < (3, 10):  # the SDK's floor: the mcp extra installs nothing older
    pytest.skip("the MCP SDK needs Python 3.10+", allow_module_level=True)
if IN_CI:
    import mcp  # noqa: F401 - under CI the mcp extra is installed: missing, the tests fail
else:
    pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")

import anyio  # noqa: E402 - after the checks above
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402


def server_command(*args: str) -> List[str]:
    return [*AQE_INSPECT, "mcp", *args]


def run(main, *args):
    """anyio.run with a deadline: a hung server fails the test instead of the suite."""
    async def bounded():
        with anyio.fail_after(240):
            return await main(*args)
    return anyio.run(bounded)


@contextlib.asynccontextmanager
async def stdio_session(*args: str, roots: Optional[Sequence[str]] = None,
                        cwd: Optional[str] = None):
    """A ClientSession with `aqe-inspect mcp ARGS` over stdio, initialized; with `roots`
    (folders), the client declares them as its MCP roots."""
    command = server_command(*args)
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=cwd,
                                   env=dict(os.environ))
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write):
            async with ClientSession(read, write,
                                     list_roots_callback=_roots_callback(roots)) as session:
                await session.initialize()
                yield session


def _roots_callback(roots: Optional[Sequence[str]]):
    """The client's answer to roots/list: `roots` (folders) as file:// URIs; None: the
    client declares no roots."""
    if roots is None:
        return None
    from mcp import types

    async def callback(context):  # noqa: ARG001 - the SDK's signature
        return types.ListRootsResult(roots=[
            types.Root(uri=Path(folder).resolve().as_uri(), name=Path(folder).name or "/")
            for folder in roots])

    return callback


@contextlib.contextmanager
def http_server(*args: str, host: str = "127.0.0.1", preexec_fn=None):
    """`aqe-inspect mcp --http 0 ARGS` running; yields (its /mcp URL, its process)."""
    process = subprocess.Popen(server_command("--http", "0", "--host", host, *args),
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn)
    try:
        deadline = time.monotonic() + 60
        line = ""
        while time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line and process.poll() is not None:
                break
            found = re.search(r"serving (http://\S+/mcp)", line)
            if found:
                yield found.group(1), process
                return
        raise AssertionError(f"the HTTP server did not start: {line!r}, exit "
                             f"{process.poll()}: {process.stderr.read() if process.poll() is not None else ''}")
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for stream in (process.stdout, process.stderr):
            stream.close()


@contextlib.asynccontextmanager
async def http_session(url: str, roots: Optional[Sequence[str]] = None):
    """A ClientSession with the server at `url`, initialized; with `roots` (folders), the
    client declares them as its MCP roots."""
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write,
                                 list_roots_callback=_roots_callback(roots)) as session:
            await session.initialize()
            yield session


async def call(session, tool: str, **arguments: Any):
    """(is_error, text, structured content) of one tool call."""
    result = await session.call_tool(tool, arguments)
    text = "\n".join(getattr(item, "text", "") for item in result.content)
    return bool(result.is_error), text, result.structured_content


def cli_json(*args: str, cwd: Optional[str] = None) -> Dict[str, Any]:
    """What the command line prints in JSON (exit 0 or 1, the check and compare verdicts)."""
    done = subprocess.run([*AQE_INSPECT, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)
