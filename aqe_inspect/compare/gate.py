"""The gate of a comparison: which changes fail it (`--fail-on`).

A rule is `lost`, `gained` or `any` (either), for every rewrite kind, or for one kind
written after a colon: `lost:skew-join`. `none` fails nothing (a report only). Rules are
given as a list (the option repeated, or comma-separated in one value); a pair of
executions fails when any rule holds for it. The default is `lost`: a rewrite the old run
made that the new run did not make.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Tuple

from ..errors import InspectError, printable
from ..rewrites.findings import kind_hint, rewrite_kinds

DIRECTIONS = ("lost", "gained", "any")
DEFAULT = ("lost",)


@dataclass(frozen=True)
class Rule:
    direction: str
    kind: Optional[str] = None

    @property
    def text(self) -> str:
        return f"{self.direction}:{self.kind}" if self.kind else self.direction

    def holds(self, lost: Mapping[str, int], gained: Mapping[str, int]) -> bool:
        sides = (lost,) if self.direction == "lost" else (gained,) \
            if self.direction == "gained" else (lost, gained)
        return any((side.get(self.kind, 0) if self.kind else sum(side.values())) > 0
                   for side in sides)


@dataclass(frozen=True)
class Gate:
    rules: Tuple[Rule, ...] = (Rule("lost"),)

    @property
    def text(self) -> str:
        return ",".join(self.rules_text()) or "none"

    def rules_text(self) -> Tuple[str, ...]:
        return tuple(rule.text for rule in self.rules)

    def reasons(self, lost: Mapping[str, int], gained: Mapping[str, int]) -> Tuple[str, ...]:
        return tuple(rule.text for rule in self.rules if rule.holds(lost, gained))


def parse_gate(values: Iterable[str]) -> Gate:
    """`--fail-on` values (each may hold several, comma-separated) as a Gate; an
    InspectError naming the value that is not a rule."""
    items = [item.strip() for value in values for item in value.split(",")]
    if not items:
        items = list(DEFAULT)
    if "none" in items:
        if len(items) > 1:
            raise InspectError("--fail-on none fails nothing; it cannot be given with other "
                               "rules")
        return Gate(())
    rules = []
    for item in items:
        direction, colon, kind = item.partition(":")
        if direction not in DIRECTIONS or (colon and not kind):
            raise InspectError(f"--fail-on {printable(item)!r}: expected lost, gained, any or "
                               "none, or one of the first three with a kind (lost:skew-join)")
        if kind and kind not in rewrite_kinds():
            raise InspectError(f"--fail-on {printable(item)!r}: {printable(kind)!r} is not a "
                               f"rewrite kind; {kind_hint(kind)}")
        rule = Rule(direction, kind or None)
        if rule not in rules:
            rules.append(rule)
    return Gate(tuple(rules))
