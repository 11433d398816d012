"""The joins and unions AQE's empty propagation removed without leaving an empty relation.

AQEPropagateEmptyRelation (Spark 3.2+) replaces a join by one of its sides when the other
side's query stage produced no rows and the join type lets the kept side stand alone: a
LEFT ANTI join whose right side is empty is its left side; a LEFT OUTER join whose right side
is empty is its left side with nulls for the right side's columns (a `Project`), and the
mirror for RIGHT OUTER; a FULL OUTER join keeps the side that is not empty. A `Union` drops
every empty branch (and becomes its one remaining branch when one is left). None of these
leaves an `EmptyRelation` / `LocalTableScan <empty>` in the final plan, so they are found from
both plans:

- the join is gone: no final join has its join keys and join type (Spark keeps expression
  ids through re-planning, so a join AQE kept, or switched to a broadcast or a shuffled hash
  join, keeps both);
- one side is still there and the other is not: a side is "there" when one of its anchors
  (its topmost exchanges, or its leaves where no exchange is above them) is printed in the
  final plan with the same text (plan ids aside) or paired with it by the alignment (two
  explain modes), or an exchange AQE reused stands for it (a
  `ReusedExchange` whose output the anchor's subtree makes). A side that has gone although the join
  stayed is not AQE's doing; a join both of whose sides have gone went inside a larger
  replacement (an empty relation above, or the side of another join that went).

A final plan that prints no arguments (a Spark Connect metrics tree names its operators
only) cannot show an anchor by its text: there the initial exchanges and leaves are paired
one to one with the final ones, by what their stages hold and then by name, in plan order.

The other detectors ask this too: the operators of a side that went were not removed one by
one (a partial aggregate of an empty union branch is not a one-row rewrite).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Tuple

from ...plan.align import EXPRESSION_ID, tree_expression_ids
from ...plan.model import ADAPTIVE_ROOT, Node
from ...plan.operators import JOINS, QUERY_STAGES, VENDOR_PREFIXES, VENDOR_SUFFIXES, \
    family, is_empty_relation, join_keys, join_type, parents

#: What a side's anchors are: the exchanges at the top of a query stage.
EXCHANGES = frozenset(("Exchange", "ShuffleExchange", "BroadcastExchange"))
#: The operators only AQE puts in the final plan, climbed through to a side's place.
_AQE_ONLY = frozenset((*QUERY_STAGES, "AQEShuffleRead"))
#: Join types whose removal keeps a side, by the side that must be empty -> the side kept
#: and whether nulls stand in for the empty side's columns.
_KEEPS = {
    ("LeftAnti", "right"): ("left", False),
    ("LeftOuter", "right"): ("left", True),
    ("RightOuter", "left"): ("right", True),
    ("FullOuter", "right"): ("left", True),
    ("FullOuter", "left"): ("right", True),
}


@dataclass(frozen=True)
class EmptiedPlace:
    """One place of the initial plan that an empty input took out of the final plan."""

    #: The join or Union of the initial plan that went (a Union that lost branches).
    removed: Node
    #: The sides (a join's left and right; a Union's branches) that stood empty, and the
    #: anchor (exchange) by which each is known.
    emptied: Tuple[Tuple[Node, Node], ...]
    #: How many sides or branches the operator had, and the names of the empty sides
    #: (`left`, `right`, or branch numbers from 1).
    sides: int
    names: Tuple[str, ...]
    #: The final operator now in the removed one's place, when it can be found.
    replacement: Optional[Node]
    #: A join's type, and whether nulls stand in for the empty side's columns.
    join_type: Optional[str] = None
    with_nulls: bool = False


@dataclass(frozen=True)
class EmptiedSides:
    """Every such place of one plan pair, and the ids of the initial operators inside the
    sides that went (which no other detector reads as removed one by one)."""

    places: Tuple[EmptiedPlace, ...]
    inside: FrozenSet[int]


NONE = EmptiedSides((), frozenset())


def is_vendor_name(name: str) -> bool:
    """An operator a vendor's engine (Gluten, RAPIDS, Photon, Comet) put in Spark's place."""
    # The tuple tests first (one C call each): most names neither start nor end so.
    return (name.startswith(VENDOR_PREFIXES)
            and any(name.startswith(prefix) and len(name) > len(prefix)
                    for prefix in VENDOR_PREFIXES)) \
        or (name.endswith(VENDOR_SUFFIXES)
            and any(name.endswith(suffix) and len(name) > len(suffix)
                    for suffix in VENDOR_SUFFIXES))


def anchors(side: Node) -> List[Node]:
    """The topmost exchanges of a subtree, and its leaves that no exchange is above."""
    found: List[Node] = []
    stack = [side]
    while stack:
        node = stack.pop()
        name = family(node)
        if name in EXCHANGES or not node.children:
            found.append(node)
            continue
        if node is not side and node.name == ADAPTIVE_ROOT:
            continue
        stack.extend(reversed(node.children))
    return found


def _join_key(node: Node, text) -> Tuple:
    keys = join_keys(node)
    if keys is not None:
        return ("keys", keys, join_type(node))
    return ("family", family(node), join_type(node), text(node) if family(node) not in (
        "BroadcastNestedLoopJoin",) else "")


def find_emptied_sides(pair) -> EmptiedSides:
    """`EmptiedSides` of a plan pair (`PlanPair`), computed once through `pair.shared`."""
    return pair.shared("emptied-sides", _find)


def _find(pair) -> EmptiedSides:
    if pair.initial is None:
        return NONE
    candidates = [(node, name) for node, name in zip(pair._initial_nodes,
                                                       pair._initial_families)
                  if (name in JOINS or name == "Union") and len(node.children) >= 2]
    if not candidates:
        return NONE
    finals, final_families = pair._final_nodes, pair._final_families
    if any(is_vendor_name(node.name) for node in finals):
        # A vendor's engine renames and fuses Spark's operators in the final plan: a side
        # missing by name may only be printed another way.
        return NONE
    text = pair.normalized_text
    present: Dict[str, List[Node]] = {}
    for node, name in zip(finals, final_families):
        if name in EXCHANGES or (not node.children and name not in _AQE_ONLY
                                 and not is_empty_relation(node)
                                 and not name.startswith("Reused")):
            present.setdefault(text(node), []).append(node)
    if _prints_no_arguments(present):
        bare = _matched_by_shape(pair, finals, final_families)
        where_bare = bare.get
    else:
        where_bare = None
    reused = [(node, ids) for node, ids in ((node, _reused_output(node))
                                            for node, name in zip(finals, final_families)
                                            if name.startswith("Reused")
                                            or node.name.startswith("Reused"))
              if ids]

    # The same anchors paired by the alignment, whatever the explain modes of the two plans
    # (a simple initial plan against a formatted final one prints them apart): asked only
    # once an anchor's text is not printed in the final plan.
    aligned: Optional[Dict[int, Node]] = None

    def where(anchor: Node) -> Optional[Node]:
        """The final operator printing `anchor`, or the reused exchange standing for it."""
        nonlocal aligned
        if where_bare is not None:
            return where_bare(id(anchor))
        found = present.get(text(anchor))
        if found:
            return found[0]
        if aligned is None:
            aligned = {}
            for printed in present.values():
                for final in printed:
                    counterpart = pair.initial_for(final)
                    if counterpart is not None:
                        aligned.setdefault(id(counterpart), final)
        if id(anchor) in aligned:
            return aligned[id(anchor)]
        if reused:
            ids = tree_expression_ids(anchor)
            for node, output in reused:
                if output <= ids:
                    return node
        return None

    final_joins: Dict[Tuple, int] = {}
    for node, name in zip(finals, final_families):
        if name in JOINS:
            key = _join_key(node, text)
            final_joins[key] = final_joins.get(key, 0) + 1
    paired = {id(initial) for initial, _ in pair.sort_merge_joins}
    places: List[EmptiedPlace] = []
    inside: set = set()
    final_parents: Optional[Dict[int, Node]] = None
    for node, name in candidates:
        if id(node) in inside:
            continue
        sides = node.children
        seen = []
        for side in sides:
            side_anchors = anchors(side)
            there = [final for final in map(where, side_anchors) if final is not None]
            seen.append((side, side_anchors, there))
        gone = [(side, side_anchors) for side, side_anchors, there in seen if not there]
        kept = [(side, there) for side, _, there in seen if there]
        if not gone or not kept:
            continue
        if name in JOINS:
            key = _join_key(node, text)
            if id(node) in paired or final_joins.get(key, 0) > 0:
                if final_joins.get(key, 0) > 0:
                    final_joins[key] -= 1
                continue
            if len(sides) != 2:
                continue
            which = "left" if gone[0][0] is sides[0] else "right"
            how = join_type(node)
            keeps = _KEEPS.get((how or "", which))
            names: Tuple[str, ...] = (which,)
            with_nulls = keeps[1] if keeps else False
        else:
            how, with_nulls = None, False
            names = tuple(str(sides.index(side) + 1) for side, _ in gone)
        if final_parents is None:
            final_parents = parents(pair.final)
        replacement = _in_place(pair, node, kept, final_parents)
        for side, _ in gone:
            inside.update(id(below) for below in side.walk(inner=False))
        places.append(EmptiedPlace(
            removed=node, emptied=tuple((side, side_anchors[0]) for side, side_anchors in gone),
            sides=len(sides), names=names, replacement=replacement, join_type=how,
            with_nulls=with_nulls))
    if not places:
        return NONE
    return EmptiedSides(tuple(places), frozenset(inside))


def _prints_no_arguments(present: Dict[str, List[Node]]) -> bool:
    """Whether the final plan's exchanges and leaves print no arguments at all (a Spark
    Connect metrics tree names its operators only), so none can be told apart by text."""
    return bool(present) and all(not node.args and not node.details
                                 for printed in present.values() for node in printed)


def _stage_shape(anchor: Node) -> Tuple[str, Tuple[str, ...]]:
    """What an operator's own stage holds, by names only: its family and the families
    below it down to the next exchange, without those AQE adds, removes or switches
    (query stages, shuffle reads, joins, sorts, broadcasts)."""
    below: List[str] = []
    stack = list(anchor.children)
    while stack:
        node = stack.pop()
        name = family(node)
        if name in EXCHANGES or name.startswith("Reused") or node.name == ADAPTIVE_ROOT:
            continue
        if name not in _AQE_ONLY and name not in JOINS and name != "Sort":
            below.append(name)
        stack.extend(node.children)
    return family(anchor), tuple(sorted(below))


def _matched_by_shape(pair, finals: List[Node], final_families: List[str]
                      ) -> Dict[int, Node]:
    """Initial exchanges and leaves paired one to one with final ones where the final plan
    prints no arguments: first by the shape of their stages, then by family alone, each in
    plan order; a reused exchange stands for any exchange. An initial operator left unpaired
    is not printed in the final plan."""
    wanted = [node for node, name in zip(pair._initial_nodes, pair._initial_families)
              if name in EXCHANGES or (not node.children and name not in _AQE_ONLY)]
    offered = [node for node, name in zip(finals, final_families)
               if name in EXCHANGES or name.startswith("Reused")
               or (not node.children and name not in _AQE_ONLY
                   and not is_empty_relation(node))]
    matched: Dict[int, Node] = {}
    used: set = set()
    for key in (_stage_shape, lambda node: _family_or_exchange(family(node))):
        free: Dict[object, List[Node]] = {}
        for node in offered:
            if id(node) not in used:
                free.setdefault(key(node), []).append(node)
        for node in wanted:
            if id(node) in matched:
                continue
            candidates = free.get(key(node))
            if candidates:
                final = candidates.pop(0)
                used.add(id(final))
                matched[id(node)] = final
    return matched


def _family_or_exchange(name: str) -> str:
    """A family, with every exchange (reused or not) as one: a reused exchange names no
    more than that it stands for an exchange."""
    return "Exchange" if name in EXCHANGES or name.startswith("Reused") else name


def _reused_output(node: Node) -> FrozenSet[str]:
    """The expression ids of what a reused exchange outputs: its `Output` (formatted mode) or
    the leading `[...]` of its arguments (`ReusedExchange [k#1L, v#2L], Exchange ...`)."""
    output = node.details.get("Output")
    if output is None:
        args = node.args.lstrip()
        if not args.startswith("["):
            return frozenset()
        output = args[:args.find("]") + 1]
    return frozenset(EXPRESSION_ID.findall(output))


def _in_place(pair, removed: Node, kept: List[Tuple[Node, List[Node]]],
              above: Dict[int, Node]) -> Optional[Node]:
    """The final operator standing where `removed` stood: from the kept side's anchor in the
    final plan, up through what AQE put in (query stages, shuffle reads) and through operators
    that stand for nothing outside `removed` (the nulls of an outer join's projection, the
    kept side's own operators), to below the first operator that stands for one above it.
    For a Union that kept several branches, the final Union above them."""
    below = {id(node) for node in removed.walk(inner=False)}
    tops = []
    for _, there in kept:
        if not there:
            continue
        node = there[0]
        while True:
            parent = above.get(id(node))
            if parent is None or family(parent) == "ResultQueryStage":
                break
            if family(parent) not in _AQE_ONLY:
                counterpart = pair.initial_for(parent)
                if counterpart is not None and id(counterpart) not in below:
                    if not (family(parent) == "Project" and "null" in parent.text
                            and family(counterpart) == "Project"):
                        break
            node = parent
        tops.append(node)
    if not tops:
        return None
    if len(tops) == 1:
        return tops[0]
    # Several branches kept: the operator above them all (the Union that kept them).
    ancestors = []
    node = tops[0]
    while node is not None:
        ancestors.append(node)
        node = above.get(id(node))
    for candidate in ancestors:
        if all(_is_under(top, candidate, above) for top in tops[1:]):
            return candidate
    return None


def _is_under(node: Node, ancestor: Node, above: Dict[int, Node]) -> bool:
    while node is not None:
        if node is ancestor:
            return True
        node = above.get(id(node))
    return False
