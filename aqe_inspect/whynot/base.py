"""What every explainer sees, and the pieces they share: a setting or a figure said as a
`Reason`, the join types' buildable and splittable sides."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, Optional, Tuple

from ..rewrites.detectors.base import PlanPair
from ..plan.model import Node, Query
from ..plan.operators import parents
from ..rewrites.findings import Rewrite, describe
from ..plan.units import conf_bytes
from .evidence import Fact, Side
from .settings import Setting, Settings
from .verdicts import CONFIG, DEFAULT, HAPPENED, PLAN, Candidate, Margin, Reason

#: Which sides of each join type a hash join can build (JoinSelection / canBuildBroadcast*).
BROADCAST_BUILDS = {
    "Inner": (True, True), "Cross": (True, True), "LeftOuter": (False, True),
    "RightOuter": (True, False), "LeftSemi": (False, True), "LeftAnti": (False, True),
    "ExistenceJoin": (False, True), "FullOuter": (False, False), "LeftSingle": (False, True),
}
#: Shuffled hash joins also build either side of a full outer join (Spark 3.1+).
SHUFFLED_HASH_BUILDS = {**BROADCAST_BUILDS, "FullOuter": (True, True)}
#: Which sides OptimizeSkewedJoin can split (canSplitLeftSide / canSplitRightSide).
SKEW_SPLITS = {
    "Inner": (True, True), "Cross": (True, True), "LeftOuter": (True, False),
    "RightOuter": (False, True), "LeftSemi": (True, False), "LeftAnti": (True, False),
    "FullOuter": (False, False), "ExistenceJoin": (False, False), "LeftSingle": (False, False),
}
SIDE_NAMES = ("left", "right")


@dataclass
class Context:
    """One adaptive plan of a query, the settings in force for it, and what AQE did in it."""

    pair: PlanPair
    query: Query
    settings: Settings
    happened: Tuple[Rewrite, ...] = ()

    @property
    def origin(self) -> str:
        return self.query.origin

    @functools.cached_property
    def up(self) -> Dict[int, Node]:
        return parents(self.pair.final)

    def rewrites(self, kind: str) -> Tuple[Rewrite, ...]:
        return tuple(r for r in self.happened if r.kind == kind)

    def logical_text(self) -> str:
        return "\n".join(self.query.logical.values())


class Explainer:
    """Says, for each place a rewrite of `kind` could have happened, whether it did and why not."""

    kind: str = ""

    def explain(self, ctx: Context) -> Iterator[Candidate]:  # pragma: no cover - overridden
        raise NotImplementedError

    def happened(self, ctx: Context) -> Iterator[Candidate]:
        for rewrite in ctx.rewrites(self.kind):
            node = rewrite.final_node or rewrite.initial_node
            yield Candidate(self.kind, describe(node) or "?", HAPPENED,
                            (Reason(rewrite.message, PLAN),), line=node.line if node else 0,
                            margins=self.margins_of(rewrite, ctx))

    def margins_of(self, rewrite: Rewrite, ctx: Context) -> Tuple[Margin, ...]:
        """The margins of a rewrite that happened, as `why` and `diff` show them: each size
        decision behind it that the input measures, once."""
        return kept(self.fired_margins(rewrite, ctx))

    @property
    def measures(self) -> bool:
        """Whether rewrites of this kind hold a figure against a setting (`fired_margins`)."""
        return type(self).fired_margins is not Explainer.fired_margins

    def fired_margins(self, rewrite: Rewrite, ctx: Context) -> Iterable[Optional[Margin]]:
        """The size decisions behind a rewrite that happened, with their margins (none for a
        kind that holds no figure against a setting)."""
        return ()


def kept(margins: Iterable[Optional[Margin]]) -> Tuple[Margin, ...]:
    """The margins that could be measured, each once."""
    return tuple(dict.fromkeys(m for m in margins if m is not None))


def candidate(kind: str, node: Node, verdict: str, reasons, needs=(),
              margins: Iterable[Optional[Margin]] = ()) -> Candidate:
    return Candidate(kind, describe(node) or node.name, verdict, tuple(reasons),
                     tuple(dict.fromkeys(needs)), line=node.line, margins=kept(margins))


def setting_reason(setting: Setting, text: str, measure: Optional[str] = None) -> Reason:
    """A reason a setting decided: `text` says what it did, the setting's origin is added;
    `measure`, for a size setting, what the rule holds it against."""
    source = CONFIG if setting.source == CONFIG else DEFAULT
    return Reason(f"{text} ({setting.origin})", source, setting.key, setting.value,
                  measure or None)


def fact_reason(fact: Fact, text: str) -> Reason:
    return Reason(f"{text} ({fact.source}: {fact.where})", fact.source, None, fact.show(),
                  fact.measure or None)


def size_setting(setting: Setting) -> Optional[int]:
    """A byte-size setting's value in bytes; None when unknown (or not a size)."""
    return _parsed(setting, conf_bytes)


def number_setting(setting: Setting) -> Optional[float]:
    return _parsed(setting, float)


def _parsed(setting: Setting, parse: Callable[[str], Any]) -> Any:
    if setting.value is None:
        return None
    try:
        return parse(setting.value)
    except ValueError:
        return None


def needs_setting(setting: Setting) -> str:
    """How a cannot-tell names a missing setting: its key, and Spark's default when known."""
    hint = f" (Spark's default: {setting.default})" if setting.default is not None else ""
    return f"{setting.key}{hint}: pass --conf or read the event log"


def side_label(index: int, side: Side) -> str:
    return f"{SIDE_NAMES[index]} side {side.name()}"
