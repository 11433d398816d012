"""Which queries a user means: `--query 3`, `--query 'daily.*join'`, an expectation's `match`.

One rule everywhere: a number is an SQL execution's id (for a plan text, which has no
executions, the query's number in the text); anything else is a regular expression searched in
the execution's description (which holds the SQL text when the query came from SQL, the call
site or `setJobDescription` text otherwise) or, for a plan text, in the query's label.

The expression is Python's syntax and meaning, run in linear time (userpattern.py): no
pattern, however written, makes the search backtrack exponentially.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from ..errors import InspectError
from ..plan.model import Query, number_of, plural

if TYPE_CHECKING:
    from .userpattern import UserPattern


@dataclass(frozen=True)
class Selector:
    """A query selector as written, with what it means."""

    text: str
    number: Optional[int] = None
    pattern: Optional["UserPattern"] = None

    @classmethod
    def parse(cls, text: str, option: str = "--query") -> "Selector":
        """`3` (an execution id) or a regular expression; a bad one is an InspectError."""
        if text.strip().isdigit():
            return cls(text, number=int(text))
        return cls(text, pattern=compile_pattern(text, option))

    @classmethod
    def of_number(cls, number: int) -> "Selector":
        return cls(str(number), number=number)

    def selects(self, index: int, query: Query) -> bool:
        """Whether the query, the `index`-th of its input (from 1), is one this names."""
        if self.number is not None:
            return number_of(query, index) == self.number
        execution = query.execution
        assert self.pattern is not None
        text = execution.description if execution is not None else query.label
        return self.pattern.search(text or "") is not None

    def __str__(self) -> str:
        return self.words()

    def words(self, unit: str = "query") -> str:
        """`query 3`, `execution 3`, `executions matching /daily/`: what this names, in the
        input's unit (`Query.unit`)."""
        if self.number is not None:
            return f"{unit} {self.number}"
        return f"{plural(unit)} matching /{self.text}/"


def compile_pattern(text: str, option: str) -> "UserPattern":
    """A user's regular expression; an InspectError naming `option` when Python's `re` refuses
    it, or when it needs what a linear-time engine cannot do (a backreference, a
    look-around)."""
    import re

    from .userpattern import Unsupported, compile_user_pattern

    shown = repr(text) if len(text) <= 80 else f"{text[:60]!r}... ({len(text):,} characters)"
    try:
        return compile_user_pattern(text)
    except re.error as error:
        raise InspectError(f"{option}: {shown} is neither an execution id nor a regular "
                           f"expression ({error})") from None
    except Unsupported as error:
        raise InspectError(f"{option}: {shown}: {error} (regular expressions here run in "
                           "linear time, without backtracking)") from None
