"""One execution as a comparison holds it: what AQE did and the figures around it, small.

A comparison reads two runs of perhaps thousands of executions each; it keeps an
`ExecutionSummary` per execution (a few hundred bytes: counts, figures, settings, a shape
signature), never the plan trees, so memory follows the number of executions, not the size
of the logs. The HTML page asks for each final plan's outline as well (`PlanLine`s).

Of each sort-merge join of an initial plan that AQE rewrote at or under, the summary keeps a
`JoinSite`: the join's place (the same join of the same query in another run has the same
place), the rewrites made at the join and at the shuffle read of each of its inputs: what
tells a rewrite that a stronger one took over from one lost (compare/replacement.py). Of
every rewrite it keeps the place of the initial operator it stands at (`rewrite_places`), and
of every subtree AQE replaced by an empty relation the places of the operators it swallowed
(`emptied`): what an empty relation took over.

A place names an operator of an initial plan the same way in two runs of one query, whatever
ids, sizes and strategies they printed: the adaptive plan's number in the query, the
operator's class (a join, an exchange, else its family), a digest of the planned operators
at and under it (as `shape_of` reads them), and its number among the operators of that plan
with the same class and digest, in printed order.

The shape (`shape_of`) is what pairs an execution with its counterpart when the descriptions
do not: a digest of the plan as the planner made it (the initial plan of an adaptive query,
else the plan printed), operator by operator, that ignores what changes from run to run
without the query changing: expression ids, plan ids, sizes, partition counts, statistics,
file paths, and the physical strategy a join or exchange took (a threshold that moved turns a
sort-merge join into a broadcast before AQE starts; the query is still the same).
"""

from __future__ import annotations

import hashlib
import dataclasses
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

from ..plan.model import CUT_OFF, Application, Node, Query
from ..plan.operators import family, is_join, is_query_stage, is_shuffle_read, join_type, \
    node_summary, shuffle_read_modes
from ..rewrites.engine import report_pairs
from ..rewrites.findings import QueryReport, describe, rewrite_kinds

#: Operators a planner adds or removes for the same query depending on thresholds, the join
#: strategy, the Spark line or AQE itself: left out of the shape, their children kept.
SHAPE_SKIPPED = frozenset({
    "AdaptiveSparkPlan", "AQEShuffleRead", "Exchange", "BroadcastExchange", "ReusedExchange",
    "Sort", "WholeStageCodegen", "InputAdapter", "ColumnarToRow", "RowToColumnar",
    "ShuffleQueryStage", "BroadcastQueryStage", "TableCacheQueryStage", "ResultQueryStage",
    "ReusedQueryStage", "Project", "CollectLimit", "ResultStage",
})

#: Query stages not counted: Spark 4 wraps every adaptive plan's root in a ResultQueryStage,
#: which 3.x has not; counting it would make every query of an upgrade differ.
UNCOUNTED_STAGES = frozenset({"ResultQueryStage"})

#: The rewrite kinds a `JoinSite` holds: those made at a join (its switch, its skew split) and
#: those made at the shuffle read of one of its inputs.
JOIN_KINDS = ("smj-to-bhj", "smj-to-shj", "skew-join")
INPUT_KINDS = ("coalesced", "local-read")

#: What stands between a join and the shuffle read of one of its inputs: the sort of a
#: sort-merge join, the broadcast (stage and exchange) of a broadcast join's build side, the
#: codegen and columnar wrappers. Anything else (an aggregate, another exchange) ends the
#: search: that read is not the join's input.
BETWEEN_JOIN_AND_READ = frozenset({
    "Sort", "WholeStageCodegen", "InputAdapter", "ColumnarToRow", "RowToColumnar",
    "BroadcastQueryStage", "BroadcastExchange", "Project",
})

#: The exchanges of an initial plan, one class of places (a threshold that moved plans a
#: broadcast where the other run shuffles).
EXCHANGES = frozenset({"Exchange", "ShuffleExchange", "BroadcastExchange"})

#: The kind an empty relation is (it takes over what the subtree it replaced made, but is
#: not itself placed: `rewrite_places`).
EMPTY_RELATION = "empty-relation"

#: Lines of a final plan's outline kept for the HTML page (a plan longer is cut, with a line
#: saying so).
MAX_PLAN_LINES = 400


@dataclass(frozen=True)
class PlanLine:
    """One operator of a final plan's outline: its depth, its label and arguments (as text),
    and its family, with a shuffle read's modes (what two runs' outlines are aligned on)."""

    depth: int
    label: str
    family: str


@dataclass(frozen=True)
class JoinSite:
    """A sort-merge join of an initial plan, and what AQE made at it and at its inputs."""

    #: Where the join stands: the adaptive plan's number in the query, a digest of the
    #: planned operators at and under the join (as `shape_of` reads them), and its number
    #: among the joins of that plan with the same digest. Two runs of one query give the same
    #: join the same place, whatever ids and strategies they printed.
    place: str
    #: The final join, as findings name it: `BroadcastHashJoin (15)`.
    join: str
    #: The kinds of `JOIN_KINDS` found at the final join.
    at_join: Tuple[str, ...] = ()
    #: Per input of the final join (left, right): the kinds of `INPUT_KINDS` found at the
    #: shuffle read that input reads through (none when it reads through none).
    inputs: Tuple[Tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class ExecutionSummary:
    """What a comparison keeps of one execution (or one plan of a text)."""

    source: str
    #: The SQL execution's id (event logs, History Server JSON); None for a plan text.
    execution_id: Optional[int]
    #: How reports name the query: the execution id, or the plan's number in a text.
    query_id: str
    description: str
    shape: str
    counts: Mapping[str, int]
    app_id: str = ""
    app_name: str = ""
    spark_version: str = ""
    adaptive: bool = False
    #: Shuffle partitions under the coalesced reads, and what coalescing left of them.
    partitions_before: Optional[int] = None
    partitions_after: Optional[int] = None
    #: AQE shuffle reads' `number of skewed partitions` and `... partition splits` (metrics).
    skewed_partitions: Optional[int] = None
    skew_splits: Optional[int] = None
    #: The final plan's joins by operator (`SortMergeJoin`, `BroadcastHashJoin`, ...).
    joins: Tuple[Tuple[str, int], ...] = ()
    #: The final plan's query stages (shuffle, broadcast, table cache; not 4.x's result stage).
    query_stages: int = 0
    duration_ms: Optional[int] = None
    #: The AQE settings the execution recorded (the application's, overlaid by its own).
    configs: Tuple[Tuple[str, str], ...] = ()
    #: Why each rewrite kind did not happen, where asked (the new side of a lost rewrite).
    why_not: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    #: The final plan's outline, when asked (the HTML page).
    plan: Tuple[PlanLine, ...] = ()
    line: int = 0
    #: The sort-merge joins of the initial plans that AQE rewrote at or under (`JoinSite`).
    join_sites: Tuple[JoinSite, ...] = ()
    #: Each rewrite (but an empty relation) whose initial operator is known: (kind, place).
    rewrite_places: Tuple[Tuple[str, str], ...] = ()
    #: Each operator of an initial plan that an empty relation replaced (it or an operator
    #: above it): (place, the empty relation as findings name it).
    emptied: Tuple[Tuple[str, str], ...] = ()
    #: Why this execution's plan may not be the one it ended with (`Query.unfinished`: no
    #: execution end where a cut or in-progress log ends, an isFinalPlan=false plan); "" when
    #: it had finished. A comparison with it is no verdict (`Pair.unfinished`).
    unfinished: str = ""
    #: An execution with no end in its log, its plan final (`Query.cut_off`): unfinished too
    #: where the log ends before its application does (`cut_off_unfinished`).
    cut_off: bool = False
    #: Of each size decision (kind, setting), the nearest to turning (`MarginFigure`).
    margins: Tuple["MarginFigure", ...] = ()

    @property
    def label(self) -> str:
        return f"execution {self.execution_id}" if self.execution_id is not None \
            else f"query {self.query_id}"

    def joins_dict(self) -> Dict[str, int]:
        return dict(self.joins)

    def configs_dict(self) -> Dict[str, str]:
        return dict(self.configs)

    def why_not_dict(self) -> Dict[str, Tuple[str, ...]]:
        return dict(self.why_not)


@dataclass(frozen=True)
class MarginFigure:
    """The margin of the size decisions of one kind against one setting in an execution: of
    its candidates', the smallest (`whynot.verdicts.Margin`, as `margin_text` says it)."""

    kind: str
    config: str
    percent: float
    side: str
    fired: bool
    text: str


#: The kinds whose decisions a comparison holds margins of.
MARGIN_KINDS = ("smj-to-bhj", "smj-to-shj", "skew-join", "coalesced")


def margin_figures(report: QueryReport, spark_version: str = ""
                   ) -> Tuple[MarginFigure, ...]:
    """Of each (kind, setting) of the query's size decisions, the margin nearest to turning."""
    from ..whynot import explain_query, query_settings
    from ..whynot.margins import margin_text

    if not report_pairs(report):
        return ()
    settings = query_settings(report, {}, app_version=spark_version or None)
    nearest: Dict[Tuple[str, str], MarginFigure] = {}
    for candidate in explain_query(report, settings, MARGIN_KINDS).candidates:
        for margin in candidate.margins:
            if margin.percent is None:
                continue
            key = (candidate.kind, margin.config)
            held = nearest.get(key)
            if held is None or margin.percent < held.percent:
                nearest[key] = MarginFigure(candidate.kind, margin.config, margin.percent,
                                            margin.side, margin.fired, margin_text(margin))
    return tuple(nearest[key] for key in sorted(nearest))


def _walk_depths(root: Node, skipped: frozenset, initial: bool = False
                 ) -> Iterator[Tuple[Node, int]]:
    """Each operator under `root` and its depth counted over the operators not `skipped`,
    depth first in printed order; no recursion (plans may be thousands of levels deep)."""
    stack: List[Tuple[Node, int]] = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        kept = family(node) not in skipped
        if kept:
            yield node, depth
        below = depth + 1 if kept else depth
        children = node.children
        if initial and node.is_adaptive_root and node.initial is not None:
            children = (node.initial,)
        for child in reversed(children):
            stack.append((child, below))
        for inner in reversed(node.inner):
            stack.append((inner, below))


def _shape_token(node: Node) -> str:
    name = family(node)
    if is_join(node):
        return f"Join[{join_type(node) or ''}]"
    return name


def shape_of(query: Query) -> str:
    """The query's shape: a short digest of its planned operators (see the module's doc)."""
    digest = hashlib.blake2b(digest_size=8)
    roots = [query.initial if query.initial is not None else query.root,
             *query.subquery_trees()]
    for root in roots:
        for node, depth in _walk_depths(root, SHAPE_SKIPPED, initial=True):
            digest.update(f"{depth}:{_shape_token(node)};".encode("utf-8", "surrogatepass"))
        digest.update(b"|")
    return digest.hexdigest()


def _subtree_digests(root: Node) -> Dict[int, bytes]:
    """Per operator of the tree (by `id`), a digest of the planned operators at and under it,
    as `shape_of` reads them (the operators it skips see through to their children); one
    walk, no recursion."""
    digests: Dict[int, bytes] = {}
    stack: List[Tuple[Node, bool]] = [(root, False)]
    while stack:
        node, below_done = stack.pop()
        if not below_done:
            stack.append((node, True))
            stack.extend((child, False) for child in node.children)
            continue
        below = [digests[id(child)] for child in node.children]
        if family(node) in SHAPE_SKIPPED and len(below) == 1:
            digests[id(node)] = below[0]
            continue
        digest = hashlib.blake2b(digest_size=8)
        if family(node) not in SHAPE_SKIPPED:
            digest.update(_shape_token(node).encode("utf-8", "surrogatepass"))
        digest.update(b"(" + b",".join(below) + b")")
        digests[id(node)] = digest.digest()
    return digests


def _input_read(node: Node) -> Optional[Node]:
    """The shuffle read a join's input reads through (`BETWEEN_JOIN_AND_READ`), if any."""
    while True:
        name = family(node)
        if name == "AQEShuffleRead":
            return node
        if name not in BETWEEN_JOIN_AND_READ or len(node.children) != 1:
            return None
        node = node.children[0]


def _place_class(node: Node) -> str:
    if is_join(node):
        return "Join"
    name = family(node)
    return "Exchange" if name in EXCHANGES else name


def initial_places(pair, number: int) -> Dict[int, str]:
    """The place (see the module's doc) of each operator of the pair's initial plan (its own:
    not those of nested adaptive plans, the pairs of their own), by `id`; none for a
    final-only plan."""
    if pair.initial is None:
        return {}
    digests = _subtree_digests(pair.initial)
    places: Dict[int, str] = {}
    seen: Dict[Tuple[str, bytes], int] = {}
    for node in pair.initial_nodes():  # printed order
        key = (_place_class(node), digests.get(id(node), b""))
        ordinal = seen.get(key, 0)
        seen[key] = ordinal + 1
        places[id(node)] = f"{number}:{key[0]}:{key[1].hex()}:{ordinal}"
    return places


def _places_of(pairs) -> Dict[int, str]:
    places: Dict[int, str] = {}
    for number, pair in enumerate(pairs):
        for key, place in initial_places(pair, number).items():
            places.setdefault(key, place)
    return places


def rewrite_places(report: QueryReport, pairs=None,
                   places: Optional[Dict[int, str]] = None) -> Tuple[Tuple[str, str], ...]:
    """(kind, place) of each rewrite of the report but an empty relation whose operator of
    the initial plan is known (a shuffle read's: the exchange it reads), in report order."""
    wanted = [rewrite for rewrite in report.rewrites
              if rewrite.kind != EMPTY_RELATION and rewrite.initial_node is not None]
    if not wanted:
        return ()
    if places is None:
        places = _places_of(report_pairs(report) if pairs is None else pairs)
    return tuple((rewrite.kind, places[id(rewrite.initial_node)]) for rewrite in wanted
                 if id(rewrite.initial_node) in places)


def emptied(report: QueryReport, pairs=None,
            places: Optional[Dict[int, str]] = None) -> Tuple[Tuple[str, str], ...]:
    """(place, empty relation) of each operator of an initial plan at or under one that an
    empty relation replaced (AQEPropagateEmptyRelation: a join with an empty side, an
    aggregate over nothing, the whole plan): what made anything there was swallowed with
    it. Of a join replaced by its other side, or a Union that dropped branches, only the
    operator itself and the sides that went (`Rewrite.went`): the kept side still runs.
    No recursion."""
    found: List[Tuple[str, str]] = []
    for rewrite in report.rewrites:
        if rewrite.kind != EMPTY_RELATION or rewrite.initial_node is None:
            continue
        if places is None:
            places = _places_of(report_pairs(report) if pairs is None else pairs)
        label = describe(rewrite.final_node) or EMPTY_RELATION
        stack = [rewrite.initial_node]
        if rewrite.went:
            place = places.get(id(rewrite.initial_node))
            if place is not None:
                found.append((place, label))
            stack = list(rewrite.went)
        while stack:
            node = stack.pop()
            place = places.get(id(node))
            if place is not None:
                found.append((place, label))
            stack.extend(node.children)
    return tuple(found)


def join_sites(report: QueryReport, pairs=None,
               places: Optional[Dict[int, str]] = None) -> Tuple[JoinSite, ...]:
    """The `JoinSite` of each sort-merge join of the report's initial plans that a rewrite of
    `JOIN_KINDS` or `INPUT_KINDS` was made at or under, in printed order. `pairs`: the
    report's plan pairs when the caller has them (`report_pairs`); `places`: their
    `initial_places`, likewise."""
    wanted = JOIN_KINDS + INPUT_KINDS
    at: Dict[int, List[str]] = {}
    for rewrite in report.rewrites:
        if rewrite.kind in wanted and rewrite.final_node is not None:
            at.setdefault(id(rewrite.final_node), []).append(rewrite.kind)
    if not at:
        return ()
    found: List[JoinSite] = []
    pairs = report_pairs(report) if pairs is None else pairs
    if places is None:
        places = _places_of(pairs)
    for pair in pairs:
        joins = pair.sort_merge_joins if pair.initial is not None else ()
        for initial, final in joins:
            if id(initial) not in places:
                continue
            at_join = tuple(kind for kind in at.get(id(final), ()) if kind in JOIN_KINDS)
            inputs = []
            for child in final.children:
                read = _input_read(child)
                inputs.append(tuple(kind for kind in at.get(id(read), ())
                                    if kind in INPUT_KINDS) if read is not None else ())
            if at_join or any(inputs):
                found.append(JoinSite(places[id(initial)], describe(final) or final.name,
                                      at_join, tuple(inputs)))
    return tuple(found)


def _final_trees(query: Query) -> Iterable[Node]:
    return (query.root, *query.subquery_trees())


def _final_nodes(query: Query) -> Iterator[Node]:
    for tree in _final_trees(query):
        yield from tree.walk()


def outline(query: Query) -> Tuple[PlanLine, ...]:
    """The final plan as lines (the HTML page's side by side)."""
    lines: List[PlanLine] = []
    for tree in _final_trees(query):
        for node, depth in _walk_depths(tree, frozenset()):
            if len(lines) >= MAX_PLAN_LINES:
                lines.append(PlanLine(0, f"... (the plan is longer than {MAX_PLAN_LINES} "
                                         "operators)", ""))
                return tuple(lines)
            summary = node_summary(node)
            text = describe(node) or node.name
            if summary:
                text += " " + (summary if len(summary) <= 160 else summary[:157] + "...")
            key = family(node)
            if is_shuffle_read(node):  # a read that turned local or coalesced changed
                key += ":" + ",".join(shuffle_read_modes(node))
            lines.append(PlanLine(depth, text, key))
    return tuple(lines)


def summarize(report: QueryReport, source: str, application: Optional[Application] = None,
              plan: bool = False) -> ExecutionSummary:
    """The summary of one diffed query; `plan`: with its final plan's outline."""
    query = report.query
    execution = query.execution
    application = query.application or application
    before = after = skewed = splits = None
    for rewrite in report.rewrites:
        if rewrite.kind == "coalesced":
            value = rewrite.numbers.get("partitions_before")
            if isinstance(value, int):
                before = (before or 0) + value
            value = rewrite.numbers.get("partitions_after")
            if isinstance(value, int):
                after = (after or 0) + value
    joins: Dict[str, int] = {}
    stages = 0
    for node in _final_nodes(query):
        if is_join(node):
            joins[family(node)] = joins.get(family(node), 0) + 1
        elif is_query_stage(node):
            if family(node) not in UNCOUNTED_STAGES:
                stages += 1
        elif is_shuffle_read(node):
            metrics = node.metrics
            if metrics:  # a read with run-time metrics and none of skew split nothing
                skewed, splits = skewed or 0, splits or 0
            if "number of skewed partitions" in metrics:
                skewed = (skewed or 0) + metrics["number of skewed partitions"]
            if "number of skewed partition splits" in metrics:
                splits = (splits or 0) + metrics["number of skewed partition splits"]
    counts = report.counts
    pairs = report_pairs(report)
    places = _places_of(pairs) if report.rewrites else {}
    return ExecutionSummary(
        source=query.source or source,
        execution_id=execution.execution_id if execution is not None else None,
        query_id=report.id,
        description=(execution.description if execution is not None else "") or "",
        shape=shape_of(query),
        counts={kind: counts.get(kind, 0) for kind in rewrite_kinds()},
        app_id=application.app_id if application is not None else "",
        app_name=application.name if application is not None else "",
        spark_version=application.spark_version if application is not None else "",
        adaptive=bool(pairs),
        partitions_before=before, partitions_after=after,
        skewed_partitions=skewed, skew_splits=splits,
        joins=tuple(sorted(joins.items())),
        query_stages=stages,
        duration_ms=execution.duration_ms if execution is not None else None,
        configs=tuple(sorted(execution.configs.items())) if execution is not None else (),
        plan=outline(query) if plan else (),
        line=query.line,
        join_sites=join_sites(report, pairs, places),
        rewrite_places=rewrite_places(report, pairs, places),
        emptied=emptied(report, pairs, places),
        unfinished=query.unfinished,
        cut_off=query.cut_off,
        margins=margin_figures(report, application.spark_version
                               if application is not None else ""),
    )


def cut_off_unfinished(summary: ExecutionSummary) -> ExecutionSummary:
    """The summary of an execution of a log that ends before its application does: one the
    log's end cut off while it ran (`Query.cut_off`) is unfinished, as `check` holds it."""
    if not summary.cut_off:
        return summary
    return dataclasses.replace(summary, unfinished=CUT_OFF)


def why_not(report: QueryReport, kinds: Tuple[str, ...], spark_version: str = "",
            most: int = 5) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    """Why each of `kinds` did not happen in this query: one line per place it could have
    (at most `most` per kind), from the why-not answers (`aqe-inspect why`)."""
    from ..whynot import explain_query, query_settings
    from ..whynot.verdicts import HAPPENED

    settings = query_settings(report, {}, app_version=spark_version or None)
    answer = explain_query(report, settings, kinds)
    found: Dict[str, List[str]] = {kind: [] for kind in kinds}
    for candidate in answer.candidates:
        if candidate.verdict == HAPPENED or candidate.kind not in found:
            continue
        lines = found[candidate.kind]
        if len(lines) < most:
            lines.append(f"{candidate.node}: {candidate.summary()}")
    for kind, lines in found.items():
        if not lines:
            lines.append("no place in this plan where the rule could apply")
    return tuple((kind, tuple(lines)) for kind, lines in found.items())


def summarize_built(query: Query, query_id: str, source: str, spark_version: str = ""
                    ) -> ExecutionSummary:
    """`summarize` of a query as an event log's reader builds it (`LogStream.built_into`, in
    the pool's processes for a long log): only the small summary comes back."""
    from ..rewrites.engine import diff_query

    return summarize(diff_query(query, query_id), source)


def summarize_built_with_plan(query: Query, query_id: str, source: str,
                              spark_version: str = "") -> ExecutionSummary:
    """`summarize_built` with the final plan's outline (the HTML page)."""
    from ..rewrites.engine import diff_query

    return summarize(diff_query(query, query_id), source, plan=True)
