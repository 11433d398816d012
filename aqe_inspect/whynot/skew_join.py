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

import dataclasses
from typing import Iterable, Iterator, List, Optional, Tuple

from ..plan.model import Node
from ..plan.operators import family, is_skew_join, join_type
from ..rewrites.findings import describe
from .base import (SKEW_SPLITS, Context, Explainer, candidate, fact_reason, kept,
                   needs_setting, number_setting, setting_reason, side_label, size_setting)
from .evidence import SHUFFLE_BYTES, Side, SkewEvidence, join_sides, partitioning_user_above, \
    partitions, show_size, skew_evidence
from .margins import factor_bar, size_margin
from .settings import Settings
from .verdicts import BLOCKED, CANNOT_TELL, NOT_NEEDED, OVER, PLAN, Candidate, Margin, Reason

ENABLED = "spark.sql.adaptive.skewJoin.enabled"
FACTOR = "spark.sql.adaptive.skewJoin.skewedPartitionFactor"
THRESHOLD = "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes"
FORCE = "spark.sql.adaptive.forceOptimizeSkewedJoin"
#: How one side stands against the skew bar.
SKEWED, WITHIN, OPEN = "skewed", "within", "open"


def join_skew(join: Node, ctx: Context) -> Tuple[SkewEvidence, ...]:
    """The partition sizes of each side of a join reading two shuffles, as OptimizeSkewedJoin
    weighs them (`SkewEvidence`: the figures, or what the input lacks of them), held to the
    factor and threshold in force; () for a join that does not read two shuffles."""
    return skew_of_join(join, ctx.settings, ctx.origin)


def skew_of_join(join: Node, settings: Settings, origin: str) -> Tuple[SkewEvidence, ...]:
    """`join_skew` from the settings in force and the query's origin alone (`diff`'s route,
    which has no Context)."""
    sides = join_sides(join)
    if len(sides) != 2 or not all(side.shuffle for side in sides):
        return ()
    factor = number_setting(settings.get(FACTOR))
    threshold = size_setting(settings.get(THRESHOLD))
    return tuple(skew_evidence(side, side_label(index, side), origin, factor, threshold)
                 for index, side in enumerate(sides))


class SkewJoinWhyNot(Explainer):
    kind = "skew-join"

    def explain(self, ctx: Context) -> Iterator[Candidate]:
        for found, rewrite in zip(self.happened(ctx), ctx.rewrites(self.kind)):
            join = rewrite.final_node
            yield dataclasses.replace(found, skew=join_skew(join, ctx)) if join is not None \
                else found
        for join in ctx.pair.final_nodes():
            if family(join) in ("SortMergeJoin", "ShuffledHashJoin") and not is_skew_join(join):
                sides = join_sides(join)
                if len(sides) == 2 and all(s.shuffle for s in sides):
                    yield dataclasses.replace(self.verdict(join, ctx),
                                              skew=join_skew(join, ctx))

    def fired_margins(self, rewrite, ctx: Context) -> Iterable[Optional[Margin]]:
        """Each splittable side's largest partition against the skew bar, where the input
        holds the partition sizes under the split (rarely: a skewed read hides them)."""
        join = rewrite.final_node
        if join is None:
            return ()
        splits = SKEW_SPLITS.get(join_type(join) or "", (True, True))
        return tuple(skew_margin(side, side_label(i, side), ctx)
                     for i, side in enumerate(join_sides(join)) if i < 2 and splits[i])

    def verdict(self, join: Node, ctx: Context) -> Candidate:
        enabled = ctx.settings.get(ENABLED)
        kind_of_join = join_type(join) or ""
        splits = SKEW_SPLITS.get(kind_of_join, (True, True))
        if enabled.known and enabled.flag() is False:
            # Off, the rule measures nothing; the sides against its bar say what it would do.
            return candidate(self.kind, join, BLOCKED, [setting_reason(
                enabled, f"skew-join handling is off: {ENABLED}={enabled.value}")],
                margins=[skew_margin(side, side_label(i, side), ctx)
                         for i, side in enumerate(join_sides(join)) if i < 2 and splits[i]])
        if not any(splits):
            return candidate(self.kind, join, BLOCKED, [Reason(
                f"a {kind_of_join} join cannot split either side", PLAN)])
        factor_setting, threshold_setting = ctx.settings.get(FACTOR), ctx.settings.get(THRESHOLD)
        factor, limit = number_setting(factor_setting), size_setting(threshold_setting)
        reasons: List[Reason] = []
        needs: List[str] = []
        #: What is said of the sides the join type cannot split, left undecided by the input.
        whole: List[Reason] = []
        skewed_sides, open_sides = [], 0
        margins: List[Optional[Margin]] = []
        for index, side in enumerate(join_sides(join)):
            label = side_label(index, side)
            if splits[index]:
                margins.append(skew_margin(side, label, ctx))
            state, said, wanted, skew = self._side(side, label, ctx, factor, limit,
                                                   factor_setting, threshold_setting)
            if state == SKEWED:
                skewed_sides.append((index, label, *skew))
            elif state == OPEN and not splits[index]:
                # Whatever its partition sizes, the join type leaves this side whole: nothing
                # the input lacks of it would change the answer.
                whole.extend(said)
                whole.append(Reason(f"a {kind_of_join} join cannot split its {label}, "
                                    "whatever its partition sizes", PLAN))
            else:
                reasons.extend(said)
                needs.extend(wanted)
                open_sides += state == OPEN
        if skewed_sides:
            found = self._skewed(join, ctx, splits, kind_of_join, skewed_sides, reasons + whole)
            return dataclasses.replace(found, margins=kept(margins))
        if open_sides:
            return candidate(self.kind, join, CANNOT_TELL, reasons + whole, needs, margins)
        if whole:
            # The sides it can split are under the skew bar; the others it cannot split.
            return candidate(self.kind, join, BLOCKED, whole + reasons, margins=margins)
        return candidate(self.kind, join, NOT_NEEDED, reasons, margins=margins)

    @staticmethod
    def _side(side, label, ctx, factor, limit, factor_setting, threshold_setting
              ) -> Tuple[str, List[Reason], List[str], tuple]:
        """One side against the skew bar: (SKEWED, OPEN or WITHIN, the reasons, what the
        input lacks, and for a skewed side its largest partition and ratio to the median)."""
        found = partitions(side, ctx.origin)
        if found is None or found.maximum is None:
            return OPEN, [], [f"the partition sizes (shuffle bytes) of the {label} "
                              "(an event log)"], ()
        largest = found.largest()
        assert largest is not None
        if limit is not None and found.maximum.high <= limit:
            return WITHIN, [setting_reason(threshold_setting, (
                f"the largest partition of the {label} ({largest.labelled()}, "
                f"{found.source}: {found.where}) is within "
                f"{THRESHOLD}={threshold_setting.value}"), SHUFFLE_BYTES)], [], ()
        if found.median is None or factor is None or limit is None:
            needs = []
            if found.median is None:
                needs.append(f"every partition size of the {label}, for their median "
                             "(an event log; a coalesced read hides them)")
            for setting, value in ((factor_setting, factor), (threshold_setting, limit)):
                if value is None:
                    needs.append(needs_setting(setting))
            return OPEN, [fact_reason(largest, f"the largest partition of the {label} has "
                                               f"{largest.labelled()}")], needs, ()
        bar_low = max(limit, factor * found.median.low)
        bar_high = max(limit, factor * found.median.high)
        ratio = found.maximum.low / max(found.median.high, 1)
        if found.maximum.high <= bar_low:
            return WITHIN, [setting_reason(factor_setting, (
                f"the largest partition of the {label} ({largest.labelled()}) is "
                f"{ratio:.2f}x the median ({show_size(found.median)}), within "
                f"{FACTOR}={factor_setting.value} ({found.source}: {found.where})"),
                SHUFFLE_BYTES)], [], ()
        if found.maximum.low > bar_high:
            return SKEWED, [], [], (largest, ratio)
        return OPEN, [fact_reason(largest, f"the largest partition of the {label} has "
                                           f"{largest.labelled()}, near the skew bar")], \
            [f"every partition size of the {label} (an event log)"], ()

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


def skew_margin(side: Side, label: str, ctx: Context) -> Optional[Margin]:
    """A side's largest partition (shuffle bytes) against the skew bar: the larger of
    `skewedPartitionThresholdInBytes` and `skewedPartitionFactor` x the median partition (a
    partition is split when larger than both). Without the median, against the threshold
    alone, and only where it is within it (the bar is then at least as far)."""
    if not side.shuffle:
        return None
    found = partitions(side, ctx.origin)
    if found is None or found.maximum is None:
        return None
    largest = found.largest()
    factor_setting, threshold_setting = ctx.settings.get(FACTOR), ctx.settings.get(THRESHOLD)
    factor, limit = number_setting(factor_setting), size_setting(threshold_setting)
    if largest is None or limit is None:
        return None
    if found.median is not None and factor is not None and \
            found.median.low == found.median.high:
        also = (factor_bar(factor_setting, factor, found.median),)
        return size_margin(f"the largest partition of the {label}", largest, limit,
                           threshold_setting, fires=OVER, also=also)
    if found.maximum.high <= limit:
        return size_margin(f"the largest partition of the {label}", largest, limit,
                           threshold_setting, fires=OVER)
    return None
