"""What the tests start (a Spark Connect server, a standalone master and worker) is stopped when
pytest is ended by SIGTERM or SIGHUP too, not only when its session ends.

Python ends on SIGTERM at once by default: no fixture's `finally`, no atexit. The fixtures that
start servers call `install()`: SIGTERM (and SIGHUP) then end pytest as `pytest.exit` does, so
its session is torn down and each fixture's `finally` stops what it started (exit code
128 + the signal's number). One signal is enough: later ones are ignored while that clean-up
runs (SIGKILL still ends the process). `held()` keeps a signal from cutting a clean-up in its
middle: it is taken when the block ends.

The servers are started in process groups of their own (`start_new_session`), so stopping
them reaches every process they started (Spark's daemon script leaves its JVM running in the
background; a worker's executors and their Python workers) with `stop_group`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path
from typing import Iterator, List, Optional

import pytest

ENDING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))

_holding = 0
_pending: List[int] = []


def _ended(number: int, frame) -> None:
    if _holding:
        _pending.append(number)
        return
    _end(number)


def _end(number: int) -> None:
    for each in ENDING:  # the clean-up under way is not cut by another
        signal.signal(each, signal.SIG_IGN)
    name = signal.Signals(number).name
    pytest.exit(f"{name}: stopping the servers the tests started", returncode=128 + number)


def install() -> None:
    """SIGTERM and SIGHUP end pytest through its teardown (where no one else handles them)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for number in ENDING:
        if signal.getsignal(number) in (signal.SIG_DFL, None):
            signal.signal(number, _ended)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """A signal that comes in the block is taken at its end (a stop is not cut in half)."""
    global _holding
    _holding += 1
    try:
        yield
    finally:
        _holding -= 1
        if not _holding and _pending:
            number = _pending[0]
            _pending.clear()
            _end(number)


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie, left for its parent to reap, does not)."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        return state != "Z"
    except OSError:
        return True


def group_members(group: int) -> List[int]:
    """The running processes of process group `group` (read from /proc; [] elsewhere when
    the group is gone)."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(group, 0)
        except OSError:
            return []
        return [group]
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().split(")")[-1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def stop_group(group: Optional[int], grace: float = 30) -> None:
    """Every process of process group `group`: SIGTERM, then after `grace` seconds SIGKILL."""
    if group is None:
        return
    for sent, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10)):
        if not group_members(group):
            return
        try:
            os.killpg(group, sent)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while group_members(group) and time.monotonic() < deadline:
            time.sleep(0.2)
