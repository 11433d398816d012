"""The tools' answers, made by the library (`aqe_inspect.api`) with no MCP in sight: each is the
JSON contract the command line prints (`--format json`), as a dictionary, and a few lines of
text an agent can quote. The server (`server.py`) checks the arguments (`access.py`), runs
these in a worker thread and pages the long lists (`paging.py`).

`plans` is the one answer without a command of its own: the trees `parse --format json`
prints, node by node in a flat list (a tree 5,000 operators deep pages like any list and no
JSON nests past a few levels), each node with the rewrites AQE made at it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .. import api
from ..errors import InspectError

#: The schema of the `plans` answer (the other answers keep the command line's).
PLANS_SCHEMA = "aqe-inspect/mcp-plans/v1"
EXECUTIONS_SCHEMA = "aqe-inspect/mcp-executions/v1"
RULES_SCHEMA = "aqe-inspect/mcp-rules/v1"
#: The most nodes the plans answer lists (a shared subtree counts once per parent).
MOST_NODES = 200_000
#: Lines of a summary at most (the structured answer holds everything).
SUMMARY_LINES = 12
#: The why-not candidates a summary shows, each with every reason (the structured answer
#: holds them all).
SUMMARY_CANDIDATES = 12


@dataclass(frozen=True)
class Source:
    """One input, as the access rules resolved it: a path or a URL."""

    path: Optional[str] = None
    url: Optional[str] = None
    #: The argument as the agent gave it (the summaries name it so).
    given: str = ""

    @property
    def name(self) -> str:
        return self.path if self.path is not None else str(self.url)

    @property
    def shown(self) -> str:
        return self.given or self.name


@dataclass(frozen=True)
class Answer:
    """A tool's answer: the JSON contract (`data`), the list in it that pages (`listed`, a key
    of `data`; None when nothing pages) and the text summary."""

    data: Dict[str, Any]
    summary: str
    listed: Optional[str] = None


def _json(result: Any) -> Dict[str, Any]:
    return json.loads(api.rendered(result, "json"))


def _lines(lines: Sequence[str]) -> str:
    shown = list(lines[:SUMMARY_LINES])
    if len(lines) > SUMMARY_LINES:
        shown.append(f"... and {len(lines) - SUMMARY_LINES} more (see the structured answer)")
    return "\n".join(shown)


def _counted(counts: Dict[str, int]) -> str:
    found = [f"{kind} {number}" for kind, number in counts.items() if number]
    return ", ".join(found) if found else "no rewrite"


# ---- the tools ------------------------------------------------------------------------------

def diff(source: Source, query: Optional[str], max_size: str) -> Answer:
    data = _json(api.diff_input(source.path, url=source.url, query=query,
                                max_size=max_size, for_format="json"))
    lines = []
    for each in data.get("queries", []):
        rewrites = each.get("rewrites", [])
        label = each.get("description") or f"query {each.get('id')}"
        lines.append(f"{_unit(each)} {each.get('id')} ({label}): {len(rewrites)} rewrite(s)"
                     f"{'' if each.get('is_final_plan', True) else ', plan not final'}")
        lines.extend(f"  {rewrite.get('kind')}: {rewrite.get('message')}"
                     for rewrite in rewrites)
    if not lines:
        lines.append(f"no query in {source.shown}")
    return Answer(data, _lines(lines), "queries")


def list_executions(source: Source, max_size: str) -> Answer:
    """One row per SQL execution (per query for a plan text or driver log): what `diff --format
    json` says of each, without its rewrites' details."""
    report = _json(api.diff_input(source.path, url=source.url, max_size=max_size,
                                  for_format="json"))
    rows = []
    for each in report.get("queries", []):
        counts = each.get("counts") or {}
        rows.append({
            "file": each.get("part") or each.get("source"),
            "id": each.get("id"),
            "execution_id": each.get("execution_id"),
            "description": each.get("description"),
            "duration_ms": each.get("duration_ms"),
            "finished": each.get("finished", each.get("is_final_plan")),
            "status": each.get("status"),
            "is_final_plan": each.get("is_final_plan"),
            "rewrites": sum(counts.values()),
            "counts": {kind: number for kind, number in counts.items() if number},
            "line": each.get("line"),
        })
    data = {"schema": EXECUTIONS_SCHEMA, "source": report.get("source", source.name),
            "application": report.get("application"), "executions": rows,
            "notes": report.get("notes", [])}
    unfinished = sum(1 for row in rows if row["finished"] is False)
    total: Dict[str, int] = {}
    for row in rows:
        for kind, number in row["counts"].items():
            total[kind] = total.get(kind, 0) + number
    summary = (f"{len(rows)} {'execution' if _is_log(report) else 'query'}(s) in "
               f"{source.shown}" + (f", {unfinished} not finished" if unfinished else "") +
               f"; rewrites: {_counted(total)}")
    return Answer(data, summary, "executions")


def plans(source: Source, query: Optional[str], max_size: str) -> Answer:
    """The initial and final trees of each query chosen, node by node (pre-order: a node, its
    children, its inner plans, a nested adaptive plan's initial plan), each with the
    rewrites found at it."""
    document = api.read_document(source.path, url=source.url, max_size=max_size, query=query)
    report = api.diff(document)
    from ..formats.parse_json import _expanded, _query_fields, application_fields

    nodes: List[Dict[str, Any]] = []
    queries = []
    for number, query_report in enumerate(report.queries):
        plan = query_report.query
        header = _query_fields(plan)
        for key in ("trees", "subqueries"):
            header.pop(key)
        marks = _marks(query_report)
        first = len(nodes)
        for tree, root in _trees(plan):
            nodes.extend(_flat(root, tree, number, marks, plan.initial, len(nodes)))
        queries.append({"id": query_report.id, **_expanded(header), "nodes": len(nodes) - first})
    data = {"schema": PLANS_SCHEMA, "source": document.source, "queries": queries,
            "nodes": nodes, "notes": list(document.notes),
            "application": application_fields(document.application)}
    sizes: Dict[Tuple[int, str], int] = {}
    for node in nodes:
        sizes[node["query"], node["tree"]] = sizes.get((node["query"], node["tree"]), 0) + 1
    lines = [f"{_unit(each)} {each['id']}: " +
             ", ".join(f"{tree} tree {count} node(s)" for (at, tree), count in sizes.items()
                       if at == number)
             for number, each in enumerate(queries)]
    marked = [node for node in nodes if node["rewrites"]]
    lines.extend(f"  {node['tree']} {node['name']} ({node['id']}): "
                 f"{', '.join(mark['kind'] for mark in node['rewrites'])}" for node in marked)
    return Answer(data, _lines(lines or [f"no plan in {source.shown}"]), "nodes")


def advise(source: Source, query: Optional[str], kinds: Sequence[str], max_size: str,
           conf: Sequence[str] = (), spark_version: Optional[str] = None) -> Answer:
    """`aqe-inspect advise --format json`; the summary: each change as KEY=VALUE with its
    headroom, each decision no setting changes, what the input lacks."""
    data = _json(api.advise(source.path, url=source.url, query=query, kinds=kinds, conf=conf,
                            spark_version=spark_version, max_size=max_size, for_format="json"))
    lines: List[str] = []
    for each in data.get("queries", []):
        lines.append(f"{each.get('label') or each.get('id')}:")
        lines.extend(f"  incomplete: {lack}" for lack in each.get("incomplete") or ())
        if each.get("nothing"):
            lines.append(f"  nothing to change: {each['nothing']}")
        for change in each.get("changes") or ():
            lines.append(f"  {change.get('kind')} at {change.get('node')}: set "
                         f"{change.get('key')}={change.get('value')} ({change.get('headroom')})")
        for item in each.get("fixed") or ():
            lines.append(f"  {item.get('kind')} at {item.get('node')}: {item.get('text')}")
    settings = data.get("settings") or []
    lines.append("settings: " + (" ".join(f"--conf {s['key']}={s['value']}" for s in settings)
                                 or "none to change"))
    return Answer(data, _lines(lines), "queries")


def why(source: Source, query: Optional[str], kinds: Sequence[str], max_size: str,
        conf: Sequence[str] = (), spark_version: Optional[str] = None) -> Answer:
    """Each candidate with its verdict, then every reason and need on a line of its own (the
    setting that decided is rarely the first reason): what the agent quotes."""
    data = _json(api.why(source.path, url=source.url, query=query, kinds=kinds, conf=conf,
                         spark_version=spark_version, max_size=max_size, for_format="json"))
    lines: List[str] = []
    shown = hidden = 0
    for each in data.get("queries", []):
        candidates = each.get("candidates", [])
        lines.append(f"{each.get('label') or each.get('id')}: {len(candidates)} candidate(s)")
        for candidate in candidates:
            if shown == SUMMARY_CANDIDATES:
                hidden += 1
                continue
            shown += 1
            lines.append(f"  {candidate.get('kind')} at {candidate.get('node')}: "
                         f"{candidate.get('verdict')}")
            lines.extend(f"    - {reason.get('text', '')}"
                         for reason in candidate.get("reasons") or ())
            lines.extend(f"    - needs {need}" for need in candidate.get("needs") or ())
    if hidden:
        lines.append(f"... and {hidden} more candidate(s) (see the structured answer)")
    return Answer(data, "\n".join(lines or [f"no query in {source.shown}"]), "queries")


def check(source: Source, expect: Sequence[str], forbid: Sequence[str], config: Optional[str],
          each: bool, query: Optional[str], max_size: str, judge_unfinished: bool) -> Answer:
    if not expect and not forbid and config is None:
        raise InspectError("nothing to check: give expect (e.g. [\"coalesced\"]), forbid, "
                           "or config (an aqe-expect.toml)")
    data = _json(api.check_input(source.path, url=source.url, expect=expect, forbid=forbid,
                                 config=config, each=each, query=query, max_size=max_size,
                                 for_format="json", judge_unfinished=judge_unfinished))
    lines = [f"{str(data.get('status', '')).upper() or 'DONE'}: {data.get('query_count')} "
             f"quer{'y' if data.get('query_count') == 1 else 'ies'} of {source.shown}"]
    lines.extend(f"  {item.get('status')}: {item.get('message')}"
                 for item in data.get("expectations", []))
    return Answer(data, _lines(lines), "queries")


def compare(old: Source, new: Source, fail_on: Sequence[str], max_size: str,
            judge_unfinished: bool, allow_missing: bool = False) -> Answer:
    result = api.compare(old.name, new.name, fail_on or ("lost",), max_size=max_size,
                         for_format="json", judge_unfinished=judge_unfinished,
                         allow_missing=allow_missing)
    # The verdict line the text report ends with (and the command says after --output).
    return Answer(_json(result), f"aqe-inspect compare: {result.verdict}", None)


def rules(kind: Optional[str]) -> Answer:
    import inspect

    found = api.rules(kind)
    data = {"schema": RULES_SCHEMA, "rules": [
        {"kind": detector.kind, "summary": detector.summary, "spark_rule": detector.spark_rule,
         "plan_change_rules": list(detector.rules_logged),
         "needs_initial_plan": detector.needs_initial,
         "description": inspect.cleandoc(detector.doc)}
        for detector in found.detectors]}
    return Answer(data, "\n".join(f"{detector.kind}: {detector.summary}"
                                  for detector in found.detectors), None)


# ---- the plans' nodes -----------------------------------------------------------------------

def _trees(query: Any) -> Iterable[Tuple[str, Any]]:
    yield "final", query.root
    if query.initial is not None:
        yield "initial", query.initial
    for number, tree in enumerate(query.subquery_trees(), 1):
        yield f"subquery {number}", tree


def _marks(report: Any) -> Dict[int, List[Dict[str, str]]]:
    """id(node) -> the rewrites found at it (as the final or the initial node)."""
    marks: Dict[int, List[Dict[str, str]]] = {}
    for rewrite in report.rewrites:
        for node, role in ((rewrite.final_node, "final"), (rewrite.initial_node, "initial")):
            if node is not None:
                marks.setdefault(id(node), []).append(
                    {"kind": rewrite.kind, "as": role, "message": rewrite.message})
    return marks


def _flat(root: Any, tree: str, query: int, marks: Dict[int, List[Dict[str, str]]],
          main_initial: Any, offset: int) -> List[Dict[str, Any]]:
    """The nodes of `root`'s tree in pre-order (no recursion): each node's fields as
    `parse --format json` writes them, its children, inner plans and nested initial plan
    given by place (`parent`, `relation`) rather than nested. The main plan's initial tree
    is a tree of its own (`main_initial`), not repeated under the final tree's root. `index`
    and `parent` count in the whole list, whose first `offset` nodes came before."""
    from ..formats.node_json import node_fields

    found: List[Dict[str, Any]] = []
    stack: List[Tuple[Any, Optional[int], Optional[str], int]] = [(root, None, None, 0)]
    while stack:
        node, parent, relation, depth = stack.pop()
        if offset + len(found) >= MOST_NODES:  # a node shared by many parents, repeated
            raise InspectError(f"the plans hold more than {MOST_NODES:,} nodes (counting a "
                               "node shared by several parents once per parent); choose one "
                               "query")
        at = offset + len(found)
        fields = node_fields(node)
        for key in ("children", "inner", "initial"):
            fields.pop(key, None)
        found.append({"query": query, "tree": tree, "index": at, "parent": parent,
                      "relation": relation, "depth": depth, **fields,
                      "rewrites": marks.get(id(node), [])})
        below: List[Tuple[Any, str]] = [(child, "child") for child in node.children]
        below.extend((inner, "inner") for inner in node.inner)
        if node.is_adaptive_root and node.initial is not None and \
                node.initial is not main_initial:
            below.append((node.initial, "initial"))
        stack.extend((child, at, kind, depth + 1) for child, kind in reversed(below))
    return found


def _unit(data: Dict[str, Any]) -> str:
    return "execution" if data.get("execution_id") is not None else "query"


def _is_log(report: Dict[str, Any]) -> bool:
    return any(each.get("execution_id") is not None for each in report.get("queries", []))
