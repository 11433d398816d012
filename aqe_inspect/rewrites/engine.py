"""The diff engine: find every adaptive plan of a query and run the detectors on it."""

from __future__ import annotations

import dataclasses
from typing import Iterable, Iterator, List, Optional, Tuple

from .detectors import DETECTORS
from .detectors.base import PlanPair, plan_pairs, query_trees
from ..plan.model import Document, Node, Query, number_of
from ..plan.operators import _FAMILIES as _FAMILY_OF_NAME
from ..plan.operators import QUERY_STAGES, family, is_empty_relation, is_query_stage, mentions
from .findings import Observation, QueryReport, Report, Rewrite, describe
from .rules_fired import name_rules

def _initial_only_note() -> str:
    """`join switches (smj-to-bhj, smj-to-shj) and operators AQE's optimizer removed (one-row,
    limit-removed) cannot be judged ...`: the kinds only an initial plan proves, by group."""
    groups: dict = {}
    for detector in DETECTORS:
        if detector.needs_initial:
            groups.setdefault(detector.initial_group, []).append(detector.kind)
    said = " and ".join(f"{group} ({', '.join(kinds)})" for group, kinds in groups.items())
    return f"{said} cannot be judged without the initial plan; this text holds only the final one"


JOIN_SWITCH_NOTE = _initial_only_note()

#: A plan explained before its action ran: isFinalPlan=false and no query stage yet.
BEFORE_ACTION_NOTE = ("printed before its action ran: AQE has not re-planned yet; explain it "
                      "again after the action (or read the event log)")


#: The families `_observations` names, with the kind of observation each is.
_OBSERVED = {"ReusedExchange": "reused-exchange", "SubqueryBroadcast": "dynamic-pruning",
             "ReusedSubquery": "reused-subquery",
             **{name: "query-stage" for name in QUERY_STAGES}}


def _observations(query: Query, walked: Optional[List[List[Node]]] = None
                  ) -> List[Observation]:
    """What the plan that ran shows of AQE besides rewrites, operator by operator: final
    trees only, so nothing is said twice. `walked`, when the caller has it, is
    `tree.walked()` of each of `query_trees(query)`."""
    seen: List[Observation] = []
    if walked is None:
        walked = [tree.walked() for tree in query_trees(query)]
    known = _FAMILY_OF_NAME
    for nodes in walked:
        for node in nodes:
            name = known.get(node.name)
            if name is None:
                name = family(node)
            kind = _OBSERVED.get(name)
            # A pruning filter with its subquery (it comes before the reused subquery and
            # the query stage); `dynamicpruningexpression(true)` is one AQE dropped (the
            # dpp-dropped kind), no pruning at all.
            if kind != "reused-exchange" and kind != "dynamic-pruning" \
                    and mentions(node, "dynamicpruning#"):
                kind = "dynamic-pruning"
            if kind is None:
                continue
            if kind == "reused-exchange":
                said = "reuses an exchange computed once"
            elif kind == "dynamic-pruning":
                said = "uses dynamic partition pruning"
            elif kind == "reused-subquery":
                said = "reuses a subquery's result"
            else:
                said = "is a query stage AQE ran on its own"
            seen.append(Observation(kind, node, f"{describe(node)} {said}"))
    return seen


def _notes(pairs: Iterable[PlanPair]) -> List[str]:
    notes: List[str] = []
    for pair in pairs:
        if pair.initial is None:
            if JOIN_SWITCH_NOTE not in notes:
                notes.append(JOIN_SWITCH_NOTE)
            for node in pair.final_nodes():
                if is_empty_relation(node) and family(node) != "EmptyRelation":
                    notes.append(f"{describe(node)} is an empty relation; without the initial "
                                 "plan it cannot be told whether AQE or the optimizer made it")
        elif pair.is_final_plan is False and not any(
                is_query_stage(node) for node in pair.final_nodes()):
            notes.append(f"{pair.where}: {BEFORE_ACTION_NOTE}")
        elif pair.is_final_plan is False:
            notes.append(f"{pair.where}: isFinalPlan=false, AQE has not finished re-planning; "
                         "rewrites shown are those made so far")
    return notes


def _detect(pairs: Iterable[PlanPair]) -> Tuple[Rewrite, ...]:
    return tuple(rewrite for pair in pairs for detector in DETECTORS
                 for rewrite in detector.detect(pair))


def diff_query(query: Query, query_id: str) -> QueryReport:
    """What AQE did in one query. An execution that kept its AQE updates (`Execution.updates`)
    gets its timeline, and lets go of the updates' plans."""
    if query.execution is not None and query.execution.updates:
        from .timeline import replan_steps

        execution = dataclasses.replace(query.execution, updates=(),
                                        timeline=replan_steps(query.execution.updates))
        query = dataclasses.replace(query, execution=execution)
    walked = [tree.walked() for tree in query_trees(query)]  # one walk for both
    pairs = plan_pairs(query, walked)
    return QueryReport(id=query_id, query=query,
                       rewrites=name_rules(_detect(pairs), query.plan_changes),
                       info=tuple(_observations(query, walked)),
                       notes=(*query.notes, *_notes(pairs)))


def diff_built(query: Query, query_id: str, source: str, spark_version: str = ""
               ) -> QueryReport:
    """`diff_query` as an event log's reader calls it where it builds each execution
    (`LogStream.built_into`)."""
    return diff_query(query, query_id)


def diff_document(document: Document) -> Report:
    return Report(queries=tuple(diff_queries(document.queries)), source=document.source,
                  notes=document.notes, application=document.application,
                  ended=document.ended, unended=document.unended)


def diff_queries(queries: Iterable[Query]) -> Iterator[QueryReport]:
    """Each query's report, as the queries come (an event log's are read as they are asked
    for). A query of an event log is named by its SQL execution id, as the Spark UI names it;
    any other by its number in the text."""
    for index, query in enumerate(queries, 1):
        yield diff_query(query, str(number_of(query, index)))


def diff_initial_final(initial: Node, query: Query, query_id: str,
                       notes: Tuple[str, ...] = ()) -> QueryReport:
    """Diff a plan printed after its run (`query`) against the plan printed before it, given
    apart (two files). The main plan's initial tree is `initial`, paired by structure, since
    two explains number their operators apart; nested adaptive plans (subqueries, cached
    relations) bring their own initial trees."""
    pairs = _pairs_with_initial(query, initial)
    return QueryReport(id=query_id, query=query,
                       rewrites=name_rules(_detect(pairs), query.plan_changes),
                       info=tuple(_observations(query)),
                       notes=(*notes, *query.notes, *_notes(pairs)), initial=initial)


def report_pairs(report: QueryReport) -> List[PlanPair]:
    """The adaptive plans a report was diffed from, as the views draw them: the query's own,
    or, for two files, the main plan paired with the initial tree given apart."""
    if report.initial is None:
        return plan_pairs(report.query)
    return _pairs_with_initial(report.query, report.initial)


def _pairs_with_initial(query: Query, initial: Node) -> List[PlanPair]:
    main = PlanPair(final=query.final, initial=initial, is_final_plan=query.is_final_plan,
                    where="main", same_ids=False, subqueries=query.subqueries)
    nested = [pair for pair in plan_pairs(query) if pair.final is not query.final
              and pair.where != "main (final plan only)"]
    return [main, *nested]
