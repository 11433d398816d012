"""github: GitHub Actions workflow commands. Each unmet expectation is an `::error` annotation
at the plan's line (the rewritten operator's in a plan text, the execution's event in an event
log), so the failure shows on the file in the pull request; each rewrite of a diff is a
`::notice`. Plain lines around them say what passed, and the plans of the failing queries are
printed in a collapsed `::group::`, as the text format draws them.

Escaping follows the runner's rules: in a message `%`, CR and LF are `%25`, `%0D`, `%0A`; in a
property (file, title) `:` and `,` too.

Text from the inputs (an application's name, a job's description, a plan) must never reach the
runner as a command of its own. The runner (actions/runner, src/Runner.Common/ActionCommand.cs,
`TryParseV2` and `TryParse`) takes a line for a command when, its leading white space trimmed,
it starts with `::`, or when it holds `##[` anywhere; it splits lines at CR and LF only. So
every plain line is defused (`_plain`): control characters and the characters one cannot see
(format characters, white space other than the space, variation selectors: a line could hide
`::` behind them) are written as escapes, a leading `::` as `\x3a:` and `##[` as `#\x23[`. The
plans of the failing queries, the longest text from the inputs, are moreover printed between
`::stop-commands::TOKEN` and `::TOKEN::`, with a token drawn from their text, so that the
runner runs no command from them whatever they hold.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from typing import Dict, List, Optional, TextIO

from ..expectations.check import CheckResult
from ..errors import printable
from ..rewrites.locations import Location, rewrite_location, workspace_path
from ..rewrites.findings import Report
from . import Format

_DATA = {ord("%"): "%25", ord("\r"): "%0D", ord("\n"): "%0A"}
_PROPERTY = {**_DATA, ord(":"): "%3A", ord(","): "%2C"}


def command(name: str, message: str, location: Optional[Location] = None,
            title: str = "") -> str:
    """`::error file=plan.txt,line=12,title=...::message`: the file relative to the checkout
    (GITHUB_WORKSPACE, else the working directory) when under it, as GitHub places an
    annotation on a file of the pull request."""
    properties: Dict[str, str] = {}
    if location is not None and location.has_file:
        properties["file"] = workspace_path(location.file,
                                            os.environ.get("GITHUB_WORKSPACE") or None)
        if location.line:
            properties["line"] = str(location.line)
    if title:
        properties["title"] = title
    head = ",".join(f"{key}={_clean(value).translate(_PROPERTY)}"
                    for key, value in properties.items())
    return f"::{name}{' ' + head if head else ''}::{_clean(message).translate(_DATA)}"


def _clean(text: str) -> str:
    """Control characters and invisible ones escaped (a plan may hold any), newlines kept for
    the runner (which reads them as `%0A`)."""
    return _visible(printable(text, newlines=True))


# Characters that show nothing, yet a reader (or the runner's trimming and its culture-aware
# string search) may pass over: besides what `str.isprintable` refuses (format characters such
# as U+200B or U+202E, white space other than the space, line and paragraph separators,
# unassigned and private code points, lone surrogates), the printable default-ignorable ones.
_IGNORABLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f"
                        "\uffa0\U000e0100-\U000e01ef]")


def _visible(text: str) -> str:
    if text.isprintable() and not _IGNORABLE.search(text):
        return text
    return "".join(_escape(char) if (not char.isprintable() and char not in " \n")
                   or _IGNORABLE.match(char) else char for char in text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _plain(text: str) -> str:
    """A plain log line that the runner cannot take for a command: nothing hidden in it, no
    `::` at its start (after white space), no `##[` anywhere."""
    line = _visible(printable(text))
    body = line.lstrip(" ")
    if body.startswith("::"):
        line = line[:len(line) - len(body)] + "\\x3a" + body[1:]
    return line.replace("##[", "#\\x23[")


def _plain_block(lines: List[str]) -> List[str]:
    """Plain lines, between `::stop-commands::TOKEN` and `::TOKEN::`: the runner runs no
    command until the token, drawn from the lines themselves (so no line can hold it)."""
    plain = [_plain(line) for line in lines]
    token = "aqe-inspect-" + hashlib.sha256("\n".join(plain).encode(
        "utf-8", "backslashreplace")).hexdigest()[:32]
    return [f"::stop-commands::{token}", *plain, f"::{token}::"]


class GithubFormat(Format):
    name = "github"

    def write_report(self, report, stream: TextIO) -> None:
        source = report.source
        for query_report in report.queries:
            for rewrite in query_report.rewrites:
                stream.write(command(
                    "notice", rewrite.message, rewrite_location(query_report, rewrite, source),
                    title=f"AQE {rewrite.kind} ({query_report.name})") + "\n")
            if not query_report.rewrites:
                stream.write(_plain(f"{query_report.name}: no AQE rewrite found") + "\n")
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
                detail.append(f"{report.name} rewrites: {found}")
            detail.extend(f"why not: {line}" for line in outcome.why_lines())
            if outcome.detail:
                detail.append(outcome.detail.rstrip("\n"))
            title = f"aqe-inspect: {outcome.name}" + (" unfinished" if outcome.unfinished
                                                      else "")
            stream.write(command("error", "\n".join(detail), outcome.location,
                                 title=title) + "\n")
        shown = result.shown_queries
        if shown:
            from .text import FORMAT as TEXT

            stream.write("::group::Plans of the queries that failed an expectation\n")
            text = io.StringIO()
            TEXT.write_report(Report(shown, result.source, (), result.application), text)
            for line in _plain_block(text.getvalue().splitlines()):
                stream.write(line + "\n")
            stream.write("::endgroup::\n")
        for note in result.notes:
            stream.write(command("warning", note, Location(result.source)) + "\n")
        stream.write(_plain(f"aqe-inspect check: {result.verdict}") + "\n")


FORMAT = GithubFormat()
