"""Honest on damage: a real plan cut short anywhere is an error, or its report says so.

Every real sample plan (both Spark lines, every explain mode) and a slice of the golden
corpus, cut after every line and at bytes inside lines, is read the way the CLI reads it.
Either the read fails with a located error, or some query (or the document) carries a note:
the report never looks complete when the text was not. Hypothesis adds random cuts, line
swaps and deletions, repeated operator ids and injected invisible characters, through the
CLI's `main()`.
"""

from __future__ import annotations

import io
import json
import random
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.cli import main
from aqe_inspect.errors import InspectError
from aqe_inspect.sources import read_text_document

from .conftest import CORPUS, SAMPLE_PLANS

NEWEST = sorted(SAMPLE_PLANS.glob("spark-4.*"))[-1]
OLDER = sorted(SAMPLE_PLANS.glob("spark-3.*"))[-1]


def plan_files() -> List[Path]:
    paths = sorted(NEWEST.rglob("*.txt"))
    paths += sorted(p for p in OLDER.rglob("*.txt") if p.stem in ("formatted_after",
                                                                    "simple_after"))
    if CORPUS.is_dir():
        paths += sorted(CORPUS.rglob("explain.txt"))[::60]
    return paths


def cuts(text: str, seed: str) -> List[int]:
    lines = text.split("\n")
    offsets = {len("\n".join(lines[:i])) for i in range(1, len(lines))}
    rng = random.Random(seed)
    offsets.update(rng.randrange(1, len(text)) for _ in range(10))
    return sorted(offsets)


def is_cut(whole: str, part: str) -> bool:
    return part.strip() != "" and part.rstrip() != whole.rstrip()


def said_or_failed(text: str) -> bool:
    try:
        document = read_text_document(text, "cut.txt")
    except InspectError as error:
        return error.line is not None
    return bool(document.notes) or any(query.notes for query in document.queries)


@pytest.mark.parametrize("path", plan_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_cut_of_a_real_plan_fails_or_is_noted(path):
    text = path.read_text("utf-8")
    silent = [offset for offset in cuts(text, path.name)
              if is_cut(text, text[:offset]) and not said_or_failed(text[:offset])]
    assert not silent, f"{len(silent)} silent cut(s), first at byte {silent[0]}: " \
                       f"...{text[:silent[0]][-120:]!r}"


def test_whole_real_plans_carry_no_damage_note():
    """The other side of the promise: nothing is said about a plan that is whole."""
    for path in plan_files():
        document = read_text_document(path.read_text("utf-8"), str(path))
        notes = [n for q in document.queries for n in q.notes if "counts may be" in n]
        assert not notes, (path, notes)


PLANS = [p.read_text("utf-8") for p in plan_files()[:80]]
INVISIBLE = ["\u200b", "\u200e", "\u202e", "\u2066", "\ufeff"]


@st.composite
def damaged(draw) -> str:
    lines = draw(st.sampled_from(PLANS)).split("\n")
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["cut", "swap", "drop", "repeat-id", "invisible",
                                       "truncate-bytes"]))
        if action == "cut":
            lines = lines[: index + 1]
        elif action == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[index], lines[other] = lines[other], lines[index]
        elif action == "drop" and len(lines) > 1:
            del lines[index]
        elif action == "repeat-id":
            lines = [line.replace("(3)", "(4)") for line in lines]
        elif action == "invisible":
            line = lines[index]
            at = draw(st.integers(0, len(line)))
            lines[index] = line[:at] + draw(st.sampled_from(INVISIBLE)) + line[at:]
        elif action == "truncate-bytes":
            lines[index] = lines[index][: draw(st.integers(0, len(lines[index])))]
            lines = lines[: index + 1]
        if not lines:
            break
    return "\n".join(lines)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=damaged())
def test_damaged_real_plans_through_the_cli(tmp_path, text):
    path = tmp_path / "plan.txt"
    path.write_text(text, "utf-8")
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["diff", str(path), "--format", "json"])
    assert code in (0, 2)
    if code == 2:
        assert err.getvalue().startswith(f"aqe-inspect: error: {path}")
        assert "internal error" not in err.getvalue()
        assert err.getvalue().count("\n") == 1
        return
    report = json.loads(out.getvalue())
    body = text[1:] if text.startswith("\ufeff") else text  # a leading BOM is an encoding mark
    if any(ch in body for ch in INVISIBLE):
        notes = report["notes"] + [n for q in report["queries"] for n in q["notes"]]
        assert any("never prints" in n for n in notes), notes
