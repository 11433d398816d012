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

Signature = Tuple


def _through_aqe(node: Node) -> Node:
    """Below the query stages and shuffle reads AQE put in: the operator the initial plan had."""
    while (is_query_stage(node) or is_shuffle_read(node)) and node.children:
        node = node.children[0]
    return node


def _signature(node: Node, memo: Dict[int, Signature]) -> Signature:
    key = id(node)
    if key not in memo:
        children = tuple(_signature(_through_aqe(child), memo) for child in node.children)
        memo[key] = (family(node), normalized_text(node), children)
    return memo[key]


class Alignment:
    """Answers `initial_for(final_node)` for one adaptive plan."""

    def __init__(self, initial: Optional[Node], final: Node):
        self._memo: Dict[int, Signature] = {}
        self._by_id: Dict[int, Node] = {}
        self._by_signature: Dict[Signature, List[Node]] = {}
        self._by_shallow: Dict[Tuple[str, str], List[Node]] = {}
        if initial is None:
            return
        for node in initial.walk(inner=False):
            if node.id is not None:
                self._by_id.setdefault(node.id, node)
            self._by_signature.setdefault(_signature(node, self._memo), []).append(node)
            self._by_shallow.setdefault((family(node), normalized_text(node)), []).append(node)

    def initial_for(self, final_node: Optional[Node]) -> Optional[Node]:
        if final_node is None:
            return None
        target = _through_aqe(final_node)
        if target.id is not None and target.id in self._by_id:
            return self._by_id[target.id]
        same = self._by_signature.get(_signature(target, self._memo))
        if same:
            return same[0]
        shallow = self._by_shallow.get((family(target), normalized_text(target)))
        return shallow[0] if shallow else None
