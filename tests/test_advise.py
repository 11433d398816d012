"""`advise`: what to change so that AQE rewrites where it did not, held against the negative
controls of sample_plans/ (each run's truth.json names the setting that kept the rewrite off,
read from the JVM) through the library and the installed command."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import List

import pytest

from aqe_inspect import api
from aqe_inspect.plan.units import conf_bytes

from .conftest import AQE_INSPECT, SAMPLE_PLANS

LINES = ("spark-3.5.9", "spark-4.3.0")
#: Controls whose rewrite a setting keeps off, the reasons where the query itself does.
QUERY_DECIDES = ("user-repartition", "unsplittable-join-side")
NOTHING = ("side-not-empty",)


def controls() -> List[Path]:
    found = []
    for line in LINES:
        for truth in sorted((SAMPLE_PLANS / line).glob("*/truth.json")):
            control = json.loads(truth.read_text("utf-8")).get("control")
            if control and (truth.parent / "eventlog.json").is_file():
                found.append(truth)
    return found


def _id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*AQE_INSPECT, "advise", *args], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("truth_path", controls(), ids=_id)
def test_each_negative_control_gets_the_right_key(truth_path):
    truth = json.loads(truth_path.read_text("utf-8"))
    control = truth["control"]
    advice = api.advise(str(truth_path.parent / "eventlog.json"), kinds=[control["kind"]])
    keys = [key for key, _ in advice.settings()]
    facts = control["facts"]
    if control["reason"] in NOTHING:
        assert keys == [], advice
        return
    if control["reason"] in QUERY_DECIDES:
        assert keys == [], advice
        fixed = [f for q in advice.queries for f in q.fixed if f.kind == control["kind"]]
        assert fixed and "no setting changes" in fixed[0].text
        return
    key = control["config"]
    if key == "spark.sql.autoBroadcastJoinThreshold":
        # AQE's own threshold unset, AQE fell back to the static one: advise sets AQE's own,
        # which changes only the run-time decisions (broadcast_static_just_above)
        key = "spark.sql.adaptive.autoBroadcastJoinThreshold"
    assert key in keys, (keys, control)
    value = dict(advice.settings())[key]
    if control["reason"] == "above-broadcast-threshold" or (
            control["kind"] == "smj-to-bhj" and control["reason"] == "disabled"):
        assert facts["side_bytes"] < conf_bytes(value) < facts["other_side_bytes"]
    elif control["reason"] == "too-many-empty-partitions":
        assert float(value) <= facts["non_empty_ratio"]
    elif control["reason"] == "below-skew-factor":
        assert float(value) < facts["ratio"]
    elif control["kind"] == "smj-to-shj":
        assert conf_bytes(value) >= max(facts["advisory_partition_bytes"],
                                        facts["max_partition_bytes"])
    elif control["config"].endswith("excludedRules"):
        assert facts["config_value"].rsplit(".", 1)[-1] not in value
    elif control["config"].endswith(("enabled", "Limit")):
        assert value in ("true", "8")


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("scenario", ["smj_to_bhj", "skew_join", "coalesced_aggregation",
                                      "smj_to_shj", "empty_relation"])
def test_nothing_is_advised_for_a_rewrite_that_happened(line, scenario):
    kind = {"smj_to_bhj": "smj-to-bhj", "skew_join": "skew-join",
            "coalesced_aggregation": "coalesced", "smj_to_shj": "smj-to-shj",
            "empty_relation": "empty-relation"}[scenario]
    advice = api.advise(str(SAMPLE_PLANS / line / scenario / "eventlog.json"), kinds=[kind])
    assert advice.settings() == () and not advice.changes


@pytest.mark.parametrize("line", LINES)
def test_no_exchange_says_nothing_can_fire_and_changes_nothing(line):
    path = SAMPLE_PLANS / line / "no_exchange" / "eventlog.json"
    advice = api.advise(str(path))
    assert advice.settings() == ()
    assert all("no shuffle" in q.nothing for q in advice.queries)
    done = run(str(path), "--format", "spark-submit")
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""


def test_spark_submit_prints_only_conf_lines_that_paste():
    path = SAMPLE_PLANS / "spark-4.3.0" / "broadcast_just_above" / "eventlog.json"
    done = run(str(path), "--format", "spark-submit", "--kind", "smj-to-bhj")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "--conf spark.sql.adaptive.autoBroadcastJoinThreshold=12KB\n"
    # As a shell pastes it: the words are the options, nothing else.
    words = subprocess.run(["sh", "-c", 'printf "%s\\n" $("$@")', "sh", *AQE_INSPECT,
                            "advise", str(path), "--format", "spark-submit", "--kind",
                            "smj-to-bhj"], capture_output=True, text=True, timeout=300)
    assert words.stdout.split("\n")[:2] == [
        "--conf", "spark.sql.adaptive.autoBroadcastJoinThreshold=12KB"]


def test_spark_submit_leaves_out_a_value_a_shell_would_split():
    from aqe_inspect.formats.advice.spark_submit import pasteable

    assert pasteable("spark.sql.adaptive.optimizer.excludedRules", "a.B,c.D")
    assert not pasteable("spark.sql.adaptive.optimizer.excludedRules", "a.B, c.D")
    assert not pasteable("spark.sql.x", "$(rm -rf ~)")
    assert not pasteable("spark.sql.x", "*")


def test_the_json_contract_validates_against_its_schema():
    jsonschema = pytest.importorskip("jsonschema")
    import aqe_inspect.advice

    schema = json.loads((Path(aqe_inspect.advice.__file__).parent / "schema.json")
                        .read_text("utf-8"))
    for scenario in ("broadcast_just_above", "aqe_declines", "user_repartition", "no_exchange",
                     "skew_join_off", "aqe_off", "skew_below_factor", "skew_unsplittable_side"):
        done = run(str(SAMPLE_PLANS / "spark-4.3.0" / scenario / "eventlog.json"),
                   "--format", "json")
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        jsonschema.validate(data, schema)
        assert data["schema"] == "aqe-inspect/advice/v1"


def test_bad_input_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "nothing.txt"
    bad.write_bytes(b"\x00\x01binary")
    for args in ([str(tmp_path / "missing.log")], [str(bad)],
                 [str(SAMPLE_PLANS / "spark-4.3.0" / "aqe_off" / "eventlog.json"),
                  "--format", "yaml"],
                 [str(SAMPLE_PLANS / "spark-4.3.0" / "aqe_off" / "eventlog.json"),
                  "--conf", "spark.sql.adaptive.enabled=maybe"]):
        done = run(*args)
        assert done.returncode == 2, (args, done.stdout)
        assert done.stderr.startswith("aqe-inspect: error: ")
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.mark.parametrize("line", LINES)
def test_a_plan_before_its_action_says_the_advice_is_incomplete(line):
    path = SAMPLE_PLANS / line / "broadcast_just_above" / "formatted_before.txt"
    advice = api.advise(str(path))
    assert advice.incomplete and advice.settings() == ()
    done = run(str(path))
    assert "incomplete evidence" in done.stdout


def test_a_plan_text_without_sizes_says_the_advice_is_incomplete():
    advice = api.advise(str(SAMPLE_PLANS / "spark-4.3.0" / "broadcast_just_above" /
                            "simple_after.txt"), kinds=["smj-to-bhj"])
    assert advice.incomplete and advice.settings() == ()
    assert any("data size" in lack for q in advice.queries for lack in q.incomplete)


def test_the_change_says_where_the_current_value_came_from_and_what_else_it_does():
    advice = api.advise(str(SAMPLE_PLANS / "spark-4.3.0" / "broadcast_just_above" /
                            "eventlog.json"), kinds=["smj-to-bhj"])
    (change,) = advice.changes
    assert change.current.value == "8928" and change.current.origin == "event log"
    assert change.lines == "Spark 3.2+"
    assert "above the measured" in change.headroom
    assert any("spark.sql.autoBroadcastJoinThreshold" in e for e in change.effects)
    assert any("8 GB" in e for e in change.effects)
    assert any("hint" in a for a in change.alternatives)
    given = api.advise(str(SAMPLE_PLANS / "spark-4.3.0" / "broadcast_just_above" /
                           "eventlog.json"), kinds=["smj-to-bhj"],
                       conf=["spark.sql.adaptive.autoBroadcastJoinThreshold=9000"])
    assert given.changes[0].current.origin == "--conf"


def test_input_text_is_escaped_in_text_and_markdown():
    from aqe_inspect.advice.changes import Advice, QueryAdvice, Fixed
    import io

    evil = "x\x1b[31m <b>|*"
    advice = Advice(source="s", queries=(QueryAdvice(id="1", title="Query 1", label=evil,
                                                     fixed=(Fixed("coalesced", evil, 1, evil),)),))
    for name in ("text", "markdown"):
        out = api.rendered(advice, name)
        assert "\x1b" not in out
    assert "<b>" not in api.rendered(advice, "markdown")


@pytest.mark.parametrize("line", ["spark-3.5.9", "spark-4.3.0"])
def test_skew_advice_carries_the_partition_sizes_why_gives(line):
    """Beside a skew decision's advice, each side's partition sizes (min, median, p95, max,
    how many over the bar), the very figures `why --kind skew-join` gives: one meaning."""
    log = str(SAMPLE_PLANS / line / "skew_below_factor" / "eventlog.json")
    advised = json.loads(run(log, "--kind", "skew-join", "--format", "json").stdout)
    changes = [c for q in advised["queries"] for c in q["changes"] if c["kind"] == "skew-join"]
    assert changes and all(len(c["skew"]) == 2 for c in changes)
    why = json.loads(subprocess.run([*AQE_INSPECT, "why", log, "--kind", "skew-join",
                                     "--format", "json"], capture_output=True, text=True,
                                    check=True).stdout)
    sides = [c["skew"] for q in why["queries"] for c in q["candidates"]
             if c["kind"] == "skew-join" and c.get("skew")]
    assert changes[0]["skew"] in sides
    assert all(side["partitions"] and side["median"] <= side["p95"] <= side["max"]
               for side in changes[0]["skew"])
    text = run(log, "--kind", "skew-join").stdout
    assert "partition sizes of the left side" in " ".join(text.split())


PARALLELISM_FIRST = "spark.sql.adaptive.coalescePartitions.parallelismFirst"


def _truth(line: str, scenario: str) -> dict:
    return json.loads((SAMPLE_PLANS / line / scenario / "truth.json").read_text("utf-8"))


@pytest.mark.parametrize("line", LINES)
def test_coalescing_held_at_the_core_count_gets_parallelism_first_false(line):
    """coalesced_core_floor: the JVM coalesced a shuffle of a few MB only down to the default
    parallelism; `advise` says parallelismFirst=false and the partition count the advisory
    size gives (total / advisory), which the re-run with that setting
    (coalesced_core_floor_advised) shows in the JVM's own read."""
    truth = _truth(line, "coalesced_core_floor")
    (read,) = truth["shuffle_reads"]
    assert read["coalesced"] and read["partitions"] == truth["default_parallelism"] > 1
    (stage,) = truth["stages"]
    total = sum(stage["bytes_by_partition"])
    advice = api.advise(str(SAMPLE_PLANS / line / "coalesced_core_floor" / "eventlog.json"),
                        kinds=["coalesced"])
    assert advice.settings() == ((PARALLELISM_FIRST, "false"),) and not advice.incomplete
    (change,) = advice.changes
    assert change.current.value == "true" and "default" in change.current.origin
    # The figures are the JVM's: the read's partition count and the shuffle's total bytes.
    assert change.figure.startswith(f"{read['partitions']} coalesced partitions")
    assert f"({total:,} B) in all" in change.figure
    advisory = conf_bytes("64MB")  # the scenario leaves the advisory size at Spark's default
    wanted = -(-total // advisory)
    said = re.search(r"=64MB: (?:about )?(\d+) partitions? \(total / advisory", change.headroom)
    assert said and int(said.group(1)) == wanted
    # Re-run with the advised setting: the JVM's read has the advised count, and nothing more
    # is advised.
    rerun = _truth(line, "coalesced_core_floor_advised")
    assert rerun["confs"][PARALLELISM_FIRST] == "false"
    assert rerun["stages"][0]["bytes_by_partition"] == stage["bytes_by_partition"]
    assert [r["partitions"] for r in rerun["shuffle_reads"]] == [wanted] < [read["partitions"]]
    again = api.advise(str(SAMPLE_PLANS / line / "coalesced_core_floor_advised" /
                           "eventlog.json"), kinds=["coalesced"])
    assert again.settings() == () and not again.changes


def test_coalescing_advice_lowers_a_min_partition_num_the_job_set():
    """minPartitionNum, when set, wins over parallelismFirst (CoalesceShufflePartitions reads
    it first): the advice lowers it to 1 instead."""
    path = SAMPLE_PLANS / "spark-4.3.0" / "coalesced_core_floor" / "eventlog.json"
    advice = api.advise(str(path), kinds=["coalesced"],
                        conf=["spark.sql.adaptive.coalescePartitions.minPartitionNum=2"])
    assert advice.settings() == (("spark.sql.adaptive.coalescePartitions.minPartitionNum", "1"),)


def test_coalescing_at_the_advisory_size_is_not_advised_on():
    """The same shuffle with the advisory size at 2MB: the two 3.4 MiB partitions cannot be
    merged under it, so parallelismFirst changes nothing there and nothing is advised."""
    path = SAMPLE_PLANS / "spark-4.3.0" / "coalesced_core_floor" / "eventlog.json"
    advice = api.advise(str(path), kinds=["coalesced"],
                        conf=["spark.sql.adaptive.advisoryPartitionSizeInBytes=2MB"])
    assert advice.settings() == ()
