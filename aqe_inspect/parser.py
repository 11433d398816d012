"""Parse explain text into the plan model.

`grammars/explain.lark` is compiled once into an LALR parser whose tables Lark caches on disk,
so a run of the CLI loads them instead of building them. The transformer runs inside the
parser (no parse tree is built) and turns each rule into model objects; formatted mode's
detail blocks are joined to their tree lines by operator id once a plan's body is complete.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import tempfile
from importlib import resources
from typing import Dict, List, Optional, Tuple

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput, UnexpectedToken

from .errors import PlanSyntaxError
from .lexer import ExplainLexer
from .model import ADAPTIVE_ROOT, Document, Node, Query, Subquery
from .operator_line import (
    DetailBlock, OperatorLine, is_final_plan, read_detail_block, read_operator_line,
)

SUBQUERY_HEADER = re.compile(
    r"Subquery:(?P<index>\d+) Hosting operator id = (?P<host>-?\d+)"
    r"(?: Hosting Expression = (?P<expr>.*))?$"
)

#: How an error names what the grammar expected next.
EXPECTED_NAMES = {
    "PHYSICAL_HEADER": "'== Physical Plan =='",
    "LOGICAL_HEADER": "a logical plan section",
    "TEXT_LINE": "a logical plan line",
    "OPERATOR": "an operator line",
    "STAGE_HEADER": "'+- == Final Plan ==' or '+- == Initial Plan =='",
    "DETAIL_HEADER": "an operator detail block '(N) Name'",
    "FIELD": "a detail field",
    "SUBQUERIES_HEADER": "'===== Subqueries ====='",
    "SUBQUERY_HEADER": "'Subquery:N Hosting operator id = M ...'",
    "OPTIMIZED_OUT_HEADER": "'===== Adaptively Optimized Out Exchanges ====='",
    "SUBPLAN_HEADER": "'Subplan:N'",
    "CODEGEN_FOUND": "'Found N WholeStageCodegen subtrees.'",
    "CODEGEN_SUBTREE_HEADER": "'== Subtree i / n ... =='",
    "GENERATED_CODE": "'Generated code:'",
    "$END": "the end of the text",
}


class _RawNode:
    """A tree line and what hangs under it, before detail blocks are joined in."""

    __slots__ = ("op", "children", "inner", "stages")

    def __init__(self, op: OperatorLine):
        self.op = op
        self.children: List[_RawNode] = []
        self.inner: List[_RawNode] = []
        self.stages: List[Tuple[str, _RawNode]] = []


class _Body:
    """What a `plan_body` rule produced: everything of one query below its header."""

    __slots__ = ("root", "subqueries", "optimized_out", "mode")

    def __init__(self, root: Node, subqueries: Tuple[Subquery, ...],
                 optimized_out: Tuple[Node, ...], mode: str):
        self.root = root
        self.subqueries = subqueries
        self.optimized_out = optimized_out
        self.mode = mode


class _ToModel(Transformer):
    """Rule callbacks, named after the grammar's rules."""

    # ---- trees -----------------------------------------------------------------------------
    def node(self, items):
        raw = _RawNode(read_operator_line(items[0].value, items[0].line, items[0].column))
        for item in items[1:]:
            if isinstance(item, _RawNode):
                raw.children.append(item)
            elif item[0] == "inner":
                raw.inner.extend(item[1])
            else:
                raw.stages.append((item[1], item[2]))
        return raw

    def inner(self, items):
        return ("inner", items)

    def stage(self, items):
        return ("stage", items[0].value, items[1])

    def tree(self, items):
        return items[0]

    # ---- formatted-mode sections -------------------------------------------------------------
    def detail_block(self, items):
        header = items[0]
        return read_detail_block(header.value, [t.value for t in items[1:]], header.line)

    def subquery(self, items):
        header = items[0]
        return ("subquery", header, items[1] if len(items) > 1 else None, items[2:])

    def subqueries(self, items):
        return ("subqueries", items[1:])

    def subplan(self, items):
        return ("subplan", items[1], items[2:])

    def optimized_out(self, items):
        return ("optimized_out", items[1:])

    def plan_body(self, items):
        root_raw: _RawNode = items[0]
        blocks: List[DetailBlock] = []
        subquery_items: list = []
        subplans: list = []
        for item in items[1:]:
            if isinstance(item, DetailBlock):
                blocks.append(item)
            elif item[0] == "subqueries":
                subquery_items = item[1]
            elif item[0] == "optimized_out":
                subplans = item[1]
        for _, _, _, sub_blocks in subquery_items:
            blocks.extend(sub_blocks)
        for _, _, sub_blocks in subplans:
            blocks.extend(sub_blocks)
        details: Dict[int, DetailBlock] = {}
        for block in blocks:
            details.setdefault(block.id, block)

        # Formatted mode numbers every operator; its tree lines then all need a detail block.
        formatted = root_raw.op.id is not None or root_raw.op.unnumbered
        build = functools.partial(_build_node, details=details, formatted=formatted)
        subqueries = []
        for _, header, tree, _ in subquery_items:
            match = SUBQUERY_HEADER.match(header.value)
            subqueries.append(Subquery(
                index=int(match["index"]), hosting_operator_id=int(match["host"]),
                hosting_expression=(match["expr"] or "").strip(),
                tree=build(tree) if tree is not None else None, line=header.line,
            ))
        optimized_out = tuple(build(tree) for _, tree, _ in subplans)
        return _Body(build(root_raw), tuple(subqueries), optimized_out,
                     "formatted" if formatted else "simple")

    # ---- queries and documents ---------------------------------------------------------------
    def logical_section(self, items):
        header = items[0].value.strip("= ").strip()
        return ("logical", header, "\n".join(t.value for t in items[1:]))

    def query(self, items):
        logical = {item[1]: item[2] for item in items if isinstance(item, tuple)}
        header = next(t for t in items if isinstance(t, Token))
        body: _Body = items[-1]
        return _query(body, logical, header.line)

    def bare_query(self, items):
        body: _Body = items[0]
        return _query(body, {}, body.root.line)

    def document(self, items):
        return Document(queries=tuple(items))

    def codegen_subtree(self, items):
        root = _build_node(items[1], details={}, formatted=False)
        return Query(root=root, mode="codegen", label=items[0].value, line=items[0].line)

    def codegen_report(self, items):
        return tuple(items[1:])

    def codegen_document(self, items):
        return Document(queries=items[0])


def _query(body: _Body, logical: Dict[str, str], line: int) -> Query:
    return Query(root=body.root, subqueries=body.subqueries, optimized_out=body.optimized_out,
                 mode=body.mode, logical=logical, line=line)


def _build_node(raw: _RawNode, *, details: Dict[int, DetailBlock], formatted: bool) -> Node:
    op = raw.op
    build = functools.partial(_build_node, details=details, formatted=formatted)
    block: Optional[DetailBlock] = None
    if formatted and not op.unnumbered:
        if op.id is None:
            raise PlanSyntaxError(
                "expected an operator id '(N)' at the end of this formatted-plan line",
                line=op.line, column=op.column,
            )
        block = details.get(op.id)
        if block is None:
            raise PlanSyntaxError(
                f"operator '{op.name} ({op.id})' has no detail block '({op.id}) {op.name}'; "
                "the plan looks cut short",
                line=op.line, column=op.column,
            )
    fields = dict(block.fields) if block else {}
    args = op.args if formatted else op.plain_args
    children = [build(child) for child in raw.children]
    initial: Optional[Node] = None
    for kind, stage_root in raw.stages:
        if kind == "Initial":
            initial = build(stage_root)
        else:
            children.insert(0, build(stage_root))
    adaptive = op.name == ADAPTIVE_ROOT
    if adaptive and not raw.stages and children:
        # The single-tree form: Spark prints it when the current plan equals the initial one.
        initial = children[0]
    stage = op.codegen_stage if op.codegen_stage is not None else (
        block.codegen_stage if block else None)
    return Node(
        name=op.name, args=args, id=op.id if formatted else None,
        codegen_stage=stage, whole_stage_codegen=op.whole_stage_codegen,
        title=block.title if block else op.name, details=fields,
        children=tuple(children), inner=tuple(build(child) for child in raw.inner),
        statistics=op.statistics, description=op.description if formatted else None,
        initial=initial, is_final_plan=is_final_plan(args, fields) if adaptive else None,
        line=op.line,
    )


def _grammar_text() -> str:
    return resources.files("aqe_inspect.grammars").joinpath("explain.lark").read_text("utf-8")


def _cache_file() -> "str | bool":
    """Where Lark keeps the compiled tables: a user cache folder, else the temp folder."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for folder in (os.path.join(base, "aqe-inspect"), tempfile.gettempdir()):
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK):
            from lark import __version__ as lark_version
            return os.path.join(folder, f"explain-grammar-lark{lark_version}.cache")
    return False


@functools.lru_cache(maxsize=None)
def _parser() -> Lark:
    return Lark(
        _grammar_text(), parser="lalr", lexer=ExplainLexer, transformer=_ToModel(),
        cache=_cache_file(), propagate_positions=False, maybe_placeholders=False,
    )


def parse_text(text: str, source: str = "") -> Document:
    """Parse the whole of an explain output; raise PlanSyntaxError naming `source`."""
    if "\x00" in text:
        index = text.index("\x00")
        line = text.count("\n", 0, index) + 1
        column = index - (text.rfind("\n", 0, index) + 1) + 1
        raise PlanSyntaxError("expected plan text, found binary data (a NUL byte)",
                              line=line, column=column, source=source)
    try:
        document = _parser().parse(text)
    except PlanSyntaxError as error:
        raise error.located(source) from None
    except UnexpectedToken as error:
        raise _unexpected(error, text, source) from None
    except UnexpectedInput as error:  # pragma: no cover - the line lexer raises its own errors
        raise PlanSyntaxError(str(error).splitlines()[0], line=error.line, column=error.column,
                              source=source) from None
    queries = tuple(dataclasses.replace(q, source=source) for q in document.queries)
    return Document(queries=queries, source=source)


def _unexpected(error: UnexpectedToken, text: str, source: str) -> PlanSyntaxError:
    token = error.token
    expected = sorted({EXPECTED_NAMES[name] for name in error.expected if name in EXPECTED_NAMES})
    if token.type == "$END":
        found = "the end of the text"
        line = text.count("\n") + (0 if text.endswith("\n") else 1)
        column = 1
    else:
        found = repr(token.value.strip()[:60]) if token.value.strip() else token.type.lower()
        line, column = token.line, token.column
    wanted = " or ".join(expected) if expected else "something else"
    return PlanSyntaxError(f"expected {wanted}, found {found}", line=line, column=column,
                           source=source)
