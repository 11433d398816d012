"""Where the commands write: standard output, or a file written whole or not at all.

Both escape what their encoding cannot hold (a plan or a file name may hold anything: lone
surrogates from undecodable bytes, characters a terminal's encoding lacks), and turn a failed
write into an OutputError (standard output) or an InspectError naming the file.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import re
import stat
import sys
from typing import Iterable, List, Optional

from ..errors import InspectError, OutputError, printable


def _json_escape(error: UnicodeError):
    """An encoding error handler for JSON: what the stream's encoding cannot hold is written
    as a `\\uXXXX` escape, which means the same character to any JSON reader."""
    escaped = []
    for char in error.object[error.start:error.end]:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            escaped.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            escaped.append(f"\\u{code:04x}")
    return "".join(escaped), error.end


JSON_ESCAPE = "aqe-inspect-json-escape"
codecs.register_error(JSON_ESCAPE, _json_escape)


class Output:
    """Standard output as the commands write to it: what its encoding cannot hold is escaped
    (a plan or a file name may hold anything), and a failure to write is an OutputError."""

    def __init__(self, stream, json: bool):
        self.stream = stream
        self.encoding = getattr(stream, "encoding", None)
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=JSON_ESCAPE if json else "backslashreplace")

    def write(self, text: str) -> None:
        try:
            self.stream.write(text)
        except OSError as error:
            raise OutputError(error) from None

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()



class AtomicFile:
    """`--output FILE`: the report written whole, or not at all, and nothing else touched.

    - A regular file (or a new one) is replaced atomically: the report goes to a temporary file
      beside it, renamed over it when complete, with the old file's mode (and owner, where the
      user may give it) kept; a new file gets the umask's mode. A symbolic link is followed:
      its target is replaced and the link stays a link.
    - Anything else (a named pipe, a device such as /dev/null, /dev/stdout) is written into,
      never replaced: the report is held in an anonymous temporary file and copied there only
      when complete.

    A failure at any point (bad input met mid-stream, a full disk, Ctrl-C) removes the temporary
    file and leaves FILE as it was. Whether FILE is one of the command's inputs is checked
    before any reading, by `refuse_inputs`.
    """

    def __init__(self, path: str, json: bool = False):
        self.path = path
        self.errors = JSON_ESCAPE if json else "backslashreplace"
        self._handle = None
        self._temporary = ""  # the named temporary file of an atomic replacement
        self._buffer = None  # the anonymous temporary file of a write into a pipe or device
        self._target = ""  # the file renamed over (a symbolic link's target)
        self._kept = None  # the replaced file's os.stat: its mode and owner are kept

    def __enter__(self) -> "AtomicFile":
        try:
            self._open()
        except BaseException:  # Ctrl-C included: nothing left behind
            self._discard()
            raise
        return self

    def _open(self) -> None:
        import tempfile

        try:
            found: Optional[os.stat_result] = os.stat(self.path)
        except FileNotFoundError:  # a new file (or a symbolic link to one)
            found = None
        except (OSError, ValueError) as error:  # a loop of links, a file for a folder, a NUL
            raise self._error(getattr(error, "strerror", None) or str(error)) from None
        if found is not None and stat.S_ISDIR(found.st_mode):
            raise self._error("is a directory")
        if found is not None and (not stat.S_ISREG(found.st_mode) or _through_fd_link(self.path)):
            # A pipe, a device, a socket, or a file a process holds open (/dev/stdout):
            # written into as the shell's `>` would, once the report is whole.
            try:
                raw = tempfile.TemporaryFile()
            except OSError as error:
                raise self._error(f"no temporary file: {error.strerror or error}") from None
            self._buffer = raw
            self._handle = io.TextIOWrapper(raw, encoding="utf-8", errors=self.errors,
                                            newline="")
            return
        self._target = os.path.realpath(self.path)  # through symbolic links, to the file
        if found is not None:
            if not os.access(self.path, os.W_OK):
                raise self._error(os.strerror(errno.EACCES))
            self._kept = found
        try:
            fd, self._temporary = tempfile.mkstemp(
                prefix=f".{os.path.basename(self._target)}.", suffix=".tmp",
                dir=os.path.dirname(self._target))
        except OSError as error:
            raise self._error(error.strerror or str(error)) from None
        self._handle = open(fd, "w", encoding="utf-8", errors=self.errors, newline="")

    def write(self, text: str) -> None:
        try:
            self._handle.write(text)
        except OSError as error:
            raise self._error(error.strerror or str(error)) from None

    def isatty(self) -> bool:
        return False

    def __exit__(self, kind, value, traceback) -> None:
        try:
            if kind is None:
                self._finish()
        except BrokenPipeError as error:  # a pipe's reader left: as on standard output
            self._discard()
            raise OutputError(error) from None
        except OSError as error:
            self._discard()
            raise self._error(error.strerror or str(error)) from None
        except BaseException:  # Ctrl-C while renaming or copying
            self._discard()
            raise
        self._discard()

    def _finish(self) -> None:
        handle, self._handle = self._handle, None
        if self._buffer is not None:
            handle.flush()
            self._buffer.seek(0)
            _copy_into(self._buffer, self.path)
            return
        handle.close()
        if self._kept is None:
            os.chmod(self._temporary, 0o666 & ~_umask())
        else:
            kept = self._kept
            if hasattr(os, "chown") and (kept.st_uid, kept.st_gid) != (os.geteuid(),
                                                                       os.getegid()):
                _give(self._temporary, kept.st_uid, kept.st_gid)
            # The permission bits (not set-user/group-ID: a report is no program).
            os.chmod(self._temporary, stat.S_IMODE(kept.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
        os.replace(self._temporary, self._target)
        self._temporary = ""

    def _discard(self) -> None:
        handle, self._handle = self._handle, None
        for closing in (handle, self._buffer):
            if closing is not None:
                try:
                    closing.close()
                except (OSError, ValueError):
                    pass
        self._buffer = None
        if self._temporary:
            _remove(self._temporary)
            self._temporary = ""

    def _error(self, reason: str) -> InspectError:
        return InspectError(f"cannot write the report: {reason}", source=self.path)


def refuse_inputs(output: Optional[str], inputs: Iterable[Optional[str]]) -> None:
    """`--output` must not be one of the command's inputs (the same file, by its device and
    inode: through symbolic and hard links alike), nor lie inside a folder given as one; `-`
    is standard input, when that is a file. Inputs that do not exist (URLs, globs) are
    passed over: the report cannot replace them."""
    if output is None:
        return
    target = _stat(output)
    folders = _folders_holding(output)
    for name in inputs:
        if name is None:
            continue
        found = _stdin_stat() if name == "-" else _stat(name)
        if found is None:
            continue
        shown = "standard input" if name == "-" else printable(name)
        if target is not None and _same(found, target):
            raise InspectError(f"--output is the input {shown}: the report would replace it; "
                               "write it to another file", source=output)
        if stat.S_ISDIR(found.st_mode) and any(_same(found, folder) for folder in folders):
            raise InspectError(f"--output is inside the input folder {shown}: write the report "
                               "outside it", source=output)


def _stat(path: str) -> Optional[os.stat_result]:
    """`os.stat` (through symbolic links); None when there is nothing there to stat."""
    try:
        return os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL in the name
        return None


def _stdin_stat() -> Optional[os.stat_result]:
    try:
        return os.fstat(sys.stdin.fileno())
    except (AttributeError, OSError, ValueError):  # closed, or not a file (tests)
        return None


def _same(one: os.stat_result, other: os.stat_result) -> bool:
    return (one.st_dev, one.st_ino) == (other.st_dev, other.st_ino)


def _folders_holding(path: str) -> List[os.stat_result]:
    """The folders `path` would be written into, from its own up to the root (symbolic links
    resolved, so a folder is found by whichever name it is reached)."""
    found = []
    folder = os.path.dirname(os.path.realpath(path))
    while True:
        held = _stat(folder)
        if held is not None:
            found.append(held)
        parent = os.path.dirname(folder)
        if parent == folder:
            return found
        folder = parent


_FD_LINK = re.compile(r"/proc/(self|thread-self|\d+)(?:/task/\d+)?/fd/(\d+)")


def _fd_link(path: str) -> Optional["re.Match[str]"]:
    """Where `path` reaches its file through a process's open file (`/dev/stdout`,
    `/dev/fd/3`, `/proc/self/fd/1`), that link (the process, the descriptor); else None.
    Such a file is written into where the process writes, as the shell's redirection left
    it, never replaced."""
    current = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on links followed
        folder = os.path.realpath(os.path.dirname(current))
        current = os.path.join(folder, os.path.basename(current))
        found = _FD_LINK.fullmatch(current)
        if found is not None:
            return found
        if not os.path.islink(current):
            return None
        try:
            current = os.path.normpath(os.path.join(folder, os.readlink(current)))
        except OSError:
            return None
    return None


def _through_fd_link(path: str) -> bool:
    return _fd_link(path) is not None


def _copy_into(source, path: str) -> None:
    """Write what `source` holds into the existing non-regular file `path` (or a file this
    process holds open): never created, never truncated (a device or pipe has nothing to
    truncate). Our own descriptor (`/dev/stdout`) is written through itself, at its offset,
    after what Python holds buffered for it; another process's open file is appended to."""
    import shutil

    link = _fd_link(path)
    if link is not None and link.group(1) in ("self", "thread-self", str(os.getpid())):
        number = int(link.group(2))
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None and stream.fileno() == number:
                    stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        fd = os.dup(number)
    else:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOCTTY", 0))
    with open(fd, "wb", buffering=0) as target:
        shutil.copyfileobj(source, target)


def _give(path: str, uid: int, gid: int) -> None:
    """The owner and group, where the user may give them (root may; anyone may give a group
    they are in), else the group alone, else neither."""
    for owner in (uid, -1):
        try:
            os.chown(path, owner, gid)
            return
        except OSError:
            pass


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
