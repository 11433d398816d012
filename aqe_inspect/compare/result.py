"""What a comparison finds, as frozen dataclasses, and its JSON (`aqe-inspect/compare/v1`).

A `Comparison` holds the matched `Pair`s (each an old and a new `ExecutionSummary`, the basis
of the match, what was lost, replaced (a stronger rewrite took it over: replacement.py) and
gained per rewrite kind, and what else differs), the
executions each side holds alone, and the gate's verdict. Two fleet tables compare into
`FleetGroup`s instead (per application name and execution description: rates before and
after). `to_json` is the one place the contract is written (docs/json.md, the schema in
aqe_inspect/compare/schema.json).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..plan.model import DRIVER_LOG_NOT_ENDED, LOG_NOT_ENDED
from .gate import Gate
from .replacement import Replacement, emptied_replacements, replaced_counts, replacements
from .summary import ExecutionSummary

SCHEMA = "aqe-inspect/compare/v1"


def _difference(old: Mapping[str, int], new: Mapping[str, int], kinds) -> Tuple[
        Dict[str, int], Dict[str, int]]:
    lost = {kind: max(0, old.get(kind, 0) - new.get(kind, 0)) for kind in kinds}
    gained = {kind: max(0, new.get(kind, 0) - old.get(kind, 0)) for kind in kinds}
    return lost, gained


@dataclass(frozen=True)
class SettingChange:
    """A setting whose value differs between the runs (None: not recorded on that side)."""

    key: str
    old: Optional[str]
    new: Optional[str]


def _where(summary: ExecutionSummary) -> str:
    """` (app.json:36)`: the file and line an execution was read at, as messages name it."""
    if summary.source and summary.line:
        return f" ({summary.source}:{summary.line})"
    if summary.line:
        return f" (line {summary.line})"
    return f" ({summary.source})" if summary.source else ""


#: Why a run's log that ends before its application does may lack executions.
NOT_ENDED_WHY = "ends before its application does (cut short, still being written, or its " \
    "driver was killed)"


#: Why an execution of the old run the new run does not hold is no verdict.
MISSING_WHY = "the new run failed or stopped before it, or no longer runs it; " \
    "--allow-missing leaves it out"


@dataclass(frozen=True)
class Pair:
    """One execution of the old run and its counterpart in the new one."""

    old: ExecutionSummary
    new: ExecutionSummary
    matched_by: str
    kinds: Tuple[str, ...]

    @cached_property
    def _accounts(self) -> Tuple[Dict[str, int], Tuple[Replacement, ...], Dict[str, int]]:
        fewer, gained = _difference(self.old.counts, self.new.counts, self.kinds)
        replaced = replacements(self.old.join_sites, self.new.join_sites, fewer, self.kinds)
        taken = replaced_counts(replaced)
        replaced += emptied_replacements(
            self.old.rewrite_places, self.new.emptied,
            {kind: count - taken.get(kind, 0) for kind, count in fewer.items()}, self.kinds)
        taken = replaced_counts(replaced)
        lost = {kind: count - taken.get(kind, 0) for kind, count in fewer.items()}
        return lost, replaced, gained

    @property
    def lost(self) -> Dict[str, int]:
        """Per kind, the rewrites the old run made that the new one did not, less those a
        stronger rewrite took over (`replaced`)."""
        return dict(self._accounts[0])

    @property
    def replaced(self) -> Tuple[Replacement, ...]:
        """The rewrites of the old run that a stronger one of the new run took over."""
        return self._accounts[1]

    @property
    def replaced_counts(self) -> Dict[str, int]:
        """Per kind, how many of the old run's rewrites were replaced (every kind listed)."""
        taken = replaced_counts(self.replaced)
        return {kind: taken.get(kind, 0) for kind in self.kinds}

    @property
    def gained(self) -> Dict[str, int]:
        return dict(self._accounts[2])

    @property
    def rewrites_changed(self) -> bool:
        return any(self.lost.values()) or any(self.gained.values()) or bool(self.replaced)

    @property
    def unfinished(self) -> Tuple[str, ...]:
        """Per side whose execution had not finished (`ExecutionSummary.unfinished`): `old
        run: execution 3 (line 8): its execution had not ended ...`. What AQE had made so far
        is no verdict on what it would have made: the pair is `unfinished`."""
        return tuple(f"{side} run: {summary.label}{_where(summary)}: {summary.unfinished}"
                     for side, summary in (("old", self.old), ("new", self.new))
                     if summary.unfinished)

    @property
    def joins_changed(self) -> bool:
        return self.old.joins != self.new.joins

    @property
    def changed(self) -> bool:
        """Whether AQE decided anything differently: rewrites, joins, partitions, stages."""
        return (self.rewrites_changed or self.joins_changed
                or (self.old.partitions_before, self.old.partitions_after)
                != (self.new.partitions_before, self.new.partitions_after)
                or self.old.skew_splits != self.new.skew_splits
                or self.old.query_stages != self.new.query_stages)

    @property
    def duration_ratio(self) -> Optional[float]:
        old, new = self.old.duration_ms, self.new.duration_ms
        if old is None or new is None or old <= 0:
            return None
        return new / old

    @property
    def margins_shrank(self) -> Tuple[Tuple[Any, Any], ...]:
        """(old, new) `MarginFigure` of each size decision (kind, setting) both runs took the
        same way whose margin the new run holds by at least a percentage point less: a plan
        nearer to flipping."""
        old = {(m.kind, m.config): m for m in self.old.margins}
        found = []
        for margin in self.new.margins:
            before = old.get((margin.kind, margin.config))
            if before is not None and before.fired == margin.fired and \
                    margin.percent <= before.percent - 1.0:
                found.append((before, margin))
        return tuple(found)

    @property
    def version_change(self) -> Optional[Tuple[str, str]]:
        if self.old.spark_version and self.new.spark_version and \
                self.old.spark_version != self.new.spark_version:
            return self.old.spark_version, self.new.spark_version
        return None

    @property
    def setting_changes(self) -> Tuple[SettingChange, ...]:
        old, new = self.old.configs_dict(), self.new.configs_dict()
        return tuple(SettingChange(key, old.get(key), new.get(key))
                     for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key))


@dataclass(frozen=True)
class KindRates:
    """One rewrite kind over a fleet group's executions on one side: how many executions hold
    at least one rewrite of it, and how many rewrites there are."""

    executions: int
    rewrites: int


@dataclass(frozen=True)
class FleetGroup:
    """One application name and execution description in two fleet tables."""

    app_name: str
    description: str
    executions_old: int
    executions_new: int
    old: Mapping[str, KindRates]
    new: Mapping[str, KindRates]
    kinds: Tuple[str, ...]

    def rate(self, side: str, kind: str) -> Optional[float]:
        count = self.executions_old if side == "old" else self.executions_new
        rates = self.old if side == "old" else self.new
        return rates[kind].executions / count if count else None

    @property
    def lost(self) -> Dict[str, int]:
        """Per kind, the drop of its rate in percentage points, rounded (0: no drop)."""
        return {kind: max(0, round(100 * ((self.rate("old", kind) or 0)
                                          - (self.rate("new", kind) or 0))))
                for kind in self.kinds}

    @property
    def gained(self) -> Dict[str, int]:
        return {kind: max(0, round(100 * ((self.rate("new", kind) or 0)
                                          - (self.rate("old", kind) or 0))))
                for kind in self.kinds}

    @property
    def replaced(self) -> Tuple[Replacement, ...]:
        """Nothing: a fleet table holds rates, not plans to tell a replacement by."""
        return ()

    @property
    def replaced_counts(self) -> Dict[str, int]:
        return {kind: 0 for kind in self.kinds}

    @property
    def rewrites_changed(self) -> bool:
        return any(self.lost.values()) or any(self.gained.values())


@dataclass(frozen=True)
class Side:
    """One side as given: its name, and the applications (Spark versions) it held."""

    source: str
    executions: int = 0
    spark_versions: Tuple[str, ...] = ()
    notes: Tuple[str, ...] = ()
    #: Its event log ends before its application does (no SparkListenerApplicationEnd: cut,
    #: still being written, a driver killed): executions may be missing from it.
    not_ended: bool = False
    #: Why, as the reader said (`rewrites.findings.not_ended_why`); empty when not.
    not_ended_why: Tuple[str, ...] = field(default=(), compare=False)

    @property
    def lacks(self) -> str:
        """`ends before its application does (...)`, or the reasons the reader gave."""
        reasons = [why for why in self.not_ended_why
                   if why and why not in (LOG_NOT_ENDED, DRIVER_LOG_NOT_ENDED)]
        if not reasons:
            return NOT_ENDED_WHY
        return "may lack executions (" + "; ".join(reasons) + ")"


@dataclass(frozen=True)
class Comparison:
    old: Side
    new: Side
    kinds: Tuple[str, ...]
    gate: Gate
    pairs: Tuple[Pair, ...] = ()
    unmatched_old: Tuple[ExecutionSummary, ...] = ()
    unmatched_new: Tuple[ExecutionSummary, ...] = ()
    #: Fleet tables only: the groups both tables hold, then those of one table only.
    groups: Tuple[FleetGroup, ...] = ()
    groups_old_only: Tuple[FleetGroup, ...] = ()
    groups_new_only: Tuple[FleetGroup, ...] = ()
    fleet: bool = False
    notes: Tuple[str, ...] = ()
    #: Judge the pairs whose execution had not finished on either side on what they hold
    #: (`--judge-unfinished`), rather than call them `unfinished` (no verdict, failing).
    judge_unfinished: bool = False
    #: Leave the old run's executions the new run does not hold out of the verdict
    #: (`--allow-missing`), rather than call them `unfinished` (`missing`).
    allow_missing: bool = False

    @property
    def items(self):
        """What the gate is held to: the pairs, or a fleet's groups."""
        return self.groups if self.fleet else self.pairs

    @property
    def unit(self) -> str:
        """What the runs' items are called (the glossary, docs/inputs.md): `execution`
        where a run is an event log or History Server answer, `query` where both are plan
        texts, `group` for a fleet."""
        if self.fleet:
            return "group"
        summaries = [s for pair in self.pairs for s in (pair.old, pair.new)]
        summaries += [*self.unmatched_old, *self.unmatched_new]
        if summaries and all(s.execution_id is None for s in summaries):
            return "query"
        return "execution"

    def counted(self, count: int) -> str:
        """`3 execution(s)`, `2 group(s)`, `1 query`, `3 queries`: `count` of `unit`."""
        if self.unit == "query":
            return f"{count} {'query' if count == 1 else 'queries'}"
        return f"{count} {self.unit}(s)"

    @property
    def unfinished(self) -> Tuple[Pair, ...]:
        """The pairs that are no verdict: an execution of either side had not finished (a cut
        or in-progress log, an isFinalPlan=false plan), and `judge_unfinished` is not set.
        Each fails the comparison; the gate is not held to them."""
        if self.fleet or self.judge_unfinished:
            return ()
        return tuple(pair for pair in self.pairs if pair.unfinished)

    @property
    def tripped(self) -> Tuple[Tuple[Any, Tuple[str, ...]], ...]:
        """Each pair (or group) that fails the gate, with what failed it (not the
        `unfinished` pairs: no verdict)."""
        found = []
        unfinished = {id(pair) for pair in self.unfinished}
        for item in self.items:
            if id(item) in unfinished:
                continue
            reasons = self.gate.reasons(item.lost, item.gained)
            if reasons:
                found.append((item, reasons))
        return tuple(found)

    @property
    def missing(self) -> Tuple[ExecutionSummary, ...]:
        """The old run's executions the new run does not hold, where that run's log ended
        (failed, stopped early, or the job no longer runs them): no verdict on what they
        would have made, so each fails the comparison as an unfinished pair does, unless
        `allow_missing` (then only listed, as `unmatched_old`). Where the new run's log
        ends before its application does they are `unpartnered` for that reason instead."""
        if self.fleet or self.allow_missing or self.new.not_ended:
            return ()
        return self.unmatched_old

    @property
    def unpartnered_executions(self) -> Tuple[Tuple[ExecutionSummary, str], ...]:
        """The executions of one run with no partner in the other that are no verdict, each
        with why: where the other's log ends before its application does (`Side.not_ended`),
        the partner may be in what that log lacks (unless `judge_unfinished`); and the old
        run's executions missing from a new run that ended (`missing`, unless
        `allow_missing`). Each fails the comparison as an unfinished pair does."""
        if self.fleet:
            return ()
        found = []
        if not self.judge_unfinished:
            for side, others, run, other in ((self.new, self.unmatched_old, "old", "new"),
                                             (self.old, self.unmatched_new, "new", "old")):
                if side.not_ended:
                    found.extend((summary, f"{run} run: {summary.label}{_where(summary)} has "
                                  f"no partner in the {other} run, whose log "
                                  f"{side.source or '<stdin>'} {side.lacks}")
                                 for summary in others)
        found.extend((summary, f"old run: {summary.label}{_where(summary)} is missing from "
                      f"the new run {self.new.source or '<stdin>'} ({MISSING_WHY})")
                     for summary in self.missing)
        return tuple(found)

    def unpartnered_why(self, run: str) -> str:
        """Why the executions only in `run` (`old` or `new`) are no verdict: the other run's
        log ends before its application does, naming it, or (the old run's) they are missing
        from the new run; "" when they are not (`unpartnered_executions`)."""
        if self.fleet:
            return ""
        other, name = (self.new, "new") if run == "old" else (self.old, "old")
        if other.not_ended:
            if self.judge_unfinished:
                return ""
            return (f"unfinished, no verdict: the {name} run's log {other.source or '<stdin>'} "
                    f"{other.lacks}, so their partners may be in what it lacks")
        if run == "old" and self.missing:
            return (f"unfinished, no verdict: missing from the new run "
                    f"{other.source or '<stdin>'} (it failed or stopped before them, or no "
                    "longer runs them; --allow-missing leaves them out)")
        return ""

    @property
    def unpartnered(self) -> Tuple[str, ...]:
        """`unpartnered_executions`, each as its sentence."""
        return tuple(text for _, text in self.unpartnered_executions)

    @property
    def failed(self) -> bool:
        return bool(self.tripped) or bool(self.unfinished) or bool(self.unpartnered)

    def as_json(self) -> Dict[str, Any]:
        """The comparison as `aqe-inspect/compare/v1` (`to_json`)."""
        return to_json(self)

    def totals(self, which: str) -> Dict[str, int]:
        totals = {kind: 0 for kind in self.kinds}
        for item in self.items:
            for kind, count in getattr(item, which).items():
                totals[kind] += count
        return totals

    @property
    def replaced(self) -> Tuple[Replacement, ...]:
        """Every pair's replacements summed per kind, what replaced it and why."""
        found: Dict[Tuple[str, str, str, str], List[Any]] = {}
        for item in self.items:
            for replacement in item.replaced:
                key = (replacement.kind, replacement.by, replacement.because,
                       replacement.switched_in)
                entry = found.setdefault(key, [0, [], 0])
                entry[0] += replacement.count
                entry[1].extend(j for j in replacement.joins if j not in entry[1])
                entry[2] += replacement.by_count
        order = {kind: index for index, kind in enumerate(self.kinds)}
        return tuple(Replacement(kind, count, by, because, tuple(joins), switched_in, by_count)
                     for (kind, by, because, switched_in), (count, joins, by_count)
                     in sorted(found.items(), key=lambda item: order.get(item[0][0], 99)))

    @property
    def _unfinished_clause(self) -> str:
        """`1 execution(s) unfinished, no verdict (new run: execution 0 (line 8): ...)`."""
        pairs = self.unfinished
        unpartnered = self.unpartnered
        if not pairs and not unpartnered:
            return ""
        first = pairs[0].unfinished[0] if pairs else unpartnered[0]
        more = len(pairs) + len(unpartnered) - 1
        missing = len(self.missing)
        hint = "" if missing == len(pairs) + len(unpartnered) and missing \
            else "; --judge-unfinished judges what is there"
        if missing and (pairs or missing < len(unpartnered)):
            hint += "; --allow-missing leaves out what the new run lacks"
        return (f"{self.counted(len(pairs) + len(unpartnered))} unfinished, no verdict ({first}"
                + (f"; and {more} more" if more else "") + hint + ")")

    @property
    def verdict(self) -> str:
        """`PASS: ...`, `FAIL: ...` (the gate holds for some item; with what is unfinished
        after it), or `UNFINISHED: ...` (nothing failed the gate, but a pair is no verdict)."""
        tripped = self.tripped
        replaced = "; ".join(r.clause for r in self.replaced)
        unfinished = self._unfinished_clause
        if tripped:
            lost = {k: n for k, n in self.totals("lost").items() if n}
            gained = {k: n for k, n in self.totals("gained").items() if n}
            parts = []
            if lost:
                parts.append("lost " + ", ".join(f"{k} {n}" for k, n in lost.items()))
            if gained:
                parts.append("gained " + ", ".join(f"{k} {n}" for k, n in gained.items()))
            if replaced:
                parts.append(replaced)
            return (f"FAIL: {self.counted(len(tripped))} fail --fail-on {self.gate.text}"
                    + (f" ({'; '.join(parts)})" if parts else "")
                    + (f"; {unfinished}" if unfinished else ""))
        if unfinished:
            return f"UNFINISHED: {unfinished}"
        judged = 0 if self.fleet else sum(1 for pair in self.pairs if pair.unfinished)
        judged_text = (f"; {judged} unfinished {self.counted(judged).split(' ', 1)[1]} judged "
                       "on what they hold "
                       "(--judge-unfinished)") if judged else ""
        changed = sum(1 for item in self.items if item.rewrites_changed)
        if changed:
            return (f"PASS: {self.counted(changed)} changed, none that --fail-on {self.gate.text} "
                    "fails" + (f" ({replaced})" if replaced else "") + judged_text)
        count, what = self.counted(len(self.items)).split(" ", 1)
        return (f"PASS: no rewrite lost or gained in {count} matched {what}"
                + judged_text)


# ---- JSON ---------------------------------------------------------------------------------

def _execution_json(summary: ExecutionSummary) -> Dict[str, Any]:
    return {"source": summary.source, "execution_id": summary.execution_id,
            "query_id": summary.query_id, "description": summary.description,
            "app_id": summary.app_id or None, "app_name": summary.app_name or None,
            "spark_version": summary.spark_version or None, "shape": summary.shape,
            "line": summary.line or None}


def _side_figure(old, new) -> Dict[str, Any]:
    return {"old": old, "new": new}


def pair_json(pair: Pair, status: str = "passed") -> Dict[str, Any]:
    """One pair as the contract holds it; `status`: what the comparison made of it
    (`passed`, `failed` the gate, or `unfinished`: no verdict)."""
    old, new = pair.old, pair.new
    ratio = pair.duration_ratio
    version = pair.version_change
    return {
        "old": _execution_json(old),
        "new": _execution_json(new),
        "matched_by": pair.matched_by,
        "status": status,
        "unfinished": list(pair.unfinished),
        "counts": {"old": dict(old.counts), "new": dict(new.counts)},
        "lost": pair.lost,
        "replaced": [replacement_json(r) for r in pair.replaced],
        "gained": pair.gained,
        "changed": pair.changed,
        "partitions": {
            "old": {"before": old.partitions_before, "after": old.partitions_after},
            "new": {"before": new.partitions_before, "after": new.partitions_after}},
        "skewed_partitions": _side_figure(old.skewed_partitions, new.skewed_partitions),
        "skew_splits": _side_figure(old.skew_splits, new.skew_splits),
        "joins": {"old": old.joins_dict(), "new": new.joins_dict()},
        "query_stages": _side_figure(old.query_stages, new.query_stages),
        "duration_ms": {"old": old.duration_ms, "new": new.duration_ms,
                        "ratio": round(ratio, 4) if ratio is not None else None},
        "settings": {
            "spark_version": {"old": version[0], "new": version[1]} if version else None,
            "configs": [{"key": c.key, "old": c.old, "new": c.new}
                        for c in pair.setting_changes]},
        "why_not": {kind: list(lines) for kind, lines in new.why_not
                    if pair.lost.get(kind)},
        "margins_shrank": [{"kind": b.kind, "config": b.config,
                            "old": _margin_json(a), "new": _margin_json(b)}
                           for a, b in pair.margins_shrank],
    }


def _margin_json(margin) -> Dict[str, Any]:
    return {"percent": round(margin.percent, 2), "side": margin.side, "fired": margin.fired,
            "text": margin.text}


def replacement_json(replacement: Replacement) -> Dict[str, Any]:
    return {"kind": replacement.kind, "count": replacement.count, "by": replacement.by,
            "because": replacement.because, "switched_in": replacement.switched_in,
            "by_count": replacement.by_count or replacement.count,
            "joins": list(replacement.joins), "text": replacement.text}


def _group_json(group: FleetGroup) -> Dict[str, Any]:
    def rates(side: str) -> Dict[str, Any]:
        figures = group.old if side == "old" else group.new
        return {kind: {"executions": figures[kind].executions,
                       "rewrites": figures[kind].rewrites,
                       "rate": _round(group.rate(side, kind))} for kind in group.kinds}

    return {"app_name": group.app_name, "description": group.description,
            "executions": {"old": group.executions_old, "new": group.executions_new},
            "rates": {"old": rates("old"), "new": rates("new")},
            "lost": group.lost, "gained": group.gained}


def _round(value: Optional[float]) -> Optional[float]:
    return round(value, 4) if value is not None else None


def _side_json(side: Side) -> Dict[str, Any]:
    return {"source": side.source, "executions": side.executions,
            "spark_versions": list(side.spark_versions)}


def to_json(comparison: Comparison) -> Dict[str, Any]:
    """The comparison as `aqe-inspect/compare/v1` (keys are only ever added)."""
    tripped = comparison.tripped
    failing = {id(item) for item, _ in tripped}
    unfinished = {id(pair) for pair in comparison.unfinished}

    def status(pair: Pair) -> str:
        return "unfinished" if id(pair) in unfinished else \
            "failed" if id(pair) in failing else "passed"

    return {
        "schema": SCHEMA,
        "kind": "fleet" if comparison.fleet else "executions",
        "old": _side_json(comparison.old),
        "new": _side_json(comparison.new),
        "kinds": list(comparison.kinds),
        "fail_on": comparison.gate.rules_text(),
        "judge_unfinished": comparison.judge_unfinished,
        "allow_missing": comparison.allow_missing,
        "failed": comparison.failed,
        "status": "failed" if tripped else "unfinished" if unfinished or
        comparison.unpartnered else "passed",
        "unpartnered": list(comparison.unpartnered),
        "verdict": comparison.verdict,
        "summary": {
            "matched": len(comparison.items),
            "changed": sum(1 for item in comparison.items if item.rewrites_changed),
            "failing": len(tripped),
            "unfinished": len(unfinished),
            "missing": len(comparison.missing),
            "unmatched_old": len(comparison.groups_old_only if comparison.fleet
                                 else comparison.unmatched_old),
            "unmatched_new": len(comparison.groups_new_only if comparison.fleet
                                 else comparison.unmatched_new),
            "lost": comparison.totals("lost"),
            "replaced": comparison.totals("replaced_counts"),
            "gained": comparison.totals("gained"),
        },
        "pairs": [pair_json(pair, status(pair)) for pair in comparison.pairs],
        "groups": [_group_json(group) for group in comparison.groups],
        "unmatched": {
            "old": [_group_json(g) for g in comparison.groups_old_only] if comparison.fleet
            else [_execution_json(s) for s in comparison.unmatched_old],
            "new": [_group_json(g) for g in comparison.groups_new_only] if comparison.fleet
            else [_execution_json(s) for s in comparison.unmatched_new],
        },
        "notes": list(comparison.notes),
    }


__all__ = ["Comparison", "FleetGroup", "KindRates", "Pair", "Replacement", "SCHEMA",
           "SettingChange", "Side", "pair_json", "replacement_json", "to_json"]
