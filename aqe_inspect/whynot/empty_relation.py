"""Why an empty side did not empty a join (AQEPropagateEmptyRelation, Spark 3.2+).

Once a shuffle or broadcast stage has run with no rows, AQE's logical optimizer (Spark's
PropagateEmptyRelationBase, as AQEPropagateEmptyRelation) removes every join an empty side
decides: an inner, cross or semi join with either side empty, and an outer or anti join whose
preserved side is empty, become an empty relation; a LEFT ANTI join whose right side is empty
becomes its left side; an outer join whose other side is empty becomes its preserved side with
nulls for the empty side's columns. An existence join (an EXISTS under an OR) is never removed.
The rule can be excluded with `spark.sql.adaptive.optimizer.excludedRules`.
"""

from __future__ import annotations

from typing import Iterator, Optional

from ..plan.model import Node
from ..plan.operators import is_join, join_type
from .base import Context, Explainer, candidate, fact_reason, needs_setting, setting_reason
from .evidence import join_sides, side_rows
from .verdicts import BLOCKED, CANNOT_TELL, NOT_NEEDED, PLAN, Candidate, Reason

EXCLUDED = "spark.sql.adaptive.optimizer.excludedRules"
RULE = "AQEPropagateEmptyRelation"
#: Which empty side lets the rule remove the join: (left empty, right empty). Every join type
#: the rule knows is removed by either side (into an empty relation, or into its other side);
#: an existence join and a single join (`LeftSingle`, 4.x) by neither.
EMPTIES = {
    "Inner": (True, True), "Cross": (True, True), "LeftOuter": (True, True),
    "RightOuter": (True, True), "FullOuter": (True, True), "LeftSemi": (True, True),
    "LeftAnti": (True, True), "ExistenceJoin": (False, False), "LeftSingle": (False, False),
}


class EmptyRelationWhyNot(Explainer):
    kind = "empty-relation"

    def explain(self, ctx: Context) -> Iterator[Candidate]:
        yield from self.happened(ctx)
        for join in ctx.pair.final_nodes():
            if is_join(join) and len(join.children) == 2:
                found = self.verdict(join, ctx)
                if found is not None:
                    yield found

    def verdict(self, join: Node, ctx: Context) -> Optional[Candidate]:
        sides = join_sides(join)
        if not any(s.stage is not None for s in sides):
            return None  # no run-time stage under it: nothing AQE could have learnt
        kind_of_join = join_type(join) or ""
        empties = EMPTIES.get(kind_of_join, (False, False))
        facts, needs = [], []
        empty_side = None
        for index, side in enumerate(sides):
            rows = side_rows(side, ctx.origin)
            if rows is None:
                if side.stage is not None:
                    needs.append(f"the row count of {side.name()} (a formatted plan or an "
                                 "event log)")
                continue
            if rows.value.high == 0:
                facts.append(fact_reason(rows, f"{side.name()} produced no rows"))
                if empties[index]:
                    empty_side = side
            else:
                facts.append(fact_reason(rows, f"{side.name()} produced {rows.show()} rows"))
        if empty_side is None:
            if needs:
                return candidate(self.kind, join, CANNOT_TELL, facts, needs)
            empty_facts = [fact for fact in facts if "produced no rows" in fact.text]
            text = ("no input of the join is empty" if not empty_facts else
                    f"an empty side does not remove a {kind_of_join} join")
            return candidate(self.kind, join, NOT_NEEDED, facts + [Reason(text, PLAN)])
        excluded = ctx.settings.get(EXCLUDED)
        if excluded.known and RULE in (excluded.value or ""):
            return candidate(self.kind, join, BLOCKED, facts + [setting_reason(
                excluded, f"{RULE} is excluded: {EXCLUDED}={excluded.value}")])
        if not excluded.known:
            return candidate(self.kind, join, CANNOT_TELL, facts, [needs_setting(excluded)])
        return candidate(self.kind, join, CANNOT_TELL, facts, [
            "the job's AQE optimizer settings: by the row counts here the join would have "
            "been replaced"])
