"""github: GitHub Actions workflow commands. Each unmet expectation is an `::error` annotation
at the plan's line (the rewritten operator's in a plan text, the execution's event in an event
log), so the failure shows on the file in the pull request; each rewrite of a diff is a
`::notice`. Plain lines around them say what passed, and the plans of the failing queries are
printed in a collapsed `::group::`, as the text format draws them.

Escaping follows the runner's rules: in a message `%`, CR and LF are `%25`, `%0D`, `%0A`; in a
property (file, title) `:` and `,` too.
"""

from __future__ import annotations

import io
from typing import Dict, Optional, TextIO

from ..check import CheckResult
from ..errors import printable
from ..locations import Location, rewrite_location
from ..report import Report
from . import Format

_DATA = {ord("%"): "%25", ord("\r"): "%0D", ord("\n"): "%0A"}
_PROPERTY = {**_DATA, ord(":"): "%3A", ord(","): "%2C"}


def command(name: str, message: str, location: Optional[Location] = None,
            title: str = "") -> str:
    """`::error file=plan.txt,line=12,title=...::message`."""
    properties: Dict[str, str] = {}
    if location is not None and location.has_file:
        properties["file"] = location.path
        if location.line:
            properties["line"] = str(location.line)
    if title:
        properties["title"] = title
    head = ",".join(f"{key}={_clean(value).translate(_PROPERTY)}"
                    for key, value in properties.items())
    return f"::{name}{' ' + head if head else ''}::{_clean(message).translate(_DATA)}"


def _clean(text: str) -> str:
    """Control characters escaped (a plan may hold any), newlines kept for the runner."""
    return printable(text, newlines=True)


def _plain(text: str) -> str:
    """A plain log line that the runner cannot take for a command (one starting with `::`)."""
    line = printable(text)
    return f" {line}" if line.startswith("::") else line


class GithubFormat(Format):
    name = "github"

    def write_report(self, report, stream: TextIO) -> None:
        source = report.source
        for query_report in report.queries:
            for rewrite in query_report.rewrites:
                stream.write(command(
                    "notice", rewrite.message, rewrite_location(query_report, rewrite, source),
                    title=f"AQE {rewrite.kind} (query {query_report.id})") + "\n")
            if not query_report.rewrites:
                stream.write(_plain(f"query {query_report.id}: no AQE rewrite found") + "\n")
        for note in report.notes:
            stream.write(command("warning", note, Location(source)) + "\n")

    def write_check(self, result: CheckResult, stream: TextIO) -> None:
        for outcome in result.outcomes:
            expectation = outcome.expectation
            if outcome.passed:
                stream.write(_plain(f"PASS {outcome.name}: {outcome.message}") + "\n")
                continue
            detail = [outcome.message, f"expectation from {expectation.origin}"]
            for report in outcome.shown:
                found = ", ".join(f"{kind}={count}" for kind, count in report.counts.items()
                                  if count) or "none"
                detail.append(f"query {report.id} rewrites: {found}")
            detail.extend(f"why not: {line}" for line in outcome.why_lines())
            if outcome.detail:
                detail.append(outcome.detail.rstrip("\n"))
            stream.write(command("error", "\n".join(detail), outcome.location,
                                 title=f"aqe-inspect: {outcome.name}") + "\n")
        shown = result.shown_queries
        if shown:
            from .text import FORMAT as TEXT

            stream.write("::group::Plans of the queries that failed an expectation\n")
            text = io.StringIO()
            TEXT.write_report(Report(shown, result.source, (), result.application), text)
            for line in text.getvalue().splitlines():
                stream.write(_plain(line) + "\n")
            stream.write("::endgroup::\n")
        for note in result.notes:
            stream.write(command("warning", note, Location(result.source)) + "\n")
        stream.write(_plain(f"aqe-inspect check: {result.verdict}") + "\n")


FORMAT = GithubFormat()
