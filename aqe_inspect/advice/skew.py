"""What to change so that AQE splits a skewed join (skew-join, OptimizeSkewedJoin).

A partition is split when `spark.sql.adaptive.skewJoin.enabled` and it is larger than both
`spark.sql.adaptive.skewJoin.skewedPartitionFactor` x the median partition and
`spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes` (strictly), on a side the join
type can split; a split that would add a shuffle above the join is undone unless
`spark.sql.adaptive.forceOptimizeSkewedJoin` (3.3+). The factor is an int up to Spark 3.3 and a
double from 3.4 (SQLConf: `checkValue(_ >= 0)`). The pieces aim at the advisory partition size.
"""

from __future__ import annotations

from typing import Iterator, List, Tuple

from ..plan.operators import join_type
from ..rewrites.findings import describe
from ..whynot.base import SKEW_SPLITS, number_setting, side_label, size_setting
from ..whynot.evidence import join_sides, partitioning_user_above, partitions, show_size
from ..whynot.skew_join import ENABLED, FACTOR, FORCE, THRESHOLD
from ..whynot.smj_to_shj import ADVISORY
from .base import Advised, Adviser, Seen, change, fixed, missing_on
from .changes import LOWER, SET
from .values import bytes_text, number_under, size_under, under

#: What can take the skew of a side a join type cannot split.
UNSPLITTABLE_INSTEAD = (
    "an inner join, where the query allows it: it splits either side",
    "a salted key: add a random salt to the skewed side's key and replicate the other side's "
    "rows once per salt value, then join on (key, salt)")


SPLIT_EFFECTS = (
    "every sort-merge and shuffled hash join of the application reading two shuffles has its "
    "skewed partitions split, and the other side's matching partitions read once per piece",)


def _sized(join, ctx) -> bool:
    """Whether every side's partition sizes are known exactly, with their median."""
    for side in join_sides(join):
        found = partitions(side, ctx.origin)
        if found is None or found.maximum is None or found.median is None or \
                found.maximum.low != found.maximum.high:
            return False
    return True


class SkewAdviser(Adviser):
    kind = "skew-join"

    def advise(self, seen: Seen) -> Iterator[Advised]:
        ctx, join = seen.ctx, seen.node
        kind_of_join = join_type(join) or ""
        splits = SKEW_SPLITS.get(kind_of_join, (True, True))
        factor_setting, threshold_setting = ctx.settings.get(FACTOR), ctx.settings.get(THRESHOLD)
        factor, limit = number_setting(factor_setting), size_setting(threshold_setting)
        # A side is skewed enough to advise on when it is skewed by the settings in force or by
        # Spark's defaults, each bar at the lower of the two: under Spark's defaults and
        # settings, a join whose data is not skewed by them gets no advice.
        bar_factor = _lowest(factor, _default_number(FACTOR, ctx))
        bar_limit = _lowest(limit, _default_bytes(THRESHOLD, ctx))
        skewed: List[Tuple[float, int, object, object]] = []
        unsplittable: List[str] = []
        for index, side in enumerate(join_sides(join)):
            found = partitions(side, ctx.origin)
            if found is None or found.maximum is None or found.median is None or \
                    found.maximum.low != found.maximum.high or found.median.high <= 0:
                continue
            ratio = found.maximum.low / found.median.high
            if ratio <= 1 or (bar_factor is not None and ratio <= bar_factor) or (
                    bar_limit is not None and found.maximum.low <= bar_limit):
                continue
            if not splits[index]:
                unsplittable.append(side_label(index, side))
                continue
            skewed.append((ratio, index, side, found))
        enabled = ctx.settings.get(ENABLED)
        if not skewed and not unsplittable and enabled.known and enabled.flag() is False and \
                not _sized(join, ctx):
            # Off, and the input lacks the partition sizes to tell whether it would split.
            yield change(seen, ENABLED, "true", enabled, direction=SET,
                         figure="the partition sizes are not in the input",
                         threshold=f"{ENABLED}={enabled.value}", headroom="a switch",
                         effects=SPLIT_EFFECTS)
            yield (f"skew-join at {seen.name}: whether a partition is skewed needs every "
                   "partition size of its sides (an event log without a coalesced read above "
                   "the shuffle, or spark.sql.adaptive.coalescePartitions.enabled=false)")
            return
        if not skewed:
            if unsplittable:
                yield fixed(seen, f"a {kind_of_join} join cannot split its "
                                  f"{' and '.join(unsplittable)}: no setting changes that",
                            UNSPLITTABLE_INSTEAD)
            return
        skewed.sort(key=lambda item: -item[0])
        ratio, index, side, found = skewed[0]
        label = side_label(index, side)
        largest, median = found.maximum.low, found.median.high
        figure = (f"the largest partition of the {label}: {bytes_text(largest)}, {ratio:.2f}x "
                  f"the median {show_size(found.median)} ({found.source}: {found.where})")
        if enabled.known and enabled.flag() is False:
            yield change(seen, ENABLED, "true", enabled, direction=SET, figure=figure,
                         threshold=f"{ENABLED}={enabled.value}",
                         headroom="a switch", effects=SPLIT_EFFECTS)
        if factor is not None and largest <= factor * median:
            whole = ctx.settings.line is not None and ctx.settings.line < "3.4"
            value = number_under(ratio, whole=whole)
            if float(value) >= 0 and float(value) < ratio:
                yield change(
                    seen, FACTOR, value, factor_setting, direction=LOWER, number=float(value),
                    figure=figure, threshold=f"{FACTOR}={factor_setting.value}",
                    headroom=f"{value} is {under(float(value), ratio)} the measured ratio "
                             f"{ratio:.2f}" + (" (an int up to Spark 3.3)" if whole else ""),
                    effects=("a partition of any join in the application more than this many "
                             "times its shuffle's median (and above the threshold) is split",))
        if limit is not None and largest <= limit:
            value, value_bytes = size_under(largest)
            yield change(
                seen, THRESHOLD, value, threshold_setting, direction=LOWER,
                number=float(value_bytes), figure=figure,
                threshold=f"{THRESHOLD}={threshold_setting.value}",
                headroom=f"{value} ({value_bytes:,} B) is {under(value_bytes, largest)} the "
                         f"measured {bytes_text(largest)}",
                effects=("partitions of other joins above this size (and the factor x their "
                         "median) are split too; SQLConf asks for it above "
                         f"{ADVISORY}",))
        # Only where the why-not answer found that a split would add a shuffle above the join.
        user = partitioning_user_above(join, ctx.up)
        force = ctx.settings.get(FORCE)
        said = any(r.config == FORCE or "add a shuffle" in r.text
                   for r in seen.candidate.reasons)
        if said and user is not None and not (force.known and force.flag()):
            missing = missing_on(FORCE, ctx)
            if missing:
                yield fixed(seen, f"splitting would break the partitioning {describe(user)} "
                                  f"above relies on; {missing}")
            else:
                yield change(
                    seen, FORCE, "true", force, direction=SET, figure=figure,
                    threshold=(f"splitting would break the partitioning {describe(user)} above "
                               "relies on, so AQE undoes it"
                               + (f" ({FORCE}={force.value})" if force.known else "")),
                    headroom="a switch",
                    effects=("AQE then splits skewed joins even where it adds a shuffle above "
                             "them, in every query of the application: the extra shuffle costs "
                             "what the split saves",))
        if unsplittable:
            yield fixed(seen, f"a {kind_of_join} join cannot split its "
                              f"{' and '.join(unsplittable)}", UNSPLITTABLE_INSTEAD)


def _lowest(current, default):
    known = [v for v in (current, default) if v is not None]
    return min(known) if known else None


def _default_number(key: str, ctx):
    from ..whynot.defaults import effective_default

    found = effective_default(key, ctx.settings.version or "4.3")
    try:
        return float(found.value) if found is not None and found.value else None
    except ValueError:
        return None


def _default_bytes(key: str, ctx):
    from ..plan.units import conf_bytes
    from ..whynot.defaults import effective_default

    found = effective_default(key, ctx.settings.version or "4.3")
    try:
        return conf_bytes(found.value) if found is not None and found.value else None
    except ValueError:
        return None
