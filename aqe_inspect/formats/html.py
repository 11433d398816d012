"""html: one self-contained page for people (a CI artifact, a file mailed around, a browser in
an air-gapped cluster): inline CSS and JavaScript, no external reference of any kind.

A diff is a page of queries, each a section: a header (source and line, the SQL execution
of an event log), the findings table, each adaptive plan's initial and final trees side by
side (rows from `views.side_by_side_rows`), the timeline of AQE's re-plans when the input
held them (event logs), then information and notes. A list of every query, with its counts
per rewrite kind and a text and kind filter, heads the page. A check is the outcomes (PASS or
FAIL, where each was written, where it failed) then the failing queries, drawn alike.

What tests and scripts may rely on (data attributes):

- `section.query[data-query=ID]`: one query; `data-counts` its counts per kind (JSON), the
  same as `diff --format json`'s `counts`;
- `[data-rewrite-kind=KIND]`: one finding (a row of a findings table), `data-final` and
  `data-initial` the ids of its operators' cells;
- `[data-rewrite~=KIND]`: an operator cell a rewrite of KIND marks, in the final tree and in
  the initial tree (a space-separated list when several do); `data-findings` links back;
- `tr.op[data-end=N]`: a tree row whose subtree ends at row N of its table (collapsible).

Trees are flat table rows indented by depth, never nested elements: plans 5,000 levels deep
are common enough, and browsers cap how deep they nest parsed elements. Everything from the
plan is escaped. The page is written as the queries come (an event log's are read as they
are diffed): the list of queries is written last and shown first (CSS `order`). It holds no
time and no random id: the same input gives the same page.
"""

from __future__ import annotations

import json
from collections import Counter
from html import escape
from typing import Dict, Iterable, List, Optional, Sequence, TextIO, Tuple

from ..expectations.check import CheckResult, Outcome
from ..rewrites.detectors.base import PlanPair
from ..rewrites.engine import report_pairs
from ..plan.model import Application, Node, Query, plural, units
from ..plan.operators import is_query_stage
from ..rewrites.findings import REWRITE_KINDS, QueryReport, Rewrite, describe
from .views import Row, where_read, finding_line, node_facts, node_label, plan_kind, rewrite_marks, \
    rewrite_margins, side_by_side_rows
from . import Format

#: The heaviest texts a cell shows whole (an operator's details, in its tooltip).
TITLE_WIDTH = 2000
#: Indentation stops growing past this depth (the depth is then written on the row).
INDENT_CAP = 48


def _e(text: object) -> str:
    """Text from the plan or the input, safe in an element or a quoted attribute."""
    return escape(str(text), quote=True)


def _kinds_attr(kinds: Iterable[str]) -> str:
    return " ".join(kinds)


class _Writer:
    """Gathers the page in pieces and writes them in blocks."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.parts: List[str] = []
        self.size = 0

    def __call__(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)
        if self.size > 1 << 16:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            self.stream.write("".join(self.parts))
            self.parts, self.size = [], 0


# ---- one query ------------------------------------------------------------------------------

class _Summary:
    """What the list of queries says of one query (kept while the rest is written)."""

    __slots__ = ("anchor", "id", "unit", "label", "where", "counts", "text")

    def __init__(self, anchor: str, report: QueryReport, where: str):
        query = report.query
        self.anchor = anchor
        self.id = report.id
        self.unit = query.unit
        execution = query.execution
        self.label = (execution.description if execution is not None else query.label) or ""
        self.where = where
        self.counts = report.counts
        kinds = " ".join(kind for kind in REWRITE_KINDS if self.counts[kind])
        self.text = " ".join((self.id, self.label, where, kinds)).lower()


def _pairs(report: QueryReport) -> List[Tuple[PlanPair, str]]:
    """Every plan of the query to draw, each with the heading it gets: the adaptive plans
    (main, subqueries, nested ones), then what is printed but not adaptive (subqueries,
    inner plans, adaptively optimized-out exchanges) as final-only trees."""
    query = report.query
    pairs = [(pair, pair.where) for pair in report_pairs(report)]
    drawn = {id(pair.final) for pair, _ in pairs}
    if not pairs or not query.adaptive:
        if id(query.root) not in drawn and not (pairs and pairs[0][0].final is query.root):
            pairs.insert(0, (_alone(query.root, "plan"), "plan (not adaptive)"))
    for sub in query.subqueries:
        if sub.tree is not None and not sub.tree.is_adaptive_root:
            pairs.append((_alone(sub.tree, f"subquery {sub.index}"),
                          f"subquery {sub.index} (not adaptive)"))
    for number, tree in enumerate(query.optimized_out, 1):
        pairs.append((_alone(tree, "optimized out"),
                      f"adaptively optimized-out exchange {number}"))
    return pairs


#: What each kind of tree heading means, said under it once per tree.
_TREE_HINTS = {
    "main": "The query's own plan (the statement that ran); the plans of its subqueries, if "
            "any, come under headings of their own.",
    "subquery": "A subquery's plan (a scalar or IN subquery, or a dynamic partition pruning "
                "filter), which Spark plans and runs apart from the query's own plan.",
}


def _tree_heading(where: str) -> str:
    """A tree's heading from the place the rewrites name it by: `main` is the query's own
    plan (`main query plan`); subqueries and the rest are named as they are."""
    if where == "main" or where.startswith(("main ", "main,")):
        return "main query plan" + where[len("main"):]
    return where


def _alone(root: Node, where: str) -> PlanPair:
    return PlanPair(final=root, initial=None, is_final_plan=None, where=where)


def _ends(rows: Sequence[Row]) -> List[int]:
    """For each row, the last row of its subtree (itself when it has none), by the final
    side where the row has a final operator, else by the initial side. One pass with a
    stack: trees thousands of levels deep cost no recursion and linear time."""
    ends = list(range(len(rows)))
    stack: List[int] = []

    def below(top: Row, row: Row) -> bool:
        if top.final is not None:
            if row.final is not None:
                return row.final_depth > top.final_depth
            return top.initial is None or row.initial_depth > top.initial_depth
        return row.final is None and row.initial_depth > top.initial_depth

    for number, row in enumerate(rows):
        while stack and not below(rows[stack[-1]], row):
            ends[stack.pop()] = number - 1
        stack.append(number)
    for number in stack:
        ends[number] = len(rows) - 1
    return ends


class _QueryWriter:
    """Writes one query's section; `anchor` prefixes every id in it."""

    def __init__(self, out: _Writer, report: QueryReport, anchor: str, source: str,
                 page_application: Optional[Application] = None):
        self.out = out
        self.report = report
        self.page_application = page_application
        self.anchor = anchor
        self.source = source
        # Cell ids of each operator drawn (id(node) -> cell id), filled as trees are drawn
        # (the findings table is written after the trees are laid out, but shown above).
        self.final_cells: Dict[int, str] = {}
        self.initial_cells: Dict[int, str] = {}
        # Findings by operator, for the links back from a cell to its findings.
        self.findings_of: Dict[int, List[str]] = {}
        for number, rewrite in enumerate(report.rewrites, 1):
            for node in (rewrite.final_node, rewrite.initial_node):
                if node is not None:
                    self.findings_of.setdefault(id(node), []).append(
                        f"{anchor}-f{number}")
        self.marks = rewrite_marks(report.rewrites)

    def write(self) -> _Summary:
        report, query, out = self.report, self.report.query, self.out
        where = where_read(query, query.source or self.source or "<input>")
        summary = _Summary(self.anchor, report, where)
        counts = report.counts
        kinds = [kind for kind in REWRITE_KINDS if counts[kind]]
        out(f'<section class="query" id="{self.anchor}" data-query="{_e(report.id)}" '
            f'data-kinds="{_kinds_attr(kinds)}" data-text="{_e(summary.text)}" '
            f"data-counts='{_e(json.dumps(counts))}'>\n")
        title = report.title
        if summary.label:
            title += f": {summary.label}"
        out(f'<h2><a class="self" href="#{self.anchor}">{_e(title)}</a></h2>\n')
        self._header(query, where)
        self._counts(counts)
        # Trees are laid out before the findings table is written (it links to their cells),
        # and written after it.
        trees = [self._tree(pair, heading, number)
                 for number, (pair, heading) in enumerate(_pairs(report))]
        self._findings()
        out('<div class="plans">\n')
        for tree in trees:
            out(tree)
        out("</div>\n")
        execution = query.execution
        steps = getattr(execution, "timeline", None) if execution is not None else None
        if steps:
            self._timeline(steps, execution)
        self._info()
        self._notes(report.notes)
        out("</section>\n")
        return summary

    def _header(self, query: Query, where: str) -> None:
        facts: List[Tuple[str, str]] = [("source", where)]
        application = query.application
        if application is not None and application != self.page_application:
            # One of several applications' (a folder of event logs): the page names none.
            facts.append(("application", " ".join(
                part for part in (application.app_id, application.name and
                                  f"({application.name})") if part) or "of unknown id"))
        facts.append(("plan", f"{plan_kind(query)}, {query.mode} "
                              f"mode, isFinalPlan={str(query.is_final_plan).lower()}"))
        if query.origin:
            facts.append(("read from", query.origin))
        execution = query.execution
        if execution is not None:
            facts.append(("execution", str(execution.execution_id)))
            if execution.description:
                facts.append(("description", execution.description))
            duration = execution.duration_ms
            facts.append(("duration", f"{duration / 1000:.3g} s" if duration is not None
                          else "unknown"))
            if execution.replans is not None:
                facts.append(("re-plans", str(execution.replans)))
            if execution.status:
                facts.append(("status", execution.status +
                              ("" if execution.finished is not False else " (not finished)")))
        elif query.label:
            facts.append(("label", query.label))
        if query.plan_changes is not None:  # a driver log with Spark's plan-change log
            from ..rewrites.rules_fired import kept_words

            facts.append(("re-plannings", kept_words(query.plan_changes).split(": ", 1)[1]))
            facts.extend(("plan-change log", note) for note in query.plan_changes.notes)
        self.out('<dl class="meta">' + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>"
                                              for k, v in facts) + "</dl>\n")

    def _counts(self, counts: Dict[str, int]) -> None:
        items = "".join(
            f'<li data-count-kind="{kind}" data-count="{counts[kind]}"'
            f'{" class=zero" if not counts[kind] else ""}>'
            f'<span class="k k-{kind}">{kind}</span> {counts[kind]}</li>'
            for kind in REWRITE_KINDS)
        self.out(f'<ul class="counts">{items}</ul>\n')

    def _findings(self) -> None:
        rewrites = self.report.rewrites
        out = self.out
        if not rewrites:
            out('<p class="none">No AQE rewrite found.</p>\n')
            return
        out('<table class="findings"><thead><tr><th>kind</th><th>final</th><th>initial</th>'
            '<th>what changed</th><th>evidence</th></tr></thead><tbody>\n')
        app = self.report.query.application or self.page_application
        margins = rewrite_margins(self.report, app.spark_version if app is not None else None)
        for number, rewrite in enumerate(rewrites, 1):
            fid = f"{self.anchor}-f{number}"
            final_cell = self.final_cells.get(id(rewrite.final_node)) \
                if rewrite.final_node is not None else None
            initial_cell = self.initial_cells.get(id(rewrite.initial_node)) \
                if rewrite.initial_node is not None else None
            attrs = f' data-final="{final_cell}"' if final_cell else ""
            attrs += f' data-initial="{initial_cell}"' if initial_cell else ""
            out(f'<tr class="finding" id="{fid}" tabindex="0" data-rewrite-kind="{rewrite.kind}"'
                f"{attrs}><td><span class=\"k k-{rewrite.kind}\">{rewrite.kind}</span></td>"
                f"<td>{_link(describe(rewrite.final_node), final_cell)}</td>"
                f"<td>{_link(describe(rewrite.initial_node), initial_cell)}</td>"
                f"<td>{_e(finding_line(rewrite))}<div class=\"msg\">{_e(rewrite.message)}"
                f"</div></td><td>{_evidence(rewrite)}{_margins(margins[number - 1])}"
                f"{self._skew(rewrite)}</td></tr>\n")
        out("</tbody></table>\n")

    def _skew(self, rewrite: Rewrite) -> str:
        """A skew-join's partition sizes, each side (`views.skew_lines`), under its evidence."""
        if rewrite.kind != "skew-join":
            return ""
        from ..whynot import rewrite_skew
        from .views import skew_lines

        app = self.report.query.application or self.page_application
        lines = skew_lines(rewrite_skew(self.report, rewrite,
                                        app.spark_version if app is not None else None))
        if not lines:
            return ""
        return '<ul class="skew">' + "".join(f"<li>{_e(line)}</li>" for line in lines) + \
            "</ul>"


    # ---- trees ------------------------------------------------------------------------------
    def _tree(self, pair: PlanPair, heading: str, number: int) -> str:
        """One plan's two trees side by side, as a string (written after the findings)."""
        rows = side_by_side_rows(pair, marked=self.marks)
        ends = _ends(rows)
        stages = _stage_boxes(rows, ends)
        table = f"{self.anchor}-p{number}"
        parts = [f'<section class="plan" id="{table}"><h3>{_e(_tree_heading(heading))}</h3>\n']
        explained = _TREE_HINTS.get(heading.split(" ", 1)[0].rstrip(","))
        if explained:
            parts.append(f'<p class="hint">{_e(explained)}</p>\n')
        if pair.initial is None:
            parts.append('<p class="hint">No initial plan printed for this tree: the final '
                         'tree only.</p>\n')
        parts.append(f'<table class="sbs"><thead><tr><th>initial plan</th><th>'
                     f'{"final plan" if pair.is_final_plan is not False else "current plan"}'
                     f"</th></tr></thead><tbody>\n")
        for index, row in enumerate(rows):
            end = ends[index]
            attrs = f' data-end="{end}"' if end > index else ""
            cells = []
            for side, node, depth, kinds, cells_by in (
                    ("i", row.initial, row.initial_depth, row.initial_marks,
                     self.initial_cells),
                    ("f", row.final, row.final_depth, row.final_marks, self.final_cells)):
                if node is None:
                    cells.append(f'<td class="{side} gap"></td>')
                    continue
                cell = f"{table}-{side}{index}"
                cells_by.setdefault(id(node), cell)
                toggle = end > index and (side == "f" or row.final is None)
                box = stages.get((side, index), "")
                cells.append(self._cell(side, cell, node, depth or 0, kinds, toggle, box))
            parts.append(f'<tr class="op{" al" if row.aligned else ""}"{attrs}>'
                         f'{"".join(cells)}</tr>\n')
        parts.append("</tbody></table></section>\n")
        return "".join(parts)

    def _cell(self, side: str, cell: str, node: Node, depth: int, kinds: Tuple[str, ...],
              toggle: bool, box: str) -> str:
        classes = [side]
        if kinds:
            classes.append("rw")
        if box:
            classes.append(box)
        attrs = f' data-rewrite="{_kinds_attr(kinds)}"' if kinds else ""
        links = self.findings_of.get(id(node))
        if links:
            attrs += f' data-findings="{" ".join(links)}"'
        indent = min(depth, INDENT_CAP)
        parts = [f'<td class="{" ".join(classes)}" id="{cell}" style="--d:{indent}"{attrs}>']
        parts.append('<button class="tg" aria-expanded="true" title="collapse">'
                     '</button>' if toggle else '<span class="tg0"></span>')
        if depth > INDENT_CAP:
            parts.append(f'<span class="deep">depth {depth}</span>')
        details = _details_text(node)
        title = f' title="{_e(details)}"' if details else ""
        label = node_label(node)
        name_end = len(node.title or node.name)
        parts.append(f'<span class="nm"{title}>{_e(label[:name_end])}</span>'
                     f'<span class="ar">{_e(label[name_end:])}</span>')
        for kind in kinds:
            parts.append(f'<span class="k k-{kind}">{kind}</span>')
        for link in links or ():
            parts.append(f'<a class="back" href="#{link}" title="the finding">&#8617;</a>')
        facts = node_facts(node)
        if facts:
            parts.append('<span class="facts">' + " ".join(
                f'<span class="fact"><b>{_e(name)}</b> {_e(value)}</span>'
                for name, value in facts) + "</span>")
        parts.append("</td>")
        return "".join(parts)

    # ---- the rest ---------------------------------------------------------------------------
    def _timeline(self, steps, execution) -> None:
        out = self.out
        out(f'<section class="timeline"><h3>Timeline: {len(steps)} AQE update(s) of execution '
            f"{_e(execution.execution_id)}</h3><ol>\n")
        for step in steps:
            changes = "".join(f"<li>{_e(change)}</li>" for change in step.changes) or \
                "<li>no change the detectors see</li>"
            counts = ", ".join(f"{kind} {count}" for kind, count in step.counts if count)
            out(f'<li class="step" data-step="{step.number}"><span class="when">update '
                f"{step.number} (line {step.line}, isFinalPlan="
                f"{str(step.is_final_plan).lower()})</span>"
                f'<span class="sofar">{_e(counts or "no rewrite yet")}</span>'
                f"<ul>{changes}</ul></li>\n")
        out("</ol></section>\n")

    def _info(self) -> None:
        info = self.report.info
        if not info:
            return
        counted = Counter(observation.kind for observation in info)
        folded = ", ".join(f"{kind} {count}" for kind, count in counted.items())
        items = "".join(f"<li>{_e(observation.message)}</li>" for observation in info)
        self.out(f'<details class="info"><summary>info: {_e(folded)}</summary>'
                 f"<ul>{items}</ul></details>\n")

    def _notes(self, notes: Sequence[str]) -> None:
        if notes:
            self.out('<ul class="notes">' + "".join(f"<li>note: {_e(note)}</li>"
                                                   for note in notes) + "</ul>\n")


def _link(text: Optional[str], cell: Optional[str]) -> str:
    if text is None:
        return "-"
    if cell is None:
        return _e(text)
    return f'<a class="op" href="#{cell}">{_e(text)}</a>'


def _evidence(rewrite: Rewrite) -> str:
    items = [_e(item) for item in rewrite.evidence]
    items.extend(f"{_e(name)}: {_e(value)}" for name, value in rewrite.numbers.items()
                 if name != "statistics")
    return "<ul>" + "".join(f"<li>{item}</li>" for item in items) + "</ul>" if items else ""


def _details_text(node: Node) -> str:
    lines = [f"{name}: {value}" for name, value in node.details.items()]
    if not lines and node.args:
        lines.append(node.args)
    text = "\n".join(lines)
    return text if len(text) <= TITLE_WIDTH else text[:TITLE_WIDTH - 3] + "..."


def _stage_boxes(rows: Sequence[Row], ends: Sequence[int]) -> Dict[Tuple[str, int], str]:
    """The box classes of the final cells inside query stages: `sb` on every cell of a stage
    (the innermost one), `sb0` on its first row, `sb1` on its last; `so` when a stage
    encloses another (the outer box's sides go on)."""
    boxes: Dict[Tuple[str, int], str] = {}
    open_stages: List[Tuple[int, int]] = []  # (start, end), innermost last
    for index, row in enumerate(rows):
        while open_stages and open_stages[-1][1] < index:
            open_stages.pop()
        if row.final is not None and is_query_stage(row.final):
            open_stages.append((index, ends[index]))
        if not open_stages or row.final is None:
            continue
        start, end = open_stages[-1]
        classes = ["sb"]
        if index == start:
            classes.append("sb0")
        if index == end:
            classes.append("sb1")
        if len(open_stages) > 1:
            classes.append("so")
        boxes[("f", index)] = " ".join(classes)
    return boxes


# ---- the page -------------------------------------------------------------------------------

def _head(out: _Writer, title: str) -> None:
    out("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        # No request of any kind leaves the page: not even for a favicon.
        "<link rel=\"icon\" href=\"data:,\">"
        f"<title>{_e(title)}</title>\n<style>{CSS}</style></head>\n<body>\n")


def _application(application: Optional[Application]) -> str:
    if application is None:
        return ""
    named = application.app_id or "of unknown id"
    if application.name:
        named += f" ({application.name})"
    if application.spark_version:
        named += f", Spark {application.spark_version}"
    return f'<p class="app">Application {_e(named)}</p>\n'


def _queries(out: _Writer, reports: Iterable[QueryReport], source: str,
             application: Optional[Application]) -> List[_Summary]:
    summaries = []
    for number, report in enumerate(reports, 1):
        summaries.append(_QueryWriter(out, report, f"q{number}", source, application).write())
        out.flush()
    return summaries


def _query_list(out: _Writer, summaries: Sequence[_Summary]) -> None:
    """The controls and the list of queries: written last, shown first."""
    totals = {kind: sum(s.counts[kind] for s in summaries) for kind in REWRITE_KINDS}
    options = "".join(f'<option value="{kind}">{kind} ({totals[kind]})</option>'
                      for kind in REWRITE_KINDS)
    out('<nav id="top" aria-label="queries"><div class="controls">'
        '<input id="filter" type="search" placeholder="filter queries (press /)" '
        'aria-label="filter queries by text">'
        f'<select id="kind" aria-label="only queries with this rewrite"><option value="">'
        f"any rewrite or none</option>{options}</select>"
        f'<span id="shown">{len(summaries)} of {len(summaries)} queries</span>'
        '<button id="expand" type="button">expand all</button>'
        '<span class="keys">keys: <kbd>/</kbd> filter, <kbd>j</kbd>/<kbd>k</kbd> next/previous '
        "finding, <kbd>Enter</kbd> go to its operator, <kbd>Enter</kbd>/<kbd>space</kbd> on a "
        "tree toggle collapses</span></div>\n")
    total = sum(totals.values())
    unit = summaries[0].unit if summaries else "query"
    out(f'<p class="totals">{units(len(summaries), unit)}, '
        f"{total} finding(s): " + ", ".join(
            f'<span data-total-kind="{kind}" data-count="{totals[kind]}">{kind} '
            f"{totals[kind]}</span>" for kind in REWRITE_KINDS) + "</p>\n")
    out(f'<table id="queries"><thead><tr><th>{unit}</th><th>description</th><th>source</th>'
        + "".join(f'<th class="n">{kind}</th>' for kind in REWRITE_KINDS)
        + "</tr></thead><tbody>\n")
    for summary in summaries:
        kinds = " ".join(kind for kind in REWRITE_KINDS if summary.counts[kind])
        out(f'<tr data-for="{summary.anchor}" data-kinds="{kinds}" '
            f'data-text="{_e(summary.text)}"><td><a href="#{summary.anchor}">{_e(summary.id)}'
            f"</a></td><td>{_e(summary.label)}</td><td>{_e(summary.where)}</td>"
            + "".join(f'<td class="n{" zero" if not summary.counts[kind] else ""}" '
                      f'data-count-kind="{kind}">{summary.counts[kind]}</td>'
                      for kind in REWRITE_KINDS) + "</tr>\n")
    out("</tbody></table></nav>\n")


def _foot(out: _Writer, notes: Sequence[str]) -> None:
    if notes:
        out('<ul class="notes page-notes">' + "".join(f"<li>note: {_e(note)}</li>"
                                                      for note in notes) + "</ul>\n")
    out(f"<script>{JS}</script>\n</body></html>\n")
    out.flush()


class HtmlFormat(Format):
    name = "html"
    for_people = True
    #: Event logs keep every AQE update of an execution for the page's timeline.
    keeps_replans = True

    def write_report(self, report, stream: TextIO) -> None:
        out = _Writer(stream)
        source = report.source or "<input>"
        _head(out, f"aqe-inspect diff: {source}")
        out(f'<header><h1>What AQE changed</h1><p class="src">{_e(source)}</p>'
            f"{_application(report.application)}</header>\n<main>\n")
        summaries = _queries(out, report.queries, report.source, report.application)
        if not summaries:
            out('<p class="none">No query in this input.</p>\n')
        out("</main>\n")
        _query_list(out, summaries)
        _foot(out, report.notes)

    def write_check(self, result: CheckResult, stream: TextIO) -> None:
        out = _Writer(stream)
        source = result.source or "<input>"
        _head(out, f"aqe-inspect check: {source}")
        failed = len(result.failures)
        verdict = result.verdict[:1].upper() + result.verdict[1:]
        read = result.queries_read
        out(f'<header><h1 class="{"fail" if failed else "pass"}" id="verdict">{_e(verdict)}'
            f'</h1><p class="src">{_e(read)}</p>{_application(result.application)}\n')
        # The outcomes head the page, above the list of the queries they show.
        out('<table class="outcomes"><thead><tr><th></th><th>expectation</th>'
            "<th>result</th><th>written at</th><th>failed at</th></tr></thead><tbody>\n")
        for outcome in result.outcomes:
            out(_outcome_row(outcome))
        out("</tbody></table></header>\n<main>\n")
        shown = result.shown_queries
        if shown:
            out(f"<h2 class=\"why\">Why: the plans of the {plural(result.unit)} the failures are "
                "about</h2>\n")
        summaries = _queries(out, shown, result.source, result.application)
        out("</main>\n")
        if summaries:
            _query_list(out, summaries)
        _foot(out, result.notes)


def _margins(margins) -> str:
    """A rewrite's size decisions with their margins (`views.margin_lines`), under its
    evidence: each `li` holds the margin's percent and side as attributes."""
    if not margins:
        return ""
    from .views import margin_lines

    items = "".join(
        f'<li data-config="{_e(m.config)}" data-side="{m.side}" data-percent='
        f'"{"" if m.percent is None else round(m.percent, 2)}">{_e(line)}</li>'
        for m, line in zip(margins, margin_lines(margins)))
    return f'<ul class="margins">{items}</ul>'


def _outcome_row(outcome: Outcome) -> str:
    expectation = outcome.expectation
    mark = "PASS" if outcome.passed else "UNFINISHED" if outcome.unfinished else "FAIL"
    written = expectation.origin or "command line"
    failed_at = ""
    if outcome.location is not None and not outcome.passed:
        location = outcome.location
        failed_at = (location.path or "<input>") + (f":{location.line}" if location.line else "")
    shown = " ".join(report.id for report in outcome.shown)
    return (f'<tr class="outcome {mark.lower()}" data-outcome="{mark}" '
            f'data-kind="{_e(expectation.kind)}" data-shown="{_e(shown)}">'
            f'<td class="mark">{mark}</td><td>{_e(outcome.name)}</td>'
            f"<td>{_e(outcome.message)}{_detail(outcome)}</td><td>{_e(written)}</td>"
            f"<td>{_e(failed_at)}</td></tr>\n")


def _detail(outcome: Outcome) -> str:
    """Under a failed outcome's message: a snapshot's diff, or why the expected rewrite did
    not happen (one item per candidate, its verdict and kind as attributes)."""
    if outcome.passed:
        return ""
    parts = []
    if outcome.why:
        items = "".join(
            f'<li data-verdict="{_e(found.verdict)}" data-kind="{_e(found.kind)}" '
            f'data-why-query="{_e(query_id)}"><b>why not</b> ({outcome.unit} {_e(query_id)}, '
            f"{_e(found.node)}): {_e(found.summary())}</li>"
            for query_id, found in outcome.why)
        parts.append(f'<ul class="whynot">{items}</ul>')
    if outcome.detail:
        parts.append(f'<pre class="detail">{_e(outcome.detail)}</pre>')
    return "".join(parts)



CSS = """
ul.whynot{margin:.3em 0 0;padding-left:1.2em;font-size:.92em}
ul.whynot li[data-verdict=blocked]{color:var(--fail)}
ul.whynot li[data-verdict=cannot-tell]{color:var(--dim)}
:root{--bg:#fff;--fg:#1b1f24;--dim:#667085;--line:#d0d7de;--panel:#f6f8fa;--hl:#fff3bf;
--hl2:#ffe066;--stage:#4c6ef5;--pass:#2b8a3e;--fail:#c92a2a;--link:#1c64d1;
--coalesced:#1971c2;--skew-join:#c2255c;--smj-to-bhj:#2f9e44;--smj-to-shj:#e67700;
--empty-relation:#7048e8;--local-read:#0c8599;--dpp:#5c940d;--dpp-dropped:#868e96;
--rebalance-skew:#a61e4d;--one-row:#364fc7;--limit-removed:#d9480f}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--dim:#8b949e;
--line:#30363d;--panel:#161b22;--hl:#3b3000;--hl2:#6b5800;--stage:#7d95ff;--pass:#57d26b;
--fail:#ff6b6b;--link:#79b8ff;--coalesced:#4dabf7;--skew-join:#f06595;--smj-to-bhj:#69db7c;
--smj-to-shj:#ffa94d;--empty-relation:#b197fc;--local-read:#3bc9db;--dpp:#a9e34b;
--dpp-dropped:#ced4da;--rebalance-skew:#faa2c1;--one-row:#91a7ff;--limit-removed:#ff8787}}
*{box-sizing:border-box}
body{margin:0;padding:0 1rem 2rem;background:var(--bg);color:var(--fg);
font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;display:flex;flex-direction:column}
header{order:-2}#top{order:-1}main{order:0}.page-notes{order:1}
a{color:var(--link)}h1{font-size:1.4rem;margin:.8rem 0 .2rem}h2{font-size:1.15rem;margin:0 0 .4rem}
h3{font-size:1rem;margin:.8rem 0 .3rem}.src,.app{margin:.1rem 0;color:var(--dim)}
h1.pass{color:var(--pass)}h1.fail{color:var(--fail)}
.controls{position:sticky;top:0;z-index:2;background:var(--bg);display:flex;flex-wrap:wrap;
gap:.5rem;align-items:center;padding:.5rem 0;border-bottom:1px solid var(--line)}
input,select,button{font:inherit;color:var(--fg);background:var(--panel);
border:1px solid var(--line);border-radius:4px;padding:.15rem .4rem}
#filter{min-width:18rem}.keys{color:var(--dim);font-size:.85em}
kbd{border:1px solid var(--line);border-radius:3px;padding:0 .25em;font-size:.9em}
table{border-collapse:collapse}th,td{text-align:left;vertical-align:top}
#queries,.findings,.outcomes{margin:.4rem 0 1rem;width:100%}
#queries td,#queries th,.findings td,.findings th,.outcomes td,.outcomes th{
border-bottom:1px solid var(--line);padding:.2rem .5rem}
#queries{display:block;max-height:40vh;overflow:auto}
.n{text-align:right;font-variant-numeric:tabular-nums}.zero{color:var(--dim);opacity:.6}
.outcome .mark{font-weight:700}.outcome.pass .mark{color:var(--pass)}
.outcome.fail .mark{color:var(--fail)}.outcome.unfinished .mark{color:var(--fail);font-style:italic}
section.query{border-top:3px solid var(--line);padding:.8rem 0}
.hidden{display:none!important}
.meta{display:grid;grid-template-columns:max-content 1fr;gap:0 .8rem;margin:.2rem 0 .5rem}
.meta dt{color:var(--dim)}.meta dd{margin:0;overflow-wrap:anywhere}
.counts{list-style:none;display:flex;flex-wrap:wrap;gap:.3rem .8rem;padding:0;margin:.3rem 0}
.counts .zero{opacity:.5}
.k{display:inline-block;border-radius:3px;padding:0 .35em;font-size:.85em;font-weight:600;
color:#fff;background:var(--dim);margin-left:.3em;white-space:nowrap}
td>.k:first-child{margin-left:0}
.k-coalesced{background:var(--coalesced)}.k-skew-join{background:var(--skew-join)}
.k-smj-to-bhj{background:var(--smj-to-bhj)}.k-smj-to-shj{background:var(--smj-to-shj)}
.k-empty-relation{background:var(--empty-relation)}.k-local-read{background:var(--local-read)}
.k-dpp{background:var(--dpp)}.k-dpp-dropped{background:var(--dpp-dropped)}
.k-rebalance-skew{background:var(--rebalance-skew)}.k-one-row{background:var(--one-row)}
.k-limit-removed{background:var(--limit-removed)}
@media (prefers-color-scheme:dark){.k{color:#0d1117}}
.finding{cursor:pointer}.finding:focus,.finding.cur{outline:2px solid var(--link);
background:var(--hl)}.msg{color:var(--dim);font-size:.9em}
.findings ul{margin:0;padding-left:1rem;font-family:ui-monospace,monospace;font-size:.85em;
overflow-wrap:anywhere}
.plans{overflow-x:auto}
.sbs{width:100%;table-layout:fixed;font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace}
.sbs th{position:sticky;top:2.6rem;background:var(--panel);padding:.2rem .4rem;
border-bottom:1px solid var(--line);z-index:1}
.sbs td{position:relative;padding:1px .4rem 1px calc(var(--d)*1.1em + .4rem);
overflow-wrap:anywhere;border-right:1px solid var(--line)}
.sbs td.gap{background:repeating-linear-gradient(135deg,transparent 0 6px,var(--panel) 6px 8px)}
.sbs tr.al td{}
.sbs td.rw{background:var(--hl)}.sbs td:target,.sbs td.cur{outline:2px solid var(--link);
background:var(--hl2)}
.nm{font-weight:600}.ar{color:var(--fg)}.deep{color:var(--dim);margin-right:.4em}
.facts{display:block;color:var(--dim)}.fact{margin-right:.8em}.fact b{font-weight:500}
.tg,.tg0{display:inline-block;width:1.1em;margin-left:-1.1em;padding:0;border:0;
background:none;color:var(--dim);cursor:pointer;text-align:left}
.tg::before{content:"\\25BE"}.tg[aria-expanded=false]::before{content:"\\25B8"}
.back{text-decoration:none;margin-left:.3em}
.sbs td.sb::before,.sbs td.so::after{content:"";position:absolute;pointer-events:none;top:0;
bottom:0;right:2px;border:0 solid var(--stage)}
.sbs td.sb::before{left:calc(var(--d)*1.1em - .95em);border-left-width:2px;
border-right-width:2px}
.sbs td.sb0::before{top:1px;border-top-width:2px;border-radius:4px 4px 0 0}
.sbs td.sb1::before{bottom:1px;border-bottom-width:2px;border-radius:0 0 4px 4px}
.sbs td.sb0.sb1::before{border-radius:4px}
.sbs td.so::after{left:.15rem;border-left-width:1px;opacity:.5}
.sbs td.sb0{padding-top:3px}.sbs td.sb1{padding-bottom:3px}
.timeline ol{padding-left:1.5rem}.timeline .when{font-weight:600;margin-right:.6em}
.timeline .sofar{color:var(--dim)}.timeline ul{margin:.1rem 0 .4rem;padding-left:1rem}
.info summary{cursor:pointer;color:var(--dim)}.notes{color:#b35900;padding-left:1rem}
@media (prefers-color-scheme:dark){.notes{color:#ffb86b}}
.hint,.none{color:var(--dim)}
@media print{.controls,.tg,.tg0,.back,#expand{display:none!important}
.hidden,tr.op{display:table-row!important}section.query.hidden{display:block!important}
#queries{max-height:none;overflow:visible}.sbs th{position:static}
details.info>*{display:block}body{display:block}section.query{break-before:page}}
"""

JS = r"""
(function(){
"use strict";
var $=function(s,r){return (r||document).querySelectorAll(s)};
function setRange(table,i,hide){
  var rows=table.tBodies[0].rows,end=+rows[i].getAttribute("data-end"),j=i+1;
  while(j<=end){var r=rows[j];
    if(hide){r.classList.add("hidden");j++;continue}
    r.classList.remove("hidden");
    var t=r.querySelector(".tg");
    if(t&&t.getAttribute("aria-expanded")==="false"){j=+r.getAttribute("data-end")+1}else{j++}}
}
function toggle(btn,open){
  var tr=btn.closest("tr"),table=tr.closest("table");
  var now=btn.getAttribute("aria-expanded")!=="false";
  if(open===undefined)open=!now; if(open===now)return;
  btn.setAttribute("aria-expanded",open?"true":"false");
  btn.title=open?"collapse":"expand";
  setRange(table,tr.sectionRowIndex,!open);
}
document.addEventListener("click",function(e){
  var b=e.target.closest(".tg"); if(b){toggle(b);return}
  var f=e.target.closest("tr.finding");
  if(f&&!e.target.closest("a")){current(f);go(f.getAttribute("data-final")||f.getAttribute("data-initial"))}
});
function reveal(el){
  var tr=el.closest("tr.op"); if(!tr)return;
  var rows=tr.parentNode.rows,k=tr.sectionRowIndex;
  for(var i=k-1;i>=0;i--){var r=rows[i],e=r.getAttribute("data-end");
    if(e!==null&&+e>=k){var t=r.querySelector(".tg");
      if(t&&t.getAttribute("aria-expanded")==="false")toggle(t,true)}}
  var s=el.closest("section.query"); if(s&&s.classList.contains("hidden"))s.classList.remove("hidden");
}
function go(id){
  if(!id)return; var el=document.getElementById(id); if(!el)return;
  reveal(el); $(".sbs td.cur").forEach(function(c){c.classList.remove("cur")});
  el.classList.add("cur"); el.scrollIntoView({block:"center"});
}
window.addEventListener("hashchange",function(){var id=location.hash.slice(1);
  var el=id&&document.getElementById(id); if(el)reveal(el)});
var fl=document.getElementById("filter"),kd=document.getElementById("kind"),
    shown=document.getElementById("shown");
function apply(){
  var t=fl?fl.value.trim().toLowerCase():"",k=kd?kd.value:"",n=0,all=0;
  $("#queries tbody tr").forEach(function(r){all++;
    var ok=(!t||r.getAttribute("data-text").indexOf(t)>=0)&&
           (!k||(" "+r.getAttribute("data-kinds")+" ").indexOf(" "+k+" ")>=0);
    r.classList.toggle("hidden",!ok);
    var s=document.getElementById(r.getAttribute("data-for")); if(s)s.classList.toggle("hidden",!ok);
    if(ok)n++});
  if(shown)shown.textContent=n+" of "+all+" queries";
}
if(fl)fl.addEventListener("input",apply); if(kd)kd.addEventListener("change",apply);
var ex=document.getElementById("expand");
if(ex)ex.addEventListener("click",function(){$(".tg[aria-expanded=false]").forEach(function(b){toggle(b,true)})});
var cur=null;
function current(f){if(cur)cur.classList.remove("cur");cur=f;if(f){f.classList.add("cur");f.focus({preventScroll:true})}}
function step(d){
  var list=Array.prototype.filter.call($("tr.finding"),function(f){return !f.closest(".hidden")});
  if(!list.length)return; var i=list.indexOf(cur);
  i=i<0?(d>0?0:list.length-1):(i+d+list.length)%list.length;
  current(list[i]); list[i].scrollIntoView({block:"center"});
}
document.addEventListener("keydown",function(e){
  if(e.ctrlKey||e.metaKey||e.altKey)return;
  var tag=(e.target.tagName||"").toLowerCase();
  if(tag==="input"||tag==="select"||tag==="textarea"){if(e.key==="Escape")e.target.blur();return}
  if(e.key==="/"&&fl){e.preventDefault();fl.focus();return}
  if(e.key==="j"||e.key==="n"){step(1);e.preventDefault();return}
  if(e.key==="k"||e.key==="p"){step(-1);e.preventDefault();return}
  if(e.key==="Enter"&&e.target.classList&&e.target.classList.contains("finding")){
    go(e.target.getAttribute("data-final")||e.target.getAttribute("data-initial"));e.preventDefault()}
});
window.addEventListener("beforeprint",function(){$("details").forEach(function(d){d.open=true})});
})();
"""


FORMAT = HtmlFormat()


# What other pages (the fleet summary) share with the report: its escaping, writer and head.
escape_text = _e
PageWriter = _Writer
page_head = _head
