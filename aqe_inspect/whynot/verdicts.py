"""What a why-not answer is made of: for each place a rewrite could have happened (a
`Candidate`), a verdict and the reasons behind it, each saying where its fact came from, and
for each size decision the rule took there, fired or not, its `Margin`: the run's figure, the
threshold it was held to and how far apart they were."""

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


#: Which side of its threshold a figure lies on (`Margin.side`, `Margin.fires`).
UNDER, OVER = "under", "over"
#: What a margin's figure and threshold are counted in: bytes, or a fraction (0.2 = 20%).
BYTES, RATIO = "bytes", "ratio"


@dataclass(frozen=True)
class Bar:
    """One more term of a threshold made of several (the skew rule's bar is the larger of its
    threshold and `factor` x the median partition): the setting, its value and where it came
    from, and what it comes to, in the margin's unit."""

    config: str
    value: str
    origin: str
    amount: float
    #: How the term reads: `5 x median 40.0 MiB`.
    text: str


@dataclass(frozen=True)
class Margin:
    """One size decision of an adaptive rule, fired or not: the run's `figure` (what it is:
    `what`; what it measures: `measure`, where it was read: `where`), the `threshold` the rule
    held it to (the setting `config`=`value`, from `origin`; `source` is config or default),
    and how far apart they were: `percent` of the threshold, the figure on the `side` of it
    (under or over). `fires` is the side on which the rule rewrites, so `fired` says which way
    the decision went. `also` lists the other terms of a threshold made of several; `threshold`
    is then the bar they make together (the skew rule's larger). `exact` is False where the
    figure is a printed size standing for an interval (the percent is then its middle's).
    `percent` is None where the threshold is 0."""

    what: str
    figure: float
    threshold: float
    unit: str
    measure: str
    config: str
    value: str
    origin: str
    source: str
    side: str
    fires: str
    percent: Optional[float]
    where: str = ""
    also: Tuple[Bar, ...] = ()
    exact: bool = True

    @property
    def fired(self) -> bool:
        """Whether the figure lies on the side of the threshold where the rule rewrites."""
        return self.side == self.fires


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
    #: Each size decision taken here, fired or not, with its figure, threshold and margin.
    margins: Tuple[Margin, ...] = ()

    @property
    def closest(self) -> Optional[Margin]:
        """The margin nearest to turning the verdict: of the decisions that went the way the
        verdict did (fired for a rewrite that happened, not fired otherwise), the smallest
        percent; None without one."""
        went = [m for m in self.margins if m.fired == (self.verdict == HAPPENED)
                and m.percent is not None]
        return min(went, key=lambda m: m.percent) if went else None

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
