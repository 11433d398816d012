"""What to change so that AQE coalesces a shuffle's small partitions (coalesced,
CoalesceShufflePartitions).

AQE merges neighbouring partitions up to `spark.sql.adaptive.advisoryPartitionSizeInBytes`
when `spark.sql.adaptive.coalescePartitions.enabled`. A shuffle whose partition count the user
fixed (`repartition(n)`: REPARTITION_BY_NUM) is kept as it is: no setting changes that.

Coalescing that happened can still have stopped short of the advisory size. Spark 3.2-4.x
(CoalesceShufflePartitions, ShufflePartitionsUtil.coalescePartitions) aim each coalesce group
at `max(min(ceil(total / minNumPartitions), advisory), minPartitionSize)`, where
`minNumPartitions` is `coalescePartitions.minPartitionNum` when set, else, with
`coalescePartitions.parallelismFirst` (default true), the SparkContext's default parallelism
(the cores), else 1; `minPartitionSize` is 1MB by default. So by default a shuffle smaller than
cores x advisory is read in about as many partitions as there are cores, whatever the advisory
size: `parallelismFirst=false` lets the advisory size decide (a `minPartitionNum` set by the job
wins over it: then `minPartitionNum=1`). Spark 3.0-3.1 have no parallelismFirst: the floor is
`minPartitionNum`, else the default parallelism. The advice is made where the coalesced read's
own partition sizes (an event log's `partition data size`) show two neighbours that together
fit in the advisory size: AQE held at the advisory size would have merged them.
"""

from __future__ import annotations

import math
from typing import Iterator, List, Optional, Tuple

from ..plan.model import Node
from ..plan.operators import family, is_shuffle_read, shuffle_read_modes
from ..rewrites.findings import describe
from ..whynot.coalesced import ADVISORY, ENABLED
from ..whynot.evidence import (STAGE_BOUNDARIES, USER_REPARTITION, partitions, shuffle_origin,
                               side_of)
from ..whynot.verdicts import CONFIG, HAPPENED
from ..whynot.base import size_setting
from .base import Advised, Adviser, Seen, change, fixed
from .changes import LOWER, SET
from .values import bytes_text

PARALLELISM_FIRST = "spark.sql.adaptive.coalescePartitions.parallelismFirst"
MIN_SIZE = "spark.sql.adaptive.coalescePartitions.minPartitionSize"
MIN_NUM = "spark.sql.adaptive.coalescePartitions.minPartitionNum"
#: The metric of an AQE shuffle read that holds each partition's size as AQE computed it from
#: the map output statistics (an event log holds every value).
READ_SIZES = "partition data size"


class CoalescingAdviser(Adviser):
    kind = "coalesced"

    def advise(self, seen: Seen) -> Iterator[Advised]:
        if seen.candidate.verdict == HAPPENED:
            yield from self.floor(seen)
            return
        ctx, node = seen.ctx, seen.node
        parent = ctx.up.get(id(node))
        side = side_of(parent) if parent is not None and is_shuffle_read(parent) else \
            side_of(node)
        if shuffle_origin(side.exchange) == USER_REPARTITION:
            yield fixed(seen, f"the query fixed its partition count: {describe(side.exchange)} "
                              f"is a repartition(n) ({USER_REPARTITION}), which AQE keeps; no "
                              "setting changes that", [
                "repartition by columns without a number (repartition(col)), or a REBALANCE "
                "hint, which AQE may coalesce", "drop the repartition(n)"])
            return
        enabled = ctx.settings.get(ENABLED)
        if not (enabled.known and enabled.flag() is False):
            return
        found = partitions(side, ctx.origin)
        target = size_setting(ctx.settings.get(ADVISORY))
        if found is not None and found.sizes and target is not None:
            pairs = list(zip(found.sizes, found.sizes[1:]))
            if pairs and all(a + b > target for a, b in pairs):
                return  # already about the advisory size: coalescing would merge nothing
        if found is not None and found.sizes:
            total = sum(found.sizes)
            figure = (f"{found.count} partitions, {bytes_text(total)} in all ({found.source}: "
                      f"{found.where})")
        elif found is not None and found.count:
            figure = f"{found.count} partitions ({found.source}: {found.where})"
        else:
            figure = f"the shuffle of {describe(side.exchange or node)}"
        advisory = ctx.settings.get(ADVISORY)
        effects = [
            "every shuffle of the application not fixed by the user is coalesced towards "
            f"{ADVISORY}" + (f"={advisory.value}" if advisory.known else "")
            + ": fewer, larger tasks, and fewer output files where the shuffle feeds a write"]
        if ctx.settings.exists(PARALLELISM_FIRST) is not False:
            first = ctx.settings.get(PARALLELISM_FIRST)
            effects.append(
                f"with {PARALLELISM_FIRST}"
                + (f"={first.value}" if first.known else " (default true)")
                + ", AQE keeps at least Spark's default parallelism (the cores) of "
                f"partitions and ignores the advisory size for that; false honours "
                f"{ADVISORY}, no partition under {MIN_SIZE}")
        yield change(seen, ENABLED, "true", enabled, direction=SET, figure=figure,
                     threshold=f"{ENABLED}={enabled.value}", headroom="a switch",
                     effects=tuple(effects))

    def floor(self, seen: Seen) -> Iterator[Advised]:
        """A coalesced read that stopped short of the advisory size: held at the default
        parallelism (parallelismFirst) or at minPartitionNum."""
        ctx, read = seen.ctx, seen.node
        group = _coalesce_group(read, ctx.up)
        if group is None:
            return
        sizes, where = group
        advisory = ctx.settings.get(ADVISORY)
        target = size_setting(advisory)
        pairs = [a + b for a, b in zip(sizes, sizes[1:])]
        if target is None or target <= 0 or not pairs or min(pairs) > target:
            return  # already about the advisory size (or it is not known)
        total, count = sum(sizes), len(sizes)
        wanted = max(1, math.ceil(total / target))
        about = "" if total <= target else "about "
        figure = (f"{count} coalesced partitions, {bytes_text(total)} in all, "
                  f"{bytes_text(total // count)} each on average (shuffle bytes, {where})")
        gives = (f"AQE aims at {ADVISORY}={advisory.value}: {about}{wanted} partition"
                 f"{'s' if wanted != 1 else ''} (total / advisory size = "
                 f"{bytes_text(total)} / {bytes_text(target)})")
        minimum = ctx.settings.get(MIN_SIZE)
        effects = [
            f"every coalesced shuffle read of the application aims at {ADVISORY}: fewer, larger "
            "reduce tasks; a stage with fewer tasks than cores leaves cores idle, and each task "
            "holds more data (memory, spill)",
            f"no coalesced partition goes under {MIN_SIZE}"
            + (f"={minimum.value}" if minimum.known else " (default 1MB)")
            + " either way; skew splits and rebalances are not affected"]
        given_num = ctx.settings.get(MIN_NUM)
        floor_num = _whole(given_num.value) if given_num.source == CONFIG else None
        if floor_num is not None and floor_num > 1:
            yield change(seen, MIN_NUM, "1", given_num, direction=LOWER, number=1.0,
                         figure=figure,
                         threshold=f"{MIN_NUM}={given_num.value}: AQE keeps at least that many "
                                   "partitions, whatever the advisory size (parallelismFirst "
                                   "is not read while it is set)",
                         headroom=f"1 lets the advisory size decide: {gives}",
                         effects=tuple(effects))
            return
        if ctx.settings.exists(PARALLELISM_FIRST) is False:
            # 3.0-3.1: the default parallelism is the floor unless minPartitionNum is set.
            yield change(seen, MIN_NUM, "1", given_num, direction=LOWER, number=1.0,
                         figure=figure,
                         threshold=f"{MIN_NUM} unset: AQE keeps at least Spark's default "
                                   "parallelism (the cores) of partitions",
                         headroom=f"1 lets the advisory size decide: {gives}",
                         effects=tuple(effects))
            return
        first = ctx.settings.get(PARALLELISM_FIRST)
        if first.known and first.flag() is False:
            return
        least = size_setting(minimum)
        if least is not None and total / count < 1.5 * least:
            target_text = (f"{MIN_SIZE}={minimum.value}, larger here than total / Spark's "
                           "default parallelism (the cores)")
        else:
            target_text = (f"total / Spark's default parallelism (the cores: about {count} "
                           f"here), never under {MIN_SIZE}")
        held = (f"{PARALLELISM_FIRST}" + (f"={first.value}" if first.known else
                                          " (not known; Spark's default is true)")
                + f": AQE ignores {ADVISORY} for a smaller target, {target_text}")
        yield change(seen, PARALLELISM_FIRST, "false", first, direction=SET, figure=figure,
                     threshold=held, headroom=f"a switch: {gives}", effects=tuple(effects))


def _whole(text: Optional[str]) -> Optional[int]:
    try:
        return int((text or "").strip())
    except ValueError:
        return None


def _coalesce_group(read: Node, up) -> Optional[Tuple[List[int], str]]:
    """The partition sizes AQE coalesced together at `read` and where they were read: the
    read's own `partition data size` values, summed partition by partition with the other
    coalesced reads of the same stage (a join's two sides are coalesced as one group). None
    when they are not all known, or a union (groups of their own) is in the stage."""
    top = read
    while True:
        parent = up.get(id(top))
        if parent is None or family(parent) in STAGE_BOUNDARIES:
            break
        top = parent
    reads: List[Node] = []
    pending = [top]
    while pending:
        node = pending.pop()
        name = family(node)
        if name in ("Union", "CartesianProduct", "BroadcastHashJoin",
                    "BroadcastNestedLoopJoin"):
            return None  # coalesced in groups of their own
        if is_shuffle_read(node):
            reads.append(node)
            continue
        if node is not top and name in STAGE_BOUNDARIES:
            continue
        pending.extend(node.children)
    sums: List[int] = []
    for each in reads:
        modes = shuffle_read_modes(each)
        spread = each.spreads.get(READ_SIZES)
        if "coalesced" not in modes or "skewed" in modes or "local" in modes or \
                spread is None or not spread.values:
            return None
        values = list(spread.values)
        if sums and len(values) != len(sums):
            return None
        sums = [a + b for a, b in zip(sums, values)] if sums else values
    if not sums:
        return None
    where = f"'{READ_SIZES}' of " + " and ".join(describe(r) or r.name for r in reads)
    return sums, where
