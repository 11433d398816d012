"""What the compare formats share: how figures and changes are said in words."""

from __future__ import annotations

from typing import Iterable, List, Mapping, Optional, Tuple


def kinds_text(counts: Mapping[str, int]) -> str:
    """`smj-to-bhj 1, local-read 2` (kinds with none left out); `none` when empty."""
    return ", ".join(f"{kind} {count}" for kind, count in counts.items() if count) or "none"


def duration_text(ms: Optional[int]) -> str:
    if ms is None:
        return "?"
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms / 60_000:.1f} min"


def duration_line(pair) -> str:
    ratio = pair.duration_ratio
    text = f"{duration_text(pair.old.duration_ms)} -> {duration_text(pair.new.duration_ms)}"
    return text + (f" ({ratio:.2f}x)" if ratio is not None else "")


def joins_text(joins: Iterable[Tuple[str, int]]) -> str:
    return ", ".join(f"{name} {count}" if count > 1 else name for name, count in joins) or "none"


def partitions_text(summary) -> str:
    before, after = summary.partitions_before, summary.partitions_after
    if before is None and after is None:
        return "not coalesced"
    return f"{figure(before)} to {figure(after)}"


def figure(value) -> str:
    return "?" if value is None else str(value)


def differences(pair) -> List[Tuple[str, str, str]]:
    """What differs in a pair besides its rewrites: (what, old, new), as words."""
    old, new = pair.old, pair.new
    found = []
    if pair.joins_changed:
        found.append(("joins", joins_text(old.joins), joins_text(new.joins)))
    if (old.partitions_before, old.partitions_after) != (new.partitions_before,
                                                         new.partitions_after):
        found.append(("partitions coalesced", partitions_text(old), partitions_text(new)))
    if old.skew_splits != new.skew_splits:
        found.append(("skew splits", figure(old.skew_splits), figure(new.skew_splits)))
    if old.query_stages != new.query_stages:
        found.append(("query stages", str(old.query_stages), str(new.query_stages)))
    return found


def settings_lines(pair) -> List[str]:
    lines = []
    version = pair.version_change
    if version:
        lines.append(f"Spark {version[0]} -> {version[1]}")
    for change in pair.setting_changes:
        lines.append(f"{change.key}: {'(not set)' if change.old is None else change.old} -> "
                     f"{'(not set)' if change.new is None else change.new}")
    return lines


def pair_title(pair) -> str:
    """`execution 3 -> 5 "the description" (matched by description)`, unescaped."""
    description = pair.new.description or pair.old.description
    head = f"{pair.old.label} -> {pair.new.label}"
    if description:
        head += f' "{shorten(description)}"'
    return f"{head} (matched by {pair.matched_by})"


def shorten(text: str, most: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= most else text[:most - 3] + "..."


def replaced_text(pair) -> str:
    """`coalesced 2 replaced by local-read 2 (the join became smj-to-bhj)`, each replacement
    of a pair; `none` when it has none."""
    return "; ".join(replacement.text for replacement in pair.replaced) or "none"


def no_verdict(comparison, pair) -> bool:
    """Whether the pair is `unfinished` (`Comparison.unfinished`): an execution of either run
    had not finished, and the comparison does not judge it."""
    return bool(pair.unfinished) and not comparison.judge_unfinished and not comparison.fleet


def shown(comparison, pair) -> bool:
    """Whether a format shows the pair on its own: it changed, it had not finished, or a
    size decision's margin shrank."""
    return pair.changed or bool(pair.unfinished) or bool(pair.margins_shrank)


def unfinished_lines(comparison, pair) -> List[str]:
    """`unfinished, no verdict: new run: execution 0 (line 8): ...` per side that had not
    finished (`judged on what it holds` with --judge-unfinished); none when both had."""
    head = "unfinished, no verdict" if no_verdict(comparison, pair) else \
        "unfinished, judged on what it holds"
    return [f"{head}: {why}" for why in pair.unfinished]


def status(comparison, pair) -> str:
    """UNFINISHED / LOST / REPLACED / GAINED / CHANGED / SAME, as a pair is headed:
    UNFINISHED when an execution of either run had not finished (no verdict); REPLACED when
    what the new run did not make again a stronger rewrite took over, and nothing else was
    lost."""
    if no_verdict(comparison, pair):
        return "UNFINISHED"
    if any(pair.lost.values()):
        return "LOST"
    if pair.replaced:
        return "REPLACED"
    if any(pair.gained.values()):
        return "GAINED"
    return "CHANGED" if pair.changed else "SAME"


def headline(comparison) -> str:
    old_only = len(comparison.groups_old_only if comparison.fleet else comparison.unmatched_old)
    new_only = len(comparison.groups_new_only if comparison.fleet else comparison.unmatched_new)
    text = f"{comparison.counted(len(comparison.items))} matched"
    if not comparison.fleet:
        by = {}
        for pair in comparison.pairs:
            by[pair.matched_by] = by.get(pair.matched_by, 0) + 1
        if by:
            text += " (" + ", ".join(f"{n} by {basis}" for basis, n in sorted(by.items())) + ")"
    return text + f"; {old_only} only in the old run, {new_only} only in the new"


def versions_line(comparison) -> Optional[str]:
    old, new = comparison.old.spark_versions, comparison.new.spark_versions
    if old and new and tuple(old) != tuple(new):
        return f"Spark {', '.join(old)} -> {', '.join(new)}"
    return None


def rate_text(rate: Optional[float]) -> str:
    return "-" if rate is None else f"{100 * rate:.0f}%"


def margin_lines(pair) -> List[str]:
    """Each size decision whose margin shrank between the runs: `margin shrank: smj-to-bhj
    spark.sql.adaptive.autoBroadcastJoinThreshold 85% under -> 4.8% under (...)`."""
    from ...whynot.margins import show_percent

    return [f"margin shrank: {new.kind} {new.config} {show_percent(old.percent)} {old.side} "
            f"-> {show_percent(new.percent)} {new.side} ({new.text})"
            for old, new in pair.margins_shrank]


def why_not_lines(pair) -> List[str]:
    """The why-not of each rewrite the new run lost, a line per reason."""
    return [f"why not {kind}: {reason}" for kind, reasons in pair.new.why_not
            if pair.lost.get(kind) for reason in reasons]
