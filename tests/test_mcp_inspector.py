"""The MCP Inspector (the protocol's own debugging client, an npm package) in its CLI mode
against `aqe-inspect mcp`: it lists the tools and calls one. Skipped only where Node.js is
missing (CI has it); the package comes from the npm registry through npx."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from .conftest import AQE_INSPECT, SAMPLE_PLANS
from .mcp_client import cli_json

NPX = shutil.which("npx")
if shutil.which("node") is None or NPX is None:
    pytest.skip("Node.js is not installed (the MCP Inspector is an npm package run by npx)",
                allow_module_level=True)

#: The Inspector's last release that runs on Node.js 20 as well as 22 (its CLI mode, --cli).
INSPECTOR = "@modelcontextprotocol/inspector@1.0.3"


def inspector(*args: str) -> dict:
    """What the Inspector's CLI prints (JSON, after its banner) for `--cli aqe-inspect mcp`."""
    done = subprocess.run([NPX, "-y", INSPECTOR, "--cli", *AQE_INSPECT, "mcp", "--allow",
                           str(SAMPLE_PLANS), *args], capture_output=True, text=True,
                          timeout=900, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    return json.loads(done.stdout[done.stdout.index("{"):])


def test_the_inspector_lists_the_tools_and_calls_one():
    listed = inspector("--method", "tools/list")
    assert {tool["name"] for tool in listed["tools"]} == {
        "list_executions", "diff", "plans", "why", "advise", "check", "compare", "rules"}
    log = "spark-4.3.0/skew_join/eventlog.json"
    called = inspector("--method", "tools/call", "--tool-name", "diff", "--tool-arg",
                       f"source={log}")
    assert called.get("isError") in (None, False), called
    assert called["structuredContent"] == cli_json(
        "diff", str((SAMPLE_PLANS / log).resolve()), "--format", "json")
    assert "skew-join" in called["content"][0]["text"]
