"""What an advice is made of: for each adaptive decision that did not fire and could, a
`Change` (a setting, the value to give it, where its current value came from, the figure and
threshold the value was derived from, what else it does); for one no setting can make fire, a
`Fixed` (what the query itself decides, and what can change it instead)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

from ..plan.model import Application

#: How a change moves its setting, for merging the changes of several decisions into one
#: value a key: a threshold raised (the largest value serves them all), one lowered (the
#: smallest), a switch or list set.
RAISE, LOWER, SET = "raise", "lower", "set"


@dataclass(frozen=True)
class Current:
    """A setting's value before the change, and where it came from: the key that decided (a
    fallback's, `spark.sql.autoBroadcastJoinThreshold` for an unset adaptive threshold), its
    value (None: not known), `origin` (`event log`, `--conf`, `spark-defaults.conf:3`,
    `Spark 4.3 default`; "" when not known), Spark's default when the value is not known."""

    key: str
    value: Optional[str]
    origin: str
    default: Optional[str] = None

    @property
    def known(self) -> bool:
        return self.value is not None

    def describe(self) -> str:
        if self.value is None:
            hint = f"; Spark's default is {self.default}" if self.default is not None else ""
            return f"not known (the input does not record {self.key}{hint})"
        return f"{self.key}={self.value} ({self.origin})"


@dataclass(frozen=True)
class Change:
    """One setting to change so that the decision at `node` (a `kind` of rewrite) fires."""

    kind: str
    node: str
    #: The operator's line in the input (0 when not known).
    line: int
    #: The full key to set, and the value to give it, as Spark reads it (`12KB`, `true`, `0.04`).
    key: str
    value: str
    current: Current
    #: The measured figure the value was derived from, with where it was read.
    figure: str
    #: What the figure is held against (the rule's condition) before the change.
    threshold: str
    #: How far the value is from the figure: `12KB is 28% above the measured 9.4 KiB`.
    headroom: str
    #: What else the change does (other joins, memory, other queries, the Spark lines).
    effects: Tuple[str, ...] = ()
    #: What changes this decision alone instead (a hint in the query), where one exists.
    alternatives: Tuple[str, ...] = ()
    #: The Spark lines that have `key` (`3.2+`), from SQLConf.
    lines: str = ""
    direction: str = SET
    #: The value as a number (bytes, a ratio, a factor), for merging; None for a switch or list.
    number: Optional[float] = None
    #: For a list setting (excluded rules): the item the change takes out.
    removes: str = ""


@dataclass(frozen=True)
class Fixed:
    """A decision that did not fire and that no setting changes: the query decides it (a
    user's repartition(n), a join type that cannot split or build that side, a join hint)."""

    kind: str
    node: str
    line: int
    text: str
    #: What can make it fire instead (a rewrite of the query).
    instead: Tuple[str, ...] = ()


@dataclass(frozen=True)
class QueryAdvice:
    """The advice for one query: its changes, the decisions no setting changes, what the input
    lacks for a full advice (`incomplete`), and, where no adaptive decision can fire at all,
    why (`nothing`)."""

    id: str
    title: str
    label: str = ""
    changes: Tuple[Change, ...] = ()
    fixed: Tuple[Fixed, ...] = ()
    #: Changes for an operator that another change already rewrites (a broadcast takes a join
    #: before a shuffled hash join or a skew split would): the other ways, not in `settings()`.
    instead: Tuple[Change, ...] = ()
    incomplete: Tuple[str, ...] = ()
    nothing: str = ""
    #: The Spark version the defaults were taken at ("" when not known).
    spark_version: str = ""
    #: Each join that stayed a sort-merge join: (its name, the smallest data size among the
    #: sides it could broadcast): which joins a broadcast threshold would switch.
    joins: Tuple[Tuple[str, int], ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class Advice:
    """Every query's advice, and the settings they come to (`settings()`): one value a key,
    the changes of several decisions merged."""

    source: str
    queries: Tuple[QueryAdvice, ...]
    application: Optional[Application] = None
    notes: Tuple[str, ...] = ()

    @property
    def changes(self) -> Tuple[Change, ...]:
        return tuple(c for q in self.queries for c in q.changes)

    @property
    def incomplete(self) -> bool:
        """Whether any query's advice was made on incomplete evidence."""
        return any(q.incomplete for q in self.queries)

    def settings(self) -> Tuple[Tuple[str, str], ...]:
        """(key, value) for each key a change sets, in the order first changed: a raised
        threshold at the largest value asked, a lowered one at the smallest, a list with every
        item the changes take out."""
        chosen: Dict[str, Change] = {}
        removed: Dict[str, List[str]] = {}
        for change in self.changes:
            if change.removes:
                removed.setdefault(change.key, []).append(change.removes)
            held = chosen.get(change.key)
            if held is None or (change.number is not None and held.number is not None and (
                    (change.direction == RAISE and change.number > held.number)
                    or (change.direction == LOWER and change.number < held.number))):
                chosen[change.key] = change
        found = []
        for key, change in chosen.items():
            value = change.value
            if key in removed:
                value = without(change.current.value or "", removed[key])
            found.append((key, value))
        return tuple(found)


def without(value: str, rules: Iterable[str]) -> str:
    """An excludedRules list (comma-separated, as `Utils.stringToSeq` reads it: items trimmed,
    empty ones dropped) without the items naming `rules` (a class name or its simple name)."""
    gone = tuple(rules)
    kept = [item.strip() for item in value.split(",") if item.strip()]
    kept = [item for item in kept if not any(item == r or item.endswith("." + r) for r in gone)]
    return ",".join(kept)
