"""Why a sort-merge join was not broadcast at run time (DynamicJoinSelection, JoinSelection).

Once the shuffles under a sort-merge join have run, AQE's planner broadcasts a side when:
the join type can build that side; its run-time size is at most
`spark.sql.adaptive.autoBroadcastJoinThreshold` (3.2+, else `spark.sql.autoBroadcastJoinThreshold`,
which it falls back to; negative turns it off); DynamicJoinSelection did not demote it because
fewer than `spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin` of its shuffle
partitions hold data; and no join hint asks for a sort-merge join.
"""

from __future__ import annotations

from typing import Iterable, Iterator, List, Optional, Tuple

import re

from ..plan.model import Node
from ..plan.operators import build_side, family, join_keys, join_type, split_top_level
from ..rewrites.detectors.base import Rewrite
from ..rewrites.findings import describe
from .base import (BROADCAST_BUILDS, Context, Explainer, candidate, fact_reason,
                   needs_setting, number_setting, setting_reason, side_label, size_setting)
from .evidence import Side, join_sides, measured_side_size, partitioning_user_above, \
    partitions, side_of, side_size
from .margins import ratio_margin, size_margin
from .settings import Setting
from .verdicts import BLOCKED, CANNOT_TELL, OVER, PLAN, UNDER, Candidate, Margin, Reason

ADAPTIVE_THRESHOLD = "spark.sql.adaptive.autoBroadcastJoinThreshold"
STATIC_THRESHOLD = "spark.sql.autoBroadcastJoinThreshold"
EMPTY_RATIO = "spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin"
EXPAND_LIMIT = "spark.sql.execution.broadcastHashJoin.outputPartitioningExpandLimit"
#: An expression id as Spark prints it: `k#84L`'s `#84`.
EXPRESSION_ID = re.compile(r"#\d+")
#: Join hints that keep a join sort-merge, as Spark prints them in logical plans.
MERGE_HINTS = ("strategy=merge", "strategy=shuffle_merge", "strategy=mergejoin",
               "strategy=no_broadcast_hash")


class SortMergeToBroadcastWhyNot(Explainer):
    kind = "smj-to-bhj"

    def explain(self, ctx: Context) -> Iterator[Candidate]:
        yield from self.happened(ctx)
        for join in stayed_joins(ctx):
            yield broadcast_verdict(self.kind, join, ctx)

    def fired_margins(self, rewrite: Rewrite, ctx: Context) -> Iterable[Optional[Margin]]:
        """The broadcast side's run-time size against the threshold, and its share of
        non-empty partitions against the demotion ratio."""
        join = rewrite.final_node
        if join is None or len(join.children) < 2:
            return ()
        index = 0 if build_side(join) == "BuildLeft" else 1
        side = broadcast_input(join.children[index])
        label = side_label(index, side)
        return (size_margin_of(side, label, ctx), empty_ratio_margin(side, label, ctx))


def broadcast_input(top) -> Side:
    """The shuffle a broadcast side was read from: under a broadcast's query stage and its
    exchange (AQE broadcasts a shuffle stage it already ran), else the side as it is."""
    side = side_of(top)
    exchange = side.exchange
    if exchange is not None and family(exchange) == "BroadcastExchange" and \
            len(exchange.children) == 1:
        below = side_of(exchange.children[0])
        if below.stage is not None or below.exchange is not None:
            return below
    return side


def size_margin_of(side: Side, label: str, ctx: Context) -> Optional[Margin]:
    """A side's run-time data size against the broadcast threshold (Spark broadcasts a side
    of at most the threshold); None where either is unknown or broadcasting is off."""
    size = measured_side_size(side, ctx.origin)
    limit = threshold(ctx)
    limit_bytes = size_setting(limit)
    if size is None or limit_bytes is None or limit_bytes < 0:
        return None
    return size_margin(f"the {label}", size, limit_bytes, limit, fires=UNDER)


def empty_ratio_margin(side: Side, label: str, ctx: Context) -> Optional[Margin]:
    """The share of a side's shuffle partitions that hold data against
    `nonEmptyPartitionRatioForBroadcastJoin` (DynamicJoinSelection demotes under it)."""
    setting = ctx.settings.get(EMPTY_RATIO)
    ratio = number_setting(setting)
    found = partitions(side, ctx.origin)
    if ratio is None or ratio <= 0 or found is None or found.nonempty is None or \
            not found.count or found.nonempty.low != found.nonempty.high:
        return None
    share = found.nonempty.low / found.count
    return ratio_margin(f"the {label}, its non-empty partitions "
                        f"({found.nonempty.low} of {found.count})", share, ratio, setting, fires=OVER, at=OVER,
                        measure="partitions holding data",
                        where=f"{found.source}: {found.counted or found.where}")


def stayed_joins(ctx: Context) -> List[Node]:
    """The sort-merge joins of the final plan: planned so and kept (or switched to a shuffled
    hash join, which is no broadcast either)."""
    switched = {id(r.final_node) for r in ctx.happened if r.final_node is not None}
    found = []
    for node in ctx.pair.final_nodes():
        name = family(node)
        if name == "SortMergeJoin" or (name == "ShuffledHashJoin" and id(node) in switched):
            found.append(node)
    return found


def threshold(ctx: Context) -> Setting:
    if ctx.settings.exists(ADAPTIVE_THRESHOLD) is False:  # before Spark 3.2
        return ctx.settings.get(STATIC_THRESHOLD)
    return ctx.settings.get(ADAPTIVE_THRESHOLD)


def broadcast_verdict(kind: str, join: Node, ctx: Context) -> Candidate:
    kind_of_join = join_type(join)
    builds = BROADCAST_BUILDS.get(kind_of_join or "", (True, True))
    if not any(builds):
        return candidate(kind, join, BLOCKED, [Reason(
            f"a {kind_of_join} join cannot broadcast either side", PLAN)])
    hint = merge_hint(ctx)
    if hint:
        return candidate(kind, join, BLOCKED, [Reason(
            f"a join hint asks for it: {hint} (plan: logical plan)", PLAN)])
    limit = threshold(ctx)
    limit_bytes = size_setting(limit)
    if limit_bytes is not None and limit_bytes < 0:
        return candidate(kind, join, BLOCKED, [setting_reason(
            limit, f"run-time broadcasting is off: {limit.key}={limit.value}")])
    by_side: List[Tuple[float, List[Reason]]] = []  # a side's reasons, smallest side first
    facts: List[Reason] = []
    needs: List[str] = []
    open_sides = 0
    fits: List[Tuple[int, str]] = []  # the sides that fit the threshold, nothing else open
    margins: List[Optional[Margin]] = []
    for index, side in enumerate(join_sides(join)):
        label = side_label(index, side)
        blocked: List[Reason] = []
        size = side_size(side, ctx.origin)
        by_side.append((size.value.low if size is not None else float("inf"), blocked))
        if not builds[index]:
            blocked.append(Reason(f"a {kind_of_join} join cannot build its {label}", PLAN))
            continue
        margins.append(size_margin_of(side, label, ctx))
        if size is not None and limit_bytes is not None and size.value.high <= limit_bytes:
            margins.append(empty_ratio_margin(side, label, ctx))
        if size is None:
            needs.append(f"the run-time data size of the {label} (a formatted plan after the "
                         "action, or an event log)")
            open_sides += 1
            continue
        if limit_bytes is None:
            facts.append(fact_reason(size, f"the {label} has {size.labelled()} at run time"))
            needs.append(needs_setting(limit))
            open_sides += 1
            continue
        if size.value.low > limit_bytes:
            blocked.append(fact_reason(size, f"the {label} has {size.labelled()} at run time"))
            blocked.append(setting_reason(limit, f"the {label} ({size.labelled()}) is above "
                                                 f"{limit.key}={limit.value}", size.measure))
            continue
        if size.value.high > limit_bytes:
            facts.append(fact_reason(size, f"the {label}'s {size.measure} prints as "
                                           f"{size.show()}, too close to "
                                           f"{limit.key}={limit.value} to compare"))
            needs.append(f"the exact size of the {label} (an event log)")
            open_sides += 1
            continue
        demoted, reasons, need = empty_ratio_check(side, label, ctx)
        if demoted:
            blocked.extend(reasons)
            continue
        facts.append(fact_reason(size, f"the {label} has {size.labelled()}, within "
                                       f"{limit.key}={limit.value}"))
        facts.extend(reasons)
        needs.extend(need)
        open_sides += 1
        fits.append((index, label))
    blocked = [reason for _, reasons in sorted(by_side, key=lambda item: item[0])
               for reason in reasons]
    if open_sides == 0:
        return candidate(kind, join, BLOCKED, blocked, margins=margins)
    if fits:
        # Whatever else is open (the non-empty partition ratio), a switch that would add a
        # shuffle is one AQE's cost evaluator rejects.
        kept = cost_kept(join, fits, kind_of_join or "", ctx)
        if kept is not None:
            verdict, reasons, need = kept
            return candidate(kind, join, verdict, blocked + facts + reasons, need,
                             margins=margins)
    if not needs:
        needs.append("the job's join hints and settings (not in this input): by the sizes "
                     "here AQE would have broadcast it")
    return candidate(kind, join, CANNOT_TELL, blocked + facts, needs, margins=margins)


def cost_kept(join: Node, fits: List[Tuple[int, str]], kind_of_join: str, ctx: Context
              ) -> Optional[Tuple[str, List[Reason], List[str]]]:
    """A side fits the threshold, yet the join stayed: AQE's cost evaluator keeps the plan with
    fewer shuffles (SimpleCostEvaluator counts them; AdaptiveSparkPlanExec re-plans only to a
    plan that costs no more). A broadcast join's output is partitioned by its streamed side's
    keys only, unless Spark expands it with the build side's (inner joins, up to
    `spark.sql.execution.broadcastHashJoin.outputPartitioningExpandLimit`, 3.1+), so an
    operator above keyed on the build side's key would need a new shuffle. (verdict, reasons,
    needs), or None when no operator above relies on such a key."""
    user = partitioning_user_above(join, ctx.up)
    keys = join_keys(join)
    if user is None or keys is None:
        return None
    used = set(EXPRESSION_ID.findall(_keys_text(user)))
    for index, label in fits:
        build_ids = set(EXPRESSION_ID.findall(keys[index]))
        if not build_ids or not (build_ids & used):
            continue
        text = (f"broadcasting the {label} leaves the join partitioned by the other side's "
                f"keys, so {describe(user)} above, keyed on {keys[index]}, would need a new "
                "shuffle: AQE's cost evaluator keeps the plan with fewer shuffles")
        expand = ctx.settings.get(EXPAND_LIMIT)
        if kind_of_join != "Inner":
            return BLOCKED, [Reason(f"{text} (a {kind_of_join} join's partitioning is not "
                                    "expanded with the build keys)", PLAN)], []
        limit = number_setting(expand)
        if expand.known and limit is not None and limit <= 0:
            return BLOCKED, [setting_reason(expand, f"{text}; {EXPAND_LIMIT}={expand.value}")], []
        if not expand.known:
            return CANNOT_TELL, [Reason(f"{text}, unless Spark expands the partitioning with "
                                        "the build keys", PLAN)], [needs_setting(expand)]
        return None
    return None


def _keys_text(user: Node) -> str:
    """The keys an operator needs its input partitioned by, as text: a join's keys, an
    aggregate's grouping keys, a window's partitioning (its whole arguments)."""
    keys = join_keys(user)
    if keys is not None:
        return " ".join(keys)
    if "Keys" in user.details:
        return user.details["Keys"]
    for part in split_top_level(user.args.strip("()")):
        if part.startswith(("keys=", "key=")):
            return part
    return user.details.get("Arguments", "") if family(user) == "Window" else \
        (user.args if family(user) == "Window" else "")


def empty_ratio_check(side, label: str, ctx: Context) -> Tuple[bool, List[Reason], List[str]]:
    """DynamicJoinSelection demotes a broadcast when fewer than the ratio of the side's
    shuffle partitions hold data. (demoted, reasons, needs)."""
    ratio_setting = ctx.settings.get(EMPTY_RATIO)
    ratio = number_setting(ratio_setting)
    found = partitions(side, ctx.origin)
    if found is None or found.nonempty is None or not found.count:
        return False, [], [f"how many shuffle partitions of the {label} hold data "
                           "(an event log)"]
    count = found.count
    if ratio is None:
        return False, [], [needs_setting(ratio_setting)]
    high, low = found.nonempty.high / count, found.nonempty.low / count
    if high < ratio:
        held = (f"only {found.nonempty.low}" if found.nonempty.low == found.nonempty.high
                else f"at most {found.nonempty.high}")
        text = (f"{held} of the {count} shuffle partitions of the {label} hold data, "
                f"under {ratio_setting.key}={ratio_setting.value}")
        where = found.counted or found.where
        fact = Reason(f"{held} of {count} partitions hold data ({found.source}: {where})",
                      found.source, None, f"{found.nonempty.high}/{count}")
        return True, [fact, setting_reason(ratio_setting, text)], []
    if low >= ratio:
        return False, [], []
    return False, [], [f"how many shuffle partitions of the {label} hold data (an event log)"]


def merge_hint(ctx: Context) -> Optional[str]:
    """A sort-merge join hint in the logical plans an extended explain printed."""
    text = ctx.logical_text().lower()
    for hint in MERGE_HINTS:
        if hint in text:
            return hint
    return None
