"""Where a finding points: the file and line of the plan text it is about.

In a plan text (explain output, a driver log, a pasted plan) an operator's line is its line in
the file. An event log's plans are strings inside JSON events, so there a finding points at
the line of the execution's event. CI tools want paths relative to the checkout: a path under
the working directory is given relative to it, with `/` separators.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from .findings import QueryReport, Rewrite

#: What the readers call standard input: no file to point at.
STDIN_NAMES = ("<stdin>", "-", "")


@dataclass(frozen=True)
class Location:
    file: str
    line: int = 0

    @property
    def has_file(self) -> bool:
        return self.file not in STDIN_NAMES and not self.file.startswith(("http://", "https://"))

    @property
    def path(self) -> str:
        """The file as CI tools want it: relative to the working directory when under it."""
        return display_path(self.file)


def display_path(file: str) -> str:
    if not file or file in STDIN_NAMES or "://" in file:
        return file
    try:
        relative = os.path.relpath(os.path.abspath(file))
    except ValueError:  # another drive (Windows)
        return file.replace(os.sep, "/")
    if relative.startswith(os.pardir):
        return os.path.abspath(file).replace(os.sep, "/")
    return relative.replace(os.sep, "/")


def workspace_path(file: str, workspace: Optional[str] = None) -> str:
    """The file as a CI annotation names it: relative to `workspace` (the checkout: GitHub's
    GITHUB_WORKSPACE; None for the working directory) when under it, with `/` separators
    (whatever directory the command ran in, and however the file was named); else absolute."""
    if not file or file in STDIN_NAMES or "://" in file:
        return file
    base = workspace or os.getcwd()
    for resolved in (os.path.abspath, os.path.realpath):  # as given, then links followed
        try:
            relative = os.path.relpath(resolved(file), resolved(base))
        except ValueError:  # another drive (Windows)
            break
        if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
            return relative.replace(os.sep, "/")
    return os.path.abspath(file).replace(os.sep, "/")


def query_location(report: QueryReport, source: str) -> Location:
    """The plan's line in a plan text; in an event log, the line of the event whose plan was
    read, in the part of a rolling log or folder that holds it."""
    query = report.query
    part = query.execution.part if query.execution is not None else ""
    return Location(part or query.source or source, query.line)


def rewrite_location(report: QueryReport, rewrite: Rewrite, source: str) -> Location:
    """The rewritten operator's line in a plan text; the query's line in an event log."""
    node = rewrite.final_node
    if report.query.execution is None and node is not None and node.line:
        return Location(report.query.source or source, node.line)
    return query_location(report, source)


def kind_location(report: QueryReport, kind: str, source: str) -> Location:
    """Where a finding about `kind` in this query points: its first rewrite of that kind,
    else the query itself."""
    for rewrite in report.rewrites:
        if rewrite.kind == kind:
            return rewrite_location(report, rewrite, source)
    return query_location(report, source)


def origin_location(file: str, line: int) -> Optional[Location]:
    return Location(file, line) if file else None
