"""The errors aqe-inspect reports to a user: one line, with where in which file."""

from __future__ import annotations

import errno
from typing import Optional


class InspectError(Exception):
    """Anything wrong with what the user gave us; the CLI prints it and exits 2."""

    def __init__(self, message: str, *, source: str = "", line: Optional[int] = None,
                 column: Optional[int] = None):
        super().__init__(message)
        self.message = message
        self.source = source
        self.line = line
        self.column = column

    def located(self, source: str) -> "InspectError":
        """The same error, naming `source` when it did not name a file yet."""
        if not self.source:
            self.source = source
        return self

    def __str__(self) -> str:
        if not self.source and self.line is None:  # about the command line, not an input
            return self.message
        where = [self.source or "<input>"]
        if self.line is not None:
            where.append(str(self.line))
            if self.column is not None:
                where.append(str(self.column))
        return f"{':'.join(where)}: {self.message}"


class PlanSyntaxError(InspectError):
    """The text is not a plan Spark prints, or is cut short."""


class OutputError(Exception):
    """Standard output does not take what we write: its reader left, or its disk is full."""

    def __init__(self, error: OSError):
        super().__init__(error.strerror or str(error))
        self.error = error

    @property
    def reader_left(self) -> bool:
        """`aqe-inspect ... | head`: the reader had what it wanted; that is not an error."""
        return isinstance(self.error, BrokenPipeError) or self.error.errno == errno.EPIPE


#: Control characters as Python writes them in a string literal: what prints them safely.
_ESCAPES = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
_ESCAPES.update({0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r", 0x2028: "\\u2028", 0x2029: "\\u2029"})
_ESCAPES_KEEPING_NEWLINES = {code: text for code, text in _ESCAPES.items() if code != 0x0A}


def printable(text: str, *, newlines: bool = False) -> str:
    """`text` with control characters escaped (`\\x1b`), so that printing it cannot restyle or
    rewrite a terminal; newlines kept when `newlines`, else escaped too (one line)."""
    return text.translate(_ESCAPES_KEEPING_NEWLINES if newlines else _ESCAPES)
