"""Why a sort-merge join did not become a shuffled hash join at run time (DynamicJoinSelection,
Spark 3.2+).

AQE prefers a shuffled hash join when `spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold`
(default 0: off) is at least `spark.sql.adaptive.advisoryPartitionSizeInBytes` and every shuffle
partition of a side the join type can build is within it. A broadcast, when possible, wins.
"""

from __future__ import annotations

from typing import Iterable, Iterator, List, Optional

from ..plan.model import Node
from ..plan.operators import build_side, join_type
from .base import (SHUFFLED_HASH_BUILDS, Context, Explainer, candidate, fact_reason,
                   needs_setting, setting_reason, side_label, size_setting)
from .evidence import SHUFFLE_BYTES, Side, join_sides, partitions
from .margins import size_margin
from .smj_to_bhj import stayed_joins
from .verdicts import BLOCKED, CANNOT_TELL, PLAN, UNDER, Candidate, Margin, Reason

LOCAL_MAP = "spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold"
ADVISORY = "spark.sql.adaptive.advisoryPartitionSizeInBytes"


class SortMergeToShuffledHashWhyNot(Explainer):
    kind = "smj-to-shj"

    def explain(self, ctx: Context) -> Iterator[Candidate]:
        yield from self.happened(ctx)
        switched = {id(r.final_node) for r in ctx.rewrites(self.kind)}
        for join in stayed_joins(ctx):
            if id(join) not in switched:
                yield self.verdict(join, ctx)

    def fired_margins(self, rewrite, ctx: Context) -> Iterable[Optional[Margin]]:
        """The build side's largest partition against the local-map threshold."""
        join = rewrite.final_node
        if join is None or len(join.children) < 2:
            return ()
        index = 0 if build_side(join) == "BuildLeft" else 1
        side = join_sides(join)[index]
        return (local_map_margin(side, side_label(index, side), ctx),)

    def verdict(self, join: Node, ctx: Context) -> Candidate:
        if ctx.settings.exists(LOCAL_MAP) is False:
            return candidate(self.kind, join, BLOCKED, [Reason(
                f"Spark {ctx.settings.line} has no run-time switch to a shuffled hash join "
                f"({LOCAL_MAP} came in 3.2)", PLAN)])
        local_map = ctx.settings.get(LOCAL_MAP)
        limit = size_setting(local_map)
        if limit is not None and limit <= 0:
            return candidate(self.kind, join, BLOCKED, [setting_reason(
                local_map, f"the switch is off: {LOCAL_MAP}={local_map.value}")])
        advisory = ctx.settings.get(ADVISORY)
        target = size_setting(advisory)
        if limit is not None and target is not None and target > limit:
            return candidate(self.kind, join, BLOCKED, [setting_reason(
                advisory, f"{ADVISORY}={advisory.value} is above {LOCAL_MAP}="
                          f"{local_map.value}, so AQE never prefers it")])
        kind_of_join = join_type(join) or ""
        builds = SHUFFLED_HASH_BUILDS.get(kind_of_join, (True, True))
        blocked: List[Reason] = []
        needs: List[str] = []
        if limit is None:
            needs.append(needs_setting(local_map))
        if target is None:
            needs.append(needs_setting(advisory))
        fits = False
        margins: List[Optional[Margin]] = []
        for index, side in enumerate(join_sides(join)):
            label = side_label(index, side)
            if not builds[index]:
                blocked.append(Reason(f"a {kind_of_join} join cannot build its {label}", PLAN))
                continue
            margins.append(local_map_margin(side, label, ctx))
            found = partitions(side, ctx.origin)
            if found is None or found.maximum is None:
                needs.append(f"the partition sizes (shuffle bytes) of the {label} (an event log)")
                continue
            largest = found.largest()
            assert largest is not None
            if limit is None:
                continue
            if found.maximum.low > limit:
                blocked.append(fact_reason(largest, f"the largest partition of the {label} has "
                                                    f"{largest.labelled()}"))
                blocked.append(setting_reason(local_map, (
                    f"a partition of the {label} ({largest.labelled()}) is above "
                    f"{LOCAL_MAP}={local_map.value}"), SHUFFLE_BYTES))
            elif found.maximum.high <= limit:
                fits = True
            else:
                needs.append(f"the exact partition sizes (shuffle bytes) of the {label} "
                             "(an event log)")
        if not needs and not fits:
            return candidate(self.kind, join, BLOCKED, blocked, margins=margins)
        if fits and not needs:
            needs.append("the job's join hints: by the sizes here AQE would have preferred a "
                         "shuffled hash join")
        return candidate(self.kind, join, CANNOT_TELL, blocked, needs, margins)


def local_map_margin(side: Side, label: str, ctx: Context) -> Optional[Margin]:
    """A side's largest partition (shuffle bytes) against
    `maxShuffledHashJoinLocalMapThreshold`: every partition must be within it. None where the
    switch is off (0) or a figure unknown."""
    setting = ctx.settings.get(LOCAL_MAP)
    limit = size_setting(setting)
    found = partitions(side, ctx.origin)
    if limit is None or limit <= 0 or found is None:
        return None
    largest = found.largest()
    if largest is None:
        return None
    return size_margin(f"the largest partition of the {label}", largest, limit, setting,
                       fires=UNDER)
