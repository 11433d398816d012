"""smj-to-shj: a sort-merge join of the initial plan runs as a shuffled hash join."""

from __future__ import annotations

from .join_switch import JoinSwitch


class SortMergeToShuffledHash(JoinSwitch):
    """Spark rule: DynamicJoinSelection (Spark 3.2+), through the planner's JoinSelection.

    When every shuffle partition of one side is under
    `spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold`, AQE hints the join to build a
    hash table per partition instead of sorting both sides.

    Before (initial plan):                 After (final plan):
        SortMergeJoin [k], [k], Inner          ShuffledHashJoin [k], [k], Inner, BuildRight
        :- Sort                                :- AQEShuffleRead coalesced
        :  +- Exchange hashpartitioning(k)     :  +- ShuffleQueryStage 0
        +- Sort ...                            +- AQEShuffleRead coalesced ...

    Matched by operator id, else by join keys; needs the initial plan.

    Configs: spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold,
    spark.sql.join.preferSortMergeJoin.
    """

    kind = "smj-to-shj"
    summary = "a sort-merge join became a shuffled hash join at run time"
    spark_rule = "DynamicJoinSelection"
    #: In a plan-change log: DynamicJoinSelection hinting prefer_shuffle_hash at AQE's logical
    #: re-optimization (3.2-3.5); ConvertSortMergeJoinToShuffledHashJoin at re-planning (4.x,
    #: where DemoteBroadcastHashJoin took DynamicJoinSelection's other half).
    logged_rules = ("DynamicJoinSelection", "ConvertSortMergeJoinToShuffledHashJoin")
    target = "ShuffledHashJoin"
