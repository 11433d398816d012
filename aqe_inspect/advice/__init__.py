"""What to change so that AQE rewrites where it did not: for each adaptive decision the why-not
answers found blocked (or, for skew, held back by a setting raised above Spark's default), the
smallest change of a setting that makes it fire given the run's measured figures.

    changes.py      Change, Fixed, QueryAdvice, Advice: what an advice holds; the merged settings
    values.py       values Spark accepts, chosen with headroom from measured figures
    base.py         what every adviser sees (Seen), a setting's current value, the Spark lines
                    that have a key
    broadcast.py    smj-to-bhj: the adaptive and static broadcast thresholds, the non-empty
                    partition ratio, the partitioning expand limit
    shuffled_hash.py  smj-to-shj: maxShuffledHashJoinLocalMapThreshold
    skew.py         skew-join: enabled, factor, threshold, forceOptimizeSkewedJoin
    coalescing.py   coalesced: enabled; parallelismFirst / minPartitionNum where coalescing
                    stopped at the core-count floor short of the advisory size; a user's
                    repartition(n) no setting changes
    adaptive.py     AQE off
    rules.py        an excluded AQE optimizer rule; a rewrite's own switch off

The advisers read the why-not explainers' answers (their verdicts and the operators they name)
and the run-time sizes of `whynot.evidence`; they derive nothing those know already.

May import: `whynot`, `rewrites`, `plan`, `errors`.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple

from ..plan.model import Node
from ..plan.operators import join_type
from ..rewrites.findings import QueryReport, describe
from ..whynot import EXPLAINERS, query_contexts
from ..whynot.base import BROADCAST_BUILDS
from ..whynot.evidence import join_sides, side_size
from ..whynot.settings import Settings
from ..whynot.smj_to_bhj import ADAPTIVE_THRESHOLD, STATIC_THRESHOLD, stayed_joins
from ..whynot.verdicts import BLOCKED, CANNOT_TELL, HAPPENED, NOT_NEEDED, Candidate
from .adaptive import AdaptiveAdviser
from .base import Adviser, Seen
from .broadcast import BroadcastAdviser
from .changes import Advice, Change, Current, Fixed, QueryAdvice
from .coalescing import CoalescingAdviser
from .rules import RULES, SWITCHES, ExcludedRuleAdviser, SwitchAdviser
from .shuffled_hash import ShuffledHashAdviser
from .skew import SkewAdviser

#: One adviser per kind that a setting can make fire.
ADVISERS: Dict[str, Adviser] = {a.kind: a for a in (
    BroadcastAdviser(), ShuffledHashAdviser(), SkewAdviser(), CoalescingAdviser(),
    AdaptiveAdviser(), *(ExcludedRuleAdviser(k) for k in RULES),
    *(SwitchAdviser(k) for k in SWITCHES))}
#: Kinds whose not-needed decisions may still be advised on (a setting raised above Spark's
#: default held the data back): the adviser decides.
ADVISED_WHEN_NOT_NEEDED = ("skew-join",)
#: Kinds whose cannot-tell decisions may still be advised on, saying the advice is incomplete
#: (a broadcast side within the threshold, how many of its partitions hold data not recorded).
ADVISED_WHEN_CANNOT_TELL = ("smj-to-bhj",)
#: Kinds whose rewrites that happened may still be advised on: coalescing that stopped at the
#: core-count floor short of the advisory size (the adviser decides).
ADVISED_WHEN_HAPPENED = ("coalesced",)


def advise_query(report: QueryReport, settings: Settings,
                 kinds: Optional[Tuple[str, ...]] = None, version: str = "") -> QueryAdvice:
    """The advice for one query: each decision of `kinds` (all when None) its explainer found
    blocked, advised by the adviser of its kind; what the input lacks, said."""
    changes: List[Change] = []
    fixed: List[Fixed] = []
    incomplete: List[str] = []
    joins: List[Tuple[str, int]] = []
    query = report.query
    seen_any = False
    nothing = ""
    for ctx, standing in query_contexts(report, settings):
        for found in standing:
            if found.verdict == CANNOT_TELL:
                incomplete.append(_lacks(found))
            elif found.verdict == NOT_NEEDED:
                nothing = found.reasons[0].text if found.reasons else "nothing to re-plan"
            elif found.verdict == BLOCKED:
                # AQE off blocks every kind: advised whatever kinds were asked for.
                seen_any = True
                shell = _static_context(report, settings)
                for item in ADVISERS["adaptive"].advise(Seen(shell, query.root, found)):
                    (changes if isinstance(item, Change) else fixed).append(item)
        if ctx is None:
            continue
        seen_any = True
        nodes = {(describe(n) or n.name, n.line): n for n in ctx.pair.final_nodes()}
        for join in stayed_joins(ctx):
            smallest = _smallest_build(join, ctx)
            if smallest is not None:
                joins.append((describe(join) or join.name, smallest))
        for kind, explainer in EXPLAINERS.items():
            if kinds is not None and kind not in kinds:
                continue
            adviser = ADVISERS.get(kind)
            for found in explainer.explain(ctx):
                if found.verdict == CANNOT_TELL and adviser is not None:
                    # A shuffled hash join is off by Spark's default: what its answer lacks
                    # matters only when it was asked for.
                    if kind != "smj-to-shj" or (kinds is not None and kind in kinds):
                        incomplete.append(_lacks(found))
                    if kind not in ADVISED_WHEN_CANNOT_TELL:
                        continue
                if adviser is None or not (found.verdict in (BLOCKED, CANNOT_TELL) or (
                        found.verdict == NOT_NEEDED and kind in ADVISED_WHEN_NOT_NEEDED) or (
                        found.verdict == HAPPENED and kind in ADVISED_WHEN_HAPPENED)):
                    continue
                node = nodes.get((found.node, found.line))
                if node is None:
                    continue
                asked = kinds is not None and kind in kinds
                for item in adviser.advise(Seen(ctx, node, found, asked)):
                    if isinstance(item, str):
                        incomplete.append(item)
                    else:
                        (changes if isinstance(item, Change) else fixed).append(item)
    if query.unfinished:
        incomplete.insert(0, query.unfinished)
    elif query.cut_off:
        incomplete.insert(0, "its execution had not ended where the log ends: its last "
                             "decisions may be missing")
    if query.incomplete:
        incomplete.append(f"{query.incomplete}: operators may be missing")
    if not seen_any and not nothing:
        nothing = "no adaptive plan to advise on"
    changes, instead = _one_outcome(list(dict.fromkeys(changes)))
    return QueryAdvice(
        id=report.id, title=report.title, label=query.label, changes=changes,
        instead=instead, fixed=tuple(dict.fromkeys(fixed)),
        incomplete=tuple(dict.fromkeys(i for i in incomplete if i)),
        nothing=nothing if not changes and not fixed else "", spark_version=version,
        joins=tuple(joins))


#: The join rewrites in the order AQE reaches them at one join: an empty side takes the join
#: out before any join is planned (AQEPropagateEmptyRelation, AQE's logical re-optimizer),
#: then the planner prefers a broadcast, then a shuffled hash join, then a sort-merge join
#: split for skew.
JOIN_OUTCOMES = ("empty-relation", "smj-to-bhj", "smj-to-shj", "skew-join")


def _one_outcome(changes: List[Change]) -> Tuple[Tuple[Change, ...], Tuple[Change, ...]]:
    """Each join gets the changes of one outcome, the one Spark prefers; the others'
    changes are given as what could be done instead."""
    best: Dict[Tuple[str, int], int] = {}
    for change in changes:
        if change.kind in JOIN_OUTCOMES:
            where = (change.node, change.line)
            rank = JOIN_OUTCOMES.index(change.kind)
            best[where] = min(best.get(where, rank), rank)
    kept, other = [], []
    for change in changes:
        if change.kind in JOIN_OUTCOMES and \
                JOIN_OUTCOMES.index(change.kind) > best[(change.node, change.line)]:
            other.append(change)
        else:
            kept.append(change)
    return tuple(kept), tuple(other)


def _lacks(found: Candidate) -> str:
    needs = "; ".join(found.needs) if found.needs else found.summary()
    return f"{found.kind} at {found.node}: needs {needs}" if found.needs else \
        f"{found.kind} at {found.node}: {needs}"


def _static_context(report: QueryReport, settings: Settings):
    """A context for a plan AQE did not wrap (the adaptive adviser reads its query and
    settings only)."""
    from ..rewrites.detectors.base import PlanPair
    from ..whynot.base import Context

    query = report.query
    pair = PlanPair(final=query.root, initial=query.root, is_final_plan=None, where="main",
                    same_ids=True, subqueries=query.subqueries)
    return Context(pair=pair, query=query, settings=settings)


def _smallest_build(join: Node, ctx) -> Optional[int]:
    builds = BROADCAST_BUILDS.get(join_type(join) or "", (True, True))
    sizes = []
    for index, side in enumerate(join_sides(join)):
        if builds[index]:
            size = side_size(side, ctx.origin)
            if size is not None:
                sizes.append(size.value.high)
    return min(sizes) if sizes else None


def finish(advice: Advice) -> Advice:
    """The effects only the whole application shows: the other joins a broadcast threshold,
    at the value the advice comes to, would switch too."""
    merged = dict(advice.settings())
    queries = []
    for query in advice.queries:
        changed = []
        for change in query.changes:
            if change.key in (ADAPTIVE_THRESHOLD, STATIC_THRESHOLD) and change.number:
                changed.append(dataclasses.replace(change, effects=change.effects + (
                    _others(advice, query, change, merged.get(change.key, change.value)),)))
            else:
                changed.append(change)
        queries.append(dataclasses.replace(query, changes=tuple(changed)))
    return dataclasses.replace(advice, queries=tuple(queries))


def _others(advice: Advice, own: QueryAdvice, change: Change, value: str) -> str:
    from ..plan.units import conf_bytes

    try:
        limit = conf_bytes(value)
    except ValueError:  # pragma: no cover - the advisers write values Spark reads
        return ""
    try:
        before = conf_bytes(change.current.value) if change.current.value else None
    except ValueError:
        before = None
    others = []
    for query in advice.queries:
        for name, size in query.joins:
            if query is own and name == change.node:
                continue
            if size <= limit and (before is None or before < 0 or size > before):
                others.append(f"{name} of {query.title.lower()}" if query is not own
                              else f"{name} of this query")
    if not others:
        return (f"at {change.key}={value}, no other sort-merge join of the input switches "
                "(by the sizes it records)")
    shown = ", ".join(others[:8]) + (f" and {len(others) - 8} more" if len(others) > 8 else "")
    return f"at {change.key}={value}, these sort-merge joins would be broadcast too: {shown}"


__all__ = ["ADVISERS", "Advice", "Change", "Current", "Fixed", "QueryAdvice", "advise_query",
           "finish"]
