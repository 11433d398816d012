"""What every detector sees and returns."""

from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

from ..align import Alignment
from ..model import Node
from ..operators import family, is_query_stage, partition_count, partitioning


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

    @functools.cached_property
    def alignment(self) -> Alignment:
        return Alignment(self.initial, self.final, self.same_ids)

    @functools.cached_property
    def sort_merge_joins(self) -> Tuple[Tuple[Node, Node], ...]:
        """Each sort-merge join of the initial plan with the final join it became (paired once
        for both join-switch detectors)."""
        from .join_switch import pair_sort_merge_joins

        return tuple(pair_sort_merge_joins(self))

    def initial_for(self, final_node: Optional[Node]) -> Optional[Node]:
        """The operator of the initial plan that `final_node` stands for, if printed."""
        return self.alignment.initial_for(final_node)

    def final_nodes(self) -> Iterator[Node]:
        return iter(self._final_nodes)

    def initial_nodes(self) -> Iterator[Node]:
        return iter(self._initial_nodes)

    # Walked once for all detectors.
    @functools.cached_property
    def _final_nodes(self) -> Tuple[Node, ...]:
        return tuple(walk_own(self.final))

    @functools.cached_property
    def _initial_nodes(self) -> Tuple[Node, ...]:
        return tuple(walk_own(self.initial)) if self.initial is not None else ()


def walk_own(root: Node) -> Iterator[Node]:
    """The physical operators of one adaptive plan: not those of nested adaptive plans, nor
    the logical plan Spark 4 prints under an EmptyRelation."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        if (node is not root and node.is_adaptive_root) or family(node) == "EmptyRelation":
            continue
        below = [n for n in (*node.inner, *node.children) if not n.is_adaptive_root]
        stack.extend(reversed(below))


def exchange_below(node: Node) -> Optional[Node]:
    """The exchange a shuffle read or query stage reads: the first node below with a
    partitioning, looking through query stages."""
    queue = deque(node.children)
    while queue:
        below = queue.popleft()
        if partitioning(below) is not None:
            return below
        queue.extend(below.children)
    return None


def stage_statistics(node: Node) -> Optional[str]:
    """Runtime statistics of the query stage under a shuffle read, when Spark printed them."""
    for below in node.walk(inner=False):
        if is_query_stage(below) and below.statistics:
            return below.statistics
    return None


def exchange_numbers(node: Node, exchange: Optional[Node]) -> Tuple[List[str], dict]:
    """Evidence and figures of the shuffle `node` reads through `exchange`: partitioning and
    stage statistics."""
    evidence, numbers = [], {}
    if exchange is not None:
        spec = partitioning(exchange)
        evidence.append(f"{exchange.label}: {spec}")
        count = partition_count(exchange)
        if count is not None:
            numbers["shuffle_partitions"] = count
    stats = stage_statistics(node)
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
    #: True when only an initial plan can prove the rewrite (a join switch).
    needs_initial: bool = False

    @property
    def doc(self) -> str:
        return type(self).__doc__ or ""

    def detect(self, pair: PlanPair):  # pragma: no cover - every detector overrides it
        raise NotImplementedError
