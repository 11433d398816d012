"""What AQE changed at each of its re-plans of one SQL execution, in order.

An event log holds one `SparkListenerSQLAdaptiveExecutionUpdate` per re-plan, each with the
plan text as it stood then (its initial plan, and the current plan with the query stages made
so far). Each is parsed and diffed like a final plan; comparing one update with the one
before says what happened at that step: query stages that appeared (named by kind and stage
id, which AQE never reuses, unlike operator ids, which each explain numbers afresh), rewrites
that appeared or went (by kind and operator), the plan becoming final.

Only the HTML page asks for this (the reader keeps the updates' texts when asked: see
`LogStream.keep_replans`); `diff` in other formats keeps the last update alone.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, List, Optional, Sequence, Tuple

from ..plan.model import Node, Query, Replan
from ..plan.operators import is_query_stage
from .findings import REWRITE_KINDS


def _stage_key(node: Node) -> str:
    """`ShuffleQueryStage 3`: a stage's kind and AQE's stage id (its first argument)."""
    from ..plan.operators import node_summary

    words = node_summary(node).split()
    return f"{node.name} {words[0]}" if words and words[0].isdigit() else node.name


def replan_steps(updates: Sequence[Tuple[int, Optional[Query]]]) -> Tuple[Replan, ...]:
    """One `Replan` per (line, plan) of an execution's updates, in order (a plan None: its
    text was missing or unreadable)."""
    from .detectors import DETECTORS
    from .detectors.base import plan_pairs, walk_own

    steps: List[Replan] = []
    stages_before: Counter = Counter()
    rewrites_before: Counter = Counter()
    final_before: Optional[bool] = None
    for number, (line, query) in enumerate(updates, 1):
        if query is None:
            steps.append(Replan(number, line, None,
                                changes=("this update's plan text is missing or cannot be "
                                         "read",)))
            continue
        pairs = plan_pairs(query)
        stages: Counter = Counter()
        rewrites: Counter = Counter()
        for pair in pairs:
            for node in walk_own(pair.final):
                if is_query_stage(node):
                    stages[_stage_key(node)] += 1
            for detector in DETECTORS:
                for rewrite in detector.detect(pair):
                    node = rewrite.final_node or rewrite.initial_node
                    rewrites[(rewrite.kind, node.name if node is not None else "")] += 1
        changes: List[str] = []
        if number == 1:
            changes.append("the first plan AQE logged")
        new_stages = sorted((stages - stages_before).elements())
        if new_stages:
            changes.append(f"new query stage(s): {', '.join(new_stages)}")
        changes.extend(_rewrite_changes(rewrites - rewrites_before, "new"))
        changes.extend(_rewrite_changes(rewrites_before - rewrites, "gone"))
        is_final = query.is_final_plan
        if is_final and not final_before:
            changes.append("the plan is final (isFinalPlan=true)")
        counts = Counter(kind for kind, _ in rewrites.elements())
        steps.append(Replan(number, line, is_final,
                            tuple((kind, counts[kind]) for kind in REWRITE_KINDS
                                  if counts[kind]), tuple(changes)))
        stages_before, rewrites_before, final_before = stages, rewrites, is_final
    return tuple(steps)


def _rewrite_changes(changed: Counter, word: str) -> Iterable[str]:
    order = {kind: number for number, kind in enumerate(REWRITE_KINDS)}
    for (kind, name), count in sorted(changed.items(), key=lambda item: order[item[0][0]]):
        times = f" x{count}" if count > 1 else ""
        yield f"{word}: {kind} on {name}{times}" if name else f"{word}: {kind}{times}"
