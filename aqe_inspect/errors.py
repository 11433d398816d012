"""The errors aqe-inspect reports to a user: one line, with where in which file."""

from __future__ import annotations

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
        where = [self.source or "<input>"]
        if self.line is not None:
            where.append(str(self.line))
            if self.column is not None:
                where.append(str(self.column))
        return f"{':'.join(where)}: {self.message}"


class PlanSyntaxError(InspectError):
    """The text is not a plan Spark prints, or is cut short."""
