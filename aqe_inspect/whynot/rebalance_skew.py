"""Why a rebalance's partitions were not split (OptimizeSkewInRebalancePartitions).

With `spark.sql.adaptive.optimizeSkewsInRebalancePartitions.enabled` (3.2+, default true), each
partition of a `REBALANCE_PARTITIONS_BY_COL` or `_BY_NONE` shuffle larger than the advisory size
(`spark.sql.adaptive.advisoryPartitionSizeInBytes`) is split into map-range pieces; pieces under
`spark.sql.adaptive.rebalancePartitionsSmallPartitionFactor` x the advisory size merge into a
neighbour, so a partition that is mostly one map's output may stay whole.
"""

from __future__ import annotations

from typing import Iterator, Optional

from ..plan.model import Node
from ..plan.operators import family, is_query_stage, is_shuffle_read, shuffle_read_modes
from ..rewrites.detectors.rebalance_skew import rebalance_origin
from .base import (Context, Explainer, candidate, fact_reason, needs_setting, setting_reason,
                   size_setting)
from .evidence import SHUFFLE_BYTES, partitions, side_of
from .verdicts import BLOCKED, CANNOT_TELL, NOT_NEEDED, Candidate

ENABLED = "spark.sql.adaptive.optimizeSkewsInRebalancePartitions.enabled"
ADVISORY = "spark.sql.adaptive.advisoryPartitionSizeInBytes"
SMALL_FACTOR = "spark.sql.adaptive.rebalancePartitionsSmallPartitionFactor"


class RebalanceSkewWhyNot(Explainer):
    kind = "rebalance-skew"

    def explain(self, ctx: Context) -> Iterator[Candidate]:
        yield from self.happened(ctx)
        for node in ctx.pair.final_nodes():
            top = self._rebalance_top(node, ctx)
            if top is not None:
                yield self.verdict(top, ctx)

    def _rebalance_top(self, node: Node, ctx: Context) -> Optional[Node]:
        """The read (or, with none, the stage) over a rebalance shuffle that did not split."""
        if is_shuffle_read(node):
            if "skewed" in shuffle_read_modes(node) or "local" in shuffle_read_modes(node):
                return None
            side = side_of(node)
        elif is_query_stage(node) and family(node) == "ShuffleQueryStage":
            parent = ctx.up.get(id(node))
            if parent is not None and is_shuffle_read(parent):
                return None
            side = side_of(node)
        else:
            return None
        return node if rebalance_origin(side.exchange) is not None else None

    def verdict(self, node: Node, ctx: Context) -> Candidate:
        enabled = ctx.settings.get(ENABLED)
        if enabled.known and enabled.flag() is False:
            return candidate(self.kind, node, BLOCKED, [setting_reason(
                enabled, f"skew splitting in rebalances is off: {ENABLED}={enabled.value}")])
        advisory_setting = ctx.settings.get(ADVISORY)
        advisory = size_setting(advisory_setting)
        found = partitions(side_of(node), ctx.origin)
        if found is None or found.maximum is None:
            needs = ["the partition sizes (shuffle bytes) of the rebalance (an event log)"]
            if advisory is None:
                needs.append(needs_setting(advisory_setting))
            if not enabled.known:
                needs.append(needs_setting(enabled))
            return candidate(self.kind, node, CANNOT_TELL, [], needs)
        largest = found.largest()
        assert largest is not None
        if advisory is None:
            return candidate(self.kind, node, CANNOT_TELL, [fact_reason(
                largest, f"the largest partition has {largest.labelled()}")],
                [needs_setting(advisory_setting)])
        if found.maximum.high <= advisory:
            return candidate(self.kind, node, NOT_NEEDED, [setting_reason(
                advisory_setting, f"the largest partition ({largest.labelled()}, {found.source}: "
                f"{found.where}) is within {ADVISORY}={advisory_setting.value}",
                SHUFFLE_BYTES)])
        facts = [fact_reason(largest, f"the largest partition has {largest.labelled()}, above "
                                      f"{ADVISORY}={advisory_setting.value}")]
        if not enabled.known:
            return candidate(self.kind, node, CANNOT_TELL, facts, [needs_setting(enabled)])
        small = ctx.settings.get(SMALL_FACTOR)
        return candidate(self.kind, node, CANNOT_TELL, facts, [
            f"the map outputs of that partition: pieces under {SMALL_FACTOR}"
            f"={small.value or small.default or '?'} x the advisory size merge, so a partition "
            "that is mostly one map's output stays whole"])
