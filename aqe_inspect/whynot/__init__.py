"""Why AQE did NOT rewrite: each rule's conditions against the run-time evidence and the
settings in force.

    settings.py   the settings of a query: --conf, --conf-file, the event log, Spark's defaults
    defaults.py   Spark's defaults per line, cited from SQLConf
    evidence.py   run-time sizes, rows and partition sizes, each with where it came from
    verdicts.py   Candidate, Reason, QueryWhy: what an answer is made of
    base.py       what every explainer sees (Context) and the join types' sides
    <kind>.py     one explainer per rewrite kind (EXPLAINERS), adaptive.py for AQE itself
    planchange.py what a driver log's plan-change log adds: the rule never fired, plans kept

`explain_query` answers for one diffed query: a candidate for each place a rewrite could have
happened, with a verdict (happened, blocked, not-needed, cannot-tell) and its reasons.

May import: `rewrites`, `plan`, `errors`.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Mapping, Optional, Tuple

from ..rewrites.engine import report_pairs
from ..rewrites.findings import QueryReport, Rewrite
from .adaptive import before_action, static_plan
from .base import Context, Explainer
from .coalesced import CoalescedWhyNot
from .dpp import DynamicPruningDroppedWhyNot, DynamicPruningWhyNot
from .empty_relation import EmptyRelationWhyNot
from .local_read import LocalReadWhyNot
from .logical_rules import LimitRemovedWhyNot, OneRowWhyNot
from .rebalance_skew import RebalanceSkewWhyNot
from .settings import Given, Settings, settings_for
from .evidence import SkewEvidence
from .skew_join import SkewJoinWhyNot, skew_of_join
from .smj_to_bhj import SortMergeToBroadcastWhyNot
from .smj_to_shj import SortMergeToShuffledHashWhyNot
from .verdicts import Candidate, Margin, QueryWhy

#: One explainer per rewrite kind, by kind (the kinds are DETECTORS').
EXPLAINERS: Dict[str, Explainer] = {e.kind: e for e in (
    CoalescedWhyNot(), SkewJoinWhyNot(), SortMergeToBroadcastWhyNot(),
    SortMergeToShuffledHashWhyNot(), EmptyRelationWhyNot(), LocalReadWhyNot(),
    DynamicPruningWhyNot(), DynamicPruningDroppedWhyNot(), RebalanceSkewWhyNot(),
    OneRowWhyNot(), LimitRemovedWhyNot())}


def query_settings(report: QueryReport, user: Mapping[str, Given],
                   version: Optional[str] = None, app_version: Optional[str] = None) -> Settings:
    """The settings of one query: its execution's (event log), the user's on top."""
    execution = report.query.execution
    configs = dict(execution.configs) if execution is not None else {}
    complete = execution.configs_complete if execution is not None else False
    return settings_for(configs, complete, version or app_version or None, user,
                        origin=report.query.origin or "event log")


def rewrite_skew(report: QueryReport, rewrite: Rewrite, version: Optional[str] = None
                 ) -> Tuple[SkewEvidence, ...]:
    """A skew-join rewrite's evidence (`skew_join.join_skew`): each side's partition sizes,
    held to the settings the query's input records and Spark's defaults for `version` (else
    the application's); () for another kind, or a join that does not read two shuffles."""
    join = rewrite.final_node
    if rewrite.kind != "skew-join" or join is None:
        return ()
    application = report.query.application
    settings = query_settings(report, {}, version, application.spark_version
                              if application is not None else None)
    return skew_of_join(join, settings, report.query.origin)


def rewrite_margins(report: QueryReport, version: Optional[str] = None
                    ) -> Tuple[Tuple[Margin, ...], ...]:
    """The margins of each rewrite of `report`, in its order (`why`'s for the same rewrite,
    `Explainer.margins_of`): each size decision behind it the input measures, held to the
    settings the query's input records and Spark's defaults for `version` (else the
    application's). A kind that holds no figure against a setting has none; a report without
    such a rewrite is answered without looking at its plans."""
    rewrites = report.rewrites
    if not any(EXPLAINERS[r.kind].measures for r in rewrites if r.kind in EXPLAINERS):
        return tuple(() for _ in rewrites)
    application = report.query.application
    settings = query_settings(report, {}, version, application.spark_version
                              if application is not None else None)
    found: Dict[int, Tuple[Margin, ...]] = {}
    for ctx, _ in query_contexts(report, settings):
        if ctx is None:
            continue
        for rewrite in ctx.happened:
            explainer = EXPLAINERS.get(rewrite.kind)
            if explainer is not None and explainer.measures and id(rewrite) not in found:
                found[id(rewrite)] = explainer.margins_of(rewrite, ctx)
    return tuple(found.get(id(r), ()) for r in rewrites)


def query_contexts(report: QueryReport, settings: Settings
                   ) -> Iterator[Tuple[Optional[Context], List[Candidate]]]:
    """Each adaptive plan of the query as its explainers see it (a `Context`), or None with
    the candidates that stand for a plan no explainer looks at: a plan AQE did not wrap
    (`static_plan`), a plan printed before its action ran (`before_action`)."""
    pairs = report_pairs(report)
    if not pairs:
        yield None, list(static_plan(report.query, settings))
    for pair in pairs:
        if pair.is_final_plan is False:
            yield None, [before_action(report.query)]
            continue
        own = {id(n) for n in pair.final_nodes()} | {id(n) for n in pair.initial_nodes()}
        happened = tuple(r for r in report.rewrites if _within(r, own))
        yield Context(pair=pair, query=report.query, settings=settings,
                      happened=happened), []


def explain_query(report: QueryReport, settings: Settings,
                  kinds: Optional[Tuple[str, ...]] = None) -> QueryWhy:
    """Every candidate of the query's adaptive plans, of `kinds` (all when None)."""
    candidates: List[Candidate] = []
    for ctx, standing in query_contexts(report, settings):
        candidates.extend(standing)
        if ctx is None:
            continue
        for kind, explainer in EXPLAINERS.items():
            if kinds is None or kind in kinds:
                candidates.extend(explainer.explain(ctx))
    if report.query.plan_changes is not None:
        from .planchange import with_plan_changes

        candidates = with_plan_changes(candidates, report.query.plan_changes)
    return QueryWhy(report.id, _distinct(candidates))


def _within(rewrite, own) -> bool:
    node = rewrite.final_node or rewrite.initial_node
    return node is not None and id(node) in own


def _distinct(candidates: List[Candidate]) -> Tuple[Candidate, ...]:
    """A plan printed twice (a reused stage) yields the same candidate twice: keep one."""
    return tuple(dict.fromkeys(candidates))


__all__ = ["EXPLAINERS", "explain_query", "query_contexts", "query_settings", "rewrite_skew",
           "rewrite_margins",
           "Given", "Settings", "SkewEvidence"]
