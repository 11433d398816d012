"""What to change so that AQE plans a shuffled hash join where it kept a sort-merge join
(smj-to-shj, DynamicJoinSelection, Spark 3.2+).

AQE prefers a shuffled hash join when `spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold`
(default 0: off) is at least `spark.sql.adaptive.advisoryPartitionSizeInBytes` and every shuffle
partition of a side the join type can build is within it.
"""

from __future__ import annotations

from typing import Iterator, List

from ..plan.operators import join_type
from ..whynot.base import SHUFFLED_HASH_BUILDS, side_label, size_setting
from ..whynot.evidence import SHUFFLE_BYTES, join_sides, partitions, show_size
from ..whynot.smj_to_shj import ADVISORY, LOCAL_MAP
from ..whynot.verdicts import CONFIG
from .base import Advised, Adviser, Seen, change, fixed
from .changes import RAISE
from .values import above, bytes_text, size_above


class ShuffledHashAdviser(Adviser):
    kind = "smj-to-shj"

    def advise(self, seen: Seen) -> Iterator[Advised]:
        ctx, join = seen.ctx, seen.node
        if ctx.settings.exists(LOCAL_MAP) is False:
            yield fixed(seen, f"Spark {ctx.settings.line} has no run-time switch to a shuffled "
                              f"hash join ({LOCAL_MAP} came in 3.2)",
                        ["a SHUFFLE_HASH join hint in the query"])
            return
        local_map = ctx.settings.get(LOCAL_MAP)
        if not seen.asked and local_map.source != CONFIG:
            return  # off by Spark's default: an opt-in, advised when asked or set by the job
        kind_of_join = join_type(join) or ""
        builds = SHUFFLED_HASH_BUILDS.get(kind_of_join, (True, True))
        best = None
        unmeasured: List[str] = []
        for index, side in enumerate(join_sides(join)):
            if not builds[index]:
                continue
            found = partitions(side, ctx.origin)
            if found is None or found.maximum is None:
                unmeasured.append(side_label(index, side))
                continue
            largest = found.maximum.high
            if best is None or largest < best[0]:
                best = (largest, index, side, found)
        if best is None:
            if unmeasured:
                yield (f"{self.kind} at {seen.name}: the partition sizes of the "
                       f"{' and the '.join(unmeasured)} (an event log holds them)")
            return
        largest, index, side, found = best
        label = side_label(index, side)
        advisory = ctx.settings.get(ADVISORY)
        target = size_setting(advisory)
        value, value_bytes = size_above(largest)
        floor = ""
        if target is not None and target > value_bytes:
            value, value_bytes = advisory.value or value, target
            floor = (f"; raised to {ADVISORY}={advisory.value}, as the rule needs the "
                     "threshold at least the advisory size")
        limit = size_setting(local_map)
        if limit is not None and limit >= value_bytes:
            return
        bound = "" if found.maximum.low == found.maximum.high else " (an upper bound)"
        yield change(
            seen, LOCAL_MAP, value, local_map, direction=RAISE, number=float(value_bytes),
            figure=(f"the largest partition of the {label}: {SHUFFLE_BYTES} "
                    f"{show_size(found.maximum)}{bound} ({found.source}: {found.where})"),
            threshold=f"{LOCAL_MAP}={local_map.value}",
            headroom=(f"{value} is {above(value_bytes, largest)} the measured "
                      f"{bytes_text(largest)}{floor}"),
            effects=(
                "every sort-merge join of the application whose partitions on a buildable "
                "side all fit becomes a shuffled hash join: each task then holds its "
                "partition of the build side in a hash map in memory (no spill to disk as a "
                "sort has), so a partition larger than measured here can run out of memory",
                "a broadcast, where one is possible, still wins"))
