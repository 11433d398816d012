"""A tool's work in a worker thread that its cancellation stops.

A client that cancels a call (`notifications/cancelled`, or a closed connection) cancels the
task awaiting it; a thread cannot be cancelled so, and a read of a large log would go on
holding its reading slot (and its memory) to the end. Here the thread is sent `Stopped` (an
asynchronous exception, CPython's `PyThreadState_SetAsyncExc`): the interpreter raises it in
the thread at its next step between two bytecodes, so the read stops within a chunk of its
input (a long call into C, one decompressed block or one regular-expression search, ends
first). `Stopped` is a BaseException, as KeyboardInterrupt is: the library's `except
Exception` handlers let it through, and its `finally` blocks close what it opened. The
reading slot is given back once the thread has left the work, never before: the work
running at once stays bounded by the slots."""

from __future__ import annotations

import ctypes
import threading
from typing import Callable, Optional, TypeVar

import anyio

T = TypeVar("T")

#: The most seconds a stopped work may take to end before its slot is given back anyway
#: (a read blocked in one long system call; the thread ends on its own later).
STOP_WAIT = 30.0


class Stopped(BaseException):
    """Raised in a worker thread whose call was cancelled."""


class _Stoppable:
    """One work's thread: which it is while it runs the work, and whether it is done."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: Optional[int] = None
        self._stopped = False
        self.done = False  # set by a plain store: no Python call could raise before it

    def run(self, work: Callable[[], T]) -> T:
        try:
            with self._lock:
                if self._stopped:
                    raise Stopped()
                self._thread = threading.get_ident()
            try:
                return work()
            finally:
                with self._lock:
                    self._thread = None
                try:
                    _settle()  # a stop sent just before is raised here, inside this frame
                except Stopped:
                    pass
        finally:
            self.done = True

    def stop(self) -> None:
        """Stop the work: `Stopped` raised in its thread, if it is running it."""
        with self._lock:
            self._stopped = True
            if self._thread is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread),
                                                           ctypes.py_object(Stopped))


def _settle() -> None:
    """Nothing: a Python call, where the interpreter raises a pending asynchronous
    exception."""


async def run(work: Callable[[], T], slots: anyio.CapacityLimiter) -> T:
    """`work()` in a worker thread, holding one of `slots` while it runs; when the awaiting
    task is cancelled, the work is stopped and its slot given back once it has ended."""
    async with slots:
        stoppable = _Stoppable()
        try:
            return await anyio.to_thread.run_sync(stoppable.run, work, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            stoppable.stop()
            with anyio.CancelScope(shield=True):
                with anyio.move_on_after(STOP_WAIT):
                    while not stoppable.done:
                        await anyio.sleep(0.01)
            raise
