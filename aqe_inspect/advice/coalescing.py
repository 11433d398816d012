"""What to change so that AQE coalesces a shuffle's small partitions (coalesced,
CoalesceShufflePartitions).

AQE merges neighbouring partitions up to `spark.sql.adaptive.advisoryPartitionSizeInBytes`
when `spark.sql.adaptive.coalescePartitions.enabled`; with `parallelismFirst` (3.2+, default
true) it aims lower, to keep Spark's default parallelism busy, and no partition goes under
`coalescePartitions.minPartitionSize`. A shuffle whose partition count the user fixed
(`repartition(n)`: REPARTITION_BY_NUM) is kept as it is: no setting changes that.
"""

from __future__ import annotations

from typing import Iterator

from ..plan.operators import is_shuffle_read
from ..rewrites.findings import describe
from ..whynot.coalesced import ADVISORY, ENABLED
from ..whynot.evidence import USER_REPARTITION, partitions, shuffle_origin, side_of
from ..whynot.base import size_setting
from .base import Advised, Adviser, Seen, change, fixed
from .changes import SET
from .values import bytes_text

PARALLELISM_FIRST = "spark.sql.adaptive.coalescePartitions.parallelismFirst"
MIN_SIZE = "spark.sql.adaptive.coalescePartitions.minPartitionSize"


class CoalescingAdviser(Adviser):
    kind = "coalesced"

    def advise(self, seen: Seen) -> Iterator[Advised]:
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
