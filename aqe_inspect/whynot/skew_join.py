"""Why a join was not split for skew (OptimizeSkewedJoin).

With `spark.sql.adaptive.skewJoin.enabled`, a sort-merge or shuffled hash join reading two
shuffles has a partition split when it is larger than both
`spark.sql.adaptive.skewJoin.skewedPartitionFactor` x the median partition and
`spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes`, and the join type lets that side
be split (the left of inner, cross, left outer/semi/anti joins; the right of inner, cross and
right outer joins). A split that would make an operator above the join need a new shuffle is
undone unless `spark.sql.adaptive.forceOptimizeSkewedJoin` (3.3+).
"""

from __future__ import annotations

from typing import Iterator, List

from ..plan.model import Node
from ..plan.operators import family, is_skew_join, join_type
from ..rewrites.findings import describe
from .base import (SKEW_SPLITS, Context, Explainer, candidate, fact_reason, needs_setting,
                   number_setting, setting_reason, side_label, size_setting)
from .evidence import SHUFFLE_BYTES, join_sides, partitioning_user_above, partitions, \
    show_size
from .verdicts import BLOCKED, CANNOT_TELL, NOT_NEEDED, PLAN, Candidate, Reason

ENABLED = "spark.sql.adaptive.skewJoin.enabled"
FACTOR = "spark.sql.adaptive.skewJoin.skewedPartitionFactor"
THRESHOLD = "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes"
FORCE = "spark.sql.adaptive.forceOptimizeSkewedJoin"


class SkewJoinWhyNot(Explainer):
    kind = "skew-join"

    def explain(self, ctx: Context) -> Iterator[Candidate]:
        yield from self.happened(ctx)
        for join in ctx.pair.final_nodes():
            if family(join) in ("SortMergeJoin", "ShuffledHashJoin") and not is_skew_join(join):
                sides = join_sides(join)
                if len(sides) == 2 and all(s.shuffle for s in sides):
                    yield self.verdict(join, ctx)

    def verdict(self, join: Node, ctx: Context) -> Candidate:
        enabled = ctx.settings.get(ENABLED)
        if enabled.known and enabled.flag() is False:
            return candidate(self.kind, join, BLOCKED, [setting_reason(
                enabled, f"skew-join handling is off: {ENABLED}={enabled.value}")])
        kind_of_join = join_type(join) or ""
        splits = SKEW_SPLITS.get(kind_of_join, (True, True))
        if not any(splits):
            return candidate(self.kind, join, BLOCKED, [Reason(
                f"a {kind_of_join} join cannot split either side", PLAN)])
        factor_setting, threshold_setting = ctx.settings.get(FACTOR), ctx.settings.get(THRESHOLD)
        factor, limit = number_setting(factor_setting), size_setting(threshold_setting)
        reasons: List[Reason] = []
        needs: List[str] = []
        skewed_sides, open_sides = [], 0
        for index, side in enumerate(join_sides(join)):
            label = side_label(index, side)
            found = partitions(side, ctx.origin)
            if found is None or found.maximum is None:
                needs.append(f"the partition sizes (shuffle bytes) of the {label} (an event log)")
                open_sides += 1
                continue
            largest = found.largest()
            assert largest is not None
            if limit is not None and found.maximum.high <= limit:
                reasons.append(setting_reason(threshold_setting, (
                    f"the largest partition of the {label} ({largest.labelled()}, "
                    f"{found.source}: {found.where}) is within "
                    f"{THRESHOLD}={threshold_setting.value}"), SHUFFLE_BYTES))
                continue
            if found.median is None or factor is None or limit is None:
                if found.median is None:
                    needs.append(f"every partition size of the {label}, for their median "
                                 "(an event log; a coalesced read hides them)")
                for setting, value in ((factor_setting, factor), (threshold_setting, limit)):
                    if value is None:
                        needs.append(needs_setting(setting))
                reasons.append(fact_reason(largest, f"the largest partition of the {label} has "
                                                    f"{largest.labelled()}"))
                open_sides += 1
                continue
            bar_low = max(limit, factor * found.median.low)
            bar_high = max(limit, factor * found.median.high)
            ratio = found.maximum.low / max(found.median.high, 1)
            if found.maximum.high <= bar_low:
                reasons.append(setting_reason(factor_setting, (
                    f"the largest partition of the {label} ({largest.labelled()}) is "
                    f"{ratio:.2f}x the median ({show_size(found.median)}), within "
                    f"{FACTOR}={factor_setting.value} ({found.source}: {found.where})"),
                    SHUFFLE_BYTES))
                continue
            if found.maximum.low > bar_high:
                skewed_sides.append((index, label, largest, ratio))
                continue
            reasons.append(fact_reason(largest, f"the largest partition of the {label} has "
                                                f"{largest.labelled()}, near the skew bar"))
            needs.append(f"every partition size of the {label} (an event log)")
            open_sides += 1
        if skewed_sides:
            return self._skewed(join, ctx, splits, kind_of_join, skewed_sides, reasons)
        if open_sides:
            return candidate(self.kind, join, CANNOT_TELL, reasons, needs)
        return candidate(self.kind, join, NOT_NEEDED, reasons)

    def _skewed(self, join, ctx, splits, kind_of_join, skewed_sides, reasons) -> Candidate:
        """A side is skewed by the rule's measure, yet the join was not split."""
        unsplittable = [(i, label, largest, ratio) for i, label, largest, ratio in skewed_sides
                        if not splits[i]]
        facts = [fact_reason(largest, f"the {label} is skewed: its largest partition has "
                                      f"{largest.labelled()}, {ratio:.1f}x the median")
                 for _, label, largest, ratio in skewed_sides]
        if len(unsplittable) == len(skewed_sides):
            names = " and ".join(label for _, label, _, _ in unsplittable)
            return candidate(self.kind, join, BLOCKED, facts + [Reason(
                f"a {kind_of_join} join cannot split its {names}", PLAN)])
        enabled = ctx.settings.get(ENABLED)
        if not enabled.known:
            return candidate(self.kind, join, CANNOT_TELL, facts, [needs_setting(enabled)])
        user = partitioning_user_above(join, ctx.up)
        force = ctx.settings.get(FORCE)
        if user is not None and not (force.known and force.flag()):
            text = (f"splitting would break the partitioning {describe(user)} above relies "
                    f"on and add a shuffle")
            if force.known:
                return candidate(self.kind, join, BLOCKED, facts + [
                    setting_reason(force, f"{text}; {FORCE}={force.value}")])
            return candidate(self.kind, join, CANNOT_TELL, facts + [Reason(text, PLAN)],
                             [needs_setting(force)])
        return candidate(self.kind, join, CANNOT_TELL, facts + reasons,
                         ["Spark's skew-join log lines (OptimizeSkewedJoin, DEBUG): by the "
                          "sizes here a split was due"])
