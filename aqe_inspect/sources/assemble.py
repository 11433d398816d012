"""Put the plans of one text together into the queries a person ran.

A driver log can show one query several times: `df.explain()` before the action
(`isFinalPlan=false`), AQE's own `Plan changed:` and `Final plan:` messages while it runs,
and `df.explain()` again after it, maybe in two modes. Reporting each would count every
rewrite twice or more. So:

* an explain printed again (another mode, or the same) is the same query: reported once;
* an explain before the action and one after it, of the same plan, are paired: the one
  after is reported, with a note;
* AQE's messages about a plan an explain after the action already shows add nothing;
* AQE's messages about a plan no explain shows become a query of their own: its final plan
  is `Final plan:`, its initial plan the explain before the action, else the plan before
  AQE's first logged re-planning.

Two plans are the same query when their trees have the same shape (operator families,
whatever the explain mode) and share most of their expression ids (`k#12L`): Spark keeps
those for the life of a query, and two queries of one session never share them.

One query run twice (the same DataFrame built again under other settings, a job run again)
is two executions, and both are reported. Prints of the same query are one execution only
when nothing tells them apart: the same plan ids (`[plan_id=47]`, numbered from one counter
of the driver for every operator it builds, so a plan built again prints other ones), the
same decisions where AQE decides (`adaptive_marks`: join strategies, `skew=true`, shuffle
reads' modes, empty relations), and the same application (`runs`: two applications' logs
joined count their ids from the same numbers). Every merge is a note naming both lines and
its evidence; a run told apart from an earlier print says so too.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_right
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from ..plan.align import adaptive_marks, shape, tree_expression_ids, tree_plan_ids, tree_text
from ..plan.model import ADAPTIVE_ROOT, Node, Query
from .extract import AQE_AFTER, AQE_BEFORE, AQE_FINAL, EXPLAIN

#: Share of the smaller plan's expression ids the other must hold to be the same query.
SAME_QUERY = 0.5


def _overlap(a: FrozenSet[str], b: FrozenSet[str]) -> float:
    if not a or not b:
        return 1.0 if a == b else 0.0
    return len(a & b) / min(len(a), len(b))


class _Plan:
    """A tree with what comparing it needs, computed once (its expression ids when first
    asked: most trees are told apart by their shape alone)."""

    def __init__(self, root: Node):
        self.root = root
        self.shape = shape(root)
        self._ids: Optional[FrozenSet[str]] = None
        self._plan_ids: Optional[FrozenSet[str]] = None
        self._marks: Optional[Tuple[str, ...]] = None

    def _read_ids(self) -> None:
        """Both id sets, from one making of the tree's texts (`tree_text`), not kept."""
        text = tree_text(self.root)
        self._ids = tree_expression_ids(self.root, text)
        self._plan_ids = tree_plan_ids(self.root, text)

    @property
    def ids(self) -> FrozenSet[str]:
        if self._ids is None:
            self._read_ids()
        return self._ids  # type: ignore[return-value]

    @property
    def plan_ids(self) -> FrozenSet[str]:
        if self._plan_ids is None:
            self._read_ids()
        return self._plan_ids  # type: ignore[return-value]

    @property
    def marks(self) -> Tuple[str, ...]:
        if self._marks is None:
            self._marks = adaptive_marks(self.root)
        return self._marks

    def same(self, other: "_Plan", shaped: bool = True) -> bool:
        """The same query (maybe another execution of it). A tree that prints no expression
        id where its other print does (4.x's `EmptyRelation` over the logical plan it
        replaced, whose simple print names none) is the same by its plan ids, when both
        print the same ones."""
        if shaped and self.shape != other.shape:
            return False
        if (not self.ids or not other.ids) and self.plan_ids and \
                self.plan_ids == other.plan_ids:
            return True
        return _overlap(self.ids, other.ids) >= SAME_QUERY

    def apart(self, other: "_Plan", ids_decide: bool = False) -> str:
        """Why `other`, of the same query, is another execution of it; "" when it may be
        this one printed again. Plan ids are compared as sets one of which holds the other
        (a codegen-mode print shows only some of them). With `ids_decide` (the log says
        where each application starts, so both are of one driver), plan ids both print
        decide alone: one driver numbers the operators of two executions apart."""
        mine, theirs = self.plan_ids, other.plan_ids
        if mine and theirs:
            if not (mine <= theirs or theirs <= mine):
                return "other plan ids"
            if ids_decide:
                return ""
        if self.marks != other.marks:
            for was, now in zip(self.marks, other.marks):
                if was != now:
                    return f"AQE decided otherwise: '{now}' where it printed '{was}'"
            return "AQE decided otherwise: " + (
                f"'{other.marks[len(self.marks)]}' added" if len(other.marks) > len(self.marks)
                else f"'{self.marks[len(other.marks)]}' gone")
        return ""

    def evidence(self, other: "_Plan") -> str:
        """What shows `other` is this execution printed again."""
        if self.plan_ids and other.plan_ids:
            return "the same plan ids"
        return "the same operators and expression ids"


def _adaptive_finals(query: Query, plan_of=_Plan) -> List[_Plan]:
    """The final (current) trees of every adaptive plan the query prints."""
    trees = [query.root, *query.subquery_trees()]
    return [plan_of(node.children[0]) for tree in trees for node in tree.walk()
            if node.is_adaptive_root and node.children]


class _Plans(dict):
    """`_Plan`s by the identity of their tree: a tree compared several times (a query's
    final tree, the same tree under the adaptive root built for it) is looked at once. Holds
    the trees, so an id stays theirs."""

    def __call__(self, root: Node) -> _Plan:
        plan = self.get(id(root))
        if plan is None:
            plan = self[id(root)] = _Plan(root)
        return plan


class _Index:
    """Plans kept by shape and by expression id, to find those that may be `same` as another
    without comparing it with every one (a long log holds thousands of plans): whatever it
    does not return cannot be the same, so the checks made on what it returns, in order,
    decide as comparing with every plan would."""

    def __init__(self) -> None:
        self.by_shape: Dict[tuple, List[int]] = {}
        self.by_id: Dict[str, List[int]] = {}
        self.no_ids: List[int] = []
        #: By plan ids, for the plans whose own print or another names no expression id
        #: (`_Plan.same`).
        self.by_plan_ids: Dict[FrozenSet[str], List[int]] = {}

    def add(self, key: int, plan: _Plan, shape_too: bool = True, ids_too: bool = True) -> None:
        if shape_too:
            self.by_shape.setdefault(plan.shape, []).append(key)
        if ids_too:
            if not plan.ids:
                self.no_ids.append(key)
            for found in plan.ids:
                self.by_id.setdefault(found, []).append(key)
            if plan.plan_ids:
                self.by_plan_ids.setdefault(plan.plan_ids, []).append(key)

    def remove(self, key: int, plan: _Plan) -> None:
        """Take out what `add(key, plan, shape_too=False)` put in."""
        if not plan.ids:
            self.no_ids.remove(key)
        for found in plan.ids:
            self.by_id[found].remove(key)
        if plan.plan_ids:
            self.by_plan_ids[plan.plan_ids].remove(key)

    def shaped(self, plan: _Plan) -> List[int]:
        """The keys of the plans of `plan`'s shape, in the order they were added."""
        return self.by_shape.get(plan.shape, [])

    def sharing(self, plan: _Plan) -> set:
        """The keys of the plans sharing an expression id with `plan` (or, when it has none,
        those with none): every plan `same(plan, shaped=False)` can be true of."""
        found: set = set(self.no_ids) if not plan.ids else set()
        for expression in plan.ids:
            found.update(self.by_id.get(expression, ()))
        if plan.plan_ids:
            found.update(self.by_plan_ids.get(plan.plan_ids, ()))
        return found


def assemble(items: List[Tuple[Query, str]], runs: Sequence[int] = ()) -> List[Query]:
    """The queries to report, in order; what was put together is noted on them. `runs`: the
    lines where an application starts (`Submitted application:`), in order; plans of two
    applications are never one execution."""
    reported: List[Query] = []
    plans: Dict[int, Tuple[Optional[_Plan], _Plan]] = {}  # id(query) -> (initial, final)
    plan_of = _Plans()  # one _Plan per tree
    # Notes for queries already reported, by id(query): added when the list is final.
    later_notes: Dict[int, List[str]] = {}

    def run_of(query: Query) -> int:
        return bisect_right(runs, query.line)

    # Where the log places each query's run, by id(query): [ran_from, ended_by] (Query's
    # fields; 0 while it does not): its plan printed before the action, its end shown.
    spans: Dict[int, List[int]] = {}

    def shown(key: int, line: int, ended: Optional[bool]) -> None:
        """A print of the query `key` at `line`: one that shows it ended (`ended`: its plan
        printed after the action, AQE's `Final plan:`), else its plan printed before the
        action (None: not adaptive, no run to place)."""
        if ended is None or not line:
            return
        span = spans.setdefault(key, [0, 0])
        at = 1 if ended else 0
        if not span[at] or line < span[at]:
            span[at] = line

    def moved(old: Query, new: Query) -> None:
        """`new` replaces `old`: it takes over its span."""
        span = spans.pop(id(old), None)
        if span is not None:
            for line, ended in ((span[0], False), (span[1], True)):
                shown(id(new), line, ended)

    trusted = bool(runs)  # plan ids decide alone within one application (`_Plan.apart`)

    def add_note(query: Query, note: str) -> Query:
        updated = dataclasses.replace(query, notes=(*query.notes, note))
        plans[id(updated)] = plans.pop(id(query))
        moved(query, updated)
        return updated

    # The explains: each is compared only with the reported ones it may match (same final
    # shape and mode flags; or printed before the action with the same initial shape), in
    # the order they were reported, as comparing with each would.
    by_final: Dict[tuple, List[int]] = {}    # (run, is_final_plan, adaptive, shape) -> indexes
    by_initial: Dict[tuple, List[int]] = {}  # (run, initial shape) -> indexes (isFinalPlan=false)

    # And by expression id: a plan can only be `same` as one sharing an id with it (or, with
    # none, one with none), so those of the shape that share none are not compared (a long
    # log holds the same shapes many times over, each run with its own ids).
    final_ids, initial_ids = _Index(), _Index()

    def index(at: int, query: Query, initial: Optional[_Plan], final: _Plan) -> None:
        run = run_of(query)
        by_final.setdefault((run, query.is_final_plan, query.adaptive, final.shape),
                            []).append(at)
        final_ids.add(at, final, shape_too=False)
        if query.is_final_plan is False and initial is not None:
            by_initial.setdefault((run, initial.shape), []).append(at)
            initial_ids.add(at, initial, shape_too=False)

    def unindex(at: int, query: Query, initial: Optional[_Plan], final: _Plan) -> None:
        run = run_of(query)
        by_final[(run, query.is_final_plan, query.adaptive, final.shape)].remove(at)
        final_ids.remove(at, final)
        if query.is_final_plan is False and initial is not None:
            by_initial[(run, initial.shape)].remove(at)
            initial_ids.remove(at, initial)

    for query, role in items:
        if role != EXPLAIN:
            continue
        initial = plan_of(query.initial) if query.initial is not None else None
        final = plan_of(query.final)
        run = run_of(query)
        # (Those of by_final can only be the same plan printed again, those of by_initial
        # only the same query printed before its action: each is asked for its own ids.)
        shared = final_ids.sharing(final)
        candidates = {at for at in by_final.get(
            (run, query.is_final_plan, query.adaptive, final.shape), ()) if at in shared}
        if query.is_final_plan is True and initial is not None:
            shared = initial_ids.sharing(initial)
            candidates.update(at for at in by_initial.get((run, initial.shape), ())
                              if at in shared)
        told_apart = ""  # why this print is not an earlier one of the same query again
        for index_at in sorted(candidates):
            earlier = reported[index_at]
            earlier_initial, earlier_final = plans[id(earlier)]
            if earlier.is_final_plan == query.is_final_plan and earlier_final.same(final) and \
                    (earlier.adaptive == query.adaptive):
                why = earlier_final.apart(final, trusted) or (
                    earlier_initial.apart(initial, trusted)
                    if earlier_initial is not None and initial is not None else "")
                if why:
                    told_apart = told_apart or f"line {earlier.line} run again ({why})"
                    continue
                evidence = earlier_final.evidence(final)
                if earlier_initial is not None and initial is not None and \
                        not (earlier_final.plan_ids and final.plan_ids) and \
                        earlier_initial.plan_ids and initial.plan_ids:
                    evidence = "the same plan ids in the initial plan"
                reported[index_at] = add_note(
                    earlier, f"line {query.line}: the same plan is printed again "
                    f"({query.mode} mode; {evidence} as line {earlier.line})")
                shown(id(reported[index_at]), query.line, query.is_final_plan)
                break
            if earlier.is_final_plan is False and query.is_final_plan is True and \
                    earlier_initial is not None and initial is not None and \
                    earlier_initial.same(initial):
                why = earlier_initial.apart(initial, trusted)
                if why:
                    told_apart = told_apart or f"line {earlier.line} run again ({why})"
                    continue
                unindex(index_at, earlier, earlier_initial, earlier_final)
                plans.pop(id(earlier))
                query = dataclasses.replace(query, notes=(
                    *query.notes, *_apart_note(query, told_apart),
                    f"line {earlier.line}: the same query printed before its "
                    f"action (isFinalPlan=false; {earlier_initial.evidence(initial)} in the "
                    f"initial plan as line {query.line})"))
                plans[id(query)] = (initial, final)
                moved(earlier, query)
                shown(id(query), query.line, True)
                reported[index_at] = query
                index(index_at, query, initial, final)
                break
        else:
            if told_apart:
                query = dataclasses.replace(query, notes=(
                    *query.notes, *_apart_note(query, told_apart)))
            plans[id(query)] = (initial, final)
            shown(id(query), query.line, query.is_final_plan)
            index(len(reported), query, initial, final)
            reported.append(query)

    # The final plans the reported explains show, each with its query and run.
    covered: List[_Plan] = []
    covered_by: List[Tuple[int, int, int]] = []  # (id(query), run, line)
    for query in reported:
        if query.is_final_plan:
            for plan in _adaptive_finals(query, plan_of):
                covered.append(plan)
                covered_by.append((id(query), run_of(query), query.line))
    covered_index = _Index()
    for number, plan in enumerate(covered):
        covered_index.add(number, plan)
    explained = {id(query) for query in reported}  # the explains' queries, not AQE's
    taken: set = set()  # the covered plans a `Final plan:` message was found for
    changes = [(query, role) for query, role in items if role in (AQE_BEFORE, AQE_AFTER)]
    change_plans = {id(query): plan_of(query.root) for query, _ in changes}
    change_index = _Index()
    for number, (query, _) in enumerate(changes):
        change_index.add(number, change_plans[id(query)], shape_too=False)
    # The reported explains printed before their action, by the expression ids of their
    # initial plans (id(query) keys; those popped are dropped from `waiting`).
    waiting = {id(query): query for query in reported
               if query.is_final_plan is False and plans[id(query)][0] is not None}
    waiting_index = _Index()
    for key, query in waiting.items():
        waiting_index.add(key, plans[key][0], shape_too=False)  # type: ignore[arg-type]
    claimed = set()
    for query, role in items:
        if role != AQE_FINAL:
            continue
        final = plan_of(query.root)
        run = run_of(query)
        mine = [changes[number] for number in sorted(change_index.sharing(final))]
        mine = [(q, r) for q, r in mine if id(q) not in claimed and q.line <= query.line
                and run_of(q) == run and final.same(change_plans[id(q)], shaped=False)]
        # Both sides of a message one of whose sides is this plan's (a 4.x EmptyRelation
        # over its logical plan names no expression id of the side before it).
        lines = {q.line for q, _ in mine}
        taken_now = {id(q) for q, _ in mine}
        mine += [(q, r) for q, r in changes if q.line in lines and id(q) not in claimed
                 and id(q) not in taken_now]
        order = {id(q): at for at, (q, _) in enumerate(changes)}
        mine.sort(key=lambda item: order[id(item[0])])
        claimed.update(id(q) for q, _ in mine)
        # AQE logs `Final plan:` once per adaptive plan it runs: an explain's plan takes one
        # such message (the first after it was printed is not its own: prefer the one
        # printed after the message, as an explain after the action is), and two messages
        # are two executions.
        shared = covered_index.sharing(final)
        fits = [number for number in covered_index.shaped(final)
                if number in shared and number not in taken and covered_by[number][1] == run
                and covered_by[number][0] in explained and covered[number].same(final)
                and not covered[number].apart(final, trusted)]
        after = [number for number in fits if covered_by[number][2] > query.line]
        printed = min(after, key=lambda n: covered_by[n][2]) if after else \
            max(fits, key=lambda n: covered_by[n][2]) if fits else None
        if printed is not None:  # an explain after the action shows this plan already
            taken.add(printed)
            owner = covered_by[printed][0]
            later_notes.setdefault(owner, []).append(
                f"line {query.line}: AQE's 'Final plan' log message shows this plan again "
                f"({covered[printed].evidence(final)} as line {covered_by[printed][2]})")
            shown(owner, query.line, True)
            continue
        initial_tree, how = None, ""
        begun: Optional[List[int]] = None  # the span of the explain printed before it
        sharing = [key for key in waiting_index.sharing(final) if key in waiting]
        if sharing:
            place = {id(earlier): at for at, earlier in enumerate(reported)}
            for index_at in sorted(place[key] for key in sharing):
                earlier = reported[index_at]
                earlier_initial = plans[id(earlier)][0]
                if earlier.is_final_plan is False and earlier_initial is not None and \
                        earlier.line < query.line and run_of(earlier) == run and \
                        final.same(earlier_initial, shaped=False):
                    initial_tree = earlier.initial
                    how = f"the explain at line {earlier.line}, printed before the action"
                    waiting.pop(id(earlier), None)
                    plans.pop(id(reported.pop(index_at)))
                    begun = spans.pop(id(earlier), None)
                    break
        befores = [q for q, r in mine if r == AQE_BEFORE]
        if initial_tree is None and befores:
            initial_tree = befores[0].root
            how = f"the plan before AQE's first logged re-planning, line {befores[0].line}"
        note = (f"line {query.line}: read from AQE's 'Final plan' log message; its initial "
                f"plan is {how}" if how else
                f"line {query.line}: read from AQE's 'Final plan' log message, with no "
                "initial plan in the log")
        built = _aqe_query(query, query.root, initial_tree, True, note)
        plans[id(built)] = (None, final)
        shown(id(built), query.line, True)
        if begun is not None:
            shown(id(built), begun[0], False)
        reported.append(built)
        covered_index.add(len(covered), final)
        covered.append(final)
        covered_by.append((id(built), run, built.line))
    # Re-planning AQE logged for a plan that never logged its final plan (the log was cut, or
    # the query failed): the latest state it logged.
    pending = [(q, r) for q, r in changes if id(q) not in claimed]
    while pending:
        first, _ = pending[0]
        run = run_of(first)
        # The two sides of one message are one plan's re-planning, whatever they share (a
        # 4.x EmptyRelation over its logical plan names no expression id of the old side).
        group = [(q, r) for q, r in pending if run_of(q) == run and
                 (q.line == first.line or
                  change_plans[id(first)].same(change_plans[id(q)], False))]
        pending = [item for item in pending if item not in group]
        after = [q for q, r in group if r == AQE_AFTER]
        last = after[-1] if after else group[-1][0]
        if any(covered_by[number][1] == run and change_plans[id(last)].same(plan, shaped=False)
               for number, plan in enumerate(covered)):
            continue
        note = (f"line {first.line}: read from AQE's 'Plan changed' log messages; no final "
                "plan was logged for it, so this is the latest plan AQE logged")
        built = _aqe_query(last, last.root, first.root if first is not last else None, False,
                           note)
        plans[id(built)] = (None, change_plans[id(last)])
        reported.append(built)
    # A subquery's plan logs its own `Final plan:`, and the plan of the query around it prints
    # it again, nested: it is reported there.
    nested: Dict[tuple, List[Tuple[int, int, _Plan]]] = {}
    for query in reported:
        for plan in _adaptive_finals(query, plan_of)[1 if query.root.is_adaptive_root else 0:]:
            nested.setdefault(plan.shape, []).append((id(query), run_of(query), plan))
    kept = []
    for query in reported:
        if query.origin == "AQE log":
            final = plans[id(query)][1]
            run = run_of(query)
            owner = next((owner for owner, owner_run, plan in nested.get(final.shape, ())
                          if owner != id(query) and owner_run == run and plan.same(final)
                          and not plan.apart(final, trusted)), None)
            if owner is not None:
                later_notes.setdefault(owner, []).append(
                    f"line {query.line}: the plan AQE logged there is printed nested in this "
                    "query (a subquery's) and reported here")
                continue
        kept.append(query)
    if later_notes or spans:
        kept = [_finished(query, later_notes.get(id(query), ()), spans.get(id(query)))
                for query in kept]
    kept.sort(key=lambda q: q.line)
    return kept


def _finished(query: Query, notes: Sequence[str], span: Optional[List[int]]) -> Query:
    """`query` with the notes said of it later and where it was shown running."""
    changes: Dict[str, object] = {}
    if notes:
        changes["notes"] = (*query.notes, *notes)
    if span is not None and (span[0], span[1]) != (query.ran_from, query.ended_by):
        changes["ran_from"], changes["ended_by"] = span
    return dataclasses.replace(query, **changes) if changes else query


def _apart_note(query: Query, told_apart: str) -> Tuple[str, ...]:
    """The note of a print told apart from an earlier one of the same query (none when
    `told_apart` is empty)."""
    if not told_apart:
        return ()
    return (f"line {query.line}: the query printed at {told_apart}: reported on its own",)


def _aqe_query(query: Query, final: Node, initial: Optional[Node], is_final: bool,
               note: str) -> Query:
    """A query for a plan AQE logged: its tree under an adaptive root, as explain prints it."""
    root = Node(name=ADAPTIVE_ROOT, args=f"isFinalPlan={str(is_final).lower()}",
                children=(final,), initial=initial, is_final_plan=is_final, line=query.line)
    return dataclasses.replace(query, root=root, mode="simple", origin="AQE log",
                               notes=(*query.notes, note))
