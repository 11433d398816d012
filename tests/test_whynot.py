"""`aqe-inspect why` on the real sample scenarios: each negative control's reason is named with
its setting where the input holds the evidence, "cannot tell" where it does not (a plan text
alone never blames a setting), and nothing is "blocked" of a kind that happened."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from aqe_inspect.cli import main

from .conftest import SAMPLE_PLANS

TRUTHS = sorted(SAMPLE_PLANS.glob("spark-*/*/truth.json"))
CONTROLS = [t for t in TRUTHS if json.loads(t.read_text()).get("control")]
#: Plan texts: what a user pastes. They hold no settings.
TEXT_FORMS = ("formatted_after.txt", "simple_after.txt", "extended_after.txt", "driver.log")
#: The forms that hold every setting and the run-time evidence.
EVENT_LOG = "eventlog.json"
#: Reasons a formatted plan's statistics settle once the settings are given (--conf).
SETTLED_BY_PLAN_AND_CONF = ("disabled", "above-broadcast-threshold", "user-repartition",
                            "aqe-disabled", "kept-by-cost")


def why(capsys, path: Path, *args: str) -> List[dict]:
    assert main(["why", str(path), "--format", "json", *args]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["schema"] == "aqe-inspect/why/v1"
    return answer["queries"]


def truth_of(path: Path) -> dict:
    return json.loads(path.read_text())


def control_query(queries: List[dict], truth: dict) -> dict:
    """The scenario's own query: in an event log, the execution labelled with its name."""
    labelled = [q for q in queries if truth["scenario"] in q.get("label", "")]
    return labelled[0] if labelled else queries[0]


def candidates(query: dict, kind: str) -> List[dict]:
    return [c for c in query["candidates"] if c["kind"] == kind]


def deciding(found: List[dict], config: Optional[str]) -> List[dict]:
    """The candidates not rewritten whose reasons name `config` (any plan reason if None)."""
    wanted = []
    for item in found:
        if item["verdict"] not in ("blocked", "not-needed"):
            continue
        if config is None and any(r["source"] == "plan" and r["config"] is None
                                  for r in item["reasons"]):
            wanted.append(item)
        elif config is not None and any(r["config"] == config for r in item["reasons"]):
            wanted.append(item)
    return wanted


def conf_args(truth: dict) -> List[str]:
    args = ["--spark-version", truth["spark_version"]]
    for key, value in truth["confs"].items():
        args += ["--conf", f"{key}={value}"]
    return args


def _id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}"


#: (Spark major version, control reason) whose event log lacks the evidence, and what the
#: "cannot tell" then needs. A 3.x event log cannot count the shuffle partitions that hold data
#: under a coalesced read: Spark 4 added the read's `number of empty partitions`, and a
#: coalesced read fetches a map's blocks of a range of partitions as one batch block.
EVENT_LOG_LACKS = {("3", "too-many-empty-partitions"): "hold data"}


def _asked_kind(control: dict) -> str:
    """The kind whose candidates say why a control's rewrite did not happen: with AQE off,
    `adaptive` (no rewrite of any kind is a candidate where nothing was re-planned)."""
    return "adaptive" if control["reason"] == "aqe-disabled" else control["kind"]


@pytest.mark.parametrize("truth_path", CONTROLS, ids=_id)
def test_the_event_log_names_each_controls_reason_and_setting(capsys, truth_path):
    truth = truth_of(truth_path)
    control = truth["control"]
    queries = why(capsys, truth_path.parent / EVENT_LOG)
    query = control_query(queries, truth)
    found = candidates(query, _asked_kind(control))
    assert found, f"no {control['kind']} candidate in {query}"
    assert not [c for c in found if c["verdict"] == "happened"]
    lacking = EVENT_LOG_LACKS.get((truth["spark_version"].split(".")[0], control["reason"]))
    if lacking is not None:
        assert not [c for c in found if c["verdict"] == "blocked"], found
        assert any(lacking in need for c in found for need in c["needs"]), found
        return
    named = deciding(found, control["config"])
    assert named, (f"{control['reason']}: no candidate names "
                   f"{control['config'] or 'a plan reason'}: {found}")


@pytest.mark.parametrize("truth_path", CONTROLS, ids=_id)
def test_a_plan_text_alone_never_blames_a_setting(capsys, truth_path):
    truth = truth_of(truth_path)
    control = truth["control"]
    for form in TEXT_FORMS:
        path = truth_path.parent / form
        if not path.exists():
            continue
        for query in why(capsys, path):
            for item in query["candidates"]:
                blamed = [r for r in item["reasons"] if r["source"] in ("config", "default")]
                assert not blamed, f"{form}: {item}"
        if control["config"] is not None and form == "formatted_after.txt":
            query = control_query(why(capsys, path), truth)
            found = candidates(query, _asked_kind(control))
            assert found and all(c["verdict"] == "cannot-tell" for c in found), found


@pytest.mark.parametrize("truth_path", [t for t in CONTROLS if truth_of(t)["control"]["reason"]
                                        in SETTLED_BY_PLAN_AND_CONF], ids=_id)
def test_a_formatted_plan_with_its_settings_names_the_reason(capsys, truth_path):
    truth = truth_of(truth_path)
    control = truth["control"]
    query = control_query(why(capsys, truth_path.parent / "formatted_after.txt",
                              *conf_args(truth)), truth)
    assert deciding(candidates(query, _asked_kind(control)), control["config"])


@pytest.mark.parametrize("truth_path", TRUTHS, ids=_id)
def test_nothing_is_blocked_of_a_kind_that_happened(capsys, truth_path):
    truth = truth_of(truth_path)
    happened = [kind for kind, count in truth["rewrites"].items() if count]
    forms: Dict[str, List[str]] = {EVENT_LOG: [], "history_sql.json": [],
                                   "formatted_after.txt": conf_args(truth),
                                   "simple_after.txt": []}
    for form, args in forms.items():
        path = truth_path.parent / form
        if not path.exists():
            continue
        query = control_query(why(capsys, path, *args), truth)
        for kind in happened:
            blocked = [c for c in candidates(query, kind) if c["verdict"] == "blocked"]
            assert not blocked, f"{form}: {kind} happened, yet: {blocked}"


def test_every_rewrite_kind_has_an_explainer():
    from aqe_inspect.rewrites.detectors import DETECTORS
    from aqe_inspect.whynot import EXPLAINERS

    assert sorted(EXPLAINERS) == sorted(d.kind for d in DETECTORS)


def test_the_json_contract(capsys):
    """aqe-inspect/why/v1: each candidate's fields, verdicts and sources from their sets."""
    queries = why(capsys, SAMPLE_PLANS / "spark-4.3.0" / "aqe_declines" / EVENT_LOG)
    seen = set()
    for query in queries:
        assert {"id", "candidates", "notes"} <= set(query)
        for item in query["candidates"]:
            # A skew decision carries each side's partition sizes too (additive).
            extra = {"skew"} if item["kind"] == "skew-join" else set()
            assert set(item) == {"kind", "node", "line", "verdict", "reasons", "needs",
                                 "margins"} | extra
            for side in item.get("skew", ()):
                assert set(side) >= {"side", "partitions", "missing"}
            assert item["verdict"] in ("happened", "blocked", "not-needed", "cannot-tell")
            seen.add(item["verdict"])
            for reason in item["reasons"]:
                assert set(reason) == {"config", "value", "measure", "source", "text"}
                assert reason["source"] in ("plan", "metric", "config", "default")
                assert reason["measure"] in (None, "data size", "shuffle bytes")
                assert reason["config"] is None or reason["config"].startswith("spark.")
    assert {"happened", "blocked", "not-needed"} <= seen


def test_check_prints_why_beside_a_failure(capsys):
    path = SAMPLE_PLANS / "spark-4.3.0" / "smj_to_bhj_off" / EVENT_LOG
    assert main(["check", str(path), "--expect", "smj-to-bhj", "--format", "json"]) == 1
    result = json.loads(capsys.readouterr().out)
    (failed,) = [e for e in result["expectations"] if not e["passed"]]
    assert [(w["verdict"], w["reasons"][0]["config"]) for w in failed["why"]] == [
        ("blocked", "spark.sql.adaptive.autoBroadcastJoinThreshold")]
    plan = SAMPLE_PLANS / "spark-4.3.0" / "smj_to_bhj_off" / "formatted_after.txt"
    assert main(["check", str(plan), "--expect", "smj-to-bhj", "--conf",
                 "spark.sql.adaptive.autoBroadcastJoinThreshold=-1"]) == 1
    out = capsys.readouterr().out
    assert "why not: query 1: SortMergeJoin (15): blocked" in out and "(--conf)" in out


#: A real application (tests/fixtures/eventlogs/addresses/gen.py, PySpark 3.5.9 and 4.3.0): a
#: LEFT OUTER join whose right side is skewed, partition coalescing at Spark's default (on).
ADDRESSES = Path(__file__).parent / "fixtures" / "eventlogs" / "addresses"
LEFT_OUTER_SKEWED = "left outer join, skewed right side"


def _labelled(capsys, folder: Path, label: str, *args: str) -> dict:
    """The query labelled `label` among the event logs of `folder`."""
    found = [query for log in sorted(folder.glob("local-*"))
             for query in why(capsys, log, *args) if query.get("label") == label]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("line", ["spark-3.5.9", "spark-4.3.0"])
def test_a_left_outer_join_needs_nothing_of_its_right_side(capsys, line):
    """OptimizeSkewedJoin splits the right side of inner, cross and right outer joins only
    (canSplitRightSide): the skewed right side of a LEFT OUTER join stays whole whatever its
    partition sizes, which the event log's coalesced reads hide. The answer says so and asks
    for nothing of that side; the left side is under the skew bar: blocked, not cannot tell."""
    folder = ADDRESSES / line
    truth = truth_of(folder / "truth.json")
    (join,) = truth["joins"]
    assert join["join_type"] == "LeftOuter"
    stages = {stage["id"]: stage["bytes_by_partition"] for stage in truth["stages"]}
    right, left = stages[join["right_stage"]], stages[join["left_stage"]]
    threshold = 4 * 1024
    assert truth["confs"]["spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes"] == "4KB"
    assert max(right) > max(threshold, 2 * sorted(right)[len(right) // 2])  # skewed, by JVM truth
    assert max(left) < threshold and truth["rewrites"]["skew-join"] == 0
    assert truth["rewrites"]["coalesced"] >= 2  # the reads that hide the partition sizes

    query = _labelled(capsys, folder, LEFT_OUTER_SKEWED, "--kind", "skew-join")
    (found,) = query["candidates"]
    texts = [reason["text"] for reason in found["reasons"]]
    assert found["verdict"] == "blocked", found
    assert found["needs"] == [], found
    assert any(text.startswith("a LeftOuter join cannot split its right side ShuffleQueryStage")
               for text in texts), texts
    assert any("left side" in text and reason["config"] ==
               "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes"
               for text, reason in zip(texts, found["reasons"])), texts


def test_a_plan_text_asks_only_for_the_sides_the_join_can_split(capsys):
    """With no sizes at all, the answer needs the left side's (splittable) alone."""
    path = SAMPLE_PLANS / "spark-4.3.0" / "skew_unsplittable_side" / "formatted_after.txt"
    (query,) = why(capsys, path, "--kind", "skew-join")
    (found,) = query["candidates"]
    assert found["verdict"] == "cannot-tell"
    assert [need for need in found["needs"] if "right side" in need] == [], found
    assert any("left side" in need for need in found["needs"]), found
    assert any(reason["text"].startswith("a LeftOuter join cannot split its right side")
               for reason in found["reasons"]), found


@pytest.mark.parametrize("width", [80, 60])
def test_no_line_of_the_text_answer_passes_the_width(capsys, width):
    """A reason's setting is one word (`spark.sql.adaptive.skewJoin.skewedPartitionThreshold
    InBytes=256MB`, 66 characters): where it does not fit beside the reasons' indent, it is
    hung lower on a line of its own, within the width; the words stay whole and in order."""
    checked = 0
    for log in sorted(SAMPLE_PLANS.glob(f"spark-*/*/{EVENT_LOG}")):
        assert main(["why", str(log), "--width", str(width)]) == 0
        out = capsys.readouterr().out
        assert main(["why", str(log), "--width", "1000"]) == 0
        wide = capsys.readouterr().out
        for line in out.splitlines():
            # Only a word wider than the screen passes it, and then from the first column.
            assert len(line) <= width or line == line.strip() and " " not in line, (log, line)
        assert out.split() == wide.split(), log
        checked += "InBytes=" in out
    assert checked > 10
