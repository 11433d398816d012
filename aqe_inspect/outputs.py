"""Where the commands write: standard output, or a file written whole or not at all.

Both escape what their encoding cannot hold (a plan or a file name may hold anything: lone
surrogates from undecodable bytes, characters a terminal's encoding lacks), and turn a failed
write into an OutputError (standard output) or an InspectError naming the file.
"""

from __future__ import annotations

import codecs
import os

from .errors import InspectError, OutputError


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
    """`--output FILE`: the report goes to a temporary file beside FILE, renamed to FILE when
    complete. A failure at any point (bad input met mid-stream, a full disk, Ctrl-C) removes
    the temporary file and leaves FILE as it was: never a half-written report."""

    def __init__(self, path: str, json: bool = False):
        self.path = path
        self.errors = JSON_ESCAPE if json else "backslashreplace"
        self._handle = None
        self._temporary = ""

    def __enter__(self) -> "AtomicFile":
        import tempfile

        directory = os.path.dirname(os.path.abspath(self.path))
        if os.path.isdir(self.path):
            raise InspectError("cannot write the report: is a directory", source=self.path)
        try:
            fd, self._temporary = tempfile.mkstemp(
                prefix=f".{os.path.basename(self.path)}.", suffix=".tmp", dir=directory)
        except OSError as error:
            raise InspectError(f"cannot write the report: {error.strerror or error}",
                               source=self.path) from None
        self._handle = open(fd, "w", encoding="utf-8", errors=self.errors, newline="")
        return self

    def write(self, text: str) -> None:
        try:
            self._handle.write(text)
        except OSError as error:
            raise InspectError(f"cannot write the report: {error.strerror or error}",
                               source=self.path) from None

    def isatty(self) -> bool:
        return False

    def __exit__(self, kind, value, traceback) -> None:
        handle, self._handle = self._handle, None
        try:
            handle.close()
            if kind is None:
                mode = 0o666 & ~_umask()
                os.chmod(self._temporary, mode)
                os.replace(self._temporary, self.path)
                return
        except OSError as error:
            _remove(self._temporary)
            raise InspectError(f"cannot write the report: {error.strerror or error}",
                               source=self.path) from None
        _remove(self._temporary)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
