"""The errors aqe-inspect reports to a user: one line, with where in which file."""

from __future__ import annotations

import errno
import re
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

    def __init__(self, error: OSError, exit_code: int = 0):
        super().__init__(error.strerror or str(error))
        self.error = error
        #: The exit code the run had earned when its output failed: 1 for a check or a
        #: comparison whose verdict failed (FAIL, UNFINISHED), which a reader that left early
        #: (`check ... | head -1`) takes nothing from; 0 otherwise.
        self.exit_code = exit_code

    @property
    def reader_left(self) -> bool:
        """`aqe-inspect ... | head`: the reader had what it wanted; that is not an error (the
        run's exit code is its verdict's, `exit_code`)."""
        return isinstance(self.error, BrokenPipeError) or self.error.errno == errno.EPIPE


#: What no output may hold raw when it came from an input, and how it is written instead (as
#: Python writes it in a string literal): the C0 controls (ESC starts a terminal's escape
#: sequences: a screen clear, a window title, a hyperlink, a cursor move; CR and LF forge
#: lines), DEL, the C1 controls (U+0085 is a newline to some readers; U+009B an ESC [), the
#: line and paragraph separators, and the bidirectional controls (embeddings and overrides
#: U+202A-U+202E, isolates U+2066-U+2069, the marks U+200E, U+200F and U+061C), which reorder
#: what a terminal or an editor shows (`evil\u202etxt.exe`).
_ESCAPES = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
_ESCAPES.update({0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"})
_ESCAPES.update({code: f"\\u{code:04x}" for code in (
    0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))})
_ESCAPES_KEEPING_NEWLINES = {code: text for code, text in _ESCAPES.items() if code != 0x0A}


def _character_class(codes) -> str:
    """A regular expression's character class of `codes`, runs of consecutive codes as ranges
    (`[\\x00-\\x1f...]`): the same set as one escape per character, compiled in half the time."""
    runs = []
    for code in sorted(codes):
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return "[%s]" % "".join(re.escape(chr(first)) if first == last else
                            f"{re.escape(chr(first))}-{re.escape(chr(last))}"
                            for first, last in runs)


_UNSAFE = re.compile(_character_class(_ESCAPES))


def printable(text: str, *, newlines: bool = False) -> str:
    """`text` with control and bidirectional characters escaped (`\\x1b`, `\\u202e`), so
    that printing it cannot restyle, rewrite or reorder a terminal, nor forge a line: one line
    (a newline written `\\n`), or, when `newlines`, its newlines kept. Every writer of text
    for people passes what came from an input through here. Text holding none of those
    characters comes back as it is (the same object); the escaped text holds none of them, so
    escaping twice changes nothing."""
    if _UNSAFE.search(text) is None:
        return text
    return text.translate(_ESCAPES_KEEPING_NEWLINES if newlines else _ESCAPES)
