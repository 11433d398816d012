"""one-row and limit-removed: operators AQE's logical re-optimizer (AQEOptimizer, 3.3+)
removed once a query stage had proved how few rows reach them."""

from __future__ import annotations

import weakref
from collections import Counter
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Tuple

from ...plan.model import ADAPTIVE_ROOT, Node
from ...plan.operators import EMPTY_RELATION_FAMILIES, VENDOR_PREFIXES, VENDOR_SUFFIXES, \
    family, is_empty_relation, normalized_text, parents, split_top_level
from ...plan.align import computed_once
from .base import Detector, PlanPair, Rewrite, describe
from .emptied_sides import find_emptied_sides, is_vendor_name as _is_vendor_name

AGGREGATES = ("HashAggregate", "ObjectHashAggregate", "SortAggregate")
LIMITS = ("CollectLimit", "GlobalLimit", "TakeOrderedAndProject")
#: The families one-row can pick: global sorts and aggregates.
ONE_ROW_FAMILIES = frozenset(("Sort", *AGGREGATES))


def is_global_sort(node: Node) -> bool:
    """A `Sort [...], true, N`: a total order (a local sort prints `false`)."""
    if family(node) != "Sort":
        return False
    args = node.details.get("Arguments") or node.args
    if "true" not in args:  # the second part is `true` only where the word is
        return False
    parts = split_top_level(args, 2)
    return len(parts) >= 2 and parts[1] == "true"


def is_aggregate(node: Node) -> bool:
    return family(node) in AGGREGATES


def is_limit(node: Node) -> bool:
    return family(node) in LIMITS


def _aggregate_key(node: Node, text: Callable[[Node], str] = normalized_text) -> str:
    """What an aggregate computes, whichever implementation runs it: re-planning may turn a
    SortAggregate into a HashAggregate (4.x) over the same keys and functions."""
    keys = node.details.get("Keys")
    functions = node.details.get("Functions")
    if keys is None or functions is None:
        for part in split_top_level(node.args.strip()[1:-1] if node.args.startswith("(")
                                    else node.args):
            if part.startswith(("keys=", "key=")) and keys is None:
                keys = part.split("=", 1)[1]
            elif part.startswith("functions=") and functions is None:
                functions = part.split("=", 1)[1]
    if keys is None and functions is None:
        return text(node)
    return " ".join(f"Aggregate keys={keys} functions={functions}".split())


def is_group_only(node: Node) -> bool:
    """An aggregate with grouping keys and no aggregate function (a DISTINCT): the one
    OptimizeOneRowPlan turns into a projection."""
    return is_aggregate(node) and "functions=[]" in _aggregate_key(node)


def _operator_key(node: Node, text: Callable[[Node], str] = normalized_text) -> str:
    return _aggregate_key(node, text) if is_aggregate(node) else text(node)


class _Index:
    """What both detectors read of one plan pair, built once (`PlanPair.shared`): whether the
    final plan can say what went missing at all, its reuse, the initial operators with whether
    an exchange is above each, and each operator's key and category, computed once a node."""

    def __init__(self, pair: PlanPair):
        # Held weakly: the pair holds this index (`PlanPair.shared`), and a cycle would keep
        # both, and the plans they index, until the cycle collector runs.
        self._pair = weakref.ref(pair)
        self.finals = pair._final_nodes
        self.final_families = pair._final_families
        self._keys: Dict[int, str] = {}
        self._categories: Dict[int, str] = {}
        self.initial_with_depth = pair._initial_tree.own_with_exchange_above \
            if pair.initial is not None else ()
        self.initial_own = tuple(zip(pair._initial_nodes, pair._initial_families))

    @property
    def pair(self) -> PlanPair:
        return self._pair()  # type: ignore[return-value] - the pair outlives the diff's reads

    @computed_once
    def blocked(self) -> bool:
        """Asked only once some initial operator was picked."""
        return self.pair.initial is None or _cannot_tell(self.pair, self.finals)

    @computed_once
    def reuse(self) -> bool:
        return "ReusedExchange" in self.final_families

    @computed_once
    def spare(self) -> Counter:
        """The final plan's operators by category (asked only when some initial operator
        went unmatched)."""
        return Counter(c for c in map(self.category, self.finals) if c)

    def key(self, node: Node) -> str:
        key = self._keys.get(id(node))
        if key is None:
            key = self._keys[id(node)] = _operator_key(node, self.pair.normalized_text)
        return key

    def category(self, node: Node) -> str:
        category = self._categories.get(id(node))
        if category is None:
            category = self._categories[id(node)] = _category(node)
        return category


def _cannot_tell(pair: PlanPair, finals: Tuple[Node, ...]) -> bool:
    """Whether the final plan hides what went missing: a vendor's operators in it, or an empty
    relation AQE made (no static one of the initial plan accounts for it)."""
    if any(_is_vendor_name(name) for name in {node.name for node in finals}):
        # A vendor's engine (Gluten, RAPIDS, Photon) replaces and fuses Spark's operators in
        # the final plan: what went missing cannot be told from what was replaced.
        return True
    empties = [node for node in pair.final_of(*EMPTY_RELATION_FAMILIES)
               if is_empty_relation(node)]
    if not empties:
        return False
    text = pair.normalized_text
    static_empty = Counter(text(n) for n in pair.initial_of(*EMPTY_RELATION_FAMILIES)
                           if is_empty_relation(n))
    for node in empties:
        found = text(node)
        if static_empty[found] <= 0:
            return True
        static_empty[found] -= 1
    return False


def removed_operators(pair: PlanPair, wanted: Callable[[Node], bool],
                      families: Optional[FrozenSet[str]] = None) -> List[Node]:
    """The operators of the initial plan that `wanted` picks and the final plan no longer
    holds (matched by what they compute, `normalized_text`, each final one standing for one
    initial one). Nothing when AQE replaced part of the plan by an empty relation (that is
    empty-relation's work), and, when the final plan reuses an exchange (whose subtree it does
    not print again), nothing from below an exchange. `families`, when given, holds every
    family `wanted` can pick: the others are not asked."""
    if pair.initial is None:
        return []
    index = pair.shared("logical_rules", _Index)

    answers: Dict[int, bool] = {}  # wanted(node), asked once a node

    def picks(node: Node) -> bool:
        answer = answers.get(id(node))
        if answer is None:
            answer = answers[id(node)] = bool(wanted(node))
        return answer

    # Only the operators of the families given are asked (all when none are given).
    if families is None:
        initial = [(node, under) for node, under, _ in index.initial_with_depth]
        finals: Iterable[Node] = index.finals
    else:
        initial = [(node, under) for node, under, name in index.initial_with_depth
                   if name in families]
        # Only counted below, so in any order: family by family, from the pair's index.
        by_family = pair._final_by_family
        finals = [node for name in families for node in by_family.get(name, ())]
    # No initial operator picked: nothing removed, whatever else the plans hold.
    picked = [(node, under) for node, under in initial if picks(node)]
    if not picked or index.blocked:
        return []
    # The operators of a join's side or a union's branch that an empty input took out went
    # with it (empty-relation's work), not one by one.
    emptied = find_emptied_sides(pair).inside
    if emptied:
        picked = [(node, under) for node, under in picked if id(node) not in emptied]
        if not picked:
            return []
    key = index.key
    kept: Dict[str, int] = {}  # a Counter, counted without its cost
    for node in finals:
        if picks(node):
            text = key(node)
            kept[text] = kept.get(text, 0) + 1
    reuse = index.reuse
    unmatched: List[Node] = []
    for node, under_exchange in picked:
        text = key(node)
        if kept.get(text, 0) > 0:
            kept[text] -= 1
            continue
        if reuse and under_exchange:
            continue
        unmatched.append(node)
    if not unmatched:
        return []
    # An operator the final plan prints another way (two explain modes paired, a vendor's
    # replacement such as `HashAggregateExecTransformer`) is still there: each final operator
    # of the same category that no initial one matched stands for one of them.
    category_of = index.category
    spare = Counter(index.spare)
    removed: List[Node] = []
    left = {id(node) for node in unmatched}
    matched_final = Counter(category_of(node) for node, name in index.initial_own
                            if (families is None or name in families) and picks(node)
                            and id(node) not in left and category_of(node))
    for category, count in matched_final.items():
        spare[category] = max(0, spare[category] - count)
    for node in unmatched:
        category = category_of(node)
        if category and spare[category] > 0:
            spare[category] -= 1
            continue
        removed.append(node)
    return removed


def _is_vendor(node: Node) -> bool:
    return _is_vendor_name(node.name)


def _category(node: Node) -> str:
    """What an operator is, by its name alone, whoever printed it: `sort` (not a local sort),
    `aggregate`, `limit`; empty for anything else."""
    name = node.name
    if "Aggregate" in name:
        return "aggregate"
    if "Limit" in name or "TakeOrdered" in name:
        return "limit"
    if "Sort" in name and "SortMergeJoin" not in name and "SortAggregate" not in name:
        args = node.details.get("Arguments") or node.args
        if "false" not in args:  # the second part is `false` only where the word is
            return "sort"
        parts = split_top_level(args, 2)
        return "" if len(parts) >= 2 and parts[1] == "false" else "sort"
    return ""


def _initial_with_depth(pair: PlanPair) -> Tuple[Tuple[Node, bool, str], ...]:
    """The initial plan's own operators, each with whether an exchange is above it and its
    family."""
    found: List[Tuple[Node, bool, str]] = []
    stack = [(pair.initial, False)]
    while stack:
        node, under = stack.pop()
        name = family(node)
        found.append((node, under, name))
        if node is not pair.initial and node.name == ADAPTIVE_ROOT:
            continue
        below = under or name in ("Exchange", "ShuffleExchange", "BroadcastExchange")
        stack.extend([(child, below) for child in reversed(node.children)
                      if child.name != ADAPTIVE_ROOT])
    return tuple(found)


class OneRowPlan(Detector):
    """Spark rule: OptimizeOneRowPlan (org.apache.spark.sql.catalyst.optimizer), run by AQE's
    logical re-optimizer (AQEOptimizer) from Spark 3.3.

    Once a query stage has run, its row count bounds what can reach the operators above it.
    When at most one row can reach a global sort, the sort (and the range shuffle under it)
    goes; when at most one row per group can reach a group-only aggregate, it becomes a
    projection; an aggregate over an aggregate of at most one row loses its distinct.

    Before (initial plan):                  After (final plan):
        Sort [x ASC NULLS FIRST], true, 0       ShuffleQueryStage 0
        +- Exchange rangepartitioning(x, 20)    +- Exchange rangepartitioning(x, 20)
           +- Filter (x = 15)                      +- Filter (x = 15)

        HashAggregate(keys=[x], functions=[])   Project [x]
        +- HashAggregate(keys=[x], ...)         +- AQEShuffleRead coalesced
           +- Exchange hashpartitioning(x),        +- ShuffleQueryStage 0
                REPARTITION_BY_COL

    One finding per removed global sort and per removed aggregate (its partial and final
    phases together). Only a plan printed with its initial plan can show it. The spark 3.2
    line and earlier have no such rule in AQE.

    Configs: spark.sql.adaptive.optimizer.excludedRules (3.3+; the rule's name is
    org.apache.spark.sql.catalyst.optimizer.OptimizeOneRowPlan).
    """

    kind = "one-row"
    summary = ("a global sort or an aggregate over at most one row was removed at run time "
               "(OptimizeOneRowPlan)")
    spark_rule = "OptimizeOneRowPlan"
    needs_initial = True
    initial_group = "operators AQE's optimizer removed"

    def detect(self, pair: PlanPair) -> Iterator[Rewrite]:
        removed = removed_operators(pair, lambda n: is_global_sort(n) or is_aggregate(n),
                                    ONE_ROW_FAMILIES)
        if not removed:
            return
        gone = {id(node) for node in removed}
        up = parents(pair.initial)
        for node in removed:
            parent = up.get(id(node))
            # A partial aggregate under its removed final phase is the same aggregate.
            if is_aggregate(node) and parent is not None and id(parent) in gone \
                    and is_aggregate(parent):
                continue
            what = "a global sort" if is_global_sort(node) else "an aggregate"
            yield Rewrite(
                kind=self.kind, final_node=None, initial_node=node,
                message=(f"{describe(node)} was removed, {what} of the initial plan: a "
                         "query stage proved at most one row reaches it"),
                evidence=(f"{node.name} {node.details.get('Arguments') or node.args}"[:200],),
                numbers={"operator": node.name},
            )


class LimitRemoved(Detector):
    """Spark rule: EliminateLimits (org.apache.spark.sql.catalyst.optimizer), run by AQE's
    logical re-optimizer (AQEOptimizer) from Spark 3.3.

    Once a query stage has run, its row count bounds what reaches a limit above it: when no
    more rows than the limit can arrive, the limit (`CollectLimit`, `GlobalLimit`, or the
    limit of a `TakeOrderedAndProject`) is removed.

    Before (initial plan):                  After (final plan):
        CollectLimit 100                        HashAggregate(keys=[k], ...)
        +- HashAggregate(keys=[k], ...)         +- AQEShuffleRead coalesced
           +- Exchange hashpartitioning(k, 20)     +- ShuffleQueryStage 0 (14 rows)

    Only a plan printed with its initial plan can show it.

    Configs: spark.sql.adaptive.optimizer.excludedRules (3.3+; the rule's name is
    org.apache.spark.sql.catalyst.optimizer.EliminateLimits).
    """

    kind = "limit-removed"
    summary = "a limit no more rows could reach was removed at run time (EliminateLimits)"
    spark_rule = "EliminateLimits"
    needs_initial = True
    initial_group = "operators AQE's optimizer removed"

    def detect(self, pair: PlanPair) -> Iterator[Rewrite]:
        for node in removed_operators(pair, is_limit, frozenset(LIMITS)):
            yield Rewrite(
                kind=self.kind, final_node=None, initial_node=node,
                message=(f"{describe(node)} was removed, a limit of the initial plan: a query "
                         "stage proved no more rows than the limit reach it"),
                evidence=(f"{node.name} {node.details.get('Arguments') or node.args}"[:200],),
                numbers={"operator": node.name, **_limit_number(node)},
            )


def _limit_number(node: Node) -> Dict[str, object]:
    text = node.details.get("Arguments") or node.args
    parts = split_top_level(text)
    head = parts[0] if parts else ""
    if head.startswith("limit="):
        head = head[len("limit="):]
    return {"limit": int(head)} if head.isdecimal() and len(head) < 19 else {}
