"""The fleet summary written in the format asked for: text (`summary.write_text`), markdown
(`summary.write_markdown`) or one HTML page (`html.write_fleet_page`)."""

from __future__ import annotations

import sys
from typing import Any, Dict, Iterable, Optional, TextIO

from ..errors import InspectError
from .html import write_fleet_page
from .summary import FORMATS, SMALL_JOIN_BYTES, TOP, FleetSummary, summarize, write_markdown, \
    write_text

__all__ = ["write_summary", "print_summary"]


def write_summary(rows: Iterable[Dict[str, Any]], stream: TextIO, format: str = "text",
                  width: Optional[int] = None, small_bytes: int = SMALL_JOIN_BYTES,
                  top: int = TOP, skipped: Iterable[str] = ()) -> FleetSummary:
    """Write the summary of the fleet table's `rows` to `stream` as text (at `width` columns,
    or the terminal's), markdown or html; returns what was written. `skipped`: the files the
    scan skipped in folders, not being event logs (`run_fleet`'s `skipped`)."""
    if format not in FORMATS:
        raise InspectError(f"--format: unknown summary format {format!r} (known: "
                           f"{', '.join(FORMATS)})")
    summary = summarize(rows, small_bytes, top, skipped)
    if format == "text":
        write_text(summary, stream, width)
    elif format == "markdown":
        write_markdown(summary, stream)
    else:
        write_fleet_page(summary, stream)
    return summary


def print_summary(rows: Iterable[Dict[str, Any]], stream: Optional[TextIO] = None,
                  width: Optional[int] = None) -> FleetSummary:
    """The text summary, on standard output unless `stream` says."""
    return write_summary(rows, stream if stream is not None else sys.stdout, "text", width)
