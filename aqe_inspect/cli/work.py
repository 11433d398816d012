"""What the commands that have a quick route do once their options are read: one call of
`api` and `api.write`. Typer's commands (`commands`) and the quick route (`_quick_route` in
`cli`) both run these, so that the two routes are one code."""

from __future__ import annotations

from typing import List, Optional

from .. import api
from ..api import InspectError


def run_parse(path: str, output_format: str, *, max_size: str = api.DEFAULT_MAX_SIZE,
              query: Optional[str] = None) -> None:
    """`aqe-inspect parse`: the plans of one input, as trees or JSON."""
    api.write(api.read_document(path, max_size=max_size, query=query), output_format)


def run_diff(paths: List[str], output_format: str, *, output: Optional[str] = None,
             max_size: str = api.DEFAULT_MAX_SIZE, query: Optional[str] = None,
             url: Optional[str] = None, tree: bool = False, side_by_side: bool = False,
             width: Optional[int] = None) -> None:
    """`aqe-inspect diff`: what AQE changed, in the format chosen."""
    if tree and side_by_side:
        raise InspectError("--tree and --side-by-side are two views; choose one")
    chosen = api.report_format(output_format, width=width,
                               view="tree" if tree else "side-by-side" if side_by_side else None)
    report = api.diff_input(paths, url=url, max_size=max_size, query=query,
                            for_format=chosen, output=output)
    api.write(report, chosen, output)
