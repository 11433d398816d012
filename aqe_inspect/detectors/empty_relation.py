"""empty-relation: a subtree, or the whole plan, replaced at run time by an empty relation."""

from __future__ import annotations

from collections import Counter
from typing import Iterator

from ..operators import family, is_empty_relation, normalized_text
from ..report import Rewrite, describe
from .base import Detector, PlanPair


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

    def detect(self, pair: PlanPair) -> Iterator[Rewrite]:
        # How many times each empty relation of the initial plan is printed: each accounts
        # for one final empty relation of the same text.
        static = Counter(normalized_text(node) for node in pair.initial_nodes()
                         if is_empty_relation(node))
        for node in pair.final_nodes():
            if not is_empty_relation(node):
                continue
            text = normalized_text(node)
            if static[text] > 0:
                static[text] -= 1
                continue
            if pair.initial is None and family(node) != "EmptyRelation":
                continue  # final-only: a LocalTableScan <empty> may be static; see notes
            replaced = "the whole plan" if node is pair.final else "a subtree"
            yield Rewrite(
                kind=self.kind, final_node=node, initial_node=None,
                message=f"{describe(node)} replaced {replaced} that produced no rows at run time",
                evidence=(f"{node.name} {node.args}".strip()[:200],),
            )
