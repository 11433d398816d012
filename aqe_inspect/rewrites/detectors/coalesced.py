"""coalesced: a shuffle read that coalesces small shuffle partitions."""

from __future__ import annotations

from typing import Iterator

from .base import Detector, PlanPair, Rewrite, describe, exchange_numbers


class Coalesced(Detector):
    """Spark rule: CoalesceShufflePartitions (org.apache.spark.sql.execution.adaptive).

    After a shuffle stage has run, AQE merges contiguous small shuffle partitions until each
    is about `spark.sql.adaptive.advisoryPartitionSizeInBytes`, so the next stage runs fewer,
    fuller tasks.

    Before (initial plan):              After (final plan):
        HashAggregate                       HashAggregate
        +- Exchange hashpartitioning(k, 200)  +- AQEShuffleRead coalesced
                                               +- ShuffleQueryStage 0
                                                  +- Exchange hashpartitioning(k, 200)

    The read is `CustomShuffleReader coalesced` in Spark 3.0-3.1, `AQEShuffleRead coalesced`
    from 3.2, `AQEShuffleRead (N), coalesced` on the formatted tree line from 4.2; in formatted
    mode the word also stands in the read's `Arguments:` field. "coalesced and skewed" counts.

    Configs: spark.sql.adaptive.enabled, spark.sql.adaptive.coalescePartitions.enabled,
    spark.sql.adaptive.advisoryPartitionSizeInBytes,
    spark.sql.adaptive.coalescePartitions.minPartitionSize (3.2+),
    spark.sql.adaptive.coalescePartitions.parallelismFirst (3.2+).
    """

    kind = "coalesced"
    summary = "a shuffle read coalesces small shuffle partitions (CoalesceShufflePartitions)"
    spark_rule = "CoalesceShufflePartitions"

    def detect(self, pair: PlanPair) -> Iterator[Rewrite]:
        for node in pair.final_of("AQEShuffleRead"):  # every shuffle read (is_shuffle_read)
            modes = pair.read_modes(node)
            if "coalesced" not in modes or "local" in modes:
                continue
            exchange = pair.exchange_below(node)
            evidence, numbers = exchange_numbers(node, exchange, pair)
            initial = pair.initial_for(exchange)
            count = numbers.get("shuffle_partitions")
            after = node.metrics.get("number of partitions")
            before = exchange.metrics.get("number of partitions", count) if exchange else count
            if after is not None:  # run-time figures (event logs, History Server)
                numbers["partitions_after"] = after
                if before is not None:
                    numbers["partitions_before"] = before
            message = (f"{describe(node)} coalesces the "
                       f"{f'{count} ' if count else ''}shuffle partitions of "
                       f"{describe(exchange) or 'its shuffle'}"
                       + (f" ({describe(initial)} in the initial plan)" if initial else "")
                       + (", and splits the skewed ones" if "skewed" in modes else "")
                       + (f": coalesced {before} -> {after} partitions"
                          if after is not None and before is not None else ""))
            yield Rewrite(
                kind=self.kind, final_node=node,
                initial_node=initial, message=message,
                evidence=(f"{node.name} {' and '.join(modes)}", *evidence), numbers=numbers,
            )
