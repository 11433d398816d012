"""rebalance-skew: a shuffle read that split the skewed partitions of a REBALANCE."""

from __future__ import annotations

import re
from typing import Iterator, Optional

from ...plan.model import Node
from .base import Detector, PlanPair, Rewrite, describe, exchange_numbers

#: The shuffle origins of a rebalance (a `REBALANCE` hint, or the rebalance a write adds).
REBALANCE_ORIGIN = re.compile(r"\bREBALANCE_PARTITIONS_BY_(?:COL|NONE)\b")


def rebalance_origin(exchange: Optional[Node]) -> Optional[str]:
    """`REBALANCE_PARTITIONS_BY_COL` or `..._BY_NONE` when `exchange` is a rebalance."""
    if exchange is None:
        return None
    for text in (exchange.args, exchange.details.get("Arguments", "")):
        match = REBALANCE_ORIGIN.search(text)
        if match:
            return match.group(0)
    return None


class RebalanceSkew(Detector):
    """Spark rule: OptimizeSkewInRebalancePartitions (org.apache.spark.sql.execution.adaptive,
    3.2+).

    After a rebalance's shuffle stage has run (`REBALANCE` hint, `REBALANCE_PARTITIONS_BY_COL`
    or `_BY_NONE`), each partition larger than the advisory size
    (`spark.sql.adaptive.advisoryPartitionSizeInBytes`) is split into map-range pieces of
    about that size, so no task gets a hot key's whole partition; pieces smaller than
    `rebalancePartitionsSmallPartitionFactor` x the advisory size are merged into a neighbour.
    No join is involved (a join's skew is skew-join); the read also coalesces small
    partitions where CoalesceShufflePartitions could, and then counts as coalesced too.

    Before (initial plan):                    After (final plan):
        Exchange hashpartitioning(k, 20),         AQEShuffleRead coalesced and skewed
          REBALANCE_PARTITIONS_BY_COL             +- ShuffleQueryStage 0
        +- Project [k, w]                            +- Exchange hashpartitioning(k, 20),
                                                          REBALANCE_PARTITIONS_BY_COL

    An event log adds the read's `number of skewed partitions` and `number of skewed
    partition splits`.

    Configs: spark.sql.adaptive.optimizeSkewsInRebalancePartitions.enabled,
    spark.sql.adaptive.advisoryPartitionSizeInBytes,
    spark.sql.adaptive.rebalancePartitionsSmallPartitionFactor (3.3+),
    spark.sql.adaptive.forceOptimizeSkewedJoin (3.3+, keeps the split when it adds a shuffle).
    """

    kind = "rebalance-skew"
    summary = ("a shuffle read split the skewed partitions of a rebalance "
               "(OptimizeSkewInRebalancePartitions)")
    spark_rule = "OptimizeSkewInRebalancePartitions"

    def detect(self, pair: PlanPair) -> Iterator[Rewrite]:
        for node in pair.final_of("AQEShuffleRead"):  # every shuffle read (is_shuffle_read)
            modes = pair.read_modes(node)
            if "skewed" not in modes or "local" in modes:
                continue
            exchange = pair.exchange_below(node)
            origin = rebalance_origin(exchange)
            if origin is None:
                continue
            evidence, numbers = exchange_numbers(node, exchange, pair)
            numbers["shuffle_origin"] = origin
            skewed = node.metrics.get("number of skewed partitions")
            splits = node.metrics.get("number of skewed partition splits")
            if skewed:
                numbers["skewed_partitions"] = skewed
                if splits is not None:
                    numbers["skewed_splits"] = splits
            figures = (f" ({skewed} skewed partition(s) split into {splits} tasks)"
                       if skewed and splits is not None else "")
            yield Rewrite(
                kind=self.kind, final_node=node, initial_node=pair.initial_for(exchange),
                message=(f"{describe(node)} splits the skewed partitions of the rebalance "
                         f"{describe(exchange)} ({origin}){figures}"),
                evidence=(f"{node.name} {' and '.join(modes)}", *evidence),
                numbers=numbers,
            )
