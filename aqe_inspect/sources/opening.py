"""Files opened as they were checked: what is read is the file that was listed, and, for the
MCP server, a file inside the folders open to it, whatever was swapped in since.

A folder is listed (and, by the MCP server, checked) once, then its files are opened one by
one, later: a file replaced in between by a link (or by another file) would be read in its
place. So every file of an input is opened here (`open_file`), and what was opened is then
checked on the open descriptor, which no later swap changes:

- `expected`: the identity (device, inode) the file had when its folder was listed; another
  one is an InspectError naming the file (it was replaced, or a link swapped in). A link
  that was there when the folder was listed is followed, as the listing followed it.
- `confined(folders)` (the MCP server, around a tool's reading): the file's real path, asked
  of the open descriptor (Linux's /proc/self/fd, macOS's F_GETPATH; elsewhere the path
  resolved and its identity held to the descriptor's), must lie inside one of `folders`, and
  it must be a regular file; a folder listed (`list_folder`) too. A FIFO swapped in is
  opened without waiting for a writer (O_NONBLOCK) and refused.

The confinement is a context variable: it holds in the thread that set it and in the threads
started with its context (`files._ahead` copies it); a log read by the process pool is read
back only through `events._reopened`, which holds each file to the identity it was read with.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import stat
import sys
from typing import BinaryIO, Iterator, List, Optional, Sequence, Tuple

from ..errors import InspectError

#: A file's identity as a folder's listing saw it: (st_dev, st_ino).
Key = Tuple[int, int]

_CONFINED: "contextvars.ContextVar[Optional[Tuple[str, ...]]]" = contextvars.ContextVar(
    "aqe_inspect_confined", default=None)
_PROC_FD = "/proc/self/fd"


@contextlib.contextmanager
def confined(folders: Sequence[str]) -> Iterator[None]:
    """Within it, every file and folder opened here must lie inside `folders` (real paths)."""
    token = _CONFINED.set(tuple(os.path.realpath(folder) for folder in folders))
    try:
        yield
    finally:
        _CONFINED.reset(token)


def confinement() -> Optional[Tuple[str, ...]]:
    """The folders reading is confined to here, or None (the command line: no bound)."""
    return _CONFINED.get()


class Swapped(InspectError):
    """A file that is not the one listed and checked: never read, and never passed over as a
    log that cannot be read is (a note, the others read): the run stops on it."""


def key_of(info: os.stat_result) -> Key:
    return info.st_dev, info.st_ino


def replaced(name: str) -> InspectError:
    """The error of a file whose name holds another file than when its folder was listed."""
    return Swapped("replaced since its folder was listed (its name now leads to another "
                        "file: replaced, or a link swapped in); it was not read: read the "
                        "folder again once it is still", source=name)


def open_file(path: str, name: Optional[str] = None, *, expected: Optional[Key] = None,
              buffering: int = -1) -> BinaryIO:
    """`path` opened for reading (binary), checked on its descriptor: the identity `expected`
    when given, and inside the folders of `confined` when reading is confined. OSError from
    the opening is the caller's to word; a check that fails is an InspectError naming
    `name` (default `path`)."""
    name = path if name is None else name
    folders = confinement()
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0) | \
        getattr(os, "O_BINARY", 0)
    if folders is not None:
        flags |= getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if folders is not None:
            if not stat.S_ISREG(info.st_mode):
                raise InspectError("not a regular file (a device, pipe or socket is never "
                                   "read)", source=name)
            _hold_inside(fd, path, info, folders, name)
            _blocking(fd)
        if expected is not None and key_of(info) != expected:
            raise replaced(name)
        return os.fdopen(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


def file_head(path: str, size: int, name: Optional[str] = None,
              expected: Optional[Key] = None) -> bytes:
    """The first `size` bytes of the file at `path` (all of a shorter one), opened by
    `open_file`."""
    with open_file(path, name, expected=expected) as handle:
        return handle.read(size)


def head_and_key(path: str, size: int, name: Optional[str] = None) -> Tuple[bytes, Key, int]:
    """The first `size` bytes of the file at `path`, its identity and its size, all of the one
    file opened (what a folder's listing records of each file)."""
    with open_file(path, name) as handle:
        info = os.fstat(handle.fileno())
        return handle.read(size), key_of(info), info.st_size


def list_folder(path: str) -> List[str]:
    """The names in the folder at `path`; when reading is confined, the folder opened is held
    inside the open folders first (a folder swapped for a link out is not listed). OSError
    is the caller's to word; a folder outside is an InspectError naming it."""
    folders = confinement()
    if folders is None or os.listdir not in os.supports_fd:
        if folders is not None:
            _hold_real_inside(path, os.stat(path), folders, path)
        return os.listdir(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) |
                 getattr(os, "O_CLOEXEC", 0))
    try:
        _hold_inside(fd, path, os.fstat(fd), folders, path)
        return os.listdir(fd)
    finally:
        os.close(fd)


def _blocking(fd: int) -> None:
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)


def _hold_inside(fd: int, path: str, info: os.stat_result, folders: Sequence[str],
                 name: str) -> None:
    """An InspectError unless the file open as `fd` lies inside `folders`."""
    real = _descriptor_path(fd)
    if real is None:
        _hold_real_inside(path, info, folders, name)
    elif not _inside_any(real, folders):
        raise _outside(name)


def _hold_real_inside(path: str, info: os.stat_result, folders: Sequence[str],
                      name: str) -> None:
    """Where the descriptor cannot say its path: `path` resolved must lie inside `folders`
    and name the very file opened (`info`)."""
    real = os.path.realpath(path)
    try:
        there = os.stat(real)
    except OSError:
        raise _outside(name) from None
    if key_of(there) != key_of(info) or not _inside_any(real, folders):
        raise _outside(name)


def _descriptor_path(fd: int) -> Optional[str]:
    """The path the system holds for the open file `fd`, or None where it cannot say."""
    if os.path.isdir(_PROC_FD):
        try:
            target = os.readlink(f"{_PROC_FD}/{fd}")
        except OSError:
            target = ""
        if target.startswith("/"):
            return target[:-len(" (deleted)")] if target.endswith(" (deleted)") else target
    if sys.platform == "darwin":  # pragma: no cover - macOS
        import fcntl

        getpath = getattr(fcntl, "F_GETPATH", None)
        if getpath is not None:
            try:
                found = fcntl.fcntl(fd, getpath, bytes(1024))
            except OSError:
                return None
            return os.fsdecode(found.split(b"\0", 1)[0]) or None
    return None


def _inside_any(path: str, folders: Sequence[str]) -> bool:
    for folder in folders:
        try:
            if os.path.commonpath([path, folder]) == folder:
                return True
        except ValueError:  # another drive (Windows)
            continue
    return False


def _outside(name: str) -> InspectError:
    return Swapped("outside the folders open to this server (its name leads out of them: "
                        "a link, or one swapped in after it was checked); it was not read",
                        source=name)
