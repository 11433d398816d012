"""empty-relation: a subtree, or the whole plan, replaced at run time by an empty relation."""

from __future__ import annotations

from collections import Counter
from typing import Dict, Iterator, Optional, Tuple

from ...plan.model import Node
from ...plan.operators import EMPTY_RELATION_FAMILIES, family, is_empty_relation, \
    is_query_stage, is_shuffle_read
from .base import Detector, PlanPair, Rewrite, describe


class EmptyRelation(Detector):
    """Spark rule: AQEPropagateEmptyRelation (and, before 3.2, the logical
    PropagateEmptyRelation in AQE's re-optimizer).

    Once a query stage has run and produced no rows, AQE replaces every operator whose result
    must then be empty (an inner join with it, an aggregate over it with grouping keys, ...)
    by an empty relation; when the root is replaced, the whole query is.

    Before:                                After:
        SortMergeJoin [k], [k], Inner          LocalTableScan <empty>, [k#1, v#2]   (3.x)
        :- Sort ...                            EmptyRelation [plan_id=N]            (4.x)
        +- Sort ...                            +- Join Inner, (k#1 = k#3)   (the logical plan
                                                                                it replaced)

    A `LocalTableScan <empty>` that the initial plan already had is static (the optimizer saw
    the emptiness before the run) and is not counted. A final-only plan cannot prove a
    3.x `LocalTableScan <empty>` is AQE's, so it is reported as a note instead.

    Configs: spark.sql.adaptive.enabled; the rule can be turned off with
    spark.sql.adaptive.optimizer.excludedRules=
    org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation.
    """

    kind = "empty-relation"
    summary = "a subtree became an empty relation at run time (AQEPropagateEmptyRelation)"
    spark_rule = "AQEPropagateEmptyRelation"
    #: EliminateJoinToEmptyRelation on Spark 3.1 (AQEOptimizer's batch of that name).
    logged_rules = ("AQEPropagateEmptyRelation", "EliminateJoinToEmptyRelation")

    def detect(self, pair: PlanPair) -> Iterator[Rewrite]:
        # How many times each empty relation of the initial plan is printed: each accounts
        # for one final empty relation of the same text.
        static = Counter(pair.normalized_text(node)
                         for node in pair.initial_of(*EMPTY_RELATION_FAMILIES)
                         if is_empty_relation(node))
        parents: Optional[Dict[int, Tuple[Node, int]]] = None
        for node in pair.final_of(*EMPTY_RELATION_FAMILIES):
            if not is_empty_relation(node):
                continue
            text = pair.normalized_text(node)
            if static[text] > 0:
                static[text] -= 1
                continue
            if pair.initial is None and family(node) != "EmptyRelation":
                continue  # final-only: a LocalTableScan <empty> may be static; see notes
            if parents is None:
                parents = _parents(pair.final)
            whole, initial = replaced_operator(pair, node, parents)
            what = "the whole plan" if whole else "a subtree"
            if initial is not None:
                size = sum(1 for _ in initial.walk(inner=False))
                what += f", {describe(initial)} of the initial plan" + \
                    (f" and the {size - 1} operator(s) below it" if size > 1 else "")
            yield Rewrite(
                kind=self.kind, final_node=node, initial_node=initial,
                message=f"{describe(node)} replaced {what}, which produced no rows at run time",
                evidence=(f"{node.name} {node.args}".strip()[:200],),
            )


def _parents(root: Node) -> Dict[int, Tuple[Node, int]]:
    """Each operator's parent and its place among the parent's children (by id(node))."""
    parents: Dict[int, Tuple[Node, int]] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for index, child in enumerate(node.children):
            parents[id(child)] = (node, index)
            stack.append(child)
    return parents


def replaced_operator(pair: PlanPair, node: Node, parents: Dict[int, Tuple[Node, int]]
                      ) -> Tuple[bool, Optional[Node]]:
    """(whether `node` stands for the whole plan, the initial operator it replaced if known):
    above it, through the query stages and shuffle reads AQE put in, the first operator the
    initial plan had too; the replaced operator is that one's child in the same place."""
    above = parents.get(id(node))
    while above is not None and (is_query_stage(above[0]) or is_shuffle_read(above[0])):
        above = parents.get(id(above[0]))
    if above is None:
        return True, pair.initial
    parent, index = above
    counterpart = pair.initial_for(parent)
    if counterpart is None or index >= len(counterpart.children):
        return False, None
    return False, counterpart.children[index]
