"""text: the comparison for people. A head line (the two runs, how many executions matched
and on what), then each execution whose adaptive decisions changed: what it lost, what a
stronger rewrite replaced (and at which joins) and what it gained per kind, the joins,
partitions, skew splits and query stages that differ, the run time old -> new, the settings
that differ and the why-not of each lost rewrite on the new side. A pair whose execution had
not finished on either side is headed UNFINISHED (no verdict), saying which and why. The
executions that stayed the same are counted, those of one run only listed. The last line is
the verdict. Text from the inputs is escaped (`printable`): one line each, nothing a terminal
would run."""

from __future__ import annotations

from typing import List, Optional, TextIO

from ...errors import printable
from .common import differences, duration_line, headline, kinds_text, pair_title, rate_text, \
    margin_lines, replaced_text, settings_lines, shorten, shown, status, unfinished_lines, \
    versions_line

#: How many executions of one run only are named (the rest counted).
UNMATCHED_NAMED = 20


def _p(text: str) -> str:
    return printable(text)


def lines(comparison) -> List[str]:
    out = [_p(f"aqe-inspect compare: {comparison.old.source} -> {comparison.new.source}")]
    versions = versions_line(comparison)
    if versions:
        out.append(_p(versions))
    out.append(headline(comparison))
    if comparison.fleet:
        out.extend(_fleet_lines(comparison))
    else:
        out.extend(_pair_lines(comparison))
    for note in comparison.notes:
        out.append(_p(f"note: {note}"))
    out.append("")
    out.append(f"aqe-inspect compare: {comparison.verdict}")
    return out


def _pair_lines(comparison) -> List[str]:
    out: List[str] = []
    tripped = {id(item): reasons for item, reasons in comparison.tripped}
    same = 0
    for pair in comparison.pairs:
        if not shown(comparison, pair):
            same += 1
            continue
        out.append("")
        mark = status(comparison, pair)
        gate = f"  [fails --fail-on {','.join(tripped[id(pair)])}]" if id(pair) in tripped \
            else ""
        out.append(_p(f"{mark}  {pair_title(pair)}{gate}"))
        for line in unfinished_lines(comparison, pair):
            out.append(_p(f"  {line}"))
        if any(pair.lost.values()):
            out.append(f"  lost:    {kinds_text(pair.lost)}")
        if pair.replaced:
            out.append(f"  replaced: {replaced_text(pair)}")
            joins = sorted({join for r in pair.replaced for join in r.joins})
            out.append(_p(f"    at {', '.join(joins)} of the new run"))
        if any(pair.gained.values()):
            out.append(f"  gained:  {kinds_text(pair.gained)}")
        out.append(f"  rewrites: {kinds_text(pair.old.counts)} -> {kinds_text(pair.new.counts)}")
        for what, old, new in differences(pair):
            out.append(_p(f"  {what}: {old} -> {new}"))
        out.append(f"  duration: {duration_line(pair)}")
        for line in settings_lines(pair):
            out.append(_p(f"  setting: {line}"))
        for line in margin_lines(pair):
            out.append(_p(f"  {line}"))
        for kind, why in pair.new.why_not:
            if pair.lost.get(kind):
                for reason in why:
                    out.append(_p(f"  why not {kind} (new run): {reason}"))
    if same:
        out.append("")
        out.append(f"{comparison.counted(same)} matched with the same adaptive decisions")
    for side, items in (("old", comparison.unmatched_old), ("new", comparison.unmatched_new)):
        if not items:
            continue
        out.append("")
        # No verdict (the other run's log ends before its application does): every one is
        # named, as each counts in the verdict's unfinished; else the first few.
        why = comparison.unpartnered_why(side)
        out.append(_p(f"only in the {side} run ({len(items)})" + (f", {why}:" if why else ":")))
        named = items if why else items[:UNMATCHED_NAMED]
        for summary in named:
            description = f' "{shorten(summary.description)}"' if summary.description else ""
            out.append(_p(f"  {'UNFINISHED  ' if why else ''}{summary.label}{description}: "
                          f"rewrites {kinds_text(summary.counts)}"))
        if len(items) > len(named):
            out.append(f"  ... and {len(items) - len(named)} more")
    return out


def _fleet_lines(comparison) -> List[str]:
    out: List[str] = []
    tripped = {id(item) for item, _ in comparison.tripped}
    same = 0
    for group in comparison.groups:
        if not group.rewrites_changed:
            same += 1
            continue
        mark = ("LOST" if any(group.lost.values()) else "GAINED") + \
            ("  [fails the gate]" if id(group) in tripped else "")
        out.append("")
        out.append(_p(f"{mark}  {group.app_name or '(no name)'}: "
                      f"\"{shorten(group.description)}\" ({group.executions_old} -> "
                      f"{group.executions_new} executions)"))
        for kind in group.kinds:
            old, new = group.rate("old", kind), group.rate("new", kind)
            if group.lost.get(kind) or group.gained.get(kind):
                out.append(f"  {kind}: {rate_text(old)} -> {rate_text(new)} of executions")
    if same:
        out.append("")
        out.append(f"{same} group(s) with the same rates")
    for side, items in (("old", comparison.groups_old_only),
                        ("new", comparison.groups_new_only)):
        if items:
            out.append("")
            out.append(f"only in the {side} table ({len(items)}):")
            for group in items[:UNMATCHED_NAMED]:
                out.append(_p(f"  {group.app_name or '(no name)'}: "
                              f"\"{shorten(group.description)}\""))
            if len(items) > UNMATCHED_NAMED:
                out.append(f"  ... and {len(items) - UNMATCHED_NAMED} more")
    return out


def write(comparison, stream: TextIO, width: Optional[int] = None) -> None:
    """The comparison wrapped to `width` (None: the terminal's; when not a terminal, COLUMNS,
    else 100), as `diff` prints: a line wider than that goes on under its own indent and two
    spaces more (`terminal.HANG`), cut at spaces only. The verdict comes last, wrapped the same way."""
    from ..terminal import HANG, Screen

    out = Screen(stream, width)
    *body, verdict = lines(comparison)
    for line in body:
        text = line.lstrip(" ")
        indent = line[:len(line) - len(text)][:max(0, out.width // 2 - len(HANG))]
        out.paragraph([(text, "")], indent, indent + HANG)
    # Last, wrapped like the rest (as `check` prints its own): `aqe-inspect compare: FAIL`,
    # what a CI log is grepped for, on its first line.
    out.paragraph([(verdict, "")], "", HANG)
    out.flush()
