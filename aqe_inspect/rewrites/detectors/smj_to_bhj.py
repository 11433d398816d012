"""smj-to-bhj: a sort-merge join of the initial plan runs as a broadcast hash join."""

from __future__ import annotations

from .join_switch import JoinSwitch


class SortMergeToBroadcast(JoinSwitch):
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
    spark_rule = "DynamicJoinSelection"
    #: No rule makes the switch: the planner picks the broadcast at AQE's re-planning, from
    #: the stage's run-time size (a plan-change log shows it as `Plan changed:`).
    logged_rules = ()
    target = "BroadcastHashJoin"
