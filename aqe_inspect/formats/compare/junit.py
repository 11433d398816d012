"""junit: JUnit XML. One test case per matched execution (per application and description
for fleet tables), failing where the gate fails, with what was lost, replaced and gained, the
settings that differ and the why-not; an execution of either run that had not finished an
`<error>` of type `unfinished` (no verdict: the test could not run, not a failed one); the
executions of one run only are skipped cases. Escaping is the diff format's
(formats/junit.py): XML that any schema-checking reader takes."""

from __future__ import annotations

from typing import TextIO

from ..junit import _element, _suite, _write
from .common import differences, duration_line, kinds_text, pair_title, replaced_text, \
    margin_lines, settings_lines, shorten, unfinished_lines, why_not_lines


def _detail(pair, comparison) -> str:
    lines = [pair_title(pair), *unfinished_lines(comparison, pair),
             f"lost: {kinds_text(pair.lost)}",
             f"replaced: {replaced_text(pair)}",
             f"gained: {kinds_text(pair.gained)}",
             f"rewrites: {kinds_text(pair.old.counts)} -> {kinds_text(pair.new.counts)}"]
    lines.extend(f"{what}: {old} -> {new}" for what, old, new in differences(pair))
    lines.append(f"duration: {duration_line(pair)}")
    lines.extend(f"setting: {line}" for line in settings_lines(pair))
    lines.extend(why_not_lines(pair))
    lines.extend(margin_lines(pair))
    return "\n".join(lines)


def write(comparison, stream: TextIO) -> None:
    tripped = {id(item): reasons for item, reasons in comparison.tripped}
    unmatched = (comparison.groups_old_only + comparison.groups_new_only) if comparison.fleet \
        else (comparison.unmatched_old + comparison.unmatched_new)
    unfinished = {id(pair) for pair in comparison.unfinished}
    unpartnered = {id(summary): text for summary, text in comparison.unpartnered_executions}
    suite = _suite("aqe-inspect compare", len(comparison.items) + len(unmatched),
                   len(tripped), len(unfinished) + len(unpartnered))
    properties = _element("properties", suite)
    _element("property", properties, name="old", value=comparison.old.source)
    _element("property", properties, name="new", value=comparison.new.source)
    _element("property", properties, name="fail-on", value=comparison.gate.text)
    suite.set("skipped", str(len(unmatched) - len(unpartnered)))
    if comparison.fleet:
        for group in comparison.groups:
            case = _element("testcase", suite, classname=group.app_name or "(no name)",
                            name=shorten(group.description) or "(no description)", time="0")
            text = (f"lost (rate points): {kinds_text(group.lost)}\n"
                    f"gained (rate points): {kinds_text(group.gained)}")
            if id(group) in tripped:
                _element("failure", case, text,
                         message=f"fails --fail-on {','.join(tripped[id(group)])}",
                         type="aqe-compare")
            else:
                _element("system-out", case, text)
        for group in unmatched:
            case = _element("testcase", suite, classname=group.app_name or "(no name)",
                            name=shorten(group.description) or "(no description)", time="0")
            _element("skipped", case, message="in one table only")
    else:
        for pair in comparison.pairs:
            name = f"{pair.new.label}: {shorten(pair.new.description or pair.old.description)}"
            case = _element("testcase", suite, classname=comparison.new.source or "<stdin>",
                            name=name, time="0")
            if id(pair) in unfinished:
                _element("error", case, _detail(pair, comparison),
                         message=f"unfinished, no verdict: {'; '.join(pair.unfinished)}",
                         type="unfinished")
            elif id(pair) in tripped:
                _element("failure", case, _detail(pair, comparison),
                         message=f"fails --fail-on {','.join(tripped[id(pair)])}: lost "
                         f"{kinds_text(pair.lost)}, gained {kinds_text(pair.gained)}",
                         type="aqe-compare")
            else:
                _element("system-out", case, _detail(pair, comparison))
        for summary in unmatched:
            case = _element("testcase", suite, classname=summary.source or "<stdin>",
                            name=f"{summary.label}: {shorten(summary.description)}", time="0")
            if id(summary) in unpartnered:
                _element("error", case, unpartnered[id(summary)],
                         message=f"unfinished, no verdict: {unpartnered[id(summary)]}",
                         type="unfinished")
            else:
                _element("skipped", case,
                         message="in one run only: no counterpart to compare with")
    _write(suite, stream)
