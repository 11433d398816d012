"""The driver log's fast paths against the steps they stand for (issue 27).

* the parser builds each operator tree straight from its tokens (`parser._direct_tree`)
  instead of through the LALR automaton's steps: the same Documents and the same errors
  (message, line, column), over the whole golden corpus, every sample plan and damaged
  forms of them;
* `repeats._filled` fills a Node as its constructor would;
* `parsing.repeats.RepeatedPlans` hands out, for a plan text printed again, what parsing it
  again gives (line numbers moved, shared trees kept shared);
* `lines.logical_lines` takes a fast path for plain lines: the same lines as the full steps,
  over every sample driver log and over generated lines of the characters that matter.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import List, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.errors import InspectError, PlanSyntaxError
from aqe_inspect.parsing import parse_lines, parse_text
from aqe_inspect.parsing import parser as parser_module
from aqe_inspect.parsing.lexer import PlanLines
from aqe_inspect.parsing.repeats import RepeatedPlans
from aqe_inspect.plan.model import Node
from aqe_inspect.sources import lines as lines_module
from aqe_inspect.sources import read_text_document
from aqe_inspect.sources.lines import logical_lines, raw_lines

from .conftest import CORPUS, IN_CI, SAMPLE_PLANS

DRIVER_LOGS = sorted(SAMPLE_PLANS.glob("spark-*/*/driver*.log"))


def _outcome(text: str):
    try:
        return parse_text(text, "plan.txt")
    except PlanSyntaxError as error:
        return ("error", str(error), error.line, error.column)


def _both_ways(monkeypatch, text: str):
    direct = _outcome(text)
    monkeypatch.setattr(parser_module, "DIRECT_TREES", False)
    stepped = _outcome(text)
    monkeypatch.setattr(parser_module, "DIRECT_TREES", True)
    return direct, stepped


def _damaged(text: str) -> List[Tuple[str, str]]:
    """A text and the ways a paste damages it: cut in half, a stray line, a line indented
    off the grid, an elision, a jump of indentation, a stage header with nothing under it."""
    lines = text.split("\n")
    half = len(lines) // 2
    out = [("whole", text), ("cut", "\n".join(lines[:half])),
           ("stray", text + "\n\nthis is not a plan line\n")]
    for at, line in enumerate(lines[1:12], 1):
        if "+- " in line:
            out.append(("off grid", "\n".join(lines[:at] + [" " + line] + lines[at + 1:])))
            out.append(("elided", "\n".join(lines[:at] + ["   ..."] + lines[at:])))
            out.append(("jump", "\n".join(lines[:at] + ["         " + line] + lines[at + 1:])))
            out.append(("stage alone", "\n".join(lines[:at] + ["+- == Final Plan =="])))
            break
    return out


def _sample_texts() -> List[Tuple[str, str]]:
    texts = []
    for path in sorted(SAMPLE_PLANS.glob("spark-*/*/*.txt")):
        for kind, text in _damaged(path.read_text("utf-8", errors="replace")):
            texts.append((f"{path.parent.parent.name}/{path.parent.name}/{path.name} {kind}",
                          text))
    return texts


SAMPLE_TEXTS = _sample_texts()


def test_direct_trees_equal_the_automaton_over_the_samples_and_their_damage(monkeypatch):
    assert len(SAMPLE_TEXTS) > 500
    differ = []
    errors = 0
    for name, text in SAMPLE_TEXTS:
        direct, stepped = _both_ways(monkeypatch, text)
        errors += isinstance(direct, tuple)
        if direct != stepped:
            differ.append(name)
    assert not differ, differ[:5]
    assert errors > 20  # the damage reaches the parser's errors, not only its notes


def test_direct_trees_equal_the_automaton_over_the_golden_corpus(monkeypatch):
    if not CORPUS.is_dir():
        if IN_CI:
            pytest.fail(f"the golden corpus is missing at {CORPUS}")
        pytest.skip(f"the golden corpus is not beside the checkout ({CORPUS})")
    files = sorted(CORPUS.rglob("*.txt"))
    assert len(files) > 400
    differ = [str(path) for path in files
              if (lambda pair: pair[0] != pair[1])(
                  _both_ways(monkeypatch, path.read_text("utf-8", errors="replace")))]
    assert not differ, differ[:5]


@pytest.mark.parametrize("text", [
    "+- Project [a#1]\n   +- Scan x\n",                       # a cut top
    "Project [a#1]\n+- Filter x\n      +- Scan y\n   +- Scan z\n",  # an inner plan, then a child
    "AdaptiveSparkPlan isFinalPlan=true\n+- == Final Plan ==\n   Project\n   +- Scan\n"
    "+- == Initial Plan ==\n   Project\n   +- Scan\n",
    "AdaptiveSparkPlan isFinalPlan=false\n+- == Initial Plan ==\n   Project\n",
    "Project\n+- == Final Plan ==\n   Scan\n",                 # a stage under no adaptive root
    "== Physical Plan ==\nProject\n+- Scan\n\nstray\n",
    "== Physical Plan ==\n* Project (1)\n+- * Scan (2)\n\n(1) Project\nOutput: []\n\n"
    "(3) Scan\nOutput: []\n",
    "== Physical Plan ==\n*(1" + "9" * 30 + ") Project\n+- Scan\n",  # an unreadable stage
])
def test_direct_trees_equal_the_automaton_on_hand_made_shapes(monkeypatch, text):
    direct, stepped = _both_ways(monkeypatch, text)
    assert direct == stepped


def test_a_deep_tree_is_built_without_recursion():
    depth = 5000
    lines = ["Project"] + [("   " * (level - 1)) + "+- Filter" for level in range(1, depth)]
    document = parse_text("\n".join(lines))
    node, seen = document.queries[0].root, 1
    while node.children:
        node, seen = node.children[0], seen + 1
    assert seen == depth


def test_filled_nodes_are_what_the_constructor_makes():
    from aqe_inspect.parsing.repeats import _fields, _filled

    text = (SAMPLE_PLANS / "spark-4.3.0").glob("*/*_after.txt")
    document = parse_text(next(iter(sorted(text))).read_text("utf-8"))
    names = [field.name for field in dataclasses.fields(Node)]
    for node in document.queries[0].root.walk(initial=True):
        fields = _fields(node)
        assert list(fields) == names
        copy = _filled(Node, fields)
        assert copy == node == Node(**fields) and copy is not node


# ---- parsing a repeated plan once ---------------------------------------------------------
def _plan_lines(text: str, first: int, announced: bool = True) -> PlanLines:
    lines = text.split("\n")
    return PlanLines(lines, list(range(first, first + len(lines))), announced=announced)


ADAPTIVE = ("AdaptiveSparkPlan isFinalPlan=true\n+- == Final Plan ==\n   *(2) Project [k#1]\n"
            "   +- AQEShuffleRead coalesced\n      +- ShuffleQueryStage 0\n"
            "         +- Exchange hashpartitioning(k#1, 200)\n            +- Scan t [k#1]\n"
            "+- == Initial Plan ==\n   Project [k#1]\n   +- Exchange hashpartitioning(k#1, 200)\n"
            "      +- Scan t [k#1]")
SINGLE = "AdaptiveSparkPlan isFinalPlan=false\n+- Project [k#1]\n   +- Scan t [k#1]"


@pytest.mark.parametrize("text", [ADAPTIVE, SINGLE])
def test_a_repeated_plan_reads_as_parsing_it_again(text):
    repeats = RepeatedPlans()
    first = repeats.parse(_plan_lines(text, 10), "driver.log", "AQE log 'Final plan'")
    again = repeats.parse(_plan_lines(text, 500), "driver.log", "AQE log 'Final plan'")
    assert repeats.hits == 1
    assert first == parse_lines(_plan_lines(text, 10), "driver.log", "AQE log 'Final plan'")
    assert again == parse_lines(_plan_lines(text, 500), "driver.log", "AQE log 'Final plan'")
    assert again.queries[0].root.line == 500 and first.queries[0].root.line == 10
    lines = [node.line for node in again.queries[0].root.walk(initial=True)]
    assert min(lines) == 500 and max(lines) > 500
    root = again.queries[0].root
    if text is SINGLE:  # the one tree is its own initial plan, shared, in the copy too
        assert root.initial is root.children[0]


def test_a_repeat_differs_by_anything_but_its_place():
    repeats = RepeatedPlans()
    repeats.parse(_plan_lines(SINGLE, 1), "a.log", "x")
    repeats.parse(_plan_lines(SINGLE, 1, announced=False), "a.log", "x")
    repeats.parse(_plan_lines(SINGLE, 1), "b.log", "x")
    repeats.parse(_plan_lines(SINGLE, 1), "a.log", "y")
    spread = PlanLines(SINGLE.split("\n"), [1, 1, 1], announced=True)  # one JSON record
    assert repeats.parse(spread, "a.log", "x") == parse_lines(spread, "a.log", "x")
    assert repeats.hits == 0


def test_damaged_plans_and_errors_are_not_kept():
    repeats = RepeatedPlans()
    cut = "Project [k#1]\n:- Scan t [k#1]"  # a note: more children were to follow
    one = repeats.parse(_plan_lines(cut, 1), "a.log", "x")
    two = repeats.parse(_plan_lines(cut, 40), "a.log", "x")
    assert one.queries[0].notes and repeats.hits == 0
    assert two == parse_lines(_plan_lines(cut, 40), "a.log", "x")
    bad = "== Physical Plan ==\nProject\n+- == Final Plan ==\n   Scan"
    for first in (1, 9):
        with pytest.raises(PlanSyntaxError) as error:
            repeats.parse(_plan_lines(bad, first, announced=False), "a.log", "x")
        assert error.value.line == first + 2


def test_the_kept_plans_are_bounded():
    repeats = RepeatedPlans(max_entries=2)
    texts = [SINGLE.replace("k#1", f"k#{n}") for n in range(4)]
    for text in texts:
        repeats.parse(_plan_lines(text, 1), "a.log", "x")
    repeats.parse(_plan_lines(texts[0], 7), "a.log", "x")  # pushed out: parsed again
    repeats.parse(_plan_lines(texts[3], 7), "a.log", "x")
    assert repeats.hits == 1 and len(repeats._kept) == 2


def test_a_driver_log_with_repeats_reads_as_each_parsed_again(monkeypatch):
    """Every sample driver log, read with the repeats kept and with none kept."""
    from aqe_inspect.parsing import repeats as repeats_module

    hits = 0
    for path in DRIVER_LOGS:
        text = path.read_text("utf-8", errors="replace")
        counter = []
        original = RepeatedPlans.parse

        def counting(self, *args, **kwargs):
            result = original(self, *args, **kwargs)
            counter.append(self.hits)
            return result

        monkeypatch.setattr(RepeatedPlans, "parse", counting)
        kept = read_text_document(text, path.name)
        monkeypatch.setattr(RepeatedPlans, "parse", original)
        hits += max(counter, default=0)
        monkeypatch.setattr(repeats_module, "MAX_ENTRIES", 0)
        assert kept == read_text_document(text, path.name), path
        monkeypatch.setattr(repeats_module, "MAX_ENTRIES", 64)
    assert hits > 0  # some logs print one plan text again: the cache is used


# ---- logical_lines' fast path ---------------------------------------------------------------
def _lines_both_ways(monkeypatch, raw):
    fast = list(logical_lines(raw))
    monkeypatch.setattr(lines_module, "FAST_PATH", False)
    full = list(logical_lines(raw))
    monkeypatch.setattr(lines_module, "FAST_PATH", True)
    return fast, full


def test_the_fast_path_reads_every_sample_driver_log_as_the_full_steps(monkeypatch):
    assert DRIVER_LOGS
    for path in DRIVER_LOGS:
        raw = list(raw_lines(path.read_text("utf-8", errors="replace")))
        fast, full = _lines_both_ways(monkeypatch, raw)
        assert fast == full, path


PIECES = ["+- ", ":- ", ":  ", "   ", " ", "== Physical Plan ==", "=== Applying Rule x ===",
          "Project [a#1]", "*(1) ", "00 ", "01 ", "In [3]: ", "   ...: ", ">>> ", "> ", "# ",
          "-- MAGIC ", '{"msg":"Final plan:\\nProject"}', "{", "\t", "\r", "\u200b", "\ufffd",
          "26/11/26 08:00:00 INFO AdaptiveSparkPlanExec: ", "Plan changed from ", " to ",
          "Final plan:", "scala> ", "[", "x", "9", ".", "s", "I", "O", "\x0b", "\xa0"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=5).map("".join), max_size=12))
def test_the_fast_path_reads_generated_lines_as_the_full_steps(texts):
    raw = list(enumerate(texts, 1))
    fast = list(logical_lines(raw))
    lines_module.FAST_PATH = False
    try:
        full = list(logical_lines(raw))
    finally:
        lines_module.FAST_PATH = True
    assert fast == full


def test_damage_notes_of_a_skimmed_reading_are_kept(tmp_path: Path):
    """A damaged line outside any plan still gives its note when the log is skimmed."""
    from aqe_inspect.sources import read_document

    log = tmp_path / "driver.log"
    log.write_bytes(
        b"26/11/26 08:00:00 INFO Executor: caf\xe9 ready\n"
        b"26/11/26 08:00:01 INFO AdaptiveSparkPlanExec: Final plan:\n"
        b"AdaptiveSparkPlan isFinalPlan=true\n+- Project [k#1]\n   +- Scan t [k#1]\n")
    document = read_document(str(log))
    assert any("line 1:" in note and "not UTF-8" in note for note in document.notes)
    assert document.queries
    with pytest.raises(InspectError):
        read_document(str(tmp_path / "missing.log"))
