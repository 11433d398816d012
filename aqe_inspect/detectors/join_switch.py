"""What the two join-switch detectors share: pairing the joins of the initial plan with the
joins of the final plan."""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Tuple

from ..model import Node
from ..operators import build_side, family, is_join, join_keys, join_type
from ..report import Rewrite, describe
from .base import Detector, PlanPair


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
    """(initial sort-merge join, final join) pairs where the final join is a `target`.

    A join that kept its operator id is the same operator; otherwise the final join with the
    same join keys (Spark keeps expression ids through re-planning) is its counterpart.
    """
    if pair.initial is None:
        return
    final_joins = [node for node in pair.final_nodes() if is_join(node)]
    by_id: Dict[int, Node] = {j.id: j for j in final_joins if j.id is not None}
    unmatched: List[Node] = list(final_joins)
    for initial in pair.initial_nodes():
        if family(initial) != "SortMergeJoin":
            continue
        counterpart = by_id.get(initial.id) if initial.id is not None and pair.same_ids \
            else None
        if counterpart is None:
            counterpart = _same_keys(initial, unmatched)
        if counterpart is None:
            continue
        unmatched.remove(counterpart)
        if family(counterpart) == target:
            yield initial, counterpart


def _same_keys(initial: Node, candidates: List[Node]) -> Optional[Node]:
    """The candidate joining on the same keys (either way round), preferring the same type."""
    keys = join_keys(initial)
    if keys is None:
        return None
    matches = [c for c in candidates if join_keys(c) in (keys, (keys[1], keys[0]))]
    same_type = [c for c in matches if join_type(c) == join_type(initial)]
    return (same_type or matches or [None])[0]


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
