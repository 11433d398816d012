"""aqe-inspect: read Apache Spark AQE plans and name what Adaptive Query Execution changed.

The public Python API is `aqe_inspect.api` (every command as a function, typed); `parse` and
`diff` are here too, for a short `import aqe_inspect`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import native

native.install()  # first: on the pure route, no compiled module is imported after this

from .errors import InspectError, PlanSyntaxError
from .version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from .plan.model import Document, Node, Query, Subquery


def __getattr__(name: str):
    """The plan model's classes, imported when first asked for: `aqe-inspect --help` (which
    imports this package) does not need them."""
    if name in ("Document", "Node", "Query", "Subquery"):
        from .plan import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse(text: str, source: str = "") -> Document:
    """Parse explain output (any mode, any Spark from 3.0 on) into a `Document`."""
    from .api import parse as parse_plan

    return parse_plan(text, source)


def diff(plan, final=None, source: str = ""):
    """What AQE changed: in one adaptive plan (text or Document), or between an initial and a
    final plan given apart. Returns a `rewrites.findings.Report`."""
    from .api import diff as diff_plans

    return diff_plans(plan, final, source)


__all__ = ["__version__", "Document", "InspectError", "Node", "PlanSyntaxError", "Query", "Subquery", "diff",
           "parse"]
