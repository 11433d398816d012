"""STAND-IN (the byte-layer helper's files.py replaces this at merge): event logs on disk.

Only plain, single-file logs and directories of them; rolling `eventlog_v2_*` directories read
their `events_N_*` parts in N order.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import List, Tuple

EVENT_MARK = b'{"Event":"SparkListener'
ROLLING_PART = re.compile(r"events_(\d+)_")


@dataclass(frozen=True)
class Part:
    path: str

    @property
    def name(self) -> str:
        return self.path


@dataclass(frozen=True)
class EventLog:
    name: str
    parts: Tuple[Part, ...]


def looks_like_event_log(path: str) -> bool:
    """Whether a file (or directory) holds Spark listener events: its first line is one."""
    if os.path.isdir(path):
        return bool(find_event_logs(path))
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return head.lstrip(b"\xef\xbb\xbf").startswith(EVENT_MARK)


def find_event_logs(path: str) -> List[EventLog]:
    if not os.path.isdir(path):
        return [EventLog(path, (Part(path),))]
    logs: List[EventLog] = []
    names = sorted(os.listdir(path))
    parts = sorted((int(m.group(1)), n) for n in names if (m := ROLLING_PART.match(n)))
    if parts:
        return [EventLog(path, tuple(Part(os.path.join(path, n)) for _, n in parts))]
    for name in names:
        full = os.path.join(path, name)
        if os.path.isdir(full) or not name.startswith(".") and looks_like_event_log(full):
            logs.extend(find_event_logs(full) if os.path.isdir(full) else
                        [EventLog(full, (Part(full),))])
    return logs
