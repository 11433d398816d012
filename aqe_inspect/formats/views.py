"""What the terminal and the HTML page show of a diff, before either draws it.

- `side_by_side_rows(pair)`: one adaptive plan's initial and final trees as rows that line up.
  Each `Row` holds an operator of the initial tree, one of the final tree, or both, each with
  its depth, and the rewrite kinds marked on either side. Read down one side, the rows give
  that tree in printed order (depth first), so either side draws as a tree on its own.
- `node_label(node)`: an operator's heading, each word once (Spark 4 prints `coalesced` both on
  the tree line and in `Arguments`, `(skew=true)` in the heading and the arguments).
- `node_facts(node)`: what ran, apart from the label: runtime statistics, partition counts
  before and after a shuffle read, the SQL metrics an event log recorded.
- `finding_line(rewrite)`: one line per rewrite, with its numbers.
- `marks(query_report)`: the rewrite kinds on each operator, final and initial side.
- `skew_lines(evidence)`: a skew decision's partition sizes, a line a side (`why`, `diff`, HTML).

Nothing here walks a tree recursively: trees 5,000 levels deep are fine.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, Iterable, List, Mapping, Optional, Tuple

from ..rewrites.detectors.base import PlanPair, exchange_below
from ..plan.model import Node, Query
from ..plan.units import UNKNOWN_SIZE_WORDS, is_unknown_size
from ..plan.operators import family, is_query_stage, is_shuffle_read, node_summary, partition_count, \
    shuffle_read_modes
from ..rewrites.findings import REWRITE_KINDS, QueryReport, Rewrite, describe

if TYPE_CHECKING:
    from ..whynot.evidence import SkewEvidence
    from ..whynot.verdicts import Margin

__all__ = ["Marks", "Row", "finding_line", "marks", "node_facts", "node_label", "node_summary",
           "plan_kind", "rewrite_marks", "side_by_side_rows", "skewed_reads"]

#: Arguments longer than this are cut with `...` in a label.
SUMMARY_WIDTH = 160


def plan_kind(query: Query) -> str:
    """What a header calls a query's plan: `adaptive`, `static`, or, read from a codegen-mode
    explain (which prints the plan's WholeStageCodegen subtrees, never its AdaptiveSparkPlan
    root), `WholeStageCodegen subtrees only`."""
    if query.adaptive:
        return "adaptive"
    return "WholeStageCodegen subtrees only" if query.mode == "codegen" else "static"


def where_read(query: Query, source: str) -> str:
    """Where a query's plan is in the input, as a header says it: `plan.txt:12` (the line of
    the file where the plan begins: a plan text, a driver log), `eventlog.json:36 (the event
    of its plan)` (an event log's plans are strings inside JSON events: the line of the event
    whose plan was read, in the part that holds it), `sql.json:26 (where its JSON begins)`
    (the History Server's answer), the file alone where no line of it is known."""
    if not query.line:
        return source
    if query.line_is:
        part = query.execution.part if query.execution is not None else ""
        return f"{part or source}:{query.line} ({query.line_is})"
    return f"{source}:{query.line}"


# ---- marks ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Marks:
    """Rewrite kinds by operator (keyed by `id(node)`), on the final and the initial side, each
    kind once per operator in report order."""

    final: Mapping[int, Tuple[str, ...]] = field(default_factory=dict)
    initial: Mapping[int, Tuple[str, ...]] = field(default_factory=dict)

    def on_final(self, node: Optional[Node]) -> Tuple[str, ...]:
        return self.final.get(id(node), ()) if node is not None else ()

    def on_initial(self, node: Optional[Node]) -> Tuple[str, ...]:
        return self.initial.get(id(node), ()) if node is not None else ()


def rewrite_marks(rewrites: Iterable[Rewrite]) -> Marks:
    """The marks of these rewrites: each on its final node and its initial node; a skew join's
    kind also on the skewed reads below it (a "coalesced and skewed" read carries both)."""
    final: Dict[int, List[str]] = {}
    initial: Dict[int, List[str]] = {}

    def put(where: Dict[int, List[str]], node: Optional[Node], kind: str) -> None:
        if node is not None:
            kinds = where.setdefault(id(node), [])
            if kind not in kinds:
                kinds.append(kind)

    for rewrite in rewrites:
        put(final, rewrite.final_node, rewrite.kind)
        put(initial, rewrite.initial_node, rewrite.kind)
        if rewrite.kind == "skew-join" and rewrite.final_node is not None:
            for read in skewed_reads(rewrite.final_node):
                put(final, read, rewrite.kind)
    order = {kind: number for number, kind in enumerate(REWRITE_KINDS)}

    def frozen(where: Dict[int, List[str]]) -> Dict[int, Tuple[str, ...]]:
        return {key: tuple(sorted(kinds, key=lambda k: order.get(k, len(order))))
                for key, kinds in where.items()}

    return Marks(final=frozen(final), initial=frozen(initial))


def marks(query_report: QueryReport) -> Marks:
    """The rewrite kinds on each operator of one query, both sides."""
    return rewrite_marks(query_report.rewrites)


def skewed_reads(join: Node) -> List[Node]:
    """The shuffle reads below a skew join that split skewed partitions (as the skew-join
    detector finds them)."""
    return [below for below in join.walk(inner=False)
            if is_shuffle_read(below) and "skewed" in shuffle_read_modes(below)]


# ---- side by side ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    """One line of a side-by-side view. `aligned` is True when both sides are the same
    operator (paired by operator id, structure or join keys); False when a side is empty, or
    when an operator only the initial plan had stands beside one only the final plan has."""

    initial: Optional[Node]
    initial_depth: Optional[int]
    final: Optional[Node]
    final_depth: Optional[int]
    initial_marks: Tuple[str, ...] = ()
    final_marks: Tuple[str, ...] = ()
    aligned: bool = False


def _preorder(root: Optional[Node]) -> List[Tuple[Node, int]]:
    """The operators of one plan in printed order with their depth: children only (inner
    plans and nested adaptive plans are views of their own)."""
    if root is None:
        return []
    out: List[Tuple[Node, int]] = []
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        out.append((node, depth))
        if node is not root and node.is_adaptive_root:
            continue
        stack.extend((child, depth + 1) for child in reversed(node.children))
    return out


def _increasing(pairs: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """The longest run of (final index, initial index) pairs, in final order, whose initial
    indexes increase too: the matches both trees can show on the same rows."""
    tails: List[int] = []  # initial index ending the best run of each length
    tail_at: List[int] = []  # which pair ends it
    before: List[int] = [-1] * len(pairs)
    for number, (_, initial) in enumerate(pairs):
        length = bisect.bisect_left(tails, initial)
        if length == len(tails):
            tails.append(initial)
            tail_at.append(number)
        else:
            tails[length] = initial
            tail_at[length] = number
        before[number] = tail_at[length - 1] if length else -1
    kept: List[Tuple[int, int]] = []
    at = tail_at[-1] if tail_at else -1
    while at >= 0:
        kept.append(pairs[at])
        at = before[at]
    kept.reverse()
    return kept


def side_by_side_rows(pair: PlanPair, rewrites: Optional[Iterable[Rewrite]] = None,
                      marked: Optional[Marks] = None) -> List[Row]:
    """The initial and final trees of `pair` as aligned rows, in the final tree's printed
    order. Query stages and shuffle reads (which only the final plan has) are final-only rows;
    an operator only the initial plan had (the Sort and Exchange a broadcast switch removed)
    stands beside the final-only operators between the same two aligned rows, or on a row
    of its own after the aligned row before it.

    Marks come from `marked`, else from `rewrites`, else from running the detectors on `pair`.
    """
    if marked is None:
        if rewrites is None:
            from ..rewrites.detectors import DETECTORS

            rewrites = [r for detector in DETECTORS for r in detector.detect(pair)]
        marked = rewrite_marks(rewrites)
    finals = _preorder(pair.final)
    initials = _preorder(pair.initial)
    initial_index = {id(node): number for number, (node, _) in enumerate(initials)}
    # A switched join pairs with the sort-merge join it was (by keys), before any structure.
    joins = {id(final): initial for initial, final in pair.sort_merge_joins} \
        if pair.initial is not None else {}
    taken = set()
    matches: List[Tuple[int, int]] = []
    if initials:
        for number, (node, _) in enumerate(finals):
            if is_query_stage(node) or is_shuffle_read(node):
                continue
            counterpart = joins.get(id(node)) or pair.initial_for(node)
            if counterpart is None or id(counterpart) in taken or \
                    id(counterpart) not in initial_index:
                continue
            taken.add(id(counterpart))
            matches.append((number, initial_index[id(counterpart)]))
    kept = _increasing(matches)

    rows: List[Row] = []

    def row(initial: Optional[Tuple[Node, int]], final: Optional[Tuple[Node, int]],
            aligned: bool = False) -> Row:
        return Row(initial=initial[0] if initial else None,
                   initial_depth=initial[1] if initial else None,
                   final=final[0] if final else None,
                   final_depth=final[1] if final else None,
                   initial_marks=marked.on_initial(initial[0]) if initial else (),
                   final_marks=marked.on_final(final[0]) if final else (),
                   aligned=aligned)

    def gap(final_from: int, final_to: int, initial_from: int, initial_to: int) -> None:
        only_final = finals[final_from:final_to]
        only_initial = initials[initial_from:initial_to]
        for number in range(max(len(only_final), len(only_initial))):
            rows.append(row(only_initial[number] if number < len(only_initial) else None,
                            only_final[number] if number < len(only_final) else None))

    final_at = initial_at = 0
    for final_number, initial_number in kept:
        gap(final_at, final_number, initial_at, initial_number)
        rows.append(row(initials[initial_number], finals[final_number], aligned=True))
        final_at, initial_at = final_number + 1, initial_number + 1
    gap(final_at, len(finals), initial_at, len(initials))
    return rows


# ---- labels and facts -----------------------------------------------------------------------

def node_label(node: Node, summary_width: int = SUMMARY_WIDTH) -> str:
    """`AQEShuffleRead (20) coalesced`, `SortMergeJoin(skew=true) (14) Inner`: the heading,
    the operator id, then its arguments, each word once. Statistics and metrics are not in
    it (see `node_facts`)."""
    title = node.title or node.name
    label = title if node.id is None else f"{title} ({node.id})"
    summary = node_summary(node)
    if len(summary) > summary_width:
        summary = shortened(summary, summary_width)
    return f"{label} {summary}" if summary else label


def shortened(text: str, width: int) -> str:
    """`text` cut to about `width` characters at a space, `...` after: no word is cut in two
    (a first word longer than `width` is kept whole)."""
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, max(1, width - 3) + 1)
    if cut <= 0:
        cut = text.find(" ")
        if cut < 0:
            return text
    return text[:cut].rstrip(" ") + " ..."


_STAT = re.compile(r"(\w+)=([^,()]+(?:\([^()]*\))?)")


#: What a query stage's printed `Statistics(...)` are, said after their figures: at run time
#: its exchange's `data size` (rows uncompressed) and rows written, AQE's re-planning input.
STATISTICS_WORDS = "stage statistics"


def short_statistics(statistics: str) -> str:
    """`sizeInBytes=168.0 B, rowCount=7` -> `data size 168.0 B, 7 rows`; other fields as
    printed. Spark's size for "no estimate" (Long.MaxValue bytes, `8.0 EiB`) is said to be
    unknown."""
    parts = []
    for name, value in _STAT.findall(statistics):
        value = value.strip()
        if name == "sizeInBytes":
            parts.append("data size " + (UNKNOWN_SIZE_WORDS if is_unknown_size(value)
                                         else value))
        elif name == "rowCount":
            parts.append(f"{value} rows")
        else:
            parts.append(f"{name}={value}")
    return ", ".join(parts) if parts else statistics


def statistics_text(statistics: str) -> str:
    """The inside of a printed `Statistics(...)` as printed, but for a `sizeInBytes` that is
    Spark's "no estimate" (`8.0 EiB`), said to be unknown."""
    match = _SIZE_FIELD.search(statistics)
    if match is None or not is_unknown_size(match.group(2)):
        return statistics
    return statistics[:match.start(2)] + UNKNOWN_SIZE_WORDS + statistics[match.end(2):]


_SIZE_FIELD = re.compile(r"(\bsizeInBytes=)([^,()]+)")


def size_text(count: int) -> str:
    """Bytes as people read them: `512 B`, `7.4 KiB`, `3.0 GiB`."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"  # pragma: no cover - the loop returns


#: Metrics already said by a fact of their own, or not worth a line.
_FOLDED = {"number of partitions", "number of skewed partitions",
           "number of skewed partition splits", "partition data size"}


def node_facts(node: Node) -> List[Tuple[str, str]]:
    """What ran, as (name, value) pairs in a stable order: `stage statistics` (a query stage's
    run-time data size and rows), `partitions` (`20 -> 4` for a shuffle read whose counts are
    known, the count of an exchange), `shuffle bytes` (what a shuffle read reads: its
    `partition data size` metric), `skewed` (`1 split into 2`), then the other metrics an event
    log recorded, by the Spark UI's names (byte counts as sizes)."""
    facts: List[Tuple[str, str]] = []
    if node.statistics:
        facts.append((STATISTICS_WORDS, short_statistics(node.statistics)))
    metrics = node.metrics
    after = metrics.get("number of partitions")
    if is_shuffle_read(node):
        exchange = exchange_below(node)
        before = None
        if exchange is not None:
            before = exchange.metrics.get("number of partitions", partition_count(exchange))
        if before is not None and after is not None:
            facts.append(("partitions", f"{before} -> {after}"))
        elif after is not None:
            facts.append(("partitions", str(after)))
    else:
        if after is None and partition_count(node) is not None and family(node) == "Exchange":
            after = partition_count(node)
        if after is not None:
            facts.append(("partitions", str(after)))
    if "partition data size" in metrics:
        # Spark's name, though it is shuffle bytes (the map output statistics), not `data size`
        facts.append(("shuffle bytes", size_text(metrics["partition data size"])))
    if metrics.get("number of skewed partitions"):
        facts.append(("skewed", f"{metrics['number of skewed partitions']} split into "
                                f"{metrics.get('number of skewed partition splits', '?')}"))
    for name, value in metrics.items():
        if name not in _FOLDED:
            facts.append((name, size_text(value) if "size" in name or "bytes" in name
                          else f"{value} ms" if name.startswith("time") else str(value)))
    return facts


# ---- findings -------------------------------------------------------------------------------

def finding_line(rewrite: Rewrite) -> str:
    """One line for one rewrite: its kind, where, and its numbers.

    `coalesced: AQEShuffleRead (20): 20 -> 7 partitions of Exchange (18) (was Exchange (30));
    stage 168.0 B, 7 rows`, `smj-to-bhj: SortMergeJoin (27) -> BroadcastHashJoin (15):
    BuildRight; Inner; keys [k#84L] = [k#90L]`.
    """
    numbers = rewrite.numbers
    final, initial = describe(rewrite.final_node), describe(rewrite.initial_node)
    where = final or initial or "-"
    details: List[str] = []
    kind = rewrite.kind
    stats = numbers.get("statistics")
    if kind in ("coalesced", "local-read"):
        node = rewrite.final_node
        exchange = describe(exchange_below(node)) if node is not None else None
        source = exchange or "its shuffle"
        was = f" (was {initial})" if initial else ""
        before, after = numbers.get("partitions_before"), numbers.get("partitions_after")
        count = numbers.get("shuffle_partitions")
        if kind == "coalesced":
            if before is not None and after is not None:
                details.append(f"{before} -> {after} partitions of {source}{was}")
            elif count is not None:
                details.append(f"coalesces the {count} partitions of {source}{was}")
            else:
                details.append(f"coalesces the partitions of {source}{was}")
            if node is not None and "skewed" in shuffle_read_modes(node):
                details.append("skewed partitions split too")
        else:
            details.append(f"reads {source}{was} locally, no shuffle by key")
            if before is not None and after is not None:  # the read's own, run-time
                details.append(f"{before} -> {after} partitions")
            elif count is not None:  # the shuffle's alone: the read's are not in the plan
                details.append(f"{count} shuffle partitions")
    elif kind == "skew-join":
        if initial and initial != final:
            where = f"{where} (was {initial})"
        if "keys" in numbers:
            details.append(f"keys {numbers['keys']}")
        if "skewed_partitions" in numbers:
            details.append(f"{numbers['skewed_partitions']} skewed partition(s) split into "
                           f"{numbers.get('skewed_splits', '?')} tasks")
        reads = [describe(read) for read in skewed_reads(rewrite.final_node)] \
            if rewrite.final_node is not None else []
        details.append(f"skewed reads: {', '.join(reads)}" if reads
                       else f"{numbers.get('skewed_reads', 0)} skewed read(s)")
    elif kind in ("smj-to-bhj", "smj-to-shj"):
        where = f"{initial or '-'} -> {final or '-'}"
        for name in ("build_side", "join_type"):
            if name in numbers:
                details.append(str(numbers[name]))
        if "keys" in numbers:
            details.append(f"keys {numbers['keys']}")
    else:
        message = rewrite.message
        # The message starts with the operator's name; said once.
        named = final or initial
        if named and message.startswith(named):
            message = message[len(named):].lstrip(" ,:").strip()
        details.append(message)
    if stats:
        details.append(f"{short_statistics(str(stats))} ({STATISTICS_WORDS})")
    if rewrite.fired is not None:  # a driver log's plan-change log named the rule
        from ..rewrites.rules_fired import fired_words

        details.append(fired_words(rewrite.fired))
    return f"{kind}: {where}" + (f": {'; '.join(details)}" if details else "")


def rewrite_margins(report: QueryReport, version: Optional[str] = None
                    ) -> Tuple[Tuple["Margin", ...], ...]:
    """Each rewrite's margins, in the report's order (`whynot.rewrite_margins`, the ones `why`
    shows for the same rewrite); the whynot package is imported only for a query with a
    rewrite of a kind that holds a figure against a setting."""
    from ..rewrites.kinds import measured

    if not measured(report.rewrites):
        return tuple(() for _ in report.rewrites)
    from ..whynot import rewrite_margins as margins_of

    return margins_of(report, version or None)


def margin_lines(margins: Iterable["Margin"]) -> List[str]:
    """A rewrite's size decisions, each with its figure, threshold and margin (`why`'s
    `margin: ...` lines, `whynot.margins.margin_text`)."""
    from ..whynot.margins import margin_text

    return [f"margin: {margin_text(m)}" for m in margins]


def skew_lines(found: Iterable[SkewEvidence]) -> List[str]:
    """A skew decision's partition sizes, one line a side; sides that lack them for the same
    reason in one line."""
    evidence = tuple(found)
    lines: List[str] = []
    missing: Dict[str, List[str]] = {}
    for side in evidence:
        if side.figures is not None:
            lines.append(f"partition sizes of the {side.side}: {side.figures.show()}")
        else:
            missing.setdefault(side.missing, []).append(side.side)
    for text, sides in missing.items():
        lines.append(f"partition sizes of the {' and the '.join(sides)}: {text}")
    return lines
