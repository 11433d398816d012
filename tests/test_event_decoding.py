"""Events decoded by msgspec (sources/deepjson.loads) are what `json` decodes, and what msgspec
refuses is decoded (or refused) as `json` does."""

from __future__ import annotations

import json
import subprocess

import pytest

from aqe_inspect.sources import deepjson

from .conftest import AQE_INSPECT, ROOT, SAMPLE_PLANS

EVENT_LOGS = sorted(SAMPLE_PLANS.glob("spark-*/*/eventlog*.json")) + sorted(
    (ROOT / "tests" / "fixtures").rglob("*.json"))


def test_every_sample_event_decodes_as_json_does():
    checked = 0
    for path in EVENT_LOGS:
        for line in path.read_bytes().splitlines():
            if not line.strip():
                continue
            try:
                expected = json.loads(line.decode("utf-8"))
            except ValueError:
                with pytest.raises(ValueError):
                    deepjson.loads(line)
                continue
            assert deepjson.loads(line) == expected
            checked += 1
    assert checked > 1_000


@pytest.mark.parametrize("text", [
    b"12345678901234567890123456789",  # past 64 bits: an int, as json reads it
    b"1.5e400", b"NaN", b"-Infinity",  # json's non-standard numbers
    b'"\\ud800"',  # a lone surrogate
    b"\xef\xbb\xbf{}",  # a byte order mark
    b"[" * 1500 + b"]" * 1500,  # deeper than msgspec goes, not than deepjson does
])
def test_what_msgspec_refuses_decodes_as_json_does(text):
    if text.startswith(b"["):
        value, depth = deepjson.loads(text), 0
        while value:
            assert isinstance(value, list) and len(value) == 1
            value, depth = value[0], depth + 1
        assert value == [] and depth == 1499
    else:
        assert repr(deepjson.loads(text)) == repr(
            json.loads(text.decode(json.detect_encoding(text), "surrogatepass")))


@pytest.mark.parametrize("text", [b'{"a":1}x', b"[1,]", b'"\xff"', b'"a\nb"', b"01"])
def test_malformed_json_is_refused_as_json_refuses_it(text):
    with pytest.raises(ValueError):
        deepjson.loads(text)


def test_too_deep_is_still_refused():
    with pytest.raises(deepjson.TooDeep):
        deepjson.loads(b"[" * 20_000 + b"]" * 20_000)


def test_a_node_whose_metrics_are_not_a_list_is_read(tmp_path):
    """Found by the fuzz tests: `"metrics": true` in the History Server's JSON was an internal
    error."""
    history = [{"id": 0, "status": "COMPLETED", "description": "x",
                "planDescription": "== Physical Plan ==\nRange (1)\n\n\n(1) Range\n"
                                   "Output [1]: [id#0L]\nArguments: 0, 5, 1, 2\n\n",
                "submissionTime": "2026-11-23T14:59:54.874GMT", "duration": 20,
                "nodes": [{"nodeId": 0, "nodeName": "Range", "metrics": True}], "edges": []}]
    path = tmp_path / "history_sql.json"
    path.write_text(json.dumps(history))
    done = subprocess.run([*AQE_INSPECT, "diff", str(path), "--format", "json"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["queries"]


def test_a_plan_whose_children_are_not_a_list_is_read(tmp_path):
    """Found by the fuzz tests: `"children": true` in an event's sparkPlanInfo was an internal
    error."""
    from .test_fuzz_eventlog import SCALAR_LOG, replace_fields

    info = ('{"nodeName":"AdaptiveSparkPlan isFinalPlan=true","simpleString":"AdaptiveSparkPlan'
            ' isFinalPlan=true [x#1]","children":true,"metadata":{},"metrics":[{"name":"number'
            ' of output rows","accumulatorId":1,"metricType":"sum"}]}')
    path = tmp_path / "hostile.json"
    path.write_bytes(replace_fields(SCALAR_LOG, 2, {"sparkPlanInfo": info, "description": "null",
                                                    "physicalPlanDescription": '""'}))
    done = subprocess.run([*AQE_INSPECT, "diff", str(path), "--format", "json"],
                          capture_output=True, text=True)
    assert "internal error" not in done.stderr
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["queries"]
