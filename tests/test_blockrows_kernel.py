"""The compiled detail-block rows and blocks (parsing/_blockrows_c.pyx) are what their
pure-Python twin (parsing/_blockrows_py.py: the regex BLOCK_ROW's findall, the loop that makes
the blocks) gives, on the same text and bounds: every line's row, or None when a line does not
match; the blocks by id and the last id, or None. Held equal on arbitrary text built of
the pieces that make and break headers and fields (ASCII, and past it: Unicode digits and
blanks, which the regex's `\\d` and `\\s` take), and on every sample plan's detail blocks.

The compiled side is skipped, with its reason, when it is not built; under CI=true it must
be built, so the test fails instead.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.parsing import _blockrows_py, formatted_plan
from aqe_inspect.plan.model import MAX_DIGITS

from .conftest import SAMPLE_PLANS, compiled_kernel


def _compiled():
    return compiled_kernel("aqe_inspect.parsing._blockrows_c")


def _sample_block_runs():
    """(text, start) of each run of detail blocks of every sample formatted plan: where a
    block's header follows an empty line."""
    for path in sorted(SAMPLE_PLANS.rglob("formatted*.txt")):
        text = path.read_text("utf-8", "replace")
        at = text.find("\n\n(")
        while at >= 0:
            yield text, at + 2
            at = text.find("\n\n(", at + 2)


#: What makes a header, a field or an empty line, and what breaks them.
PIECES = ["(", ")", " ", "  ", "1", "12", "007", "[", "]", ":", "a", "Key", "Output", "_",
          "-", "\n", "\n\n", "x", "(1) ", "(12) Project", "Input [2]: ", "Arguments: ", ": ",
          " :", "Z", "\t", "9", "[3]", " [3]", "Key [3] :", "\x0b", "\x1c", "\x1f", "\r",
          "#", "=", "Subquery:"]
#: Past ASCII: decimal digits and blanks of other scripts, a letter that is no key's.
WIDE = ["\u0661", "\u00a0", "\u2003", "\x85", "\u2028", "é", "\U0001d7d9"]
texts = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=40).map("".join),
    st.lists(st.sampled_from(PIECES + WIDE), max_size=40).map("".join),
    st.text(max_size=60))


def _same(text: str, start: int, end: int) -> None:
    kernel = _compiled()
    assert kernel.block_rows(text, start, end) == _blockrows_py.block_rows(text, start, end)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, st.data())
def test_the_kernel_gives_the_twins_rows(text, data):
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.one_of(st.just(len(text)), st.integers(start, len(text))))
    _same(text, start, end)


def test_the_kernel_gives_the_twins_rows_over_the_sample_plans():
    checked = 0
    for text, start in _sample_block_runs():
        end = text.find("\n\n", start)
        for stop in (len(text), end if end >= 0 else len(text)):
            _same(text, start, stop)
            checked += 1
    assert checked > 100


def test_the_twin_is_the_regex():
    rows = _blockrows_py.block_rows("(1) Scan x\nOutput [2]: [a#1, b#2]\n\nArguments: y", 0, 48)
    assert rows == [("1", "Scan x", "", ""), ("", "", "Output", "[a#1, b#2]"),
                    ("", "", "", ""), ("", "", "Arguments", "y")]
    assert _blockrows_py.block_rows("(1) Scan x\nnot a field", 0, 22) is None


def _same_blocks(text: str, start: int, end: int, max_digits: int = MAX_DIGITS) -> None:
    kernel = _compiled()
    made = []
    for module in (kernel, _blockrows_py):
        try:
            made.append(module.read_blocks(text, start, end, {}, {}, formatted_plan._heading,
                                           formatted_plan._KNOWN_MAX, max_digits))
        except Exception as error:  # noqa: BLE001 - the same error either way
            made.append(repr(error))
    assert made[0] == made[1]


BLOCK_PIECES = PIECES + ["(3) Project [codegen id : 1]", "1234567890123456789",
                         "(3) X [codegen id : 99999999999999999999]", "(2) Scan parquet",
                         "(1234567890123456789) A"]


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.lists(st.sampled_from(BLOCK_PIECES), max_size=40).map("".join),
                 st.lists(st.sampled_from(BLOCK_PIECES + WIDE), max_size=40).map("".join),
                 st.text(max_size=60)),
       st.data())
def test_the_kernel_reads_the_twins_blocks(text, data):
    start = data.draw(st.one_of(st.just(0), st.integers(0, len(text))))
    end = data.draw(st.one_of(st.just(len(text)), st.integers(start, len(text))))
    _same_blocks(text, start, end, data.draw(st.sampled_from([MAX_DIGITS, 2, 25])))


def test_the_kernel_reads_the_twins_blocks_over_the_sample_plans():
    checked = 0
    for text, start in _sample_block_runs():
        _same_blocks(text, start, formatted_plan._run_end(text, start))
        checked += 1
    assert checked > 100
