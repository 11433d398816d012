"""Hypothesis: no expectation file and no `--expect` text makes `check` do anything but judge
(exit 0 or 1) or refuse in one line naming the file (exit 2): never a traceback, never a pass
on a file it could not read whole.

Files are the real ones (examples/ci/aqe-expect.toml, the snapshot tests' file) mutated line by
line and character by character, and random text and bytes."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.cli import main
from aqe_inspect.expectations.config import load_config

from .conftest import ROOT, SAMPLE_PLANS

PLAN = str(SAMPLE_PLANS / "spark-4.3.0" / "multi_rewrite" / "formatted_after.txt")
REAL = [(ROOT / "examples" / "ci" / "aqe-expect.toml").read_text("utf-8"),
        (ROOT / "tests" / "fixtures" / "check" / "aqe-expect.toml").read_text("utf-8")]
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


def run(*args: str):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["check", *args])
    return code, out.getvalue(), err.getvalue()


def judged_or_refused(code: int, out: str, err: str, config: Path) -> None:
    assert code in (0, 1, 2), (code, err)
    if code == 2:
        assert out == ""
        assert err.startswith(f"aqe-inspect: error: {config}") and err.count("\n") == 1, err
        assert "internal error" not in err
    else:
        assert err == ""
        # Judged: the file must have read whole, every expectation in it held.
        assert out.count("\nPASS ") + out.count("\nFAIL ") + out.startswith(("PASS ", "FAIL ")) \
            == len(load_config(str(config)))


@st.composite
def mutated_configs(draw) -> str:
    lines = draw(st.sampled_from(REAL)).split("\n")
    for _ in range(draw(st.integers(1, 5))):
        index = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["drop", "cut", "duplicate", "swap", "insert", "char"]))
        if action == "drop" and len(lines) > 1:
            del lines[index]
        elif action == "cut":
            lines[index] = lines[index][: draw(st.integers(0, len(lines[index])))]
        elif action == "duplicate":
            lines.insert(index, lines[index])
        elif action == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[index], lines[other] = lines[other], lines[index]
        elif action == "insert":
            lines.insert(index, draw(st.sampled_from([
                "[[query]]", "expect = []", 'forbid = ["coalesced"]', "each = true", "id = 0",
                'match = "multi"', 'name = "x"', "[query]", "[tool.aqe-inspect]", "query = 1",
                'expect = ["coalesced>=1", 3]', "", "#",
                # Nesting deeper than the TOML reader's recursion: brackets, dotted keys.
                "expect = " + "[" * 3000 + "]" * 3000, "forbid = " + "{a=" * 500 + "1" +
                "}" * 500, "expect." + ".".join(["k"] * 3000) + " = 1",
                "expect = [{" + ".".join(["k"] * 3000) + " = 1}]",
                'match = "' + "(" * 2000 + ")" * 2000 + '"'])))
        elif lines[index]:
            at = draw(st.integers(0, len(lines[index]) - 1))
            char = draw(st.sampled_from(list('"[]=,<>#\\\'{} \t\x00') + ["\u00e9", "\ud800"]))
            lines[index] = lines[index][:at] + char + lines[index][at + 1:]
    return "\n".join(lines)


@SETTINGS
@given(mutated_configs())
def test_a_mutated_expectation_file_is_judged_or_refused_in_one_line(tmp_path, text):
    config = tmp_path / "aqe-expect.toml"
    config.write_bytes(text.encode("utf-8", "surrogatepass"))
    judged_or_refused(*run(PLAN, "--config", str(config)), config)


@SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes_as_an_expectation_file_are_refused_or_read(tmp_path, data):
    config = tmp_path / "aqe-expect.toml"
    config.write_bytes(data)
    judged_or_refused(*run(PLAN, "--config", str(config)), config)


@SETTINGS
@given(st.lists(st.text(max_size=20), min_size=1, max_size=3), st.booleans())
def test_any_expect_text_is_judged_or_refused_in_one_line(texts, forbid):
    args = [part for text in texts for part in ("--forbid" if forbid else "--expect", text)]
    code, out, err = run(PLAN, *args)
    assert code in (0, 1, 2), err
    if code == 2:
        assert out == "" and err.count("\n") == 1 and "internal error" not in err, err
        assert err.startswith("aqe-inspect: error: --") or "No such option" in err \
            or "requires an argument" in err, err
    else:
        assert err == "" and out.count("PASS ") + out.count("FAIL ") >= len(texts)


#: Pieces of regular expressions: Python's syntax, what RE2 lacks, and nesting.
REGEX_PIECES = st.sampled_from([
    "(", ")", "(?:", "(?=", "(?<!", "(?P<a>", "(?P=a)", "(?#c)", "(?i)", "(?x)", "(?a)",
    "(?>", "\\1", "a", "é", "+", "*", "?", "+?", "*+", "{2}", "{,3}", "{1001}", "{}", "[",
    "]", "[^", "\\w", "\\W", "\\s", "\\d", "\\b", "\\Z", "\\u00e9", "\\N{EM DASH}", "\\x4",
    "|", "^", "$", "#", ".", "\\", " ", "\n", "multi", "(a+)+", "[[:alpha:]]"])
PATTERNS = st.one_of(
    st.lists(REGEX_PIECES, max_size=30).map("".join),
    st.integers(0, 3000).map(lambda depth: "(" * depth + "multi" + ")" * depth),
    st.text(max_size=20))


@SETTINGS
@given(PATTERNS)
def test_any_match_pattern_is_judged_or_refused_in_one_line(tmp_path, pattern):
    """A `match` of any text (nested groups, backreferences, look-arounds, exponential ones):
    judged, or refused in one line naming the file; never a hang or an internal error."""
    config = tmp_path / "aqe-expect.toml"
    body = f'[[query]]\nmatch = {json.dumps(pattern)}\nexpect = ["coalesced"]\n'
    config.write_bytes(body.encode("utf-8", "surrogatepass"))
    judged_or_refused(*run(PLAN, "--config", str(config)), config)
    code, out, err = run(PLAN, "--expect", "coalesced", "--query", pattern)
    assert code in (0, 1, 2), err
    if code == 2:
        assert out == "" and err.count("\n") == 1 and "internal error" not in err, err
