"""local-read: a shuffle read that reads map outputs locally, with no network shuffle."""

from __future__ import annotations

from typing import Iterator

from .base import Detector, PlanPair, Rewrite, describe, exchange_numbers


class LocalRead(Detector):
    """Spark rule: OptimizeShuffleWithLocalRead (OptimizeLocalShuffleReader before 3.2).

    When AQE turns a sort-merge join into a broadcast hash join, the probe side no longer
    needs its shuffle partitioned by key: each task reads the map output of its own executor.

    Before:                                After:
        SortMergeJoin                          BroadcastHashJoin ..., BuildRight
        :- Sort                                :- AQEShuffleRead local
        :  +- Exchange hashpartitioning(..)    :  +- ShuffleQueryStage 0
                                               +- BroadcastQueryStage 2

    Printed `CustomShuffleReader local` (3.0-3.1), `AQEShuffleRead local` (3.2+), and in
    formatted mode `Arguments: local`.

    Configs: spark.sql.adaptive.localShuffleReader.enabled.
    """

    kind = "local-read"
    summary = "a shuffle read reads map outputs locally (OptimizeShuffleWithLocalRead)"
    spark_rule = "OptimizeShuffleWithLocalRead"
    #: OptimizeLocalShuffleReader on Spark 3.0-3.1.
    logged_rules = ("OptimizeShuffleWithLocalRead", "OptimizeLocalShuffleReader")

    def detect(self, pair: PlanPair) -> Iterator[Rewrite]:
        for node in pair.final_of("AQEShuffleRead"):  # every shuffle read (is_shuffle_read)
            if "local" in pair.read_modes(node):
                exchange = pair.exchange_below(node)
                evidence, numbers = exchange_numbers(node, exchange, pair)
                # The read's own partitions (run-time figures: event logs, History Server):
                # its tasks, a map output's range each, not the shuffle's partitions.
                after = node.metrics.get("number of partitions")
                count = numbers.get("shuffle_partitions")
                before = exchange.metrics.get("number of partitions", count) \
                    if exchange is not None else count
                if after is not None:
                    numbers["partitions_after"] = after
                    if before is not None:
                        numbers["partitions_before"] = before
                initial = pair.initial_for(exchange)
                was = f" ({describe(initial)} in the initial plan)" if initial else ""
                yield Rewrite(
                    kind=self.kind, final_node=node, initial_node=initial,
                    message=f"{describe(node)} reads the map output of "
                            f"{describe(exchange) or 'its shuffle'}{was} locally, with no "
                            "shuffle by key",
                    evidence=(f"{node.name} local", *evidence), numbers=numbers,
                )
