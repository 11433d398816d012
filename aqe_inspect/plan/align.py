"""Pair the operators of a final plan with those of the initial plan they came from.

By operator id first: formatted mode gives the same id to an operator object that both trees
share. Otherwise by structure: the same operator over the same inputs, where query stages and
shuffle reads (which only the final plan has) are looked through, and plan ids (`[id=#N]`,
`[plan_id=N]`), which Spark renumbers when it re-plans, are ignored.
"""

from __future__ import annotations

import re
from typing import Callable, Dict, FrozenSet, Hashable, List, Optional, Sequence, Set, Tuple

from .model import Node
from .operators import _FAMILIES as _FAMILY_OF_NAME
from .operators import (
    JOINS, QUERY_STAGES, build_side, family, is_empty_relation, is_skew_join, normalized_text,
    shuffle_read_modes,
)


#: The operators only AQE puts in: query stages and shuffle reads.
_AQE_FAMILIES = frozenset((*QUERY_STAGES, "AQEShuffleRead"))
#: The families `_shape_family` takes as one.
_SCAN_FAMILIES = frozenset(("Scan", "FileScan"))


class computed_once:  # noqa: N801 - used as a decorator, like functools.cached_property
    """`functools.cached_property` without its lock (Python before 3.12 takes one on every
    first read, a cost the diff pays for each index of each plan pair): the value is
    computed on first read and stored in the instance's `__dict__`, where later reads find
    it. For objects one thread builds and reads (a diff's plan pairs and alignments)."""

    def __init__(self, func: Callable):
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.func(instance)
        return value


def nodes_by_family(nodes: Sequence[Node], families: Sequence[str]) -> Dict[str, List[Node]]:
    """The nodes by their families (`families[i]` is `nodes[i]`'s), each list in the nodes'
    order: the index a walk that already named each node's family gives."""
    index: Dict[str, List[Node]] = {}
    for node, name in zip(nodes, families):
        found = index.get(name)
        if found is None:
            index[name] = [node]
        else:
            found.append(node)
    return index


def _through_aqe(node: Node) -> Node:
    """Below the query stages and shuffle reads AQE put in: the operator the initial plan had."""
    while node.children and family(node) in _AQE_FAMILIES:
        node = node.children[0]
    return node


class _Signatures:
    """Structural signatures as small integers: equal integers, equal subtrees (same family,
    same normalised text, same children's signatures). Computed bottom-up without recursion,
    so a tree thousands of levels deep costs no stack. `text` gives a node's normalised text
    (shared between the signatures of one alignment), or None to compare shapes only."""

    def __init__(self, text: Optional[Callable[[Node], str]] = None):
        self._ids: Dict[Tuple, int] = {}
        self._memo: Dict[int, int] = {}
        self._text = text

    def of(self, root: Node) -> int:
        memo = self._memo
        if id(root) in memo:
            return memo[id(root)]
        text_of = self._text
        # (node, the nodes below it once looked through AQE's operators, or None when not yet)
        stack: List[Tuple[Node, Optional[List[Node]]]] = [(root, None)]
        while stack:
            node, below = stack.pop()
            if id(node) in memo:
                continue
            if below is None:
                below = [_through_aqe(child) for child in node.children]
                stack.append((node, below))
                stack.extend((child, None) for child in below if id(child) not in memo)
                continue
            text = text_of(node) if text_of is not None else ""
            key = (_shape_family(node), text, tuple([memo[id(c)] for c in below]))
            memo[id(node)] = self._ids.setdefault(key, len(self._ids))
        return memo[id(root)]


def memoized_text(texts: Dict[int, str]) -> Callable[[Node], str]:
    """`normalized_text` of a node, kept in `texts` by `id()` (computed once a node); the
    function holds only the dict."""
    def text(node: Node) -> str:
        found = texts.get(id(node))
        if found is None:
            found = texts[id(node)] = normalized_text(node)
        return found
    return text


#: How many node pairs one lookup compares directly before it computes signatures instead.
_COMPARE_BUDGET = 256
#: How many candidates of the same text one lookup compares in turn before it looks the
#: rest up by signature.
_IN_TURN = 8


class Alignment:
    """Answers `initial_for(final_node)` for one adaptive plan. Each index of the initial
    plan is built when a lookup first needs it: in one formatted explain ids pair many
    operators, and structural signatures most of the rest."""

    def __init__(self, initial: Optional[Node], final: Node, same_ids: bool = True,
                 texts: Optional[Dict[int, str]] = None,
                 initial_nodes: Optional[Sequence[Node]] = None,
                 initial_families: Optional[Sequence[str]] = None):
        """`initial_nodes`, when the caller has walked the initial plan already, is
        `list(initial.walk(inner=False))`, and `initial_families` the family of each."""
        self._families = initial_families if initial_nodes is not None else None
        #: normalized_text by node, computed once a node (shared with the caller's, if given)
        self._texts: Dict[int, str] = {} if texts is None else texts
        # The text function holds the dict, not this object: no reference cycle, so that a
        # diff's indexes are freed as soon as it is made (not by the cycle collector).
        self._signatures = _Signatures(memoized_text(self._texts))
        self._shapes = _Signatures()
        #: (id(final subtree), id(initial subtree)) found equal by `_equal_subtrees`, every
        #: pair below them included: a later lookup meeting one does not compare it again.
        self._equal_pairs: Set[Tuple[int, int]] = set()
        self._nodes: Sequence[Node] = ()
        if initial_nodes is not None:
            self._nodes = initial_nodes
        elif initial is not None:  # initial.walk(inner=False), without a generator's cost
            nodes: List[Node] = []
            stack = [initial]
            while stack:
                node = stack.pop()
                nodes.append(node)
                stack.extend(reversed(node.children))
            self._nodes = nodes
        #: family -> normalised text -> the initial nodes of both, in printed order
        self._same_text: Dict[str, Dict[str, List[Node]]] = {}
        #: normalised text -> the initial Scan and FileScan nodes of it, in printed order
        self._scans: Dict[str, List[Node]] = {}
        #: (shape family, normalised text) -> signature -> the first initial node of all three
        self._first_by_signature: Dict[Tuple[str, str], Dict[int, Node]] = {}
        #: (shape family, shape or None, expression ids) -> `_most_shared`'s answer
        self._answers: Dict[Tuple[str, Optional[int], FrozenSet[str]], Optional[Node]] = {}
        self._by_id: Dict[int, Node] = {}
        if same_ids:
            for node in self._nodes:
                if node.id is not None:
                    self._by_id.setdefault(node.id, node)

    def _grouped(self, key: Callable[[Node], Hashable]) -> Dict[Hashable, List[Node]]:
        """The initial plan's nodes by `key`, each group in printed order."""
        index: Dict[Hashable, List[Node]] = {}
        for node in self._nodes:
            index.setdefault(key(node), []).append(node)
        return index

    @computed_once
    def _by_family(self) -> Dict[Hashable, List[Node]]:
        if self._families is None:
            return self._grouped(family)
        return nodes_by_family(self._nodes, self._families)  # type: ignore[return-value]

    def _with_text(self, name: str, text: str) -> List[Node]:
        """The initial plan's nodes of family `name` and normalised text `text`, in printed
        order: only the nodes of that family have their text computed, each once, when the
        family is first asked for (a Union of thousands of branches, each with texts of its
        own, asks for thousands of texts of one family: one index, not a scan each)."""
        by_text = self._same_text.get(name)
        if by_text is None:
            by_text = self._same_text[name] = {}
            for node in self._by_family.get(name, ()):
                text_of_node = self._text(node)
                found = by_text.get(text_of_node)
                if found is None:
                    by_text[text_of_node] = [node]
                else:
                    found.append(node)
        return by_text.get(text) or []

    def _candidates(self, target: Node, text: str) -> List[Node]:
        """The initial nodes of the target's shape family and normalised text, in printed
        order (FileScan and Scan are one shape family: both lists merged, once per text)."""
        if _shape_family(target) != "Scan":
            return self._with_text(family(target), text)
        found = self._scans.get(text)
        if found is None:
            found = self._scans[text] = sorted(
                self._with_text("Scan", text) + self._with_text("FileScan", text),
                key=lambda node: self._order[id(node)])
        return found

    def _same_signature(self, target: Node, text: str) -> Optional[Node]:
        """The first initial node (in printed order) whose structural signature is the
        target's. Equal signatures start with equal shape families and texts, so only the
        nodes that agree on those have their subtrees' signatures computed: the first few
        compared in turn (one or two, most often, and the first is the answer), past those
        through one index of all of them by signature (a Union of thousands of copies of
        one subtree has thousands of candidates for each lookup)."""
        candidates = self._candidates(target, text)
        if not candidates:
            return None
        signatures = self._signatures
        memo = signatures._memo
        budget = [_COMPARE_BUDGET]
        wanted = memo.get(id(target))
        for node in candidates[:_IN_TURN]:
            known = memo.get(id(node))
            if wanted is not None and known is not None:
                equal: Optional[bool] = known == wanted
            else:
                equal = self._equal_subtrees(target, node, budget) if budget[0] > 0 else None
            if equal is None:  # too large to compare pair by pair: by signature
                if wanted is None:
                    wanted = signatures.of(target)
                equal = signatures.of(node) == wanted
            if equal:
                return node
        if len(candidates) <= _IN_TURN:
            return None
        # The first candidate of each signature (each subtree's signature is computed once
        # for the alignment): none of those compared above has the target's.
        key = (_shape_family(target), text)
        first = self._first_by_signature.get(key)
        if first is None:
            first = self._first_by_signature[key] = {}
            for node in candidates:
                first.setdefault(signatures.of(node), node)
        return first.get(signatures.of(target) if wanted is None else wanted)

    def _equal_subtrees(self, target: Node, node: Node, budget: List[int]) -> Optional[bool]:
        """Whether two subtrees have equal signatures, compared node pair by node pair (the
        same family, text and children looked through AQE's operators) and stopping at the
        first difference; None when the comparison runs out of `budget` (node pairs, shared
        by one lookup), so that large equal subtrees go to the memoised signatures.

        Families are read from `family`'s cache by name first (one dict lookup, no call):
        the diff asks this of every node pair of every candidate."""
        text = self._text
        known_equal = self._equal_pairs
        known = _FAMILY_OF_NAME
        aqe_families = _AQE_FAMILIES
        compared: List[Tuple[int, int]] = []
        stack = [(target, node)]
        while stack:
            if budget[0] <= 0:
                return None
            budget[0] -= 1
            left, right = stack.pop()
            if left is right:
                continue
            key = (id(left), id(right))
            if key in known_equal:
                continue
            compared.append(key)
            left_family = known.get(left.name)
            if left_family is None:
                left_family = family(left)
            right_family = known.get(right.name)
            if right_family is None:
                right_family = family(right)
            # The same shape family (`_shape_family`: FileScan and Scan are one).
            if left_family != right_family and not (
                    left_family in _SCAN_FAMILIES and right_family in _SCAN_FAMILIES):
                return False
            left_children, right_children = left.children, right.children
            if len(left_children) != len(right_children):
                return False
            # The same family, arguments and detail values print the same normalised text;
            # only when they differ is the text (without plan ids) computed and compared.
            if not (left.args == right.args and left_family == right_family
                    and tuple(left.details.values()) == tuple(right.details.values())) \
                    and text(left) != text(right):
                return False
            for below_left, below_right in zip(left_children, right_children):
                # `_through_aqe` of each
                while below_left.children and (known.get(below_left.name)
                                               or family(below_left)) in aqe_families:
                    below_left = below_left.children[0]
                while below_right.children and (known.get(below_right.name)
                                                or family(below_right)) in aqe_families:
                    below_right = below_right.children[0]
                stack.append((below_left, below_right))
        known_equal.update(compared)
        return True

    @computed_once
    def _by_shape(self) -> Dict[int, List[Node]]:
        return self._grouped(self._shapes.of)

    @computed_once
    def _by_expression(self) -> Dict[Tuple[str, str], List[Node]]:
        index: Dict[Tuple[str, str], List[Node]] = {}
        for node in self._nodes:
            for number in expression_ids(node):
                index.setdefault((_shape_family(node), number), []).append(node)
        return index

    @computed_once
    def _order(self) -> Dict[int, int]:
        return {id(node): number for number, node in enumerate(self._nodes)}

    def _text(self, node: Node) -> str:
        text = self._texts.get(id(node))
        if text is None:
            text = self._texts[id(node)] = normalized_text(node)
        return text

    def initial_for(self, final_node: Optional[Node]) -> Optional[Node]:
        if final_node is None:
            return None
        target = _through_aqe(final_node)
        if target.id is not None and target.id in self._by_id:
            return self._by_id[target.id]
        text = self._text(target)
        if _shape_family(target) != "Scan":
            # The answer is the first candidate of the same family and text whose subtree is
            # the target's, or else the first candidate (`shallow` below, the same list): with
            # one candidate it is that one, whatever a comparison of subtrees would say.
            candidates = self._with_text(family(target), text)
            if len(candidates) == 1:
                return candidates[0]
        same = self._same_signature(target, text)
        if same is not None:
            return same
        shallow = self._with_text(family(target), text)
        if shallow:
            return shallow[0]
        # Printed in another explain mode (formatted against simple): the same shape, and of
        # those the one computing the most of the same expression ids (the first of them in
        # printed order; the first of the shape when none computes any).
        wanted = expression_ids(target)
        shape = self._shapes.of(target)
        shaped = self._by_shape.get(shape)
        if shaped:
            return self._most_shared(target, wanted, shape) or shaped[0]
        # The subtree below changed too (a join switched under an exchange): the operator of
        # the same family that computes the most of the same expression ids, if any.
        return self._most_shared(target, wanted, None)

    def _most_shared(self, target: Node, wanted: Set[str], shape: Optional[int]) -> Optional[Node]:
        """The initial operator of the target's shape family (and of structural shape `shape`,
        unless None) that computes the most of the expression ids `wanted`, the first in
        printed order of those; None when none computes any. Found through an index by
        (family, expression id) rather than a scan, and once for each question (a Union of
        copies of one subtree, each naming the same ids, asks the same one many times)."""
        name = _shape_family(target)
        question = (name, shape, frozenset(wanted))
        if question in self._answers:
            return self._answers[question]
        shapes = self._shapes._memo  # every initial node's, once `_by_shape` is built
        shared: Dict[int, int] = {}
        nodes: Dict[int, Node] = {}
        for number in wanted:
            for node in self._by_expression.get((name, number), ()):
                if shape is not None and shapes.get(id(node)) != shape:
                    continue
                shared[id(node)] = shared.get(id(node), 0) + 1
                nodes[id(node)] = node
        answer = nodes[max(shared, key=lambda key: (shared[key], -self._order[key]))] \
            if shared else None
        self._answers[question] = answer
        return answer


EXPRESSION_ID = re.compile(r"#(\d{1,12})")


def expression_ids(node: Node) -> set:
    """The expression ids (`k#12L` -> `12`) an operator's arguments and details name."""
    return set(EXPRESSION_ID.findall(node.text))


def tree_text(root: Node) -> str:
    """Everything the tree's operators print of their arguments (args, descriptions,
    details), one part a line, not going into inner plans: what the tree-wide id searches
    read. An id never runs across two parts."""
    parts: List[str] = []
    add, extend = parts.append, parts.extend
    for node in root.walk(inner=False):
        add(node.args)
        if node.description:
            add(node.description)
        extend(node.details.values())
    return "\n".join(parts)


def tree_expression_ids(root: Node, text: Optional[str] = None) -> FrozenSet[str]:
    """The expression ids every operator of the tree names (`expression_ids` of each),
    found in one search over all their texts (`tree_text`, or `text` when already made)."""
    return frozenset(EXPRESSION_ID.findall(tree_text(root) if text is None else text))


#: A plan id as explain prints it (`[plan_id=47]`, 3.3+; `[id=#45]` before): the number.
PLAN_ID = re.compile(r"\[(?:plan_id=|id=#)(\d{1,12})\]")


def tree_plan_ids(root: Node, text: Optional[str] = None) -> FrozenSet[str]:
    """The plan ids the tree's operators print (in `tree_text`, or `text` when already made).
    Spark numbers every physical operator it builds from one counter of the driver, so two
    executions of one query (built twice, or re-planned) print other ids, and one execution
    printed again (another explain mode, AQE's `Final plan:` message) prints the same ones."""
    text = tree_text(root) if text is None else text
    return frozenset(PLAN_ID.findall(text)) if "id=" in text else frozenset()


def adaptive_marks(root: Node) -> Tuple[str, ...]:
    """What AQE decided where it decides, operator by operator in printed order, as every
    explain mode prints it: each join's strategy, skew marker and build side, each shuffle
    read's modes (`coalesced`, `skewed`, `local`), each empty relation. Two prints of one
    execution have the same marks; two runs of one query under other settings may not."""
    marks: List[str] = []
    for node in root.walk(inner=False):
        name = family(node)
        if name in JOINS:
            side = build_side(node)
            marks.append(" ".join(part for part in (
                name, "skew=true" if is_skew_join(node) else "", side or "") if part))
        elif name == "AQEShuffleRead":
            marks.append(" ".join((name, *shuffle_read_modes(node))))
        elif is_empty_relation(node):
            marks.append(f"{name} <empty>")
    return tuple(marks)


def _shape_family(node: Node) -> str:
    """The family, with simple mode's FileScan and formatted mode's Scan as one."""
    name = family(node)
    return "Scan" if name == "FileScan" else name


def shape(root: Node) -> Tuple[Tuple[int, str], ...]:
    """What a tree looks like whatever the explain mode printed it in: each operator's depth
    and family, in printed order, not going into inner plans nor initial trees. A formatted
    and a simple explain of one plan have the same shape."""
    out: List[Tuple[int, str]] = []
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        out.append((depth, _shape_family(node)))
        stack.extend((child, depth + 1) for child in reversed(node.children))
    return tuple(out)
