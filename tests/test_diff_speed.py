"""The diff's shortcuts answer as the plain algorithms they stand for.

The detectors read one index per plan pair (`PlanPair`: one walk, families, normalised texts,
stage statistics) and the alignment compares candidate subtrees node by node before it falls
back to structural signatures. Every output of every sample is held byte for byte by
tests/test_recorded_outputs.py; here random plans hold the shortcuts to the algorithms they
replaced (the alignment's lookup by signatures of the whole initial tree, the full split, the
built text, the walk below each node), and trees thousands of levels deep go through them.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.plan import align
from aqe_inspect.plan.align import Alignment, _Signatures, _shape_family, _through_aqe, \
    expression_ids
from aqe_inspect.plan.model import Node, Query
from aqe_inspect.plan.operators import family, mentions, normalized_text, split_top_level
from aqe_inspect.rewrites.detectors.base import InitialTree, PlanPair, own_nodes, stage_statistics, \
    walk_own
from aqe_inspect.rewrites.engine import diff_query

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

NAMES = ["Exchange", "Project", "Filter", "Scan", "FileScan", "HashAggregate", "Sort",
         "AQEShuffleRead", "ShuffleQueryStage", "BroadcastHashJoin", "SortMergeJoin",
         "GpuProject"]
ARGS = ["", "[a#1]", "[a#1, b#2]", "hashpartitioning(a#1, 20) [plan_id=3]",
        "hashpartitioning(a#1, 20) [plan_id=7]", "coalesced", "[b#2], [a#1], Inner",
        "[a#1 ASC NULLS FIRST], true, 0", "skew=true"]


@st.composite
def trees(draw, depth: int = 4) -> Node:
    """A small random plan tree built bottom-up (no recursion in what is tested)."""
    name = draw(st.sampled_from(NAMES))
    args = draw(st.sampled_from(ARGS))
    details = draw(st.sampled_from([{}, {"Arguments": args}, {"Keys": "[a#1]"}]))
    statistics = draw(st.sampled_from([None, None, "sizeInBytes=1.0 B"]))
    children: Tuple[Node, ...] = ()
    if depth > 0:
        children = tuple(draw(st.lists(trees(depth=depth - 1), max_size=2)))
    return Node(name=name, args=args, id=draw(st.sampled_from([None, 1, 2, 3])),
                details=details, children=children, statistics=statistics)


def _walk(root: Node) -> List[Node]:
    return list(root.walk(inner=False))


class _PlainAlignment:
    """The lookup as it was: signatures of every initial node, then (family, text)."""

    def __init__(self, initial: Node, same_ids: bool):
        self.texts: Dict[int, str] = {}
        self.signatures = _Signatures(self.text)
        self.shapes = _Signatures()
        self.nodes = _walk(initial)
        self.by_id = {}
        if same_ids:
            for node in self.nodes:
                if node.id is not None:
                    self.by_id.setdefault(node.id, node)

    def text(self, node: Node) -> str:
        return self.texts.setdefault(id(node), normalized_text(node))

    def grouped(self, key) -> Dict:
        index: Dict = {}
        for node in self.nodes:
            index.setdefault(key(node), []).append(node)
        return index

    def initial_for(self, final_node: Node) -> Optional[Node]:
        target = _through_aqe(final_node)
        if target.id is not None and target.id in self.by_id:
            return self.by_id[target.id]
        same = self.grouped(self.signatures.of).get(self.signatures.of(target))
        if same:
            return same[0]
        shallow = self.grouped(lambda n: (family(n), self.text(n))).get(
            (family(target), self.text(target)))
        if shallow:
            return shallow[0]
        wanted = expression_ids(target)
        shaped = self.grouped(self.shapes.of).get(self.shapes.of(target))
        if shaped:
            return max(shaped, key=lambda node: len(wanted & expression_ids(node)))
        order = {id(node): number for number, node in enumerate(self.nodes)}
        shared: Dict[int, int] = {}
        nodes: Dict[int, Node] = {}
        for node in self.nodes:
            common = len(wanted & expression_ids(node))
            if common and _shape_family(node) == _shape_family(target):
                shared[id(node)], nodes[id(node)] = common, node
        if not shared:
            return None
        return nodes[max(shared, key=lambda key: (shared[key], -order[key]))]


@SETTINGS
@given(trees(), trees(), st.booleans())
def test_alignment_answers_as_the_signatures_of_the_whole_initial_tree(initial, final, same_ids):
    new = Alignment(initial, final, same_ids)
    plain = _PlainAlignment(initial, same_ids)
    for node in _walk(final):
        assert new.initial_for(node) is plain.initial_for(node)


def _copy(root: Node) -> Node:
    """A new tree equal to `root`, every node a new object (built bottom-up, no recursion)."""
    order: List[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node.children)
    made: Dict[int, Node] = {}
    for node in reversed(order):
        made[id(node)] = dataclasses.replace(
            node, children=tuple(made[id(child)] for child in node.children))
    return made[id(root)]


@st.composite
def wide_unions(draw) -> Tuple[Node, Node]:
    """An initial and a final Union of many branches, each a copy of one of a few random
    subtrees: many candidates of one text for each lookup, as a DataFrame united with itself
    (or with copies of itself) prints."""
    pool = draw(st.lists(trees(depth=3), min_size=1, max_size=4))
    initial, final = (Node(name="Union", children=tuple(
        _copy(pool[index]) for index in draw(st.lists(
            st.integers(min_value=0, max_value=len(pool) - 1), min_size=1, max_size=14))))
        for _ in range(2))
    return initial, final


@SETTINGS
@given(wide_unions(), st.booleans(), st.sampled_from([0, 1, 8]))
def test_alignment_of_wide_unions_answers_as_the_whole_initial_tree(pair, same_ids, in_turn):
    """Past the candidates it compares in turn (`_IN_TURN`, made smaller here so small trees
    reach it), a lookup answers through its indexes as the plain algorithm does."""
    initial, final = pair
    saved = align._IN_TURN
    align._IN_TURN = in_turn
    try:
        new = Alignment(initial, final, same_ids)
        plain = _PlainAlignment(initial, same_ids)
        for node in _walk(final):
            assert new.initial_for(node) is plain.initial_for(node)
    finally:
        align._IN_TURN = saved


def _chain(names: List[str], args: str = "[a#1]") -> Node:
    node = Node(name="Scan", args="parquet t [a#1]")
    for name in reversed(names):
        node = Node(name=name, args=args, children=(node,))
    return node


def test_alignment_past_its_comparison_budget_uses_signatures():
    """Equal subtrees longer than one lookup may compare pair by pair (and one that differs
    only at the bottom) are told apart by signatures, as before."""
    initial = Node(name="Union", children=(_chain(["Exchange"] + ["Project"] * 700 + ["Filter"]),
                                           _chain(["Exchange"] + ["Project"] * 701)))
    final = _chain(["AQEShuffleRead", "ShuffleQueryStage", "Exchange"] + ["Project"] * 701)
    exchange = final.children[0].children[0]
    found = Alignment(initial, final, same_ids=False).initial_for(exchange)
    assert found is initial.children[1]
    assert found is _PlainAlignment(initial, False).initial_for(exchange)


@SETTINGS
@given(st.text(alphabet="[](){},'\"` ab", max_size=40), st.integers(min_value=1, max_value=4))
def test_leading_parts_are_the_first_of_the_full_split(text, first):
    assert split_top_level(text, first) == split_top_level(text)[:first]


@SETTINGS
@given(trees(depth=0), st.sampled_from(["dynamicpruning#", "plan_id=", "a#1,", "skew"]))
def test_mentions_is_a_search_of_the_built_text(node, word):
    assert mentions(node, word) == (word in node.text)


@SETTINGS
@given(trees(), trees())
def test_the_pair_index_holds_the_plain_walks(initial, final):
    root = Node(name="AdaptiveSparkPlan", children=(final,), initial=initial,
                is_final_plan=True)
    pair = PlanPair(final=root.children[0], initial=initial, is_final_plan=True)
    nodes, families = own_nodes(pair.final)
    assert list(nodes) == list(walk_own(pair.final))
    assert list(families) == [family(node) for node in nodes]
    for name in set(NAMES) | {"Exchange", "Scan"}:
        assert list(pair.final_of(name)) == [n for n in walk_own(pair.final)
                                             if family(n) == name]
        assert list(pair.initial_of(name)) == [n for n in walk_own(initial)
                                               if family(n) == name]
    for node in _walk(pair.final):
        assert pair.stage_statistics(node) == stage_statistics(node)
        assert pair.normalized_text(node) == normalized_text(node)


def _stacked(top: List[Tuple[str, str]], below: Node) -> Node:
    node = below
    for name, args in reversed(top):
        node = Node(name=name, args=args, children=(node,))
    return node


def test_five_thousand_levels_through_every_detector():
    """A plan 5,000 operators deep (initial and final) is diffed without recursion: the
    pair's walks, the alignment's comparisons and signatures, the logical rules' index."""
    depth = 5000
    initial = _stacked([("HashAggregate", "(keys=[a#1], functions=[])"),
                        ("Exchange", "hashpartitioning(a#1, 20) [plan_id=3]"),
                        ("Sort", "[a#1 ASC NULLS FIRST], true, 0")],
                       _chain(["Project"] * depth))
    final = _stacked([("HashAggregate", "(keys=[a#1], functions=[])"),
                      ("AQEShuffleRead", "coalesced"), ("ShuffleQueryStage", "0"),
                      ("Exchange", "hashpartitioning(a#1, 20) [plan_id=9]")],
                     _chain(["Project"] * depth))
    root = Node(name="AdaptiveSparkPlan", args="isFinalPlan=true", children=(final,),
                initial=initial, is_final_plan=True)
    report = diff_query(Query(root=root), "1")
    kinds = [rewrite.kind for rewrite in report.rewrites]
    assert "coalesced" in kinds and "one-row" in kinds  # the global sort went
    coalesced = next(r for r in report.rewrites if r.kind == "coalesced")
    assert coalesced.initial_node is initial.children[0]  # the exchange, through the read
    pair = PlanPair(final=final, initial=initial, is_final_plan=True, same_ids=False)
    deepest_final = _walk(final)[-2]
    assert pair.initial_for(deepest_final) is _walk(initial)[-2]


# Plans with what the pair's one walk of each tree must handle as the separate walks did:
# nested adaptive plans, inner plans (subqueries under a scan), an EmptyRelation over the
# logical plan it replaced, pruning filters, reused exchanges and subqueries.
RICH_NAMES = NAMES + ["CollectLimit", "SortAggregate", "AdaptiveSparkPlan", "EmptyRelation", "ReusedExchange",
                      "SubqueryBroadcast", "ReusedSubquery", "BroadcastExchange",
                      "BroadcastQueryStage", "LocalTableScan", "ShuffleExchange"]
RICH_ARGS = ARGS + ["dynamicpruning#4", "[p#2], [dynamicpruningexpression(p#2 IN "
                    "dynamicpruning#4)]", "<empty>, [a#1]", "dynamicpruningexpression(true)",
                    "100, [a#1]", "(keys=[a#1], functions=[])"]


@st.composite
def rich_trees(draw, depth: int = 4) -> Node:
    """A random plan tree with inner plans and nested adaptive plans (built bottom-up)."""
    name = draw(st.sampled_from(RICH_NAMES))
    args = draw(st.sampled_from(RICH_ARGS))
    details = draw(st.sampled_from([{}, {"Arguments": args}, {"PartitionFilters": args}]))
    children: Tuple[Node, ...] = ()
    inner: Tuple[Node, ...] = ()
    if depth > 0:
        children = tuple(draw(st.lists(rich_trees(depth=depth - 1), max_size=2)))
        inner = tuple(draw(st.lists(rich_trees(depth=depth - 2), max_size=1))) \
            if depth > 1 else ()
    return Node(name=name, args=args, id=draw(st.sampled_from([None, 1, 2, 3])),
                details=details, children=children, inner=inner)


def _plain_initial_with_depth(root: Node) -> List[Tuple[Node, bool, str]]:
    """The logical-rules detectors' walk of the initial plan as it was."""
    found: List[Tuple[Node, bool, str]] = []
    stack = [(root, False)]
    while stack:
        node, under = stack.pop()
        name = family(node)
        found.append((node, under, name))
        if node is not root and node.name == "AdaptiveSparkPlan":
            continue
        below = under or name in ("Exchange", "ShuffleExchange", "BroadcastExchange")
        stack.extend([(child, below) for child in reversed(node.children)
                      if child.name != "AdaptiveSparkPlan"])
    return found


def _plain_own_nodes(root: Node) -> List[Node]:
    """`walk_own` as it was written first: nested adaptive plans and an EmptyRelation's
    logical plan left out, inner plans before children."""
    found: List[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        found.append(node)
        if (node is not root and node.name == "AdaptiveSparkPlan") \
                or family(node) == "EmptyRelation":
            continue
        below = [n for n in (*node.inner, *node.children) if n.name != "AdaptiveSparkPlan"]
        stack.extend(reversed(below))
    return found


@SETTINGS
@given(rich_trees())
def test_one_walk_of_the_initial_plan_holds_each_plain_walk(initial):
    tree = InitialTree(initial)
    assert list(tree.every) == _walk(initial)
    assert list(tree.every_family) == [family(node) for node in _walk(initial)]
    assert list(tree.own_with_exchange_above) == _plain_initial_with_depth(initial)
    nodes, families = tree.own_nodes()
    assert list(nodes) == _plain_own_nodes(initial) == list(own_nodes(initial)[0])
    assert list(families) == [family(node) for node in nodes]


@SETTINGS
@given(rich_trees(), rich_trees(), st.booleans(), st.randoms(use_true_random=False))
def test_the_alignment_on_the_pairs_walk_answers_as_the_plain_lookup(initial, final, same_ids,
                                                                     rng):
    """Given the pair's walk of the initial plan, and asked again in any order (the equal
    subtree pairs it remembers), the alignment answers as the plain lookup."""
    tree = InitialTree(initial)
    new = Alignment(initial, final, same_ids, initial_nodes=tree.every,
                    initial_families=tree.every_family)
    plain = _PlainAlignment(initial, same_ids)
    asked = _walk(final) * 2
    rng.shuffle(asked)
    for node in asked:
        assert new.initial_for(node) is plain.initial_for(node)


def _plain_observations(query: Query) -> List[Tuple[str, int, str]]:
    """The observations as `engine._observations` first made them."""
    from aqe_inspect.plan.operators import QUERY_STAGES
    from aqe_inspect.rewrites.findings import describe

    seen = []
    for node in [n for tree in (query.root, *query.subquery_trees()) for n in tree.walked()]:
        name = family(node)
        if name == "ReusedExchange":
            seen.append(("reused-exchange", node,
                         f"{describe(node)} reuses an exchange computed once"))
        elif name == "SubqueryBroadcast" or mentions(node, "dynamicpruning#"):
            seen.append(("dynamic-pruning", node,
                         f"{describe(node)} uses dynamic partition pruning"))
        elif name == "ReusedSubquery":
            seen.append(("reused-subquery", node, f"{describe(node)} reuses a subquery's result"))
        elif name in QUERY_STAGES:
            seen.append(("query-stage", node,
                         f"{describe(node)} is a query stage AQE ran on its own"))
    return [(kind, id(node), message) for kind, node, message in seen]


@SETTINGS
@given(rich_trees(), st.lists(rich_trees(depth=2), max_size=2))
def test_one_walk_of_the_query_serves_the_pairs_and_the_observations(root, subquery_trees):
    from aqe_inspect.plan.model import Subquery
    from aqe_inspect.rewrites.detectors.base import plan_pairs, query_trees
    from aqe_inspect.rewrites.engine import _observations

    subqueries = tuple(Subquery(index=number, hosting_operator_id=None,
                                hosting_expression="", tree=tree)
                       for number, tree in enumerate([*subquery_trees, None], 1))
    query = Query(root=root, subqueries=subqueries)
    walked = [tree.walked() for tree in query_trees(query)]
    observed = [(o.kind, id(o.node), o.message) for o in _observations(query, walked)]
    assert observed == _plain_observations(query)
    assert observed == [(o.kind, id(o.node), o.message) for o in _observations(query)]
    shared, plain = plan_pairs(query, walked), plan_pairs(query)
    assert [(p.final, p.initial, p.where, p.is_final_plan) for p in shared] == \
        [(p.final, p.initial, p.where, p.is_final_plan) for p in plain]
    for one, other in zip(shared, plain):
        assert all(a is b for a, b in zip((one.final, one.initial), (other.final, other.initial)))


@SETTINGS
@given(rich_trees())
def test_the_pairs_exchange_below_is_the_plain_search(final):
    from aqe_inspect.plan.operators import partitioning
    from aqe_inspect.rewrites.detectors.base import exchange_below

    pair = PlanPair(final=final, initial=None, is_final_plan=True)
    for node in _walk(final) * 2:
        assert pair.exchange_below(node) is exchange_below(node)
        assert pair.partitioning(node) == partitioning(node)


def _plain_is_global_sort(node: Node) -> bool:
    if family(node) != "Sort":
        return False
    parts = split_top_level(node.details.get("Arguments") or node.args, 2)
    return len(parts) >= 2 and parts[1] == "true"


def _plain_category(node: Node) -> str:
    name = node.name
    if "Aggregate" in name:
        return "aggregate"
    if "Limit" in name or "TakeOrdered" in name:
        return "limit"
    if "Sort" in name and "SortMergeJoin" not in name and "SortAggregate" not in name:
        parts = split_top_level(node.details.get("Arguments") or node.args, 2)
        return "" if len(parts) >= 2 and parts[1] == "false" else "sort"
    return ""


@SETTINGS
@given(st.sampled_from(["Sort", "GpuSort", "SortExecTransformer", "Project"]),
       st.text(alphabet="[](),'` atruefls0", max_size=30), st.booleans())
def test_a_sorts_order_is_read_as_the_full_split_reads_it(name, args, in_details):
    from aqe_inspect.rewrites.detectors.logical_rules import _category, is_global_sort

    node = Node(name=name, args="" if in_details else args,
                details={"Arguments": args} if in_details else {})
    assert is_global_sort(node) == _plain_is_global_sort(node)
    assert _category(node) == _plain_category(node)


@SETTINGS
@given(rich_trees(), rich_trees())
def test_removed_operators_of_some_families_are_those_of_all(initial, final):
    """Given the families `wanted` can pick, the final operators are counted from the pair's
    index family by family: the same operators removed as when every operator is asked."""
    from aqe_inspect.rewrites.detectors.logical_rules import LIMITS, ONE_ROW_FAMILIES, \
        is_aggregate, is_global_sort, is_limit, removed_operators

    pair = PlanPair(final=final, initial=initial, is_final_plan=True)
    one_row = lambda node: is_global_sort(node) or is_aggregate(node)  # noqa: E731
    assert removed_operators(pair, one_row, ONE_ROW_FAMILIES) == \
        removed_operators(pair, one_row)
    assert removed_operators(pair, is_limit, frozenset(LIMITS)) == \
        removed_operators(pair, is_limit)


def test_a_diff_leaves_no_plan_in_a_reference_cycle():
    """Once a diff is made and dropped, its plans and indexes are freed by their reference
    counts, not left for the cycle collector: a pool's worker collects only once a batch
    (`events.build_batch`), and every execution's plans kept until then cost memory and the
    collection's walk (a fifth of an execution on a one-query log)."""
    import gc
    from pathlib import Path

    from aqe_inspect.sources.eventlog import read_event_logs

    root = Path(__file__).resolve().parent.parent / "sample_plans"
    logs = [root / "spark-4.3.0" / "five_way_join" / "eventlog.json",
            *sorted(root.glob("spark-3.5*/*/eventlog.json"))[:4]]
    kept = (Node, Query, PlanPair, Alignment, InitialTree)
    for log in logs:
        queries = [query for document in read_event_logs(str(log), workers=1)
                   for query in document.queries]
        gc.collect()
        was = gc.isenabled()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for query in queries:
                diff_query(query, "1")
            del query
            queries.clear()
            gc.collect()
            left = [type(item).__name__ for item in gc.garbage if isinstance(item, kept)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            if was:
                gc.enable()
        assert not left, (log, left[:5])
