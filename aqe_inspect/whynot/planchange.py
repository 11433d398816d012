"""What a driver log's plan-change log (spark.sql.planChangeLog.level) adds to a why-not
answer: a rule that never changed the query's plan says so (whatever else decided it), and
a kind no rule makes (a join switch the planner picks at re-planning) says how many
re-plannings kept the plan they had."""

from __future__ import annotations

import dataclasses
from typing import List, Sequence

from ..plan.model import PlanChanges
from ..rewrites.rules_fired import rules_of
from .verdicts import HAPPENED, PLAN, Candidate, Reason


def with_plan_changes(candidates: Sequence[Candidate], changes: PlanChanges
                      ) -> List[Candidate]:
    """Each candidate that did not happen, with the plan-change log's word on its rule."""
    said: List[Candidate] = []
    for candidate in candidates:
        reason = None if candidate.verdict == HAPPENED else _reason(candidate.kind, changes)
        said.append(dataclasses.replace(candidate, reasons=(*candidate.reasons, reason))
                    if reason is not None else candidate)
    return said


#: The hints of DynamicJoinSelection (AQE's logical optimizer, 3.2-3.5) and of
#: DemoteBroadcastHashJoin (4.x): what each one decided.
DEMOTED = "no_broadcast_hash"
PREFERRED = "prefer_shuffle_hash"


def _reason(kind: str, changes: PlanChanges):
    demoted = [a for a in changes.rules if any(h.endswith("=" + DEMOTED) for h in a.hints)]
    if kind == "smj-to-bhj" and demoted:
        return Reason(f"{demoted[0].rule} hinted {DEMOTED} on a join of this query (log line "
                      f"{demoted[0].line}): AQE demotes a broadcast whose side has too few "
                      "non-empty partitions (spark.sql.adaptive."
                      "nonEmptyPartitionRatioForBroadcastJoin)", PLAN,
                      config="spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin")
    rules = rules_of(kind)
    if rules:
        fired = [a for a in changes.rules if a.rule in rules]
        if kind == "smj-to-shj":  # 3.x's DynamicJoinSelection also demotes broadcasts
            fired = [a for a in fired if a.rule != "DynamicJoinSelection" or
                     any(h.endswith("=" + PREFERRED) for h in a.hints)]
        if fired:
            return None  # it fired elsewhere in the query: said by the finding there
        if kind == "smj-to-shj":
            return Reason(f"the plan-change log never shows DynamicJoinSelection hinting "
                          f"{PREFERRED} (3.x) nor ConvertSortMergeJoinToShuffledHashJoin (4.x) "
                          "on this query's joins", PLAN, value=rules[0])
        return Reason(f"the plan-change log never shows {' or '.join(rules)} changing this "
                      "query's plan (no '=== Applying Rule' for it)", PLAN,
                      value=rules[0])
    replannings = changes.replannings
    if replannings and all(r.changed is False for r in replannings):
        count = len(replannings)
        return Reason(f"the plan-change log shows {count} re-planning"
                      f"{'s' if count != 1 else ''}, each keeping the plan it had (no "
                      "'Plan changed:' after it)", PLAN, value=str(count))
    return None
