"""What every adviser sees and shares: the why-not candidate it advises on, with the operator
and the plan's context it came from; a setting's current value as a `Current`; the Spark lines
that have a key (from `whynot/defaults.py`, read from SQLConf of each line)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional, Union

from ..plan.model import Node
from ..whynot import defaults
from ..whynot.base import Context
from ..whynot.settings import Setting
from ..whynot.verdicts import Candidate
from .changes import Change, Current, Fixed

#: What an adviser yields: a change, a decision no setting changes, or (a str) what the input
#: lacks for the advice to be sure.
Advised = Union[Change, Fixed, str]


@dataclass(frozen=True)
class Seen:
    """One blocked decision as the why-not answer gave it, and where it is."""

    ctx: Context
    node: Node
    candidate: Candidate
    #: Whether the user asked for this kind by name (`--kind`): a rewrite Spark leaves off by
    #: default (a shuffled hash join) is advised only then, or where the job set its key.
    asked: bool = False

    @property
    def name(self) -> str:
        return self.candidate.node

    @property
    def line(self) -> int:
        return self.candidate.line


class Adviser:
    """Says, for a decision of `kind` the why-not answer found blocked, what to change."""

    kind: str = ""

    def advise(self, seen: Seen) -> Iterator[Advised]:  # pragma: no cover - overridden
        raise NotImplementedError


def current(setting: Setting) -> Current:
    return Current(setting.key, setting.value if setting.known else None,
                   setting.origin if setting.known else "", setting.default)


def lines_of(key: str) -> str:
    """The Spark lines whose SQLConf has `key`: `3.2+`, `3.0+`, `3.1-4.2` ("" when the table
    does not hold it)."""
    have = [line for line in defaults.LINES
            if (found := defaults.default(key, line)) is not None and found.exists]
    if not have:
        return ""
    first, last = have[0], have[-1]
    if last == defaults.LINES[-1]:
        return f"Spark {first}+"
    return f"Spark {first}-{last}"


def missing_on(key: str, ctx: Context) -> Optional[str]:
    """Why `key` cannot be set on the query's Spark line ("" / None when it can)."""
    if ctx.settings.exists(key) is False:
        return f"Spark {ctx.settings.line} has no {key} ({lines_of(key)})"
    return None


def change(seen: Seen, key: str, value: str, setting: Setting, **kwargs) -> Change:
    return Change(kind=seen.candidate.kind, node=seen.name, line=seen.line, key=key,
                  value=value, current=current(setting), lines=lines_of(key), **kwargs)


def fixed(seen: Seen, text: str, instead=()) -> Fixed:
    return Fixed(seen.candidate.kind, seen.name, seen.line, text, tuple(instead))
