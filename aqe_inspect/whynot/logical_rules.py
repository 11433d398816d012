"""Why AQE's logical re-optimizer (AQEOptimizer, 3.3+) kept a global sort, an aggregate or a
limit: OptimizeOneRowPlan and EliminateLimits.

Once a query stage has run, its row count bounds what reaches the operators above it. A global
sort (or a group-only aggregate) that at most one row reaches goes (OptimizeOneRowPlan); a limit
no more rows than its count reach goes (EliminateLimits). Either can be excluded with
`spark.sql.adaptive.optimizer.excludedRules`; Spark 3.2 and earlier have neither in AQE.
"""

from __future__ import annotations

from typing import Iterator, List, Optional

from ..plan.model import Node
from ..plan.operators import is_query_stage, split_top_level
from ..rewrites.detectors.logical_rules import is_global_sort, is_group_only, is_limit
from .base import Context, Explainer, candidate, needs_setting, setting_reason
from .defaults import spark_line
from .verdicts import BLOCKED, CANNOT_TELL, NOT_NEEDED, PLAN, Candidate, Reason

EXCLUDED = "spark.sql.adaptive.optimizer.excludedRules"
PACKAGE = "org.apache.spark.sql.catalyst.optimizer."


def _stage_rows(node: Node) -> Optional[int]:
    """The row count of the query stage right under `node` (through single-child operators
    and a shuffle read), from its printed statistics or its metrics."""
    below = node
    while below.children:
        if len(below.children) != 1:
            return None
        below = below.children[0]
        if is_query_stage(below):
            stats = below.statistics or ""
            marker = "rowCount="
            if marker in stats:
                text = stats.split(marker, 1)[1].split(")", 1)[0].split(",", 1)[0].strip()
                try:
                    return int(float(text))
                except ValueError:
                    return None
            return None
    return None


class _LogicalRuleWhyNot(Explainer):
    rule = ""

    def wanted(self, node: Node) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    def bound(self, node: Node) -> Optional[int]:
        """How many rows the rule lets through: 1 for a sort or aggregate, N for a limit."""
        return 1

    def explain(self, ctx: Context) -> Iterator[Candidate]:
        yield from self.happened(ctx)
        for node in ctx.pair.final_nodes():
            if self.wanted(node):
                found = self.verdict(node, ctx)
                if found is not None:
                    yield found

    def verdict(self, node: Node, ctx: Context) -> Optional[Candidate]:
        line = spark_line(ctx.settings.version)
        if line is not None and tuple(int(p) for p in line.split(".")) < (3, 3):
            return candidate(self.kind, node, BLOCKED, [Reason(
                f"Spark {line} has no {self.rule} in AQE's optimizer (from 3.3)", PLAN)])
        excluded = ctx.settings.get(EXCLUDED)
        if excluded.known and self.rule in (excluded.value or ""):
            return candidate(self.kind, node, BLOCKED, [setting_reason(
                excluded, f"{self.rule} is excluded: {EXCLUDED}={excluded.value}")])
        rows, bound = _stage_rows(node), self.bound(node)
        reasons: List[Reason] = []
        if rows is not None and bound is not None:
            if rows > bound:
                return candidate(self.kind, node, NOT_NEEDED, [Reason(
                    f"the stage below holds {rows} rows, more than {bound}", PLAN)])
            reasons.append(Reason(f"the stage below holds {rows} rows, within {bound}", PLAN))
        needs = [] if rows is not None else [
            "the row count of the query stage below (a formatted plan or an event log)"]
        if not excluded.known:
            needs.append(needs_setting(excluded))
        if not needs:
            needs.append("AQE's plan-change log (spark.sql.planChangeLog.level): by the rows "
                         "here the rule was due")
        return candidate(self.kind, node, CANNOT_TELL, reasons, needs)


class OneRowWhyNot(_LogicalRuleWhyNot):
    kind = "one-row"
    rule = "OptimizeOneRowPlan"

    def wanted(self, node: Node) -> bool:
        return is_global_sort(node) or (is_group_only(node) and _stage_rows(node) is not None)


class LimitRemovedWhyNot(_LogicalRuleWhyNot):
    kind = "limit-removed"
    rule = "EliminateLimits"

    def wanted(self, node: Node) -> bool:
        return is_limit(node)

    def bound(self, node: Node) -> Optional[int]:
        text = node.details.get("Arguments") or node.args
        parts = split_top_level(text)
        head = parts[0] if parts else ""
        if head.startswith("limit="):
            head = head[len("limit="):]
        return int(head) if head.isdecimal() and len(head) < 19 else None
