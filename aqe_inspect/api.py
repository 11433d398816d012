"""The library's front door: `parse` and `diff`, returning frozen dataclasses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional, Union

from .rewrites.engine import diff_document, diff_initial_final
from .errors import InspectError
from .plan.model import Document
from .parsing import parse_text
from .rewrites.findings import Report

if TYPE_CHECKING:  # pragma: no cover
    from .expectations.check import CheckResult


def parse(text: str, source: str = "") -> Document:
    """Parse explain output of any mode into a Document."""
    return parse_text(text, source)


def diff(plan: Union[str, Document], final: Union[str, Document, None] = None,
         source: str = "") -> Report:
    """What AQE changed: in one adaptive plan text (or Document), or between an initial and a
    final plan given apart."""
    document = parse_text(plan, source) if isinstance(plan, str) else plan
    if final is None:
        return diff_document(document)
    final_document = parse_text(final, source) if isinstance(final, str) else final
    return diff_pair(document, final_document)


def diff_pair(initial: Document, final: Document) -> Report:
    """Pair the queries of two texts (the plan printed before the action and the one after)
    in order and diff each pair by structure. Given the wrong way round (the "final" text
    not yet final, the "initial" one final), they are put in order, with a note."""
    notes = []
    if _looks_final(initial) and not _looks_final(final):
        notes.append(f"{initial.source} holds the final plan and {final.source} the plan "
                     f"before the action: read {final.source} as the initial plan")
        initial, final = final, initial
    if len(initial.queries) != len(final.queries):
        raise InspectError(
            f"the initial text holds {len(initial.queries)} plan(s) and the final text "
            f"{len(final.queries)}; they must pair one to one", source=final.source)
    reports = []
    for number, (before, after) in enumerate(zip(initial.queries, final.queries), 1):
        # The INITIAL file's plan before AQE: its initial tree, else the one it printed.
        initial_tree = before.initial if before.initial is not None else before.final
        reports.append(diff_initial_final(initial_tree, after, str(number), tuple(notes)))
    return Report(queries=tuple(reports), source=f"{initial.source} -> {final.source}",
                  notes=(*initial.notes, *final.notes))


def _looks_final(document: Document) -> bool:
    """Whether a text's plans are final: every adaptive plan says isFinalPlan=true."""
    flags = [query.is_final_plan for query in document.queries if query.adaptive]
    return bool(flags) and all(flags)


def check(plan: Union[str, Document, Report], expect: Iterable[str] = (),
          forbid: Iterable[str] = (), query: Optional[str] = None,
          each: bool = False) -> "CheckResult":
    """Hold a plan text, Document or Report to expectations written as on the command line
    (`expect=["coalesced>=2"]`, `forbid=["skew-join"]`), over the queries `query` selects
    (an execution id or a regular expression; all when None). `result.passed` says whether
    every one holds; `result.failures` what did not, and why."""
    from .expectations.check import check as hold
    from .expectations.config import command_line_expectations
    from .expectations.selection import Selector

    expectations = command_line_expectations(
        expect, forbid, Selector.parse(query) if query is not None else None, each)
    if not expectations:
        raise InspectError("nothing to check: give expect=[...] or forbid=[...]")
    report = plan if isinstance(plan, Report) else diff(plan)
    return hold(report, expectations)
