"""Hypothesis: a damaged event log (cut anywhere, bytes flipped, lines lost, doubled, swapped
or replaced by junk; plain and each Spark codec) is read as far as it can be, or fails with
one line naming the file: never a traceback. The logs are the sample generator's real ones."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.cli import main

from .conftest import SAMPLE_PLANS

MANIFEST = json.loads((SAMPLE_PLANS / "eventlogs.json").read_text("utf-8"))["logs"]
PLAIN = [SAMPLE_PLANS / e["path"] for e in MANIFEST
         if e["layout"] == "single" and e["codec"] is None and e["scenario"] in
         ("coalesced_aggregation", "skew_join", "empty_relation")]
COMPRESSED = [SAMPLE_PLANS / e["path"] for e in MANIFEST
              if e["layout"] == "single" and e["codec"] is not None]

FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


def run_cli(path: Path, *args: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["diff", str(path), "--format", "json", *args])
    assert code in (0, 2), err.getvalue()
    if code == 2:
        message = err.getvalue()
        assert message.startswith("aqe-inspect: error: "), message
        assert message.count("\n") == 1, message
        assert "internal error" not in message, message
        assert str(path) in message, message
    else:
        report = json.loads(out.getvalue())
        assert isinstance(report["queries"], list)
        # No input, no report: exit 0 holds a query, or an application that ran none.
        application = report.get("application") or {}
        assert report["queries"] or application.get("app_id") or application.get("name"), \
            report


@st.composite
def damaged_plain_logs(draw) -> bytes:
    lines = draw(st.sampled_from(PLAIN)).read_bytes().split(b"\n")
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["cut", "flip", "drop", "double", "swap", "junk"]))
        line = lines[index]
        if action == "cut":
            lines = lines[:index] + [line[: draw(st.integers(0, len(line)))]]
        elif action == "flip" and line:
            at = draw(st.integers(0, len(line) - 1))
            lines[index] = line[:at] + bytes([line[at] ^ draw(st.integers(1, 255))]) + \
                line[at + 1:]
        elif action == "drop":
            del lines[index]
        elif action == "double":
            lines.insert(index, line)
        elif action == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[index], lines[other] = lines[other], lines[index]
        else:
            lines.insert(index, draw(st.binary(max_size=60)).replace(b"\n", b""))
        if not lines:
            lines = [b""]
    return b"\n".join(lines)


@FUZZ
@given(data=damaged_plain_logs())
def test_damaged_plain_logs_are_read_or_fail_cleanly(tmp_path, data):
    path = tmp_path / "app-1.inprogress"
    path.write_bytes(data)
    run_cli(path)


@pytest.mark.parametrize("source", COMPRESSED, ids=lambda p: p.name + "-" + p.parent.parent.name)
@FUZZ
@given(cut=st.floats(0, 1), flip=st.one_of(st.none(), st.floats(0, 1)),
       value=st.integers(1, 255))
def test_damaged_compressed_logs_are_read_or_fail_cleanly(tmp_path, source, cut, flip, value):
    data = bytearray(source.read_bytes())
    if flip is not None:
        at = int(flip * (len(data) - 1))
        data[at] ^= value
    data = bytes(data[: max(1, int(cut * len(data)))])
    path = tmp_path / source.name
    path.write_bytes(data)
    run_cli(path)
    run_cli(path, "--query", "aqe-sample")


def _exit(command: str, path: Path, *args: str) -> int:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([command, str(path), *args])
    if code == 2:
        assert err.getvalue().startswith(f"aqe-inspect: error: {path}:") and \
            err.getvalue().count("\n") == 1, err.getvalue()
    return code


@FUZZ
@given(source=st.sampled_from(PLAIN), cut=st.floats(0, 1))
def test_a_log_cut_before_its_application_started_is_exit_2_everywhere(tmp_path, source,
                                                                      cut):
    """Cut at any byte: before the application's start event is whole, nothing can be read
    (no application, no execution: Spark writes the start before any SQL event) and `diff`,
    `why` and `check` all exit 2 with one line; from there on, they read the application
    (`diff` and `why` exit 0; `check` judges, never passing on no query)."""
    data = source.read_bytes()
    start = data.index(b'{"Event":"SparkListenerApplicationStart"')
    assert data.find(b'"Event":"org.apache.spark.sql.execution.ui.SparkListenerSQL') > start
    whole = data.index(b"}\n", start) + 1  # the start event's last byte, + 1
    at = int(cut * len(data))
    path = tmp_path / "app-1.inprogress"
    path.write_bytes(data[:at])
    codes = {command: _exit(command, path, *args) for command, args in (
        ("diff", ("--format", "json")), ("why", ()), ("check", ("--forbid", "skew-join")))}
    if at < whole:
        assert codes == {"diff": 2, "why": 2, "check": 2}, at
    else:
        assert codes["diff"] == codes["why"] == 0 and codes["check"] in (0, 1), (at, codes)


# ---- hostile fields: sparkPlanInfo trees, descriptions, History Server JSON -----------------

SCALAR_LOG = SAMPLE_PLANS / "spark-3.5.9" / "scalar_subquery" / "eventlog.json"
SCALAR_HISTORY = SAMPLE_PLANS / "spark-3.5.9" / "scalar_subquery" / "history_sql.json"
MARK = "@@FUZZ@@"

#: JSON values a field may hold instead of what Spark writes (as JSON text).
ODD_VALUES = st.one_of(
    st.sampled_from(['null', 'true', '0', '-1', '1e400', '"', '""', '"\\ud800"', '[]', '{}',
                     '"WholeStageCodegen (1)"', '"InputAdapter"', '"AdaptiveSparkPlan"',
                     '"ReusedExchange"', '"Subquery"', '"AQEShuffleRead coalesced"',
                     '"Exchange hashpartitioning(k#1, 200), ENSURE_REQUIREMENTS, [plan_id=7]"']),
    st.text(max_size=30).map(json.dumps),
    st.integers(0, 12000).map(lambda depth: "[" * depth + "]" * depth),
)


@st.composite
def plan_infos(draw) -> str:
    """A sparkPlanInfo as JSON text, of random shape: chains up to 6,000 operators deep
    (past what is read), wide nodes, wrappers, and fields of the wrong type."""
    names = ["Project", "Filter", "Exchange", "AQEShuffleRead", "ShuffleQueryStage",
             "WholeStageCodegen (3)", "InputAdapter", "SortMergeJoin", "BroadcastHashJoin",
             "ReusedExchange", "Subquery", "Union", "HashAggregate", "Scan parquet"]

    def node(name: str, children: str, odd: bool = False) -> str:
        fields = [f'"nodeName":{json.dumps(name)}',
                  f'"simpleString":{json.dumps(name + " [x#1]")}',
                  f'"children":[{children}]', '"metadata":{}',
                  '"metrics":[{"name":"number of output rows","accumulatorId":1,'
                  '"metricType":"sum"}]']
        if odd:  # one field replaced by an odd value
            at = draw(st.integers(0, len(fields) - 1))
            key = fields[at].split(":", 1)[0]
            fields[at] = f"{key}:{draw(ODD_VALUES)}"
        return "{" + ",".join(fields) + "}"

    depth = draw(st.one_of(st.integers(0, 30), st.integers(300, 6000)))
    width = draw(st.integers(1, 4))
    odd = set(draw(st.lists(st.integers(0, depth), max_size=4)))
    shift = draw(st.integers(0, len(names) - 1))
    # Bottom up, iteratively: every 97th level is `width` wide, only its first child deep.
    text = node("LocalTableScan", "", -1 in odd)
    for level in range(depth):
        siblings = [node(names[(level + n) % len(names)], "") for n in range(width - 1)] \
            if level % 97 == 0 else []
        text = node(names[(level + shift) % len(names)], ",".join([text, *siblings]),
                    level in odd)
    return node("AdaptiveSparkPlan isFinalPlan=true", text, depth in odd)


def replace_fields(path: Path, execution: int, fields: dict) -> bytes:
    lines = []
    for line in path.read_text("utf-8").splitlines():
        event = json.loads(line)
        if event.get("executionId") == execution and any(k in event for k in fields):
            marked = {k: (f"{MARK}{k}" if k in fields else v) for k, v in event.items()}
            line = json.dumps(marked, separators=(",", ":"))
            for key, raw in fields.items():
                line = line.replace(json.dumps(f"{MARK}{key}"), raw)
        lines.append(line)
    return ("\n".join(lines) + "\n").encode("utf-8")


def judged_in_one_line(path: Path, *args: str) -> None:
    """`check`: judged (0, 1) or one line (2), never an internal error."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["check", str(path), "--expect", "coalesced", *args])
    assert code in (0, 1, 2), err.getvalue()
    if code == 2:
        message = err.getvalue()
        assert message.startswith("aqe-inspect: error: ") and message.count("\n") == 1
        assert "internal error" not in message, message
    else:
        assert err.getvalue() == "", err.getvalue()


@FUZZ
@given(info=plan_infos(), description=st.one_of(ODD_VALUES, st.text().map(json.dumps)),
       keep_text=st.booleans())
def test_hostile_plan_trees_and_descriptions_are_read_or_fail_cleanly(tmp_path, info,
                                                                      description, keep_text):
    fields = {"sparkPlanInfo": info, "description": description}
    if not keep_text:
        fields["physicalPlanDescription"] = '""'
    path = tmp_path / "hostile.json"
    path.write_bytes(replace_fields(SCALAR_LOG, 2, fields))
    run_cli(path)
    run_cli(path, "--query", "sample|[[:alpha:]]")
    judged_in_one_line(path)


@st.composite
def hostile_history(draw) -> bytes:
    entries = json.loads(SCALAR_HISTORY.read_text("utf-8"))
    raws = [json.dumps(entry) for entry in entries]
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(entries) - 1))
        entry = entries[at]
        key = draw(st.sampled_from(["id", "status", "description", "planDescription", "nodes",
                                    "edges", "submissionTime", "duration", "metrics"]))
        if key == "metrics" and isinstance(entry.get("nodes"), list) and entry["nodes"]:
            node = draw(st.integers(0, len(entry["nodes"]) - 1))
            nodes = [dict(n) for n in entry["nodes"]]
            nodes[node]["metrics"] = MARK
            entry = {**entry, "nodes": nodes}
        else:
            entry = {**entry, key: MARK}
        entries[at] = entry
        raws[at] = json.dumps(entry).replace(json.dumps(MARK), draw(ODD_VALUES))
    shape = draw(st.sampled_from(["list", "one", "cut"]))
    if shape == "one":
        return raws[0].encode("utf-8")
    text = "[" + ",".join(raws) + "]"
    if shape == "cut":
        text = text[: draw(st.integers(1, len(text)))]
    return text.encode("utf-8", "surrogatepass")


@FUZZ
@given(data=hostile_history())
def test_hostile_history_json_is_read_or_fails_cleanly(tmp_path, data):
    path = tmp_path / "history_sql.json"
    path.write_bytes(data)
    run_cli(path)
    judged_in_one_line(path)
