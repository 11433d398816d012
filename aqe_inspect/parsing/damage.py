"""Say when a plan's text looks cut short, rather than report it as if it were whole.

A plan cut at a line boundary can still parse: the tree simply ends sooner. What Spark
prints gives it away, and each check here names one such sign:

* a leaf that cannot be a leaf: an `Exchange`, a `Sort` or a query stage printed with no
  child, a join with one input;
* formatted mode's last detail block without the fields Spark always prints for that
  operator (`Arguments` of an `Exchange`, `Results` of a `HashAggregate`);
* a last line whose brackets never close (`hashpartitioning(k#1, 2`);
* a subquery an operator's details refer to (`scalar-subquery#12`, `dynamicpruning#7`)
  with no entry in the `===== Subqueries =====` section;
* codegen mode's `Found N WholeStageCodegen subtrees` with fewer printed, or a last
  generated class that never closes.

The tree-level signs (a `:` glyph on the last line, a stage without its initial plan,
operators without detail blocks) are noted where they are seen, in the lexer and parser.
"""

from __future__ import annotations

import re
from typing import Dict, Iterator, List, Optional, Tuple

from .lexer import DETAIL_HEADER, Damage, PlanLines
from .. import native
from ..plan.model import ADAPTIVE_ROOT, Node, Query
from ..plan.operators import JOINS, family, name_family

#: Operators that always have at least one child in a physical plan Spark prints.
NEEDS_CHILD = frozenset({
    "Exchange", "BroadcastExchange", "Sort", "Project", "Filter", "HashAggregate",
    "SortAggregate", "ObjectHashAggregate", "Window", "WindowGroupLimit", "Expand", "Generate",
    "CollectLimit", "TakeOrderedAndProject", "GlobalLimit", "LocalLimit", "Coalesce", "Union",
    "AQEShuffleRead", "ShuffleQueryStage", "BroadcastQueryStage", "ResultQueryStage",
    "TableCacheQueryStage", "WholeStageCodegen", "InputAdapter", "ColumnarToRow",
    "RowToColumnar", "AdaptiveSparkPlan", "Sample", "SubqueryBroadcast", "Subquery",
    "CollectMetrics", "DeserializeToObject", "SerializeFromObject", "MapElements",
    "MapPartitions", "FlatMapGroupsInPandas", "ArrowEvalPython", "BatchEvalPython",
    "AppendColumns", "ObjectConsumer", "SortMergeJoin", "BroadcastHashJoin",
    "ShuffledHashJoin", "BroadcastNestedLoopJoin", "CartesianProduct",
})

_INPUT_ARGUMENTS = ("Input", "Arguments")
_OUTPUT_ARGUMENTS = ("Output", "Arguments")
_AGGREGATE = ("Input", "Keys", "Functions", "Aggregate Attributes", "Results")
_JOIN = ("Left keys", "Right keys", "Join condition")
#: Operators that read no other operator, by family; any name holding a word of LEAF_WORDS
#: is one too (vendor scans: GpuFileSourceScanExec, CometScan, BatchScanExecTransformer).
KNOWN_LEAVES = frozenset({"Range", "ReusedExchange", "ReusedSubquery", "ReusedQueryStage",
                          "ResolvedTable", "UnionLoopRef", "EmptyRelation"})
LEAF_WORDS = ("Scan", "Relation", "Command")

#: Simple mode's FileScan prints its metadata sorted by key; its read schema comes last.
FILE_SCAN_END = re.compile(r"ReadSchema: struct<.*>$")

#: Fields Spark prints in every formatted detail block of these operators, 3.0 to 4.x (every
#: block of the golden corpus and the sample plans has them).
REQUIRED_FIELDS: Dict[str, tuple] = {
    **dict.fromkeys(("HashAggregate", "SortAggregate", "ObjectHashAggregate"), _AGGREGATE),
    **dict.fromkeys(("BroadcastHashJoin", "SortMergeJoin", "ShuffledHashJoin"), _JOIN),
    **dict.fromkeys(("Exchange", "BroadcastExchange", "Sort", "TakeOrderedAndProject", "Window",
                     "AQEShuffleRead", "Expand", "WindowGroupLimit", "CollectLimit"),
                    _INPUT_ARGUMENTS),
    **dict.fromkeys(("AdaptiveSparkPlan", "Range", "ShuffleQueryStage", "BroadcastQueryStage",
                     "ResultQueryStage", "TableCacheQueryStage", "LocalTableScan",
                     "InMemoryTableScan"), _OUTPUT_ARGUMENTS),
    "BroadcastNestedLoopJoin": ("Join condition",),
    "ReusedExchange": ("Output",),
    "ToRow": ("Input",),
    # Physical forms; the logical plans Spark prints inside (cached plans) have `Arguments`.
    "Project": ("Output", "Input"),
    "Filter": ("Input", "Condition"),
}
#: A file scan prints its schema last.
FILE_SCAN = re.compile(r"Scan (?:parquet|orc|csv|json|text|avro)\b")
FILE_SCAN_FIELDS = ("Output", "Batched", "Location", "ReadSchema")

#: `scalar-subquery#12`, `dynamicpruning#7`, `Subquery subquery#3`: a subquery expression.
SUBQUERY_REFERENCE = re.compile(
    r"\b(?:scalar-subquery|ScalarSubquery|dynamicpruning|subquery)#(\d{1,9})\b")
GENERATED_CLASS = re.compile(r"/\* \d+ \*/ (?:public )?(?:final )?class ")
GENERATED_CODE_END = re.compile(r"/\* \d+ \*/ \}\s*$")
SUBTREE_NUMBER = re.compile(r"== Subtree (\d{1,9}) / (\d{1,9}) ")
BRACKETS = {")": "(", "]": "[", "}": "{"}
NOT_BRACKETS = re.compile(r"[^][(){}]+")
#: What every SUBQUERY_REFERENCE holds: a text without them refers to no subquery.
SUBQUERY_MARKS = ("uery#", "pruning#")
#: Whether a text holds either of SUBQUERY_MARKS (`_treescan_c.pyx`, in one pass; or its pure
#: twin `_treescan_py.py`, the two searches).
holds_subquery_mark = native.load("aqe_inspect.parsing._treescan").holds_subquery_mark


def check_query(query: Query, plan: PlanLines, last: bool = True,
                marked: Optional[bool] = None) -> List[str]:
    """Notes on signs that `query` (read from `plan`) was cut short; `last` says the query is
    the last one of the text, where a cut shows. `marked` False says no line of `plan` holds
    SUBQUERY_MARKS (so no detail of a node read from it does, and no use of a subquery needs
    an entry); None, that it is not known."""
    nodes = _walked(query)  # every tree, initial ones too, walked once for all checks
    found: List[Damage] = []
    found.extend(_leaves(nodes))
    found.extend(_subquery_trees(query))
    if not last:
        return [damage.note() for damage in found]
    if query.mode == "codegen":
        found.extend(_codegen(query, plan))
    else:
        found.extend(_last_line(plan))
        found.extend(_last_operator(nodes, query, plan))
    if query.mode == "formatted":
        found.extend(_last_detail_block(nodes, plan))
        if marked is not False:
            found.extend(_subquery_entries(query))
    return [damage.note() for damage in found]


def _trees(query: Query) -> Iterator[Node]:
    yield query.root
    yield from query.subquery_trees()
    yield from query.optimized_out


def _walked(query: Query) -> List[Node]:
    """`list(query.walk())`, made without a generator step per node: each tree's nodes with
    the initial trees of adaptive plans, each node once a tree (Node.walk(initial=True))."""
    nodes: List[Node] = []
    append = nodes.append
    for tree in (query.root, *query.subquery_trees(), *query.optimized_out):
        stack = [tree]
        seen = set()
        while stack:
            node = stack.pop()
            key = id(node)
            if key in seen:
                continue
            seen.add(key)
            append(node)
            # Pushed last to first: inner plans, then children, then the initial tree.
            if node.initial is not None:
                stack.append(node.initial)
            children = node.children
            if children:
                stack.extend(children[::-1])
            if node.inner:
                stack.extend(node.inner[::-1])
    return nodes


def _leaves(nodes: List[Node]) -> Iterator[Damage]:
    known = _LEAF_RULES
    for node in nodes:
        name = node.name
        if node.is_final_plan is None and name == ADAPTIVE_ROOT:
            yield Damage(node.line, f"{node.name} without a readable isFinalPlan flag; the "
                         "plan looks cut short")
        # family(node) in NEEDS_CHILD, is_join(node): leaf_rules(name), its cache asked here
        rules = known.get(name)
        needs_child, join = rules if rules is not None else leaf_rules(name)
        if node.children:
            if len(node.children) == 1 and join:
                yield Damage(node.line, f"the join {node.name} has one input where it "
                             "needs two; the plan looks cut short")
        elif needs_child:
            yield Damage(node.line, f"{node.name} is printed without the operator it reads "
                         "from; the plan looks cut short")


def is_known_leaf(node: Node, formatted: bool) -> bool:
    """Operators that read no other operator: scans, relations, commands, reused exchanges.
    Simple mode prints a cached relation inside its `InMemoryTableScan`."""
    name = family(node)
    if name in ("InMemoryTableScan", "InMemoryRelation"):
        return formatted or bool(node.inner or node.children)
    if not formatted and (not node.args or name == "FileScan" and not FILE_SCAN_END.search(
            node.args)):
        return False  # simple mode prints a leaf's arguments whole: this line was cut
    return name in KNOWN_LEAVES or any(word in name for word in LEAF_WORDS)


def _last_operator(nodes: List[Node], query: Query, plan: PlanLines) -> Iterator[Damage]:
    """The operator on the text's last line, when it reads from operators that are missing."""
    index = _last_text_line(plan)
    if index is None:
        return
    number = plan.line_number(index)
    for node in nodes:
        if node.line == number and not node.children and \
                not is_known_leaf(node, query.mode == "formatted") and \
                family(node) not in NEEDS_CHILD:
            yield Damage(number, f"the text ends at {node.name!r}, not at an operator "
                         "that reads no other; the plan looks cut short")
            return


def _subquery_trees(query: Query) -> Iterator[Damage]:
    """Spark prints each subquery's plan once, at one of the entries that use it; an entry
    without a plan is a reuse, or uses a subquery whose plan another entry prints."""
    printed = set()
    for subquery in query.subqueries:
        if subquery.tree is not None:
            printed.update(SUBQUERY_REFERENCE.findall(subquery.hosting_expression))
    for subquery in query.subqueries:
        if subquery.tree is None and not subquery.hosting_expression.startswith("ReusedSubquery") \
                and not set(SUBQUERY_REFERENCE.findall(subquery.hosting_expression)) <= printed:
            yield Damage(subquery.line, f"subquery {subquery.index} is printed without its "
                         "plan; the plan looks cut short")
            return


def _last_line(plan: PlanLines) -> Iterator[Damage]:
    index = _last_text_line(plan)
    if index is None:
        return
    if last_line_unbalanced(plan.lines[index]):
        yield Damage(plan.line_number(index), "the last line's brackets never close; the plan "
                     "looks cut short")


def _last_text_line(plan: PlanLines) -> Optional[int]:
    index = len(plan.lines) - 1
    while index >= 0 and not plan.lines[index].strip():
        index -= 1
    return index if index >= 0 else None


def last_line_unbalanced(line: str) -> bool:
    """Whether the text's last line leaves a bracket open (its last 100,000 characters)."""
    if len(line) > 100_000:
        line = line[-100_000:]
    return _unbalanced(line)


def _unbalanced(text: str) -> bool:
    """Whether an opening bracket is left open (quotes are not tracked: Spark prints string
    literals with brackets in them rarely, and only the last line is judged). Only the
    brackets are walked: the other characters change nothing."""
    stack: List[str] = []
    for char in NOT_BRACKETS.sub("", text):
        if char in "([{":
            stack.append(char)
        elif char in BRACKETS and stack and stack[-1] == BRACKETS[char]:
            stack.pop()
    return bool(stack)


def _last_detail_block(nodes: List[Node], plan: PlanLines) -> Iterator[Damage]:
    """The last detail block of the text, when it lacks a field its operator always has."""
    index = _last_text_line(plan)
    while index is not None and index >= 0 and plan.lines[index].strip():
        match = DETAIL_HEADER.match(plan.lines[index])
        if match:
            break
        index -= 1
    else:
        return
    block_id = int(plan.lines[index][1:plan.lines[index].index(")")])
    node = next((n for n in nodes if n.id == block_id), None)
    if node is None:
        return
    missing = missing_fields(node)
    if missing:
        yield Damage(plan.line_number(index), f"the last detail block ({block_id}) {node.name} "
                     f"lacks {', '.join(missing)}; the plan looks cut short")


def missing_fields(node: Node) -> List[str]:
    """The fields Spark always prints in a detail block of `node`'s operator that its
    details lack."""
    required = REQUIRED_FIELDS.get(family(node), ())
    if FILE_SCAN.match(node.title):
        required = FILE_SCAN_FIELDS
    if "Arguments" in node.details and "Arguments" not in required:
        required = ()  # a logical operator printed inside a physical one
    if not node.details:
        required = ("its fields",) if node.id is not None else ()
    return [name for name in required if name not in node.details]


#: `leaf_rules` by operator name, for names of a sane length (bounded).
_LEAF_RULES: Dict[str, Tuple[bool, bool]] = {}


def leaf_rules(name: str) -> Tuple[bool, bool]:
    """Whether an operator of this name always has a child (so `_leaves` notes it printed
    without one), and whether it is a join (noted with one input): asked of every node a
    plain formatted plan is read into (`formatted_plan`), so remembered by name."""
    rules = _LEAF_RULES.get(name)
    if rules is None:
        operator = name_family(name)
        rules = (operator in NEEDS_CHILD, operator in JOINS)
        if len(name) <= 100 and len(_LEAF_RULES) < 4096:
            _LEAF_RULES[name] = rules
    return rules


def subqueries_cut(query: Query) -> bool:
    """Whether `check_query` notes a subquery printed without its plan or a subquery used
    without its entry."""
    return any(_subquery_trees(query)) or any(_subquery_entries(query))


def _subquery_entries(query: Query) -> List[Damage]:
    """Spark lists every (operator, subquery) use under '===== Subqueries =====' (the first
    use without its entry, if any)."""
    hosted = set()
    for subquery in query.subqueries:
        for number in SUBQUERY_REFERENCE.findall(subquery.hosting_expression):
            hosted.add((subquery.hosting_operator_id, number))
    holds_mark = holds_subquery_mark
    for tree in (query.root, *query.subquery_trees(), *query.optimized_out):  # _trees(query)
        # the final plan's operators host; initial ones share them (walked(): walk() listed)
        for node in tree.walked():
            if node.id is None:
                continue
            for value in node.details.values():
                if not holds_mark(value):
                    continue  # what every SUBQUERY_REFERENCE holds, found without a regex
                for number in SUBQUERY_REFERENCE.findall(value):
                    if (node.id, number) not in hosted:
                        return [Damage(node.line, f"{node.label} uses subquery #{number}, "
                                       "which has no entry under '===== Subqueries ====='; "
                                       "the plan looks cut short")]
    return []


def _codegen(query: Query, plan: PlanLines) -> Iterator[Damage]:
    numbers = SUBTREE_NUMBER.match(query.label)
    if numbers and numbers.group(1) != numbers.group(2):
        yield Damage(query.line, f"only {numbers.group(1)} of the {numbers.group(2)} codegen "
                     "subtrees are printed; the text looks cut short")
    elif numbers:
        index = _last_text_line(plan)
        start = index
        while start is not None and start > 0 and \
                not plan.lines[start].startswith("Generated code:"):
            start -= 1
        code = plan.lines[start:] if start is not None else []
        opened = sum(line.count("{") for line in code)
        closed = sum(line.count("}") for line in code)
        has_class = any(GENERATED_CLASS.match(line) for line in code)
        if index is not None and (not GENERATED_CODE_END.search(plan.lines[index])
                                  or opened != closed or not has_class):
            yield Damage(plan.line_number(index), "the generated code of the last codegen "
                         "subtree stops before its end; the text looks cut short")
