"""Which rule made each rewrite, as a driver log's plan-change log (spark.sql.planChangeLog
.level) shows it: each finding of a kind gets an application of its detector's rule
(`Detector.rules_logged`, the one map of rules to kinds), and a kind no rule makes (a join
switch the planner picked at re-planning) the re-planning whose adopted plan gained the
finding's operator."""

from __future__ import annotations

import dataclasses
from typing import Dict, FrozenSet, List, Optional, Tuple

from ..plan.align import EXPRESSION_ID as _EXPRESSION_ID, expression_ids, tree_expression_ids
from ..plan.model import Node, PlanChanges, RuleApplied
from ..plan.operators import family
from .detectors import DETECTORS
from .detectors.base import Rewrite

#: Each kind's rules, by simple class name.
RULES_BY_KIND: Dict[str, Tuple[str, ...]] = {d.kind: d.rules_logged for d in DETECTORS}


def rules_of(kind: str) -> Tuple[str, ...]:
    return RULES_BY_KIND.get(kind, ())


def name_rules(rewrites: Tuple[Rewrite, ...], changes: Optional[PlanChanges]
               ) -> Tuple[Rewrite, ...]:
    """`rewrites`, each with the rule application that made it (`Rewrite.fired`) where the
    plan-change log shows one; unchanged without a plan-change log."""
    if changes is None or not rewrites:
        return rewrites
    named: List[Rewrite] = []
    for rewrite in rewrites:
        fired = _fired(rewrite, changes)
        named.append(dataclasses.replace(rewrite, fired=fired) if fired else rewrite)
    return tuple(named)


def _head_node(node: Optional[Node]) -> Optional[Node]:
    """The first operator at or below `node` naming an expression id (a shuffle read's
    exchange, a join, a scan)."""
    if node is None:
        return None
    for below in node.walk(inner=False):
        if expression_ids(below):
            return below
    return None


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _likeness(mine: FrozenSet[str], theirs: FrozenSet[str]) -> float:
    if not mine or not theirs:
        return 0.0
    return len(mine & theirs) / len(mine | theirs)


def _fired(rewrite: Rewrite, changes: PlanChanges) -> Optional[RuleApplied]:
    rules = rules_of(rewrite.kind)
    if rules:
        applied = [a for a in changes.rules if a.rule in rules]
        if not applied:
            return None
        # The application that added (or changed) the finding's operator: the one whose
        # operator has the same first line with expression ids below it (an exchange, a
        # join, a scan: Spark prints it alike in the log and in the explain), else the
        # nearest plan below it by expression ids; the first when none tells.
        head = _head_node(rewrite.final_node)
        head_text = _squeezed(f"{head.name}{head.text}") if head is not None else ""
        head_ids = frozenset(expression_ids(head)) if head is not None else frozenset()
        mine = tree_expression_ids(rewrite.final_node) if rewrite.final_node is not None \
            else frozenset()
        best, score = applied[0], (False, False, 0.0)
        for application in applied:
            for _, text, theirs in application.touched:
                said = (bool(text) and bool(head_text) and
                        (text in head_text or head_text.endswith(text)),
                        bool(head_ids) and head_ids <= theirs and
                        frozenset(_EXPRESSION_ID.findall(text)) == head_ids,
                        _likeness(mine, theirs))
                if said > score:
                    best, score = application, said
        return best
    operator = family(rewrite.final_node) if rewrite.final_node is not None else ""
    for replanning in changes.replannings:
        if replanning.changed and replanning.changed_line is not None and operator and \
                any(name.split("(")[0].split(" ")[0] == operator for name in replanning.added):
            return RuleApplied(rule="", line=replanning.changed_line, batch="AQE Replanning",
                               added=replanning.added, removed=replanning.removed)
    return None


def fired_words(applied: RuleApplied) -> str:
    """How a finding names what made it: `by OptimizeSkewedJoin (log line 858)`."""
    if applied.rule:
        return f"by {applied.rule} (log line {applied.line})"
    return f"by AQE's re-planning (Plan changed, log line {applied.line})"


def kept_words(changes: PlanChanges) -> str:
    """`plan-change log: 3 re-plannings, 1 changed the plan, 2 kept it` (or, without AQE's
    own messages, that kept plans cannot be told)."""
    count = len(changes.replannings)
    said = f"plan-change log: {count} re-planning{'s' if count != 1 else ''}"
    if count and all(r.changed is None for r in changes.replannings):
        return (f"{said}; whether each kept its plan cannot be told (no 'Plan changed:' or "
                "'Final plan:' in the log: set spark.sql.adaptive.logLevel=INFO)")
    if not count:
        return said
    kept = changes.kept
    lines = ", ".join(str(r.line) for r in changes.replannings if r.changed is False)
    return (f"{said}, {changes.changed} changed the plan, {kept} kept it"
            + (f" (log line{'s' if kept != 1 else ''} {lines})" if kept else ""))
