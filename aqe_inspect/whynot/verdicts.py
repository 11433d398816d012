"""What a why-not answer is made of: for each place a rewrite could have happened (a
`Candidate`), a verdict and the reasons behind it, each saying where its fact came from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

HAPPENED = "happened"
#: A setting or the plan's shape kept the rule from rewriting what it would otherwise rewrite.
BLOCKED = "blocked"
#: The rule's conditions on the data were not met: nothing to rewrite (one partition, no skew,
#: no empty side, partitions already at the advisory size).
NOT_NEEDED = "not-needed"
#: The input lacks the evidence; `needs` says what would settle it.
CANNOT_TELL = "cannot-tell"
VERDICTS = (HAPPENED, BLOCKED, NOT_NEEDED, CANNOT_TELL)

#: Where a fact came from.
PLAN, METRIC, CONFIG, DEFAULT = "plan", "metric", "config", "default"
SOURCES = (PLAN, METRIC, CONFIG, DEFAULT)


@dataclass(frozen=True)
class Reason:
    """One fact behind a verdict. `config` is the full key of the setting that decided it (None
    for a fact of the plan or its metrics), `value` that setting's value or the figure.
    `measure` says which size: for a figure, what it measures; for a setting, what the rule
    holds it against (`data size`: the stage's statistics, uncompressed rows; `shuffle bytes`:
    the map output's bytes on disk); None where no size is involved."""

    text: str
    source: str
    config: Optional[str] = None
    value: Optional[str] = None
    measure: Optional[str] = None


@dataclass(frozen=True)
class Candidate:
    """One operator where a rewrite of `kind` could have happened, and what became of it."""

    kind: str
    node: str
    verdict: str
    reasons: Tuple[Reason, ...] = ()
    needs: Tuple[str, ...] = ()
    #: The operator's line in the input, when known (0 otherwise).
    line: int = 0
    #: A skew decision's partition sizes: one `evidence.SkewEvidence` per side of the join
    #: (skew-join only; evidence.py imports this module, hence `Any`).
    skew: Tuple[Any, ...] = ()

    @property
    def deciding(self) -> Optional[Reason]:
        """The reason that decided the verdict: the first naming a setting, else the first."""
        for reason in self.reasons:
            if reason.config:
                return reason
        return self.reasons[0] if self.reasons else None

    def summary(self) -> str:
        """One line: `blocked: <the deciding reason>` or `cannot tell: needs X, Y`."""
        if self.verdict == CANNOT_TELL:
            head = "; ".join(r.text for r in self.reasons)
            needs = f"needs {', '.join(self.needs)}" if self.needs else ""
            return "cannot tell: " + "; ".join(x for x in (head, needs) if x)
        return f"{self.verdict}: " + "; ".join(r.text for r in self.reasons)


@dataclass(frozen=True)
class QueryWhy:
    """The candidates of one query, and what the answer could not look at."""

    id: str
    candidates: Tuple[Candidate, ...]
    notes: Tuple[str, ...] = ()
