"""The plan model: what a Spark physical plan text says, in the project's own frozen types.

A `Document` is everything one text held: one or more `Query` objects (one per
`== Physical Plan ==`; a codegen-mode explain's subtrees are one). A `Query` holds the plan
tree as printed (`root`), and, for an adaptive plan, its final (or current) and initial trees.
Every operator is a `Node`; in formatted mode the tree line and the `(N) Name` detail block of
one operator are joined into one node.

Nothing here knows how the text was read: the sources (pasted text, driver logs, event logs)
fill the same types, and carry where a plan came from in `Query.source`, `Query.line`,
`Query.origin` and `Query.label`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import FrozenSet, Iterator, List, Mapping, Optional, Tuple

ADAPTIVE_ROOT = "AdaptiveSparkPlan"


#: Spark's ids and stage numbers are small. A longer run of digits is not a plan, and int() of
#: it is slow (quadratic before Python 3.11) or refused (over 4300 digits from 3.11).
MAX_DIGITS = 18

#: How a note on a query ends when operators of its printed plan may be missing (parsing's
#: `Damage.note`): its counts are lower bounds (`Query.incomplete`).
INCOMPLETE_TAIL = "; counts may be incomplete"


def units(count: int, unit: str) -> str:
    """`1 query`, `2 queries`, `1 execution`, `3 executions`."""
    return f"{count} {unit if count == 1 else plural(unit)}"


def plural(unit: str) -> str:
    """`queries` of `query`, `executions` of `execution`."""
    return "queries" if unit == "query" else f"{unit}s"


def ordinal(number: int) -> str:
    """`1st`, `2nd`, `3rd`, `11th`, `22nd`."""
    if 10 <= number % 100 <= 20:
        return f"{number}th"
    return f"{number}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(number % 10, 'th')}"


def number_of(query: "Query", index: int) -> int:
    """The number that names a plan (the glossary, docs/inputs.md): its SQL execution's id,
    else its place in the text it was read from (`Query.number`), else `index`, its place
    (from 1) in what holds it. One number for one plan, whichever queries were kept."""
    execution = query.execution
    if execution is not None:
        return execution.execution_id
    return query.number or index


def unit_name(query: "Query", number: object) -> str:
    """How every output names a plan (the glossary, docs/inputs.md): `execution 3` (Spark's
    SQL execution id) for one of an event log or the History Server, `query 2` (its position
    in the file, from 1) for one of a plan text or a driver log."""
    return f"{query.unit} {number}"


def title(query: "Query", number: object) -> str:
    """`unit_name` as a heading, saying what a query's number is: `Execution 3`, `Query 2 (2nd
    in the file)` (a number given by hand, as `diff BEFORE AFTER` does, is said as it is)."""
    name = unit_name(query, number)
    name = name[:1].upper() + name[1:]
    text = str(number)
    if query.unit == "query" and text.isdigit() and int(text) > 0:
        return f"{name} ({ordinal(int(text))} in the file)"
    return name


#: Why an execution `Query.cut_off` is no evidence in a log that ends before its application
#: does.
CUT_OFF = ("its execution had not ended where the log ends, and the log ends before its "
           "application does (no SparkListenerApplicationEnd): it was cut off while it ran")
#: The same of an execution the History Server's answer shows running (status RUNNING): its
#: plan is the one it had then, and its application had not ended (`Document.unended`).
STILL_RUNNING = ("its execution was still running when the History Server answered (status "
                 "RUNNING): its plan is the one it had then")

#: Why the counts of an input are lower bounds (`Document.unended`, a check's `unfinished`
#: outcome says it): an event log with no SparkListenerApplicationEnd ...
LOG_NOT_ENDED = ("the log ends before its application does (no SparkListenerApplicationEnd: "
                 "cut short, still being written, or its driver was killed): executions after "
                 "its end could not be read")
#: ... and a driver log whose last application did not stop.
DRIVER_LOG_NOT_ENDED = ("the driver log ends before its last application does (no 'Successfully "
                        "stopped SparkContext' after its 'Submitted application:': cut short, "
                        "still being written, or its driver was killed): queries run after its "
                        "end could not be read")

#: `Query.origin` of a plan read from a History Server's answer: its metrics are rounded for
#: display (`1.2 MiB`), so figures read from them are approximate.
HISTORY_SERVER_ORIGIN = "History Server"


@dataclass(frozen=True)
class Node:
    """One physical operator.

    `name` is the operator's first word as Spark prints it (`Exchange`, `AQEShuffleRead`,
    `Scan`, `PhotonShuffleExchangeSink`); `title` is the full heading of its formatted detail
    block (`Scan parquet spark_catalog.default.t`) or the name when there is none. `args` is
    the rest of the tree line: every argument in simple mode, the short form (`Inner BuildRight`)
    in formatted mode, where the long ones live in `details` (`Arguments`, `Keys`, ...).
    """

    name: str
    args: str = ""
    id: Optional[int] = None
    codegen_stage: Optional[int] = None
    whole_stage_codegen: bool = False
    title: str = ""
    details: Mapping[str, str] = field(default_factory=dict)
    children: Tuple["Node", ...] = ()
    #: Plans printed inside this operator rather than below it: subquery expressions in simple
    #: mode, the cached plan of an `InMemoryRelation`.
    inner: Tuple["Node", ...] = ()
    #: `Statistics(...)` that Spark prints after a query stage or a cost-mode operator.
    statistics: Optional[str] = None
    #: Text after the operator id, e.g. the `coalesced` of `AQEShuffleRead (16), coalesced`.
    description: Optional[str] = None
    #: For an `AdaptiveSparkPlan` operator: its initial plan (None when not printed apart).
    initial: Optional["Node"] = None
    #: For an `AdaptiveSparkPlan` operator: True after the query ran, False before.
    is_final_plan: Optional[bool] = None
    line: int = 0
    #: True where `line` is a line of a plan string inside the input (an event log's event,
    #: the History Server's JSON), not of the file: `describe` then says `plan line`.
    plan_line: bool = False
    #: SQL metrics Spark recorded for this operator at run time, by name as the Spark UI shows
    #: them (`number of partitions`, `number of coalesced partitions`, `partition data size`):
    #: counts, sizes in bytes, times in ms. Only event logs and History Server JSON carry them.
    metrics: Mapping[str, int] = field(default_factory=dict)
    #: How some of those metrics spread over tasks or partitions, by the same names: the
    #: `(min, med, max)` the Spark UI prints, and every value where the source holds them.
    spreads: Mapping[str, "Spread"] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """How a reader names this operator: `Exchange (4)`, or `Exchange` line 12 in simple mode."""
        return f"{self.name} ({self.id})" if self.id is not None else self.name

    @property
    def text(self) -> str:
        """Everything the plan says about the operator's arguments, tree line and details alike."""
        parts = [self.args, self.description or ""]
        parts.extend(self.details.values())
        return " ".join(p for p in parts if p)

    @property
    def is_adaptive_root(self) -> bool:
        return self.name == ADAPTIVE_ROOT

    def walked(self) -> List["Node"]:
        """`list(self.walk())`, made without a generator step per node (the diff asks it of
        every plan it reads)."""
        nodes: List["Node"] = []
        stack = [self]
        while stack:
            node = stack.pop()
            nodes.append(node)
            stack.extend(reversed(node.children))
            if node.inner:
                stack.extend(reversed(node.inner))
        return nodes

    def walk(self, *, inner: bool = True, initial: bool = False) -> Iterator["Node"]:
        """This node and every node below it, depth first, in printed order.

        `inner` takes in plans printed inside an operator (subquery expressions, cached plans);
        `initial` takes in the initial trees of adaptive plans as well as their current ones,
        each operator once: a plan printed as one tree is its own initial plan, and nested
        such plans would otherwise be walked exponentially often.
        """
        stack = [self]
        seen = set()
        while stack:
            node = stack.pop()
            if initial:
                if id(node) in seen:
                    continue
                seen.add(id(node))
            yield node
            # Pushed last to first: inner plans, then children, then the initial tree.
            if initial and node.initial is not None:
                stack.append(node.initial)
            stack.extend(reversed(node.children))
            if inner and node.inner:
                stack.extend(reversed(node.inner))


#: Node's fields in order; `parsed_node` sets each of them.
PARSED_NODE_FIELDS = ("name", "args", "id", "codegen_stage", "whole_stage_codegen", "title",
                      "details", "children", "inner", "statistics", "description", "initial",
                      "is_final_plan", "line", "plan_line", "metrics", "spreads")
_new_object = object.__new__
_set = object.__setattr__


def parsed_node(name: str, args: str, id: Optional[int], codegen_stage: Optional[int],
                whole_stage_codegen: bool, title: str, details: Mapping[str, str],
                children: Tuple[Node, ...], inner: Tuple[Node, ...], statistics: Optional[str],
                description: Optional[str], initial: Optional[Node],
                is_final_plan: Optional[bool], line: int) -> Node:
    """`Node(name=name, ..., line=line)` (the fields a plan text gives; metrics and spreads
    empty): what the dataclass's constructor does, each field set through
    object.__setattr__ in order, without its keyword binding (more than half of its time;
    the parser makes one a tree line). The fields are set one by one, never through the
    Node's __dict__: that would make every Node keep a dictionary of its own, half as large
    again. (tests/test_native_fields.py holds this equal to the constructor.)"""
    node = _new_object(Node)
    _set(node, "name", name)
    _set(node, "args", args)
    _set(node, "id", id)
    _set(node, "codegen_stage", codegen_stage)
    _set(node, "whole_stage_codegen", whole_stage_codegen)
    _set(node, "title", title)
    _set(node, "details", details)
    _set(node, "children", children)
    _set(node, "inner", inner)
    _set(node, "statistics", statistics)
    _set(node, "description", description)
    _set(node, "initial", initial)
    _set(node, "is_final_plan", is_final_plan)
    _set(node, "line", line)
    _set(node, "plan_line", False)
    _set(node, "metrics", {})
    _set(node, "spreads", {})
    return node


def moved_node(node: Node, line: int, children: Tuple[Node, ...], inner: Tuple[Node, ...],
               initial: Optional[Node]) -> Node:
    """`dataclasses.replace(node, line=line, children=children, inner=inner,
    initial=initial)`, every other field the very object `node` holds, set one by one in
    order as `parsed_node` sets them (parsing/repeats.py moves a plan printed again so; the
    parsing._node kernel has it compiled)."""
    made = _new_object(Node)
    _set(made, "name", node.name)
    _set(made, "args", node.args)
    _set(made, "id", node.id)
    _set(made, "codegen_stage", node.codegen_stage)
    _set(made, "whole_stage_codegen", node.whole_stage_codegen)
    _set(made, "title", node.title)
    _set(made, "details", node.details)
    _set(made, "children", children)
    _set(made, "inner", inner)
    _set(made, "statistics", node.statistics)
    _set(made, "description", node.description)
    _set(made, "initial", initial)
    _set(made, "is_final_plan", node.is_final_plan)
    _set(made, "line", line)
    _set(made, "plan_line", node.plan_line)
    _set(made, "metrics", node.metrics)
    _set(made, "spreads", node.spreads)
    return made


@dataclass(frozen=True)
class Spread:
    """How one SQL metric's values spread: over the tasks that updated it (task metrics such
    as an exchange's `local bytes read`) or over partitions (the driver's per-partition
    `partition data size` of an AQE shuffle read). Sizes in bytes.

    The History Server prints only `(min, med, max)`, over the tasks that reported a value
    (tasks with nothing to report leave none): `count` is None and `values` empty there.
    An event log holds every value: `values` in task-index or partition order, zeros
    included, and `count == len(values)`.
    """

    minimum: int
    median: int
    maximum: int
    count: Optional[int] = None
    values: Tuple[int, ...] = ()


@dataclass(frozen=True)
class Subquery:
    """An entry of formatted mode's `===== Subqueries =====` section.

    Spark prints a hosting line for every use of a subquery but the tree only once; a reused
    subquery has `tree` None.
    """

    index: int
    hosting_operator_id: Optional[int]
    hosting_expression: str
    tree: Optional[Node]
    line: int = 0


@dataclass(frozen=True)
class Query:
    """One physical plan: its tree as printed and, when adaptive, its two sides."""

    root: Node
    subqueries: Tuple[Subquery, ...] = ()
    #: Exchanges AQE removed, from `===== Adaptively Optimized Out Exchanges =====`.
    optimized_out: Tuple[Node, ...] = ()
    #: Shuffle reads a formatted text describes in its detail blocks but does not draw in its
    #: tree (an excerpt elided with `...`): AQE alone puts them in, so they ran in the final
    #: plan; each made from its block alone (no children), with the block's line.
    undrawn: Tuple[Node, ...] = ()
    #: `formatted`, `simple` (simple, extended and cost modes print the same physical tree) or
    #: `codegen` (the WholeStageCodegen subtrees of a codegen-mode explain, read as the one
    #: plan they come from: see parsing/codegen.py).
    mode: str = "simple"
    #: Logical plan sections of an extended or cost explain, by header, as printed.
    logical: Mapping[str, str] = field(default_factory=dict)
    source: str = ""
    label: str = ""
    line: int = 0
    #: What kind of text the plan was read from: `explain`, `driver log`, `AQE log`, ...
    origin: str = ""
    #: What the text did not say as Spark prints it (cut short, elided, damaged), each with
    #: its line in the original file; a report carries these notes on.
    notes: Tuple[str, ...] = ()
    #: The SQL execution this plan belongs to, when read from an event log or the History
    #: Server; `description` is the execution's description (the query's label there).
    execution: Optional["Execution"] = None
    #: The application the execution ran in, where one input holds several (a folder of
    #: event logs); None otherwise (a Document's `application` names the one application).
    application: Optional["Application"] = None
    #: What Spark's plan-change log (spark.sql.planChangeLog.level) said of this query's AQE
    #: run, when the text is a driver log holding it; None otherwise.
    plan_changes: Optional["PlanChanges"] = None
    #: Its place among the plans of the text it was read from, from 1: what names a plan
    #: that is no SQL execution (`query 2`), kept when a selection (`--query`) leaves the
    #: others out. 0 where no text numbered it (a Query made by hand): its place in what
    #: holds it names it then (`number_of`).
    number: int = 0
    #: Where a log places this query's run, by its lines (0: it does not): `ran_from`, its
    #: plan printed before the action (`isFinalPlan=false`: AQE's run of it comes later);
    #: `ended_by`, the first line that shows it had ended (AQE's `Final plan:` of it, its
    #: plan printed after the action). A plan-change message of AQE's run goes only to a
    #: query that may be running where it stands (sources/planchange.py).
    ran_from: int = 0
    ended_by: int = 0

    @property
    def adaptive(self) -> bool:
        return self.root.is_adaptive_root

    @property
    def unit(self) -> str:
        """What this plan is called (see the glossary, docs/inputs.md): `execution` for an
        SQL execution (an event log, the History Server: numbered by Spark's execution id, as
        the Spark UI names it), `query` for a plan of a text (explain output, a driver log:
        numbered by its position in the file, from 1)."""
        return "execution" if self.execution is not None else "query"

    @property
    def line_is(self) -> str:
        """What `line` is a line of, where it is not the plan's own first line in a text:
        `the event of its plan` (an event log: the line of the JSON event whose plan was read,
        in `Execution.part` where the log has several files), `where its JSON begins` (the
        History Server's answer), "" for a plan text."""
        if self.origin == HISTORY_SERVER_ORIGIN:
            return "where its JSON begins"
        return "the event of its plan" if self.execution is not None else ""

    @property
    def line_word(self) -> str:
        """What an operator's `line` is a line of: `line` where it is a line of the file read
        (a plan text, a driver log), `plan line` where the plan is a string inside the input
        (an event log's JSON event, the History Server's JSON): its line in that string."""
        return "plan line" if self.execution is not None else "line"

    @property
    def is_final_plan(self) -> Optional[bool]:
        return self.root.is_final_plan if self.adaptive else None

    @property
    def unfinished(self) -> str:
        """Why this plan may not be the one the query ended with ("" when nothing says so): AQE
        had not finished re-planning it (`isFinalPlan=false`: printed before the action, the
        last plan a cut or in-progress log holds). A verdict on it is no verdict on the query.
        An execution that had not ended but whose plan is final (its last stages still ran,
        or its end was not recorded yet) holds every rewrite AQE made: it is judged, unless
        its log ends before its application does (`cut_off`)."""
        if not self.adaptive or self.root.is_final_plan is not False:
            return ""
        execution = self.execution
        if execution is not None and execution.finished is False:
            return ("its execution had not ended where the input ends (a cut or in-progress "
                    "log), and its plan is not final (isFinalPlan=false)")
        return "its plan is not final (isFinalPlan=false): AQE had not finished re-planning"

    @property
    def cut_off(self) -> bool:
        """Whether this is an execution with no end in its log whose plan is final (one whose
        plan is not is `unfinished` already). Where the log ends before its application does
        (no SparkListenerApplicationEnd: a driver killed, a log cut or still being written),
        the log's end cut it off while it ran: no evidence for a verdict either (`CUT_OFF`)."""
        execution = self.execution
        return execution is not None and execution.finished is False and not self.unfinished

    @property
    def cut_off_why(self) -> str:
        """Why an execution that is `cut_off` is no evidence: the log's end cut it off while it
        ran (`CUT_OFF`), or the History Server showed it running (`STILL_RUNNING`)."""
        return STILL_RUNNING if self.origin == HISTORY_SERVER_ORIGIN else CUT_OFF

    @property
    def incomplete(self) -> str:
        """The first note saying operators of the printed plan may be missing (a text cut
        short, elided with `...`): its counts are lower bounds. "" when none says so."""
        for note in self.notes:
            if note.endswith(INCOMPLETE_TAIL):
                return note[:-len(INCOMPLETE_TAIL)]
        return ""

    @property
    def final(self) -> Node:
        """The plan that ran (or runs now): the adaptive root's current tree, else the root."""
        if self.adaptive and self.root.children:
            return self.root.children[0]
        return self.root

    @property
    def initial(self) -> Optional[Node]:
        """The plan before AQE re-planned; None for a static plan."""
        return self.root.initial if self.adaptive else None

    def subquery_trees(self) -> Tuple[Node, ...]:
        return tuple(s.tree for s in self.subqueries if s.tree is not None)

    def walk(self) -> Iterator[Node]:
        """Every operator the text printed for this query, subqueries included."""
        for tree in (self.root, *self.subquery_trees(), *self.optimized_out):
            yield from tree.walk(initial=True)


@dataclass(frozen=True)
class Execution:
    """One SQL execution as Spark's listener bus recorded it (event log, History Server).

    Times are epoch milliseconds. `replans` counts AQE's plan updates (one
    `SparkListenerSQLAdaptiveExecutionUpdate` each); `finished` is False when the log ends
    before the execution does. `configs` are the AQE-relevant settings in force: the
    application's, overlaid by the execution's own (`modifiedConfigs`, Spark 3.4+).
    """

    execution_id: int
    description: str = ""
    #: None where the source does not say (the History Server keeps only the last plan).
    replans: Optional[int] = None
    start_time: Optional[int] = None
    end_time: Optional[int] = None
    finished: Optional[bool] = None
    status: str = ""
    configs: Mapping[str, str] = field(default_factory=dict)
    #: The file of the input whose line `Query.line` is, where the input is several files
    #: (a rolling event log's parts, a folder of logs) and not that one; "" otherwise.
    part: str = ""
    #: True when `configs` are every setting that differed from Spark's defaults for this
    #: execution (the log records the session's own settings: `modifiedConfigs`, Spark 3.4+),
    #: so a key absent from them was at its default; False when session-level settings may
    #: be missing (older logs, the History Server).
    configs_complete: bool = False
    #: Each AQE update in order, what changed at it (see `timeline`): only when the reader
    #: was asked to keep them (the HTML page), else empty.
    timeline: Tuple["Replan", ...] = ()
    #: Each kept AQE update's line and the plan it logged (None when unreadable), in order:
    #: what a timeline is made of (`rewrites.timeline`), only when the reader was asked to keep
    #: them, and dropped once the timeline is made.
    updates: Tuple[Tuple[int, Optional["Query"]], ...] = ()

    @property
    def duration_ms(self) -> Optional[int]:
        if self.start_time is None or self.end_time is None:
            return None
        return self.end_time - self.start_time


@dataclass(frozen=True)
class Replan:
    """One AQE update of an SQL execution (`SparkListenerSQLAdaptiveExecutionUpdate`): its
    number (1 is the first), the line of its event, whether the plan was final, the rewrites
    found in it by kind (`counts`, kinds with none left out) and what changed since the update
    before, in words."""

    number: int
    line: int
    is_final_plan: Optional[bool]
    counts: Tuple[Tuple[str, int], ...] = ()
    changes: Tuple[str, ...] = ()


@dataclass(frozen=True)
class RuleApplied:
    """One rule that changed a plan under AQE, as the plan-change log printed it
    (`=== Applying Rule org.apache.spark.sql.execution.adaptive.OptimizeSkewedJoin ===`).

    `rule` is the class's simple name (`OptimizeSkewedJoin`), `qualified` as logged; `batch`
    the AQE batch it ran in (`AQE Replanning`, `AQE Query Stage Optimization`, or a batch of
    AQE's logical optimizer: `Optimize One Row Plan`), "" when the log did not say. The
    operators are those of its before and after plans, as `Name` (`AQEShuffleRead skewed`,
    `SortMergeJoin(skew=true)`): `removed` only before, `added` only after, `altered` the
    changed lines' operators when none came or went (their arguments changed)."""

    rule: str
    line: int
    batch: str = ""
    qualified: str = ""
    removed: Tuple[str, ...] = ()
    added: Tuple[str, ...] = ()
    altered: Tuple[str, ...] = ()
    #: Each operator of the after plan the rule added (or, when none came or went, changed):
    #: its name, the text of the first line at or below it naming an expression id (`Exchange
    #: hashpartitioning(k#1L, 20), ENSURE_REQUIREMENTS, [plan_id=47]`, blanks taken out), and
    #: the expression ids of the plan below it: how a finding finds the application that
    #: made it (`rewrites.rules_fired`).
    touched: Tuple[Tuple[str, str, FrozenSet[str]], ...] = ()
    #: Join hints the after plan gained (`rightHint=no_broadcast_hash`: DynamicJoinSelection
    #: demoting a broadcast; `leftHint=prefer_shuffle_hash`: proposing a shuffled hash join).
    hints: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Replanning:
    """One AQE re-planning (`reOptimize`: its logical optimizer, the planner, the `AQE
    Replanning` batch of physical rules), numbered from 1 within its query.

    `changed` is True when AQE adopted the new plan (`Plan changed:` follows, at
    `changed_line`), False when it kept the plan it had (no `Plan changed:` before the next
    re-planning or `Final plan:`), None when the log holds none of AQE's own messages
    (spark.sql.adaptive.logLevel below the log's level), so it cannot be told.
    `added`/`removed` are the operators the adopted plan gained or lost."""

    number: int
    line: int
    rules: Tuple[RuleApplied, ...] = ()
    changed: Optional[bool] = None
    changed_line: Optional[int] = None
    added: Tuple[str, ...] = ()
    removed: Tuple[str, ...] = ()


@dataclass(frozen=True)
class PlanChanges:
    """What the plan-change log (spark.sql.planChangeLog.level at the log's level) said of one
    query's AQE: its re-plannings in order, and every rule that changed a plan under AQE
    (re-planning and query-stage optimization) in order. `notes` say what could not be read
    (a block cut short or damaged), each with its line."""

    replannings: Tuple[Replanning, ...] = ()
    rules: Tuple[RuleApplied, ...] = ()
    notes: Tuple[str, ...] = ()

    @property
    def kept(self) -> int:
        """Re-plannings after which AQE kept the plan it had."""
        return sum(1 for replanning in self.replannings if replanning.changed is False)

    @property
    def changed(self) -> int:
        return sum(1 for replanning in self.replannings if replanning.changed)

    def fired(self, rule: str) -> Tuple[RuleApplied, ...]:
        """The applications of the rule named `rule` (its simple name), in order."""
        return tuple(applied for applied in self.rules if applied.rule == rule)


@dataclass(frozen=True)
class Application:
    """The Spark application an event log or History Server answer belongs to."""

    app_id: str = ""
    name: str = ""
    spark_version: str = ""
    #: Whether the log holds the application's end (`SparkListenerApplicationEnd`, the last
    #: event Spark writes): False for a log cut short, still being written or left by a
    #: driver that was killed, whose later executions could not be read; None where the
    #: source does not say (History Server JSON, several applications). Known once the log
    #: is read whole, so it is no part of what makes two Applications the same one.
    ended: Optional[bool] = field(default=None, compare=False)


@dataclass(frozen=True)
class Document:
    """Everything read from one text."""

    queries: Tuple[Query, ...]
    source: str = ""
    #: What was skipped or put together while reading the text (a plan that could not be
    #: read, the same query printed twice), each with its line.
    notes: Tuple[str, ...] = ()
    #: The application, when read from an event log or the History Server.
    application: Optional[Application] = None
    #: Whether a driver log holds the end of every application it starts (SparkContext's
    #: stop after its start, before the next start): False for one cut short, still being
    #: written or left by a driver that was killed, whose later queries could not be read;
    #: None where the text does not say (an explain output, a log at WARN level). An event log
    #: says it in `application.ended`, a folder of event logs here too (False when one of its
    #: applications has no end); False too whenever `unended` holds a reason.
    ended: Optional[bool] = field(default=None, compare=False)
    #: Why the input may lack queries of an application it holds, so that its counts are lower
    #: bounds, each naming the application, log or part (`ended` is False when it holds any):
    #: `LOG_NOT_ENDED` and `DRIVER_LOG_NOT_ENDED` (a log that ends before its application
    #: does), an earlier application of a driver log that never stopped before the next one
    #: started, a rolling event log with a part missing from its numbering or a compacted
    #: part (Spark's compaction drops the events of executions that had ended), a History
    #: Server answer showing an execution still running. What `check` says of an outcome it
    #: cannot settle (`unfinished`), and of one it judges anyway.
    unended: Tuple[str, ...] = field(default=(), compare=False)
