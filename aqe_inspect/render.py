"""Output for people: operator trees and rewrite tables, drawn line by line.

Plain text when standard output is not a terminal or NO_COLOR is set, 200 columns wide (read
by people and tools alike: wide enough not to cut operator lines); on a terminal, ANSI styles
at the terminal's width. The look is rich's (tree guides `├── `, a heavy-headed table, words
wrapped to the width); it is drawn here because rich builds a whole tree of objects and
measures it, which costs seconds per megabyte of plan and loses the nodes of a tree deeper
than the width allows. Here every tree is walked with an explicit stack, each line is written
once, and the time is linear in what is printed.

What a plan or a file name holds is printed as given: no markup is read in it, and control
characters are shown escaped (`\\x1b`), so no input can restyle or rewrite the terminal.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
from typing import Dict, Iterable, List, Optional, Sequence, TextIO, Tuple

from .errors import printable
from .model import Document, Node

PLAIN_WIDTH = 200
#: A terminal narrower than this (or a COLUMNS that is not a number) is taken as FALLBACK_WIDTH.
MIN_WIDTH = 40
FALLBACK_WIDTH = 80
#: Beside deep guides a label is printed whole on its line rather than wrapped into a column
#: narrower than this (rich folded it into slivers a few characters wide, or dropped it).
MIN_LABEL_WIDTH = 40
#: Summaries longer than this are cut with `...` in tree labels.
SUMMARY_WIDTH = 160

#: A run of text and its style: names from STYLES separated by spaces, or "" for none.
Span = Tuple[str, str]

STYLES = {"bold": "1", "dim": "2", "italic": "3", "reverse": "7", "green": "32",
          "yellow": "33", "magenta": "35", "cyan": "36", "red": "31"}

#: Tree guides (space, continue, fork, end), as rich draws them, and their ASCII form for an
#: output encoding without box-drawing characters.
GUIDES = ("    ", "│   ", "├── ", "└── ")
ASCII_GUIDES = ("    ", "|   ", "+-- ", "`-- ")
SPACE, CONTINUE, FORK, END = range(4)

#: Table borders: (left, line, divider, right) of the top, header-row, header-rule, body-row and
#: bottom lines.
BOX = ("┏━┳┓", "┃ ┃┃", "┡━╇┩", "│ ││", "└─┴┘")
ASCII_BOX = ("+--+", "| ||", "|-+|", "| ||", "+--+")


def shown(text: str) -> str:
    """`text` with control characters escaped: safe to print on a terminal. A newline still
    breaks the line, as it does in the plan."""
    return printable(text, newlines=True)


def cell_width(text: str) -> int:
    """Terminal cells `text` takes (wide East Asian characters take two)."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


_WORD = re.compile(r"\s*\S+\s*")


def wrap(text: str, width: int) -> List[Tuple[int, int]]:
    """Where to cut one line of `text` (no newline) into lines of at most `width` cells, as
    (start, end) offsets; the same cuts as rich's word wrap. A word (with the spaces after it)
    goes on the current line if its letters fit, else starts a new line; a word wider than a
    line is cut into pieces a line wide. Spaces ending a line are kept while they fit."""
    if width < 1 or cell_width(text) <= width:
        return [(0, len(text))]
    starts = [0]
    used = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group()
        letters = cell_width(word.rstrip())
        if letters <= width - used:
            used += cell_width(word)
        elif letters > width:
            pieces = _chop(word, width)
            for piece in pieces[:-1]:
                if start:
                    starts.append(start)
                start += len(piece)
            if start:
                starts.append(start)
            used = cell_width(pieces[-1])
        elif used and start:
            starts.append(start)
            used = cell_width(word)
    lines = []
    for start, end in zip(starts, [*starts[1:], len(text)]):
        if cell_width(text[start:end]) > width:
            letters_end = start + len(text[start:end].rstrip())
            end = letters_end + max(0, width - cell_width(text[start:letters_end]))
        lines.append((start, end))
    return lines


def _chop(word: str, width: int) -> List[str]:
    """`word` cut into pieces of at most `width` cells."""
    if word.isascii():
        return [word[i:i + width] for i in range(0, len(word), width)]
    pieces, piece, used = [], [], 0
    for char in word:
        size = cell_width(char)
        if piece and used + size > width:
            pieces.append("".join(piece))
            piece, used = [], 0
        piece.append(char)
        used += size
    pieces.append("".join(piece))
    return pieces


class Screen:
    """Where output for people goes: a stream, its width, colours or not, box characters or
    ASCII. Lines are gathered and written in blocks."""

    def __init__(self, stream: Optional[TextIO] = None):
        self.stream = stream if stream is not None else sys.stdout
        plain = bool(os.environ.get("NO_COLOR")) or not _isatty(self.stream)
        self.color = not plain and os.environ.get("TERM", "") != "dumb"
        self.width = PLAIN_WIDTH if plain else terminal_width(self.stream)
        encoding = (getattr(self.stream, "encoding", None) or "utf-8").lower()
        self.unicode = encoding.startswith("utf")
        self.guides = GUIDES if self.unicode else ASCII_GUIDES
        self.box = BOX if self.unicode else ASCII_BOX
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
        """The text of `spans` from offset `start` to `end`, with ANSI styles on a terminal."""
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

    def paragraph(self, spans: Sequence[Span]) -> None:
        """Print text wrapped to the width, each of its lines on its own."""
        self.block(spans, "", "", self.width)

    def block(self, spans: Sequence[Span], first: str, rest: str, width: int) -> None:
        """`spans` wrapped to `width`, the first line after `first`, the others after `rest`."""
        plain = "".join(text for text, _ in spans)
        prefix = first
        offset = 0
        for line in plain.split("\n"):
            for start, end in wrap(line, width) if width >= MIN_LABEL_WIDTH else [(0, len(line))]:
                self.write_line(prefix + self.styled(spans, offset + start, offset + end))
                prefix = rest
            offset += len(line) + 1

    # ---- trees -------------------------------------------------------------------------------
    def tree(self, root: Node, highlight: Optional[Dict[int, str]] = None) -> None:
        """The tree under `root`, drawn with guides; `highlight` maps id(node) to a note."""
        top = ("node", root, highlight)
        self.block(_item_label(top), "", "", self.width)
        stack: List[Tuple[List[tuple], int]] = [(_item_children(top), 0)]
        trail: List[str] = []  # the guide of each open level: continue or space
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
            above = "".join(trail)
            self.block(_item_label(item), above + self.guides[END if last else FORK],
                       above + self.guides[SPACE if last else CONTINUE],
                       self.width - 4 * (len(trail) + 1))
            below = _item_children(item)
            if below:
                trail.append(self.guides[SPACE if last else CONTINUE])
                stack.append((below, 0))

    # ---- tables ------------------------------------------------------------------------------
    def table(self, title: str, headers: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
        """A table with a centred title, a bold header row and cells wrapped in their columns."""
        headers = [shown(h) for h in headers]
        rows = [[shown(cell) for cell in row] for row in rows]
        room = self.width - 2 - (len(headers) - 1)  # edges and dividers
        natural = [0] * len(headers)
        for row in (headers, *rows):
            for index, cell in enumerate(row):
                longest = max((cell_width(line) for line in cell.split("\n")), default=0)
                natural[index] = max(natural[index], min(longest + 2, room))
        widths = _fit([width or 1 for width in natural], room)
        table_width = sum(widths) + 2 + len(widths) - 1
        title = shown(title)
        for start, end in wrap(title, table_width):
            line = title[start:end]
            left = (table_width - cell_width(line)) // 2
            self.write_line(" " * left + self.styled([(line, "italic")])
                            + " " * (table_width - left - cell_width(line)))
        top, head, rule, body, bottom = self.box
        self.write_line(_rule(top, widths))
        self._row(head, widths, headers, "bold", bottom_aligned=True)
        self.write_line(_rule(rule, widths))
        for row in rows:
            self._row(body, widths, row, "")
        self.write_line(_rule(bottom, widths))

    def _row(self, box: str, widths: List[int], cells: Sequence[str], style: str,
             bottom_aligned: bool = False) -> None:
        columns = []
        for width, cell in zip(widths, cells):
            inner = max(1, width - 2)
            lines = []
            for part in cell.split("\n"):
                lines.extend(part[start:end] for start, end in wrap(part, inner))
            columns.append(lines)
        height = max(len(lines) for lines in columns)
        for number in range(height):
            pieces = []
            for width, lines in zip(widths, columns):
                at = number - (height - len(lines)) if bottom_aligned else number
                text = lines[at] if 0 <= at < len(lines) else ""
                padding = " " * max(0, width - 2 - cell_width(text))
                pieces.append(" " + self.styled([(text, style)]) + padding + " ")
            self.write_line(box[0] + box[2].join(pieces) + box[3])


def _rule(box: str, widths: List[int]) -> str:
    return box[0] + box[2].join(box[1] * width for width in widths) + box[3]


def _fit(widths: List[int], room: int) -> List[int]:
    """Column widths narrowed to fit `room`: the widest columns are narrowed first, down to the
    next widest, the cut shared among them (left ones first when it does not divide)."""
    widths = list(widths)
    excess = sum(widths) - room
    while excess > 0 and max(widths) > 0:
        top = max(widths)
        below = max((width for width in widths if width != top), default=0)
        widest = [index for index, width in enumerate(widths) if width == top]
        remaining, count = excess, len(widest)
        for index in widest:
            cut = min(top - below, excess, round(remaining / count))
            widths[index] -= cut
            remaining -= cut
            count -= 1
        excess = sum(widths) - room
    return widths


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def terminal_width(stream=None) -> int:
    """COLUMNS when it is a sane number, else the terminal's own width, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:  # not a number, or one of thousands of digits
        columns = 0
    if columns >= MIN_WIDTH:
        return columns
    try:
        columns = os.get_terminal_size((stream or sys.stdout).fileno()).columns
    except (AttributeError, OSError, ValueError):
        columns = 0
    return columns if columns >= MIN_WIDTH else FALLBACK_WIDTH


# ---- what the tree shows --------------------------------------------------------------------

def node_label(node: Node) -> List[Span]:
    title = shown(node.title or node.name)
    spans: List[Span] = [(title, "bold")]
    if node.id is not None:
        spans += [(" ", ""), (f"({node.id})", "cyan")]
    summary = node.args if node.args not in (node.title or node.name) else ""
    summary = summary or node.details.get("Arguments", "")
    if node.description:
        summary = f"{summary} {node.description}".strip()
    if summary:
        if len(summary) > SUMMARY_WIDTH:
            summary = summary[: SUMMARY_WIDTH - 3] + "..."
        spans += [(" ", ""), (shown(summary), "")]
    if node.statistics:
        spans += [(" ", ""), (f"Statistics({shown(node.statistics)})", "magenta")]
    if node.is_adaptive_root and "isFinalPlan" not in summary:
        spans += [(" ", ""), (f"isFinalPlan={str(node.is_final_plan).lower()}", "yellow")]
    if node.codegen_stage is not None:
        spans += [(" ", ""), (f"[codegen {node.codegen_stage}]", "dim")]
    return spans


INNER_PLAN: List[Span] = [("inner plan", "dim")]
FINAL_PLAN: List[Span] = [("== Final Plan ==", "bold yellow")]
CURRENT_PLAN: List[Span] = [("== Current Plan ==", "bold yellow")]
INITIAL_PLAN: List[Span] = [("== Initial Plan ==", "bold yellow")]


def _item_label(item: tuple) -> List[Span]:
    """An item of a drawn tree is ("node", node, highlight) or ("heading", spans, node,
    highlight), a heading line with `node` under it."""
    if item[0] == "heading":
        return item[1]
    _, node, highlight = item
    label = node_label(node)
    if highlight and id(node) in highlight:
        label = [(text, f"reverse green {style}".strip()) for text, style in label]
        label += [("  ", ""), (f"<- {shown(highlight[id(node)])}", "green")]
    return label


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


# ---- the commands' output -------------------------------------------------------------------

def print_document_tree(document: Document, stream: Optional[TextIO] = None) -> None:
    out = Screen(stream)
    source = shown(document.source or "<input>")
    for number, query in enumerate(document.queries, 1):
        kind = "adaptive" if query.adaptive else "static"
        out.paragraph([(f"Query {number}", "bold"),
                       (f" ({kind}, {query.mode} mode, {source} line {query.line})", "")])
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
            out.paragraph([(f"note: {shown(note)}", "yellow")])
    for note in document.notes:
        out.paragraph([(f"note: {shown(note)}", "yellow")])
    out.flush()


def print_rules(detectors: Iterable, stream: Optional[TextIO] = None) -> None:
    out = Screen(stream)
    for detector in detectors:
        out.paragraph([(detector.kind, "bold"), (f": {detector.summary}", "")])
        out.paragraph([(inspect.cleandoc(detector.doc), "")])
        out.paragraph([])
    out.flush()


def execution_line(execution) -> str:
    """`execution 3: "count at job.py:12", 1.2 s, 4 re-plans` for a query of an event log."""
    duration = execution.duration_ms
    parts = [f"execution {execution.execution_id}: {shown(repr(execution.description))}",
             f"{duration / 1000:.3g} s" if duration is not None else "duration unknown",
             f"{execution.replans} re-plan(s)" if execution.replans is not None
             else "re-plans unknown"]
    if execution.finished is False:
        parts.append("not finished")
    return ", ".join(parts)


def print_report(report, stream: Optional[TextIO] = None) -> None:
    """Each query: its final tree with rewritten operators marked beside their initial form,
    then a table of rewrites with the evidence, then what is information only."""
    from .report import REWRITE_KINDS, describe

    out = Screen(stream)
    app = getattr(report, "application", None)
    if app is not None:
        # A cut or partial log may lack the events that name the application.
        named = f" {shown(app.app_id or 'of unknown id')}" + \
            (f" ({shown(app.name)})" if app.name else "")
        version = f", Spark {shown(app.spark_version)}" if app.spark_version else ""
        out.paragraph([("Application", "bold"), (named + version, "")])
    for query_report in report.queries:
        query = query_report.query
        source = shown(query.source or report.source or "<input>")
        out.paragraph([(f"Query {query_report.id}", "bold"),
                       (f" ({source} line {query.line}, "
                        f"{'adaptive' if query.adaptive else 'static'}, "
                        f"isFinalPlan={str(query.is_final_plan).lower()})", "")])
        if query.execution is not None:
            out.paragraph([(execution_line(query.execution), "")])
        marks: Dict[int, str] = {}
        for rewrite in query_report.rewrites:
            if rewrite.final_node is None:
                continue
            was = f" (was {describe(rewrite.initial_node)})" if rewrite.initial_node else ""
            note = f"{rewrite.kind}{was}"
            key = id(rewrite.final_node)
            marks[key] = f"{marks[key]}; {note}" if key in marks else note
        out.tree(query.final, highlight=marks)
        for sub in query.subqueries:
            if sub.tree is not None:
                out.paragraph([(f"Subquery {sub.index}", "bold")])
                out.tree(sub.tree, highlight=marks)
        if query_report.rewrites:
            out.table(f"AQE rewrites in query {query_report.id}",
                      ("kind", "final", "initial", "what changed", "evidence"),
                      ((rewrite.kind, describe(rewrite.final_node) or "-",
                        describe(rewrite.initial_node) or "-", rewrite.message,
                        "; ".join(rewrite.evidence)) for rewrite in query_report.rewrites))
        else:
            out.paragraph([("No AQE rewrite found.", "")])
        counts = query_report.counts
        out.paragraph([("Counts: " + ", ".join(f"{kind}={counts[kind]}"
                                               for kind in REWRITE_KINDS), "")])
        for observation in query_report.info:
            out.paragraph([(f"info: {shown(observation.message)}", "dim")])
        for note in query_report.notes:
            out.paragraph([(f"note: {shown(note)}", "yellow")])
        out.paragraph([])
    for note in report.notes:
        out.paragraph([(f"note: {shown(note)}", "yellow")])
    out.flush()
