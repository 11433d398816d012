"""What the two join-switch detectors share: pairing the joins of the initial plan with the
joins of the final plan."""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Set, Tuple

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
    """(initial sort-merge join, final join) pairs where the final join is a `target`."""
    return ((initial, final) for initial, final in pair.sort_merge_joins
            if family(final) == target)


def pair_sort_merge_joins(pair: PlanPair) -> Iterator[Tuple[Node, Node]]:
    """Each sort-merge join of the initial plan with its final counterpart, in printed order.

    A join that kept its operator id is the same operator; otherwise the final join with the
    same join keys (Spark keeps expression ids through re-planning) is its counterpart: the
    first one not paired yet in printed order, of the same join type if there is one.
    """
    if pair.initial is None:
        return
    final_joins = [node for node in pair.final_nodes() if is_join(node)]
    by_id: Dict[int, Node] = {j.id: j for j in final_joins if j.id is not None}
    unmatched = _Unmatched(final_joins)
    for initial in pair.initial_nodes():
        if family(initial) != "SortMergeJoin":
            continue
        counterpart = by_id.get(initial.id) if initial.id is not None and pair.same_ids \
            else None
        if counterpart is None or unmatched.is_taken(counterpart):
            counterpart = unmatched.same_keys(initial)
        if counterpart is None:
            continue
        unmatched.take(counterpart)
        yield initial, counterpart


class _Unmatched:
    """The final joins not paired yet, indexed by join keys and by keys and join type, so
    that pairing N joins takes O(N) lookups rather than a scan of every candidate each."""

    def __init__(self, joins: List[Node]):
        self._taken: Set[int] = set()
        self._order: Dict[int, int] = {id(join): index for index, join in enumerate(joins)}
        #: Each bucket lists its joins in printed order; `_heads` skips the taken ones.
        self._buckets: Dict[tuple, List[Node]] = {}
        self._heads: Dict[tuple, int] = {}
        for join in joins:
            keys = join_keys(join)
            if keys is not None:
                self._buckets.setdefault(("keys", keys), []).append(join)
                self._buckets.setdefault(("typed", keys, join_type(join)), []).append(join)

    def is_taken(self, join: Node) -> bool:
        return id(join) in self._taken

    def take(self, join: Node) -> None:
        self._taken.add(id(join))

    def _first(self, bucket: tuple) -> Optional[Node]:
        joins = self._buckets.get(bucket)
        if not joins:
            return None
        head = self._heads.get(bucket, 0)
        while head < len(joins) and id(joins[head]) in self._taken:
            head += 1
        self._heads[bucket] = head
        return joins[head] if head < len(joins) else None

    def _earliest(self, *buckets: tuple) -> Optional[Node]:
        found = [join for join in map(self._first, dict.fromkeys(buckets)) if join is not None]
        return min(found, key=lambda join: self._order[id(join)]) if found else None

    def same_keys(self, initial: Node) -> Optional[Node]:
        """The first join on the same keys (either way round), preferring the same type."""
        keys = join_keys(initial)
        if keys is None:
            return None
        swapped = (keys[1], keys[0])
        kind = join_type(initial)
        return (self._earliest(("typed", keys, kind), ("typed", swapped, kind))
                or self._earliest(("keys", keys), ("keys", swapped)))


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
