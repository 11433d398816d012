"""The signals that end a run (Ctrl-C, SIGTERM, SIGHUP), and holding them off for a moment:
the CLI around its output file, the event-log reader around starting a worker process."""

from __future__ import annotations

import signal

#: The signals that end a run, those this system has.
ENDING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                       if hasattr(signal, name))


def hold():
    """Block the ending signals (they wait); the mask to give back to `release`."""
    if not ENDING_SIGNALS or not hasattr(signal, "pthread_sigmask"):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, ENDING_SIGNALS)


def release(previous) -> None:
    """Unblock them: a signal that came meanwhile is raised here."""
    if previous is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
