"""skew-join: a join whose skewed partitions AQE split into several tasks."""

from __future__ import annotations

from typing import Iterator

from ...plan.operators import JOINS, is_shuffle_read, is_skew_join, join_keys, shuffle_read_modes
from .base import Detector, PlanPair, Rewrite, describe


class SkewJoin(Detector):
    """Spark rule: OptimizeSkewedJoin (org.apache.spark.sql.execution.adaptive).

    A shuffle partition far larger than the median (`skewedPartitionFactor` times, and over
    `skewedPartitionThresholdInBytes`) is split into several reads, and the matching partition
    of the other side is read once per split.

    Before:                                After:
        SortMergeJoin [k], [k], Inner          SortMergeJoin(skew=true) [k], [k], Inner
        :- Sort                                :- Sort
        :  +- Exchange hashpartitioning(k)     :  +- AQEShuffleRead coalesced and skewed
                                               :     +- ShuffleQueryStage 0

    The join prints `(skew=true)` after its name (`isSkew=true` in some vendors' plans);
    ShuffledHashJoin too, and from Spark 4.2 a broadcast join that AQE split for skew. The
    skewed reads under it are the evidence.

    Configs: spark.sql.adaptive.skewJoin.enabled,
    spark.sql.adaptive.skewJoin.skewedPartitionFactor,
    spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes,
    spark.sql.adaptive.forceOptimizeSkewedJoin.
    """

    kind = "skew-join"
    summary = "a join split its skewed partitions into several tasks (OptimizeSkewedJoin)"
    spark_rule = "OptimizeSkewedJoin"

    def detect(self, pair: PlanPair) -> Iterator[Rewrite]:
        for node in pair.final_of(*JOINS):  # is_skew_join asks is_join first
            if not is_skew_join(node):
                continue
            skewed_reads = [below for below in node.walk(inner=False)
                            if is_shuffle_read(below) and "skewed" in shuffle_read_modes(below)]
            keys = join_keys(node)
            # Formatted mode's detail heading carries the marker; simple mode's args do.
            evidence = [node.title if "skew" in node.title else f"{node.title} (skew=true)"]
            evidence.extend(f"{describe(read)}: {' and '.join(shuffle_read_modes(read))}"
                            for read in skewed_reads)
            reads = ", ".join(describe(read) for read in skewed_reads) or "its inputs"
            # Run-time figures (event logs, History Server): partitions split, into how many.
            skewed = sum(r.metrics.get("number of skewed partitions", 0) for r in skewed_reads)
            splits = sum(r.metrics.get("number of skewed partition splits", 0)
                         for r in skewed_reads)
            figures = (f" ({skewed} skewed partition(s) split into {splits} tasks)"
                       if skewed else "")
            yield Rewrite(
                kind=self.kind, final_node=node, initial_node=pair.initial_for(node),
                message=f"{describe(node)} is split for skew; skewed reads: {reads}{figures}",
                evidence=tuple(evidence),
                numbers={"skewed_reads": len(skewed_reads),
                         **({"skewed_partitions": skewed, "skewed_splits": splits}
                            if skewed else {}),
                         **({"keys": f"{keys[0]} = {keys[1]}"} if keys else {})},
            )
