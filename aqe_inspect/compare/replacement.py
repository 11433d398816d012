"""A rewrite that a stronger one took over: replaced, not lost.

AQE's rules run in an order (`AdaptiveSparkPlanExec`): the re-optimizer plans the joins
again once their inputs' stages have run (a sort-merge join whose side is now small enough
becomes a broadcast hash join: DynamicJoinSelection and the planner's JoinSelection), then
each new stage's plan goes through `queryStageOptimizerRules`: OptimizeSkewedJoin (4.x; a
preparation rule in 3.x), CoalesceShufflePartitions, and last OptimizeShuffleWithLocalRead,
which "needs to make use of the partition specs added by CoalesceShufflePartitions, and must
be executed after it": it turns the shuffle reads of a broadcast hash join's inputs into
local reads, a coalesced read included (`createLocalRead` of an `AQEShuffleReadExec`).

So at a join the new run made a broadcast (`smj-to-bhj` at that join), what the old run made
there is taken over:

- a `coalesced` read of one of its inputs is read map-locally (`local-read`) at the same input
  in the new run: the coalesced read was turned into the local one. Whether the old run kept
  the sort-merge join, or made the broadcast too but did not read locally
  (`spark.sql.adaptive.localShuffleReader.enabled=false`): the same rule took it over;
- when the old run kept the sort-merge (or shuffled hash) join: its `skew-join` split
  (OptimizeSkewedJoin splits the skewed partitions of a sort-merge or shuffled hash join; a
  broadcast join has no shuffled side to split) and its `smj-to-shj` switch (join selection
  takes a broadcast before a shuffled hash join).

And where the new run replaced a subtree by an empty relation (`empty-relation`:
AQEPropagateEmptyRelation, once a stage ran and produced no rows: a join with an empty side,
an aggregate with grouping keys over nothing, the operators above up to the whole plan), what
the old run made inside that subtree (the coalesced or local reads of the join's inputs,
its switch or skew split, a coalesced read under the aggregate, ...) had nothing left to
run on: it is replaced by the empty relation, whatever its kind.

Each is decided from the plans, join by join (`summary.JoinSite`: the same join in both runs,
found by its place in the initial plan; the same input of it), and operator by operator for
an empty relation (`summary.rewrite_places` of the old run found in the new run's
`summary.emptied`: the same places, as joins are found), never by counting kinds: a
coalesced read lost elsewhere in the query stays lost. Only this direction: a new run that
lost the switch (NEW -> OLD above) lost it, and what came with it; a new run that lost the
empty relation lost it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Sequence, Tuple

from .summary import EMPTY_RELATION, JoinSite

#: The switch that makes a join's rewrites replaced, and what it replaces: (the old run's
#: kind, where it stands: at the join or at one of its inputs, the new run's kind that took
#: its place there).
SWITCH = "smj-to-bhj"
RULES: Tuple[Tuple[str, str, str], ...] = (
    ("coalesced", "input", "local-read"),
    ("skew-join", "join", SWITCH),
    ("smj-to-shj", "join", SWITCH),
)


@dataclass(frozen=True)
class Replacement:
    """`count` rewrites of `kind` the old run made that the new run's `by` took over, at the
    joins that became `because` (the new run's `joins`, as findings name them)."""

    kind: str
    count: int
    by: str
    because: str
    joins: Tuple[str, ...] = ()
    #: Which run made the switch `because`: `new` (the old run kept the sort-merge join), or
    #: `both` (the old run made the broadcast too, and read its inputs through coalesced reads).
    switched_in: str = "new"
    #: How many rewrites of `by` took them over, when not one each (`count`): the empty
    #: relations that swallowed them.
    by_count: int = 0

    @property
    def _why(self) -> str:
        if self.because == EMPTY_RELATION:
            return "the part of the plan they were in became an empty relation at run time"
        if self.switched_in == "both":
            return f"the join is {self.because} in both runs, its inputs now read locally"
        return f"the join became {self.because}"

    @property
    def _replaced(self) -> str:
        return f"{self.kind} {self.count} replaced by {self.by} {self.by_count or self.count}"

    @property
    def text(self) -> str:
        """`coalesced 2 replaced by local-read 2 (the join became smj-to-bhj)`."""
        return f"{self._replaced} ({self._why})"

    @property
    def clause(self) -> str:
        """`text` where it stands in parentheses already: `coalesced 2 replaced by local-read
        2, the join became smj-to-bhj`."""
        return f"{self._replaced}, {self._why}"


def replacements(old: Sequence[JoinSite], new: Sequence[JoinSite], lost: Mapping[str, int],
                 kinds: Sequence[str]) -> Tuple[Replacement, ...]:
    """What the new run replaced of what the old one made (`RULES`), join by join, each kind
    at most as many as the pair lost of it (`lost`: the difference of the counts), in the
    order of `kinds`."""
    if not old or not new or not any(lost.values()):
        return ()
    old_at = {site.place: site for site in old}
    found: Dict[Tuple[str, str, str], int] = {}
    where: Dict[Tuple[str, str, str], List[str]] = {}
    for site in new:
        before = old_at.get(site.place)
        if before is None or SWITCH not in site.at_join:
            continue
        switched_in = "both" if SWITCH in before.at_join else "new"
        for kind, place, by in RULES:
            if not lost.get(kind):
                continue
            if place == "join":  # only a join the old run kept shuffled
                count = int(switched_in == "new" and kind in before.at_join
                            and kind not in site.at_join and by in site.at_join)
            else:
                count = sum(1 for was, now in zip(before.inputs, site.inputs)
                            if kind in was and kind not in now and by in now)
            if count:
                key = (kind, by, switched_in)
                found[key] = found.get(key, 0) + count
                if site.join not in where.setdefault(key, []):
                    where[key].append(site.join)
    order = {kind: index for index, kind in enumerate(kinds)}
    result: List[Replacement] = []
    left = dict(lost)
    for (kind, by, switched_in), count in sorted(found.items(),
                                                 key=lambda item: order.get(item[0][0], 99)):
        count = min(count, left.get(kind, 0))  # never more than the pair lost of the kind
        if count:
            left[kind] -= count
            result.append(Replacement(kind, count, by, SWITCH,
                                      tuple(where[(kind, by, switched_in)]), switched_in))
    return tuple(result)


def emptied_replacements(old_places: Sequence[Tuple[str, str]],
                         new_emptied: Sequence[Tuple[str, str]], lost: Mapping[str, int],
                         kinds: Sequence[str]) -> Tuple[Replacement, ...]:
    """What the new run's empty relations replaced of what the old run made: each rewrite
    of the old run (`summary.rewrite_places`) at an operator the new run swallowed in an
    empty relation (`summary.emptied`), each kind at most as many as the pair lost of it
    (`lost`, less what `replacements` found), in the order of `kinds`."""
    if not old_places or not new_emptied or not any(lost.values()):
        return ()
    swallowed: Dict[str, str] = {}
    for place, relation in new_emptied:
        swallowed.setdefault(place, relation)
    found: Dict[str, int] = {}
    where: Dict[str, List[str]] = {}
    for kind, place in old_places:
        relation = swallowed.get(place)
        if relation is None or kind == EMPTY_RELATION or not lost.get(kind):
            continue
        found[kind] = found.get(kind, 0) + 1
        if relation not in where.setdefault(kind, []):
            where[kind].append(relation)
    order = {kind: index for index, kind in enumerate(kinds)}
    result: List[Replacement] = []
    for kind, count in sorted(found.items(), key=lambda item: order.get(item[0], 99)):
        count = min(count, lost.get(kind, 0))
        if count:
            result.append(Replacement(kind, count, EMPTY_RELATION, EMPTY_RELATION,
                                      tuple(where[kind]), "new", len(where[kind])))
    return tuple(result)


def replaced_counts(found: Sequence[Replacement]) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for replacement in found:
        counts[replacement.kind] = counts.get(replacement.kind, 0) + replacement.count
    return counts


__all__ = ["RULES", "Replacement", "emptied_replacements", "replaced_counts", "replacements"]
