"""Margins: how far each adaptive size decision was from going the other way.

Every explainer that holds a run-time figure against a setting (a join side's data size
against the broadcast threshold, the largest partition against the skew bar or the shuffled
hash join's local-map threshold, neighbouring partitions against the advisory size, the share
of non-empty partitions against `nonEmptyPartitionRatioForBroadcastJoin`) says so with a
`Margin` (verdicts.py), whether the rule fired or not. This module makes them, in one way, and
says them in one way: `the right side ShuffleQueryStage (12), data size 9.4 KiB, against
spark.sql.adaptive.autoBroadcastJoinThreshold=8928 (8.7 KiB, event log): 7.5% over`.

The percent is the distance between figure and threshold as a share of the threshold. A figure
equal to its threshold lies on the side the rule counts it (`at`): Spark broadcasts a side of
at most the threshold, splits a partition larger than the skew bar, merges partitions that
fit the advisory size together, demotes a broadcast when fewer than the ratio hold data.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..plan.units import Size, show_bytes
from .evidence import Fact, show_size
from .settings import Setting
from .verdicts import BYTES, CONFIG, DEFAULT, OVER, RATIO, UNDER, Bar, Margin


def _side(figure: float, threshold: float, at: str) -> str:
    if figure < threshold:
        return UNDER
    if figure > threshold:
        return OVER
    return at


def _percent(figure: float, threshold: float) -> Optional[float]:
    if threshold <= 0:
        return None
    return abs(figure - threshold) * 100.0 / threshold


def _middle(size: Size) -> float:
    return (size.low + size.high) / 2 if size.low != size.high else float(size.low)


def size_margin(what: str, fact: Fact, threshold: int, setting: Setting, fires: str,
                at: str = UNDER, also: Sequence[Bar] = ()) -> Optional[Margin]:
    """A byte figure held to a byte threshold set by `setting` (the larger of it and `also`'s
    terms, where the rule's bar is made of several). None where the setting is unknown."""
    if not setting.known or setting.value is None:
        return None
    bar = max([float(threshold)] + [b.amount for b in also])
    value = fact.value
    low, high = _side(float(value.low), bar, at), _side(float(value.high), bar, at)
    if low != high:
        return None  # a printed size or a bound that stands on both sides of the bar
    side = low
    # Where the figure is an interval (a printed size, a bound), its end nearest the bar: the
    # margin is at least that.
    figure = float(value.high) if side == UNDER else float(value.low)
    return Margin(what=what, figure=figure, threshold=bar, unit=BYTES,
                  measure=fact.measure, config=setting.key, value=setting.value,
                  origin=setting.origin, source=CONFIG if setting.source == CONFIG else DEFAULT,
                  side=side, fires=fires, percent=_percent(figure, bar),
                  where=f"{fact.source}: {fact.where}", also=tuple(also),
                  exact=value.low == value.high)


def ratio_margin(what: str, figure: float, threshold: float, setting: Setting, fires: str,
                 at: str, measure: str, where: str) -> Optional[Margin]:
    """A fraction held to a fractional setting (the non-empty partitions' share)."""
    if not setting.known or setting.value is None:
        return None
    return Margin(what=what, figure=figure, threshold=threshold, unit=RATIO, measure=measure,
                  config=setting.key, value=setting.value, origin=setting.origin,
                  source=CONFIG if setting.source == CONFIG else DEFAULT,
                  side=_side(figure, threshold, at), fires=fires,
                  percent=_percent(figure, threshold), where=where)


def factor_bar(setting: Setting, factor: float, median: Size) -> Bar:
    """The skew rule's second term: `factor` x the median partition."""
    amount = factor * _middle(median)
    return Bar(config=setting.key, value=setting.value or "", origin=setting.origin,
               amount=amount, text=f"{_number(factor)} x median {show_size(median)}")


def show_percent(percent: Optional[float]) -> str:
    """`2%`, `7.5%`, `0.3%`: one decimal under 10%, whole percents above."""
    if percent is None:
        return "n/a"
    if percent >= 10:
        return f"{percent:.0f}%"
    text = f"{percent:.1f}".rstrip("0").rstrip(".")
    return f"{text}%"


def show_figure(margin: Margin, value: float) -> str:
    if margin.unit == RATIO:
        return _number(round(value, 4))
    return show_bytes(int(round(value)))


def margin_text(margin: Margin) -> str:
    """`the right side ShuffleQueryStage (12), data size 9.4 KiB, against
    spark.sql.adaptive.autoBroadcastJoinThreshold=8928 (8.7 KiB, event log): 7.5% over`; a
    skew bar's terms joined by `and`."""
    figure = show_figure(margin, margin.figure)
    if not margin.exact:
        figure = ("at most " if margin.side == UNDER else "at least ") + figure
    measure = f"{margin.measure} " if margin.measure and margin.unit == BYTES else ""
    bar = f"{margin.config}={margin.value}"
    if margin.unit == BYTES:
        own = margin.threshold if not margin.also else None
        shown = show_bytes(int(round(own))) if own is not None else ""
        bar += f" ({shown + ', ' if shown else ''}{margin.origin})"
    else:
        bar += f" ({margin.origin})"
    for term in margin.also:
        bar += f" and {term.text} ({term.config}={term.value})"
    if margin.also:
        bar += f", a bar of {show_figure(margin, margin.threshold)}"
    gap = "at" if margin.percent == 0 else margin.side
    return (f"{margin.what}, {measure}{figure}, against {bar}: "
            f"{show_percent(margin.percent)} {gap}")


def margin_json(margin: Margin) -> dict:
    """A margin in the JSON contracts (why, check, compare): every field, the percent to two
    decimals."""
    return {
        "what": margin.what, "figure": margin.figure if margin.unit == RATIO else
        int(round(margin.figure)), "threshold": margin.threshold if margin.unit == RATIO
        else int(round(margin.threshold)), "unit": margin.unit, "measure": margin.measure,
        "config": margin.config, "value": margin.value, "origin": margin.origin,
        "source": margin.source, "side": margin.side, "fires": margin.fires,
        "fired": margin.fired,
        "percent": None if margin.percent is None else round(margin.percent, 2),
        "exact": margin.exact, "where": margin.where,
        "also": [{"config": b.config, "value": b.value, "origin": b.origin,
                  "amount": b.amount if margin.unit == RATIO else int(round(b.amount)),
                  "text": b.text} for b in margin.also],
        "text": margin_text(margin),
    }


def _number(value: float) -> str:
    return f"{value:g}"
