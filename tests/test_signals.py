"""Ctrl-C, SIGTERM and SIGHUP while a long event log is read by the pool of worker processes:
the run ends within seconds with one line (`aqe-inspect: interrupted`, naming SIGTERM or SIGHUP)
and exit 130, 143 or 129; no traceback from any process (the workers share standard error);
the workers are gone; `--output`'s temporary file is not left beside the output.

As a shell does it: the CLI starts in a session of its own (a process group, as a terminal's
job); Ctrl-C goes to the whole group (the workers get it too), SIGTERM and SIGHUP to the main
process only. Each signal is sent at several moments once the pool's workers run. The log is the
real skew_join log's SQL executions repeated under new ids (tests/hostile_sizes.py), long enough to be
read for seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import AQE_INSPECT, as_a_foreground_job
from .hostile_sizes import alive, children_of, renumbered, sample, wait_for, write_plain

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="POSIX signals, and /proc to find the workers")

#: After the workers start, the signal waits this share of the whole read (measured once on
#: this machine, `read_seconds`): mid-read, each time elsewhere, and never as late as the end
#: (a read twice as fast as measured still runs when the last signal comes).
SHARES = [0.0, 0.02, 0.05, 0.1, 0.16, 0.23, 0.3, 0.38, 0.45]
WORKERS = 2


@pytest.fixture(scope="module")
def long_log(tmp_path_factory) -> Path:
    """6,000 executions, 340 MB: some seconds of reading on any machine this runs on (2,500
    were read in about a second once the reader got faster)."""
    path = tmp_path_factory.mktemp("long") / "local-1795445853005"
    write_plain(renumbered(sample().read_bytes().split(b"\n"), 6000), path)
    return path


@pytest.fixture(scope="module")
def read_seconds(long_log, tmp_path_factory) -> float:
    """How long the whole log takes to read once the workers run, on this machine now (a
    fixed delay was once later than a faster machine's whole read, and the run ended first)."""
    out = tmp_path_factory.mktemp("whole") / "out.json"
    process = _start(long_log, out)
    try:
        _workers(process)
        began = time.monotonic()
        _, err = process.communicate(timeout=600)
        took = time.monotonic() - began
    finally:
        _kill_group(process)
    assert process.returncode == 0, err
    assert out.stat().st_size > 0
    return took


def _start(log: Path, out: Path, ignored: tuple = ()) -> subprocess.Popen:
    """The run as a terminal's foreground job starts it: the ending signals at their default
    (whatever this test runner inherited, `nohup` for one), but those `ignored`."""
    def dispositions() -> None:
        as_a_foreground_job()
        for number in ignored:
            signal.signal(number, signal.SIG_IGN)

    return subprocess.Popen([*AQE_INSPECT, "diff", str(log), "--format", "json", "--output",
                             str(out)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=dispositions)


def _workers(process: subprocess.Popen):
    """The pool's workers, once they run (the first 64 executions are read without them)."""
    assert wait_for(lambda: len(children_of(process.pid)) >= WORKERS or
                    process.poll() is not None, 60)
    assert process.poll() is None, "the run ended before its pool started"
    found = children_of(process.pid)
    assert len(found) == WORKERS
    return found


def _send(process: subprocess.Popen, number: int) -> None:
    """As a terminal sends Ctrl-C (to the whole group, the workers too); SIGTERM and SIGHUP to
    the main process only."""
    if number == signal.SIGINT:
        os.killpg(process.pid, number)
    else:
        process.send_signal(number)


def _kill_group(process: subprocess.Popen) -> None:
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        process.wait()


@pytest.mark.parametrize("name, code, said", [
    ("SIGINT", 130, "aqe-inspect: interrupted\n"),
    ("SIGTERM", 143, "aqe-inspect: interrupted (SIGTERM)\n"),
    ("SIGHUP", 129, "aqe-inspect: interrupted (SIGHUP)\n"),
])
def test_a_signal_mid_read_ends_the_run_its_workers_and_its_temporary_file(
        name, code, said, long_log, read_seconds, tmp_path):
    number = getattr(signal, name)
    for delay in (round(share * read_seconds, 3) for share in SHARES):
        folder = tmp_path / f"after-{delay}"
        folder.mkdir()
        process = _start(long_log, folder / "out.json")
        try:
            workers = _workers(process)
            time.sleep(delay)
            assert process.poll() is None, "the run ended before the signal: lengthen the log"
            sent = time.monotonic()
            _send(process, number)
            # Standard output and error reach their end only when no process holds them:
            # a worker left running would hold them open past the timeout.
            out, err = process.communicate(timeout=20)
            took = time.monotonic() - sent
        finally:
            _kill_group(process)
        where = f"{name} {delay} s after the workers started"
        assert process.returncode == code, (where, err)
        assert err.decode("utf-8", "replace") == said, where  # one line, from one process
        assert out == b""
        assert took < 5, where
        assert sorted(os.listdir(folder)) == [], where  # no report, no temporary file
        assert wait_for(lambda: not any(alive(worker) for worker in workers), 5), where


@pytest.mark.parametrize("name", ["SIGHUP", "SIGINT"])
def test_a_signal_ignored_when_the_run_started_stays_ignored(name, long_log, read_seconds,
                                                             tmp_path):
    """`nohup aqe-inspect ...` (SIGHUP ignored) outlives its terminal's hangup; a shell's
    background job (`cmd &`, SIGINT ignored) outlives Ctrl-C: the run reads on to its end."""
    number = getattr(signal, name)
    out = tmp_path / "out.json"
    process = _start(long_log, out, ignored=(number,))
    try:
        _workers(process)
        time.sleep(0.2 * read_seconds)
        assert process.poll() is None, "the run ended before the signal: lengthen the log"
        _send(process, number)
        _, err = process.communicate(timeout=600)
    finally:
        _kill_group(process)
    assert process.returncode == 0, err
    assert err == b""
    assert json.loads(out.read_text())["queries"]


def test_the_workers_die_with_their_parent_killed_outright(long_log, tmp_path):
    """SIGKILL cannot be caught: the workers end by themselves (the parent's death signal)."""
    process = _start(long_log, tmp_path / "out.json")
    try:
        workers = _workers(process)
        time.sleep(0.2)
        process.kill()
        process.communicate(timeout=20)  # the pipes close: no worker holds them any more
    finally:
        _kill_group(process)
    assert process.returncode == -signal.SIGKILL
    assert wait_for(lambda: not any(alive(worker) for worker in workers), 5)


def test_a_worker_killed_from_outside_is_one_error_line(long_log, tmp_path):
    process = _start(long_log, tmp_path / "out.json")
    try:
        workers = _workers(process)
        os.kill(workers[0][0], signal.SIGKILL)
        out, err = process.communicate(timeout=60)
    finally:
        _kill_group(process)
    assert process.returncode == 2, err
    assert err.decode() == (f"aqe-inspect: error: {long_log}: a process reading the executions "
                            f"ended unexpectedly (killed, or out of memory); the rest of the "
                            f"log was not read\n")
    assert os.listdir(tmp_path) == []  # no report, no temporary file
    assert wait_for(lambda: not any(alive(worker) for worker in workers), 5)


def test_the_command_run_in_a_process_gives_its_signal_handlers_back(tmp_path):
    from aqe_inspect.cli import main

    before = {number: signal.getsignal(number)
              for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    assert main(["diff", str(sample()), "--format", "json", "--output",
                 str(tmp_path / "out.json")]) == 0
    assert {number: signal.getsignal(number) for number in before} == before
