"""Plan trees from Spark's `sparkPlanInfo` JSON, and run-time SQL metrics onto parsed trees.

Every SQL event of an event log carries the plan twice: as text (`physicalPlanDescription`,
in `spark.sql.ui.explainMode`) and as `sparkPlanInfo`, the tree the Spark UI draws:

    {"nodeName": "AQEShuffleRead", "simpleString": "AQEShuffleRead coalesced",
     "children": [...], "metadata": {...},
     "metrics": [{"name": "number of partitions", "accumulatorId": 62, "metricType": "sum"}]}

The text is what the detectors read best (formatted mode's details); `sparkPlanInfo` is the
fallback when the text is missing, empty or cut (`spark.sql.maxPlanStringLength`), and the
only place the metrics' accumulator ids are. `build_tree` turns it into the model's `Node`s
as simple mode would print it: `WholeStageCodegen (N)` becomes the `*(N)` stage of the
operators in it, `InputAdapter` goes, subquery plans become `inner` plans, a reused
exchange is a leaf. Built with a stack, not recursion: a tree of any depth builds.

`attach_metrics` carries run-time figures (`Node.metrics`, `Node.spreads`) onto the parsed
text's exchanges, query stages and shuffle reads, from the "carriers" of sparkPlanInfo (`info_carriers`, read from the JSON
without building a tree) or of a built tree (`tree_carriers`): paired by the plan id of the
exchange (`[plan_id=30]`, `[id=#28]`), which both forms print, else by order among the
operators of their family, when both hold the same number.
"""

from __future__ import annotations

import dataclasses
import re
from operator import is_not
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from ..deepjson import text as text_of
from ...errors import PlanSyntaxError
from ...parsing.formatted_plan import node_with
from ...plan.model import ADAPTIVE_ROOT, Node, Query, Spread
from ...plan.operators import (PLAN_IDS, QUERY_STAGES, family, is_query_stage, is_shuffle_read,
                          name_family)
from .runtime import Evidence

#: The wrapper nodes sparkPlanInfo has and no physical-plan text prints as operators.
CODEGEN_STAGE = re.compile(r"WholeStageCodegen \((\d+)\)")
INPUT_ADAPTER = "InputAdapter"
#: Nodes whose sparkPlanInfo children are a plan printed elsewhere (as text they are leaves).
REUSED = ("ReusedExchange", "ReusedSubquery")
#: Children of an operator that are subquery plans (`plan.subqueries`), not inputs.
SUBQUERY_NAMES = ("Subquery", "SubqueryBroadcast", "SubqueryAdaptiveBroadcast", "ReusedSubquery")

#: How Spark ends a plan description it cut at `spark.sql.maxPlanStringLength`
#: (`PlanStringConcat`): `Truncated plan of N characters` when the length is 0, else the text
#: up to the length and `... N more characters`.
TRUNCATED = re.compile(r"(?:Truncated plan of \d+ characters|\.\.\. \d+ more characters)\s*\Z")


def usable_description(text: Optional[str]) -> bool:
    """Whether a `physicalPlanDescription` can be parsed: present, not blank, not cut."""
    return isinstance(text, str) and bool(text.strip()) and not TRUNCATED.search(text[-200:])


def read_description(text: Any, source: str, what: str, fallback: str
                     ) -> Tuple[Optional[Query], Optional[str]]:
    """The query a plan description holds, or None with a note (`what` names the description,
    `fallback` where the tree comes from instead) when it is unreadable, cut or empty; None
    and no note when there is no description."""
    from ...parsing import parse_text
    from ...parsing.formatted_plan import parse_formatted

    if usable_description(text):
        query = parse_formatted(text, source)  # the plain shape, without the grammar
        if query is not None:
            return query, None
        try:
            document = parse_text(text, source)
        except PlanSyntaxError as error:
            return None, (f"{what} could not be read ({error.message}); the tree is built "
                          f"from {fallback}")
        return (document.queries[0] if document.queries else None), None
    if not isinstance(text, str):
        return None, None
    return None, (f"{what} is {'cut short' if text.strip() else 'empty'}; the tree is built "
                  f"from {fallback}")


def build_tree(info: Mapping[str, Any], values: Optional[Mapping[int, int]] = None,
               line: int = 0, evidence: Optional[Evidence] = None) -> Node:
    """The `Node` tree of one `sparkPlanInfo`; metrics get the values of their accumulators
    in `values` (those without a value are left out), or, given `evidence`, its totals and
    spreads."""
    values = values or {}
    # Frames: (info, codegen stage in force, is an inner (subquery) plan of its parent).
    # Post-order with a stack: a node is built once all nodes below it are.
    built: Dict[int, Node] = {}
    order: List[Tuple[Mapping[str, Any], Optional[int]]] = []
    stack: List[Tuple[Mapping[str, Any], Optional[int]]] = [(_unwrap(info, None))]
    while stack:
        item, stage = stack.pop()
        order.append((item, stage))
        if _name(item).split(" ")[0] in REUSED:
            continue
        for child in _children(item):
            stack.append(_unwrap(child, stage))
    for item, stage in reversed(order):
        children: List[Node] = []
        inner: List[Node] = []
        if _name(item).split(" ")[0] not in REUSED:
            for child in _children(item):
                unwrapped, _ = _unwrap(child, stage)
                node = built[id(unwrapped)]
                (inner if node.name in SUBQUERY_NAMES else children).append(node)
        built[id(item)] = _node(item, stage, children, inner, values, line, evidence)
    root_item, _ = _unwrap(info, None)
    return built[id(root_item)]


def _name(item: Mapping[str, Any]) -> str:
    return text_of(item.get("nodeName") or "")


def _children(item: Mapping[str, Any]) -> List[Mapping[str, Any]]:
    children = item.get("children")
    if not isinstance(children, list):  # none, or a hostile `true`
        return []
    return [child for child in children if isinstance(child, dict)]


def _unwrap(item: Mapping[str, Any], stage: Optional[int]
            ) -> Tuple[Mapping[str, Any], Optional[int]]:
    """Below the wrappers no text prints: the operator and the codegen stage it runs in."""
    while True:
        name = _name(item)
        match = CODEGEN_STAGE.fullmatch(name)
        children = _children(item)
        if match and len(children) == 1:
            stage = int(match.group(1))
        elif name == INPUT_ADAPTER and len(children) == 1:
            stage = None
        else:
            return item, stage
        item = children[0]


def _node(item: Mapping[str, Any], stage: Optional[int], children: List[Node],
          inner: List[Node], values: Mapping[int, int], line: int,
          evidence: Optional[Evidence]) -> Node:
    from ...parsing.operator_line import is_final_plan, read_operator_line

    text = text_of(item.get("simpleString") or item.get("nodeName") or "?")
    text = text.split("\n", 1)[0]
    try:
        parts = read_operator_line(text, line)
        name, args = parts.name, parts.plain_args
    except Exception:  # noqa: BLE001 - a vendor's odd string still names an operator
        name, _, args = text.partition(" ")
    metadata = item.get("metadata") or {}
    details = {str(k): text_of(v) for k, v in metadata.items()} if isinstance(metadata, dict) \
        else {}
    metrics, spreads = node_figures(_metrics_of(item), values, evidence)
    final = is_final_plan(args, details) if name == ADAPTIVE_ROOT else None
    return Node(name=name, args=args, codegen_stage=stage, whole_stage_codegen=stage is not None,
                title=_name(item) or name, details=details, children=tuple(children),
                inner=tuple(inner), is_final_plan=final, line=line, metrics=metrics,
                spreads=spreads)


def node_figures(metrics: Iterable[Any], values: Mapping[int, int],
                 evidence: Optional[Evidence] = None
                 ) -> Tuple[Dict[str, int], Dict[str, Spread]]:
    """(`Node.metrics`, `Node.spreads`) of a sparkPlanInfo node's `metrics` list: from
    `evidence` when given, else the totals in `values`."""
    if evidence is not None:
        return evidence.figures(metrics)
    return metric_values(metrics, values), {}


def metric_values(metrics: Iterable[Any], values: Mapping[int, int]) -> Dict[str, int]:
    """`{name: value}` of the metrics whose accumulators have a value."""
    found: Dict[str, int] = {}
    for metric in metrics:
        if not isinstance(metric, dict):
            continue
        value = values.get(metric.get("accumulatorId"))  # type: ignore[arg-type]
        if value is not None and metric.get("name"):
            found[text_of(metric["name"])] = value
    return found


def adaptive_tree(initial_info: Optional[Node], final_info: Node) -> Node:
    """One adaptive plan from two sparkPlanInfo trees: the final (or current) one, and the one
    the execution started with, set as its initial plan. A static plan is returned as is."""
    if not final_info.is_adaptive_root:
        return final_info
    initial = None
    if initial_info is not None and initial_info.is_adaptive_root and initial_info.children:
        initial = initial_info.children[0]
    return dataclasses.replace(final_info, initial=initial)


# ---- metrics onto a parsed tree ---------------------------------------------------------------

def _plan_id(node: Node) -> Optional[str]:
    match = PLAN_IDS.search(node.text)
    return match.group(0) if match else None


def _exchange_key(node: Node) -> Optional[Tuple[str, str]]:
    """(family, plan id of the exchange it is or stands over), for exchanges, query stages and
    shuffle reads."""
    below = node
    while (is_shuffle_read(below) or is_query_stage(below)) and below.children:
        below = below.children[0]
    plan_id = _plan_id(below)
    return (family(node), plan_id) if plan_id else None


def carries_figures(node: Node) -> bool:
    """The operators whose run-time figures a report uses: exchanges (partitions, data size),
    the query stages over them, shuffle reads (coalesced, skewed partitions and splits), and
    scans with a dynamic pruning filter (partitions and files read)."""
    return is_shuffle_read(node) or is_query_stage(node) or family(node).endswith("Exchange") \
        or (family(node) in SCANS and PRUNING in node.text)


#: The scan operators (a file scan prints `FileScan` in simple mode, `Scan` in formatted), one
#: family for pairing a text's scans with sparkPlanInfo's; `PRUNING` marks the ones whose
#: figures a report uses.
SCANS = ("FileScan", "Scan", "BatchScan")
PRUNING = "dynamicpruningexpression("


def _carrier_family(kind: str) -> str:
    return "Scan" if kind in SCANS else kind


#: One operator whose figures may pass to the text's tree: its family, the key of the
#: exchange it is or stands over (None when it prints no plan id), its metrics and spreads.
Carrier = Tuple[str, Optional[Tuple[str, str]], Mapping[str, int], Mapping[str, Spread]]


def tree_carriers(info: Node) -> List[Carrier]:
    """The carriers of a tree built from sparkPlanInfo or the UI's graph."""
    return [(_carrier_family(family(n)), _exchange_key(n), n.metrics, n.spreads)
            for n in info.walk(inner=True) if carries_figures(n)]


def info_carriers(info: Mapping[str, Any], values: Mapping[int, int],
                  evidence: Optional[Evidence] = None) -> List[Carrier]:
    """The carriers of a sparkPlanInfo, read straight from its JSON (no tree is built): what
    `tree_carriers(build_tree(info, values, evidence=evidence))` gives, at a fraction of the
    cost, for a plan whose tree comes from its text."""
    found: List[Carrier] = []
    stack = [info]
    while stack:
        item = stack.pop()
        text = _text(item)
        kind = name_family(text.partition(" ")[0])
        children = _children(item)
        if kind in REUSED:
            children = []  # the plan it reuses is printed where it ran
        elif _stands_over(kind) or kind.endswith("Exchange"):
            below, below_text = item, text
            while _stands_over(name_family(below_text.partition(" ")[0])):
                under = _children(below)
                if not under:
                    break
                below = _unwrap(under[0], None)[0]
                below_text = _text(below)
            match = PLAN_IDS.search(below_text)
            key = (kind, match.group(0)) if match else None
            found.append((kind, key, *node_figures(_metrics_of(item), values, evidence)))
        elif kind in SCANS and PRUNING in text:
            found.append(("Scan", None, *node_figures(_metrics_of(item), values, evidence)))
        stack.extend(reversed(children))
    return found


def _metrics_of(item: Mapping[str, Any]) -> List[Any]:
    """A node's `metrics` list; nothing when it is not a list (a hostile `true`)."""
    metrics = item.get("metrics")
    return metrics if isinstance(metrics, list) else []


def _text(item: Mapping[str, Any]) -> str:
    return text_of(item.get("simpleString") or item.get("nodeName") or "")


def _stands_over(kind: str) -> bool:
    """A shuffle read or query stage: the exchange it reads is below it."""
    return kind == "AQEShuffleRead" or kind in QUERY_STAGES


def attach_metrics(root: Node, sources: List[Carrier]) -> Node:
    """`root` (parsed from text) with the metrics and spreads of `sources` (`info_carriers`,
    `tree_carriers`) on its exchanges, query stages and shuffle reads: paired by the plan id
    of the exchange, else by place among the operators of their family when both trees hold
    as many; the same tree when nothing pairs."""
    if not any(metrics or spreads for _, _, metrics, spreads in sources):
        return root
    Figures = Tuple[Mapping[str, int], Mapping[str, Spread]]
    by_key: Dict[Tuple[str, str], Figures] = {}
    by_family: Dict[str, List[Figures]] = {}
    for kind, key, metrics, spreads in sources:
        if key is not None:
            by_key.setdefault(key, (metrics, spreads))
        by_family.setdefault(kind, []).append((metrics, spreads))
    targets = [n for n in root.walk(inner=True) if carries_figures(n)]
    text_by_family: Dict[str, List[Node]] = {}
    position: Dict[int, int] = {}  # id(node) -> its place among the text's nodes of its family
    for node in targets:
        same = text_by_family.setdefault(_carrier_family(family(node)), [])
        position[id(node)] = len(same)
        same.append(node)
    changes: Dict[int, Node] = {}
    for node in targets:
        key = _exchange_key(node)
        figures = by_key.get(key) if key is not None else None
        if figures is None:
            kind = _carrier_family(family(node))
            mine, theirs = text_by_family[kind], by_family.get(kind, [])
            if len(mine) == len(theirs):
                figures = theirs[position[id(node)]]
        if figures and (figures[0] or figures[1]) and id(node) not in changes:
            changes[id(node)] = node_with(node, {"metrics": dict(figures[0]),
                                                 "spreads": dict(figures[1])})
    return replace_nodes(root, changes) if changes else root


def replace_nodes(root: Node, changes: Mapping[int, Node]) -> Node:
    """`root` with the nodes keyed by `id()` in `changes` replaced, every ancestor rebuilt
    (without recursion); nodes shared between trees stay shared."""
    done: Dict[int, Node] = {}
    # A node is pushed on the way down, and again as a 1-tuple to be built on the way up.
    stack: List[Any] = [root]
    while stack:
        item = stack.pop()
        if item.__class__ is tuple:
            node = item[0]
            new = changes.get(id(node), node)
            children, inner, initial = node.children, node.inner, node.initial
            kids = tuple([done[id(c)] for c in children])
            inside = tuple([done[id(c)] for c in inner]) if inner else inner
            first = done[id(initial)] if initial is not None else None
            if first is not initial or any(map(is_not, kids, children)) or \
                    any(map(is_not, inside, inner)):
                new = node_with(new, {"children": kids, "inner": inside, "initial": first})
            done[id(node)] = new
        elif id(item) not in done:
            stack.append((item,))
            stack.extend(item.children)
            stack.extend(item.inner)
            if item.initial is not None:
                stack.append(item.initial)
    return done[id(root)]
