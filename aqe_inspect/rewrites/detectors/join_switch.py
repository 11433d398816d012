"""What the two join-switch detectors share: pairing the joins of the initial plan with the
joins of the final plan."""

from __future__ import annotations

from typing import Iterator, Tuple

from ...plan.model import Node
from ...plan.operators import build_side, family, join_keys, join_type
from .base import Detector, PlanPair, Rewrite, describe


class JoinSwitch(Detector):
    """A sort-merge join of the initial plan that runs as another join in the final plan;
    subclasses name the join family they look for in `target`."""

    target: str = ""
    needs_initial = True

    def detect(self, pair: PlanPair) -> Iterator[Rewrite]:
        for initial, final in switched_joins(pair, self.target):
            numbers = switch_numbers(initial, final)
            side = numbers.get("build_side", "an unknown build side")
            yield Rewrite(
                kind=self.kind, final_node=final, initial_node=initial,
                message=f"{describe(initial)} became {describe(final)}, {side}",
                evidence=(f"initial: {initial.name} {initial.args}".strip()[:200],
                          f"final: {final.name} {final.args}".strip()[:200]),
                numbers=numbers,
            )


def switched_joins(pair: PlanPair, target: str) -> Iterator[Tuple[Node, Node]]:
    """(initial sort-merge join, final join) pairs where the final join is a `target`."""
    return ((initial, final) for initial, final in pair.sort_merge_joins
            if family(final) == target)


def switch_numbers(initial: Node, final: Node) -> dict:
    numbers = {}
    side = build_side(final)
    if side:
        numbers["build_side"] = side
    keys = join_keys(final)
    if keys:
        numbers["keys"] = f"{keys[0]} = {keys[1]}"
    kind = join_type(final) or join_type(initial)
    if kind:
        numbers["join_type"] = kind
    return numbers
