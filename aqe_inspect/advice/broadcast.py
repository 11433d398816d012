"""What to change so that AQE broadcasts a join it kept sort-merge (smj-to-bhj).

AQE's planner broadcasts a side the join type can build when its run-time data size is at most
`spark.sql.adaptive.autoBroadcastJoinThreshold` (Spark 3.2+; unset, it reads
`spark.sql.autoBroadcastJoinThreshold`), unless DynamicJoinSelection demoted it (fewer than
`spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin` of its shuffle partitions hold
data) or the cost evaluator keeps the plan with fewer shuffles. BroadcastExchangeExec refuses a
build side of 8 GB or more (MAX_BROADCAST_TABLE_BYTES).
"""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

from ..plan.operators import join_type
from ..whynot.base import BROADCAST_BUILDS, number_setting, side_label, size_setting
from ..whynot.evidence import join_sides, partitions, side_size
from ..whynot.smj_to_bhj import (ADAPTIVE_THRESHOLD, EMPTY_RATIO, EXPAND_LIMIT,
                                 STATIC_THRESHOLD, merge_hint, threshold)
from ..whynot.verdicts import BLOCKED, CANNOT_TELL
from .base import Advised, Adviser, Seen, change, fixed
from .changes import LOWER, RAISE, SET
from .values import above, bytes_text, number_under, size_above, under

#: BroadcastExchangeExec.MAX_BROADCAST_TABLE_BYTES: Spark refuses to broadcast 8 GB or more.
MAX_BROADCAST = 8 << 30
DRIVER_MEMORY = "spark.driver.memory"


class BroadcastAdviser(Adviser):
    kind = "smj-to-bhj"

    def advise(self, seen: Seen) -> Iterator[Advised]:
        ctx, join = seen.ctx, seen.node
        kind_of_join = join_type(join) or ""
        builds = BROADCAST_BUILDS.get(kind_of_join, (True, True))
        if not any(builds):
            yield fixed(seen, f"a {kind_of_join} join cannot broadcast either side: no "
                              "setting changes that", [
                "a shuffled hash join (spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold"
                ") builds either side of a full outer join"])
            return
        hint = merge_hint(ctx)
        if hint:
            yield fixed(seen, f"the query's own join hint ({hint}) keeps it sort-merge",
                        ["take the hint out of the query"])
            return
        limit = threshold(ctx)
        limit_bytes = size_setting(limit)
        options: List[Tuple[int, int, object]] = []
        unmeasured: List[str] = []
        for index, side in enumerate(join_sides(join)):
            if not builds[index]:
                continue
            size = side_size(side, ctx.origin)
            if size is None:
                unmeasured.append(side_label(index, side))
                continue
            if size.value.high <= 0:
                continue  # an empty side is AQEPropagateEmptyRelation's, not a broadcast's
            options.append((size.value.high, index, (side, size)))
        if not options:
            if unmeasured:
                # No figure to derive a threshold from: the advice cannot be sure.
                yield (f"{self.kind} at {seen.name}: the run-time data size of the "
                       f"{' and the '.join(unmeasured)} (an event log holds it)")
            return
        options.sort(key=lambda item: item[0])
        high, index, (side, size) = options[0]
        label = side_label(index, side)
        if size.value.low >= MAX_BROADCAST:
            yield fixed(seen, f"the smallest side it can build, the {label}, has "
                              f"{size.labelled()}: Spark broadcasts nothing of 8 GB or more "
                              "(BroadcastExchangeExec)",
                        ["a shuffled hash join, or a smaller build side (filter or project "
                         "it before the join)"])
            return
        figure = f"the {label}: {size.labelled()} ({size.source}: {size.where})"
        if seen.candidate.verdict == CANNOT_TELL:
            yield from self._unknown_ratio(seen, size, high, limit_bytes, label, figure)
            return
        needs_threshold = limit_bytes is not None and (limit_bytes < 0 or size.value.low >
                                                       limit_bytes)
        if needs_threshold:
            yield self._threshold(seen, limit, side, size, high, label, figure)
        demoted = _demotion(side, ctx)
        if demoted is not None:
            nonempty, count = demoted
            ratio = ctx.settings.get(EMPTY_RATIO)
            measured = nonempty / count
            value = number_under(measured)
            yield change(
                seen, EMPTY_RATIO, value, ratio, direction=LOWER, number=float(value),
                figure=(f"{nonempty} of the {count} shuffle partitions of the {label} hold "
                        f"data: {measured:.3g}"),
                threshold=f"demoted when under {EMPTY_RATIO}={ratio.value}",
                headroom=f"{value} is {under(float(value), measured)} the measured "
                         f"{measured:.3g}",
                effects=(
                    "DynamicJoinSelection demotes a broadcast whose side has few partitions "
                    "with data, because a sort-merge join skips empty partitions fast: every "
                    "join of the application with a side between the two ratios may be "
                    "broadcast now",
                    "0 turns the demotion off altogether"))
        if not needs_threshold and demoted is None and seen.candidate.verdict == BLOCKED:
            expand = ctx.settings.get(EXPAND_LIMIT)
            limit_value = number_setting(expand)
            if kind_of_join == "Inner" and expand.known and limit_value is not None and \
                    limit_value <= 0:
                yield change(
                    seen, EXPAND_LIMIT, "8", expand, direction=SET, number=8.0,
                    figure=figure,
                    threshold=(f"the {label} fits {limit.key}={limit.value}, but a broadcast "
                               "would leave the join partitioned by the other side's keys only "
                               f"({EXPAND_LIMIT}={expand.value}), adding a shuffle above it"),
                    headroom="8 is Spark's default",
                    effects=("a broadcast join's output partitioning is expanded with the "
                             "build keys, up to 8 of them, in every query",))
            elif kind_of_join != "Inner" and any("cost evaluator" in r.text
                                                 for r in seen.candidate.reasons):
                yield fixed(seen, f"a broadcast would add a shuffle above the join (a "
                                  f"{kind_of_join} join's partitioning is not expanded with the "
                                  "build keys): AQE's cost evaluator keeps the plan",
                            ["an inner join, or keys above the join on the streamed side's "
                             "columns"])

    def _unknown_ratio(self, seen: Seen, size, high: int, limit_bytes, label: str,
                       figure: str) -> Iterator[Advised]:
        """The side fits the threshold and the join stayed, but the input does not say how
        many of its partitions hold data (Spark 3.x's event logs): the demotion is the one
        setting left that keeps it, so turn it off (0), the advice saying it is incomplete."""
        asks = any("hold data" in need for need in seen.candidate.needs)
        if not asks or limit_bytes is None or limit_bytes < 0 or high > limit_bytes:
            return
        ratio = seen.ctx.settings.get(EMPTY_RATIO)
        value = number_setting(ratio)
        if value is None or value <= 0:
            return
        yield change(
            seen, EMPTY_RATIO, "0", ratio, direction=LOWER, number=0.0,
            figure=(f"{figure}, within the threshold; how many of its shuffle partitions hold "
                    "data is not in the input"),
            threshold=f"demoted when under {EMPTY_RATIO}={ratio.value}",
            headroom="0 turns the demotion off: the share of partitions with data is not known",
            effects=("DynamicJoinSelection no longer demotes any broadcast of the application "
                     "for its empty partitions (a sort-merge join skips them fast)",))

    def _threshold(self, seen: Seen, limit, side, size, high: int, label: str,
                   figure: str) -> Advised:
        ctx = seen.ctx
        value, value_bytes = size_above(high)
        adaptive = ctx.settings.exists(ADAPTIVE_THRESHOLD) is not False
        key = ADAPTIVE_THRESHOLD if adaptive else STATIC_THRESHOLD
        setting = ctx.settings.get(key) if not adaptive else limit
        effects = []
        if adaptive:
            static = ctx.settings.get(STATIC_THRESHOLD)
            effects.append(
                f"AQE reads {ADAPTIVE_THRESHOLD} when it is set, else {STATIC_THRESHOLD}: the "
                "adaptive key changes only the decisions made on run-time sizes; the planner's "
                f"first plan still holds estimates to {STATIC_THRESHOLD}"
                + (f"={static.value}" if static.known else ""))
        else:
            effects.append(
                f"Spark {ctx.settings.line} has no {ADAPTIVE_THRESHOLD} (3.2+): "
                f"{STATIC_THRESHOLD} also changes the planner's choice on estimates, before "
                "any stage runs, where a side estimated small may be large")
        exchange = side.exchange
        written = exchange.metrics.get("shuffle bytes written") if exchange is not None \
            else None
        disk = f", not its shuffle bytes ({bytes_text(written)} written)" if written else ""
        effects.append(
            f"the threshold is held to the {label}'s data size (its rows as held in memory, "
            f"{size.show()}){disk}: the hash relation built from it is larger still")
        driver = ctx.settings.given.get(DRIVER_MEMORY)
        memory = f"{DRIVER_MEMORY}={driver.value} ({driver.origin})" if driver is not None \
            else f"{DRIVER_MEMORY}, not in the input"
        effects.append(
            f"the driver collects the build side and builds its hash relation ({memory}), "
            "and every executor holds a copy; Spark refuses a broadcast of 8 GB or more")
        return change(
            seen, key, value, setting, direction=RAISE, number=float(value_bytes),
            figure=figure,
            threshold=(f"{limit.key}={limit.value}"
                       + (" (run-time broadcasting off)" if (size_setting(limit) or 0) < 0
                          else "")),
            headroom=f"{value} ({value_bytes:,} B) is {above(value_bytes, high)} the measured "
                     f"{bytes_text(high)}",
            effects=tuple(effects),
            alternatives=(
                f"this join alone: a broadcast hint on the {label}'s relation, "
                "SQL /*+ BROADCAST(t) */ or df.hint(\"broadcast\") "
                "(pyspark.sql.functions.broadcast), planned on estimates whatever the "
                "threshold",))


def _demotion(side, ctx) -> Optional[Tuple[int, int]]:
    """(partitions with data, partitions) when DynamicJoinSelection demoted the side."""
    ratio = number_setting(ctx.settings.get(EMPTY_RATIO))
    found = partitions(side, ctx.origin)
    if ratio is None or found is None or found.nonempty is None or not found.count:
        return None
    if found.nonempty.high / found.count < ratio and found.nonempty.high > 0:
        return found.nonempty.high, found.count
    return None
