"""Hostile input built from the real sample logs, one field replaced: nesting deeper than
Python's recursion limit (sparkPlanInfo trees, History Server JSON, JSON driver logs, stage
events, expectation files, regular expressions) and regular expressions that backtrack
exponentially in Python's `re`.

A deep but legitimate plan (a long chain of projections, as Spark writes: Jackson refuses
more than 1,000 JSON levels, about 500 operators) is read whole; nesting past what the reader
takes (10,000 JSON levels) loses that one event or entry, with a note, and nothing else; every
refusal is one line and exit 2, never `internal error`."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.sources import deepjson
from aqe_inspect.cli import main
from aqe_inspect.errors import InspectError
from aqe_inspect.expectations.selection import Selector, compile_pattern
from aqe_inspect.expectations.userpattern import compile_user_pattern

from .conftest import AQE_INSPECT, SAMPLE_PLANS

SPARK35 = SAMPLE_PLANS / "spark-3.5.9"
#: Three SQL executions (0 and 1 a temp view's, 2 the query), in both forms.
SCALAR_LOG = SPARK35 / "scalar_subquery" / "eventlog.json"
SCALAR_HISTORY = SPARK35 / "scalar_subquery" / "history_sql.json"
UNION_LOG = SPARK35 / "union_of_aggregates" / "eventlog.json"
JSON_DRIVER_LOG = SAMPLE_PLANS / "spark-4.3.0" / "scalar_subquery" / "driver_json.log"
PLACEHOLDER = "@@HOSTILE@@"


def run(*args: str):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def one_line_error(code: int, err: str, *words: str) -> None:
    assert code == 2, err
    assert err.startswith("aqe-inspect: error: ") and err.count("\n") == 1, err
    assert "internal error" not in err, err
    for word in words:
        assert word in err, err


def events(path: Path) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def event_line(event: Dict[str, Any], hostile: Dict[str, str]) -> str:
    """The event as Spark writes it (compact), fields in `hostile` replaced by raw JSON text
    (too deep for json.dumps, which recurses)."""
    marked = {key: (f"{PLACEHOLDER}{key}" if key in hostile else value)
              for key, value in event.items()}
    text = json.dumps(marked, separators=(",", ":"))
    for key, raw in hostile.items():
        text = text.replace(json.dumps(f"{PLACEHOLDER}{key}"), raw)
    return text


def chain_info(depth: int, final: bool = False) -> str:
    """A sparkPlanInfo of `depth` projections over a scan, under an AdaptiveSparkPlan: two
    JSON levels an operator (the node and its children list)."""
    head = ('{"nodeName":"Project","simpleString":"Project [id#0L AS c%d#%dL]",'
            '"children":[')
    tail = '],"metadata":{},"metrics":[]}'
    leaf = ('{"nodeName":"Scan ExistingRDD","simpleString":"Scan ExistingRDD[id#0L]",'
            '"children":[],"metadata":{},"metrics":[]}')
    body = "".join(head % (level, level) for level in range(depth, 0, -1)) + leaf + \
        tail * depth
    return ('{"nodeName":"AdaptiveSparkPlan","simpleString":"AdaptiveSparkPlan '
            f'isFinalPlan={"true" if final else "false"}","children":[{body}],'
            '"metadata":{},"metrics":[]}')


def chain_text(depth: int) -> str:
    """The same plan as its physicalPlanDescription (simple mode)."""
    lines = ["== Physical Plan ==", "AdaptiveSparkPlan isFinalPlan=false"]
    pad = ""
    for level in range(depth, 0, -1):
        lines.append(f"{pad}+- Project [id#0L AS c{level}#{level}L]")
        pad += "   "
    lines.append(f"{pad}+- Scan ExistingRDD[id#0L]")
    return "\n".join(lines) + "\n"


def deep_list(depth: int, inner: str = '"x"') -> str:
    return "[" * depth + inner + "]" * depth


def hostile_log(path: Path, source: Path, execution: int, fields: Dict[str, str],
                events_named=("SQLExecutionStart", "SQLAdaptiveExecutionUpdate")) -> Path:
    lines = []
    for event in events(source):
        chosen = event["Event"].endswith(events_named) and event.get("executionId") == execution
        lines.append(event_line(event, fields) if chosen else
                     json.dumps(event, separators=(",", ":")))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def walk(tree: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.get("children") or ())


def projections(report: Dict[str, Any], execution: int, tree: str = "final") -> List[str]:
    """The arguments of every Project of the execution's tree, top down."""
    [query] = [q for q in report["queries"] if q["execution_id"] == execution]
    return [node["args"] for node in walk(query["trees"][tree]) if node["name"] == "Project"]


# ---- JSON of any depth ----------------------------------------------------------------------

@pytest.mark.parametrize("with_text", [False, True], ids=["from sparkPlanInfo", "from text"])
def test_a_490_level_plan_in_an_event_log_is_read_whole(tmp_path, with_text):
    """Both SQL events of the query carry the deep tree (about 980 JSON levels: too deep for
    json.loads); every one of its 490 projections is in the tree read."""
    fields = {"sparkPlanInfo": chain_info(490),
              "physicalPlanDescription": json.dumps(chain_text(490) if with_text else "")}
    log = hostile_log(tmp_path / "deep.json", SCALAR_LOG, 2, fields)
    start = next(line for line in log.read_text("utf-8").splitlines()
                 if "SQLExecutionStart" in line and '"executionId":2' in line)
    if sys.version_info < (3, 12):  # later Pythons bound C recursion apart, higher
        with pytest.raises(RecursionError):
            json.loads(start)  # what the reader used to do
    code, out, err = run("parse", str(log), "--format", "json")
    assert code == 0, err
    report = deepjson.loads(out)
    assert [q["execution_id"] for q in report["queries"]] == [0, 1, 2]  # the others kept
    chain = [f"[id#0L AS c{level}#{level}L]" for level in range(490, 0, -1)]
    assert projections(report, 2) == chain
    if not with_text:  # the tree of the start event is the initial plan
        assert projections(report, 2, "initial") == chain
    assert not any("skipped" in note for note in report["notes"])


def test_a_deep_plan_reads_in_every_command_and_format(tmp_path):
    # The plan as an ended execution's last update has it (isFinalPlan=true): one not final
    # is no verdict for `check` (tests/test_trusted_verdict.py).
    log = hostile_log(tmp_path / "deep.json", UNION_LOG, 0,
                      {"sparkPlanInfo": chain_info(2000, final=True),
                       "physicalPlanDescription": '""'})
    for args in (["diff"], ["diff", "--tree"], ["diff", "--side-by-side"], ["why"],
                 ["diff", "--format", "sarif"], ["diff", "--format", "html"], ["snapshot"],
                 ["check", "--forbid", "skew-join"]):
        code, out, err = run(*args, str(log))
        assert code == 0 and err == "", (args, err)
    code, out, _ = run("diff", "--tree", str(log))
    assert out.count("Project [id#0L AS c") == 2000


def test_an_event_too_deep_to_read_is_skipped_with_a_note_and_the_rest_kept(tmp_path):
    """12,000 JSON levels: past what the reader takes. That one execution's events (its start
    and its last update: the first is superseded, never read) are skipped, each with a note
    naming its line; the two others are read as before."""
    log = hostile_log(tmp_path / "deeper.json", SCALAR_LOG, 2,
                      {"sparkPlanInfo": chain_info(6000)})
    code, out, err = run("parse", str(log), "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    notes = " ".join(report["notes"])
    assert notes.count("JSON nested deeper than 10,000 levels; the event was skipped") == 2
    assert [q["execution_id"] for q in report["queries"]] == [0, 1]


def test_a_plan_too_deep_to_pickle_back_from_the_pool_is_built_here(tmp_path):
    """Past 64 executions the rest are built in worker processes, whose results come back
    pickled (pickle recurses); a deep one is built again in the main process."""
    source = [e for e in events(UNION_LOG)]
    sql = [e for e in source if "executionId" in e]
    lines = [json.dumps(e, separators=(",", ":")) for e in source if "executionId" not in e]
    for number in range(70):
        for event in sql:
            event = {**event, "executionId": number}
            if number == 69 and "sparkPlanInfo" in event:
                lines.append(event_line(event, {"sparkPlanInfo": chain_info(490),
                                                "physicalPlanDescription": '""'}))
            else:
                lines.append(json.dumps(event, separators=(",", ":")))
    log = tmp_path / "many.json"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = run("diff", "--tree", str(log), "--query", "69")
    assert code == 0, err
    assert out.count("Project [id#0L AS c") == 490
    code, _, err = run("check", str(log), "--expect", "coalesced")
    assert code in (0, 1) and "internal error" not in err, err


def test_deep_values_where_text_belongs_are_shown_cut_short(tmp_path):
    """A description, node name or configuration value that is a deep list (no recursion
    through str())."""
    log = hostile_log(tmp_path / "odd.json", SCALAR_LOG, 2,
                      {"description": deep_list(3000)}, events_named=("SQLExecutionStart",))
    code, out, err = run("diff", str(log), "--query", "2")
    assert code == 0, err
    assert "[[[[[[[[" in out and "...'" in out


def test_history_json_nested_1000_deep_in_a_field_is_read(tmp_path):
    data = json.loads(SCALAR_HISTORY.read_text("utf-8"))
    assert [e["id"] for e in data] == [0, 1, 2]
    text = json.dumps([{**data[0], "description": PLACEHOLDER}, data[1],
                       {**data[2], "nodes": [{**data[2]["nodes"][0], "nodeName": PLACEHOLDER + "n"},
                                             *data[2]["nodes"][1:]]}])
    text = text.replace(f'"{PLACEHOLDER}"', deep_list(1000)) \
        .replace(f'"{PLACEHOLDER}n"', deep_list(1000))
    path = tmp_path / "history.json"
    path.write_text(text, encoding="utf-8")
    code, out, err = run("parse", str(path), "--format", "json")
    assert code == 0, err
    assert [q["execution_id"] for q in json.loads(out)["queries"]] == [0, 1, 2]


def test_a_history_entry_too_deep_is_skipped_and_the_others_kept(tmp_path):
    data = json.loads(SCALAR_HISTORY.read_text("utf-8"))
    text = json.dumps([data[0], {**data[1], "description": PLACEHOLDER}, data[2]])
    path = tmp_path / "history.json"
    path.write_text(text.replace(f'"{PLACEHOLDER}"', deep_list(20000)), encoding="utf-8")
    code, out, err = run("parse", str(path), "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert [q["execution_id"] for q in report["queries"]] == [0, 2]
    assert any("entry 2: JSON nested deeper than 10,000 levels; skipped" in note
               for note in report["notes"])
    # One execution alone (`/sql/<id>`) too deep: nothing else to read, one line.
    single = tmp_path / "one.json"
    single.write_text(json.dumps({**data[2], "nodes": PLACEHOLDER}).replace(
        f'"{PLACEHOLDER}"', deep_list(20000)), encoding="utf-8")
    one_line_error(*run("parse", str(single))[::2], "nested deeper than 10,000 levels",
                   str(single))


def test_a_deep_json_driver_log_record_and_stage_event_are_survived(tmp_path):
    records = JSON_DRIVER_LOG.read_text("utf-8").splitlines()
    at = next(i for i, line in enumerate(records) if '"context"' in line)
    record = json.loads(records[at])
    for depth in (3000, 20000):
        records[at] = event_line(record, {"context": deep_list(depth)})
        path = tmp_path / f"driver{depth}.log"
        path.write_text("\n".join(records) + "\n", encoding="utf-8")
        code, out, err = run("parse", str(path))
        assert code == 0, err
        assert out.count("AdaptiveSparkPlan") >= 1
    lines = SCALAR_LOG.read_text("utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if "SparkListenerStageCompleted" in line)
    stage = json.loads(lines[at])
    lines[at] = event_line(stage, {"Stage Info": json.dumps(stage["Stage Info"])[:-1] +
                                   ',"deep":' + deep_list(3000) + "}"})
    path = tmp_path / "stage.json"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert run("diff", str(path))[0] == 0


# ---- deepjson against json -------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=4),
    max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(value=JSON_VALUES, indent=st.sampled_from([None, 0, 2]), depth=st.integers(0, 3))
def test_the_iterative_decoder_reads_what_json_reads(value, indent, depth):
    text = json.dumps(value, indent=indent)
    assert deepjson.loads_iteratively(text) == json.loads(text)
    wrapped = "[" * depth + text + "]" * depth
    assert deepjson.loads(wrapped) == json.loads(wrapped)
    items = list(deepjson.array_items("[" + text + "," + text + "]"))
    assert items == [(json.loads(text), None)] * 2


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet='[]{}",:0123456789.eE-+ \n\ttfalsenuNIy\\x', max_size=40))
def test_the_iterative_decoder_refuses_what_json_refuses(text):
    try:
        expected = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            deepjson.loads_iteratively(text)
    else:
        value = deepjson.loads_iteratively(text)
        assert value == expected or (value != value and expected != expected)  # NaN


def test_text_of_a_deep_value_is_bounded_and_iterative():
    value: Any = "x"
    for _ in range(100_000):
        value = [value]
    shown = deepjson.text(value, 50)
    assert shown == "[" * 50 + "..."
    assert deepjson.text({"a": [1, None, True, "é"]}) == '{"a":[1,null,true,"é"]}'


# ---- regular expressions --------------------------------------------------------------------

def redos_log(tmp_path: Path, description: str) -> Path:
    return hostile_log(tmp_path / "redos.json", UNION_LOG, 0,
                       {"description": json.dumps(description)},
                       events_named=("SQLExecutionStart",))


def test_an_exponential_query_regex_runs_in_linear_time(tmp_path):
    """`^(a+)+$` on 30 characters took Python's re about a minute (doubling per character);
    the process is given 60 s to catch a hang, and must also answer as Python would."""
    log = redos_log(tmp_path, "a" * 30 + "!")
    started = time.monotonic()
    result = subprocess.run([*AQE_INSPECT, "check", str(log), "--expect", "coalesced",
                             "--query", "^(a+)+$"], capture_output=True, timeout=60)
    assert result.returncode == 1  # no query matches: a failed expectation, not a hang
    assert b"nothing in the input matches --query" in result.stdout
    result = subprocess.run([*AQE_INSPECT, "check", str(log), "--expect", "coalesced",
                             "--query", "^(a+)+!$"], capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 60


def test_an_exponential_match_in_an_expectation_file_runs_in_linear_time(tmp_path):
    log = redos_log(tmp_path, "a" * 40)
    config = tmp_path / "aqe-expect.toml"
    config.write_text('[[query]]\nmatch = "^(a+)+$"\nexpect = ["coalesced"]\n', "utf-8")
    result = subprocess.run([*AQE_INSPECT, "check", str(log), "--config", str(config)],
                            capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert b"PASS coalesced [/^(a+)+$/]" in result.stdout


@pytest.mark.parametrize("pattern, words", [
    ("(" * 1000 + "a" + ")" * 1000, "groups nested 1000 deep (at most 100)"),
    (r"(a)\1", "backreference"),
    ("(?P<x>a)(?P=x)", "backreference"),
    ("a(?=b)", "look-arounds"),
    ("(?<!b)a", "look-arounds"),
    ("a{1001}", "repetition count above 1,000"),
    ("(?:a{1000}){1000}", "cannot run it"),
    (r"[\W]", r"\W inside [...]"),
    ("(", "is neither an execution id nor a regular expression"),
])
def test_patterns_the_linear_engine_cannot_run_are_one_line_errors(tmp_path, pattern, words):
    log = redos_log(tmp_path, "aaa")
    code, out, err = run("check", str(log), "--expect", "coalesced", "--query", pattern)
    one_line_error(code, err, "--query", words)
    assert len(err) < 400  # a long pattern is shown cut short
    config = tmp_path / "aqe-expect.toml"
    config.write_text(f"[[query]]\nmatch = {json.dumps(pattern)}\nexpect = [\"coalesced\"]\n",
                      "utf-8")
    code, out, err = run("check", str(log), "--config", str(config))
    one_line_error(code, err, f"{config}:2: match", words)


@pytest.mark.parametrize("pattern, text, found", [
    ("daily_.*join", "run daily_orders join now", True),   # a search, not a match
    ("^aqe-sample:skew_join$", "aqe-sample:skew_join\n", True),  # $ before a final newline
    ("^aqe-sample:skew_join$", "aqe-sample:skew_join\nmore", False),
    (r"(?m)^more$", "aqe-sample:skew_join\nmore", True),
    (r"\w+é", "café", True),                  # \w is Unicode, as in Python
    (r"\d", "٣", True),
    (r"(?a)\d", "٣", False),
    (r"\s", "\u2028", True),
    ("a.b", "a\nb", False),
    ("(?s)a.b", "a\nb", True),
    ("(?i)ORDERS", "orders", True),
    ("x{}", "x{}", True),                      # braces Python reads as text
    ("a{,2}b", "aab", True),
    ("[[:alpha:]]", ":]", True),              # Python: a class of [ : a l p h, then ]
    ("[[:alpha:]]", "a", False),
    ("(?x) a b  # spaces and a comment", "ab", True),
    (r"count\(\*\)", "select count(*)", True),
    (r"\Aa\Z", "a\n", False),
])
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_patterns_keep_pythons_meaning(pattern, text, found):
    assert (re.search(pattern, text) is not None) is found  # the premise
    assert (compile_user_pattern(pattern).search(text) is not None) is found


#: Pieces of patterns, chosen to cover Python's syntax where RE2's differs.
ATOMS = st.sampled_from([
    "a", "b", "é", "É", "\\.", ".", "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "[ab]", "[^a]",
    "[a-c]", "[\\d_]", "[\\w.]", "[\\s,]", "[]a]", "[a-]", "\\n", "\\x41", "\\u00e9", "\\t",
    "{", "x{}", "\\{", "\\$", "\\^", "[.]", "\\\\", "[\\\\]", "٣", " ", "\\0", "[\\1]",
])
QUANTIFIERS = st.sampled_from(["", "", "*", "+", "?", "*?", "{2}", "{1,3}", "{,2}", "{2,}",
                               "+?", "{0}"])


@st.composite
def python_patterns(draw) -> str:
    def sequence(level: int) -> str:
        parts = []
        for _ in range(draw(st.integers(0, 4))):
            if level < 3 and draw(st.integers(0, 4)) == 0:
                opener = draw(st.sampled_from(["(", "(?:", "(?P<g>", "(?i:", "(?s:", "(?-i:"]))
                if opener == "(?P<g>" and "(?P<g>" in "".join(parts):
                    opener = "("
                body = "|".join(sequence(level + 1) for _ in range(draw(st.integers(1, 2))))
                parts.append(f"{opener}{body}){draw(QUANTIFIERS)}")
            else:
                parts.append(draw(ATOMS) + draw(QUANTIFIERS))
        return "".join(parts)

    flags = draw(st.sampled_from(["", "", "(?i)", "(?s)", "(?m)", "(?ms)", "(?x)"]))
    start = draw(st.sampled_from(["", "", "^", "\\A"]))
    end = draw(st.sampled_from(["", "", "$", "\\Z"]))
    branches = [sequence(0) for _ in range(draw(st.integers(1, 2)))]
    return flags + "|".join(start + branch + end for branch in branches)


TEXTS = st.text(alphabet=["a", "b", "c", "A", "é", "É", ".", "\n", " ", "\t", "1", "٣", "_",
                          "{", "}", "$", "^", "\\", "x", "\u2028", ":", "]"], max_size=12)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=python_patterns(), texts=st.lists(TEXTS, min_size=1, max_size=5))
def test_a_translated_pattern_finds_what_python_finds(pattern, texts):
    try:
        expected = re.compile(pattern)
    except re.error:
        with pytest.raises(InspectError):
            compile_pattern(pattern, "--query")
        return
    translated = compile_user_pattern(pattern)
    for text in texts:
        assert (translated.search(text) is not None) == (expected.search(text) is not None), \
            (pattern, text, translated.translated)


def test_a_selector_pickles_and_compares():
    import pickle

    selector = Selector.parse("daily.*join")
    again = pickle.loads(pickle.dumps(selector))
    assert again == selector and again.pattern.search("daily join") is not None
    assert selector.pattern.search("lone \ud800 surrogate join daily") is None
    assert Selector.parse("surrogate").pattern.search("lone \ud800 surrogate") is not None


# ---- expectation files ----------------------------------------------------------------------

@pytest.mark.parametrize("body, line, words", [
    ("expect = " + deep_list(5000, '"coalesced"') + "\n", 1, "nested deeper than 64 levels"),
    ('[[query]]\nmatch = "x"\nforbid = ["skew-join"]\nexpect = ' + "{a=" * 5000 + "1" +
     "}" * 5000 + "\n", 4, "nested deeper than 64 levels"),
    ("expect." + ".".join(f"k{n}" for n in range(5000)) + " = 1\n", 1,
     "expect must be an array, found a table"),
    ("expect = [{" + ".".join(f"k{n}" for n in range(5000)) + " = 1}]\n", 1,
     "expect items must be strings"),
])
def test_an_expectation_file_nested_5000_deep_is_one_located_line(tmp_path, body, line, words):
    config = tmp_path / "aqe-expect.toml"
    config.write_text(body, encoding="utf-8")
    code, out, err = run("check", str(UNION_LOG), "--config", str(config))
    one_line_error(code, err, f"{config}:{line}", words)
    assert len(err) < 400


def test_brackets_in_strings_and_comments_are_not_nesting(tmp_path):
    config = tmp_path / "aqe-expect.toml"
    config.write_text('# ' + "[" * 100 + '\n[[query]]\nname = "' + "[" * 100 +
                      '"\nmatch = \'\'\'' + "{" * 100 + "|aqe'''\nexpect = [\"coalesced\"]\n",
                      encoding="utf-8")
    code, out, err = run("check", str(UNION_LOG), "--config", str(config))
    assert code == 0, err


def test_the_regex_engine_is_imported_only_for_a_pattern():
    """google-re2 costs a few milliseconds to import: a command given no pattern (or an
    execution id) never imports it."""

    probe = ("import sys; from aqe_inspect.cli import main; main(sys.argv[1:]); "
             "print('re2' in sys.modules, file=sys.stderr)")
    for query, imported in ((None, "False"), ("2", "False"), ("scalar", "True")):
        args = ["diff", str(SCALAR_LOG)] + (["--query", query] if query else [])
        result = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True,
                                timeout=120)
        assert result.stderr.decode().split()[-1] == imported, (query, result.stderr)
