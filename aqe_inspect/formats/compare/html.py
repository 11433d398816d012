"""html: one self-contained page (inline CSS, no script, no external reference): the verdict,
then each matched execution whose adaptive decisions changed, with what it lost, what a
stronger rewrite replaced and what it gained (an execution of either run that had not
finished headed UNFINISHED: no verdict, with which and why),
the figures and settings that differ, each size decision whose margin shrank (`tr.shrank`,
its percents as attributes), the why-not of each lost rewrite, and the two runs'
final plans side by side, aligned operator by operator, the operators that changed marked
(`tr.changed`; `data-side="old"|"new"` on the cells that differ). Then the executions that
stayed the same, and those of one run only.

Every text from the inputs is escaped (`html.escape`, after `printable`). Plans are rows
indented by depth (a style), never nested elements, so deep plans draw. The page holds no
time and no random id: the same runs give the same page.
"""

from __future__ import annotations

import difflib
import json
from html import escape
from typing import List, Optional, Sequence, TextIO, Tuple

from ...errors import printable
from .common import differences, duration_line, headline, kinds_text, pair_title, rate_text, \
    margin_lines, replaced_text, settings_lines, shorten, shown, status, unfinished_lines, \
    versions_line

INDENT_CAP = 40

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:2em}
.verdict.fail{color:#b00020}.verdict.pass{color:#1b5e20}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ddd;padding:2px 6px;vertical-align:top;text-align:left}
table.plans td{font-family:ui-monospace,monospace;font-size:12px;white-space:pre;border:0;
 border-right:1px solid #ddd}
tr.changed td.old{background:#fde7e9}tr.changed td.new{background:#e6f4ea}
td.empty{background:#f5f5f5}
.lost{color:#b00020;font-weight:600}.gained{color:#1b5e20;font-weight:600}
.replaced{color:#5d4037;font-weight:600}
.unfinished{color:#b00020;font-style:italic}
section.pair{border-top:2px solid #ccc;margin-top:1.5em}
ul.why li{font-family:ui-monospace,monospace;font-size:12px}
"""


def _e(text: object) -> str:
    return escape(printable(str(text)), quote=True)


def _aligned(old: Sequence, new: Sequence) -> List[Tuple[Optional[int], Optional[int], bool]]:
    """Rows (old line, new line, changed) of two outlines aligned on their operators (a
    shuffle read with its modes), whatever their depth: a join that changed strategy moves
    the operators below it, which are still the same."""
    keys_old = [line.family for line in old]
    keys_new = [line.family for line in new]
    rows: List[Tuple[Optional[int], Optional[int], bool]] = []
    matcher = difflib.SequenceMatcher(None, keys_old, keys_new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows.extend((i1 + k, j1 + k, False) for k in range(i2 - i1))
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            rows.append((i1 + k if i1 + k < i2 else None, j1 + k if j1 + k < j2 else None, True))
    return rows


def _cell(lines: Sequence, index: Optional[int], side: str, changed: bool) -> str:
    if index is None:
        return f'<td class="{side} empty"></td>'
    line = lines[index]
    pad = min(line.depth, INDENT_CAP)
    marker = f' data-side="{side}"' if changed else ""
    return (f'<td class="{side}"{marker} style="padding-left:{0.3 + pad * 1.1:.1f}em">'
            f"{_e(line.label)}</td>")


def _plans(pair) -> List[str]:
    old, new = pair.old.plan, pair.new.plan
    if not old and not new:
        return []
    out = ['<table class="plans"><tr><th>old run: final plan</th>'
           "<th>new run: final plan</th></tr>"]
    for i, j, changed in _aligned(old, new):
        row = '<tr class="changed">' if changed else "<tr>"
        out.append(f"{row}{_cell(old, i, 'old', changed)}{_cell(new, j, 'new', changed)}</tr>")
    out.append("</table>")
    return out


def _pair(comparison, pair, tripped) -> List[str]:
    counts = json.dumps({"lost": pair.lost, "replaced": pair.replaced_counts,
                         "gained": pair.gained}, sort_keys=True)
    out = [f'<section class="pair" data-status="{status(comparison, pair)}" '
           f'data-counts="{escape(counts, quote=True)}">',
           f"<h2>{_e(status(comparison, pair))} {_e(pair_title(pair))}</h2>"]
    if id(pair) in tripped:
        out.append(f'<p class="lost">fails --fail-on {_e(",".join(tripped[id(pair)]))}</p>')
    for line in unfinished_lines(comparison, pair):
        out.append(f'<p class="unfinished">{_e(line)}</p>')
    out.append("<table>")
    out.append(f'<tr><th>lost</th><td class="lost">{_e(kinds_text(pair.lost))}</td></tr>')
    if pair.replaced:
        joins = sorted({join for r in pair.replaced for join in r.joins})
        out.append(f'<tr><th>replaced</th><td class="replaced">{_e(replaced_text(pair))}'
                   f'<br>at {_e(", ".join(joins))} of the new run</td></tr>')
    out.append(f'<tr><th>gained</th><td class="gained">{_e(kinds_text(pair.gained))}</td></tr>')
    out.append(f"<tr><th>rewrites</th><td>{_e(kinds_text(pair.old.counts))} → "
               f"{_e(kinds_text(pair.new.counts))}</td></tr>")
    for what, old, new in differences(pair):
        out.append(f"<tr><th>{_e(what)}</th><td>{_e(old)} → {_e(new)}</td></tr>")
    out.append(f"<tr><th>duration</th><td>{_e(duration_line(pair))}</td></tr>")
    for line in settings_lines(pair):
        out.append(f"<tr><th>setting</th><td>{_e(line)}</td></tr>")
    for (old_margin, new_margin), line in zip(pair.margins_shrank, margin_lines(pair)):
        out.append(f'<tr class="shrank" data-kind="{_e(new_margin.kind)}" data-config='
                   f'"{_e(new_margin.config)}" data-old-percent="{round(old_margin.percent, 2)}"'
                   f' data-new-percent="{round(new_margin.percent, 2)}"><th>margin</th>'
                   f"<td>{_e(line)}</td></tr>")
    out.append(f"<tr><th>sources</th><td>{_e(pair.old.source)} → {_e(pair.new.source)}</td></tr>")
    out.append("</table>")
    why = [(kind, reason) for kind, reasons in pair.new.why_not if pair.lost.get(kind)
           for reason in reasons]
    if why:
        out.append("<p>Why not, on the new run:</p><ul class=\"why\">")
        out.extend(f"<li><b>{_e(kind)}</b>: {_e(reason)}</li>" for kind, reason in why)
        out.append("</ul>")
    out.extend(_plans(pair))
    out.append("</section>")
    return out


def _fleet(comparison, tripped) -> List[str]:
    out = ["<table><tr><th>application</th><th>description</th><th>executions</th>" +
           "".join(f"<th>{_e(kind)}</th>" for kind in comparison.kinds) + "</tr>"]
    for group in comparison.groups:
        cells = []
        for kind in group.kinds:
            text = f"{rate_text(group.rate('old', kind))} → {rate_text(group.rate('new', kind))}"
            cls = "lost" if group.lost.get(kind) else "gained" if group.gained.get(kind) else ""
            cells.append(f'<td class="{cls}">{_e(text)}</td>')
        mark = ' class="changed"' if id(group) in tripped else ""
        out.append(f"<tr{mark}><td>{_e(group.app_name)}</td><td>{_e(shorten(group.description))}"
                   f"</td><td>{group.executions_old} → {group.executions_new}</td>"
                   + "".join(cells) + "</tr>")
    out.append("</table>")
    for side, items in (("old", comparison.groups_old_only),
                        ("new", comparison.groups_new_only)):
        if items:
            out.append(f"<p>Only in the {side} table: {len(items)} group(s).</p>")
    return out


def write(comparison, stream: TextIO) -> None:
    tripped = {id(item): reasons for item, reasons in comparison.tripped}
    title = f"aqe-inspect compare: {comparison.old.source} -> {comparison.new.source}"
    out = ["<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
           "<link rel=\"icon\" href=\"data:,\">"
           f"<title>{_e(title)}</title><style>{CSS}</style></head><body>",
           f"<h1>{_e(title)}</h1>"]
    versions = versions_line(comparison)
    if versions:
        out.append(f"<p>{_e(versions)}</p>")
    out.append(f"<p>{_e(headline(comparison))}</p>")
    verdict_class = "fail" if comparison.failed else "pass"
    out.append(f'<p class="verdict {verdict_class}">{_e(comparison.verdict)}</p>')
    if comparison.fleet:
        out.extend(_fleet(comparison, tripped))
    else:
        same = []
        for pair in comparison.pairs:
            if shown(comparison, pair):
                out.extend(_pair(comparison, pair, tripped))
            else:
                same.append(pair)
        if same:
            out.append(f"<h2>{comparison.counted(len(same))} matched with the same adaptive "
                       "decisions</h2><table><tr><th>old</th><th>new</th><th>description</th>"
                       "<th>matched by</th><th>rewrites</th><th>duration</th></tr>")
            for pair in same:
                out.append(f"<tr><td>{_e(pair.old.label)}</td><td>{_e(pair.new.label)}</td>"
                           f"<td>{_e(shorten(pair.new.description))}</td>"
                           f"<td>{_e(pair.matched_by)}</td>"
                           f"<td>{_e(kinds_text(pair.new.counts))}</td>"
                           f"<td>{_e(duration_line(pair))}</td></tr>")
            out.append("</table>")
        for side, items in (("old", comparison.unmatched_old),
                            ("new", comparison.unmatched_new)):
            if items:
                why = comparison.unpartnered_why(side)
                out.append(f"<h2>Only in the {side} run ({len(items)})</h2>"
                           + (f'<p class="unfinished">{_e(why)}</p>' if why else "") + "<ul>")
                out.extend(f"<li>{_e(s.label)} {_e(shorten(s.description))}: "
                           f"{_e(kinds_text(s.counts))}</li>" for s in items)
                out.append("</ul>")
    if comparison.notes:
        out.append("<h2>Notes</h2><ul>")
        out.extend(f"<li>{_e(note)}</li>" for note in comparison.notes)
        out.append("</ul>")
    out.append("</body></html>")
    stream.write("\n".join(out) + "\n")
