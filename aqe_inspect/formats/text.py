"""text: for people. A diff is, per query, a header and one line per rewrite with its numbers
(the compact view), or the annotated final tree (`--tree`), or the initial and final trees
side by side (`--side-by-side`). A check is one line per expectation (PASS or FAIL, what was
expected and found, where it was written), then, for each query a failure is about, its
initial and final plans side by side with the rewrites marked (what AQE started from is what
tells why a rewrite did or did not happen), then a summary line, last, where a CI log's reader
looks first."""

from __future__ import annotations

import dataclasses
from typing import Optional, TextIO, Tuple

from ..expectations.check import CheckResult, Outcome
from ..errors import printable
from . import terminal as render
from .terminal import Screen
from ..plan.model import plural
from ..rewrites.findings import Report
from . import Format


@dataclasses.dataclass(frozen=True)
class TextFormat(Format):
    """`view`: one of `render.VIEWS` for `diff`; `width`: the columns to print in, or None for
    the terminal's (COLUMNS, or 100, when not a terminal)."""

    view: str = "compact"
    width: Optional[int] = None
    name = "text"
    for_people = True

    def configured(self, view: Optional[str] = None, width: Optional[int] = None
                   ) -> "TextFormat":
        return dataclasses.replace(self, view=view or self.view,
                                   width=width if width is not None else self.width)

    def write_report(self, report, stream: TextIO) -> None:
        render.print_report(report, stream, self.view, self.width)

    def write_check(self, result: CheckResult, stream: TextIO) -> None:
        out = Screen(stream, self.width)
        width = max((len(printable(o.name)) for o in result.outcomes), default=0)
        marks = max((len(_mark(o)[0]) for o in result.outcomes), default=4)
        for outcome in result.outcomes:
            _outcome(out, outcome, width, marks)
        for outcome in result.failures:
            if outcome.detail:
                _detail(out, outcome)
        shown_queries = result.shown_queries
        if shown_queries:
            out.paragraph([])
            out.paragraph([(f"Why: the plans of the {plural(result.unit)} the failures are "
                            "about", "bold")])
            out.paragraph([])
            out.flush()
            render.print_report(Report(shown_queries, result.source, (), result.application),
                                stream, "side-by-side", self.width, hint=False)
        for note in result.notes:
            out.paragraph([(f"note: {note}", "yellow")], "", render.HANG)
        out.paragraph([])
        # Last, wrapped to the width like the rest: its first words (`1 of 3 expectation(s)
        # not met`) are on its first line, what a CI log is grepped for.
        verdict = result.verdict
        out.paragraph([(verdict[:1].upper() + verdict[1:],
                        "bold red" if result.failures else "bold green"),
                       (f" ({result.queries_read})", "")], "", render.HANG)
        out.flush()


def _mark(outcome: Outcome) -> Tuple[str, str]:
    if outcome.passed:
        return "PASS", "bold green"
    return ("UNFINISHED", "bold yellow") if outcome.unfinished else ("FAIL", "bold red")


def _outcome(out: Screen, outcome: Outcome, width: int, marks: int = 4) -> None:
    expectation = outcome.expectation
    text, style = _mark(outcome)
    mark = (text.ljust(marks), style)
    where = [f"from {expectation.origin}"]
    if outcome.location is not None and not outcome.passed:
        location = outcome.location
        where.insert(0, f"at {location.path or '<input>'}"
                        + (f":{location.line}" if location.line else ""))
    out.paragraph([mark, (f" {printable(outcome.name).ljust(width)}  ", "bold"),
                   (outcome.message, ""), (f" ({', '.join(where)})", "dim")], "", "     ")
    for line in outcome.why_lines():
        out.paragraph([("why not: ", "yellow"), (line, "")], "     ", "       ")


def _detail(out: Screen, outcome: Outcome) -> None:
    """A snapshot's unified diff, as it is (lines are not wrapped: a diff is read by column)."""
    out.paragraph([])
    out.paragraph([(f"Why: {outcome.name} differs", "bold")], "", render.HANG)
    styles = {"+": "green", "-": "red", "@": "cyan"}
    for line in outcome.detail.rstrip("\n").split("\n"):  # lines as the diff made them
        style = "bold" if line.startswith(("+++", "---")) else styles.get(line[:1], "")
        out.write_line(out.styled([(line, style)]))


FORMAT = TextFormat()
