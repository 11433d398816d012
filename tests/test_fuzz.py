"""Hypothesis: no input makes aqe-inspect raise anything but its own error, or take a second.

Inputs are real plans (sample plans and golden corpus) mutated line by line, and random
text and bytes. Every run goes through the CLI's `main()` as a user would call it.
"""

from __future__ import annotations

import io
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import List

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import aqe_inspect
from aqe_inspect.cli import main
from aqe_inspect.rewrites.engine import diff_document

from .conftest import CORPUS, SAMPLE_PLANS

SECOND = 1.0


def real_plans() -> List[str]:
    paths = sorted(SAMPLE_PLANS.rglob("*.txt"))[:60]
    if CORPUS.is_dir():
        paths += sorted(CORPUS.rglob("explain.txt"))[::25]
        paths += sorted(CORPUS.rglob("explain-aqe.sql.out"))
    plans = [p.read_text("utf-8") for p in paths]
    assert plans, "no real plan to mutate: sample_plans/ and the corpus are both missing"
    return plans


PLANS = real_plans()


@st.composite
def mutated_plans(draw) -> str:
    lines = draw(st.sampled_from(PLANS)).split("\n")
    for _ in range(draw(st.integers(1, 6))):
        if not lines:
            break
        index = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["drop", "cut", "duplicate", "swap", "insert", "indent",
                                       "dedent", "truncate"]))
        if action == "drop":
            del lines[index]
        elif action == "cut":
            lines[index] = lines[index][: draw(st.integers(0, max(0, len(lines[index]))))]
        elif action == "duplicate":
            lines.insert(index, lines[index])
        elif action == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[index], lines[other] = lines[other], lines[index]
        elif action == "insert":
            lines.insert(index, draw(st.text(max_size=40)))
        elif action == "indent":
            lines[index] = draw(st.sampled_from(["   ", ":  ", "+- ", ":- "])) + lines[index]
        elif action == "dedent":
            lines[index] = lines[index][3:]
        else:
            lines = lines[: index + 1]
    return "\n".join(lines)


def run_cli(tmp_path: Path, data: bytes, command: str) -> None:
    path = tmp_path / "plan.txt"
    path.write_bytes(data)
    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([command, str(path), "--format", "json"])
    elapsed = time.perf_counter() - started
    assert elapsed < SECOND, f"{elapsed:.2f}s on {data[:200]!r}"
    assert code in (0, 2)
    if code == 2:
        message = err.getvalue()
        assert message.startswith("aqe-inspect: error: "), message
        assert message.count("\n") == 1, message
        assert "internal error" not in message, message
        assert str(path) in message
    else:
        assert out.getvalue().lstrip().startswith("{")


FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


@FUZZ
@given(text=mutated_plans())
def test_mutated_real_plans_parse_or_fail_cleanly(tmp_path, text):
    run_cli(tmp_path, text.encode("utf-8"), "parse")


@FUZZ
@given(text=mutated_plans())
def test_mutated_real_plans_diff_or_fail_cleanly(tmp_path, text):
    run_cli(tmp_path, text.encode("utf-8"), "diff")


@FUZZ
@given(data=st.binary(max_size=2000))
def test_random_bytes_fail_cleanly(tmp_path, data):
    run_cli(tmp_path, data, "parse")


@FUZZ
@given(text=st.text(alphabet=st.sampled_from(list("+-: |*()[]=#\n ,AaEe0123456789"))
                    | st.characters(), max_size=600))
def test_random_plan_like_text_never_raises_anything_else(text):
    started = time.perf_counter()
    try:
        diff_document(aqe_inspect.parse(text, "fuzz"))
    except aqe_inspect.PlanSyntaxError as error:
        assert error.line is not None and str(error).startswith("fuzz:")
    assert time.perf_counter() - started < SECOND


def test_long_lines_and_deep_trees_stay_fast():
    """Spark prints argument lists of thousands of characters and trees hundreds deep."""
    base = max(PLANS, key=len)
    long_line = base.replace("Output [", "Output [" + "x#1, " * 20000, 1)
    started = time.perf_counter()
    try:
        aqe_inspect.parse(long_line, "long")
    except aqe_inspect.PlanSyntaxError:
        pass
    assert time.perf_counter() - started < SECOND
