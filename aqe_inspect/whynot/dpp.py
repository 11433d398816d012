"""Why a scan's partitions were not pruned at run time (PlanAdaptiveDynamicPruningFilters),
and what became of a dropped pruning.

The optimizer (PartitionPruning) plans a pruning filter on a partitioned scan whose partition
column is a join key, when `spark.sql.optimizer.dynamicPartitionPruning.enabled` and a filter on
the other side makes pruning worth it. Under AQE the filter runs on the join's broadcast, reused;
with no broadcast hash join to reuse it is dropped when
`spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly` is true (the default), or runs
as a subquery that scans the other side again when it is false.
"""

from __future__ import annotations

from typing import Iterator, Optional

from ..plan.model import Node
from ..plan.operators import is_join
from ..rewrites.detectors.dpp import is_dropped, pruning_names
from .base import Context, Explainer, candidate, needs_setting, setting_reason
from .verdicts import BLOCKED, CANNOT_TELL, NOT_NEEDED, PLAN, Candidate, Reason

ENABLED = "spark.sql.optimizer.dynamicPartitionPruning.enabled"
REUSE_ONLY = "spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly"
#: What a file scan of a partitioned table prints (simple mode's args, formatted details).
PARTITIONED = "PartitionFilters"


def _partitioned_scans(join: Node) -> Iterator[Node]:
    """The scans under a join (not under a deeper join) that read a partitioned table."""
    stack = list(join.children)
    while stack:
        node = stack.pop()
        if is_join(node):
            continue
        if PARTITIONED in node.args or PARTITIONED in node.details:
            yield node
        stack.extend(node.children)


class DynamicPruningWhyNot(Explainer):
    kind = "dpp"

    def explain(self, ctx: Context) -> Iterator[Candidate]:
        yield from self.happened(ctx)
        seen = set()
        for node in ctx.pair.final_nodes():
            if "dynamicpruningexpression(" in node.text and is_dropped(node) \
                    and not pruning_names(node):
                seen.add(id(node))
                yield self.dropped(node, ctx)
        for join in ctx.pair.final_nodes():
            if not is_join(join):
                continue
            for scan in _partitioned_scans(join):
                if id(scan) in seen or "dynamicpruningexpression(" in scan.text:
                    continue
                seen.add(id(scan))
                yield self.unplanned(scan, ctx)

    def dropped(self, scan: Node, ctx: Context) -> Candidate:
        reuse = ctx.settings.get(REUSE_ONLY)
        text = ("its planned pruning was dropped at run time "
                "(dynamicpruningexpression(true)): no broadcast hash join whose broadcast "
                "it could reuse")
        if reuse.known:
            return candidate(self.kind, scan, BLOCKED, [setting_reason(
                reuse, f"{text}, and {REUSE_ONLY}={reuse.value}")])
        return candidate(self.kind, scan, BLOCKED, [Reason(text, PLAN)])

    def unplanned(self, scan: Node, ctx: Context) -> Candidate:
        enabled = ctx.settings.get(ENABLED)
        if enabled.known and enabled.flag() is False:
            return candidate(self.kind, scan, BLOCKED, [setting_reason(
                enabled, f"dynamic partition pruning is off: {ENABLED}={enabled.value}")])
        if not enabled.known:
            return candidate(self.kind, scan, CANNOT_TELL, [Reason(
                "the scan reads a partitioned table and has no pruning filter", PLAN)],
                [needs_setting(enabled)])
        return candidate(self.kind, scan, NOT_NEEDED, [Reason(
            "the optimizer planned no pruning filter: the join key is not a partition column "
            "of the scan, or no selective filter on the other side makes pruning worth it "
            "(PartitionPruning)", PLAN)])


class DynamicPruningDroppedWhyNot(Explainer):
    kind = "dpp-dropped"

    def explain(self, ctx: Context) -> Iterator[Candidate]:
        yield from self.happened(ctx)
        for rewrite in ctx.rewrites("dpp"):
            scan: Optional[Node] = rewrite.final_node
            if scan is None:
                continue
            how = rewrite.numbers.get("mode")
            ran = {"reused": "on the join's reused broadcast",
                   "subquery": "as a subquery (reuseBroadcastOnly=false)"}.get(
                       str(how), "at run time")
            yield candidate(self.kind, scan, NOT_NEEDED, [Reason(
                f"its pruning ran {ran}: nothing to drop", PLAN)])



