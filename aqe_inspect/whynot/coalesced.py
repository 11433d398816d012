"""Why a shuffle's partitions were not coalesced (CoalesceShufflePartitions).

With `spark.sql.adaptive.coalescePartitions.enabled`, AQE merges neighbouring small partitions
of a shuffle up to `spark.sql.adaptive.advisoryPartitionSizeInBytes` (3.2+ with
`parallelismFirst`, to a smaller target that keeps the cluster busy). It leaves alone a shuffle
whose partition count the user fixed (`repartition(n)`: shuffle origin REPARTITION_BY_NUM), a
shuffle of one partition, and partitions that are already about the advisory size.
"""

from __future__ import annotations

from typing import Iterator, List, Optional

from ..plan.operators import family, is_shuffle_read, shuffle_read_modes
from ..rewrites.findings import describe
from .base import (Context, Explainer, candidate, needs_setting, setting_reason, size_setting)
from .evidence import (SHUFFLE_BYTES, USER_REPARTITION, Fact, Partitions, Side, exact,
                       partitions, shuffle_origin, side_of)
from .margins import size_margin
from .settings import Setting
from .verdicts import BLOCKED, CANNOT_TELL, NOT_NEEDED, PLAN, UNDER, Candidate, Margin, Reason

ENABLED = "spark.sql.adaptive.coalescePartitions.enabled"
ADVISORY = "spark.sql.adaptive.advisoryPartitionSizeInBytes"


class CoalescedWhyNot(Explainer):
    kind = "coalesced"

    def explain(self, ctx: Context) -> Iterator[Candidate]:
        yield from self.happened(ctx)
        for side in uncoalesced_shuffles(ctx):
            yield self.verdict(side, ctx)

    def verdict(self, side: Side, ctx: Context) -> Candidate:
        node = side.stage or side.exchange
        assert node is not None
        origin = shuffle_origin(side.exchange)
        if origin == USER_REPARTITION:
            return candidate(self.kind, node, BLOCKED, [Reason(
                f"the user fixed its partition count: {describe(side.exchange)} is a "
                f"repartition(n) (shuffle origin {USER_REPARTITION}), which AQE keeps", PLAN)])
        enabled = ctx.settings.get(ENABLED)
        if enabled.known and enabled.flag() is False:
            found = partitions(side, ctx.origin)
            target = size_setting(ctx.settings.get(ADVISORY))
            margin = pair_margin(found, target, ctx.settings.get(ADVISORY)) \
                if found is not None and target is not None else None
            return candidate(self.kind, node, BLOCKED, [setting_reason(
                enabled, f"partition coalescing is off: {ENABLED}={enabled.value}")],
                margins=[margin])
        if side.read is not None and "local" in shuffle_read_modes(side.read):
            return candidate(self.kind, node, NOT_NEEDED, [Reason(
                f"{describe(side.read)} reads it map-locally instead", PLAN)])
        found = partitions(side, ctx.origin)
        if found is not None and found.count == 1:
            return candidate(self.kind, node, NOT_NEEDED, [Reason(
                "the shuffle has a single partition", PLAN)])
        advisory = ctx.settings.get(ADVISORY)
        target = size_setting(advisory)
        needs: List[str] = []
        reasons: List[Reason] = []
        if found is not None and found.sizes and target is not None:
            pairs = list(zip(found.sizes, found.sizes[1:]))
            margin = pair_margin(found, target, advisory)
            if pairs and all(a + b > target for a, b in pairs):
                return candidate(self.kind, node, NOT_NEEDED, margins=[margin], reasons=[
                    Reason(f"its {found.count} partitions ({SHUFFLE_BYTES}, {found.source}: "
                           f"{found.where}) are already about the advisory size",
                           found.source, measure=SHUFFLE_BYTES),
                    setting_reason(advisory, f"no two neighbouring partitions fit together in "
                                             f"{ADVISORY}={advisory.value}", SHUFFLE_BYTES)])
            reasons.append(Reason(f"neighbouring partitions fit in {ADVISORY}="
                                  f"{advisory.value} ({SHUFFLE_BYTES}, {found.source}: "
                                  f"{found.where})", found.source, measure=SHUFFLE_BYTES))
        elif found is None or not found.sizes:
            needs.append(f"the partition sizes (shuffle bytes) of {describe(node)} (an event log)")
        if not enabled.known:
            needs.append(needs_setting(enabled))
        if target is None:
            needs.append(needs_setting(advisory))
        if not needs:
            needs.append("the stage's other shuffles and the job's settings: by the sizes here "
                         "AQE would have coalesced them")
        margin = pair_margin(found, target, advisory) if found is not None and \
            target is not None else None
        return candidate(self.kind, node, CANNOT_TELL, reasons, needs, [margin])


def pair_margin(found: Partitions, target: int, advisory: Setting) -> Optional[Margin]:
    """The smallest two neighbouring partitions together (shuffle bytes) against the advisory
    size: CoalesceShufflePartitions merges neighbours that fit it together. Only where every
    partition's size is known exactly."""
    pairs = [a + b for a, b in zip(found.sizes, found.sizes[1:])]
    if not pairs:
        return None
    fact = Fact(exact(min(pairs)), found.source, found.where, SHUFFLE_BYTES)
    return size_margin("the smallest two neighbouring partitions together", fact, target,
                       advisory, fires=UNDER)


def uncoalesced_shuffles(ctx: Context) -> Iterator[Side]:
    """Each shuffle the final plan reads that no coalesced read stands over."""
    seen = set()
    up = ctx.up
    for node in ctx.pair.final_nodes():
        if family(node) != "ShuffleQueryStage" or id(node) in seen:
            continue
        seen.add(id(node))
        parent = up.get(id(node))
        if parent is not None and is_shuffle_read(parent):
            if "coalesced" in shuffle_read_modes(parent) or "skewed" in shuffle_read_modes(parent):
                continue
            yield side_of(parent)
        else:
            yield side_of(node)
