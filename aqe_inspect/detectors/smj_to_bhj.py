"""smj-to-bhj: a sort-merge join of the initial plan runs as a broadcast hash join."""

from __future__ import annotations

from typing import Iterator

from ..report import Rewrite, describe
from .base import Detector, PlanPair
from .join_switch import switch_numbers, switched_joins


class SortMergeToBroadcast(Detector):
    """Spark rules: DynamicJoinSelection (AQE's logical re-optimizer) with the planner's
    JoinSelection, then OptimizeShuffleWithLocalRead.

    Once the shuffle stages under a sort-merge join have run, their real sizes are known; a
    side under `spark.sql.adaptive.autoBroadcastJoinThreshold` (3.2+; before that
    `spark.sql.autoBroadcastJoinThreshold`) is broadcast instead, unless too many of its
    partitions are empty (`spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin`).

    Before (initial plan):                 After (final plan):
        SortMergeJoin [k], [k], Inner          BroadcastHashJoin [k], [k], Inner, BuildRight
        :- Sort                                :- AQEShuffleRead local
        :  +- Exchange hashpartitioning(k)     :  +- ShuffleQueryStage 0
        +- Sort                                +- BroadcastQueryStage 2
           +- Exchange hashpartitioning(k)        +- BroadcastExchange
                                                     +- AQEShuffleRead local ...

    The join is matched by operator id, else by its join keys. The finding names the build
    side. Judging it needs the initial plan: a final plan alone cannot tell a runtime switch
    from a broadcast planned up front.

    Configs: spark.sql.adaptive.autoBroadcastJoinThreshold,
    spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin,
    spark.sql.autoBroadcastJoinThreshold.
    """

    kind = "smj-to-bhj"
    summary = "a sort-merge join became a broadcast hash join at run time"
    needs_initial = True

    def detect(self, pair: PlanPair) -> Iterator[Rewrite]:
        for initial, final in switched_joins(pair, "BroadcastHashJoin"):
            numbers = switch_numbers(initial, final)
            side = numbers.get("build_side", "an unknown build side")
            yield Rewrite(
                kind=self.kind, final_node=final, initial_node=initial,
                message=f"{describe(initial)} became {describe(final)}, {side}",
                evidence=(f"initial: {initial.name} {initial.args}".strip()[:200],
                          f"final: {final.name} {final.args}".strip()[:200]),
                numbers=numbers,
            )
