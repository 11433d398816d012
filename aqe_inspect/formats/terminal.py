"""Output for people: operator trees and rewrite tables, drawn line by line.

Plain text when standard output is not a terminal or NO_COLOR is set, 200 columns wide (read
by people and tools alike: wide enough not to cut operator lines); on a terminal, ANSI styles
at the terminal's width. The look is rich's (tree guides `├── `, a heavy-headed table, words
wrapped to the width); it is drawn here because rich builds a whole tree of objects and
measures it, which costs seconds per megabyte of plan and loses the nodes of a tree deeper
than the width allows. Here every tree is walked with an explicit stack, each line is written
once, and the time is linear in what is printed.

What a plan or a file name holds is printed as given: no markup is read in it (rich draws
nothing here, so `[bold]` is text), and `Screen` escapes every run of text it is given, as
`errors.printable` does (control and bidirectional characters as `\\x1b`, `\\u202e`; a newline as
`\\n`), so no input can restyle, rewrite or reorder the terminal, nor make a header or an
operator's label more than one line. The writers here and in formats/text.py need not escape
anything themselves: every line goes through `Screen.lines` or `Screen.styled`.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
from typing import Dict, Iterable, List, Optional, Sequence, TextIO, Tuple

from . import views
from ..errors import printable
from ..plan.model import Document, Node, number_of, title
from ..plan.operators import is_shuffle_read

#: The width of output that is not a terminal (a pipe, a file, a CI log) when COLUMNS does not
#: say: 100 columns. Wide enough for a plan's operator lines 12 levels deep without folding
#: them, and what a CI log viewer or a code review shows without scrolling sideways; 80 (the
#: classic terminal) folds most operator lines of a real plan, 200 (the old default) runs off
#: every viewer.
PLAIN_WIDTH = 100
#: A terminal narrower than this (or a COLUMNS that is not a number) is taken as FALLBACK_WIDTH.
MIN_WIDTH = 40
FALLBACK_WIDTH = 80
#: `--width` below this is refused: no tree can be drawn in fewer columns.
SMALLEST_WIDTH = 20
#: The fewest columns a tree keeps for an operator's label: deeper than that, the guides of
#: the levels above are shown as a depth (`57:`) and the last few levels.
MIN_LABEL_WIDTH = 32
#: The same, in one column of a side-by-side view.
MIN_COLUMN_LABEL_WIDTH = 12
#: A side-by-side column draws two columns a level while this many stay for the labels
#: of its deepest operators, else one.
ROOMY_COLUMN = 24

#: A run of text and its style: names from STYLES separated by spaces, or "" for none.
Span = Tuple[str, str]

STYLES = {"bold": "1", "dim": "2", "italic": "3", "reverse": "7", "green": "32",
          "yellow": "33", "magenta": "35", "cyan": "36", "red": "31"}

#: Tree guides (space, continue, fork, end), three columns a level as Spark draws its own, and
#: their ASCII form for an output encoding without box-drawing characters; the two-column
#: ones of a side-by-side view.
GUIDES = ("   ", "│  ", "├─ ", "└─ ")
ASCII_GUIDES = ("   ", "|  ", "+- ", "`- ")
NARROW_GUIDES = ("  ", "│ ", "├ ", "└ ")
ASCII_NARROW_GUIDES = ("  ", "| ", "+ ", "` ")
TIGHT_GUIDES = (" ", "│", "├", "└")
ASCII_TIGHT_GUIDES = (" ", "|", "+", "`")
SPACE, CONTINUE, FORK, END = range(4)

#: The indent of a header's or a note's lines after its first, when it is wider than the
#: width: text from an input (a path, an application's name) that wraps starts no line of its
#: own, where it could pass for a line of ours (`Query 2: ...`, `PASS ...`).
HANG = "  "

#: Styles of what a view highlights.
MARKED = "reverse green"
MARK_NOTE = "green"


def cell_width(text: str) -> int:
    """Terminal cells `text` takes (wide East Asian characters take two)."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


_WORD = re.compile(r"\s*\S+\s*")


def wrap(text: str, width: int, cut: bool = False) -> List[Tuple[int, int]]:
    """Where to cut one line of `text` (no newline) into lines of at most `width` cells, as
    (start, end) offsets, cutting at spaces. A word (with the spaces after it) goes on the
    current line if its letters fit, else starts a new line; a word wider than a line stands
    alone on its line and runs past the width (cut, it would read as two words: a path in a
    header stays whole), unless `cut`: in a column of a tree, where the line is only what the
    guides leave, such a word is cut a line's width at a time. Spaces ending a line are kept
    while they fit."""
    if width < 1 or cell_width(text) <= width:
        return [(0, len(text))]
    starts = [0]
    used = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group()
        letters = cell_width(word.rstrip())
        if letters <= width - used:
            used += cell_width(word)
        else:
            if used and start:
                starts.append(start)
            used = cell_width(word)
            if cut and letters > width:
                used = 0
                for offset in range(start, start + len(word.rstrip())):
                    cells = cell_width(text[offset])
                    if used + cells > width and offset > starts[-1]:
                        starts.append(offset)
                        used = 0
                    used += cells
                used += cell_width(word) - letters
    lines = []
    for start, end in zip(starts, [*starts[1:], len(text)]):
        if cell_width(text[start:end]) > width:
            letters_end = start + len(text[start:end].rstrip())
            end = letters_end + max(0, width - cell_width(text[start:letters_end]))
        lines.append((start, end))
    return lines


class Screen:
    """Where output for people goes: a stream, its width, colours or not, box characters or
    ASCII. Lines are gathered and written in blocks."""

    def __init__(self, stream: Optional[TextIO] = None, width: Optional[int] = None):
        self.stream = stream if stream is not None else sys.stdout
        tty = _isatty(self.stream)
        self.color = tty and not os.environ.get("NO_COLOR") and \
            os.environ.get("TERM", "") != "dumb"
        self.width = width if width is not None else output_width(self.stream, tty)
        encoding = (getattr(self.stream, "encoding", None) or "utf-8").lower()
        self.unicode = encoding.startswith("utf")
        self.guides = GUIDES if self.unicode else ASCII_GUIDES
        self.narrow_guides = NARROW_GUIDES if self.unicode else ASCII_NARROW_GUIDES
        self.tight_guides = TIGHT_GUIDES if self.unicode else ASCII_TIGHT_GUIDES
        self._pending: List[str] = []
        self._size = 0

    # ---- writing -----------------------------------------------------------------------------
    def write_line(self, text: str) -> None:
        self._pending.append(text)
        self._size += len(text)
        if self._size > 1 << 16:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self.stream.write("\n".join(self._pending) + "\n")
            self._pending, self._size = [], 0

    def styled(self, spans: Sequence[Span], start: int = 0, end: Optional[int] = None) -> str:
        """The text of `spans`, escaped (`escaped`), from offset `start` to `end` of the
        escaped text, with ANSI styles on a terminal."""
        return self._styled(escaped(spans), start, end)

    def _styled(self, spans: Sequence[Span], start: int = 0, end: Optional[int] = None) -> str:
        runs: List[List[str]] = []  # [style, text], neighbours of one style merged
        offset = 0
        for text, style in spans:
            low = max(start - offset, 0)
            high = len(text) if end is None else min(end - offset, len(text))
            offset += len(text)
            if low >= high:
                continue
            if runs and runs[-1][0] == style:
                runs[-1][1] += text[low:high]
            else:
                runs.append([style, text[low:high]])
        if not self.color:
            return "".join(text for _, text in runs)
        return "".join(
            f"\x1b[{';'.join(STYLES[name] for name in style.split())}m{text}\x1b[0m"
            if style else text for style, text in runs)

    def lines(self, spans: Sequence[Span], width: int, cut: bool = False
              ) -> List[Tuple[str, int]]:
        """`spans`, escaped (`escaped`: one line), wrapped to `width` (`cut`: a word wider
        than that cut, as `wrap` says): each line styled, with the cells its text takes."""
        spans = escaped(spans)
        line = "".join(text for text, _ in spans)
        out: List[Tuple[str, int]] = []
        for start, end in wrap(line, max(1, width), cut):
            end = start + len(line[start:end].rstrip())  # no spaces ending a line
            out.append((self._styled(spans, start, end), cell_width(line[start:end])))
        return out

    def paragraph(self, spans: Sequence[Span], first: str = "", rest: str = "") -> None:
        """Print text wrapped to the width, its first line after `first`, the others after
        `rest` (a hanging indent)."""
        self.block(spans, first, rest, self.width - max(cell_width(first), cell_width(rest)))

    def block(self, spans: Sequence[Span], first: str, rest: str, width: int,
              cut: bool = False) -> None:
        """`spans` wrapped to `width`, the first line after `first`, the others after `rest`
        (`cut`: a word wider than `width` cut, as in a tree's column)."""
        prefix = first
        for text, _ in self.lines(spans, width, cut):
            self.write_line(prefix + text)
            prefix = rest

    # ---- trees -------------------------------------------------------------------------------
    def tree(self, root: Node, highlight: Optional[Dict[int, str]] = None) -> None:
        """The tree under `root`, drawn with guides; `highlight` maps id(node) to a note."""
        top = ("node", root, highlight)
        self.block(self._item_label(top), "", "", self.width, cut=True)
        stack: List[Tuple[List[tuple], int]] = [(_item_children(top), 0)]
        trail: List[str] = []  # the guide of each open level: continue or space
        size = len(self.guides[0])
        levels = max(3, (self.width - MIN_LABEL_WIDTH) // size)
        while stack:
            items, index = stack[-1]
            if index == len(items):
                stack.pop()
                if trail:
                    trail.pop()
                continue
            stack[-1] = (items, index + 1)
            last = index == len(items) - 1
            item = items[index]
            above = clamp_guides(trail, levels, size)
            self.block(self._item_label(item), above + self.guides[END if last else FORK],
                       above + self.guides[SPACE if last else CONTINUE],
                       self.width - cell_width(above) - size, cut=True)
            below = _item_children(item)
            if below:
                trail.append(self.guides[SPACE if last else CONTINUE])
                stack.append((below, 0))

    def _item_label(self, item: tuple) -> List[Span]:
        """An item of a drawn tree is ("node", node, highlight) or ("heading", spans, node,
        highlight), a heading line with `node` under it."""
        if item[0] == "heading":
            return item[1]
        _, node, highlight = item
        label = node_label(node)
        if highlight and id(node) in highlight:
            label = [(text, f"{MARKED} {style}".strip()) for text, style in label]
            if not self.color:
                label.insert(0, ("* ", ""))
            label += [("  ", ""), (f"<- {highlight[id(node)]}", MARK_NOTE)]
        return label


def escaped(spans: Sequence[Span]) -> List[Span]:
    """`spans` with their text escaped by `errors.printable`: no control or bidirectional
    character, no newline (a run of text from an input is shown on the line it is put on)."""
    return [(printable(text), style) for text, style in spans]


def clamp_guides(trail: Sequence[str], levels: int, size: int) -> str:
    """The guides of the open levels `trail`, at most `levels` of them wide: deeper, the
    depth (`57:`) in the room of two levels, then the guides of the last levels."""
    if len(trail) + 1 <= levels:
        return "".join(trail)
    marker = f"{len(trail) + 1}: ".ljust(2 * size)
    return marker + "".join(trail[len(trail) - max(0, levels - 3):])


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def _columns() -> int:
    """COLUMNS when it is a sane number, else 0."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:  # not a number, or one of thousands of digits
        columns = 0
    return columns if columns >= MIN_WIDTH else 0


def terminal_width(stream=None) -> int:
    """COLUMNS when it is a sane number, else the terminal's own width, else 80."""
    columns = _columns()
    if columns:
        return columns
    try:
        columns = os.get_terminal_size((stream or sys.stdout).fileno()).columns
    except (AttributeError, OSError, ValueError):
        columns = 0
    return columns if columns >= MIN_WIDTH else FALLBACK_WIDTH


def output_width(stream=None, tty: Optional[bool] = None) -> int:
    """The width to print at: the terminal's; when not a terminal, COLUMNS if it is a sane
    number, else PLAIN_WIDTH."""
    if tty is None:
        tty = _isatty(stream or sys.stdout)
    if tty:
        return terminal_width(stream)
    return _columns() or PLAIN_WIDTH


# ---- what the tree shows --------------------------------------------------------------------

def node_label(node: Node) -> List[Span]:
    """An operator's label in a tree: `views.node_label`'s words, styled, then its statistics,
    run-time figures and code generation stage."""
    title = node.title or node.name
    spans: List[Span] = [(title, "bold")]
    if node.id is not None:
        spans += [(" ", ""), (f"({node.id})", "cyan")]
    summary = views.node_summary(node)
    if len(summary) > views.SUMMARY_WIDTH:
        summary = summary[: views.SUMMARY_WIDTH - 3] + "..."
    if summary:
        spans += [(" ", ""), (summary, "")]
    if node.statistics:
        spans += [(" ", ""), (f"Statistics({views.statistics_text(node.statistics)})", "magenta")]
    if node.metrics:
        facts = [f"{name} {value}" for name, value in views.node_facts(node)
                 if name != views.STATISTICS_WORDS]
        if facts:
            spans += [(" ", ""), (f"[{', '.join(facts)}]", "magenta")]
    if node.is_adaptive_root and "isFinalPlan" not in summary:
        spans += [(" ", ""), (f"isFinalPlan={str(node.is_final_plan).lower()}", "yellow")]
    if node.codegen_stage is not None:
        spans += [(" ", ""), (f"[codegen {node.codegen_stage}]", "dim")]
    return spans


INNER_PLAN: List[Span] = [("inner plan", "dim")]
FINAL_PLAN: List[Span] = [("== Final Plan ==", "bold yellow")]
CURRENT_PLAN: List[Span] = [("== Current Plan ==", "bold yellow")]
INITIAL_PLAN: List[Span] = [("== Initial Plan ==", "bold yellow")]


def _item_children(item: tuple) -> List[tuple]:
    if item[0] == "heading":
        return [("node", item[2], item[3])]
    _, node, highlight = item
    below = [("heading", INNER_PLAN, inner, highlight) for inner in node.inner]
    if node.is_adaptive_root and node.initial is not None and node.children and \
            node.initial is not node.children[0]:
        below.append(("heading", FINAL_PLAN if node.is_final_plan else CURRENT_PLAN,
                      node.children[0], highlight))
        below.append(("heading", INITIAL_PLAN, node.initial, None))
        return below
    below.extend(("node", child, highlight) for child in node.children)
    return below


# ---- the side-by-side view ------------------------------------------------------------------

def _side_cells(out: Screen, rows: Sequence[views.Row], initial: bool, width: int,
                guides: Sequence[str]) -> List[Tuple[List[Tuple[str, int]], str]]:
    """One side of a side-by-side view: for each row, its cell's lines (styled text, cells),
    guides included, at most `width` cells wide unless one word is wider, and the guides
    that continue the cell on the lines the other side's cell needs more of."""
    entries = [(number, row.initial if initial else row.final,
                row.initial_depth if initial else row.final_depth,
                row.initial_marks if initial else row.final_marks)
               for number, row in enumerate(rows)
               if (row.initial if initial else row.final) is not None]
    size = len(guides[0])
    levels = max(3, (width - MIN_COLUMN_LABEL_WIDTH) // size)
    # Whether each operator is the last child of its parent: read backwards, a later sibling
    # is a later operator of the same depth before any shallower one.
    last = [True] * len(entries)
    following: List[bool] = []
    for index in range(len(entries) - 1, -1, -1):
        depth = entries[index][2]
        del following[depth + 1:]
        following.extend([False] * (depth + 1 - len(following)))
        last[index] = not following[depth]
        following[depth] = True
    cells: List[List[Tuple[str, int]]] = [[] for _ in rows]
    fillers: List[str] = [""] * len(rows)
    opened: List[bool] = []  # by depth: whether the operator on the path has later siblings
    previous = 0
    summary_width = max(20, width - MIN_COLUMN_LABEL_WIDTH)
    for index, (number, node, depth, kinds) in enumerate(entries):
        del opened[depth:]
        opened.extend([False] * (depth - len(opened)))
        # The guides of the open levels above (`clamp_guides` of all of them), made of the
        # levels it shows only: a row 5,000 levels deep costs the width, not its depth.
        shown = depth - 1 if depth <= levels else max(0, levels - 3)
        trail = [guides[CONTINUE] if opened[level] else guides[SPACE]
                 for level in range(max(1, depth - shown), depth)]
        above = "".join(trail) if depth <= levels else \
            f"{depth}: ".ljust(2 * size) + "".join(trail)
        if depth:
            first = above + guides[END if last[index] else FORK]
            rest = above + guides[SPACE if last[index] else CONTINUE]
            passing = above + guides[CONTINUE]
        else:
            first = rest = passing = ""
        for before in range(previous, number):  # the guides down to this operator
            fillers[before] = passing
        previous = number
        opened.append(not last[index])
        label: List[Span] = [(views.node_label(node, summary_width), "bold")]
        if node.metrics:  # in a column, only what AQE decided: partitions, skew splits
            facts = [f"{name} {value}" for name, value in views.node_facts(node)
                     if name in ("partitions", "skewed") and is_shuffle_read(node)]
            if facts:
                label += [(f" [{', '.join(facts)}]", "magenta")]
        if kinds:
            label = [(text, MARKED) for text, _ in label]
            if not out.color:
                label.insert(0, ("* ", ""))
            label.append((f" [{', '.join(kinds)}]", MARK_NOTE))
        room = width - max(cell_width(first), cell_width(rest))
        lines = out.lines(label, room, cut=True)
        cells[number] = [(first + lines[0][0], cell_width(first) + lines[0][1])] + \
            [(rest + text, cell_width(rest) + used) for text, used in lines[1:]]
    for number in range(len(rows)):
        if not cells[number]:
            cells[number] = [(fillers[number], cell_width(fillers[number]))]
    return list(zip(cells, fillers))


def print_side_by_side(out: Screen, rows: Sequence[views.Row], initial_shown: bool) -> None:
    """Two columns, the initial plan left and the final plan right, row by row."""
    divider = " │ " if out.unicode else " | "
    width = max(1, (out.width - len(divider)) // 2)
    deepest = max((depth for row in rows for depth in (row.initial_depth, row.final_depth)
                    if depth is not None), default=0)
    guides = out.narrow_guides if width - 2 * deepest >= ROOMY_COLUMN else out.tight_guides
    left = _side_cells(out, rows, True, width, guides)
    right = _side_cells(out, rows, False, width, guides)
    heading_left = "Initial plan" if initial_shown else "Initial plan: not in this text"

    def line(text: str, cells: int, other: str) -> str:
        return (text + " " * max(0, width - cells) + divider + other).rstrip()

    heads = (out.lines([(heading_left, "bold yellow")], width),
             out.lines([("Final plan", "bold yellow")], width))
    for at in range(max(map(len, heads))):
        text, cells = heads[0][at] if at < len(heads[0]) else ("", 0)
        out.write_line(line(text, cells, heads[1][at][0] if at < len(heads[1]) else ""))
    rule = "─" if out.unicode else "-"
    out.write_line(rule * width + divider.replace(" ", rule) + rule * width)
    for (cell_left, filler_left), (cell_right, filler_right) in zip(left, right):
        for at in range(max(len(cell_left), len(cell_right))):
            text, cells = cell_left[at] if at < len(cell_left) else \
                (filler_left, cell_width(filler_left))
            other = cell_right[at][0] if at < len(cell_right) else filler_right
            out.write_line(line(text, cells, other))


# ---- the commands' output -------------------------------------------------------------------

def print_document_tree(document: Document, stream: Optional[TextIO] = None) -> None:
    out = Screen(stream)
    section = None
    for number, query in enumerate(document.queries, 1):
        source = query.source or document.source or "<input>"
        if document.application is None:
            section = _application_section(out, query.application, source, section)
        kind = views.plan_kind(query)
        name = title(query, number_of(query, number))
        out.paragraph([(name, "bold"), (f": {views.where_read(query, source)}, {kind}, "
                                        f"{query.mode} mode", "")],
                      "", HANG)
        out.tree(query.root)
        for sub in query.subqueries:
            if sub.tree is not None:
                out.paragraph([(f"Subquery {sub.index}", "bold"),
                               (f" hosted by operator {sub.hosting_operator_id}", "")])
                out.tree(sub.tree)
        for number_out, tree in enumerate(query.optimized_out, 1):
            out.paragraph([(f"Adaptively optimized out exchange {number_out}", "bold")])
            out.tree(tree)
        for note in query.notes:
            out.paragraph([(f"note: {note}", "yellow")], "", HANG)
    for note in document.notes:
        out.paragraph([(f"note: {note}", "yellow")], "", HANG)
    out.flush()


def print_rules(detectors: Iterable, stream: Optional[TextIO] = None) -> None:
    out = Screen(stream)
    for detector in detectors:
        out.paragraph([(detector.kind, "bold"), (f": {detector.summary}", "")])
        for line in inspect.cleandoc(detector.doc).split("\n"):
            # The docstrings' before/after drawings keep their lines; prose wraps.
            out.paragraph([(line, "")], "", "    " if not line.startswith(" ") else "")
        logged = getattr(detector, "rules_logged", ())
        out.paragraph([])
        out.paragraph([("In a plan-change log (spark.sql.planChangeLog.level=INFO): " +
                        (" or ".join(f"=== Applying Rule ...{rule} ===" for rule in logged)
                         if logged else "no rule; the re-planning's 'Plan changed:'"), "")],
                      "", "    ")
        out.paragraph([])
    out.flush()


def execution_line(execution) -> str:
    """`description "count at job.py:12", 1.2 s, 4 re-plans` for an execution of an event
    log (its heading names it: `Execution 3`)."""
    duration = execution.duration_ms
    parts = [f"description {execution.description!r}",
             f"{duration / 1000:.3g} s" if duration is not None else "duration unknown",
             f"{execution.replans} re-plan(s)" if execution.replans is not None
             else "re-plans unknown"]
    if execution.finished is False:
        parts.append("not finished")
    return ", ".join(parts)


#: The views of `diff`'s text: one line per rewrite, the annotated final tree, or the initial
#: and final trees side by side.
VIEWS = ("compact", "tree", "side-by-side")

#: Information, folded into the counts line: (kind, one, many).
INFO_NAMES = (("query-stage", "query stage", "query stages"),
              ("reused-exchange", "reused exchange", "reused exchanges"),
              ("reused-subquery", "reused subquery", "reused subqueries"),
              ("dynamic-pruning", "operator with dynamic pruning",
               "operators with dynamic pruning"))

PLANS_HINT = ("the plans: --side-by-side shows the initial and final plans aligned, --tree "
              "the final plan annotated")


def counts_line(query_report) -> str:
    """`Counts: coalesced=1, local-read=2; 5 query stages, 1 reused exchange`."""
    counts = query_report.counts
    found = [f"{kind}={count}" for kind, count in counts.items() if count]
    text = "Counts: " + (", ".join(found) if found else "no AQE rewrite")
    seen: Dict[str, int] = {}
    for observation in query_report.info:
        seen[observation.kind] = seen.get(observation.kind, 0) + 1
    info = [f"{seen[kind]} {one if seen[kind] == 1 else many}"
            for kind, one, many in INFO_NAMES if seen.get(kind)]
    info += [f"{count} {kind}" for kind, count in seen.items()
             if kind not in {name for name, _, _ in INFO_NAMES}]
    return text + (f"; {', '.join(info)}" if info else "")


def print_report(report, stream: Optional[TextIO] = None, view: str = "compact",
                 width: Optional[int] = None, hint: bool = True) -> None:
    """Each query: a header, then (`tree`) its final tree with rewritten operators marked, or
    (`side-by-side`) its initial and final trees aligned, then one line per rewrite with its
    numbers, the counts (information folded in) and the notes."""
    out = Screen(stream, width)
    app = getattr(report, "application", None)
    if app is not None:
        out.paragraph([("Application", "bold"), (application_words(app), "")], "", HANG)
    initial_plans = False
    section = None
    for query_report in report.queries:
        query = query_report.query
        source = query.source or report.source or "<input>"
        if app is None:
            section = _application_section(out, query.application, source, section)
        initial_plans = initial_plans or query.initial is not None
        _query(out, query_report, source, view,
               app.spark_version if app is not None else None)
    if hint and view == "compact" and initial_plans:
        out.paragraph([(f"See {PLANS_HINT}.", "dim")])
    for note in report.notes:
        out.paragraph([(f"note: {note}", "yellow")], "", "  ")
    out.flush()


def application_words(app) -> str:
    """` local-1 (name), Spark 4.0.0` after the word `Application`. A cut or partial log may
    lack the events that name the application."""
    named = f" {app.app_id or 'of unknown id'}" + (f" ({app.name})" if app.name else "")
    return named + (f", Spark {app.spark_version}" if app.spark_version else "")


def _application_section(out: Screen, app, source: str, section: Optional[tuple]
                         ) -> Optional[tuple]:
    """One input, several applications (a folder of event logs): each one's queries come
    under a line naming it and its log, since their execution ids repeat. Returns the
    section now open."""
    if app is None or (app, source) == section:
        return section
    out.paragraph([("Application", "bold"), (f"{application_words(app)}: {source}", "")],
                  "", "  ")
    return (app, source)


def _query(out: Screen, query_report, source: str, view: str,
           version: Optional[str] = None) -> None:
    from ..rewrites.engine import report_pairs

    query = query_report.query
    kind = views.plan_kind(query)
    header = views.where_read(query, source) + ", " + \
        (f"{kind}, isFinalPlan={str(query.is_final_plan).lower()}" if query.adaptive
         else f"codegen mode, {kind}" if query.mode == "codegen" else kind)
    out.paragraph([(query_report.title, "bold"), (f": {header}", "")], "", "  ")
    if query.execution is not None:
        out.paragraph([(execution_line(query.execution), "")], "  ", "    ")
    marked = views.marks(query_report)
    if view == "tree":
        highlight = _highlights(query_report, marked)
        out.tree(query.final, highlight=highlight)
        for sub in query.subqueries:
            if sub.tree is not None:
                out.paragraph([(f"Subquery {sub.index}", "bold")])
                out.tree(sub.tree, highlight=highlight)
    elif view == "side-by-side":
        pairs = report_pairs(query_report)
        if not pairs:
            out.paragraph([("A static plan (no AQE): its tree", "dim")])
            out.tree(query.final)
        for pair in pairs:
            if pair.where != "main":
                out.paragraph([(pair.where, "bold")], "", HANG)
            print_side_by_side(out, views.side_by_side_rows(pair, marked=marked),
                               pair.initial is not None)
    margins = views.rewrite_margins(query_report, version)
    for number, rewrite in enumerate(query_report.rewrites):
        line = views.finding_line(rewrite)
        kind = rewrite.kind
        out.paragraph([(kind, "bold green"), (line[len(kind):], "")], "  ", "    ")
        for said in views.margin_lines(margins[number]):
            out.paragraph([(said, "")], "    ", "      ")
        if kind == "skew-join":
            from ..whynot import rewrite_skew

            for said in views.skew_lines(rewrite_skew(query_report, rewrite, version)):
                out.paragraph([(said, "")], "    ", "      ")
    out.paragraph([(counts_line(query_report), "")], "  ", "    ")
    if query.plan_changes is not None:
        from ..rewrites.rules_fired import kept_words

        out.paragraph([(kept_words(query.plan_changes), "")], "  ", "    ")
        for note in query.plan_changes.notes:
            out.paragraph([(f"note: {note}", "yellow")], "  ", "    ")
    for note in query_report.notes:
        out.paragraph([(f"note: {note}", "yellow")], "  ", "    ")
    out.paragraph([])


def _highlights(query_report, marked: "views.Marks") -> Dict[int, str]:
    """The note beside each marked operator of the final tree: `coalesced (was Exchange
    (30))`, kinds marked without a rewrite of their own (a skewed read's) after."""
    from ..rewrites.findings import describe

    notes: Dict[int, List[str]] = {}
    for rewrite in query_report.rewrites:
        if rewrite.final_node is None:
            continue
        was = f" (was {describe(rewrite.initial_node)})" if rewrite.initial_node else ""
        notes.setdefault(id(rewrite.final_node), []).append(f"{rewrite.kind}{was}")
    for key, kinds in marked.final.items():
        said = notes.setdefault(key, [])
        said.extend(kind for kind in kinds if not any(note.startswith(kind) for note in said))
    return {key: "; ".join(said) for key, said in notes.items() if said}
