"""A codegen-mode explain read as the one plan it comes from.

`explain("codegen")` (Spark's `debug.codegenString`) prints `Found N WholeStageCodegen
subtrees.`, then for each `WholeStageCodegenExec` of the executed plan `== Subtree i / N
(...) ==`, the subtree's own tree string and its generated code. Under AQE the subtrees are
found in AQE's current plan (after the action, the final one), query stages and subqueries
included, and each subtree prints everything below it: the subtree of a later codegen stage
holds those of the stages under it again. The operators above and between the subtrees
(`AdaptiveSparkPlan`, a `Union`, a `ResultQueryStage`, any operator without generated code at
the top) are not printed.

So the N subtrees are one query: its tree is the subtree no other one holds, or, when the
top of the plan is not generated code (a union of two aggregates), the subtrees no other one
holds under a placeholder root for the operators left out.
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

from ..plan.model import Node, Query
from .lexer import CUT_ROOT

#: What a codegen-mode explain shows, on the query read from one.
CODEGEN_NOTE = (
    "codegen mode prints only the plan's WholeStageCodegen subtrees (here {count}), not the "
    "operators above or between them: findings are limited to what the subtrees show; "
    "explain in formatted mode (df.explain(\"formatted\")) for the whole plan"
)
#: A codegen-mode explain of a plan without generated code.
NO_SUBTREE_NOTE = (
    "codegen mode found no WholeStageCodegen subtree, so the text shows no operator of the "
    "plan (a plan AQE reduced to an empty relation, or one that runs without generated "
    "code); explain in formatted mode (df.explain(\"formatted\")) for the whole plan"
)


def one_query(subtrees: Sequence[Query], label: str, line: int) -> Query:
    """The query the codegen subtrees of one explain come from (see the module's doc)."""
    shapes: Dict[tuple, int] = {}
    roots: List[int] = []
    held: set = set()
    for subtree in subtrees:
        below = _shapes(subtree.root, shapes)
        roots.append(below[id(subtree.root)])
        held.update(shape for key, shape in below.items() if key != id(subtree.root))
    tops: List[Node] = []
    seen: set = set()
    for subtree, shape in zip(subtrees, roots):
        if shape not in held and shape not in seen:
            tops.append(subtree.root)
        seen.add(shape)
    if len(tops) == 1:
        root = tops[0]
    else:
        root = Node(name=CUT_ROOT, children=tuple(tops), line=line)
    notes = [note for subtree in subtrees for note in subtree.notes]
    notes.append(CODEGEN_NOTE.format(count=len(subtrees)))
    first = subtrees[0]
    return Query(root=root, mode="codegen", label=label, line=line, source=first.source,
                 origin=first.origin, notes=tuple(dict.fromkeys(notes)))


def _shapes(root: Node, shapes: Dict[tuple, int]) -> Dict[int, int]:
    """A number for every operator under `root` (by `id()`), equal for operators printed the
    same with the same operators under them: the shape of each subtree, found bottom-up
    without recursion. `shapes` numbers the shapes, shared by the subtrees compared."""
    numbers: Dict[int, int] = {}
    stack: List[Tuple[Node, bool]] = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in numbers:
            continue
        below = (*node.children, *node.inner, *((node.initial,) if node.initial else ()))
        if not ready:
            stack.append((node, True))
            stack.extend((child, False) for child in below if id(child) not in numbers)
            continue
        key = (node.name, node.args, node.codegen_stage, node.whole_stage_codegen,
               node.description, node.statistics, node.is_final_plan,
               tuple(numbers[id(child)] for child in node.children),
               tuple(numbers[id(child)] for child in node.inner),
               numbers[id(node.initial)] if node.initial else None)
        numbers[id(node)] = shapes.setdefault(key, len(shapes))
    return numbers
