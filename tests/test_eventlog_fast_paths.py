"""The event-log reader's fast paths give what the plain ways give: nodes made by filling their
fields (`new_node`, `node_with`), a stage's metric totals decoded whole by msgspec, a query's
report JSON written by msgspec (`json_writer.plain_json_text`)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aqe_inspect.formats.json_writer import iter_json
from aqe_inspect.formats.json_writer import plain_json_text as json_text
from aqe_inspect.parsing.formatted_plan import new_node, node_with
from aqe_inspect.plan.model import Node, Spread
from aqe_inspect.sources.eventlog import runtime


def test_a_node_made_by_filling_its_fields_is_the_constructors():
    child = Node(name="Range", args="(0, 10)", id=1, line=3)
    values = dict(name="Project", args="[a#1]", id=2, codegen_stage=1, whole_stage_codegen=True,
                  title="Project", details={"Output [1]": "[a#1]"}, children=(child,), line=2)
    made = new_node(values)
    assert made == Node(**values)
    assert made.metrics == {} and made.spreads == {} and made.inner == ()
    assert made.metrics is not new_node(values).metrics  # a fresh default each, as Node makes
    changed = node_with(made, {"metrics": {"rows": 5}, "spreads": {"x": Spread(1, 2, 3)}})
    assert changed == dataclasses.replace(made, metrics={"rows": 5},
                                          spreads={"x": Spread(1, 2, 3)})
    assert made.metrics == {}  # the node it was made from is untouched
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.name = "Other"  # type: ignore[misc]


def _stage(accumulables: str, tail: str = ', "Resource Profile Id": 0') -> bytes:
    return ('{"Event":"SparkListenerStageCompleted","Stage Info":{"Stage ID":3,'
            '"Stage Attempt ID":0,"RDD Info":[{"RDD ID":1,"Name":"x"}],'
            f'"Accumulables":{accumulables}{tail}}}}}').encode()


def _old_totals(text: bytes):
    try:
        return runtime.accumulable_values(runtime.value_after(text, b'"Accumulables":'),
                                          "Value")
    except Exception as error:  # noqa: BLE001 - the kind of error is compared
        return type(error)


def _new_totals(text: bytes):
    try:
        return runtime.stage_totals(text)
    except Exception as error:  # noqa: BLE001
        return type(error)


@pytest.mark.parametrize("text", [
    _stage('[{"ID":7,"Name":"rows","Value":"12"},{"ID":8,"Value":5},{"ID":9,"Value":-1}]'),
    _stage('[{"ID":7,"Value":"1e3"},{"ID":true,"Value":4},{"ID":8,"Value":2.5}]'),
    _stage('[{"ID":7,"Value":184467440737095516160}]'),  # past 64 bits: json keeps the int
    _stage('[{"ID":7,"Value":"3"}]', tail=', "Other": {"Accumulables": [{"ID": 9, "Value": 1}]}'),
    _stage('[{"ID":7,"Value":"3"}'),  # cut
    _stage('{"ID":7}'),
    _stage('[]', tail=', "Name": "\\ud800"'),  # a lone surrogate msgspec refuses
    b'{"Event":"SparkListenerStageCompleted","Stage Info":{"Stage ID":3}}',
    _stage('[{"ID":7,"Value":"3"}]')[:-3] + b'\xff\xfe"}}',
])
def test_stage_totals_are_what_the_text_after_the_key_gives(text):
    assert _new_totals(text) == _old_totals(text)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES, base=st.integers(min_value=0, max_value=3))
def test_json_text_is_iter_jsons_text(value, base):
    assert json_text(value, base) == "".join(iter_json(value, base=base))


def test_json_text_of_a_real_report_is_json_dumps():
    report = {"id": "3", "line": 12, "rewrites": [{"kind": "coalesced", "numbers": {"a": 1},
                                                    "evidence": ["é \u2028 \x1b \"q\" \\"]}],
              "counts": {}, "notes": [], "ratio": None, "adaptive": True}
    assert json_text(report) == json.dumps(report, indent=2, ensure_ascii=False)
    assert json_text({"f": 1e16}) == json.dumps({"f": 1e16}, indent=2)  # written by iter_json
    assert json_text({"s": "\ud800"}, 2) == "".join(iter_json({"s": "\ud800"}, base=2))


def _updates_read(path, spans: bool):
    """What the scanner keeps of each execution's updates reading `path` (as spans read back,
    or as bytes), with its notes."""
    from aqe_inspect.sources.eventlog.events import Scanner, resolved
    from aqe_inspect.sources.eventlog.files import find_event_logs

    notes: list = []
    scanner = Scanner(find_event_logs(str(path))[0], notes, spans=spans)
    kept = [(raw.start, raw.execution_id, raw.update, raw.update_line, raw.updates, raw.held,
             raw.finished, raw.start_line, raw.runtime.completed, raw.runtime.task_counts)
            for raw in map(resolved, scanner.executions())]
    return kept, notes, scanner.events


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"])
def test_updates_kept_in_place_are_the_updates_read_as_bytes(tmp_path, ending):
    """An update of a plain file is kept where it stands, its bytes not copied
    (`Scanner._update_in_place`): read back, it is what the scanner keeps reading bytes, with
    a `\\r` before its newline, and where its execution id is past the head (read the general
    way)."""
    from pathlib import Path

    sample = Path(__file__).resolve().parents[1] / "sample_plans" / "spark-3.5.9" / \
        "local_read" / "eventlog.json"
    lines = sample.read_bytes().splitlines()
    moved = set()
    for at, line in enumerate(lines):
        kind = next((kind for kind in (b"SQLAdaptiveExecutionUpdate", b"SQLExecutionStart")
                     if kind in line[:120]), None)
        if kind is not None and kind not in moved:
            event = json.loads(line)
            number = event.pop("executionId")
            event["executionId"] = number  # written last: past the head's window
            lines[at] = json.dumps(event, separators=(",", ":")).encode()
            moved.add(kind)
    assert len(moved) == 2
    path = tmp_path / "eventlog.json"
    path.write_bytes(ending.join(lines) + ending)
    in_place = _updates_read(path, spans=True)
    assert in_place == _updates_read(path, spans=False)
    assert all(start for start, *_ in in_place[0])
    assert sum(kept[4] for kept in in_place[0]) >= 3 and in_place[0][0][8]


def test_a_formatted_plan_without_unknown_operators_names_none_by_its_line():
    """`read_description` does not walk a formatted plan's trees for operators named by their
    line when its text never prints `(unknown)`: the only operators without an id there. Held
    over every sample formatted plan, those with `(unknown)` operators among them."""
    from pathlib import Path

    from aqe_inspect.parsing.formatted_plan import parse_formatted
    from aqe_inspect.sources.eventlog import planinfo

    samples = Path(__file__).resolve().parents[1] / "sample_plans"
    read = unknown = 0
    for path in sorted(samples.rglob("formatted*.txt")):
        text = path.read_text("utf-8", "replace")
        query = parse_formatted(text, "x")
        if query is None:
            continue
        read += 1
        if "unknown" in text:
            unknown += planinfo._named_by_line(query)
        else:
            assert not planinfo._named_by_line(query), path
        assert planinfo.read_description(text, "x", "", "")[0] == planinfo.with_plan_lines(query)
    assert read > 100 and unknown > 0
