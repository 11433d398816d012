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
from ...plan.operators import PLAN_IDS, QUERY_STAGES, family, mentions, name_family
from .runtime import Evidence

#: The wrapper nodes sparkPlanInfo has and no physical-plan text prints as operators.
CODEGEN_STAGE = re.compile(r"WholeStageCodegen \((\d+)\)")
INPUT_ADAPTER = "InputAdapter"
#: Nodes whose sparkPlanInfo children are a plan printed elsewhere (as text they are leaves).
REUSED = ("ReusedExchange", "ReusedSubquery")
#: The family of AQE's shuffle reads (`CustomShuffleReader` before Spark 3.2).
SHUFFLE_READ = "AQEShuffleRead"
#: The mark of a plan id not read yet (`_exchange_plan_id`).
_NOT_READ: Any = object()
#: Children of an operator that are subquery plans (`plan.subqueries`), not inputs.
SUBQUERY_NAMES = ("Subquery", "SubqueryBroadcast", "SubqueryAdaptiveBroadcast", "ReusedSubquery")

#: How Spark ends a plan description it cut at `spark.sql.maxPlanStringLength`
#: (`PlanStringConcat`): `Truncated plan of N characters` when the length is 0, else the text
#: up to the length and `... N more characters`.
TRUNCATED = re.compile(r"(?:Truncated plan of \d+ characters|\.\.\. \d+ more characters)\s*\Z")


def usable_description(text: Optional[str]) -> bool:
    """Whether a `physicalPlanDescription` can be parsed: present, not blank, not cut."""
    return isinstance(text, str) and bool(text.strip()) and not TRUNCATED.search(text[-200:])


#: A note the parser made on damage it read through (`Damage.note`).
_DAMAGE_NOTE = re.compile(r"line \d+: ")


def with_plan_lines(query: Query, by_line: Optional[bool] = None) -> Query:
    """The query with its notes' and operators' lines said to be lines of its plan string
    (`plan line N: ...`; `Node.plan_line`), where an operator is named by its line (no id: a simple-mode description,
    spark.sql.ui.explainMode=simple); the same query otherwise (an id names each operator).
    Every tree is rebuilt once, without recursion, operators met twice kept shared.
    `by_line`: whether an operator is named by its line (`_named_by_line`), when the caller
    knows; else the trees are walked to tell."""
    if any(note.startswith("line ") for note in query.notes):
        # The parser's notes on damage (`Damage.note`: `line N: ...`) are of the plan string.
        query = dataclasses.replace(query, notes=tuple(
            "plan " + note if _DAMAGE_NOTE.match(note) else note for note in query.notes))
    if not (_named_by_line(query) if by_line is None else by_line):
        return query
    built: Dict[int, Node] = {}

    def rebuilt(root: Node) -> Node:
        stack: List[Tuple[Node, bool]] = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if id(node) in built:
                continue
            if ready:
                built[id(node)] = dataclasses.replace(
                    node, plan_line=bool(node.line),
                    children=tuple(built[id(c)] for c in node.children),
                    inner=tuple(built[id(c)] for c in node.inner),
                    initial=built[id(node.initial)] if node.initial is not None else None)
                continue
            stack.append((node, True))
            below = (*node.children, *node.inner,
                     *((node.initial,) if node.initial is not None else ()))
            stack.extend((child, False) for child in below if id(child) not in built)
        return built[id(root)]

    return dataclasses.replace(
        query, root=rebuilt(query.root),
        subqueries=tuple(dataclasses.replace(sub, tree=rebuilt(sub.tree))
                         if sub.tree is not None else sub for sub in query.subqueries),
        optimized_out=tuple(rebuilt(tree) for tree in query.optimized_out),
        undrawn=tuple(rebuilt(tree) for tree in query.undrawn))


def _named_by_line(query: Query) -> bool:
    """Whether an operator `query.walk()` meets has no id and a line: `any(node.id is None
    and node.line for node in query.walk())`, each node looked at once, without a generator
    step per node (asked of every execution)."""
    stack: List[Node] = [query.root, *query.subquery_trees(), *query.optimized_out]
    seen = set()
    while stack:
        node = stack.pop()
        if node.id is None and node.line:
            return True
        key = id(node)
        if key in seen:
            continue
        seen.add(key)
        stack.extend(node.children)
        stack.extend(node.inner)
        if node.initial is not None:
            stack.append(node.initial)
    return False


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
            # Its operators have no id only where printed `(unknown)` (`_operator`): without
            # that word in the text, none is named by its line.
            return with_plan_lines(query, None if "unknown" in text else False), None
        try:
            document = parse_text(text, source)
        except PlanSyntaxError as error:
            return None, (f"{what} could not be read ({error.message}); the tree is built "
                          f"from {fallback}")
        return (with_plan_lines(document.queries[0]) if document.queries else None), None
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
        if not match and name != INPUT_ADAPTER:
            return item, stage
        children = _children(item)
        if len(children) != 1:
            return item, stage
        stage = int(match.group(1)) if match else None
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
        key = metric.get("accumulatorId")
        # An id that is not a whole number (a list, an object, `3.0`) names no accumulator.
        value = values.get(key) if key.__class__ is int else None
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
    """The first plan id (`[plan_id=30]`, `[id=#28]`) in `node.text`, read part by part
    without joining the text: an id holds no space, so it stands within one part."""
    for part in (node.args, node.description):
        if part:
            match = PLAN_IDS.search(part)
            if match:
                return match.group(0)
    for part in node.details.values():
        if "id=" in part:  # in every plan id; most details (`Input`, `Output`) hold none
            match = PLAN_IDS.search(part)
            if match:
                return match.group(0)
    return None


def _exchange_key(node: Node, plan_ids: Optional[Dict[int, Optional[str]]] = None
                  ) -> Optional[Tuple[str, str]]:
    """(family, plan id of the exchange it is or stands over), for exchanges, query stages and
    shuffle reads. `plan_ids`: see `_exchange_plan_id`."""
    kind = family(node)
    plan_id = _exchange_plan_id(node, kind, {} if plan_ids is None else plan_ids)
    return (kind, plan_id) if plan_id else None


def _exchange_plan_id(node: Node, kind: str, plan_ids: Dict[int, Optional[str]]
                      ) -> Optional[str]:
    """The plan id of the exchange `node` (of family `kind`) is or stands over, below its
    shuffle reads and query stages. `plan_ids` keeps it by `id()` of each node on the way
    down (a read, its stage and the exchange ask for the same one)."""
    plan_id = plan_ids.get(id(node), _NOT_READ)
    if plan_id is not _NOT_READ:
        return plan_id
    passed = [node]
    below, below_kind = node, kind
    while (below_kind == SHUFFLE_READ or below_kind in QUERY_STAGES) and below.children:
        below = below.children[0]
        plan_id = plan_ids.get(id(below), _NOT_READ)
        if plan_id is not _NOT_READ:
            break
        passed.append(below)
        below_kind = family(below)
    if plan_id is _NOT_READ:
        plan_id = _plan_id(below)
    for each in passed:
        plan_ids[id(each)] = plan_id
    return plan_id


def carries_figures(node: Node) -> bool:
    """The operators whose run-time figures a report uses: exchanges (partitions, data size),
    the query stages over them, shuffle reads (coalesced, skewed partitions and splits), and
    scans with a dynamic pruning filter (partitions and files read)."""
    _, carrier, if_pruning = _TARGETS.get(node.name) or _target(node.name)
    return carrier is not None and (not if_pruning or mentions(node, PRUNING))


#: (family, carrier family or None, whether it carries figures only with a pruning filter)
#: of a text's operator, by its name: asked of every node of every plan; bounded, as
#: `name_family`'s cache is. `PRUNING` holds no space, so `mentions` finds it where
#: `node.text` would, without building the text.
_TARGETS: Dict[str, Tuple[str, Optional[str], bool]] = {}


def _target(name: str) -> Tuple[str, Optional[str], bool]:
    found = _TARGETS.get(name)
    if found is None:
        kind = name_family(name)
        if _stands_over(kind) or kind.endswith("Exchange"):
            found = (kind, kind, False)
        elif kind in SCANS:
            found = (kind, "Scan", True)
        else:
            found = (kind, None, False)
        if len(name) <= 100 and len(_TARGETS) < 4096:
            _TARGETS[name] = found
    return found


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
#: An operator's (metrics, spreads).
Figures = Tuple[Mapping[str, int], Mapping[str, Spread]]


def tree_carriers(info: Node) -> List[Carrier]:
    """The carriers of a tree built from sparkPlanInfo or the UI's graph."""
    plan_ids: Dict[int, Optional[str]] = {}
    return [(_carrier_family(family(n)), _exchange_key(n, plan_ids), n.metrics, n.spreads)
            for n in info.walk(inner=True) if carries_figures(n)]


#: What `info_carriers` does with a sparkPlanInfo node, by the family of its first word
#: (PASS, the most, is 0: false).
PASS, REUSED_PLAN, STANDS_OVER, EXCHANGE, SCAN = range(5)
#: (family, role) by a sparkPlanInfo node's first word: names repeat in every plan of a log;
#: bounded, as `name_family`'s cache is.
_ROLES: Dict[str, Tuple[str, int]] = {}


def _role(word: str) -> Tuple[str, int]:
    """(family, what `info_carriers` does with it) of an operator named `word`."""
    found = _ROLES.get(word)
    if found is None:
        kind = name_family(word)
        if kind in REUSED:
            role = REUSED_PLAN
        elif _stands_over(kind):
            role = STANDS_OVER
        elif kind.endswith("Exchange"):
            role = EXCHANGE
        elif kind in SCANS:
            role = SCAN
        else:
            role = PASS
        found = (kind, role)
        if len(word) <= 100 and len(_ROLES) < 4096:
            _ROLES[word] = found
    return found


def info_carriers(info: Mapping[str, Any], values: Mapping[int, int],
                  evidence: Optional[Evidence] = None) -> List[Carrier]:
    """The carriers of a sparkPlanInfo, read straight from its JSON (no tree is built): what
    `tree_carriers(build_tree(info, values, evidence=evidence))` gives, at a fraction of the
    cost, for a plan whose tree comes from its text.

    One walk, in printed order; each node's first word says at once (`_role`) whether it
    carries figures. A shuffle read or query stage is keyed by the plan id of the exchange
    below it, which the walk reaches next: a node's first child is the next one taken, so the
    nodes down to that exchange (past codegen wrappers and the stages between) come one after
    another, and the carriers wait in `waiting` until it comes."""
    found: List[Carrier] = []
    figures = evidence.figures if evidence is not None else None
    waiting: List[Tuple[int, Mapping[str, Any]]] = []  # (place in `found`, node)
    stack = [info]
    while stack:
        item = stack.pop()
        text = item.get("simpleString") or item.get("nodeName") or ""
        if text.__class__ is not str:
            text = text_of(text)
        word = text.partition(" ")[0]
        kind, role = _ROLES.get(word) or _role(word)
        children = None
        if waiting:
            children = _children(item)
            if _is_wrapper(item) and len(children) == 1:
                if role == REUSED_PLAN:  # its child is not walked: read the way down
                    _resolve(found, waiting, _below_plan_id(waiting[0][1]))
            elif not (role == STANDS_OVER and children):
                match = PLAN_IDS.search(text)
                _resolve(found, waiting, match.group(0) if match else None)
        if role == REUSED_PLAN:
            continue  # the plan it reuses is printed where it ran
        if role and (role != SCAN or PRUNING in text):  # most nodes PASS
            metrics = _metrics_of(item)
            if not metrics:  # a query stage, as a rule: no figures
                own: Figures = ({}, {})
            elif figures is not None:
                own = figures(metrics)
            else:
                own = (metric_values(metrics, values), {})
            if role == SCAN:
                found.append(("Scan", None, *own))
            else:
                if role == STANDS_OVER and children is None:
                    children = _children(item)
                if role == STANDS_OVER and children:
                    waiting.append((len(found), item))
                    found.append((kind, None, *own))  # keyed when its exchange comes
                else:
                    match = PLAN_IDS.search(text)
                    found.append((kind, (kind, match.group(0)) if match else None, *own))
        if children is not None:
            stack.extend(reversed(children))
        else:
            children = item.get("children")
            if isinstance(children, list):  # none, or a hostile `true`
                for child in reversed(children):
                    if isinstance(child, dict):
                        stack.append(child)
    return found


def _is_wrapper(item: Mapping[str, Any]) -> bool:
    """A `WholeStageCodegen (N)` or `InputAdapter` node (by its node name), which `_unwrap`
    passes through when it has one child."""
    name = item.get("nodeName")
    if name.__class__ is not str:  # the text of another JSON value is never a wrapper's name
        return False
    return name == INPUT_ADAPTER or (name.startswith("WholeStageCodegen")
                                     and CODEGEN_STAGE.fullmatch(name) is not None)


def _resolve(found: List[Carrier], waiting: List[Tuple[int, Mapping[str, Any]]],
             plan_id: Optional[str]) -> None:
    """The waiting carriers keyed by the plan id of the exchange they stand over."""
    for place, _ in waiting:
        kind, _, metrics, spreads = found[place]
        found[place] = (kind, (kind, plan_id) if plan_id else None, metrics, spreads)
    waiting.clear()


def _below_plan_id(item: Mapping[str, Any]) -> Optional[str]:
    """The plan id of the exchange a shuffle read or query stage of sparkPlanInfo stands over,
    read down its first children (past codegen wrappers), None when it prints none."""
    below, text = item, _text(item)
    while _role(text.partition(" ")[0])[1] == STANDS_OVER:
        under = _children(below)
        if not under:
            break
        below = _unwrap(under[0], None)[0]
        text = _text(below)
    match = PLAN_IDS.search(text)
    return match.group(0) if match else None


def _metrics_of(item: Mapping[str, Any]) -> List[Any]:
    """A node's `metrics` list; nothing when it is not a list (a hostile `true`)."""
    metrics = item.get("metrics")
    return metrics if isinstance(metrics, list) else []


def _text(item: Mapping[str, Any]) -> str:
    return text_of(item.get("simpleString") or item.get("nodeName") or "")


def _stands_over(kind: str) -> bool:
    """A shuffle read or query stage: the exchange it reads is below it."""
    return kind == SHUFFLE_READ or kind in QUERY_STAGES


def attach_metrics(root: Node, sources: List[Carrier]) -> Node:
    """`root` (parsed from text) with the metrics and spreads of `sources` (`info_carriers`,
    `tree_carriers`) on its exchanges, query stages and shuffle reads: paired by the plan id
    of the exchange, else by place among the operators of their family when both trees hold
    as many; the same tree when nothing pairs.

    One walk of the text's tree (in `root.walk(inner=True)`'s order) finds the operators that
    take figures and each visit's parent, so that only the paths from the changed operators
    up are rebuilt (`_rebuild_paths`), not the whole tree."""
    by_key: Dict[Tuple[str, str], Figures] = {}
    by_family: Dict[str, List[Figures]] = {}
    any_figures = False
    for kind, key, metrics, spreads in sources:
        if key is not None:
            by_key.setdefault(key, (metrics, spreads))
        by_family.setdefault(kind, []).append((metrics, spreads))
        any_figures = any_figures or bool(metrics or spreads)
    if not any_figures:
        return root
    visits: List[Node] = []
    parent_at: List[int] = []  # the index in `visits` of each visit's parent (-1: the root)
    # Each target's (visit index, family, carrier family).
    targets: List[Tuple[int, str, str]] = []
    # Each target's place among the text's nodes of its family, by `id()`: a node met twice
    # takes its last place, as it always has.
    place_of: Dict[int, int] = {}
    family_sizes: Dict[str, int] = {}
    initials: List[Node] = []  # initial plans of the walked adaptive plans (not walked here)
    stack: List[Node] = [root]
    owners: List[int] = [-1]
    while stack:
        node = stack.pop()
        at = len(visits)
        visits.append(node)
        parent_at.append(owners.pop())
        kind, carrier, if_pruning = _TARGETS.get(node.name) or _target(node.name)
        if carrier is not None and (not if_pruning or mentions(node, PRUNING)):
            place = family_sizes.get(carrier, 0)
            family_sizes[carrier] = place + 1
            place_of[id(node)] = place
            targets.append((at, kind, carrier))
        if node.initial is not None:
            initials.append(node.initial)
        # Pushed as `Node.walk` pushes them: children, then inner plans (walked first).
        children = node.children
        if children:
            stack.extend(reversed(children))
            owners.extend([at] * len(children))
        if node.inner:
            stack.extend(reversed(node.inner))
            owners.extend([at] * len(node.inner))
    # id(node) -> the fields it takes: {"metrics": ..., "spreads": ...}
    figures_of: Dict[int, Dict[str, Any]] = {}
    changed_at: List[int] = []  # the visits of the changed nodes
    plan_ids: Dict[int, Optional[str]] = {}
    for at, kind, carrier in targets:
        node = visits[at]
        plan_id = plan_ids.get(id(node), _NOT_READ)  # the exchange's, below a read or stage
        if plan_id is _NOT_READ:
            plan_id = _exchange_plan_id(node, kind, plan_ids)
        figures = by_key.get((kind, plan_id)) if plan_id else None
        if figures is None:
            theirs = by_family.get(carrier, [])
            if family_sizes[carrier] == len(theirs):
                figures = theirs[place_of[id(node)]]
        if figures and (figures[0] or figures[1]) and id(node) not in figures_of:
            figures_of[id(node)] = {"metrics": dict(figures[0]), "spreads": dict(figures[1])}
            changed_at.append(at)
    if not figures_of:
        return root
    if len(place_of) < len(targets):  # a node met twice: every place of a changed one
        changed_at = [at for at, _, _ in targets if id(visits[at]) in figures_of]
    if initials and _reaches(initials, figures_of):
        # An initial plan shares a changed operator: the general way.
        changes = {id(visits[at]): node_with(visits[at], figures_of[id(visits[at])])
                   for at in changed_at}
        return replace_nodes(root, changes)
    return _rebuild_paths(visits, parent_at, changed_at, figures_of)


def _reaches(roots: List[Node], changes: Mapping[int, Any]) -> bool:
    """Whether any node of the trees under `roots` (children, inner and initial plans, each
    node once) is one of `changes`."""
    seen = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        key = id(node)
        if key in changes:
            return True
        if key in seen:
            continue
        seen.add(key)
        stack.extend(node.children)
        stack.extend(node.inner)
        if node.initial is not None:
            stack.append(node.initial)
    return False


def _rebuild_paths(visits: List[Node], parent_at: List[int], changed_at: List[int],
                   fields_of: Mapping[int, Mapping[str, Any]]) -> Node:
    """What `replace_nodes(visits[0], changes)` gives, where each change is its node with
    `fields_of[id(node)]` (`node_with`), when `visits` is the walk of the tree in pre-order
    (`parent_at` each visit's parent) and no initial plan holds a changed node.

    The visits on a path from a changed one up are rebuilt, last visited first (a visit's
    subtree follows it in pre-order), each node once and with one copy (its new fields and
    new children together); the rest are kept as they are."""
    on_path = set(changed_at)
    over_changed = set()  # the visits with a child on a path: their children change
    for at in changed_at:
        at = parent_at[at]
        while at >= 0 and at not in over_changed:
            over_changed.add(at)
            on_path.add(at)
            at = parent_at[at]
    rebuilt: Dict[int, Node] = {}  # id(node) -> its replacement
    for at in sorted(on_path, reverse=True):
        node = visits[at]
        if id(node) in rebuilt:
            continue  # met before: one replacement for the node, wherever it stands
        fields = fields_of.get(id(node))
        if at in over_changed:  # a child on a path was rebuilt: a new object
            fields = {**fields} if fields else {}
            fields["children"] = tuple([rebuilt.get(id(child), child)
                                        for child in node.children])
            if node.inner:
                fields["inner"] = tuple([rebuilt.get(id(child), child) for child in node.inner])
        rebuilt[id(node)] = node_with(node, fields)
    return rebuilt[id(visits[0])]


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
