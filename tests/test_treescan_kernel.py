"""The compiled tree-line, detail-header and subquery-mark scans (parsing/_treescan_c.pyx) are
what their pure-Python twin (parsing/_treescan_py.py: the lexer's regexes TREE_OPERATOR and
DETAIL_HEADER, the two searches of damage's SUBQUERY_MARKS) gives, on arbitrary lines built of
the pieces that make and break tree glyphs, codegen markers, operator names, headers and marks
(ASCII, and past it: Unicode digits and blanks, which the regexes' `\\d` and `\\S` take), and
on every line of the sample plans. The twin's patterns are the lexer's and damage's own.

The compiled side is skipped, with its reason, when it is not built; under CI=true it must
be built, so the test fails instead.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.parsing import _treescan_py, damage, lexer

from .conftest import SAMPLE_PLANS, compiled_kernel


def _compiled():
    return compiled_kernel("aqe_inspect.parsing._treescan_c")


#: What makes and breaks glyphs, markers, names, headers and marks.
PIECES = ["   ", "  ", " ", ":  ", "|  ", ":", "|", "+- ", ":- ", "+-", "-", "+", "*", "^", "!",
          "*(2) ", "^(3) ", "(", ")", "1", "12", "* ", "^ ", "_", "a", "Project", "Scan",
          "$", "(6) ", "(12) Project", "\t", "\n", "#", "uery#", "pruning#", "query#1",
          "dynamicpruning#7", "uer", "y#", "prun", "ing#", "Subquery"]
#: Past ASCII: decimal digits and blanks of other scripts, a letter that is no name's.
WIDE = ["\u0661", "\u00a0", "\u2003", "\x85", "\u2028", "é", "\U0001d7d9", "\u0e51"]
lines = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=24).map("".join),
    st.lists(st.sampled_from(PIECES + WIDE), max_size=24).map("".join),
    st.text(max_size=40))


def _same(line: str) -> None:
    kernel = _compiled()
    assert kernel.tree_operator(line) == _treescan_py.tree_operator(line), line
    assert kernel.is_detail_header(line) == _treescan_py.is_detail_header(line), line
    assert kernel.holds_subquery_mark(line) == _treescan_py.holds_subquery_mark(line), line


@settings(max_examples=4000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines)
def test_the_kernel_gives_the_twins_answers(line):
    _same(line)


def test_the_kernel_gives_the_twins_answers_on_the_sample_plans():
    for path in sorted(SAMPLE_PLANS.rglob("*.txt")):
        for line in path.read_text("utf-8", "replace").split("\n"):
            _same(line)


def test_the_twin_reads_the_lexers_patterns():
    assert _treescan_py.TREE_OPERATOR.pattern == lexer.TREE_OPERATOR.pattern
    assert _treescan_py.DETAIL_HEADER.pattern == lexer.DETAIL_HEADER.pattern
    assert _treescan_py.SUBQUERY_MARKS == damage.SUBQUERY_MARKS


def test_the_twin_answers_as_the_patterns_do():
    twin = _treescan_py
    assert twin.tree_operator("+- Project [a#1]") == 3
    assert twin.tree_operator(":  +- *(2) Filter") == 6
    assert twin.tree_operator("   :- 12") == -6
    assert twin.tree_operator("Project [a#1]") == -1
    assert twin.is_detail_header("(6) AQEShuffleRead") and not twin.is_detail_header("(6)  x")
    assert twin.holds_subquery_mark("dynamicpruning#7") and not twin.holds_subquery_mark("a#1")
