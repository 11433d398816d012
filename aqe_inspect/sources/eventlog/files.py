"""Where one application's event log lies: the files (parts) to read, in order.

Spark and its vendors lay an application's log out in three ways:

    file        one file, plain or compressed, `.inprogress` while the application runs
                (`local-1700000000000`, `app-20240101-0001.zstd`, `application_1_1.lz4.inprogress`)
    rolling     a folder `eventlog_v2_<app id>` of `events_<N>_<app id>[.<codec>]` files, read in
                the numeric order of N (10 after 9); `appstatus_<app id>[.inprogress]` only marks
                the state, and hidden files (Hadoop's `.crc`) are not the log
    databricks  a folder of rolled `eventlog-YYYY-MM-DD--HH-MM[.gz]` files, in time order, then the
                current `eventlog` file

A folder holding several applications' logs (Spark's `spark.eventLog.dir`, a Databricks log
delivery tree) gives each application separately, in the order of their paths. Files are told
to be event logs by content (`looks_like_event_log`), not by name: the decompressed text must
start with `{"Event":`.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from typing import BinaryIO, List, Optional, Sequence, Tuple

from ...errors import InspectError
from .codecs import CODECS, decode, detect_codec

__all__ = ["EventLog", "Part", "find_event_logs", "events_codec", "folder_parts",
           "is_hidden", "is_marker", "log_from_bytes", "looks_like_event_log", "stream_event_log"]

LAYOUTS = ("file", "rolling", "databricks")
#: The first bytes read to tell a file's codec and whether it holds events.
SNIFF_SIZE = 64 << 10
_ROLLING_DIR = re.compile(r"eventlog_v2_(?P<app>.+)")
_ROLLING_PART = re.compile(
    r"events_(?P<index>\d+)_(?P<app>.+?)(?:\.[A-Za-z0-9]+)?(?:\.inprogress)?")
_APPSTATUS = re.compile(r"appstatus_.+")
_DATABRICKS_CURRENT = "eventlog"
_DATABRICKS_ROLLED = re.compile(
    r"eventlog-(?P<when>\d{4}-\d\d-\d\d--\d\d-\d\d)(?:\.[A-Za-z0-9]+)?(?:\.inprogress)?")
_EVENT = re.compile(rb"(?:\xef\xbb\xbf)?\s*\{\s*\"Event\"\s*:")
#: How deep a folder of many applications is searched (Databricks nests cluster/driver/context).
MAX_DEPTH = 4


@dataclass(frozen=True)
class Part:
    """One file of a log. `name` is the path as shown to the user (the path they gave, joined
    with the file's name); `codec` is what its first bytes say."""

    path: str
    name: str
    codec: str
    size: int
    #: Where to read the bytes when not from `path` (standard input).
    stream: Optional[BinaryIO] = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class EventLog:
    """One application's log: `name` is the file or folder the user would name for it."""

    name: str
    layout: str
    parts: Tuple[Part, ...]


def find_event_logs(path: str) -> List[EventLog]:
    """Every application's event log at `path` (a file, a rolling or Databricks folder, or a
    folder of such), each with its parts in reading order; an InspectError when there is none
    or `path` cannot be read."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InspectError("no such file or directory", source=path) from None
    except OSError as error:
        raise InspectError(f"cannot read: {error.strerror or error}", source=path) from None
    if not stat.S_ISDIR(info.st_mode):
        return [_single(path)]
    log = _folder_log(path, _listing(path))
    if log is not None:
        return [log]
    logs = _search(path, _listing(path), 1)
    if not logs:
        raise InspectError("is a directory with no Spark event log in it (expected files of JSON "
                           "lines that start with {\"Event\":, plain or compressed, or "
                           "eventlog_v2_* folders)", source=path)
    return logs


def looks_like_event_log(path: str) -> bool:
    """Whether `path` holds an event log: a file whose decompressed text starts with
    `{"Event":`, or a folder laid out as one or holding one. Cheap (reads the first bytes of a
    file, the first block of a compressed one); never raises."""
    try:
        if os.path.isdir(path):
            names = _listing(path)
            if _folder_layout(path, names):
                return True
            for name in names[:64]:
                inner = os.path.join(path, name)
                if os.path.isfile(inner) and _holds_events(inner):
                    return True
                if os.path.isdir(inner) and _folder_layout(inner, _listing(inner)):
                    return True
            return False
        return _holds_events(path)
    except Exception:  # a sniff: anything unreadable is simply not an event log
        return False


def events_codec(head: bytes, name: str = "") -> Optional[str]:
    """The codec of a stream whose first bytes are `head` when it holds events (plain or
    compressed JSON lines that start with `{"Event":`); None for anything else. Never raises."""
    try:
        codec = detect_codec(head, name)
        if codec is None or _EVENT.match(_first_text(head, codec, name)) is None:
            return None
    except Exception:  # a sniff: what cannot be decoded is not an event log
        return None
    return codec


def stream_event_log(name: str, codec: str, stream: BinaryIO) -> EventLog:
    """An event log read from an open stream (standard input)."""
    part = Part(path="-", name=name, codec=codec, size=0, stream=stream)
    return EventLog(name=name, layout="file", parts=(part,))


# -- one file --------------------------------------------------------------------------------

def _head(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(SNIFF_SIZE)


def _first_text(head: bytes, codec: str, path: str) -> bytes:
    """The first decompressed bytes of a file that starts with `head`."""
    import io

    chunks = decode(io.BytesIO(head), codec, path, [], chunk_size=4096)
    return next(iter(chunks), b"")


def _holds_events(path: str) -> bool:
    head = _head(path)
    return bool(head) and events_codec(head, path) is not None


def _part(path: str, name: str) -> Part:
    try:
        size = os.path.getsize(path)
        head = _head(path)
    except OSError as error:
        raise InspectError(f"cannot read: {error.strerror or error}", source=name) from None
    return Part(path=path, name=name, codec=_codec(head, path, name), size=size)


def _codec(head: bytes, path: str, name: str) -> str:
    codec = detect_codec(head, path)
    if codec is None:
        shown = " ".join(f"{byte:02x}" for byte in head[:8])
        raise InspectError(f"not an event log: neither JSON lines nor a stream Spark compresses "
                           f"({', '.join(CODECS[1:])}); it starts with the bytes {shown}",
                           source=name)
    return codec


def _single(path: str) -> EventLog:
    return _one_file(_part(path, path))


def _one_file(part: Part) -> EventLog:
    if part.size == 0:
        raise InspectError("the file is empty: no events to read", source=part.name)
    return EventLog(name=part.name, layout="file", parts=(part,))


def log_from_bytes(name: str, layout: str, parts: Sequence[Tuple[str, bytes]]) -> EventLog:
    """One application's log whose files' bytes are at hand (read by someone else, e.g. Spark's
    binaryFile source), given as (name, bytes) in reading order (`folder_parts`): the same
    EventLog, and the same errors, as `find_event_logs` gives for the files themselves."""
    import io

    made = tuple(Part(path=part_name, name=part_name, size=len(data),
                      codec=_codec(bytes(data[:SNIFF_SIZE]), part_name, part_name),
                      stream=io.BytesIO(data)) for part_name, data in parts)
    if layout == "file" and len(made) == 1:
        return _one_file(made[0])
    if not made:
        raise InspectError(f"a {layout} event log directory without readable files", source=name)
    return EventLog(name=name, layout=layout, parts=made)


# -- folders ---------------------------------------------------------------------------------

def is_hidden(name: str) -> bool:
    """Whether a folder entry is never read as a log: hidden (Hadoop's `.crc`) or `_`-named."""
    return name.startswith((".", "_"))


def is_marker(name: str) -> bool:
    """Whether a file beside logs only marks an application's state (`appstatus_<app id>`)."""
    return _APPSTATUS.fullmatch(name) is not None


def _listing(path: str) -> List[str]:
    try:
        return sorted(name for name in os.listdir(path) if not is_hidden(name))
    except OSError as error:
        raise InspectError(f"cannot read the directory: {error.strerror or error}",
                           source=path) from None


def _folder_layout(path: str, names: List[str]) -> Optional[str]:
    if _ROLLING_DIR.fullmatch(os.path.basename(os.path.normpath(path))) or any(
            _ROLLING_PART.fullmatch(name) for name in names):
        return "rolling"
    if any(name == _DATABRICKS_CURRENT or _DATABRICKS_ROLLED.fullmatch(name) for name in names):
        return "databricks"
    return None


def folder_parts(path: str, names: List[str]) -> Optional[Tuple[str, List[str]]]:
    """The layout of a folder holding the files `names` and the names of its log's parts in
    reading order, or None when it is laid out as neither a rolling nor a Databricks log (a
    folder of applications). Told by names alone, nothing read: a folder on any file system."""
    layout = _folder_layout(path, names)
    if layout == "rolling":
        ordered = sorted((int(match["index"]), name) for name in names
                         for match in [_ROLLING_PART.fullmatch(name)] if match)
        if not ordered:
            raise InspectError("a rolling event log directory without events_<N>_* files",
                               source=path)
        chosen = [name for _, name in ordered]  # appstatus_* and other files are not the log
    elif layout == "databricks":
        rolled = sorted((match["when"], name) for name in names
                        for match in [_DATABRICKS_ROLLED.fullmatch(name)] if match)
        chosen = [name for _, name in rolled]
        if _DATABRICKS_CURRENT in names:
            chosen.append(_DATABRICKS_CURRENT)
    else:
        return None
    return layout, chosen


def _folder_log(path: str, names: List[str]) -> Optional[EventLog]:
    """The log of a rolling or Databricks folder, or None when `path` is laid out as neither."""
    found = folder_parts(path, names)
    if found is None:
        return None
    layout, chosen = found
    parts = tuple(_part(os.path.join(path, name), os.path.join(path, name)) for name in chosen
                  if os.path.isfile(os.path.join(path, name)))
    if not parts:
        raise InspectError(f"a {layout} event log directory without readable files",
                           source=path)
    return EventLog(name=path, layout=layout, parts=parts)


def _search(path: str, names: List[str], depth: int) -> List[EventLog]:
    """The logs in a folder of many applications, depth first in name order."""
    logs: List[EventLog] = []
    for name in names:
        child = os.path.join(path, name)
        if os.path.isdir(child):
            children = _listing(child)
            log = _folder_log(child, children)
            if log is not None:
                logs.append(log)
            elif depth < MAX_DEPTH:
                logs.extend(_search(child, children, depth + 1))
        elif os.path.isfile(child) and not is_marker(name) \
                and looks_like_event_log(child):
            logs.append(_single(child))
    return logs
