"""The rewrite kinds, in the order reports list them (a stable contract): read from
`detectors.DETECTORS`, the one list of kinds."""

from __future__ import annotations

from typing import Tuple

from .detectors import DETECTORS

#: Each detector's kind, in report order.
REWRITE_KINDS: Tuple[str, ...] = tuple(detector.kind for detector in DETECTORS)

#: The kinds whose rewrites hold a run-time figure against a setting, so a report shows their
#: margins (`whynot.rewrite_margins`): the explainers that measure (`Explainer.measures`; a
#: test holds the two equal). Here so a report without them never imports `whynot`.
MEASURED_KINDS: Tuple[str, ...] = ("skew-join", "smj-to-bhj", "smj-to-shj")


def measured(rewrites) -> bool:
    """Whether any of `rewrites` is of a kind that holds a figure against a setting."""
    return any(rewrite.kind in MEASURED_KINDS for rewrite in rewrites)


def rewrite_kinds() -> Tuple[str, ...]:
    """The rewrite kinds, in the order reports list them (a stable contract), read from
    `detectors.DETECTORS`, the only list of kinds. Also importable as `REWRITE_KINDS`."""
    return REWRITE_KINDS


def kind_hint(kind: str) -> str:
    """What to say of a kind that is not one: `did you mean 'skew-join'? the kinds are ...`."""
    import difflib

    kinds = rewrite_kinds()
    close = difflib.get_close_matches(kind, kinds, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{hint}the kinds are {', '.join(kinds)}"
