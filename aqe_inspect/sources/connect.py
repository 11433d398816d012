"""Spark Connect's metrics tree as the plan model: what a client without a JVM can read of the
plan an action ran.

After `df.collect()`, `toPandas()` or `toArrow()` on a Spark Connect DataFrame (PySpark 4.0+),
`df.executionInfo.metrics` holds one row per operator of the FINAL physical plan: its node name
(`AQEShuffleRead`, `SortMergeJoin(skew=true)`, `WholeStageCodegen (3)`), its plan id, its
parent's plan id, and its SQL metrics by key (`numCoalescedPartitions`) with value and type.
The server sends the rows depth first (SparkConnectPlanExecution), through the query stages;
the client keeps the rows of one parent in that order. No operator arguments come with them
(no join keys, no build side, no partitioning), and `show`, `count`, `take` and writes leave the
tree empty.

What the rows still prove, read as Spark writes them:

- an AQE shuffle read's metric KEYS are its mode (AQEShuffleReadExec.metrics, Spark 3.2+): a
  local read has `numPartitions` and no `partitionDataSize` ("we split the mapper partition
  evenly ... no data size info"), a read with a coalesced partition spec has
  `numCoalescedPartitions`, one with a skewed spec `numSkewedPartitions` and
  `numSkewedSplits`; so the read is printed back as `AQEShuffleRead local`, `coalesced`,
  `skewed` or `coalesced and skewed`, exactly as its `stringArgs` would say;
- a join split for skew is named `SortMergeJoin(skew=true)` (its `nodeName`);
- a query stage's plan id is its stage id (`QueryStageExec.id`);
- the join operator that ran (`BroadcastHashJoin`, `ShuffledHashJoin`), which against the
  initial plan (the same DataFrame's `explain("formatted")`, which after the action prints a
  new, not yet run plan) shows a switch.

`metrics_tree` builds the model (as a `sparkPlanInfo` tree is built: `WholeStageCodegen (N)`
becomes the `*(N)` stage of the operators in it, `InputAdapter` goes); `with_initial_plan`
joins it to the initial plan and carries each paired join's keys and join type over (AQE
re-plans a join over the same keys), so a switch can be found and shown.

May import what `sources` may: `parsing`, `plan`, `errors`, `signals`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ..errors import InspectError
from ..plan.model import INCOMPLETE_TAIL, Document, Node, Query
from ..plan.operators import (QUERY_STAGES, family, is_join, is_query_stage, is_shuffle_read,
                              name_family)
from .eventlog.planinfo import CODEGEN_STAGE, INPUT_ADAPTER, SUBQUERY_NAMES, metric_values, \
    replace_nodes

#: `Query.origin` of a plan read from a Connect client's metrics tree.
ORIGIN = "Spark Connect metrics"

#: The metric keys Spark's operators use, by the name the Spark UI (and the model) gives them.
METRIC_NAMES = {
    "numPartitions": "number of partitions",
    "numCoalescedPartitions": "number of coalesced partitions",
    "numSkewedPartitions": "number of skewed partitions",
    "numSkewedSplits": "number of skewed partition splits",
    "numEmptyPartitions": "number of empty partitions",
    "partitionDataSize": "partition data size",
    "numOutputRows": "number of output rows",
    "dataSize": "data size",
    "shuffleBytesWritten": "shuffle bytes written",
    "shuffleRecordsWritten": "shuffle records written",
    "shuffleWriteTime": "shuffle write time",
    "localBytesRead": "local bytes read",
    "remoteBytesRead": "remote bytes read",
    "recordsRead": "records read",
    "fetchWaitTime": "fetch wait time",
    "buildTime": "time to build",
    "broadcastTime": "time to broadcast",
    "collectTime": "time to collect",
    "spillSize": "spill size",
    "peakMemory": "peak memory",
    "numFiles": "number of files read",
    "filesSize": "size of files read",
    "pipelineTime": "duration",
}

#: What the metrics tree cannot show, for the report's notes.
NO_ARGUMENTS_NOTE = (
    "read from the Spark Connect metrics tree (DataFrame.executionInfo): operator names, "
    "structure and run-time metrics only; shuffle reads' modes are read from their metric "
    "keys, and no build side, partitioning or expression is shown")
JOIN_KEYS_NOTE = (
    "the final joins' keys and join types are those of the initial plan's join at the same "
    "place (AQE re-plans a join over the same keys); their build sides are not in the "
    "metrics")


#: The kinds the metrics tree cannot show: a scan's pruning filter and an exchange's origin
#: (REBALANCE) are operator arguments, which the tree leaves out, and an operator the final
#: plan lacks cannot be told apart from one the tree does not list (reused exchanges,
#: subqueries). They are not judged from the tree (see UNSHOWN_NOTE).
UNSHOWN_KINDS = ("dpp", "dpp-dropped", "rebalance-skew", "one-row", "limit-removed")
UNSHOWN_NOTE = (
    "not judged from the Spark Connect metrics tree: " + ", ".join(UNSHOWN_KINDS) + " (they "
    "rest on operator arguments and on operators the tree does not list); pass event_log= or "
    "ui_url= to read the server's whole plan text")


class MetricRow(NamedTuple):
    """One operator as `executionInfo.metrics` lists it: node name, plan id, the parent's
    plan id (the root's own id), and its metrics as (key, value, type)."""

    name: str
    plan_id: int
    parent_id: int
    metrics: Tuple[Tuple[str, Any, str], ...] = ()


def metrics_tree(rows: Sequence[MetricRow], source: str) -> Tuple[Query, Tuple[str, ...]]:
    """The final plan the rows describe, as a Query (its adaptive root marked final), with
    notes on what had to be decided while assembling it."""
    if not rows:
        raise InspectError("the Spark Connect metrics tree is empty", source=source)
    info, values, notes = _plan_info(rows, source)
    root = _build(info, values)
    reads = [node for node in root.walk(inner=False) if is_shuffle_read(node)]
    if root.is_adaptive_root:
        root = dataclasses.replace(root, is_final_plan=True)
    query = Query(root=root, mode="simple", source=source, origin=ORIGIN,
                  notes=(NO_ARGUMENTS_NOTE,) if reads or root.is_adaptive_root else ())
    return query, tuple(notes)


def with_initial_plan(query: Query, initial: Optional[Node]) -> Tuple[Query, Tuple[str, ...]]:
    """`query` (a metrics tree) with each final join that pairs with a join of `initial` (the
    plan the same DataFrame's explain prints) given that join's keys and join type."""
    if initial is None:
        return query, ()
    finals = [node for node in query.final.walk(inner=False) if is_join(node)]
    initials = [node for node in initial.walk(inner=False) if is_join(node)]
    pairs = _paired_joins(initials, finals)
    changes: Dict[int, Node] = {}
    for before, after in pairs:
        carried = {key: before.details[key] for key in
                   ("Left keys", "Right keys", "Join type", "Join condition")
                   if key in before.details}
        if not carried:
            continue
        changes[id(after)] = dataclasses.replace(after, details={**after.details, **carried})
    if not changes:
        return query, ()
    return dataclasses.replace(query, root=replace_nodes(query.root, changes)), \
        (JOIN_KEYS_NOTE,)


def with_cached_plans(query: Query, document: Document) -> Tuple[Query, Tuple[str, ...]]:
    """`query` (a metrics tree) with each cached scan given the cached relation the explain
    prints under the same scan: the tree lists a scan of a cached relation without what
    filled the cache (an operator's inner plan), while the explain printed after the action
    shows that relation's adaptive plan as it ran (isFinalPlan=true once the cache was
    filled). Scans are paired in order, and only when both list as many."""
    if not document.queries:
        return query, ()
    printed = [node for node in document.queries[0].root.walk(inner=False)
               if family(node) == "InMemoryTableScan" and node.inner]
    if not printed:
        return query, ()
    scans = [node for node in query.root.walk(inner=False)
             if family(node) == "InMemoryTableScan"]
    if len(scans) != len(printed):
        return query, (f"the explain shows {len(printed)} cached relation(s) and the metrics "
                       f"tree {len(scans)} cached scan(s); what AQE did inside the cached "
                       "relations is not read",)
    changes = {id(scan): dataclasses.replace(scan, inner=source.inner)
               for scan, source in zip(scans, printed) if not scan.inner}
    if not changes:
        return query, ()
    return dataclasses.replace(query, root=replace_nodes(query.root, changes)), ()


def initial_tree(document: Document) -> Optional[Node]:
    """The plan before AQE in a Document read from an explain printed after the action: its
    initial tree, else the tree it printed (not yet run, isFinalPlan=false)."""
    if not document.queries:
        return None
    query = document.queries[0]
    if query.initial is not None:
        return query.initial
    return query.final


def unseen_notes(document: Document) -> Tuple[str, ...]:
    """What the metrics tree of a plan cannot hold that its explain shows: the plans of
    subqueries (run apart, as expressions of an operator, each adaptive on its own)."""
    if not document.queries or not document.queries[0].subqueries:
        return ()
    count = len(document.queries[0].subqueries)
    return (f"the explain shows {count} subquery plan(s); Spark Connect's metrics tree holds "
            "only the main plan, so what AQE did inside them is not read (give event_log= or "
            "ui_url= to read the server's whole plan)" + INCOMPLETE_TAIL,)


def rows_from(items: Iterable[Any]) -> List[MetricRow]:
    """`MetricRow`s from what a client holds: PySpark's `PlanMetrics` objects (`name`,
    `plan_id`, `parent_plan_id`, `metrics` of `MetricValue`s) or their `to_dict()` form."""
    rows: List[MetricRow] = []
    for item in items:
        if isinstance(item, Mapping):
            name, plan_id, parent = item.get("name"), item.get("plan_id"), \
                item.get("parent_plan_id")
            metrics = item.get("metrics") or ()
        else:
            name, plan_id, parent = item.name, item.plan_id, item.parent_plan_id
            metrics = item.metrics or ()
        values = []
        for metric in metrics:
            if isinstance(metric, Mapping):
                values.append((str(metric.get("name")), metric.get("value"),
                               str(metric.get("type", metric.get("metric_type", "")))))
            else:
                values.append((str(metric.name), metric.value, str(metric.metric_type)))
        rows.append(MetricRow(str(name or "?"), int(plan_id), int(parent), tuple(values)))
    return rows


# ---- assembling the tree ---------------------------------------------------------------------

def _plan_info(rows: Sequence[MetricRow], source: str
               ) -> Tuple[Dict[str, Any], Dict[int, int], List[str]]:
    """The rows as one `sparkPlanInfo`-shaped tree (nodeName, simpleString, children, metrics
    with made-up accumulator ids) and the accumulators' values."""
    notes: List[str] = []
    by_id: Dict[int, List[int]] = {}
    for index, row in enumerate(rows):
        by_id.setdefault(row.plan_id, []).append(index)
    roots = [i for i, row in enumerate(rows)
             if row.parent_id == row.plan_id or row.parent_id not in by_id]
    if not roots:
        raise InspectError("the Spark Connect metrics tree has no root (every operator names "
                           "a parent)", source=source)
    root = next((i for i in roots if rows[i].name == "AdaptiveSparkPlan"), roots[0])
    if len(roots) > 1:
        notes.append(f"the Spark Connect metrics tree has {len(roots)} roots; read the one "
                     f"under {rows[root].name}")
    children = _children(rows, by_id, notes)
    values: Dict[int, int] = {}
    infos = [_info(row, values) for row in rows]
    seen = {root}
    stack = [root]
    while stack:
        index = stack.pop()
        for child in children.get(index, ()):
            if child in seen:  # a cycle or a row listed twice: each operator once
                continue
            seen.add(child)
            infos[index]["children"].append(infos[child])
            stack.append(child)
    return infos[root], values, notes


def _children(rows: Sequence[MetricRow], by_id: Mapping[int, List[int]],
              notes: List[str]) -> Dict[int, List[int]]:
    """Each row's children (by index, in the order listed). A query stage's plan id is its
    stage id, which may equal an operator's plan id: the rows under such an id are shared
    out, a query stage taking the exchange (or cached scan) below it."""
    under: Dict[int, List[int]] = {}
    for index, row in enumerate(rows):
        if row.parent_id != row.plan_id:
            under.setdefault(row.parent_id, []).append(index)
    children: Dict[int, List[int]] = {}
    for plan_id, owners in by_id.items():
        kids = under.get(plan_id, [])
        if len(owners) == 1:
            children[owners[0]] = kids
            continue
        left = list(kids)
        stages = [o for o in owners if name_family(_head(rows[o].name)) in QUERY_STAGES]
        others = [o for o in owners if o not in stages]
        for stage in stages:
            pick = next((k for k in left if _stage_input(rows[k].name)), None)
            if pick is None and left and rows[stage].name.startswith("ResultQueryStage"):
                pick = left[0]
            children[stage] = [pick] if pick is not None else []
            if pick is not None:
                left.remove(pick)
        if others:
            children[others[0]] = left
        if len(others) > 1:
            notes.append(f"{len(others)} operators of the Spark Connect metrics tree share "
                         f"plan id {plan_id}; the operators under it are put under the first")
    return children


def _head(name: str) -> str:
    return name.split(" ", 1)[0].split("(", 1)[0]


def _stage_input(name: str) -> bool:
    """Whether an operator is what a query stage wraps: an exchange or a cached scan."""
    head = name_family(_head(name))
    return head in ("Exchange", "BroadcastExchange", "ReusedExchange", "InMemoryTableScan",
                    "TableCacheQueryStage") or head.endswith("Exchange")


def _info(row: MetricRow, values: Dict[int, int]) -> Dict[str, Any]:
    """One row as a sparkPlanInfo node: its name, the string its arguments would print as
    far as the metrics tell them, and its metrics by the Spark UI's names."""
    metrics = []
    keys = set()
    for key, value, kind in row.metrics:
        number = _number(value, kind)
        keys.add(key)
        if number is None:
            continue
        accumulator = len(values)
        values[accumulator] = number
        metrics.append({"name": METRIC_NAMES.get(key, key), "accumulatorId": accumulator,
                        "metricType": kind})
    simple = row.name
    if is_query_stage(Node(name=_head(row.name))):
        simple = f"{row.name} {row.plan_id}"
    elif is_shuffle_read(Node(name=_head(row.name))):
        mode = read_mode(keys)
        simple = f"{row.name} {mode}" if mode else row.name
    return {"nodeName": row.name, "simpleString": simple, "children": [], "metrics": metrics,
            "planId": row.plan_id}


def read_mode(keys: Iterable[str]) -> str:
    """An AQE shuffle read's mode from its metric keys, as its `stringArgs` prints it."""
    keys = set(keys)
    if "numPartitions" not in keys:
        return ""  # no shuffle stage under it (a canonicalized plan): no metrics at all
    if "partitionDataSize" not in keys:
        return "local"
    coalesced, skewed = "numCoalescedPartitions" in keys, "numSkewedPartitions" in keys
    if coalesced and skewed:
        return "coalesced and skewed"
    return "coalesced" if coalesced else "skewed" if skewed else ""


def _number(value: Any, kind: str) -> Optional[int]:
    """A metric's value in the model's units (bytes, ms, counts); None when not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(str(value))
        except ValueError:
            return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    if kind == "nsTiming":
        value = value / 1_000_000
    return int(value)


def _build(info: Mapping[str, Any], values: Mapping[int, int]) -> Node:
    """The `Node` tree of the assembled rows, as `planinfo.build_tree` builds a sparkPlanInfo
    tree (codegen wrappers become the `*(N)` stage of the operators in them, `InputAdapter`
    goes, subquery plans are `inner`), each operator keeping its plan id. With a stack: a
    tree of any depth builds."""
    from ..parsing.operator_line import read_operator_line

    built: Dict[int, Node] = {}
    order: List[Tuple[Mapping[str, Any], Optional[int]]] = []
    stack = [_unwrap(info, None)]
    while stack:
        item, stage = stack.pop()
        order.append((item, stage))
        stack.extend(_unwrap(child, stage) for child in item["children"])
    for item, stage in reversed(order):
        children: List[Node] = []
        inner: List[Node] = []
        for child in item["children"]:
            node = built[id(_unwrap(child, stage)[0])]
            (inner if node.name in SUBQUERY_NAMES else children).append(node)
        text = item["simpleString"]
        try:
            parts = read_operator_line(text, 0)
            name, args = parts.name, parts.plain_args
        except Exception:  # noqa: BLE001 - a vendor's odd name still names an operator
            name, _, args = text.partition(" ")
        built[id(item)] = Node(
            name=name, args=args, id=item["planId"], codegen_stage=stage,
            whole_stage_codegen=stage is not None, title=item["nodeName"] or name,
            children=tuple(children), inner=tuple(inner),
            metrics=metric_values(item["metrics"], values))
    return built[id(_unwrap(info, None)[0])]


def _unwrap(item: Mapping[str, Any], stage: Optional[int]
            ) -> Tuple[Mapping[str, Any], Optional[int]]:
    """Below the wrappers no explain prints: the operator and the codegen stage it runs in."""
    while len(item["children"]) == 1:
        match = CODEGEN_STAGE.fullmatch(item["nodeName"])
        if match:
            stage = int(match.group(1))
        elif item["nodeName"] == INPUT_ADAPTER:
            stage = None
        else:
            break
        item = item["children"][0]
    return item, stage


# ---- pairing joins ---------------------------------------------------------------------------

def _paired_joins(initials: List[Node], finals: List[Node]) -> List[Tuple[Node, Node]]:
    """The initial plan's joins with the final plan's, by place: in order when both trees
    hold as many (AQE replaces a join where it stands, inputs in the same order); otherwise
    only the joins over the same inputs (the families of the scans below, in order), each
    such group paired in order when it is as large on both sides."""
    if len(initials) == len(finals):
        return list(zip(initials, finals))
    groups_before: Dict[Tuple[str, ...], List[Node]] = {}
    groups_after: Dict[Tuple[str, ...], List[Node]] = {}
    for node in initials:
        groups_before.setdefault(_leaves(node), []).append(node)
    for node in finals:
        groups_after.setdefault(_leaves(node), []).append(node)
    pairs = []
    for key, before in groups_before.items():
        after = groups_after.get(key, [])
        if len(after) == len(before):
            pairs.extend(zip(before, after))
    return pairs


def _leaves(root: Node) -> Tuple[str, ...]:
    """The families of the operators with nothing below them, left to right."""
    found, stack = [], [root]
    while stack:
        node = stack.pop()
        if not node.children:
            found.append(family(node))
        stack.extend(reversed(node.children))
    return tuple(found)
