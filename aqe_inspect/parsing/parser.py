"""Parse explain text into the plan model.

`grammars/explain.lark` is compiled once into an LALR parser whose tables Lark caches on disk,
so a run of the CLI loads them instead of building them. `_Tables` runs those tables over the
lexer's tokens with Lark's own callbacks (Lark's results and errors, without the cost of its
general parser loop); each operator tree, the bulk of a plan, is built from its tokens
without the tables' steps (`_direct_tree`), the tables put where reading them leaves them, and
goes through the tables token by token only when the grammar would refuse it (for the
error). The transformer runs inside the parser (no parse tree is built) and
turns each rule into model objects; formatted mode's detail blocks are joined to their tree
lines by operator id once a plan's body is complete.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import importlib.util
import os
import re
import tempfile
from sys import intern
from typing import Dict, Iterator, List, Optional, Tuple

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput, UnexpectedToken
from lark.parsers.lalr_analysis import Shift

from .codegen import NO_SUBTREE_NOTE, one_query
from .damage import SUBQUERY_MARKS, check_query
from ..errors import PlanSyntaxError
from .lexer import (
    CURRENT_PLAN, CUT_ROOT, Damage, ExplainLexer, PlanLines, TreeTokens, _LineLexer, _new_token,
)
from ..plan.model import ADAPTIVE_ROOT, Document, Node, Query, Subquery
from ..plan.operators import name_family
from .operator_line import (
    DetailBlock, OperatorLine, is_final_plan, read_detail_blocks, read_operator_line,
)
from .. import native

#: A tree line's Node (`_node_c.pyx`, or its pure twin: plan.model.parsed_node).
parsed_node = native.load("aqe_inspect.parsing._node").parsed_node

SUBQUERY_HEADER = re.compile(
    r"Subquery:(?P<index>\d{1,9}) Hosting operator id = (?P<host>-?\d{1,9})?"
    r"(?: Hosting Expression = (?P<expr>.*))?"
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


#: Whether operator trees are built straight from their tokens (`_direct_tree`) rather than
#: through the automaton's steps (tests compare the two).
DIRECT_TREES = True


class _RawNode:
    """A tree line and what hangs under it, before detail blocks are joined in."""

    __slots__ = ("op", "children", "inner", "stages", "node")

    def __init__(self, op: OperatorLine):
        self.op = op
        self.node: Optional[Node] = None  # what the builder made of it
        # Each a list from its first entry on (most tree lines have no inner plan and no
        # stage, a leaf no child: no list made for them).
        self.children: "List[_RawNode] | Tuple[()]" = ()
        self.inner: "List[_RawNode] | Tuple[()]" = ()
        self.stages: "List[Tuple[str, _RawNode]] | Tuple[()]" = ()

    def add_child(self, raw: "_RawNode") -> None:
        if self.children:
            self.children.append(raw)
        else:
            self.children = [raw]

    def add_inner(self, raws: "List[_RawNode]") -> None:
        if self.inner:
            self.inner.extend(raws)
        else:
            self.inner = list(raws)

    def add_stage(self, kind: str, raw: "_RawNode") -> None:
        if self.stages:
            self.stages.append((kind, raw))
        else:
            self.stages = [(kind, raw)]


class _Body:
    """What a `plan_body` rule produced: everything of one query below its header."""

    __slots__ = ("root", "subqueries", "optimized_out", "mode", "damage", "undrawn")

    def __init__(self, root: Node, subqueries: Tuple[Subquery, ...],
                 optimized_out: Tuple[Node, ...], mode: str, damage: List[Damage],
                 undrawn: Tuple[Node, ...] = ()):
        self.root = root
        self.subqueries = subqueries
        self.optimized_out = optimized_out
        self.mode = mode
        self.undrawn = undrawn
        self.damage = damage


class _BlockRun(list):
    """The detail blocks one `detail_block` token stood for, in printed order."""


def _blocks(runs: list) -> List[DetailBlock]:
    return [block for run in runs for block in run]


def _record(damage: Damage) -> None:
    """Keep a note of damage found while building, with the lexer's own."""
    lexer = CURRENT_PLAN.get()
    if lexer is not None:
        lexer.damage.append(damage)


def _operator_line(token: Token) -> OperatorLine:
    return _read_operator_line(token.value, token.line, token.column)


def _read_operator_line(value: str, line: int, column: int) -> OperatorLine:
    if value == CUT_ROOT:
        return OperatorLine(name=CUT_ROOT, args="", id=None, codegen_stage=None,
                            whole_stage_codegen=False, statistics=None, description=None,
                            plain_args="", unnumbered=True, line=line, column=column)
    return read_operator_line(value, line, column)


class _ToModel(Transformer):
    """Rule callbacks, named after the grammar's rules."""

    # ---- trees -----------------------------------------------------------------------------
    def node(self, items):
        raw = _RawNode(_operator_line(items[0]))
        for item in items[1:]:
            if isinstance(item, _RawNode):
                raw.add_child(item)
            elif item[0] == "inner":
                raw.add_inner(item[1])
            else:
                raw.add_stage(item[1], item[2])
        return raw

    def inner(self, items):
        return ("inner", items)

    def stage(self, items):
        return ("stage", items[0].value, items[1])

    def tree(self, items):
        return items[0]

    # ---- formatted-mode sections -------------------------------------------------------------
    def detail_block(self, items):
        # A BlockToken: the lexer hands a run of blocks over as one token.
        return read_detail_blocks(items[0].blocks, _BlockRun())

    def subquery(self, items):
        header = items[0]
        return ("subquery", header, items[1] if len(items) > 1 else None, _blocks(items[2:]))

    def subqueries(self, items):
        return ("subqueries", items[1:])

    def subplan(self, items):
        return ("subplan", items[1], _blocks(items[2:]))

    def optimized_out(self, items):
        return ("optimized_out", items[1:])

    def plan_body(self, items):
        root_raw: _RawNode = items[0]
        blocks: List[DetailBlock] = []
        subquery_items: list = []
        subplans: list = []
        for item in items[1:]:
            if isinstance(item, _BlockRun):
                blocks.extend(item)
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
        formatted = bool(blocks) or _numbered(root_raw)
        builder = _Builder(details, formatted)
        subqueries = []
        for _, header, tree, _ in subquery_items:
            match = SUBQUERY_HEADER.match(header.value)
            if match["host"] is None:
                _record(Damage(header.line, "a subquery header without its hosting operator id; "
                                            "the plan looks cut short"))
            subqueries.append(Subquery(
                index=int(match["index"]),
                hosting_operator_id=int(match["host"]) if match["host"] else None,
                hosting_expression=(match["expr"] or "").strip(),
                tree=builder.build(tree) if tree is not None else None, line=header.line,
            ))
        optimized_out = tuple(builder.build(tree) for _, tree, _ in subplans)
        root = builder.build(root_raw)
        damage = builder.finish(blocks)
        return _Body(root, tuple(subqueries), optimized_out,
                     "formatted" if formatted else "simple", damage, builder.undrawn(blocks))

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
        root = _Builder({}, False).build(items[1])
        return Query(root=root, mode="codegen", label=items[0].value, line=items[0].line)

    def codegen_report(self, items):
        found = items[0]
        if len(items) == 1 and not found.value.startswith("Found 0 "):
            raise PlanSyntaxError(f"{found.value.rstrip('.')}, but none is printed; the text "
                                  "looks cut short", line=found.line, column=found.column)
        return _Codegen(found.value, found.line, tuple(items[1:]))

    def codegen_document(self, items):
        return items[0]


@dataclasses.dataclass(frozen=True)
class _Codegen:
    """A codegen-mode explain as parsed: its `Found N ...` line and one query a subtree, read
    as one query once each subtree's damage is noted (see codegen.one_query)."""

    found: str
    line: int
    queries: Tuple[Query, ...]


def _numbered(root: _RawNode) -> bool:
    """Formatted mode numbers every operator: the root has an id, or the first operator under
    a placeholder for a cut top does."""
    if root.op.name == CUT_ROOT:
        below = [*root.children, *(stage_root for _, stage_root in root.stages)]
        return bool(below) and (below[0].op.id is not None or below[0].op.unnumbered)
    return root.op.id is not None or root.op.unnumbered


def _query(body: _Body, logical: Dict[str, str], line: int) -> Query:
    for damage in body.damage:
        _record(damage)
    return Query(root=body.root, subqueries=body.subqueries, optimized_out=body.optimized_out,
                 mode=body.mode, logical=logical, line=line, undrawn=body.undrawn)


class _Builder:
    """Builds the model's nodes of one plan body from raw tree lines and detail blocks,
    iteratively (a tree thousands of levels deep needs no recursion), and notes what the
    formatted text lacks: detail blocks without operators and operators without blocks."""

    def __init__(self, details: Dict[int, DetailBlock], formatted: bool):
        self.details = details
        self.formatted = formatted
        self.used: set = set()
        self.missing: List[OperatorLine] = []
        self.damage: List[Damage] = []

    def build(self, root: _RawNode) -> Node:
        # The lines in printed order (each before what hangs under it, children, then inner
        # plans, then stages), built from the last back: everything under a node is built
        # before it, in the order the notes on missing detail blocks name operators.
        order: List[_RawNode] = []
        stack = [root]
        while stack:
            raw = stack.pop()
            order.append(raw)
            if raw.stages:
                stack.extend(reversed([stage_root for _, stage_root in raw.stages]))
            if raw.inner:
                stack.extend(reversed(raw.inner))
            stack.extend(reversed(raw.children))
        for raw in reversed(order):
            raw.node = _built_node(self, raw)
        return root.node

    def _node(self, raw: _RawNode) -> Node:
        return _built_node(self, raw)

    def undrawn(self, blocks: List[DetailBlock]) -> Tuple[Node, ...]:
        """The shuffle reads whose detail blocks no tree line uses (a tree elided with `...`,
        its blocks printed whole), each a node of its block alone: only AQE puts a shuffle
        read in, so the final plan ran it, and its `Arguments:` say what it did."""
        if not self.formatted:
            return ()
        found = []
        seen: set = set()
        for block in blocks:
            if block.id in self.used or block.id in seen or \
                    name_family(block.title.split(" ", 1)[0]) != "AQEShuffleRead":
                continue
            seen.add(block.id)
            found.append(Node(name=block.title.split(" ", 1)[0], id=block.id,
                              codegen_stage=block.codegen_stage, title=block.title,
                              details=dict(block.fields), line=block.line))
        return tuple(found)

    def finish(self, blocks: List[DetailBlock]) -> List[Damage]:
        """The damage found over the whole body, once every tree is built."""
        damage = list(self.damage)
        if self.missing:
            first = self.missing[0]
            if not self.details:
                damage.append(Damage(first.line, "the formatted tree has no detail blocks "
                                     "(evidence Spark prints only there, such as a 3.x shuffle "
                                     "read's 'Arguments: coalesced', is missing)"))
            else:
                named = ", ".join(f"{op.name} ({op.id})" for op in self.missing[:3])
                more = f" and {len(self.missing) - 3} more" if len(self.missing) > 3 else ""
                damage.append(Damage(first.line, f"operator {named}{more} has no detail block; "
                                     "the plan looks cut short"))
        seen: set = set()
        for block in blocks:
            if block.id in seen:
                damage.append(Damage(block.line, f"detail block ({block.id}) is printed twice; "
                                     "operator ids repeat", incomplete=True))
            seen.add(block.id)
            if self.formatted and block.id not in self.used:
                damage.append(Damage(block.line, f"detail block ({block.id}) {block.title} has "
                                     "no operator in the tree", incomplete=True))
        return damage


def _built_node(builder: _Builder, raw: _RawNode) -> Node:
    """`builder`'s Node of `raw`, everything under it built. (A function of the module:
    Cython gives its locals C types, parser.pxd.)"""
    op = raw.op
    name, args, op_id, line = op.name, op.args, op.id, op.line
    formatted = builder.formatted
    block: Optional[DetailBlock] = None
    fields: Dict[str, str]
    if formatted and not op.unnumbered:
        if op_id is None:
            builder.damage.append(Damage(line, f"{name} is printed without the operator "
                                         "id '(N)' every formatted-plan line ends with"))
        else:
            block = builder.details.get(op_id)
            if block is None:
                builder.missing.append(op)
            else:
                used = builder.used
                # The block's own fields for the first node of its id (a block is read
                # for the tree alone and never changed), a copy for any later one.
                fields = dict(block.fields) if op_id in used else block.fields
                used.add(op_id)
    if block is None:
        fields = {}
    if not formatted:
        args = op.plain_args
    children = [child.node for child in raw.children]
    initial: Optional[Node] = None
    adaptive = name == ADAPTIVE_ROOT
    if raw.stages:
        kinds = [kind for kind, _ in raw.stages]
        for kind, stage_root in raw.stages:
            if kind == "Initial":
                initial = stage_root.node
            else:
                children.insert(0, stage_root.node)
        if adaptive and initial is not None and not children:
            # A lone `== Initial Plan ==` (Databricks): the plan as it stands is the
            # initial one.
            children = [initial]
        if adaptive and "Initial" not in kinds:
            builder.damage.append(Damage(line, f"{name} has its {kinds[0].lower()} plan "
                                         "but no '== Initial Plan =='; the plan looks cut "
                                         "short"))
    elif adaptive and children:
        # The single-tree form: Spark prints it when the current plan equals the initial one.
        initial = children[0]
    stage = op.codegen_stage
    if stage is None and block is not None:
        stage = block.codegen_stage
    # Operator names and titles repeat in every plan: one string each, however many
    # plans a long log holds.
    name = intern(name)
    inner = raw.inner
    return parsed_node(
        name, args, op_id if formatted else None, stage, op.whole_stage_codegen,
        intern(block.title) if block is not None else name, fields, tuple(children),
        tuple([child.node for child in inner]) if inner else (),
        op.statistics, op.description if formatted else None, initial,
        is_final_plan(args, fields) if adaptive else None, line)


def _grammar_text() -> str:
    """The grammar: `aqe_inspect.grammars` in a wheel, the checkout's grammars/ otherwise.

    An editable install maps the package `aqe_inspect` to the checkout's folder, where no
    `grammars` subpackage exists (the wheel alone maps the top-level grammars/ into it).
    An installed package's folder is read as a folder (importlib.resources, a tenth of a
    small parse's start-up to import, only where the package is not one: a zip)."""
    try:
        spec = importlib.util.find_spec("aqe_inspect.grammars")
    except ModuleNotFoundError:
        spec = None
    if spec is None:
        checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        with open(os.path.join(checkout, "grammars", "explain.lark"), encoding="utf-8") as f:
            return f.read()
    for folder in spec.submodule_search_locations or ():
        path = os.path.join(folder, "explain.lark")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                return f.read()
    from importlib import resources

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


class _Tables:
    """The LALR tables Lark built for the grammar, each action resolved to what running it
    needs: `(True, state)` to shift, `(False, (size, rule name, callback))` to reduce. The
    callbacks are Lark's own for the grammar and `_ToModel` (the same values Lark's parser
    builds), so driving them here gives Lark's results and Lark's errors, without the cost
    Lark's general parser loop takes per token: about a third of a parse."""

    def __init__(self, lark: Lark):
        inner = lark.parser.parser.parser  # ParsingFrontend -> LALR_Parser -> _Parser
        table, callbacks = inner.parse_table, inner.callbacks
        if any(isinstance(key, str) for key in callbacks):
            raise TypeError("token callbacks are not driven here")
        self.start = table.start_states["start"]
        self.end = table.end_states["start"]
        reductions: Dict[int, tuple] = {}
        self.states: Dict[object, Dict[str, tuple]] = {}
        for state, actions in table.states.items():
            row = self.states[state] = {}
            for symbol, (action, arg) in actions.items():
                if action is Shift:
                    row[symbol] = (True, arg)
                else:
                    if id(arg) not in reductions:
                        reductions[id(arg)] = (len(arg.expansion), arg.origin.name,
                                               callbacks[arg])
                    row[symbol] = (False, reductions[id(arg)])

    def parse(self, tokens: "Iterator[Token | TreeTokens]", direct: bool = True):
        """Run the LALR automaton over `tokens` (what Lark's parser loop does, step for step;
        a tree's tokens may come as one TreeTokens list: `_LineLexer.chunks`); raise
        UnexpectedToken where Lark would. With `direct`, each operator tree's node is
        built by `_direct_tree` from its tokens, when the grammar accepts them, and the
        automaton is put where reading them would have left it (the node's goto, then its
        _TREE_END shifted); else the tokens run through the automaton, as without."""
        states = self.states
        state_stack = [self.start]
        value_stack: list = []
        token = None
        pending: List[Token] = []  # a tree's tokens, to run through the automaton one by one
        stream = iter(tokens)
        while True:
            if pending:
                token = pending.pop()
            else:
                following = next(stream, None)
                if following is None:
                    break  # `token` stays the last one, for where $END stands
                token = following
                if token.__class__ is TreeTokens:
                    tree = token
                    if direct:
                        row = states[state_stack[-1]]
                        after_node = row.get("node") if "tree" in row else None
                        after_end = states[after_node[1]].get("_TREE_END") \
                            if after_node else None
                        root = _direct_tree(tree) if after_end is not None and \
                            after_end[0] and row.get("OPERATOR", (False,))[0] else None
                        if root is not None:
                            # Where the automaton stands once it has read the tree's node
                            # and shifted its _TREE_END: the rule `tree` is reduced by the
                            # next token, as without (and a token the grammar does not take
                            # there is refused in the same state, with the same expected).
                            token = _new_token(Token, *tree[-1])  # its _TREE_END
                            state_stack.append(after_node[1])
                            value_stack.append(root)
                            state_stack.append(after_end[1])
                            value_stack.append(token)
                            continue
                    pending = tree.tokens()[::-1]
                    token = pending.pop()
            while True:
                row = states[state_stack[-1]]
                try:
                    shift, arg = row[token.type]
                except KeyError:
                    raise _unexpected_token(token, row) from None
                if shift:
                    state_stack.append(arg)
                    value_stack.append(token)
                    break
                self._reduce(arg, state_stack, value_stack)
        end = Token.new_borrow_pos("$END", "", token) if token else Token("$END", "", 0, 1, 1)
        while True:
            row = states[state_stack[-1]]
            try:
                shift, arg = row["$END"]
            except KeyError:
                raise _unexpected_token(end, row) from None
            assert not shift
            self._reduce(arg, state_stack, value_stack)
            if state_stack[-1] == self.end:
                return value_stack[-1]

    def _reduce(self, rule: tuple, state_stack: list, value_stack: list) -> None:
        size, name, callback = rule
        if size:
            values = value_stack[-size:]
            del state_stack[-size:]
            del value_stack[-size:]
        else:
            values = []
        value_stack.append(callback(values))
        state_stack.append(self.states[state_stack[-1]][name][1])


def _direct_tree(tokens: TreeTokens) -> Optional[_RawNode]:
    """The value the rule `tree` has for `tokens` (an OPERATOR up to its _TREE_END, each token
    as its `(type, value, line, column)`), built
    without the automaton: what the rules `node`, `inner` and `stage` of the grammar make,

        node: OPERATOR (_INDENT (node | inner | stage)+ _DEDENT)?
        inner: _INDENT node+ _DEDENT
        stage: STAGE_HEADER node

    (an _INDENT right after an OPERATOR opens that operator's block: Lark resolves that
    shift/reduce conflict as a shift). None when the tokens are not such a tree, or an
    operator line cannot be read: the automaton then reads them, for its result or its error.
    No recursion: an open block or inner plan is an entry of a stack."""
    # Each open block: [owner, kind, items]; kind True for a node's block, False for an inner.
    open_blocks: list = []
    root: Optional[_RawNode] = None
    previous = ""  # the type of the token before
    stage: Optional[str] = None  # the value of a STAGE_HEADER waiting for its node
    last: Optional[_RawNode] = None
    try:
        for kind, value, line, column in tokens:
            if kind == "OPERATOR":
                raw = _RawNode(read_operator_line(value, line, column)
                               if value != CUT_ROOT else _read_operator_line(value, line, column))
                if not open_blocks:
                    if root is not None:
                        return None
                    root = raw
                else:
                    block = open_blocks[-1]
                    block[2] += 1
                    if stage is not None:
                        block[0].add_stage(stage, raw)
                        stage = None
                    elif block[1]:
                        block[0].add_child(raw)
                    else:
                        block[0].add_inner((raw,))
                last = raw
            elif kind == "_INDENT":
                if previous == "OPERATOR":
                    open_blocks.append([last, True, 0])
                elif previous in ("_INDENT", "_DEDENT") and open_blocks and open_blocks[-1][1]:
                    # An inner plan among the items of the open block: its nodes go to the
                    # block's owner's inner plans.
                    open_blocks[-1][2] += 1
                    open_blocks.append([open_blocks[-1][0], False, 0])
                else:
                    return None
            elif kind == "_DEDENT":
                if not open_blocks or not open_blocks[-1][2] or stage is not None:
                    return None
                open_blocks.pop()
            elif kind == "STAGE_HEADER":
                if not open_blocks or not open_blocks[-1][1] or stage is not None:
                    return None
                stage = value
            elif kind == "_TREE_END":
                if open_blocks or root is None or stage is not None:
                    return None
                return root
            else:
                return None
            previous = kind
    except PlanSyntaxError:
        return None
    return None


def _unexpected_token(token: Token, row: Dict[str, tuple]) -> UnexpectedToken:
    return UnexpectedToken(token, {symbol for symbol in row if symbol.isupper()})


@functools.lru_cache(maxsize=None)
def _tables() -> Optional[_Tables]:
    """The tables to drive, or None where this Lark keeps them otherwise (then Lark's parser
    runs; the result is the same)."""
    try:
        return _Tables(_parser())
    except (AttributeError, KeyError, TypeError):  # pragma: no cover - another Lark layout
        return None


def parse_text(text: str, source: str = "") -> Document:
    """Parse the whole of an explain output; raise PlanSyntaxError naming `source`."""
    plan = PlanLines.from_text(text)
    # The lines joined are the text itself unless a line ended with "\r" (dropped).
    return _parse(plan, text if "\r" not in text else "\n".join(plan.lines), source, "")


def parse_lines(plan: PlanLines, source: str = "", origin: str = "") -> Document:
    """Parse one plan's lines (each knowing its line in the original file) into a Document
    whose queries carry notes on any damage read through; raise PlanSyntaxError naming
    `source` when the text cannot be read as a plan."""
    return _parse(plan, "\n".join(plan.lines), source, origin)


def _parse(plan: PlanLines, text: str, source: str, origin: str) -> Document:
    """`parse_lines(plan, source, origin)`, `text` being the plan's lines joined."""
    if "\x00" in text:
        index = text.index("\x00")
        row = text.count("\n", 0, index)
        column = index - (text.rfind("\n", 0, index) + 1)
        raise PlanSyntaxError("expected plan text, found binary data (a NUL byte)",
                              line=plan.line_number(row), column=plan.column(row, column),
                              source=source)
    lexer = _LineLexer(plan, text)
    tables = _tables()
    token = CURRENT_PLAN.set(lexer)
    try:
        document = tables.parse(lexer.chunks(), DIRECT_TREES) if tables else \
            _parser().parse(text)
    except PlanSyntaxError as error:
        raise error.located(source) from None
    except UnexpectedToken as error:
        raise _unexpected(error, plan, source) from None
    except UnexpectedInput as error:  # pragma: no cover - the line lexer raises its own errors
        raise PlanSyntaxError(str(error).splitlines()[0], line=error.line, column=error.column,
                              source=source) from None
    finally:
        CURRENT_PLAN.reset(token)
    queries = document.queries
    # Whether a detail can hold a subquery reference (damage.check_query): every detail is
    # read from these lines.
    marked = SUBQUERY_MARKS[0] in text or SUBQUERY_MARKS[1] in text
    damage = sorted(dict.fromkeys(lexer.damage), key=lambda d: d.line)  # in the order seen
    notes: List[List[str]] = [[] for _ in queries]
    starts = [query.line for query in queries]  # in printed order, so sorted
    for item in damage if queries else ():
        # The last query starting at or above the damaged line owns it.
        notes[max(bisect.bisect_right(starts, item.line) - 1, 0)].append(item.note())
    queries = tuple(
        dataclasses.replace(query, source=source, origin=origin or query.origin,
                            notes=tuple(dict.fromkeys((*query.notes, *own,
                                                       *check_query(query, plan, last, marked)))),
                            number=number)
        for number, (query, own, last) in enumerate(
            zip(queries, notes, [n == len(queries) - 1 for n in range(len(queries))]), 1)
    )
    if isinstance(document, _Codegen):
        if not queries:
            return Document(queries=(), source=source, notes=(NO_SUBTREE_NOTE,))
        queries = (one_query(queries, document.found, document.line),)
    return Document(queries=queries, source=source)


def _unexpected(error: UnexpectedToken, plan: PlanLines, source: str) -> PlanSyntaxError:
    token = error.token
    expected = sorted({EXPECTED_NAMES[name] for name in error.expected if name in EXPECTED_NAMES})
    if token.type == "$END":
        found = "the end of the text"
        last = len(plan.lines) - 1
        while last > 0 and not plan.lines[last].strip():
            last -= 1
        line, column = plan.line_number(last), 1
    else:
        found = repr(token.value.strip()[:60]) if token.value.strip() else "a blank line"
        line, column = token.line, token.column
    wanted = " or ".join(expected[:3]) if expected else "something else"
    return PlanSyntaxError(f"expected {wanted}, found {found}", line=line, column=column,
                           source=source)
