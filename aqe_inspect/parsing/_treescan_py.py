"""What the tree lexer asks of every tree line and of every detail block's header, and what
the damage walk asks of every detail: the pure Python twin of `_treescan_c.pyx` (same
functions, equal results; aqe_inspect.native.load). Here each is the regex or the search it
stands for; the compiled twin reads the characters by hand.

May import: nothing of the package (the lexer and damage load it; tests hold its patterns
equal to theirs).
"""

from __future__ import annotations

import re

#: What an operator line starts with (lexer.CODEGEN_MARKER, repeated: the lexer imports this).
_CODEGEN_MARKER = r"(?:[*^]\(\d+\) |[*^] ?|!)"
#: lexer.TREE_OPERATOR: a tree line's glyphs, and whether an operator's start follows them.
TREE_OPERATOR = re.compile(r"(?:[ :|]  )*[+:]- (?:(?=(?P<operator>" + _CODEGEN_MARKER +
                           r"?[A-Za-z_]))|)")
#: lexer.DETAIL_HEADER: `(6) AQEShuffleRead ...`.
DETAIL_HEADER = re.compile(r"\(\d+\) \S")
#: damage.SUBQUERY_MARKS: what every subquery reference (`scalar-subquery#12`,
#: `dynamicpruning#7`) holds.
SUBQUERY_MARKS = ("uery#", "pruning#")


def tree_operator(line: str) -> int:
    """Where TREE_OPERATOR's match of `line` ends (the operator's column) when the line's
    glyphs are followed by an operator's start; minus that end when they are followed by
    something else; -1 when the line does not start with tree glyphs."""
    match = TREE_OPERATOR.match(line)
    if match is None:
        return -1
    return match.end() if match.lastindex is not None else -match.end()


def is_detail_header(line: str) -> bool:
    """Whether DETAIL_HEADER matches at the start of `line`."""
    return DETAIL_HEADER.match(line) is not None


def holds_subquery_mark(text: str) -> bool:
    """Whether `text` holds either of SUBQUERY_MARKS."""
    return SUBQUERY_MARKS[0] in text or SUBQUERY_MARKS[1] in text
