"""The faster ways of putting an event log's SQL metrics onto a parsed plan give what the plain
ways gave, on every sample event log and under Hypothesis: `info_carriers` (one walk, roles by
first word, plan ids kept on the way down), `attach_metrics` (only the paths from the changed
operators up rebuilt, each node once), `Evidence.figures` (one look-up by accumulator id, the
metrics without a figure passed over), `_unwrap`.

The plain ways are kept here, as they were written, to compare with."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.parsing.formatted_plan import node_with
from aqe_inspect.plan.model import Node, Spread
from aqe_inspect.plan.operators import (PLAN_IDS, QUERY_STAGES, family, is_query_stage,
                                        is_shuffle_read, name_family)
from aqe_inspect.sources import deepjson
from aqe_inspect.sources.deepjson import text as text_of
from aqe_inspect.sources.eventlog import planinfo, search_event_logs
from aqe_inspect.sources.eventlog.events import Scanner
from aqe_inspect.sources.eventlog.planinfo import (attach_metrics, info_carriers,
                                                   read_description, replace_nodes,
                                                   tree_carriers)
from aqe_inspect.sources.eventlog.runtime import (NANOS_PER_MS, SPREAD_TYPES, Evidence, RunTime,
                                                  StageTasks, _in_ms, spread_of)

from .conftest import SAMPLE_PLANS

# ---- the plain ways, as they were -----------------------------------------------------------

CODEGEN_STAGE = re.compile(r"WholeStageCodegen \((\d+)\)")


def plain_figures(evidence: Evidence, metrics: Any) -> Tuple[Dict[str, int], Dict[str, Spread]]:
    totals: Dict[str, int] = {}
    spreads: Dict[str, Spread] = {}
    named: List[Tuple[str, int, str]] = []
    for metric in metrics:
        if not isinstance(metric, dict) or not metric.get("name"):
            continue
        key = metric.get("accumulatorId")
        if not isinstance(key, int):
            continue
        name = deepjson.text(metric["name"])
        kind = deepjson.text(metric.get("metricType") or "")
        named.append((name, key, kind))
        value = evidence.totals.get(key)
        if value is not None:
            totals[name] = value // NANOS_PER_MS if kind == "nsTiming" else value
        driver = evidence.runtime.driver_values.get(key)
        if driver is not None and len(driver) > 1 and kind in SPREAD_TYPES:
            spread = spread_of(_in_ms(driver, kind))
            if spread is not None:
                spreads[name] = spread
    if evidence.runtime.stages:
        spreads.update(evidence._task_spreads(named))
    return totals, spreads


def _name(item):
    return text_of(item.get("nodeName") or "")


def _children(item):
    children = item.get("children")
    if not isinstance(children, list):
        return []
    return [child for child in children if isinstance(child, dict)]


def plain_unwrap(item, stage):
    while True:
        name = _name(item)
        match = CODEGEN_STAGE.fullmatch(name)
        children = _children(item)
        if match and len(children) == 1:
            stage = int(match.group(1))
        elif name == "InputAdapter" and len(children) == 1:
            stage = None
        else:
            return item, stage
        item = children[0]


def _metrics_of(item):
    metrics = item.get("metrics")
    return metrics if isinstance(metrics, list) else []


def _text(item):
    return text_of(item.get("simpleString") or item.get("nodeName") or "")


def _stands_over(kind):
    return kind == "AQEShuffleRead" or kind in QUERY_STAGES


def _node_figures(metrics, values, evidence):
    if evidence is not None:
        return plain_figures(evidence, metrics)
    return planinfo.metric_values(metrics, values), {}


def plain_info_carriers(info, values, evidence=None):
    found = []
    stack = [info]
    while stack:
        item = stack.pop()
        text = _text(item)
        kind = name_family(text.partition(" ")[0])
        children = _children(item)
        if kind in planinfo.REUSED:
            children = []
        elif _stands_over(kind) or kind.endswith("Exchange"):
            below, below_text = item, text
            while _stands_over(name_family(below_text.partition(" ")[0])):
                under = _children(below)
                if not under:
                    break
                below = plain_unwrap(under[0], None)[0]
                below_text = _text(below)
            match = PLAN_IDS.search(below_text)
            key = (kind, match.group(0)) if match else None
            found.append((kind, key, *_node_figures(_metrics_of(item), values, evidence)))
        elif kind in planinfo.SCANS and planinfo.PRUNING in text:
            found.append(("Scan", None, *_node_figures(_metrics_of(item), values, evidence)))
        stack.extend(reversed(children))
    return found


def plain_exchange_key(node):
    below = node
    while (is_shuffle_read(below) or is_query_stage(below)) and below.children:
        below = below.children[0]
    match = PLAN_IDS.search(below.text)
    return (family(node), match.group(0)) if match else None


def plain_carries_figures(node):
    return is_shuffle_read(node) or is_query_stage(node) or family(node).endswith("Exchange") \
        or (family(node) in planinfo.SCANS and planinfo.PRUNING in node.text)


def _carrier_family(kind):
    return "Scan" if kind in planinfo.SCANS else kind


def plain_tree_carriers(info):
    return [(_carrier_family(family(n)), plain_exchange_key(n), n.metrics, n.spreads)
            for n in info.walk(inner=True) if plain_carries_figures(n)]


def plain_attach_metrics(root, sources):
    if not any(metrics or spreads for _, _, metrics, spreads in sources):
        return root
    by_key: Dict[Any, Any] = {}
    by_family: Dict[str, List[Any]] = {}
    for kind, key, metrics, spreads in sources:
        if key is not None:
            by_key.setdefault(key, (metrics, spreads))
        by_family.setdefault(kind, []).append((metrics, spreads))
    targets = [n for n in root.walk(inner=True) if plain_carries_figures(n)]
    text_by_family: Dict[str, List[Node]] = {}
    position: Dict[int, int] = {}
    for node in targets:
        same = text_by_family.setdefault(_carrier_family(family(node)), [])
        position[id(node)] = len(same)
        same.append(node)
    changes: Dict[int, Node] = {}
    for node in targets:
        key = plain_exchange_key(node)
        figures = by_key.get(key) if key is not None else None
        if figures is None:
            kind = _carrier_family(family(node))
            mine, theirs = text_by_family[kind], by_family.get(kind, [])
            if len(mine) == len(theirs):
                figures = theirs[position[id(node)]]
        if figures and (figures[0] or figures[1]) and id(node) not in changes:
            changes[id(node)] = node_with(node, {"metrics": dict(figures[0]),
                                                 "spreads": dict(figures[1])})
    return replace_nodes(root, changes) if changes else root  # unchanged: the module's


# ---- comparing --------------------------------------------------------------------------------

PARTS = ("children", "inner", "initial")


def shape(root: Node) -> List[Tuple[Any, ...]]:
    """A tree without recursion, as rows: each node (children, inner and initial plans, depth
    first, each object once, numbered where first met) as its own fields and the numbers of
    its parts, so that which nodes are one object counts too."""
    number: Dict[int, int] = {}
    rows: List[Tuple[Any, ...]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in number:
            continue
        number[id(node)] = len(number)
        parts = [*node.children, *node.inner, *([node.initial] if node.initial else [])]
        own = {k: v for k, v in node.__dict__.items() if k not in PARTS}
        rows.append((number[id(node)], own, len(node.children), len(node.inner),
                     node.initial is not None, *(id(p) for p in parts)))
        stack.extend(reversed(parts))
    return [(*row[:5], *(number.get(p, -1) for p in row[5:])) for row in rows]


def same_tree(new: Node, old: Node, given: Node) -> None:
    """The same tree, the same objects shared, the given tree kept exactly when the plain way
    kept it."""
    assert shape(new) == shape(old)
    assert (new is given) == (old is given)


# ---- on the samples: every execution of every sample event log -------------------------------

SAMPLE_LOGS = sorted(p for p in SAMPLE_PLANS.glob("spark-*/*/eventlog*") if p.is_file())


def _executions(path: Path, task_metrics: bool):
    log = search_event_logs(str(path)).logs[0]
    for raw in Scanner(log, [], task_metrics=task_metrics).executions():
        start = deepjson.loads(raw.start) if raw.start else None
        update = deepjson.loads(raw.update) if raw.update else None
        event = update if isinstance(update, dict) else start
        if not isinstance(event, dict):
            continue
        yield raw, event


@pytest.mark.parametrize("task_metrics", [False, True], ids=["totals", "tasks"])
@pytest.mark.parametrize("path", SAMPLE_LOGS, ids=lambda p: f"{p.parent.parent.name}/"
                         f"{p.parent.name}/{p.name}")
def test_metrics_on_a_samples_plans_are_the_plain_ways(path, task_metrics):
    assert SAMPLE_LOGS, "no sample event logs"
    for raw, event in _executions(path, task_metrics):
        evidence = Evidence(raw.accumulators, raw.runtime, [], raw.part)
        info = event.get("sparkPlanInfo")
        if not isinstance(info, dict):
            continue
        stack = [info]
        while stack:  # every node's figures
            item = stack.pop()
            metrics = _metrics_of(item)
            assert evidence.figures(metrics) == plain_figures(evidence, metrics)
            assert planinfo._unwrap(item, 3) == plain_unwrap(item, 3)
            stack.extend(_children(item))
        carriers = info_carriers(info, raw.accumulators, evidence)
        assert carriers == plain_info_carriers(info, raw.accumulators, evidence)
        assert info_carriers(info, raw.accumulators) == \
            plain_info_carriers(info, raw.accumulators)
        query, _ = read_description(event.get("physicalPlanDescription"), str(path), "", "")
        if query is not None:
            same_tree(attach_metrics(query.root, carriers),
                      plain_attach_metrics(query.root, carriers), query.root)
        tree = planinfo.build_tree(info, raw.accumulators, 0, evidence)
        assert tree_carriers(tree) == plain_tree_carriers(tree)
        if query is not None:  # the History Server's way: a built tree's carriers
            same_tree(attach_metrics(query.root, tree_carriers(tree)),
                      plain_attach_metrics(query.root, plain_tree_carriers(tree)), query.root)


# ---- under Hypothesis: hostile sparkPlanInfo, evidence and trees ------------------------------

NAMES = ["AQEShuffleRead", "ShuffleQueryStage", "BroadcastQueryStage", "ResultQueryStage",
         "Exchange", "BroadcastExchange", "ReusedExchange", "ReusedSubquery", "Project",
         "WholeStageCodegen (3)", "InputAdapter", "FileScan", "Scan", "BatchScan",
         "CustomShuffleReader", "GpuShuffleExchange", "GpuCustomShuffleReader", "Subquery"]
ARGS = ["", "coalesced", "[plan_id=12]", "[id=#7]", "hash [plan_id=5] [plan_id=6]",
        "dynamicpruningexpression(x)", "x [plan_id=5]"]
ODD = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False) | \
    st.lists(st.integers(0, 3), max_size=2) | st.text(max_size=4)

METRIC = st.one_of(
    st.fixed_dictionaries({
        "name": st.sampled_from(["data size", "local bytes read", "remote bytes read",
                                 "number of partitions", "fetch wait time", "t", ""]) | ODD,
        "accumulatorId": st.integers(0, 12) | st.sampled_from([True, 3.0, "4", None]),
        "metricType": st.sampled_from(["sum", "size", "timing", "nsTiming", ""]) | ODD,
    }),
    ODD)


def _info_node(children):
    return st.builds(
        lambda name, args, metrics, kids, odd_kids, simple: {
            "nodeName": name,
            "simpleString": simple if simple is not None else f"{name} {args}".strip(),
            "metrics": metrics,
            "children": kids if odd_kids is None else odd_kids},
        st.sampled_from(NAMES), st.sampled_from(ARGS),
        st.lists(METRIC, max_size=4) | ODD,
        st.lists(children | ODD, max_size=3),
        st.none() | st.none() | ODD,
        # The simple string of another operator than the node name says (a wrapper that
        # prints as a reused exchange, a stage that prints as a scan...), or odd.
        st.none() | st.none() | st.none() | ODD
        | st.tuples(st.sampled_from(NAMES), st.sampled_from(ARGS)).map(" ".join))


INFO = st.recursive(_info_node(st.nothing()), _info_node, max_leaves=25)

VALUES = st.lists(st.integers(0, 2 ** 40), min_size=1, max_size=5)


@st.composite
def evidences(draw) -> Evidence:
    totals = draw(st.dictionaries(st.integers(0, 12), st.integers(0, 2 ** 40), max_size=8))
    runtime = RunTime(driver_values=draw(st.dictionaries(st.integers(0, 12), VALUES,
                                                         max_size=6)))
    for stage_id in draw(st.lists(st.integers(0, 4), max_size=3, unique=True)):
        tasks = runtime.stages[stage_id] = StageTasks(count=draw(st.integers(0, 4)))
        for partition in draw(st.lists(st.integers(0, 5), max_size=4)):
            tasks.add(draw(st.integers(0, 1)), partition,
                      draw(st.dictionaries(st.integers(0, 12), st.integers(0, 99), max_size=4)))
    return Evidence(totals, runtime)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(info=INFO, evidence=evidences(),
       values=st.dictionaries(st.integers(0, 12), st.integers(0, 99), max_size=6))
def test_carriers_of_hostile_plan_info_are_the_plain_ways(info, evidence, values):
    assert info_carriers(info, values, evidence) == plain_info_carriers(info, values, evidence)
    assert info_carriers(info, values) == plain_info_carriers(info, values)
    metrics = _metrics_of(info)
    assert evidence.figures(metrics) == plain_figures(evidence, metrics)
    assert planinfo._unwrap(info, None) == plain_unwrap(info, None)


TEXT_NAMES = ["AQEShuffleRead", "ShuffleQueryStage", "BroadcastQueryStage", "Exchange",
              "BroadcastExchange", "Scan", "FileScan", "Project", "AdaptiveSparkPlan",
              "CustomShuffleReader", "Sort"]


def _text_node(children, leaf=False):
    kids = st.just([]) if leaf else st.lists(children, max_size=3)
    inner = st.just([]) if leaf else st.lists(children, max_size=1)
    return st.builds(
        lambda name, args, description, details, kids, inner: Node(
            name=name, args=args, description=description, details=details,
            children=tuple(kids), inner=tuple(inner)),
        st.sampled_from(TEXT_NAMES), st.sampled_from(ARGS),
        st.none() | st.sampled_from(ARGS),
        st.dictionaries(st.sampled_from(["Input", "Arguments"]), st.sampled_from(ARGS),
                        max_size=2),
        kids, inner)


TREES = st.recursive(_text_node(st.nothing(), leaf=True), _text_node, max_leaves=20)


@st.composite
def shared_trees(draw) -> Node:
    """A tree whose nodes may stand in several places, with initial plans that may be parts of
    it (a plan printed as one tree is its own initial plan) or trees of their own."""
    root = draw(TREES)
    nodes = list(root.walk())
    for _ in range(draw(st.integers(0, 3))):  # a node placed again elsewhere
        host = draw(st.sampled_from(nodes))
        guest = draw(st.sampled_from(nodes))
        if any(n is host for n in guest.walk(initial=True)):
            continue  # would make a cycle
        root = replace_nodes(root, {id(host): node_with(host, {
            "children": (*host.children, guest)})})
        nodes = list(root.walk())
    initial = draw(st.sampled_from(["none", "own", "part", "shared"]))
    if initial == "own":
        root = Node(name="AdaptiveSparkPlan", args="isFinalPlan=true", children=(root,),
                    initial=draw(TREES))
    elif initial == "part":
        root = Node(name="AdaptiveSparkPlan", args="isFinalPlan=false", children=(root,),
                    initial=root)
    elif initial == "shared":
        below = draw(st.sampled_from(nodes))
        root = Node(name="AdaptiveSparkPlan", args="isFinalPlan=true", children=(root,),
                    initial=Node(name="Sort", children=(below,)))
    return root


FIGURES = st.tuples(
    st.dictionaries(st.sampled_from(["rows", "data size"]), st.integers(0, 9), max_size=2),
    st.dictionaries(st.sampled_from(["bytes"]), st.just(Spread(1, 2, 3)), max_size=1))
CARRIERS = st.lists(st.builds(
    lambda kind, key, figures: (kind, key, *figures),
    st.sampled_from(["AQEShuffleRead", "ShuffleQueryStage", "Exchange", "BroadcastExchange",
                     "Scan", "BroadcastQueryStage"]),
    st.none() | st.tuples(st.sampled_from(["AQEShuffleRead", "Exchange", "ShuffleQueryStage"]),
                          st.sampled_from(["[plan_id=12]", "[id=#7]", "[plan_id=5]"])),
    FIGURES), max_size=8)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(root=shared_trees(), carriers=CARRIERS)
def test_metrics_onto_any_tree_are_the_plain_ways(root, carriers):
    same_tree(attach_metrics(root, carriers), plain_attach_metrics(root, carriers), root)
    assert tree_carriers(root) == plain_tree_carriers(root)


def test_metrics_onto_a_deep_tree():
    node = Node(name="Exchange", args="[plan_id=1]")
    for depth in range(5000):
        node = Node(name="AQEShuffleRead" if depth % 3 else "Project",
                    args=f"[plan_id={depth + 2}]", children=(node,))
    root = Node(name="AdaptiveSparkPlan", children=(node,), initial=node)
    carriers = [("Exchange", ("Exchange", "[plan_id=1]"), {"x": 2}, {}),
                ("AQEShuffleRead", ("AQEShuffleRead", "[plan_id=2]"), {"rows": 1}, {})]
    new = attach_metrics(root, carriers)
    same_tree(new, plain_attach_metrics(root, carriers), root)
    assert new.initial is new.children[0]  # still one plan, shared
    leaf, depth, measured = new, 0, []
    while leaf.children:
        leaf, depth = leaf.children[0], depth + 1
        if leaf.metrics:
            measured.append((depth, leaf.metrics))
    # The two reads over the lowest Project (plan_id=2), and the exchange at the bottom.
    assert measured == [(4998, {"rows": 1}), (4999, {"rows": 1}), (5001, {"x": 2})]


# ---- the report's JSON: which values msgspec writes -----------------------------------------

def plain_plain(value: Any) -> bool:
    """`report_json._plain` as it was."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = item.__class__
        if kind is dict:
            for key in item:
                if key.__class__ is not str:
                    return False
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif kind not in (str, int, bool, type(None)):
            return False
    return True


class Text(str):
    pass


REPORT_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
    | st.builds(Text, st.text(max_size=3)) | st.just(Node(name="Exchange")),
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.text(max_size=3) | st.integers(0, 3) | st.none(), inner, max_size=4),
    max_leaves=25)


@settings(max_examples=500, deadline=None)
@given(value=REPORT_VALUES)
def test_which_report_values_msgspec_writes_is_as_it_was(value):
    from aqe_inspect.formats.json_writer import _plain  # report_json writes through it

    assert _plain(value) == plain_plain(value)


def test_a_read_over_a_wrapper_printed_as_a_reused_exchange():
    """The walk does not go below a reused exchange: a read waiting for the exchange below such
    a wrapper reads its way down, as it always did."""
    exchange = {"nodeName": "Exchange", "simpleString": "Exchange x [plan_id=8]",
                "metrics": [{"name": "data size", "accumulatorId": 1, "metricType": "size"}]}
    wrapper = {"nodeName": "InputAdapter", "simpleString": "ReusedExchange [plan_id=3]",
               "children": [exchange]}
    read = {"nodeName": "AQEShuffleRead", "simpleString": "AQEShuffleRead coalesced",
            "metrics": [{"name": "number of partitions", "accumulatorId": 2,
                         "metricType": "sum"}],
            "children": [wrapper]}
    values = {1: 10, 2: 3}
    carriers = info_carriers(read, values)
    assert carriers == plain_info_carriers(read, values)
    assert carriers == [("AQEShuffleRead", ("AQEShuffleRead", "[plan_id=8]"),
                         {"number of partitions": 3}, {})]
