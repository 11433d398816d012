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
to be event logs by content (`looks_like_event_log`), not by name: a compressed stream by its
magic bytes, and the (decompressed) text must start with `{"Event":`.

Nothing in a folder is passed over unsaid (`search_event_logs`): a log that cannot be read (a
codec library that cannot be imported, a stream damaged at its start, a file that cannot be
opened) is reported with its reason while the other logs are read, and the files that are not
logs (other files, empty ones, hidden ones, pipes, folders deeper than MAX_DEPTH) are counted
and named in a note. Hadoop's `.NAME.crc` checksum beside a file NAME, and the `appstatus_*`
marker of a rolling log, are the layout's own and not counted.

Each application is read once (`_search`): a folder or file reached again (a link, a loop) is
told by its identity, a second log of one application (a leftover `.inprogress` copy) by the
application's id, and each is named in a note. Every file is opened through `opening`: the file
read is the one the listing saw (`Part.key`), whatever was swapped in since.
"""

from __future__ import annotations

import io
import os
import re
import stat
from dataclasses import dataclass, field
from typing import (BinaryIO, Callable, Collection, Dict, Iterator, List, Optional, Sequence,
                    Tuple, Union)

from ...errors import InspectError, printable
from ..magic import SNIFF_SIZE, file_head
from ..opening import Key, Swapped, head_and_key, key_of, list_folder, open_file
from ..opening import file_head as _opened_head
from ..reading import DEFAULT_MAX_SIZE
from .codecs import CODECS, DEFAULT_CHUNK_SIZE, decode, detect_codec, magic_codec, require_library, \
    suffix_codec

__all__ = ["EventLog", "Found", "Part", "find_event_logs", "events_codec", "event_stream_codec",
           "folder_parts", "is_hidden", "read_chunks", "is_marker", "log_from_bytes", "looks_like_event_log",
           "file_head", "may_be_event_log", "search_event_logs", "stream_event_log"]

LAYOUTS = ("file", "rolling", "databricks")
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
#: The most of a compressed file read to find its first text (a first block larger than
#: SNIFF_SIZE: a raised spark.io.compression.*.blockSize, a gzip header with a long comment).
MAX_SNIFF = 16 << 20


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
    #: The file's identity (device, inode) when its folder was listed: the file opened to be
    #: read must be that one (`opening.open_file`), not one swapped in since.
    key: Optional[Key] = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class EventLog:
    """One application's log: `name` is the file or folder the user would name for it."""

    name: str
    layout: str
    parts: Tuple[Part, ...]

    @property
    def missing(self) -> Tuple[str, ...]:
        """What the log lacks of its application's events, by its parts' names, each said
        naming the log (`rolling_missing`); () for a log of one file or a Databricks folder."""
        if self.layout != "rolling":
            return ()
        return rolling_missing(self.name, [os.path.basename(part.name) for part in self.parts])


#: Why an entry of a searched folder is not read, as a note says it: (one, several).
_PASSED = {
    "not-events": ("file that is not an event log", "files that are not event logs"),
    "not-part": ("file that is not a part of its folder's event log",
                 "files that are not parts of their folder's event log"),
    "empty": ("empty file", "empty files"),
    "marker": ("appstatus_* file (it only marks an application's state)",
               "appstatus_* files (they only mark an application's state)"),
    "compacted": ("part that a later compacted part holds (read from the compacted one on, "
                  "as Spark reads)", "parts that a later compacted part holds (read from the "
                  "compacted one on, as Spark reads)"),
    "hidden": ("hidden file (its name starts with . or _)",
               "hidden files (their names start with . or _)"),
    "special": ("entry that is neither a file nor a folder (pipes, sockets, broken links)",
                "entries that are neither a file nor a folder (pipes, sockets, broken links)"),
}
#: The most names a note lists for one reason.
SHOWN = 5


@dataclass(frozen=True)
class Found:
    """What a search of `root` found: the logs to read, in the order of their paths; the event
    logs that cannot be read (each an error naming its file); the entries passed over,
    each (why, path): a key of `_PASSED`, or "deep" for a folder not searched; and the
    duplicates of what is read, each (path, the path read instead, why: "file", "folder",
    or the application and what the copy is)."""

    root: str
    logs: Tuple[EventLog, ...]
    failed: Tuple[InspectError, ...] = ()
    passed: Tuple[Tuple[str, str], ...] = ()
    duplicates: Tuple[Tuple[str, str, str], ...] = ()

    def notes(self) -> List[str]:
        """One note for each log that cannot be read, one for the duplicates read once, then
        one for each reason entries were passed over, naming them (relative to `root`)."""
        notes = [f"{error}; it was skipped" for error in self.failed]
        if self.duplicates:
            notes.append(f"{self.root}: {self._duplicates_said()}")
        return notes + [f"{self.root}: {said}" for said in self._passed_said()]

    def _duplicates_said(self) -> str:
        said = []
        for path, kept, why in self.duplicates[:SHOWN]:
            shown, read = (os.path.relpath(each, self.root) for each in (path, kept))
            if why in ("file", "folder"):
                said.append(f"{shown} (the same {why} as {read})")
            else:
                said.append(f"{shown} ({why} of {read}, which was read)")
        more = len(self.duplicates) - SHOWN
        listed = ", ".join(said) + (f" and {more} more" if more > 0 else "")
        counted = _count(len(self.duplicates), "duplicate", "duplicates")
        return f"each application is read once: skipped {counted}: {listed}"

    def nothing_read(self) -> InspectError:
        """The error when no log can be read: the first log's own error, else what the
        folder holds instead."""
        if self.failed:
            first = self.failed[0]
            if len(self.failed) == 1:
                return first
            others = _count(len(self.failed) - 1, "other event log", "other event logs")
            return InspectError(f"{first.message}; {others} in {self.root} cannot be read "
                                f"either", source=first.source)
        said = "".join(f"; {part}" for part in self._passed_said())
        return InspectError("is a directory with no Spark event log in it (expected files of JSON "
                            "lines that start with {\"Event\":, plain or compressed, or "
                            "eventlog_v2_* folders)" + said, source=self.root)

    def _passed_said(self) -> List[str]:
        said = []
        for why in (*_PASSED, "deep"):
            names = sorted(os.path.relpath(path, self.root) for reason, path in self.passed
                           if reason == why)
            if not names:
                continue
            shown = ", ".join(names[:SHOWN])
            if len(names) > SHOWN:
                shown += f" and {len(names) - SHOWN} more"
            if why == "deep":
                counted = _count(len(names), "folder", "folders")
                said.append(f"did not search {counted} deeper than {MAX_DEPTH} levels: {shown}")
            else:
                said.append(f"skipped {_count(len(names), *_PASSED[why])}: {shown}")
        return said


def _count(number: int, one: str, several: str) -> str:
    return f"{number} {one if number == 1 else several}"


def search_event_logs(path: str) -> Found:
    """Every application's event log at `path` (a file, a rolling or Databricks folder, or a
    folder of such), each with its parts in reading order, and what was passed over. An
    InspectError when `path` itself cannot be read, or names one log (a file, a log folder)
    that cannot be; `Found.nothing_read` when a folder holds no log that can be read."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InspectError("no such file or directory", source=path) from None
    except OSError as error:
        raise InspectError(f"cannot read: {error.strerror or error}", source=path) from None
    if not stat.S_ISDIR(info.st_mode):
        return Found(path, (_single(path),))
    names = _entries(path)
    passed: List[Tuple[str, str]] = []
    log = _folder_log(path, names, passed)
    if log is not None:
        return Found(path, (log,), passed=tuple(passed))
    return _search(path, names)


def find_event_logs(path: str) -> List[EventLog]:
    """The logs `search_event_logs` finds at `path`; an InspectError when there is none that
    can be read or `path` cannot be read. What was passed over is not said here: callers
    that report to a user take `search_event_logs` and its notes."""
    found = search_event_logs(path)
    if not found.logs:
        raise found.nothing_read()
    return list(found.logs)


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


def may_be_event_log(head: bytes, name: str = "") -> bool:
    """Whether an input that starts with `head` goes to the event-log reader: a compressed
    stream (told by its magic: never read as text), or text that starts with `{"Event":`."""
    return magic_codec(head, name) is not None or _EVENT.match(head) is not None


def events_codec(head: bytes, name: str = "") -> Optional[str]:
    """The codec of a stream whose first bytes are `head` when it holds events (plain or
    compressed JSON lines that start with `{"Event":`); None for anything else. Never raises."""
    try:
        codec = detect_codec(head, name)
        if codec is None:
            return None
        text = head if codec == "plain" else first_text(lambda size: head[:size], codec, name)
        if _EVENT.match(text) is None:
            return None
    except Exception:  # a sniff: what cannot be decoded is not an event log
        return None
    return codec


def event_stream_codec(read_head: Callable[[int], bytes], name: str) -> Optional[str]:
    """The codec of an input (standard input) whose first `size` bytes `read_head(size)` gives,
    when it goes to the event-log reader: "plain" for text that starts with `{"Event":`, the
    codec of a compressed stream; None for anything else (text for the text reader). A
    compressed stream that is not a readable event log is an InspectError naming `name`: its
    library cannot be imported, it is damaged at its start, or its text is not events."""
    head = read_head(SNIFF_SIZE)
    codec = magic_codec(head, name)
    if codec is None:
        return "plain" if _EVENT.match(head) is not None else None
    _compressed_events(read_head, codec, name)
    return codec


def first_text(read_head: Callable[[int], bytes], codec: str, name: str) -> bytes:
    """The first decompressed bytes of a `codec` stream whose first `size` bytes
    `read_head(size)` gives; b"" when it holds none (cut in its first block). More is read
    while the bytes read hold no whole block, up to MAX_SNIFF. An InspectError when the library
    cannot be imported or the stream is damaged at its start."""
    size = SNIFF_SIZE
    while True:
        head = read_head(size)
        chunks = decode(io.BytesIO(head), codec, name, [], chunk_size=4096)
        text = next(iter(chunks), b"")
        if text or len(head) < size or size >= MAX_SNIFF:
            return text
        size = min(size * 8, MAX_SNIFF)


def _compressed_events(read_head: Callable[[int], bytes], codec: str, name: str) -> None:
    """An InspectError unless a `codec` stream can be read and holds events (or nothing yet)."""
    text = first_text(read_head, codec, name)
    if text and _EVENT.match(text) is None:
        line = text.split(b"\n", 1)[0][:60].decode("utf-8", "replace")
        raise InspectError(f"a {codec} stream that does not hold Spark events (its text starts "
                           f"'{printable(line)}'); decompress it to read it as plan text",
                           source=name)


def stream_event_log(name: str, codec: str, stream: BinaryIO) -> EventLog:
    """An event log read from an open stream (standard input)."""
    part = Part(path="-", name=name, codec=codec, size=0, stream=stream)
    return EventLog(name=name, layout="file", parts=(part,))


# -- one file --------------------------------------------------------------------------------

def _sniffed(path: str, head: bytes, key: Optional[Key] = None) -> Tuple[str, bytes]:
    """The codec of a file that starts with `head` ("plain" when no magic says otherwise) and
    its first text; an InspectError when a compressed one cannot be decoded. More of a
    compressed one is read from the file whose identity is `key` (when given)."""
    codec = magic_codec(head, path)
    if codec is None:
        return "plain", head
    return codec, first_text(lambda size: _opened_head(path, size, expected=key), codec, path)


def _holds_events(path: str) -> bool:
    return _EVENT.match(_sniffed(path, _opened_head(path, SNIFF_SIZE))[1]) is not None


def _unreadable(error: OSError, name: str) -> InspectError:
    return InspectError(f"cannot read: {error.strerror or error}", source=name)


def _part(path: str, name: str) -> Part:
    try:
        head, key, size = head_and_key(path, SNIFF_SIZE, name)
    except OSError as error:
        raise _unreadable(error, name) from None
    codec = _codec(head, path, name)
    if size:
        require_library(codec, name)
    return Part(path=path, name=name, codec=codec, size=size, key=key)


def _codec(head: bytes, path: str, name: str) -> str:
    codec = detect_codec(head, path)
    if codec is None:
        shown = " ".join(f"{byte:02x}" for byte in head[:8])
        raise InspectError(f"not an event log: neither JSON lines nor a stream Spark compresses "
                           f"({', '.join(CODECS[1:])}); it starts with the bytes {shown}",
                           source=name)
    return codec


def _single(path: str) -> EventLog:
    log = _one_file(_part(path, path))
    codec, key = log.parts[0].codec, log.parts[0].key
    if codec != "plain":
        _compressed_events(lambda size: _opened_head(path, size, expected=key), codec, path)
    return log


def _loose(path: str, listed: Key) -> Union[EventLog, str]:
    """A file in a folder of applications (whose identity was `listed` when its folder was
    listed): its log, or why it is none (a key of `_PASSED`); an InspectError when it may be a
    log that cannot be read."""
    try:
        with open_file(path, expected=listed) as handle:
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(SNIFF_SIZE)
    except OSError as error:
        raise _unreadable(error, path) from None
    if not head:
        return "empty"
    codec, text = _sniffed(path, head, listed)
    if text and _EVENT.match(text) is None:  # no text: a compressed log cut in its first block
        return "not-events"
    return EventLog(name=path, layout="file", parts=(Part(path, path, codec, size, key=listed),))


def _one_file(part: Part) -> EventLog:
    if part.size == 0:
        raise InspectError("the file is empty: no events to read", source=part.name)
    return EventLog(name=part.name, layout="file", parts=(part,))


def log_from_bytes(name: str, layout: str, parts: Sequence[Tuple[str, bytes]]) -> EventLog:
    """One application's log whose files' bytes are at hand (read by someone else, e.g. Spark's
    binaryFile source), given as (name, bytes) in reading order (`folder_parts`): the same
    EventLog, and the same errors, as `find_event_logs` gives for the files themselves."""
    made = tuple(Part(path=part_name, name=part_name, size=len(data),
                      codec=_codec(bytes(data[:SNIFF_SIZE]), part_name, part_name),
                      stream=io.BytesIO(data)) for part_name, data in parts)
    for part in made:
        if part.size:
            require_library(part.codec, part.name)
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


def _entries(path: str) -> List[str]:
    """Every name in a folder, hidden ones too, in order."""
    try:
        return sorted(list_folder(path))
    except OSError as error:
        raise InspectError(f"cannot read the directory: {error.strerror or error}",
                           source=path) from None


def _listing(path: str) -> List[str]:
    return [name for name in _entries(path) if not is_hidden(name)]


def _is_checksum(name: str, names: Collection[str]) -> bool:
    """Whether `name` is Hadoop's checksum `.NAME.crc` of a file NAME beside it."""
    return name.startswith(".") and name.endswith(".crc") and name[1:-4] in names


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
        # A compacted part after the plain one of its number (Spark's order), and none of
        # the parts before the last compacted one: it holds what Spark kept of them.
        ordered = sorted((int(match["index"]), is_compacted(name), name) for name in names
                         for match in [_ROLLING_PART.fullmatch(name)] if match)
        if not ordered:
            raise InspectError("a rolling event log directory without events_<N>_* files",
                               source=path)
        chosen = [name for _, _, name in ordered]  # appstatus_* and other files are not the log
        last = max((at for at, (_, compacted, _) in enumerate(ordered) if compacted), default=0)
        chosen = chosen[last:]
    elif layout == "databricks":
        rolled = sorted((match["when"], name) for name in names
                        for match in [_DATABRICKS_ROLLED.fullmatch(name)] if match)
        chosen = [name for _, name in rolled]
        if _DATABRICKS_CURRENT in names:
            chosen.append(_DATABRICKS_CURRENT)
    else:
        return None
    return layout, chosen


#: What Spark's event log compaction adds to the name of the part it writes
#: (`events_5_<app id>.zstd.compact`): it holds the events of the parts up to it that it
#: keeps, not those of the executions that had ended by then.
COMPACTED = ".compact"


def is_compacted(name: str) -> bool:
    """Whether a rolling log's part is one Spark's compaction wrote."""
    return name.endswith(COMPACTED)


def rolling_missing(folder: str, names: Sequence[str]) -> Tuple[str, ...]:
    """What a rolling log `folder` whose parts are `names` (in reading order) lacks of its
    application's events, each said naming the log and the parts: numbers missing from the
    parts' numbering (a part deleted, not yet copied, or the first parts gone), and a
    compacted part (it keeps only the executions that had not ended when it was written).
    Spark itself refuses to replay a rolling log with a gap."""
    found = [(int(match["index"]), name) for name in names
             for match in [_ROLLING_PART.fullmatch(name)] if match]
    if not found:
        return ()
    said: List[str] = []
    first, first_name = found[0]
    if first > 1 and not is_compacted(first_name):
        missing = "events_1" if first == 2 else f"events_1 to events_{first - 1}"
        said.append(f"{folder}: this rolling event log has no part {missing} (its first part "
                    f"is {first_name}): the executions logged there could not be read")
    for (before, before_name), (after, after_name) in zip(found, found[1:]):
        if after > before + 1:
            missing = f"events_{before + 1}" if after == before + 2 else \
                f"events_{before + 1} to events_{after - 1}"
            said.append(f"{folder}: this rolling event log has no part {missing} "
                        f"({before_name} is followed by {after_name}): the executions logged "
                        "there could not be read")
    for _, name in found:
        if is_compacted(name):
            said.append(f"{folder}: its part {name} is compacted (Spark's event log compaction "
                        "drops the events of the executions that had ended before it): those "
                        "executions could not be read")
    return tuple(said)


def _folder_log(path: str, names: List[str], passed: List[Tuple[str, str]]
                ) -> Optional[EventLog]:
    """The log of a rolling or Databricks folder holding `names` (hidden ones too), or None
    when it is laid out as neither; what in it is not the log goes to `passed`."""
    visible = [name for name in names if not is_hidden(name)]
    found = folder_parts(path, visible)
    if found is None:
        return None
    layout, chosen = found
    parts = tuple(_part(os.path.join(path, name), os.path.join(path, name)) for name in chosen
                  if os.path.isfile(os.path.join(path, name)))
    if not parts:
        raise InspectError(f"a {layout} event log directory without readable files",
                           source=path)
    read = {os.path.basename(part.path) for part in parts}
    present = set(names)
    compacted = [name for name in chosen if is_compacted(name)]
    held = _ROLLING_PART.fullmatch(compacted[0]) if layout == "rolling" and compacted else None
    for name in names:
        child = os.path.join(path, name)
        if is_hidden(name):
            if not _is_checksum(name, present):
                passed.append(("hidden", child))
        elif name not in read and not is_marker(name):
            part = _ROLLING_PART.fullmatch(name) if held is not None else None
            passed.append(("compacted" if part is not None and
                           int(part["index"]) <= int(held["index"]) else "not-part", child))
    return EventLog(name=path, layout=layout, parts=parts)


def _search(root: str, names: List[str]) -> Found:
    """The logs in a folder of many applications, depth first in name order (a walk with a
    stack of the folders being listed), with what cannot be read and what was passed over.

    Each folder and file is read once, told by its identity (device, inode): a link to a log
    or a folder already found (`latest -> app-1`, a rolling log linked as `current`, a loop
    `loop -> .`) is passed over with a note. Links are followed after the walk of what is
    there without them, so that a log is named by its own path rather than by a link's. Two
    logs of one application (a leftover `.inprogress` copy beside the finished log) are read
    once too (`_one_per_application`)."""
    logs: List[Tuple[EventLog, bool]] = []  # each with whether a link led to it
    failed: List[InspectError] = []
    passed: List[Tuple[str, str]] = []
    duplicates: List[Tuple[str, str, str]] = []
    seen: Dict[Key, str] = {}  # the folders searched and the files read, by identity
    try:
        seen[key_of(os.stat(root))] = root
    except OSError:
        pass
    links: List[Tuple[str, str, int]] = []  # (link, its name, its folder's depth), for later
    stack = [(root, set(names), iter(names), 1, False)]
    while stack or links:
        if stack:
            folder, present, pending, depth, linked = stack[-1]
            name = next(pending, None)
            if name is None:
                stack.pop()
                continue
            child = os.path.join(folder, name)
            if is_hidden(name):
                if not _is_checksum(name, present):
                    passed.append(("hidden", child))
                continue
            if os.path.islink(child):
                links.append((child, name, depth))
                continue
        else:
            child, name, depth = links.pop(0)
            linked = True
        try:
            info = os.stat(child)
        except FileNotFoundError:
            if os.path.islink(child):  # a broken link; else gone since it was listed
                passed.append(("special", child))
            continue
        except OSError as error:
            failed.append(_unreadable(error, child))
            continue
        mode = info.st_mode
        key = key_of(info)
        if (stat.S_ISDIR(mode) or stat.S_ISREG(mode)) and key in seen:
            duplicates.append((child, seen[key], "folder" if stat.S_ISDIR(mode) else "file"))
            continue
        try:
            if stat.S_ISDIR(mode):
                seen[key] = child
                children = _entries(child)
                log = _folder_log(child, children, passed)
                if log is not None:
                    logs.append((log, linked))
                    _seen_parts(log, seen)
                elif depth < MAX_DEPTH:
                    stack.append((child, set(children), iter(children), depth + 1, linked))
                else:
                    passed.append(("deep", child))
            elif not stat.S_ISREG(mode):
                passed.append(("special", child))  # never opened: a pipe would wait for ever
            elif is_marker(name):
                passed.append(("marker", child))
            else:
                seen[key] = child
                found = _loose(child, key)
                if isinstance(found, str):
                    passed.append((found, child))
                else:
                    logs.append((found, linked))
        except Swapped:
            raise  # not the file listed: the run stops, never a note
        except InspectError as error:
            failed.append(error)
        except OSError as error:
            failed.append(_unreadable(error, child))
    logs.sort(key=lambda each: _path_order(root, each[0].name))
    kept = _one_per_application(logs, duplicates)
    return Found(root, tuple(kept), tuple(failed), tuple(passed), tuple(duplicates))


def _seen_parts(log: EventLog, seen: Dict[Key, str]) -> None:
    """The parts of a folder's log, as read: a link to one of them is no log of its own."""
    for part in log.parts:
        if part.key is not None:
            seen.setdefault(part.key, part.path)


def _path_order(root: str, path: str) -> Tuple[str, ...]:
    """A found log's place in the order of paths (a depth-first walk in name order)."""
    return tuple(os.path.relpath(path, root).split(os.sep))


#: How much of a log's (decompressed) start is read to find its application's id.
APP_SNIFF = 16 << 20
_APP_START = re.compile(rb'"Event"\s*:\s*"SparkListenerApplicationStart"')
#: Events that come after the application's start: no need to read further for it.
_AFTER_START = re.compile(rb'"Event"\s*:\s*"(?:SparkListenerJobStart|'
                          rb'org\.apache\.spark\.sql\.execution\.ui\.'
                          rb'SparkListenerSQLExecutionStart)"')
#: The chunks it is decoded in (the start event is most often within the first 100 KB).
_APP_CHUNK = 64 << 10


def _one_per_application(logs: List[Tuple[EventLog, bool]],
                         duplicates: List[Tuple[str, str, str]]) -> List[EventLog]:
    """`logs` (in order, each with whether a link led to it) with one log per application:
    of two logs of one application (its id and attempt, from its start event, or a rolling
    log's name), the finished one is read, else the one reached without a link, else the
    first; each other goes to `duplicates` (its path, the path read, why)."""
    if len(logs) < 2:
        return [log for log, _ in logs]
    by_app: Dict[str, List[int]] = {}
    apps: List[Optional[str]] = []
    for at, (log, _) in enumerate(logs):
        app = _application_of(log)
        apps.append(app)
        if app is not None:
            by_app.setdefault(app, []).append(at)
    dropped = set()
    for app, ats in by_app.items():
        if len(ats) < 2:
            continue
        running = {at: _in_progress(logs[at][0]) for at in ats}
        chosen = min(ats, key=lambda at: (running[at], logs[at][1], at))
        for at in ats:
            if at != chosen:
                dropped.add(at)
                state = "an unfinished copy" if running[at] else "a copy"
                duplicates.append((logs[at][0].name, logs[chosen][0].name,
                                   f"application {app}, {state}"))
    return [log for at, (log, _) in enumerate(logs) if at not in dropped]


def _in_progress(log: EventLog) -> bool:
    """Whether `log` is named as still being written: `.inprogress` on its file or a part,
    or a rolling log's `appstatus_*.inprogress` marker."""
    if any(part.path.endswith(".inprogress") for part in log.parts):
        return True
    if log.layout == "file":
        return False
    try:
        return any(is_marker(name) and name.endswith(".inprogress")
                   for name in list_folder(log.name))
    except (OSError, InspectError):
        return False


def _application_of(log: EventLog) -> Optional[str]:
    """The application (`App ID`, and `_` and its attempt when it has one, as Spark names its
    log files) whose log `log` is, from the start event near its first part's start; a
    rolling log's name when that is not found; None when neither says."""
    found = None
    part = log.parts[0]
    try:
        found = _started_app(part)
    except (OSError, InspectError, ValueError):
        found = None
    if found is None and log.layout == "rolling":
        match = _ROLLING_DIR.fullmatch(os.path.basename(os.path.normpath(log.name)))
        if match is None:
            match = _ROLLING_PART.fullmatch(os.path.basename(part.path))
        found = match["app"] if match else None
    return _sanitized(found) if found else None


def _started_app(part: Part) -> Optional[str]:
    """The application named by the start event among the first APP_SNIFF bytes of `part`."""
    import json

    read = 0
    tail = b""
    with open_file(part.path, part.name, expected=part.key) as handle:
        for chunk in decode(handle, part.codec, part.name, [], _APP_CHUNK, APP_SNIFF):
            read += len(chunk)
            text = tail + chunk
            start = _APP_START.search(text)
            if start is not None:
                begin = text.rfind(b"\n", 0, start.start()) + 1
                end = text.find(b"\n", start.end())
                if end >= 0 or read >= APP_SNIFF:
                    event = json.loads(text[begin:end if end >= 0 else len(text)])
                    app = event.get("App ID")
                    if not isinstance(app, str) or not app:
                        return None
                    attempt = event.get("App Attempt ID")
                    return f"{app}_{attempt}" if isinstance(attempt, str) and attempt else app
            elif _AFTER_START.search(text) is not None:
                return None
            if read >= APP_SNIFF:
                return None
            tail = text[text.rfind(b"\n") + 1:]
    return None


def _sanitized(app: str) -> str:
    """An application's id as Spark writes it in its log's name (`nameForAppAndAttempt`)."""
    return re.sub(r"[.${}'\"]", "_", re.sub(r"[ :/]", "-", app)).lower()


# ---- a log's parts -> their decompressed bytes ----------------------------------------------

def read_chunks(log: EventLog, notes: List[str], chunk_size: int = DEFAULT_CHUNK_SIZE, *,
                background: bool = False, max_size: int = DEFAULT_MAX_SIZE,
                identities: Optional[Dict[str, Identity]] = None
                ) -> Iterator[Tuple[Part, bytes]]:
    """The decompressed bytes of each part of `log`, in order, in chunks of about `chunk_size`
    bytes. Chunks are not aligned to lines; a part ends at its own line end in a whole log.
    Notes about cut or odd parts are appended to `notes`; anything that stops the reading is an
    InspectError naming the file: a file cut shorter than what was read of it (a log
    truncated in place, as logrotate's copytruncate does), or whose name now holds another file
    (replaced), changed while it was read, and what was read of it cannot be trusted.
    `identities`, when given, gets each file's `identity` as it was opened, by its path.

    With `background`, a thread decodes ahead (two chunks at most) while the caller works on
    the current one: the codec libraries release the GIL, so decoding takes the second core."""
    chunks = _read_chunks(log, notes, chunk_size, max_size, identities)
    return _ahead(chunks) if background else chunks


def _read_chunks(log: EventLog, notes: List[str], chunk_size: int, max_size: int,
                 identities: Optional[Dict[str, Identity]] = None
                 ) -> Iterator[Tuple[Part, bytes]]:
    for part in log.parts:
        hinted = suffix_codec(part.path)
        if hinted and hinted != part.codec and part.codec != "plain":
            notes.append(f"{part.name}: named like a {hinted} file but holds {part.codec} data; "
                         f"read as {part.codec}")
        try:
            handle = part.stream if part.stream is not None else \
                open_file(part.path, part.name, expected=part.key)
        except FileNotFoundError:
            raise InspectError("no such file (it went away while the log was read)",
                               source=part.name) from None
        except OSError as error:
            raise InspectError(f"cannot read: {error.strerror or error}",
                               source=part.name) from None
        with handle:
            try:
                opened = identity(handle) if part.stream is None else None
                if opened is not None and identities is not None:
                    identities[part.path] = opened
                for chunk in decode(handle, part.codec, part.name, notes, chunk_size,
                                    max_size):
                    yield part, chunk
                if opened is not None:
                    _still_whole(handle, part, opened)
            except OSError as error:
                raise InspectError(f"cannot read: {error.strerror or error}",
                                   source=part.name) from None


#: What tells one file from another, and a file from itself changed: its device, inode, size
#: and modification time (ns), as `os.stat` gives them.
Identity = Tuple[int, int, int, int]


def identity(handle: BinaryIO) -> Identity:
    """The identity of an open file."""
    info = os.fstat(handle.fileno())
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def changed(name: str, why: str) -> InspectError:
    """The error of a file that changed under the reader: what was read of it is not mixed
    with what it holds now."""
    return InspectError(f"changed while it was read ({why}); nothing read from it is "
                        "reported: read it again once it is still", source=name)


def _still_whole(handle: BinaryIO, part: Part, opened: Identity) -> None:
    """An InspectError when the file read through `handle` (opened as `opened`) is now
    shorter than what was read of it, or its path names another file: it changed while it
    was read. One grown since (a running application's log) is read as far as it was."""
    read = handle.tell()
    now = identity(handle)
    if now[2] < read or now[2] < opened[2]:
        raise changed(part.name, f"cut from {max(read, opened[2]):,} to {now[2]:,} bytes, "
                                 "as a log truncated in place is")
    try:
        there = os.stat(part.path)
    except OSError:  # renamed (an .inprogress log at its end) or deleted: what was read holds
        return
    if (there.st_dev, there.st_ino) != opened[:2]:
        raise changed(part.name, "its path now names another file: it was replaced")


_DONE = object()


def _ahead(items: Iterator, depth: int = 2) -> Iterator:
    """`items`, produced by a thread up to `depth` ahead of the consumer; its exceptions are
    raised here, and the thread stops when the consumer does."""
    import contextvars
    import queue
    import threading

    handoff: "queue.Queue" = queue.Queue(depth)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
            put((_DONE, None))
        except BaseException as error:  # handed to the consumer, raised there
            put((_DONE, error))
        finally:
            if stop.is_set():
                items.close()

    # In the caller's context: its reading confined as the caller's is (`opening.confined`).
    worker = threading.Thread(target=contextvars.copy_context().run, args=(produce,),
                              name="aqe-inspect-decode", daemon=True)
    worker.start()
    try:
        while True:
            item, error = handoff.get()
            if error is not None:
                raise error
            if item is _DONE:
                return
            yield item
    finally:
        stop.set()
        worker.join()
