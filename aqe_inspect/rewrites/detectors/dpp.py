"""dpp and dpp-dropped: what AQE made of a scan's planned dynamic partition pruning."""

from __future__ import annotations

import re
from typing import Dict, Iterator, Optional, Tuple

from ...plan.model import Node
from ...plan.operators import family, is_query_stage, mentions
from .base import Detector, PlanPair, Rewrite, describe

#: `dynamicpruningexpression(<value> IN dynamicpruning#N)`: a pruning filter with its subquery.
PRUNING_SUBQUERY = re.compile(r"dynamicpruningexpression\([^\n]*?\bIN dynamicpruning#(\d+)\)")
#: `dynamicpruningexpression(true)`: the placeholder left where a planned pruning was dropped.
PRUNING_DROPPED = "dynamicpruningexpression(true)"
PRUNING_NAME = re.compile(r"\bdynamicpruning#(\d+)")

REUSED, SUBQUERY = "reused", "subquery"
#: How the scan metrics (event logs, History Server) name the pruning's effect.
PARTITIONS_READ = "number of partitions read"
FILES_READ = "number of files read"
STATIC_FILES_READ = "static number of files read"
PRUNING_TIME = "dynamic partition pruning time"


def pruning_names(node: Node) -> Tuple[str, ...]:
    """The `dynamicpruning#N` subqueries a node's pruning filters read, in printed order."""
    text = node.text
    if "dynamicpruningexpression(" not in text:
        return ()
    return tuple(dict.fromkeys(m.group(1) for m in PRUNING_SUBQUERY.finditer(text)))


def _pruned_scans(pair: PlanPair) -> Tuple[Node, ...]:
    """The final plan's operators with a pruning filter (`dynamicpruningexpression(`), in
    printed order: found once for both detectors."""
    return tuple(node for node in pair.final_nodes()
                 if mentions(node, "dynamicpruningexpression("))


def is_dropped(node: Node) -> bool:
    return PRUNING_DROPPED in node.text


def _subquery_mode(pair: PlanPair, node: Node, number: str) -> Optional[str]:
    """How the values of `dynamicpruning#<number>` were computed: `reused` (a
    SubqueryBroadcast over the join's broadcast), `subquery` (a Subquery that scans the
    build side again), or None when the text does not print it."""
    for inner in node.inner:  # simple and extended modes, event logs: under the scan
        match = PRUNING_NAME.match(inner.args)
        if match is None or match.group(1) != number:
            continue
        if family(inner) == "SubqueryBroadcast":
            return REUSED
        if family(inner) == "Subquery":
            return SUBQUERY
    for subquery in pair.subqueries:  # formatted mode: the Subqueries section
        if f"dynamicpruning#{number}" not in subquery.hosting_expression or subquery.tree is None:
            continue
        return _tree_mode(subquery.tree)
    return None


def _tree_mode(tree: Node) -> str:
    """Formatted mode prints the pruning subquery's adaptive plan without its
    SubqueryBroadcast/Subquery head: a broadcast in its final plan is the join's, reused."""
    root = tree.children[0] if tree.is_adaptive_root and tree.children else tree
    for below in root.walk(inner=False):
        if family(below) in ("SubqueryBroadcast", "BroadcastExchange", "ReusedExchange") or (
                is_query_stage(below) and family(below) == "BroadcastQueryStage"):
            return REUSED
        if family(below) == "Subquery":
            return SUBQUERY
    return SUBQUERY


def _scan_figures(node: Node) -> Dict[str, object]:
    """What the scan's metrics say pruning did: partitions and files read, files pruned."""
    metrics = node.metrics
    numbers: Dict[str, object] = {}
    if PARTITIONS_READ in metrics:
        numbers["partitions_read"] = metrics[PARTITIONS_READ]
    if FILES_READ in metrics:
        numbers["files_read"] = metrics[FILES_READ]
    if STATIC_FILES_READ in metrics:
        numbers["static_files_read"] = metrics[STATIC_FILES_READ]
        if FILES_READ in metrics:
            numbers["files_pruned"] = max(0, metrics[STATIC_FILES_READ] - metrics[FILES_READ])
    if PRUNING_TIME in metrics:
        numbers["pruning_time_ms"] = metrics[PRUNING_TIME]
    return numbers


def _figures_text(numbers: Dict[str, object]) -> str:
    parts = []
    if "partitions_read" in numbers:
        parts.append(f"{numbers['partitions_read']} partition(s) read")
    if "files_pruned" in numbers:
        parts.append(f"{numbers['files_read']} of {numbers['static_files_read']} file(s) read, "
                     f"{numbers['files_pruned']} pruned")
    elif "files_read" in numbers:
        parts.append(f"{numbers['files_read']} file(s) read")
    return f" ({'; '.join(parts)})" if parts else ""


def _without_pruning(node: Node) -> str:
    """A scan's text with its pruning filters blanked, to find its initial counterpart."""
    text = PRUNING_SUBQUERY.sub("dynamicpruningexpression(?)", node.text)
    return " ".join(text.replace(PRUNING_DROPPED, "dynamicpruningexpression(?)").split())


def _initial_scan(pair: PlanPair, node: Node) -> Optional[Node]:
    """The initial plan's scan that `node` is: aligned, else the one that reads the same
    (its text the same but for the pruning filters)."""
    initial = pair.initial_for(node)
    if initial is not None or pair.initial is None:
        return initial
    wanted = _without_pruning(node)
    for candidate in pair.initial_nodes():
        if family(candidate) == family(node) and "dynamicpruningexpression(" in candidate.text \
                and _without_pruning(candidate) == wanted:
            return candidate
    return None


class DynamicPartitionPruning(Detector):
    """Spark rule: PlanAdaptiveDynamicPruningFilters (org.apache.spark.sql.execution.adaptive,
    3.2+), which plans each dynamic pruning filter once AQE knows the join it prunes for.

    The optimizer (PartitionPruning) puts a pruning filter on a partitioned scan whose
    partition column is a join key. Under AQE the initial plan holds it as
    `dynamicpruningexpression(p IN dynamicpruning#N)` over a `SubqueryAdaptiveBroadcast`;
    at run time AQE reuses the join's broadcast for it (`SubqueryBroadcast` over the
    broadcast stage: `reused`) or, with
    `spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly=false` and no broadcast
    join to reuse, runs a `Subquery` that aggregates the build side's keys, scanning it again
    (`subquery`; so on PySpark 3.5.9 and 4.3.0 alike). With `reuseBroadcastOnly` true (the
    default) such a filter is dropped instead (dpp-dropped).

    Before (initial plan):                      After (final plan):
        FileScan parquet [id,p] PartitionFilters:   FileScan parquet [id,p] PartitionFilters:
          [dynamicpruningexpression(p IN              [dynamicpruningexpression(p IN
           dynamicpruning#35)]                         dynamicpruning#35)]
        +- SubqueryAdaptiveBroadcast                +- SubqueryBroadcast dynamicpruning#35
           dynamicpruning#35, 0, true, ...             +- AdaptiveSparkPlan isFinalPlan=true
                                                          +- BroadcastQueryStage 1
                                                             +- ReusedExchange ...

    Formatted mode prints the subquery under `===== Subqueries =====` (`Subquery:1 Hosting
    operator id = 1 Hosting Expression = ... IN dynamicpruning#35`), without its head: a
    broadcast stage there is the join's, reused. One finding per scan. An event log's scan
    metrics add the figures: `number of partitions read`, `number of files read` against
    `static number of files read` (present only with a pruning subquery), `dynamic
    partition pruning time`.

    Configs: spark.sql.optimizer.dynamicPartitionPruning.enabled,
    spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly,
    spark.sql.exchange.reuse.
    """

    kind = "dpp"
    summary = ("a scan's dynamic pruning filter ran at run time, on the join's reused broadcast "
               "or a subquery (PlanAdaptiveDynamicPruningFilters)")
    spark_rule = "PlanAdaptiveDynamicPruningFilters"

    def detect(self, pair: PlanPair) -> Iterator[Rewrite]:
        if pair.is_final_plan is False:
            return  # printed before the action: AQE has not planned the filters yet
        for node in pair.shared("dpp", _pruned_scans):  # the others have no pruning_names
            names = pruning_names(node)
            if not names or any(family(inner) == "SubqueryAdaptiveBroadcast"
                                for inner in node.inner):
                continue
            modes = tuple(dict.fromkeys(
                mode for mode in (_subquery_mode(pair, node, n) for n in names) if mode))
            numbers: Dict[str, object] = {
                "pruning_subqueries": ", ".join(f"dynamicpruning#{n}" for n in names)}
            if modes:
                numbers["mode"] = " and ".join(modes)
            numbers.update(_scan_figures(node))
            how = {REUSED: "on the join's reused broadcast",
                   SUBQUERY: "by a subquery that scans the build side again"}
            said = " and ".join(how[mode] for mode in modes) or "(its subquery is not printed)"
            yield Rewrite(
                kind=self.kind, final_node=node, initial_node=pair.initial_for(node),
                message=(f"{describe(node)} is pruned at run time {said}"
                         + _figures_text(numbers)),
                evidence=tuple(f"dynamicpruningexpression(... IN dynamicpruning#{n})"
                               for n in names),
                numbers=numbers,
            )


class DynamicPruningDropped(Detector):
    """Spark rule: PlanAdaptiveDynamicPruningFilters (org.apache.spark.sql.execution.adaptive,
    3.2+), when it cannot run the planned pruning.

    AQE replaces a planned pruning filter with the literal `true` when there is no broadcast
    hash join whose broadcast it could reuse (the join stayed a sort-merge join, a hint or a
    size kept it from broadcasting) and `reuseBroadcastOnly` is true (the default). The scan
    then reads every partition.

    Before (initial plan):                      After (final plan):
        FileScan parquet [id,p] PartitionFilters:   FileScan parquet [id,p] PartitionFilters:
          [isnotnull(p), dynamicpruningexpression(    [isnotnull(p),
           p IN dynamicpruning#35)]                    dynamicpruningexpression(true)]
        +- SubqueryAdaptiveBroadcast ...

    Where the initial plan is printed, only a scan that had a pruning subquery there counts
    (a `true` already in the initial plan is the planner's). An event log's scan metrics
    give the partitions read.

    Configs: spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly,
    spark.sql.adaptive.autoBroadcastJoinThreshold, spark.sql.autoBroadcastJoinThreshold.
    """

    kind = "dpp-dropped"
    summary = ("a scan's planned dynamic pruning was dropped at run time: no broadcast to reuse "
               "(PlanAdaptiveDynamicPruningFilters)")
    spark_rule = "PlanAdaptiveDynamicPruningFilters"

    def detect(self, pair: PlanPair) -> Iterator[Rewrite]:
        if pair.is_final_plan is False:
            return
        for node in pair.shared("dpp", _pruned_scans):
            if not is_dropped(node):
                continue
            initial = _initial_scan(pair, node)
            if pair.initial is not None:
                if initial is None or is_dropped(initial) or not pruning_names(initial):
                    continue
            planned = pruning_names(initial) if initial is not None else ()
            numbers: Dict[str, object] = {}
            if planned:
                numbers["pruning_subqueries"] = ", ".join(f"dynamicpruning#{n}" for n in planned)
            numbers.update(_scan_figures(node))
            yield Rewrite(
                kind=self.kind, final_node=node, initial_node=initial,
                message=(f"{describe(node)} had its planned dynamic partition pruning dropped "
                         "(no broadcast join to reuse): it reads every partition"
                         + _figures_text(numbers)),
                evidence=(PRUNING_DROPPED,),
                numbers=numbers,
            )
