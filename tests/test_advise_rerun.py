"""`advise` proven in real Spark (issue 49's acceptance): every negative scenario of the sample
generator, re-run on its own Spark line with the settings `aqe-inspect advise` gave for its own
event log, its rewrite read from the JVM's plan objects (sample_plans/advise_rerun.py writes
`advised.json` beside each scenario's `truth.json`; PySpark 3.5.9 and 4.3.0).

The recorded advice must be the advice the command gives today: a change of advice logic fails
here until the scenarios are re-run with it (`python sample_plans/advise_rerun.py`, README)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from contextlib import redirect_stdout
from pathlib import Path
from typing import List, Optional

import pytest

from aqe_inspect.cli import main

from .conftest import AQE_INSPECT, SAMPLE_PLANS

LINES = ("spark-3.5.9", "spark-4.3.0")
RECORDS = sorted(SAMPLE_PLANS.glob("spark-*/*/advised.json"))
LABEL = "aqe-sample:"
#: The issue's list, each on both lines: a threshold off, skew off, coalescing off, a broadcast
#: demoted by empty partitions, AQE off, a rule excluded, a threshold just under the measured
#: size (AQE's own or the static one AQE falls back to), a skew factor just above the ratio.
MUST_FIRE = {
    "smj_to_bhj_off": ["smj-to-bhj"],
    "skew_join_off": ["skew-join"],
    "coalesced_aggregation_off": ["coalesced"],
    "aqe_declines": ["smj-to-bhj"],
    "aqe_off": ["smj-to-bhj", "local-read", "coalesced"],
    "empty_anti_join_aqe_off": ["empty-relation"],
    "empty_relation_off": ["empty-relation"],
    "empty_anti_join_excluded": ["empty-relation"],
    "one_row_off": ["one-row"],
    "limit_removed_off": ["limit-removed"],
    "broadcast_just_above": ["smj-to-bhj"],
    "broadcast_static_just_above": ["smj-to-bhj"],
    "skew_below_factor": ["skew-join"],
}
#: Where no setting makes the missing rewrite fire: the query itself decides (a join type that
#: cannot split its skewed side, the user's repartition to a number, an input with rows).
NOTHING_CAN_FIRE = ("skew_unsplittable_side", "user_repartition", "empty_anti_join_not_empty")
#: Where advise must change nothing at all.
NO_CHANGE_AT_ALL = ("no_exchange", "user_repartition")
def load(path: Path) -> dict:
    return json.loads(path.read_text("utf-8"))


def _id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}"


def record_of(line: str, name: str) -> dict:
    return load(SAMPLE_PLANS / line / name / "advised.json")


def labelled(queries: List[dict], scenario: str) -> Optional[dict]:
    found = [q for q in queries if q.get("label") == LABEL + scenario]
    return found[0] if found else (queries[0] if len(queries) == 1 else None)


def decisions(advice: dict, scenario: str) -> dict:
    """The decisions of an `aqe-inspect/advice/v1` answer for the scenario's query, as
    advise_rerun.py records them (the prose left out)."""
    query = labelled(advice["queries"], scenario) or {}
    return {
        "changes": [{"kind": c["kind"], "key": c["key"], "value": c["value"],
                     "direction": c["direction"], "current": c["current"]["value"],
                     "origin": c["current"]["origin"]} for c in query.get("changes", [])],
        "instead": [[c["kind"], c["key"], c["value"]] for c in query.get("instead", [])],
        "fixed": [f["kind"] for f in query.get("fixed", [])],
        "nothing": query.get("nothing") is not None,
        "incomplete": bool(query.get("incomplete")),
        "settings": [[s["key"], s["value"]] for s in advice["settings"]],
    }


def advise_here(*args: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["advise", *args]) == 0
    return out.getvalue()


def kind_args(kinds: List[str]) -> List[str]:
    return [arg for kind in kinds for arg in ("--kind", kind)]


def test_every_negative_scenario_was_rerun_on_both_lines():
    for line in LINES:
        negatives = {t.parent.name for t in (SAMPLE_PLANS / line).glob("*/truth.json")
                     if load(t)["control"] is not None} | {"no_exchange"}
        recorded = {p.parent.name for p in (SAMPLE_PLANS / line).glob("*/advised.json")}
        assert recorded == negatives, line
        assert set(MUST_FIRE) | set(NOTHING_CAN_FIRE) <= recorded
        for path in (SAMPLE_PLANS / line).glob("*/advised.json"):
            record = load(path)
            assert record["schema"] == "aqe-inspect/advised-rerun/v1"
            assert record["spark_version"] == line.split("-", 1)[1]
            assert record["scenario"] == path.parent.name
            # the settings before are those the scenario's truth records
            truth = load(path.parent / "truth.json")
            assert record["confs_before"] == truth["confs"]
            assert record["rewrites_before"] == truth["rewrites"]


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("name", sorted(MUST_FIRE))
def test_the_advised_settings_make_the_missing_rewrite_fire(line, name):
    """The issue's acceptance: advised for the kind the scenario misses, re-run, and the JVM's
    final plan has it, where the scenario's own run did not."""
    record = record_of(line, name)
    asked = record["asked"]
    assert record["wanted"] == MUST_FIRE[name]
    assert asked["changes"], asked["decisions"]
    for kind in MUST_FIRE[name]:
        assert record["rewrites_before"][kind] == 0
        assert asked["rerun"]["rewrites"][kind] > 0, (kind, asked["rerun"])
        assert asked["fired"][kind] is True
    assert asked["rerun"]["adaptive"] is True
    # the re-run ran with the scenario's settings and exactly the advised ones on top
    assert asked["rerun"]["confs"] == {**record["confs_before"], **dict(asked["changes"])}
    for key, value in asked["changes"]:
        assert record["confs_before"].get(key) != value, key


@pytest.mark.parametrize("path", RECORDS, ids=_id)
def test_every_advised_change_fires_its_own_rewrite(path):
    """Of every question (the missing kind, and all kinds at once), each change advised made
    its own rewrite fire in the re-run (a broadcast advised for a join, coalescing for a read)."""
    record = load(path)
    for question in ("asked", "whole"):
        answer = record[question]
        if answer is None or not answer["changes"]:
            assert answer is None or answer["rerun"] is None
            continue
        own = {c["kind"] for c in answer["decisions"]["changes"]}
        assert own <= set(answer["fired"])
        assert all(answer["fired"].values()), (question, answer["fired"], answer["rerun"])


@pytest.mark.parametrize("line", LINES)
def test_no_change_is_advised_where_nothing_can_fire(line):
    for name in NOTHING_CAN_FIRE:
        asked = record_of(line, name)["asked"]
        assert asked["changes"] == [] and asked["rerun"] is None, name
        assert asked["spark_submit"] == [], name
    for name in ("skew_unsplittable_side", "user_repartition"):
        # it says what in the query decides: the join type, the user's repartition
        decided = record_of(line, name)["asked"]["decisions"]["fixed"]
        assert decided == [record_of(line, name)["control"]["kind"]], name
    for name in NO_CHANGE_AT_ALL:
        whole = record_of(line, name)["whole"]
        assert whole["changes"] == [] and whole["spark_submit"] == [], name
    assert record_of(line, "no_exchange")["whole"]["decisions"]["nothing"] is True


@pytest.mark.parametrize("path", RECORDS, ids=_id)
def test_the_advice_today_is_the_recorded_one(path):
    """advise on the same event log, with the same question, decides what was recorded and
    applied: the changes (key, value, current value and its origin), the other ways, what the
    query fixes, and the settings."""
    record = load(path)
    log = str(path.parent / record["source"])
    for question in ("asked", "whole"):
        answer = record[question]
        if answer is None:
            continue
        advice = json.loads(advise_here(log, *kind_args(answer["kinds"]), "--format", "json"))
        assert advice["schema"] == "aqe-inspect/advice/v1"
        assert decisions(advice, record["scenario"]) == answer["decisions"], question
        printed = advise_here(log, *kind_args(answer["kinds"]), "--format", "spark-submit")
        assert printed.splitlines() == answer["spark_submit"], question
        assert answer["spark_submit"] == [f"--conf {k}={v}" for k, v in
                                          answer["decisions"]["settings"]]
        assert sorted(answer["decisions"]["settings"]) == sorted(answer["changes"])


@pytest.mark.parametrize("line", LINES)
def test_the_installed_command_prints_the_applied_settings(line):
    """`$(aqe-inspect advise LOG --kind K --format spark-submit)`, as a user pastes it into
    spark-submit: the very settings the re-run applied."""
    for name in sorted(MUST_FIRE):
        record = record_of(line, name)
        asked = record["asked"]
        done = subprocess.run([*AQE_INSPECT, "advise", str(SAMPLE_PLANS / line / name /
                                                          record["source"]),
                               *kind_args(asked["kinds"]), "--format", "spark-submit"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stderr == "", (name, done.stderr)
        applied = {k: v for k, v in asked["rerun"]["confs"].items()
                   if record["confs_before"].get(k) != v}
        assert sorted(done.stdout.splitlines()) == sorted(
            f"--conf {k}={v}" for k, v in applied.items()), name


@pytest.mark.parametrize("path", RECORDS, ids=_id)
def test_the_driver_log_and_plan_text_agree_or_say_they_cannot(path):
    """Asked about the scenario's driver log and formatted plan (with the settings it ran with,
    which they do not hold), advise either changes the same, or changes something else that
    fired in its own re-run too, or changes nothing and says its evidence is incomplete."""
    record = load(path)
    for question in ("asked", "whole"):
        answer = record[question]
        if answer is None:
            continue
        assert {o["source"] for o in answer["other_sources"]} == {"driver.log",
                                                                  "formatted_after.txt"}
        for other in answer["other_sources"]:
            assert other["exit"] == 0, other
            if other["agrees"]:
                continue
            if other["changes"]:
                assert other["fired"] and all(other["fired"].values()), other
            else:
                assert other["decisions"]["incomplete"], other


@pytest.mark.spark
def test_a_live_rerun_fires_as_recorded(spark, tmp_path):
    """The re-run itself, on this PySpark: two scenarios' committed artifacts advised about by
    the installed command, re-run, and the JVM's rewrites as recorded."""
    import importlib.util
    import sys

    generator, session = spark
    line = f"spark-{session.version}"
    if not (SAMPLE_PLANS / line).is_dir():
        pytest.skip(f"no committed samples of {line}")
    spec = importlib.util.spec_from_file_location("advise_rerun",
                                                  SAMPLE_PLANS / "advise_rerun.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    names = ["skew_join_off", "broadcast_static_just_above"]
    for name in names:
        shutil.copytree(SAMPLE_PLANS / line / name, tmp_path / line / name)
        (tmp_path / line / name / "advised.json").unlink()
    problems = module.run(session, tmp_path, AQE_INSPECT, only=names)
    assert problems == []
    for name in names:
        got = load(tmp_path / line / name / "advised.json")
        want = record_of(line, name)
        for question in ("asked", "whole"):
            assert got[question]["decisions"] == want[question]["decisions"]
            assert got[question]["fired"] == want[question]["fired"]
            assert got[question]["rerun"]["rewrites"] == want[question]["rerun"]["rewrites"]
        assert all(got["asked"]["fired"].values())
