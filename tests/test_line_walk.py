"""The line walk's fused steps give what the steps they replace gave: `logical_lines` noting
application starts and rule headings itself (what `sources._document`'s wrapper over it did
a line at a time), and `message_header`'s shortcut for lines its fast path takes."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from aqe_inspect.sources import lines as lines_module
from aqe_inspect.sources.lines import (
    APPLICATION_START, is_rule_heading, logical_lines, message_header, raw_lines,
)

ROOT = Path(__file__).resolve().parent.parent
DRIVER_LOGS = sorted((ROOT / "sample_plans").rglob("*.log"))

PIECES = ["+- ", ":- ", "   ", " ", "== Physical Plan ==", "=== Applying Rule x ===",
          "=== Applying Rules", "Project [a#1]", "*(1) ", "00 ", "01 ", "In [3]: ", "   ...: ",
          "> ", "# ", '{"msg":"Submitted application: x"}', '{"msg":"=== Applying Rule y ==="}',
          "{", "\t", "\r", "\u200b", "26/11/26 08:00:00 INFO SparkContext: ",
          "Submitted application: ", "Final plan:", "[", "x", "9", "=", "\xa0", "Input [2]: ",
          "Output [1]: ", "In[2]: ", "Out [7]:", "In ", "O", "I", "Plan changed from", " to ",
          "-- MAGIC "]


def _watched_the_old_way(raw):
    """What `_document` noted of each line `logical_lines` handed on, before the fusion."""
    runs, headings = [], []
    for line in logical_lines(raw):
        if line.message_start and line.text.startswith(APPLICATION_START):
            runs.append(line.number)
        if is_rule_heading(line):
            headings.append(line.number)
    # Of the rule headings only the first is kept: whether there is one is what is asked
    # (each heading kept cost a driver log of 400,000 of them hundreds of megabytes).
    return runs, headings[:1]


def _watched(raw):
    runs, headings = [], []
    lines = list(logical_lines(raw, None, runs, headings))
    assert lines == list(logical_lines(raw))
    return runs, headings


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=5).map("".join), max_size=12),
       st.booleans())
def test_logical_lines_notes_what_the_wrapper_noted(texts, fast):
    raw = list(enumerate(texts, 1))
    lines_module.FAST_PATH = fast
    try:
        assert _watched(raw) == _watched_the_old_way(raw)
    finally:
        lines_module.FAST_PATH = True


def test_logical_lines_notes_what_the_wrapper_noted_on_the_sample_logs():
    assert DRIVER_LOGS
    noted = 0
    for path in DRIVER_LOGS:
        raw = list(raw_lines(path.read_text("utf-8", errors="replace")))
        watched = _watched(raw)
        assert watched == _watched_the_old_way(raw), path
        noted += len(watched[0]) + len(watched[1])
    assert noted > 0


def _header_the_old_way(text):
    for line in logical_lines(((0, text),)):
        return line.header if line.message_start else None
    return None


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), max_size=5).map("".join))
def test_message_header_shortcut(text):
    assert message_header(text) == _header_the_old_way(text)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=5).map("".join), max_size=12))
def test_fast_path_gives_the_lines_the_steps_give(texts):
    raw = list(enumerate(texts, 1))
    lines_module.FAST_PATH = False
    try:
        stepped = list(logical_lines(raw))
    finally:
        lines_module.FAST_PATH = True
    assert list(logical_lines(raw)) == stepped


def test_fast_path_gives_the_lines_the_steps_give_on_the_sample_logs():
    for path in DRIVER_LOGS:
        raw = list(raw_lines(path.read_text("utf-8", errors="replace")))
        lines_module.FAST_PATH = False
        try:
            stepped = list(logical_lines(raw))
        finally:
            lines_module.FAST_PATH = True
        assert list(logical_lines(raw)) == stepped, path
