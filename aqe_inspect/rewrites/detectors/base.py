"""What every detector sees (`PlanPair`) and returns (`Rewrite`)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Set, Tuple, TypeVar

from ...plan.align import Alignment, computed_once, nodes_by_family
from ...plan.model import ADAPTIVE_ROOT, Node, Query, RuleApplied, Subquery
from ...plan.operators import _FAMILIES as _FAMILY_OF_NAME
from ...plan.operators import JOINS, QUERY_STAGES, family, is_query_stage, is_shuffle_read, \
    join_keys, join_type, normalized_text, partitioning, shuffle_read_modes, spec_partition_count

T = TypeVar("T")


def describe(node: Optional[Node]) -> Optional[str]:
    """How a finding names an operator: `AQEShuffleRead (16)`, or with its line in simple mode:
    `Exchange (line 12)` in a plan text, `Exchange (plan line 12)` in a plan string inside
    an event log or the History Server's JSON (`Node.plan_line`)."""
    if node is None:
        return None
    if node.id is not None:
        return node.label
    if not node.line:
        return node.name
    return f"{node.name} ({'plan line' if node.plan_line else 'line'} {node.line})"


@dataclass(frozen=True)
class Rewrite:
    """One thing AQE changed, where, and the text that proves it."""

    kind: str
    final_node: Optional[Node]
    initial_node: Optional[Node]
    message: str
    evidence: Tuple[str, ...] = ()
    #: Figures the plan text holds: partition counts, runtime statistics, build side.
    numbers: Mapping[str, object] = field(default_factory=dict)
    #: The rule the driver log's plan-change log (spark.sql.planChangeLog.level) shows
    #: making this rewrite (`rule` "" for AQE's re-planning itself: the planner, no rule);
    #: None when the input holds no plan-change log (`rewrites.rules_fired`).
    fired: Optional[RuleApplied] = None
    #: The subtrees of `initial_node` that went with it when not all of it did: the empty
    #: sides of a join AQE replaced by its other side, the empty branches a Union dropped
    #: (empty when the whole of `initial_node` went, or nothing did).
    went: Tuple[Node, ...] = ()


@dataclass(frozen=True)
class PlanPair:
    """One adaptive plan: the tree that ran (or runs) and, when printed, the one before AQE.

    `final` is walked without descending into nested adaptive plans (subqueries, cached
    tables): each of those is a pair of its own.
    """

    final: Node
    initial: Optional[Node]
    is_final_plan: Optional[bool]
    where: str = "main"
    #: Whether operator ids mean the same operator in both trees: true within one explain,
    #: false for two files, which Spark numbered apart.
    same_ids: bool = True
    #: The subqueries formatted mode prints apart (`===== Subqueries =====`), for the main
    #: plan: what a hosting operator's `dynamicpruning#N` ran as.
    subqueries: Tuple[Subquery, ...] = ()
    #: Shuffle reads the text describes but does not draw (`Query.undrawn`), for the main
    #: plan: operators of its final tree whose place in it is not printed.
    undrawn: Tuple[Node, ...] = ()

    @computed_once
    def alignment(self) -> Alignment:
        if self.initial is None:
            return Alignment(None, self.final, self.same_ids, texts=self._texts)
        tree = self._initial_tree
        return Alignment(self.initial, self.final, self.same_ids, texts=self._texts,
                         initial_nodes=tree.every, initial_families=tree.every_family)

    @computed_once
    def _initial_tree(self) -> "InitialTree":
        """The initial plan walked once for the alignment, the logical-rules detectors and
        `initial_of` alike (`InitialTree`)."""
        return InitialTree(self.initial)

    def normalized_text(self, node: Node) -> str:
        """`normalized_text` of a node of this pair, computed once for every detector and the
        alignment alike."""
        text = self._texts.get(id(node))
        if text is None:
            text = self._texts[id(node)] = normalized_text(node)
        return text

    def read_modes(self, node: Node) -> Tuple[str, ...]:
        """`shuffle_read_modes(node)`, read once a node for every detector."""
        modes = self._read_modes.get(id(node))
        if modes is None:
            modes = self._read_modes[id(node)] = shuffle_read_modes(node)
        return modes

    def exchange_below(self, node: Node) -> Optional[Node]:
        """`exchange_below(node)`, found once a node for every detector."""
        memo = self._exchanges
        if id(node) not in memo:
            memo[id(node)] = exchange_below(node, self.partitioning)
        return memo[id(node)]

    def partitioning(self, node: Node) -> Optional[str]:
        """`partitioning(node)`, read once a node: the search for the exchange below a shuffle
        read asks it, and the read's evidence again."""
        memo = self._partitionings
        if id(node) in memo:
            return memo[id(node)]
        found = memo[id(node)] = partitioning(node)
        return found

    @computed_once
    def _partitionings(self) -> Dict[int, Optional[str]]:
        return {}

    @computed_once
    def _read_modes(self) -> Dict[int, Tuple[str, ...]]:
        return {}

    @computed_once
    def _exchanges(self) -> Dict[int, Optional[Node]]:
        return {}

    def stage_statistics(self, node: Node) -> Optional[str]:
        """`stage_statistics(node)`, without walking below the node when no operator of the
        final tree prints statistics at all (event logs and History Server JSON never do)."""
        if id(node) in self._without_statistics:
            return None
        return stage_statistics(node)

    @computed_once
    def _without_statistics(self) -> Set[int]:
        """Every operator of the final tree (its children, every level) when none of them
        prints statistics; none when one does."""
        seen: Set[int] = set()
        stack = [self.final]
        while stack:
            node = stack.pop()
            if node.statistics:
                return set()
            seen.add(id(node))
            stack.extend(node.children)
        return seen

    def shared(self, key: str, compute: Callable[["PlanPair"], T]) -> T:
        """What several detectors derive from this pair (an index of its trees), computed by
        the first that asks and kept for the others: per diff, never across plans."""
        memo = self._shared
        if key not in memo:
            memo[key] = compute(self)
        return memo[key]

    @computed_once
    def _texts(self) -> Dict[int, str]:
        return {}

    @computed_once
    def _shared(self) -> Dict[str, object]:
        return {}

    @computed_once
    def sort_merge_joins(self) -> Tuple[Tuple[Node, Node], ...]:
        """Each sort-merge join of the initial plan with the final join it became (paired once
        for both join-switch detectors)."""
        return tuple(pair_sort_merge_joins(self))

    def initial_for(self, final_node: Optional[Node]) -> Optional[Node]:
        """The operator of the initial plan that `final_node` stands for, if printed."""
        return self.alignment.initial_for(final_node)

    def final_nodes(self) -> Iterator[Node]:
        return iter(self._final_nodes)

    def initial_nodes(self) -> Iterator[Node]:
        return iter(self._initial_nodes)

    def final_of(self, *families: str) -> Iterator[Node]:
        """The operators of the final plan of these families (`family`), in printed order."""
        if len(families) == 1:
            return iter(self._final_by_family.get(families[0], ()))
        wanted = set(families)
        return (node for node, name in zip(self._final_nodes, self._final_families)
                if name in wanted)

    def initial_of(self, *families: str) -> Iterator[Node]:
        """The operators of the initial plan of these families, in printed order."""
        if len(families) == 1:
            return iter(self._initial_by_family.get(families[0], ()))
        wanted = set(families)
        return (node for node, name in zip(self._initial_nodes, self._initial_families)
                if name in wanted)

    # Walked once for all detectors, each operator's family asked once.
    @computed_once
    def _final_walk(self) -> Tuple[Tuple[Node, ...], Tuple[str, ...]]:
        nodes, families = own_nodes(self.final)
        if not self.undrawn:
            return nodes, families
        return (*nodes, *self.undrawn), (*families, *(family(node) for node in self.undrawn))

    @computed_once
    def _initial_walk(self) -> Tuple[Tuple[Node, ...], Tuple[str, ...]]:
        if self.initial is None:
            return (), ()
        return self._initial_tree.own_nodes()

    @property
    def _final_nodes(self) -> Tuple[Node, ...]:
        return self._final_walk[0]

    @property
    def _final_families(self) -> Tuple[str, ...]:
        return self._final_walk[1]

    @property
    def _initial_nodes(self) -> Tuple[Node, ...]:
        return self._initial_walk[0]

    @property
    def _initial_families(self) -> Tuple[str, ...]:
        return self._initial_walk[1]

    @computed_once
    def _final_by_family(self) -> Dict[str, List[Node]]:
        return nodes_by_family(self._final_nodes, self._final_families)

    @computed_once
    def _initial_by_family(self) -> Dict[str, List[Node]]:
        return nodes_by_family(self._initial_nodes, self._initial_families)


#: The exchanges below which the logical-rules detectors ignore a removed operator when the
#: final plan reuses an exchange (`InitialTree.own_with_exchange_above`).
_EXCHANGES = frozenset(("Exchange", "ShuffleExchange", "BroadcastExchange"))


class InitialTree:
    """One walk of an initial plan serving what three readers used to walk it for:

    - `every`: each operator, children only (no inner plans), nested adaptive plans included,
      in printed order: the nodes the alignment pairs (`Alignment`); `every_family` the
      family of each;
    - `own_with_exchange_above`: the operators outside nested adaptive plans, each with
      whether an exchange is above it and its family (the logical-rules detectors);
    - `own_nodes()`: `own_nodes(initial)`, which is those same operators with their families
      whenever no such operator has an inner plan or is an EmptyRelation over a logical plan
      (the walk below is then the same); otherwise walked as `own_nodes` walks.

    A preorder walk of a tree with some subtrees cut off visits the remaining nodes in the
    order of the full walk, so each list is the full walk filtered."""

    def __init__(self, root: Node):
        self.root = root
        every: List[Node] = []
        every_family: List[str] = []
        own: List[Tuple[Node, bool, str]] = []
        #: Whether an own operator has an inner plan or is an EmptyRelation with children.
        self._own_walk_differs = False
        known = _FAMILY_OF_NAME
        stack: List[Tuple[Node, bool, bool]] = [(root, False, True)]
        while stack:
            node, under_exchange, is_own = stack.pop()
            name = known.get(node.name)
            if name is None:
                name = family(node)
            every.append(node)
            every_family.append(name)
            children = node.children
            if not is_own:
                if children:
                    stack.extend([(child, False, False) for child in reversed(children)])
                continue
            own.append((node, under_exchange, name))
            if node.inner or (name == "EmptyRelation" and children):
                self._own_walk_differs = True
            if children:
                below = under_exchange or name in _EXCHANGES
                stack.extend([(child, below, child.name != ADAPTIVE_ROOT)
                              for child in reversed(children)])
        self.every: Tuple[Node, ...] = tuple(every)
        self.every_family: Tuple[str, ...] = tuple(every_family)
        self.own_with_exchange_above: Tuple[Tuple[Node, bool, str], ...] = tuple(own)

    def own_nodes(self) -> Tuple[Tuple[Node, ...], Tuple[str, ...]]:
        """`own_nodes(self.root)`."""
        if self._own_walk_differs:
            return own_nodes(self.root)
        own = self.own_with_exchange_above
        return tuple([node for node, _, _ in own]), tuple([name for _, _, name in own])


def walk_own(root: Node) -> Iterator[Node]:
    """The physical operators of one adaptive plan: not those of nested adaptive plans, nor
    the logical plan Spark 4 prints under an EmptyRelation (`own_nodes`)."""
    return iter(own_nodes(root)[0])


def own_nodes(root: Node) -> Tuple[Tuple[Node, ...], Tuple[str, ...]]:
    """The operators `walk_own(root)` yields, in order, with each one's family beside it: the
    one walk of a plan pair that every detector reads."""
    nodes: List[Node] = []
    families: List[str] = []
    add_node, add_family = nodes.append, families.append
    known = _FAMILY_OF_NAME
    stack = [root]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        node = pop()
        name = known.get(node.name)
        if name is None:
            name = family(node)
        add_node(node)
        add_family(name)
        if (node is not root and node.name == ADAPTIVE_ROOT) or name == "EmptyRelation":
            continue
        children = node.children
        if node.inner:
            below = [n for n in (*node.inner, *children) if n.name != ADAPTIVE_ROOT]
            below.reverse()
            extend(below)
        elif len(children) == 1:  # the common case, without a list
            child = children[0]
            if child.name != ADAPTIVE_ROOT:
                push(child)
        elif children:
            extend([n for n in reversed(children) if n.name != ADAPTIVE_ROOT])
    return tuple(nodes), tuple(families)


def exchange_below(node: Node,
                   partitioning_of: Callable[[Node], Optional[str]] = partitioning
                   ) -> Optional[Node]:
    """The exchange a shuffle read or query stage reads: the first node below with a
    partitioning (`partitioning_of`: `partitioning`, or a plan pair's memo of it), looking
    through query stages."""
    queue = deque(node.children)
    while queue:
        below = queue.popleft()
        if partitioning_of(below) is not None:
            return below
        queue.extend(below.children)
    return None


def stage_statistics(node: Node) -> Optional[str]:
    """Runtime statistics of the query stage under a shuffle read, when Spark printed them."""
    for below in node.walk(inner=False):
        if is_query_stage(below) and below.statistics:
            return below.statistics
    return None


def exchange_numbers(node: Node, exchange: Optional[Node],
                     pair: Optional[PlanPair] = None) -> Tuple[List[str], dict]:
    """Evidence and figures of the shuffle `node` reads through `exchange`: partitioning and
    stage statistics (found through `pair`'s index when given)."""
    evidence, numbers = [], {}
    if exchange is not None:
        spec = pair.partitioning(exchange) if pair is not None else partitioning(exchange)
        evidence.append(f"{exchange.label}: {spec}")
        count = spec_partition_count(spec)
        if count is not None:
            numbers["shuffle_partitions"] = count
    stats = pair.stage_statistics(node) if pair is not None else stage_statistics(node)
    if stats:
        evidence.append(f"Statistics({stats})")
        numbers["statistics"] = stats
    return evidence, numbers


class Detector:
    """A rewrite detector: a stable `kind`, a one-line `summary`, its docstring as `doc`."""

    kind: str = ""
    summary: str = ""
    #: The Spark rule (org.apache.spark.sql.execution.adaptive) whose work it finds.
    spark_rule: str = ""
    #: The rules whose `=== Applying Rule ... ===` in a plan-change log makes this kind, by
    #: the class's simple name, every Spark line's name (`rewrites.rules_fired`); None for
    #: `spark_rule` alone, () when no rule does it (the planner at AQE's re-planning).
    logged_rules: Optional[Tuple[str, ...]] = None
    #: True when only an initial plan can prove the rewrite (a join switch).
    needs_initial: bool = False
    #: How a note names the kinds that need the initial plan, grouped.
    initial_group: str = "join switches"

    @property
    def doc(self) -> str:
        return type(self).__doc__ or ""

    @property
    def rules_logged(self) -> Tuple[str, ...]:
        """`logged_rules`, or `spark_rule` alone when it is not set."""
        if self.logged_rules is not None:
            return self.logged_rules
        return (self.spark_rule,) if self.spark_rule else ()

    def detect(self, pair: PlanPair):  # pragma: no cover - every detector overrides it
        raise NotImplementedError


def pair_sort_merge_joins(pair: PlanPair) -> Iterator[Tuple[Node, Node]]:
    """Each sort-merge join of the initial plan with its final counterpart, in printed order.

    A join that kept its operator id is the same operator; otherwise the final join with the
    same join keys (Spark keeps expression ids through re-planning) is its counterpart: the
    first one not paired yet in printed order, of the same join type if there is one.
    """
    if pair.initial is None:
        return
    initial_joins = list(pair.initial_of("SortMergeJoin"))
    if not initial_joins:
        return
    final_joins = list(pair.final_of(*JOINS))
    by_id: Dict[int, Node] = {j.id: j for j in final_joins if j.id is not None}
    unmatched = _Unmatched(final_joins)
    found: Dict[int, Node] = {}
    for initial in initial_joins:
        counterpart = by_id.get(initial.id) if initial.id is not None and pair.same_ids \
            else None
        if counterpart is None or unmatched.is_taken(counterpart):
            counterpart = unmatched.same_keys(initial)
        if counterpart is not None:
            unmatched.take(counterpart)
            found[id(initial)] = counterpart
    if len(found) < len(initial_joins):
        # No id kept, no keys printed: by the inputs each joins, the lowest joins first (a
        # join over joins is paired once those below it are).
        by_inputs = _ByInputs(pair, final_joins, initial_joins, found)
        for initial in reversed(initial_joins):
            if id(initial) in found:
                continue
            counterpart = by_inputs.first(initial, unmatched)
            if counterpart is not None:
                unmatched.take(counterpart)
                found[id(initial)] = counterpart
                by_inputs.paired(initial, counterpart)
    for initial in initial_joins:
        if id(initial) in found:
            yield initial, found[id(initial)]

class _Unmatched:
    """The final joins not paired yet, indexed by join keys and by keys and join type, so
    that pairing N joins takes O(N) lookups rather than a scan of every candidate each."""

    def __init__(self, joins: List[Node]):
        self._taken: Set[int] = set()
        self._order: Dict[int, int] = {id(join): index for index, join in enumerate(joins)}
        #: Each bucket lists its joins in printed order; `_heads` skips the taken ones.
        self._buckets: Dict[tuple, List[Node]] = {}
        self._heads: Dict[tuple, int] = {}
        for join in joins:
            keys = join_keys(join)
            if keys is not None:
                self._buckets.setdefault(("keys", keys), []).append(join)
                self._buckets.setdefault(("typed", keys, join_type(join)), []).append(join)

    def is_taken(self, join: Node) -> bool:
        return id(join) in self._taken

    def take(self, join: Node) -> None:
        self._taken.add(id(join))

    def _first(self, bucket: tuple) -> Optional[Node]:
        joins = self._buckets.get(bucket)
        if not joins:
            return None
        head = self._heads.get(bucket, 0)
        while head < len(joins) and id(joins[head]) in self._taken:
            head += 1
        self._heads[bucket] = head
        return joins[head] if head < len(joins) else None

    def _earliest(self, *buckets: tuple) -> Optional[Node]:
        found = [join for join in map(self._first, dict.fromkeys(buckets)) if join is not None]
        return min(found, key=lambda join: self._order[id(join)]) if found else None

    def same_keys(self, initial: Node) -> Optional[Node]:
        """The first join on the same keys (either way round), preferring the same type."""
        keys = join_keys(initial)
        if keys is None:
            return None
        swapped = (keys[1], keys[0])
        kind = join_type(initial)
        return (self._earliest(("typed", keys, kind), ("typed", swapped, kind))
                or self._earliest(("keys", keys), ("keys", swapped)))


#: What lies between a join and its inputs, which a join switch puts in or takes away: the
#: sort-merge join's sorts and shuffles, a broadcast's exchange, AQE's stages and shuffle
#: reads, and the codegen wrappers of a sparkPlanInfo tree.
_BETWEEN_JOIN_AND_INPUT = frozenset(("Sort", "Exchange", "ColumnarExchange", "BroadcastExchange",
                                     "ColumnarBroadcastExchange", "WholeStageCodegen",
                                     "InputAdapter", "AQEShuffleRead", *QUERY_STAGES))


def join_input(node: Node) -> Node:
    """The operator a join's child `node` reads, below what a join switch changes (see
    `_BETWEEN_JOIN_AND_INPUT`)."""
    while len(node.children) == 1 and family(node) in _BETWEEN_JOIN_AND_INPUT:
        node = node.children[0]
    return node


def _over_join(node: Node) -> Tuple[Tuple[str, ...], Optional[Node]]:
    """The operators from a join's input down to the join it reads through them alone (a
    Project over a join), by family without what a switch changes, and that join; None when
    the input reads no join that way."""
    families: List[str] = []
    while True:
        name = family(node)
        if name in JOINS:
            return tuple(families), node
        if len(node.children) != 1:
            return (), None
        if name not in _BETWEEN_JOIN_AND_INPUT:
            families.append(name)
        node = node.children[0]


class _ByInputs:
    """The final joins by the operators of the initial plan their inputs stand for: a sort-merge
    join whose id was not kept and whose keys are not printed (a formatted tree without its
    detail blocks, as the REST API's `planDescription` is often copied) is the final join
    over the same two inputs, in either order. An input over a join (a Project over it) stands
    for the same operators over the initial join that join was paired with (`paired`), so
    joins are paired from the lowest up."""

    def __init__(self, pair: "PlanPair", joins: List[Node], initial_joins: List[Node],
                 found: Dict[int, Node]):
        self._pair = pair
        #: final join -> the initial join it was paired with, by id()
        self._initial_of: Dict[int, Node] = {}
        by_id = {id(join): join for join in initial_joins}
        for initial_id, final in found.items():
            self._initial_of[id(final)] = by_id[initial_id]
        self._joins: Dict[Tuple[tuple, tuple], List[Node]] = {}
        #: final join -> the final joins reading it as an input
        self._readers: Dict[int, List[Node]] = {}
        for join in joins:
            if len(join.children) != 2:
                continue
            for child in join.children:
                _, below = _over_join(join_input(child))
                if below is not None:
                    self._readers.setdefault(id(below), []).append(join)
            self._index(join)

    def _final_key(self, child: Node) -> Optional[tuple]:
        node = join_input(child)
        families, below = _over_join(node)
        if below is not None:
            initial = self._initial_of.get(id(below))
            return None if initial is None else ("join", families, id(initial))
        found = self._pair.initial_for(node)
        return None if found is None else ("node", id(found))

    @staticmethod
    def _initial_key(child: Node) -> tuple:
        node = join_input(child)
        families, below = _over_join(node)
        return ("join", families, id(below)) if below is not None else ("node", id(node))

    def _index(self, join: Node) -> None:
        left, right = (self._final_key(child) for child in join.children)
        if left is None or right is None or left == right:
            return
        self._joins.setdefault((left, right), []).append(join)

    def paired(self, initial: Node, final: Node) -> None:
        """`final` stands for `initial` from now on: the joins reading it are indexed anew."""
        self._initial_of[id(final)] = initial
        for reader in self._readers.get(id(final), ()):
            self._index(reader)

    def first(self, initial: Node, unmatched: "_Unmatched") -> Optional[Node]:
        if len(initial.children) != 2:
            return None
        left, right = (self._initial_key(child) for child in initial.children)
        for key in ((left, right), (right, left)):
            for join in self._joins.get(key, ()):
                if not unmatched.is_taken(join):
                    return join
        return None

def plan_pairs(query: Query, walked: Optional[List[List[Node]]] = None) -> List[PlanPair]:
    """Every adaptive plan of the query (main, subqueries, cached plans) as a PlanPair.

    A plan printed without its `AdaptiveSparkPlan` root but holding AQE's operators (a
    collapsed final plan, a plan from a log line) is a final-only pair. `walked`, when the
    caller has it, is `tree.walked()` of each tree of `query_trees(query)`.
    """
    pairs: List[PlanPair] = []
    trees = query_trees(query)
    places = ["main", *(f"subquery {s.index}" for s in query.subqueries if s.tree is not None)]
    undrawn = query.undrawn  # given to the main plan's first adaptive pair
    for number, (tree, where) in enumerate(zip(trees, places)):
        every = walked[number] if walked is not None else tree.walked()
        for node in [node for node in every if node.name == ADAPTIVE_ROOT]:
            final = node.children[0] if node.children else node
            place = where if node is tree else f"{where}, nested plan at {describe(node)}"
            pairs.append(PlanPair(final=final, initial=node.initial,
                                  is_final_plan=node.is_final_plan, where=place,
                                  subqueries=query.subqueries if where == "main" else (),
                                  undrawn=undrawn if where == "main" else ()))
            if where == "main":
                undrawn = ()
    if not query.root.is_adaptive_root and _shows_aqe(query.root):
        pairs.insert(0, PlanPair(final=query.root, initial=None, is_final_plan=None,
                                 where="main (final plan only)", subqueries=query.subqueries,
                                 undrawn=undrawn))
        undrawn = ()
    if undrawn and not pairs:  # no adaptive root drawn: the reads alone say AQE ran
        pairs.append(PlanPair(final=query.root, initial=None, is_final_plan=None,
                              where="main (final plan only)", subqueries=query.subqueries,
                              undrawn=undrawn))
    return pairs


def query_trees(query: Query) -> List[Node]:
    """The trees of the plan that ran: the main one, then each subquery printed apart."""
    return [query.root, *(s.tree for s in query.subqueries if s.tree is not None)]


def _shows_aqe(root: Node) -> bool:
    """Whether AQE's operators stand outside every nested adaptive plan (a plan under a write
    command brings its own initial plan)."""
    return any(is_query_stage(n) or is_shuffle_read(n) for n in walk_own(root))
