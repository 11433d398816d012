"""Pair the operators of a final plan with those of the initial plan they came from.

By operator id first: formatted mode gives the same id to an operator object that both trees
share. Otherwise by structure: the same operator over the same inputs, where query stages and
shuffle reads (which only the final plan has) are looked through, and plan ids (`[id=#N]`,
`[plan_id=N]`), which Spark renumbers when it re-plans, are ignored.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .model import Node
from .operators import family, is_query_stage, is_shuffle_read, normalized_text


def _through_aqe(node: Node) -> Node:
    """Below the query stages and shuffle reads AQE put in: the operator the initial plan had."""
    while (is_query_stage(node) or is_shuffle_read(node)) and node.children:
        node = node.children[0]
    return node


class _Signatures:
    """Structural signatures as small integers: equal integers, equal subtrees (same family,
    same normalised text, same children's signatures). Computed bottom-up without recursion,
    so a tree thousands of levels deep costs no stack."""

    def __init__(self):
        self._ids: Dict[Tuple, int] = {}
        self._memo: Dict[int, int] = {}

    def of(self, root: Node) -> int:
        memo = self._memo
        stack = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if id(node) in memo:
                continue
            below = [_through_aqe(child) for child in node.children]
            if not ready:
                stack.append((node, True))
                stack.extend((child, False) for child in below if id(child) not in memo)
                continue
            key = (family(node), normalized_text(node), tuple(memo[id(c)] for c in below))
            memo[id(node)] = self._ids.setdefault(key, len(self._ids))
        return memo[id(root)]


class Alignment:
    """Answers `initial_for(final_node)` for one adaptive plan."""

    def __init__(self, initial: Optional[Node], final: Node):
        self._signatures = _Signatures()
        self._by_id: Dict[int, Node] = {}
        self._by_signature: Dict[int, List[Node]] = {}
        self._by_shallow: Dict[Tuple[str, str], List[Node]] = {}
        if initial is None:
            return
        for node in initial.walk(inner=False):
            if node.id is not None:
                self._by_id.setdefault(node.id, node)
            self._by_signature.setdefault(self._signatures.of(node), []).append(node)
            self._by_shallow.setdefault((family(node), normalized_text(node)), []).append(node)

    def initial_for(self, final_node: Optional[Node]) -> Optional[Node]:
        if final_node is None:
            return None
        target = _through_aqe(final_node)
        if target.id is not None and target.id in self._by_id:
            return self._by_id[target.id]
        same = self._by_signature.get(self._signatures.of(target))
        if same:
            return same[0]
        shallow = self._by_shallow.get((family(target), normalized_text(target)))
        return shallow[0] if shallow else None


def shape(root: Node) -> Tuple[Tuple[int, str], ...]:
    """What a tree looks like whatever the explain mode printed it in: each operator's depth
    and family, in printed order, not going into inner plans nor initial trees. A formatted
    and a simple explain of one plan have the same shape."""
    out: List[Tuple[int, str]] = []
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        name = family(node)
        out.append((depth, "Scan" if name == "FileScan" else name))
        stack.extend((child, depth + 1) for child in reversed(node.children))
    return tuple(out)
