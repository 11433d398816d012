"""aqe-inspect: read Apache Spark AQE plans and name what Adaptive Query Execution changed."""

from __future__ import annotations

__version__ = "0.1.0"

from .errors import InspectError, PlanSyntaxError
from .model import Document, Node, Query, Subquery


def parse(text: str, source: str = "") -> Document:
    """Parse explain output (any mode, any Spark from 3.0 on) into a `Document`."""
    from .parser import parse_text

    return parse_text(text, source)


__all__ = ["Document", "InspectError", "Node", "PlanSyntaxError", "Query", "Subquery", "parse"]
