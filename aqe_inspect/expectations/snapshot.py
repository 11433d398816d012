"""Plan snapshots: a query's final plan and AQE's rewrites, normalised so that the same query
run again (in a new session, with new ids) gives the same text, and a changed plan or a lost
rewrite gives a readable diff.

- `take(report)`: the snapshot of one `QueryReport`; `take_all(report)`: of a whole `Report`
  (one query: the same text as `take`; several: each in a `## query K of N` block, in order).
- `compare(expected, actual)`: None when equal, else a unified diff. Snapshots taken from
  plans printed in different explain modes are not compared: `SnapshotModeError` says so.
- `load(path)`: a snapshot file's text, or an `InspectError` naming the file and line.

A snapshot of one query reads::

    # aqe-inspect snapshot v1 | mode: formatted | plan: final | rewrites: coalesced=1, ...
    rewrite coalesced: AQEShuffleRead (2)
    rewrite smj-to-bhj: SortMergeJoin -> BroadcastHashJoin (7)
    final plan:
    *(1) HashAggregate (1) Keys: [_groupingexpression#1L]; Functions: [sum(w#2L)]
      AQEShuffleRead (2) coalesced
        ShuffleQueryStage (3)
          Exchange (4) hashpartitioning(_groupingexpression#1L, <n>), ENSURE_REQUIREMENTS, [plan_id=1]
    ...

What is compared (the structure): the operators of the final plan and their nesting (two spaces
a level; plans printed inside an operator, such as subquery expressions, follow it one level
deeper after `subquery:`), each operator's name, its whole-stage-codegen stage, its arguments
as the plan prints them (simple mode: the tree line; formatted mode: `Arguments`, the text
after the id, and the details that say what it does: keys, conditions, functions), the
formatted-mode subqueries, and AQE's rewrites (kind, final operator, and the sort-merge join a
join switch replaced). The explain mode and whether the plan is final are in the header.

What is renumbered, in order of first appearance in the snapshot (as Spark's own
PlanStabilitySuite does), so one run's ids match another's: expression ids (`k#152L` ->
`k#1L`, `dynamicpruning#265`), plan ids (`[plan_id=1024]`, `[id=#1585]`: a reused exchange
still names the exchange it reuses), whole-stage-codegen stages (`*(3)`, `[codegen id : 3]`,
`WholeStageCodegen (3)`), and operator ids (`(21)` -> the operator's place in the snapshot,
`Reuses operator id: N` likewise).

What is masked (it changes from run to run, or with the data, not with the plan's shape):
file locations (`Location: InMemoryFileIndex [<location>]`), URIs (`file:/...`, `s3a://...`)
and absolute paths (`<path>`), sizes (`sizeInBytes=<size>`, `1024.2 KiB` -> `<size>`), row
counts (`rowCount=<rows>`), partition counts (`hashpartitioning(k#1, <n>)`, `splits=<n>`),
query stage ids (`ShuffleQueryStage 3` -> `ShuffleQueryStage`: stages are numbered as they
are materialised, which may vary), and runtime statistics and SQL metrics (left out: `number
of partitions` and the like say what ran, not the plan).

Nothing here recurses over a plan tree: a 5,000-level tree snapshots in linear time.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Tuple

from ..errors import InspectError, printable
from ..plan.model import Node, Query
from ..rewrites.findings import REWRITE_KINDS, QueryReport, Report, Rewrite
from ..plan.operators import node_summary

if TYPE_CHECKING:  # pragma: no cover
    from .check import Outcome

__all__ = ["FORMAT_VERSION", "HEADER_PREFIX", "SNAPSHOT_KIND", "SnapshotModeError", "compare",
           "load", "mode_of", "modes", "outcome", "take", "take_all"]

FORMAT_VERSION = 1
#: The kind of a `check --snapshot` outcome, beside the rewrite kinds of expectations.
SNAPSHOT_KIND = "snapshot"
HEADER_PREFIX = "# aqe-inspect snapshot v"
_HEADER = re.compile(r"^# aqe-inspect snapshot v(?P<version>\d+) \| mode: (?P<mode>[\w-]+) "
                     r"\| plan: (?P<plan>[^|]+) \| rewrites: (?P<rewrites>.*)$")
_QUERY_LINE = re.compile(r"^## query (\d+) of (\d+)$")
_PLAN_MARK = "final plan:"
INDENT = "  "

#: Formatted-mode details that say what an operator does (its `Arguments` are in the
#: summary); the others (`Input`, `Output`, `Results`, ...) repeat column lists.
STRUCTURAL_DETAILS = ("Keys", "Left keys", "Right keys", "Join condition", "Condition",
                      "Functions", "Partition Spec", "Order By")
#: Operators whose column list is what they do (a projection's expressions).
OUTPUT_IS_STRUCTURE = ("Project",)


class SnapshotModeError(InspectError):
    """A snapshot and a plan printed in different explain modes: their texts differ
    everywhere, so they are not compared."""


# ---- normalisation -------------------------------------------------------------------------

_EXPRESSION_ID = re.compile(r"(?<!id=)#(\d+)")
_PLAN_ID = re.compile(r"(plan_id=|id=#)(\d+)")
_CODEGEN = re.compile(r"(\[codegen id : |WholeStageCodegen \(|\*\()(\d+)([)\]])")
_REUSES = re.compile(r"(Reuses operator id: )(\d+)")
_LOCATION = re.compile(r"(Location: [\w$.]+)(?:\(\d+ paths?\))?\s*\[[^\]]*\]")
_URI = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*:/{1,3}[^\s,\[\]()]*")
_ABSOLUTE_PATH = re.compile(r"(?<![\w.)\]>])/(?:[^\s/,\[\]()]+/)+[^\s/,\[\]()]*")
_STATISTICS = re.compile(r"Statistics\([^()]*\)")
_SIZE_FIELD = re.compile(r"\bsizeInBytes=[^,()\]]+")
_ROW_COUNT = re.compile(r"\browCount=[^,()\]]+")
_SIZE = re.compile(r"\b\d+(?:\.\d+)?(?:E[+-]?\d+)? ?(?:B|KiB|MiB|GiB|TiB|PiB|EiB)\b")
_SPLITS = re.compile(r"\bsplits=(?:Some\(\d+\)|\d+|None)")
_PARTITIONING = re.compile(r"(?i)partitioning\(")
_TRAILING_COUNT = re.compile(r"(^|, ?)\d+$")


def _masked_partition_counts(text: str) -> str:
    """`hashpartitioning(k#1, 200)` -> `hashpartitioning(k#1, <n>)`, and
    `RoundRobinPartitioning(8)` -> `RoundRobinPartitioning(<n>)`: the count after the last
    comma at the call's own depth, found by counting brackets (no regex over nested text)."""
    pieces: List[str] = []
    at = 0
    for match in _PARTITIONING.finditer(text):
        start = match.end()
        if start < at:
            continue
        depth, end = 1, start
        while end < len(text) and depth:
            char = text[end]
            depth += char in "([{"
            depth -= char in ")]}"
            end += 1
        if depth:
            break  # cut short: left as it is
        inner = text[start:end - 1]
        last = _TRAILING_COUNT.search(inner)
        if last is not None and _balanced_tail(inner, last.start()):
            pieces.append(text[at:start] + inner[:last.start()] + last.group(1) + "<n>)")
            at = end
    pieces.append(text[at:])
    return "".join(pieces)


def _balanced_tail(text: str, at: int) -> bool:
    """Whether position `at` of `text` lies outside every bracket (the call's own argument)."""
    depth = 0
    for char in text[:at]:
        depth += char in "([{"
        depth -= char in ")]}"
    return depth == 0


def mask(text: str) -> str:
    """`text` with what changes from run to run, rather than with the plan, masked: locations,
    paths, sizes, row counts, partition counts (see the module docstring)."""
    text = _LOCATION.sub(r"\1 [<location>]", text)
    text = _URI.sub("<path>", text)
    text = _ABSOLUTE_PATH.sub("<path>", text)
    text = _STATISTICS.sub("Statistics(<masked>)", text)
    text = _SIZE_FIELD.sub("sizeInBytes=<size>", text)
    text = _ROW_COUNT.sub("rowCount=<rows>", text)
    text = _SIZE.sub("<size>", text)
    text = _SPLITS.sub("splits=<n>", text)
    if "artitioning(" in text:
        text = _masked_partition_counts(text)
    return text


class _Numbering:
    """Ids renumbered in order of first appearance: one numbering per kind of id."""

    def __init__(self) -> None:
        self.expressions: Dict[str, int] = {}
        self.plans: Dict[str, int] = {}
        self.codegen: Dict[str, int] = {}

    @staticmethod
    def _number(seen: Dict[str, int], key: str) -> int:
        return seen.setdefault(key, len(seen) + 1)

    def codegen_stage(self, stage: int) -> int:
        return self._number(self.codegen, str(stage))

    def __call__(self, text: str) -> str:
        if "#" in text:
            text = _PLAN_ID.sub(lambda m: f"{m.group(1)}{self._number(self.plans, m.group(2))}",
                                text)
            text = _EXPRESSION_ID.sub(
                lambda m: f"#{self._number(self.expressions, m.group(1))}", text)
        elif "plan_id=" in text:
            text = _PLAN_ID.sub(lambda m: f"{m.group(1)}{self._number(self.plans, m.group(2))}",
                                text)
        if "codegen" in text.lower() or "*(" in text:
            text = _CODEGEN.sub(
                lambda m: f"{m.group(1)}{self.codegen_stage(int(m.group(2)))}{m.group(3)}",
                text)
        return text


# ---- the plan as lines ----------------------------------------------------------------------

def _is_query_stage(node: Node) -> bool:
    return node.name.endswith("QueryStage")


def _arguments(node: Node, mode: str) -> str:
    """What a line says of an operator after its name and id, before normalisation."""
    title = node.title or node.name
    heading = title[len(node.name):].strip() if title.startswith(node.name) else title
    summary = node_summary(node)
    if _is_query_stage(node) and summary.isdigit():
        summary = ""  # the stage id: numbered as stages materialise
    parts = [part for part in (heading, summary) if part]
    text = " ".join(parts)
    if mode == "formatted" and node.details:
        names = STRUCTURAL_DETAILS
        if node.name in OUTPUT_IS_STRUCTURE:
            names = ("Output", *names)
        chosen = [f"{name}: {node.details[name]}" for name in names if name in node.details]
        if chosen:
            text = "; ".join(([text] if text else []) + chosen)
    return text


def _tree_order(roots: Iterable[Tuple[Node, int, str]]) -> List[Tuple[Node, int, str]]:
    """(node, depth, lead) in written order: each operator, then the plans printed inside it
    (`subquery:` lead), then its children; nested adaptive plans by their current tree."""
    out: List[Tuple[Node, int, str]] = []
    stack = list(reversed(list(roots)))
    while stack:
        node, depth, lead = stack.pop()
        out.append((node, depth, lead))
        stack.extend((child, depth + 1, "") for child in reversed(node.children))
        stack.extend((inner, depth + 1, "subquery: ") for inner in reversed(node.inner))
    return out


class _Writer:
    """One query's snapshot lines, renumbered as they are written."""

    def __init__(self, report: QueryReport):
        self.report = report
        self.query: Query = report.query
        self.numbering = _Numbering()
        self.positions: Dict[int, int] = {}  # id(node) -> its place among written operators
        self.by_operator_id: Dict[int, int] = {}  # Spark's operator id -> that place

    def lines(self) -> List[str]:
        query = self.query
        order = _tree_order([(query.final, 0, "")])
        subqueries = [(subquery, _tree_order([(subquery.tree, 1, "")])
                       if subquery.tree is not None else [])
                      for subquery in query.subqueries]
        for node, _, _ in [*order, *(item for _, items in subqueries for item in items)]:
            if id(node) not in self.positions:
                self.positions[id(node)] = len(self.positions) + 1
                if node.id is not None:
                    self.by_operator_id.setdefault(node.id, self.positions[id(node)])
        body = [self._node_line(node, depth, lead) for node, depth, lead in order]
        for subquery, items in subqueries:
            host = self.by_operator_id.get(subquery.hosting_operator_id or -1)
            where = f" in ({host})" if host is not None else ""
            reused = "" if subquery.tree is not None else " (reused)"
            body.append(self._normalised(f"subquery {subquery.index}{where}: "
                                         f"{subquery.hosting_expression}{reused}"))
            body.extend(self._node_line(node, depth, lead) for node, depth, lead in items)
        rewrites = [self._rewrite_line(rewrite) for rewrite in self._ordered_rewrites()]
        return [self._header(), *rewrites, _PLAN_MARK, *body]

    def _header(self) -> str:
        counts = self.report.counts
        said = [f"{kind}={counts[kind]}" for kind in REWRITE_KINDS if counts.get(kind)]
        said.extend(f"{kind}={count}" for kind, count in counts.items()
                    if kind not in REWRITE_KINDS and count)
        flag = self.query.is_final_plan
        plan = ("WholeStageCodegen subtrees only" if flag is None and self.query.mode == "codegen"
                else "static (not adaptive)" if flag is None else "final" if flag
                else "not final (isFinalPlan=false)")
        return (f"{HEADER_PREFIX}{FORMAT_VERSION} | mode: {self.query.mode} | plan: {plan} "
                f"| rewrites: {', '.join(said) or 'none'}")

    def _ordered_rewrites(self) -> List[Rewrite]:
        order = {kind: number for number, kind in enumerate(REWRITE_KINDS)}
        unplaced = len(self.positions) + 1
        return sorted(self.report.rewrites, key=lambda r: (
            order.get(r.kind, len(order)), self._place(r.final_node) or unplaced, r.kind))

    def _place(self, node: Optional[Node]) -> Optional[int]:
        return self.positions.get(id(node)) if node is not None else None

    def _named(self, node: Optional[Node]) -> str:
        if node is None:
            return "-"
        place = self._place(node)
        return f"{node.name} ({place})" if place is not None else node.name

    def _rewrite_line(self, rewrite: Rewrite) -> str:
        final = self._named(rewrite.final_node)
        if rewrite.kind in ("smj-to-bhj", "smj-to-shj"):
            initial = rewrite.initial_node.name if rewrite.initial_node is not None else "-"
            final = f"{initial} -> {final}"
        return f"rewrite {rewrite.kind}: {final}"

    def _node_line(self, node: Node, depth: int, lead: str) -> str:
        stage = ""
        if node.codegen_stage is not None:
            stage = f"*({self.numbering.codegen_stage(node.codegen_stage)}) "
        place = self.positions[id(node)]
        arguments = _arguments(node, self.query.mode)
        if "Reuses operator id" in arguments:
            arguments = _REUSES.sub(
                lambda m: f"{m.group(1)}{self.by_operator_id.get(int(m.group(2)), '?')}",
                arguments)
        text = f"{stage}{node.name} ({place})" + (f" {arguments}" if arguments else "")
        return INDENT * depth + lead + self._normalised(text, stage_done=bool(stage))

    def _normalised(self, text: str, stage_done: bool = False) -> str:
        if stage_done:  # the leading `*(N)` is numbered already
            head, _, rest = text.partition(") ")
            return f"{head}) {self.numbering(mask(rest))}"
        return self.numbering(mask(text))


# ---- the front door -------------------------------------------------------------------------

def take(report: QueryReport) -> str:
    """The snapshot of one query: its header (format version, explain mode, whether the plan
    is final, rewrite counts), its rewrites, its final plan, normalised; ends with a newline.
    Each line is escaped by `errors.printable` (what a plan holds may be anything): no control
    or bidirectional character is written raw, an operator's text holding a newline stays one
    line (`\\n`), and the same plan gives the same text, which is what a snapshot file holds
    and what `check --snapshot` compares."""
    return "\n".join(printable(line) for line in _Writer(report).lines()) + "\n"


def take_all(report: Report) -> str:
    """The snapshot of every query of a report: one query's is `take`'s; several are written
    in input order, each after a `## query K of N` line (ids are not written: an event log's
    execution ids change from run to run, their order does not)."""
    queries = tuple(report.queries)
    if len(queries) == 1:
        return take(queries[0])
    if not queries:
        raise InspectError("nothing to snapshot: the input holds no query",
                           source=report.source)
    blocks = [f"## query {number} of {len(queries)}\n{take(query)}"
              for number, query in enumerate(queries, 1)]
    return "\n".join(blocks)


def modes(snapshot: str) -> List[str]:
    """The explain mode of each query block of a snapshot text, in order."""
    return [match.group("mode") for match in map(_HEADER.match, snapshot.splitlines())
            if match is not None]


def compare(expected: str, actual: str, expected_name: str = "snapshot",
            actual_name: str = "plan") -> Optional[str]:
    """None when the two snapshots are the same, else a unified diff (`expected_name` the
    old side). Raises `SnapshotModeError` when they come from different explain modes."""
    if expected == actual:
        return None
    expected_modes, actual_modes = modes(expected), modes(actual)
    if expected_modes and actual_modes and set(expected_modes) != set(actual_modes):
        raise SnapshotModeError(
            f"{expected_name} was taken from a {'/'.join(sorted(set(expected_modes)))}-mode "
            f"plan and {actual_name} is a {'/'.join(sorted(set(actual_modes)))}-mode plan: "
            "their texts differ throughout; snapshot and check plans printed in the same "
            "explain mode", source=expected_name)
    # The names head the diff, a line each: a newline in a file's name cannot add a line.
    lines = difflib.unified_diff(_lines(expected), _lines(actual), printable(expected_name),
                                 printable(actual_name), lineterm="", n=3)
    return "\n".join(lines) + "\n"


def _lines(text: str) -> List[str]:
    """The lines of a snapshot text, split at newlines only (as `load` checks them: a U+0085
    or U+2028 that a snapshot file holds raw stays in its line, and is shown escaped)."""
    return (text[:-1] if text.endswith("\n") else text).split("\n")


def load(path: str) -> str:
    """The text of the snapshot file at `path`, checked: a missing, unreadable, empty, binary
    or foreign file raises InspectError naming the file and the line."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise InspectError("snapshot file not found (take one with `aqe-inspect snapshot "
                           "PLAN -o FILE`)", source=path) from None
    except IsADirectoryError:
        raise InspectError("the snapshot is a directory, not a file", source=path) from None
    except OSError as error:
        raise InspectError(f"cannot read the snapshot: {error.strerror or error}",
                           source=path) from None
    return parse_snapshot(data, path)


def parse_snapshot(data: bytes, source: str) -> str:
    """`data` as a snapshot text, or InspectError at the first line that is not one."""
    if b"\0" in data:
        raise InspectError("not a snapshot: binary data (a NUL byte)", source=source,
                           line=data.count(b"\n", 0, data.index(b"\0")) + 1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InspectError("not a snapshot: not UTF-8 text", source=source,
                           line=data.count(b"\n", 0, error.start) + 1) from None
    text = text.replace("\r\n", "\n")
    if not text.strip():
        raise InspectError("empty snapshot file (take one with `aqe-inspect snapshot PLAN -o "
                           "FILE`)", source=source, line=1)
    _check_structure(text.split("\n"), source)
    return text


def _check_structure(lines: List[str], source: str) -> None:
    """Every query block starts with a header this version writes and holds a plan."""
    def fail(number: int, message: str) -> None:
        raise InspectError(message, source=source, line=number)

    def header(number: int) -> None:
        line = lines[number - 1] if number <= len(lines) else ""
        match = _HEADER.match(line)
        if match is None:
            if line.startswith(HEADER_PREFIX):
                version = line[len(HEADER_PREFIX):].split(" ", 1)[0]
                if version.isdigit() and int(version) > FORMAT_VERSION:
                    fail(number, f"snapshot format v{version} is newer than this aqe-inspect "
                                 f"reads (v{FORMAT_VERSION}): upgrade aqe-inspect")
            fail(number, f"not an aqe-inspect snapshot: expected a header "
                         f"'{HEADER_PREFIX}{FORMAT_VERSION} | mode: ...'")
        version = int(match.group("version"))
        if version > FORMAT_VERSION:
            fail(number, f"snapshot format v{version} is newer than this aqe-inspect reads "
                         f"(v{FORMAT_VERSION}): upgrade aqe-inspect")
        if version != FORMAT_VERSION:
            fail(number, f"snapshot format v{version} is not one this aqe-inspect reads "
                         f"(v{FORMAT_VERSION})")

    blocks = [number for number, line in enumerate(lines, 1) if _QUERY_LINE.match(line)]
    if not blocks:
        header(1)
        starts = [1]
    else:
        if blocks[0] != 1:
            fail(1, "not an aqe-inspect snapshot: expected '## query 1 of N' or a header "
                    f"'{HEADER_PREFIX}{FORMAT_VERSION} | ...'")
        total = int(_QUERY_LINE.match(lines[0]).group(2))
        for count, number in enumerate(blocks, 1):
            found = _QUERY_LINE.match(lines[number - 1])
            if int(found.group(1)) != count or int(found.group(2)) != total:
                fail(number, f"expected '## query {count} of {total}'")
            header(number + 1)
        if len(blocks) != total:
            fail(len(lines), f"the snapshot names {total} queries but holds {len(blocks)}")
        starts = [number + 1 for number in blocks]
    ends = [*(number - 1 for number in starts[1:]), len(lines)]
    for start, end in zip(starts, ends):
        if _PLAN_MARK not in lines[start - 1:end]:
            fail(end, f"the query block from line {start} has no '{_PLAN_MARK}' section "
                      "(cut short?)")


def mode_of(report: Report) -> List[str]:
    """The explain mode of each query of a report, in order."""
    return [query_report.query.mode for query_report in report.queries]


def outcome(snapshot_path: str, report: Report, expected: str) -> "Outcome":
    """`check --snapshot`: the report's snapshot held against the snapshot file's text
    `expected`, as an outcome beside the expectations' (kind `snapshot`; the diff, when they
    differ, in `detail`). Raises `SnapshotModeError` for plans of another explain mode."""
    from .check import Outcome
    from .config import Expectation, Origin
    from ..rewrites.locations import Location

    actual = take_all(report)
    expected_modes, actual_modes = set(modes(expected)), set(mode_of(report))
    if expected_modes and actual_modes and expected_modes != actual_modes:
        raise SnapshotModeError(
            f"the snapshot was taken from a {'/'.join(sorted(expected_modes))}-mode plan and "
            f"{report.source or 'the input'} holds a {'/'.join(sorted(actual_modes))}-mode "
            "plan: check a plan printed in the snapshot's explain mode (or take the snapshot "
            "anew)", source=snapshot_path, line=1)
    found = compare(expected, actual, snapshot_path, report.source or "<stdin>")
    changed = 0 if found is None else sum(
        1 for line in _lines(found)[2:] if line[:1] in "+-")
    queries = tuple(query_report.id for query_report in report.queries)
    expectation = Expectation(SNAPSHOT_KIND, "==", 0, f"snapshot {snapshot_path}",
                              origin=Origin(snapshot_path))
    if found is None:
        message = "the final plan and the rewrites match"
    else:
        message = (f"the final plan or the rewrites differ from the snapshot: {changed} "
                   "line(s) changed (see the diff)")
    return Outcome(expectation, changed, found is None, message, len(queries), queries,
                   location=Location(report.source) if report.source else None,
                   detail=found or "")

