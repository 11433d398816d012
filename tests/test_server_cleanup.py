"""The servers the tests start are stopped when pytest is ended by SIGTERM (a CI job cancelled,
a timeout), not left running with their temporary folders (issue 36).

Each test runs pytest on a tiny test file that uses the real fixture (the Spark Connect server
of test_connect.py, the standalone cluster of test_fleet_cluster.py), waits until the server
is up, sends that pytest SIGTERM (to its own pid, as a CI runner does), and then checks by pid
and by process group that nothing it started still runs, and that its folder is gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from . import stopping
from .conftest import IN_CI

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parent.parent

TINY_CONFTEST = '''
import sys
sys.path.insert(0, {root!r})
from tests.{module} import {fixture}  # noqa: F401  (the fixture itself, as its module has it)
'''

TINY_TEST = '''
import json, os, time
from pathlib import Path

def test_until_ended({fixture}):
    started = {fixture}
    Path(os.environ["AQE_PROBE"]).write_text(json.dumps({probe}))
    time.sleep(600)
'''


def run_until_up(tmp_path: Path, module: str, fixture: str, probe: str, timeout: float):
    """pytest on a tiny test using `fixture`, started in a session of its own; returns the
    process and what the test wrote once the fixture was up (None if it never was)."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "conftest.py").write_text(
        TINY_CONFTEST.format(root=str(ROOT), module=module, fixture=fixture))
    (folder / "test_tiny.py").write_text(
        textwrap.dedent(TINY_TEST.format(fixture=fixture, probe=probe)))
    written = tmp_path / "probe.json"
    log = tmp_path / "pytest.log"
    env = {**os.environ, "AQE_PROBE": str(written)}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
             "test_tiny.py"], cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if written.is_file() and written.read_text():
            return process, json.loads(written.read_text()), log
        time.sleep(0.5)
    return process, None, log


def end_with_sigterm(process: subprocess.Popen, log: Path) -> str:
    os.kill(process.pid, signal.SIGTERM)  # pytest's own pid, not its group
    try:
        process.wait(120)
    except subprocess.TimeoutExpired:
        pass
    said = log.read_text("utf-8", "replace")
    assert process.returncode == 128 + signal.SIGTERM, (process.returncode, said[-3000:])
    assert "SIGTERM: stopping the servers the tests started" in said, said[-3000:]
    return said


def clean_up(process: subprocess.Popen, groups) -> None:
    """Whatever a failed test left: the tiny pytest's session, the servers' groups."""
    for group in (process.pid, *groups):
        stopping.stop_group(group, grace=5)


def test_sigterm_stops_the_spark_connect_server_and_removes_its_folder(tmp_path):
    from .test_connect import _connect_pyspark

    _connect_pyspark()  # skips (fails under CI) as the fixture would
    probe = '{"pid": started.pid(), "group": started.group, "work": str(started.work)}'
    process, found, log = run_until_up(tmp_path, "test_connect", "server", probe, 240)
    groups = [found["group"]] if found else []
    try:
        if found is None:
            said = log.read_text("utf-8", "replace")
            if " skipped" in said and not IN_CI:
                pytest.skip(said.strip().splitlines()[-1])
            pytest.fail(f"the Connect server did not come up:\n{said[-3000:]}")
        assert found["pid"] and stopping.alive(found["pid"])
        assert found["pid"] in stopping.group_members(found["group"])
        assert Path(found["work"]).is_dir()
        end_with_sigterm(process, log)
        assert not stopping.alive(found["pid"])
        assert stopping.group_members(found["group"]) == []
        assert not Path(found["work"]).exists()
    finally:
        clean_up(process, groups)


def test_sigterm_stops_the_standalone_cluster(tmp_path):
    if not IN_CI:
        pytest.importorskip("pyspark", reason="the 'spark' extra is not installed")
    probe = '{"groups": list(started.groups)}'
    process, found, log = run_until_up(tmp_path, "test_fleet_cluster", "cluster", probe, 240)
    groups = found["groups"] if found else []
    try:
        if found is None:
            said = log.read_text("utf-8", "replace")
            pytest.fail(f"the cluster did not come up:\n{said[-3000:]}")
        assert len(groups) == 2  # the master's, the worker's
        assert all(stopping.group_members(group) for group in groups)
        end_with_sigterm(process, log)
        for group in groups:
            assert stopping.group_members(group) == []
    finally:
        clean_up(process, groups)
