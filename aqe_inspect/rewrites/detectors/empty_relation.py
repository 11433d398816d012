"""empty-relation: a subtree, or the whole plan, replaced at run time by an empty relation."""

from __future__ import annotations

from collections import Counter
from typing import Dict, Iterator, Optional, Tuple

from ...plan.model import Node
from ...plan.operators import EMPTY_RELATION_FAMILIES, family, is_empty_relation, \
    is_query_stage, is_shuffle_read
from .base import Detector, PlanPair, Rewrite, describe
from .emptied_sides import EmptiedPlace, find_emptied_sides


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

    Where the join type lets a side stand alone, no empty relation is left: a LEFT ANTI join
    whose right side is empty becomes its left side, a LEFT OUTER join its left side with
    nulls for the right side's columns (a `Project`), a `Union` drops its empty branches:

        SortMergeJoin [k], [k], LeftAnti       Project [k#1, v#2]
        :- Sort ...  (Exchange 1)              +- AQEShuffleRead coalesced
        +- Sort ...  (Exchange 2, 0 rows)         +- ShuffleQueryStage 0 (Exchange 1)

    These are found from both plans (`emptied_sides`): the join is gone, one side is still
    printed and the other is not. Each finding is one place: the operator that went, what
    stands in its place, and the side (its exchange) that was empty.

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
        yield from self._empty_nodes(pair)
        for place in find_emptied_sides(pair).places:
            yield _emptied_side(self.kind, place)

    def _empty_nodes(self, pair: PlanPair) -> Iterator[Rewrite]:
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


def _emptied_side(kind: str, place: EmptiedPlace) -> Rewrite:
    """The finding for a join replaced by its side, or a Union that dropped branches."""
    removed, replacement = place.removed, place.replacement
    empty = ", ".join(describe(anchor) or anchor.name for _, anchor in place.emptied)
    instead = f"{describe(replacement)}" if replacement is not None else "its other side"
    numbers: Dict[str, object] = {"operator": removed.name, "replaced_by":
                                  replacement.name if replacement is not None else None}
    if family(removed) == "Union":
        count = len(place.emptied)
        branches = "branch" if count == 1 else "branches"
        kept = place.sides - count
        message = (f"{describe(removed)} dropped {count} of its {place.sides} branches "
                   f"(branch {', '.join(place.names)}: {empty}), which produced no rows at "
                   "run time; " + (f"its one remaining branch, {instead}, took its place"
                                   if kept == 1 else f"{instead} unions the other {kept}"))
        numbers.update(empty_branches=count, branches=place.sides)
        evidence = (f"{removed.name}: {count} of {place.sides} {branches} empty",)
    else:
        side = place.names[0]
        other = "left" if side == "right" else "right"
        how = f" {place.join_type}" if place.join_type else ""
        nulls = f" with nulls for the {side} side's columns" if place.with_nulls else ""
        if place.join_type == "LeftSemi":
            # An empty right side makes a semi join empty; one that is kept by its left side
            # had a right side with rows and no condition (PropagateEmptyRelationBase's
            # nonEmpty case).
            message = (f"{describe(removed)}{how} was removed: its {side} side ({empty}) "
                       "produced rows at run time, so a semi join with no condition keeps "
                       f"every row of its {other} side, and {instead} took its place")
        else:
            message = (f"{describe(removed)}{how} was removed: its {side} side ({empty}) "
                       f"produced no rows at run time, and {instead}, its {other} side{nulls}, "
                       "took its place")
        numbers.update(join_type=place.join_type, empty_side=side)
        evidence = (f"{removed.name} {removed.args}".strip()[:200],)
    return Rewrite(kind=kind, final_node=replacement, initial_node=removed, message=message,
                   evidence=evidence, numbers=numbers,
                   went=tuple(side for side, _ in place.emptied))


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
