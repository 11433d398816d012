"""text: for people. Each query's changes (the key and value, the figure and threshold, the
headroom, where the current value came from, what else it does), the decisions no setting
changes, what the input lacks; then the settings the advice comes to. Every run of text is
escaped (`errors.printable`) and wrapped to the width."""

from __future__ import annotations

import textwrap
from typing import List, Optional

from ...errors import printable


def _lines(text: str, first: str, rest: str, width: int) -> List[str]:
    return textwrap.wrap(printable(text), width=max(width, len(rest) + 20),
                         initial_indent=first, subsequent_indent=rest,
                         break_long_words=False, break_on_hyphens=False) or [first.rstrip()]


def write(advice, stream, width: Optional[int] = None) -> None:
    width = width or 100
    out: List[str] = []
    for index, query in enumerate(advice.queries):
        if index:
            out.append("")
        head = query.title + (f" - {query.label}" if query.label else "") + \
            (f" - Spark {query.spark_version}" if query.spark_version else "")
        out.extend(_lines(head, "", "  ", width))
        if query.incomplete:
            out.extend(_lines("incomplete evidence: this advice may miss decisions or "
                              "overstate them", "  ", "    ", width))
            for lack in query.incomplete:
                out.extend(_lines(lack, "    - ", "      ", width))
        if query.nothing:
            out.extend(_lines(f"nothing to change: {query.nothing}", "  ", "    ", width))
        elif not query.changes and not query.fixed and not query.incomplete:
            out.extend(_lines("nothing to change: no adaptive decision that did not fire "
                              "could fire", "  ", "    ", width))
        for change in query.changes:
            _change(out, change, width, "set")
        for change in query.instead:
            _change(out, change, width, "or, instead")
        for item in query.fixed:
            out.extend(_lines(f"{item.kind} at {item.node}: {item.text}", "  ", "    ", width))
            for other in item.instead:
                out.extend(_lines(f"instead: {other}", "    ", "      ", width))
    settings = advice.settings()
    out.append("")
    if settings:
        out.append("settings:" + (" (from incomplete evidence)" if advice.incomplete else ""))
        for key, value in settings:
            out.extend(_lines(f"--conf {key}={value}", "  ", "    ", width))
    else:
        out.append("settings: none to change" + (" (from incomplete evidence)"
                                                 if advice.incomplete else ""))
    for note in advice.notes:
        out.extend(_lines(f"note: {note}", "", "  ", width))
    stream.write("\n".join(out) + "\n")


def _change(out: List[str], change, width: int, verb: str) -> None:
    where = f", line {change.line}" if change.line else ""
    out.extend(_lines(f"{change.kind} at {change.node}{where}: {verb} {change.key}="
                      f"{change.value}", "  ", "    ", width))
    out.extend(_lines(f"now: {change.current.describe()}", "    ", "      ", width))
    out.extend(_lines(f"from: {change.figure}", "    ", "      ", width))
    out.extend(_lines(f"held to: {change.threshold}", "    ", "      ", width))
    out.extend(_lines(f"headroom: {change.headroom}", "    ", "      ", width))
    if change.lines:
        out.extend(_lines(f"key in: {change.lines}", "    ", "      ", width))
    for effect in change.effects:
        out.extend(_lines(f"also: {effect}", "    ", "      ", width))
    for other in change.alternatives:
        out.extend(_lines(f"instead: {other}", "    ", "      ", width))
