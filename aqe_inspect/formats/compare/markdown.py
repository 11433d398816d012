"""markdown: the comparison as a CI job summary (GitHub's `$GITHUB_STEP_SUMMARY`, GitLab and
Azure DevOps render the same GitHub-flavoured Markdown): the verdict, a table of the
executions that changed (lost, replaced by a stronger rewrite, gained, joins, run time,
settings) or had not finished (UNFINISHED: no verdict, listed with which and why), the
why-not of each lost rewrite, the size decisions whose margin shrank, and the executions of
one run only.

Text from the inputs is escaped for Markdown and for the HTML that Markdown lets through
(`markdown_text.md`, the escape of every Markdown output): `&` and `<` as entities, every
character Markdown gives a meaning (`|` of a table, `*`, `_`, `` ` ``, `[`, `]`, `#`, `!`,
`~`, a backslash...) with a backslash, line breaks and control characters as escapes, and
what GitHub would link by itself (`http://...`, `www....`, `user@host.example`) kept text: a
description cannot end a table cell, open a link or an image, become one, or inject a tag.
"""

from __future__ import annotations

from typing import List, TextIO, Tuple

from ..markdown_text import md
from .common import differences, duration_line, headline, kinds_text, rate_text, \
    margin_lines, replaced_text, settings_lines, shorten, shown, status, unfinished_lines, \
    versions_line

#: Rows shown in a table (a summary is read by people; the JSON holds every row).
MOST_ROWS = 200

__all__ = ["MOST_ROWS", "lines", "md", "write"]


def lines(comparison) -> List[str]:
    failed = comparison.failed
    head = "✅ PASS" if not failed else "❌ FAIL" if comparison.tripped else "⏳ UNFINISHED"
    out = [f"## aqe-inspect compare: {head}", ""]
    out.append(f"Old run: {md(comparison.old.source)}, new run: {md(comparison.new.source)}")
    out.append("")
    versions = versions_line(comparison)
    if versions:
        out.extend([md(versions), ""])
    out.extend([md(headline(comparison)), "", f"**{md(comparison.verdict)}**", ""])
    if comparison.fleet:
        out.extend(_fleet(comparison))
    else:
        out.extend(_pairs(comparison))
    if comparison.notes:
        out.extend(["", "<details><summary>Notes</summary>", ""])
        out.extend(f"- {md(note)}" for note in comparison.notes)
        out.extend(["", "</details>"])
    return out


def _pairs(comparison) -> List[str]:
    changed = [pair for pair in comparison.pairs if shown(comparison, pair)]
    out: List[str] = []
    if changed:
        out.extend(["| | execution | description | matched by | lost | replaced | gained "
                    "| also changed | duration | settings |",
                    "|---|---|---|---|---|---|---|---|---|---|"])
        for pair in changed[:MOST_ROWS]:
            also = "; ".join(f"{what} {old} → {new}" for what, old, new in differences(pair))
            out.append("| " + " | ".join((
                status(comparison, pair),
                md(f"{pair.old.label} → {pair.new.label}"),
                md(shorten(pair.new.description or pair.old.description)),
                pair.matched_by,
                md(kinds_text(pair.lost)), md(replaced_text(pair)),
                md(kinds_text(pair.gained)), md(also or "—"),
                md(duration_line(pair)),
                "<br>".join(md(line) for line in settings_lines(pair)) or "—")) + " |")
        if len(changed) > MOST_ROWS:
            out.append(f"\n… and {len(changed) - MOST_ROWS} more (see the JSON output)")
    unfinished = [(pair.new.label, line) for pair in changed
                  for line in unfinished_lines(comparison, pair)]
    unfinished += [(summary.label, f"unfinished, no verdict: {text}")
                   for summary, text in comparison.unpartnered_executions]
    _listed(out, "Unfinished", unfinished)
    if changed:
        why = [(pair, kind, reasons) for pair in changed for kind, reasons in pair.new.why_not
               if pair.lost.get(kind)]
        if why:
            out.extend(["", "### Why not, on the new run", ""])
            for pair, kind, reasons in why[:MOST_ROWS]:
                for reason in reasons:
                    out.append(f"- {md(pair.new.label)} **{md(kind)}**: {md(reason)}")
        _listed(out, "Margins that shrank",
                [(pair.new.label, line) for pair in changed for line in margin_lines(pair)])
    same = len(comparison.pairs) - len(changed)
    if same:
        out.extend(["", f"{comparison.counted(same)} matched with the same adaptive decisions."])
    for side, items in (("old", comparison.unmatched_old), ("new", comparison.unmatched_new)):
        if items:
            why = comparison.unpartnered_why(side)
            out.extend(["", f"<details><summary>Only in the {side} run ({len(items)})"
                            + (f", {md(why)}" if why else "") + "</summary>", ""])
            for summary in items[:MOST_ROWS]:
                out.append(f"- {md(summary.label)} {md(shorten(summary.description))}: "
                           f"{md(kinds_text(summary.counts))}")
            out.extend(["", "</details>"])
    return out


def _fleet(comparison) -> List[str]:
    changed = [group for group in comparison.groups if group.rewrites_changed]
    out: List[str] = []
    if changed:
        out.extend(["| application | description | executions | " +
                    " | ".join(md(kind) for kind in comparison.kinds) + " |",
                    "|---|---|---|" + "---|" * len(comparison.kinds)])
        for group in changed[:MOST_ROWS]:
            cells = [f"{rate_text(group.rate('old', k))} → {rate_text(group.rate('new', k))}"
                     if group.lost.get(k) or group.gained.get(k) else "—"
                     for k in group.kinds]
            out.append("| " + " | ".join((md(group.app_name), md(shorten(group.description)),
                                          f"{group.executions_old} → {group.executions_new}",
                                          *cells)) + " |")
    same = len(comparison.groups) - len(changed)
    if same:
        out.extend(["", f"{same} group(s) with the same rates."])
    for side, items in (("old", comparison.groups_old_only),
                        ("new", comparison.groups_new_only)):
        if items:
            out.extend(["", f"Only in the {side} table: {len(items)} group(s)."])
    return out


def write(comparison, stream: TextIO) -> None:
    stream.write("\n".join(lines(comparison)) + "\n")


def _listed(out: List[str], title: str, items: List[Tuple[str, str]]) -> None:
    """A section of `- label: line` items, at most MOST_ROWS of them, the rest counted."""
    if not items:
        return
    out.extend(["", f"### {title}", ""])
    for label, line in items[:MOST_ROWS]:
        out.append(f"- {md(label)}: {md(line)}")
    if len(items) > MOST_ROWS:
        out.append(f"\n… and {len(items) - MOST_ROWS} more (see the JSON output)")
