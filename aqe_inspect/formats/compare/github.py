"""github: GitHub Actions workflow commands. Each execution that fails the gate is an
`::error` annotation (on the new run's file, at the execution's line where the input has
one), each execution of either run that had not finished an `::error` titled `unfinished`
(no verdict), each other lost rewrite a `::warning`, a rewrite replaced by a stronger one or
gained a `::notice`; plain lines say what
matched; the last line is the verdict. The comparison in Markdown is printed between
`::stop-commands::` markers for the log, and is what `--format markdown` writes for the job
summary. Escaping is the diff format's (formats/github.py): no text from the inputs can reach
the runner as a command."""

from __future__ import annotations

from typing import TextIO

from ...rewrites.locations import Location
from ..github import _plain, command
from .common import differences, headline, kinds_text, pair_title, replaced_text, \
    margin_lines, settings_lines, unfinished_lines, versions_line, why_not_lines


def _message(pair, comparison) -> str:
    lines = [pair_title(pair), *unfinished_lines(comparison, pair)]
    if any(pair.lost.values()):
        lines.append(f"lost: {kinds_text(pair.lost)}")
    if pair.replaced:
        lines.append(f"replaced: {replaced_text(pair)}")
    if any(pair.gained.values()):
        lines.append(f"gained: {kinds_text(pair.gained)}")
    lines.extend(f"{what}: {old} -> {new}" for what, old, new in differences(pair))
    lines.extend(f"setting: {line}" for line in settings_lines(pair))
    lines.extend(why_not_lines(pair))
    lines.extend(margin_lines(pair))
    return "\n".join(lines)


def write(comparison, stream: TextIO) -> None:
    stream.write(_plain(f"aqe-inspect compare: {comparison.old.source} -> "
                        f"{comparison.new.source}") + "\n")
    versions = versions_line(comparison)
    if versions:
        stream.write(_plain(versions) + "\n")
    stream.write(_plain(headline(comparison)) + "\n")
    tripped = {id(item): reasons for item, reasons in comparison.tripped}
    if comparison.fleet:
        for group in comparison.groups:
            if not group.rewrites_changed:
                continue
            kind = "error" if id(group) in tripped else "warning"
            text = (f"{group.app_name}: {group.description}\n"
                    f"lost (rate points): {kinds_text(group.lost)}\n"
                    f"gained (rate points): {kinds_text(group.gained)}")
            stream.write(command(kind, text, Location(comparison.new.source),
                                 title="aqe-inspect compare") + "\n")
    else:
        unfinished = {id(pair) for pair in comparison.unfinished}
        for pair in comparison.pairs:
            if id(pair) in unfinished:
                stream.write(command("error", _message(pair, comparison),
                                     Location(pair.new.source, pair.new.line),
                                     title=f"aqe-inspect compare: {pair.new.label} "
                                     "unfinished") + "\n")
                continue
            if not pair.rewrites_changed:
                continue
            if id(pair) in tripped:
                kind = "error"
            else:
                kind = "warning" if any(pair.lost.values()) else "notice"
            what = "lost a rewrite" if any(pair.lost.values()) else \
                "replaced a rewrite" if pair.replaced else "gained a rewrite"
            stream.write(command(kind, _message(pair, comparison),
                                 Location(pair.new.source, pair.new.line),
                                 title=f"aqe-inspect compare: {pair.new.label} {what}") + "\n")
    for summary, text in comparison.unpartnered_executions:
        stream.write(command("error", text, Location(summary.source, summary.line),
                             title=f"aqe-inspect compare: {summary.label} unfinished") + "\n")
    for note in comparison.notes:
        stream.write(command("warning", note, Location(comparison.new.source)) + "\n")
    stream.write(_plain(f"aqe-inspect compare: {comparison.verdict}") + "\n")
