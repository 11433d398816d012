"""Plan snapshots (`aqe_inspect.expectations.snapshot`, `aqe-inspect snapshot`, `check --snapshot`).

The key promise: a snapshot taken on one run matches the same query run again in a new
session (new expression and plan ids), and fails when a config change removes a rewrite. The
live test proves it with real Spark; the others hold every real sample plan to it by renaming
its ids consistently (as a new run does), and compare the samples of one scenario with the
rewrite on and off.
"""

from __future__ import annotations

import io
import json
import random
import re
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

import aqe_inspect
from aqe_inspect.expectations import snapshot
from aqe_inspect.cli import main
from aqe_inspect.errors import InspectError

from .conftest import ROOT, SAMPLE_PLANS, verdict
from .schemas import validate_junit, validate_sarif

sys.path.insert(0, str(ROOT / "bench"))
import shapes  # noqa: E402  (bench/shapes.py: the worst plan shapes)

PLAN_FILES = sorted(p for pattern in ("spark-*/*/formatted_*.txt", "spark-*/*/simple_*.txt")
                    for p in SAMPLE_PLANS.glob(pattern))
SPARK_LINES = sorted(p.name for p in SAMPLE_PLANS.glob("spark-*"))


def snap_of(text: str) -> str:
    return snapshot.take_all(aqe_inspect.diff(text))


def run(*args) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


# ---- a new run's ids ------------------------------------------------------------------------

_EXPRESSION = re.compile(r"(?<!id=)#(\d+)")
_PLAN = re.compile(r"(plan_id=|id=#)(\d+)")
_CODEGEN = re.compile(r"(\*\(|\[codegen id : )(\d+)([)\]])")


def renamed(text: str, seed: int) -> str:
    """`text` as another run would print it: expression ids, plan ids and codegen stages
    replaced by other numbers, consistently (one old number, one new), and the scratch
    directory of the data files renamed."""
    chooser = random.Random(seed)

    def renamer():
        table = {}
        pool = chooser.sample(range(10_000, 99_999), 5_000)
        return lambda old: table.setdefault(old, pool[len(table)])

    expression, plan, codegen = renamer(), renamer(), renamer()
    text = _PLAN.sub(lambda m: f"{m.group(1)}{plan(m.group(2))}", text)
    text = _EXPRESSION.sub(lambda m: f"#{expression(m.group(1))}", text)
    text = _CODEGEN.sub(lambda m: f"{m.group(1)}{codegen(m.group(2))}{m.group(3)}", text)
    return re.sub(r"aqe-sample-data-\w+", f"aqe-sample-data-run{seed}", text)


@pytest.mark.parametrize("path", PLAN_FILES, ids=lambda p: str(p.relative_to(SAMPLE_PLANS)))
def test_a_sample_plans_snapshot_does_not_see_a_new_runs_ids(path):
    text = path.read_text("utf-8")
    taken = snap_of(text)
    again = renamed(text, seed=len(text))
    assert again != text
    assert snap_of(again) == taken
    assert snapshot.compare(taken, snap_of(again)) is None
    # Deterministic, and never a path of the machine it was taken on.
    assert snap_of(text) == taken
    assert "/tmp" not in taken and "file:" not in taken and "aqe-sample-data" not in taken
    assert taken.startswith(f"{snapshot.HEADER_PREFIX}1 | mode: ")


@pytest.mark.parametrize("line", SPARK_LINES)
@pytest.mark.parametrize("mode", ["formatted", "simple"])
def test_removing_a_rewrite_changes_the_snapshot(line, mode):
    folder = SAMPLE_PLANS / line
    with_switch = snap_of((folder / "smj_to_bhj" / f"{mode}_after.txt").read_text("utf-8"))
    without = snap_of((folder / "smj_to_bhj_off" / f"{mode}_after.txt").read_text("utf-8"))
    found = snapshot.compare(with_switch, without, "on.snap", "off.txt")
    assert found is not None and found.startswith("--- on.snap\n+++ off.txt\n")
    removed = [line for line in found.splitlines() if line.startswith("-")]
    added = [line for line in found.splitlines() if line.startswith("+")]
    assert any(l.startswith("-rewrite smj-to-bhj: SortMergeJoin -> BroadcastHashJoin (")
               for l in removed)
    assert any("BroadcastHashJoin" in l for l in removed)
    assert any(re.search(r"^\+\s*(\*\(\d+\) )?SortMergeJoin \(\d+\)", l) for l in added)
    assert "smj-to-bhj=1" in with_switch.splitlines()[0]
    assert "smj-to-bhj" not in without.splitlines()[0]


def test_the_same_scenario_on_two_spark_lines_has_the_same_rewrites():
    """Spark 3.5 and 4.3 print some operators apart (4.x adds a ResultQueryStage on top, so
    the places differ), but AQE did the same."""
    heads = {line: re.sub(r" \(\d+\)", "", snap_of(
        (SAMPLE_PLANS / line / "multi_rewrite" / "formatted_after.txt").read_text("utf-8")
    ).split("final plan:")[0]) for line in SPARK_LINES}
    assert len(set(heads.values())) == 1, heads


@pytest.mark.parametrize("line", SPARK_LINES)
@pytest.mark.parametrize("mode", ["formatted", "simple"])
def test_a_reused_exchange_still_points_at_its_exchange(line, mode):
    path = SAMPLE_PLANS / line / "reused_exchange" / f"{mode}_after.txt"
    text = path.read_text("utf-8")
    taken = snap_of(renamed(text, seed=7))
    plan = taken.split("final plan:\n", 1)[1].splitlines()
    reused = [l for l in plan if "ReusedExchange" in l]
    assert reused
    for line_text in reused:
        if mode == "simple":  # the plan id it names is the exchange's
            plan_id = re.search(r"plan_id=(\d+)", line_text).group(1)
            owners = [l for l in plan if "ReusedExchange" not in l
                      and re.search(rf"plan_id={plan_id}\b", l)]
        else:  # the operator id it names is the exchange's place
            place = re.search(r"Reuses operator id: (\d+)", line_text).group(1)
            owners = [l for l in plan if re.search(rf"\bExchange \({place}\)", l)]
        assert len(owners) == 1 and "Exchange" in owners[0], (line_text, owners)
        # The raw text named the same exchange: its partitioning is the one reused.
        assert "hashpartitioning(" in owners[0]


def test_what_is_masked():
    text = (SAMPLE_PLANS / "spark-3.5.9" / "dynamic_partition_pruning" / "simple_after.txt"
            ).read_text("utf-8")
    taken = snap_of(text)
    assert "Location: InMemoryFileIndex [<location>]" in taken
    assert re.search(r"hashpartitioning\([^)]*, <n>\)", taken)
    assert "ShuffleQueryStage (" in taken
    assert not re.search(r"QueryStage \(\d+\) \d", taken)  # stage ids left out
    formatted = snap_of((SAMPLE_PLANS / "spark-4.3.0" / "multi_rewrite" / "formatted_after.txt"
                         ).read_text("utf-8"))
    assert "KiB" not in formatted and "rowCount" not in formatted  # runtime statistics
    assert "splits=<n>" in formatted
    assert snapshot.mask("Statistics(sizeInBytes=8.0 EiB, rowCount=2.00E+4)") == \
        "Statistics(<masked>)"
    assert snapshot.mask("sizeInBytes=312.5 KiB, rowCount=7") == \
        "sizeInBytes=<size>, rowCount=<rows>"
    assert snapshot.mask("rangepartitioning(k#1 ASC NULLS FIRST, 200), [plan_id=3]") == \
        "rangepartitioning(k#1 ASC NULLS FIRST, <n>), [plan_id=3]"
    assert snapshot.mask("hashpartitioning(k#1, coalesce(x#2, 3), 200)") == \
        "hashpartitioning(k#1, coalesce(x#2, 3), <n>)"
    assert snapshot.mask("Scan s3a://bucket/warehouse/t and /data/x/y.parquet") == \
        "Scan <path> and <path>"
    assert snapshot.mask("(a#1 / 2)") == "(a#1 / 2)"


def test_a_5000_level_tree_snapshots_flat():
    taken = snap_of(shapes.deep_levels(5000))
    plan = taken.split("final plan:\n", 1)[1].splitlines()
    assert len(plan) == 5000
    assert plan[-1].startswith("  " * 4999 + "*(1) Range (5000)")


def test_several_queries_are_one_file_in_order(tmp_path):
    one = (SAMPLE_PLANS / "spark-4.3.0" / "smj_to_bhj" / "simple_after.txt").read_text("utf-8")
    two = (SAMPLE_PLANS / "spark-4.3.0" / "coalesced_aggregation" / "simple_after.txt"
           ).read_text("utf-8")
    taken = snap_of(one + "\n" + two)
    assert taken.startswith("## query 1 of 2\n# aqe-inspect snapshot v1")
    assert "\n## query 2 of 2\n# aqe-inspect snapshot v1" in taken
    assert taken.index("smj-to-bhj=1") < taken.index("## query 2")
    path = tmp_path / "two.snap"
    path.write_text(taken, "utf-8")
    assert snapshot.load(str(path)) == taken
    # --query chooses one: its snapshot is the one-query form.
    plans = tmp_path / "plans.txt"
    plans.write_text(one + "\n" + two, "utf-8")
    code, out, err = run("snapshot", plans, "--query", "2")
    assert (code, err) == (0, "") and out == snap_of(two)


# ---- broken snapshot files ------------------------------------------------------------------

GOOD = snap_of((SAMPLE_PLANS / "spark-4.3.0" / "smj_to_bhj" / "formatted_after.txt")
               .read_text("utf-8"))
BROKEN = {
    "empty": (b"", 1, "empty snapshot"),
    "blank": (b"\n\n  \n", 1, "empty snapshot"),
    "wrong header": (b"== Physical Plan ==\nProject\n", 1, "not an aqe-inspect snapshot"),
    "binary": (b"# aqe-inspect snapshot v1\nabc\n\x00\x01\x02", 3, "binary"),
    "not utf-8": (GOOD.encode() + b"\xff\xfe\n", GOOD.count("\n") + 1, "not UTF-8"),
    "newer": (GOOD.replace("snapshot v1 ", "snapshot v9 ").encode(), 1, "newer"),
    "cut short": (GOOD.split("final plan:")[0].encode(), GOOD.split("final plan:")[0]
                  .count("\n") + 1, "final plan:"),
    "bad block": (("## query 1 of 2\n" + GOOD + "\n## query 3 of 2\n" + GOOD).encode(),
                  GOOD.count("\n") + 3, "## query 2 of 2"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_snapshot_is_exit_2_naming_file_and_line(name, tmp_path):
    data, line, words = BROKEN[name]
    path = tmp_path / "broken.snap"
    path.write_bytes(data)
    with pytest.raises(InspectError) as raised:
        snapshot.load(str(path))
    assert raised.value.line == line and words in raised.value.message
    plan = SAMPLE_PLANS / "spark-4.3.0" / "smj_to_bhj" / "formatted_after.txt"
    code, out, err = run("check", plan, "--snapshot", path)
    assert code == 2 and out == ""
    assert err.startswith(f"aqe-inspect: error: {path}:{line}: ") and "\n" == err[-1]
    assert err.count("\n") == 1


def test_a_missing_snapshot_is_exit_2(tmp_path):
    plan = SAMPLE_PLANS / "spark-4.3.0" / "smj_to_bhj" / "formatted_after.txt"
    missing = tmp_path / "nope.snap"
    code, out, err = run("check", plan, "--snapshot", missing)
    assert code == 2 and err == f"aqe-inspect: error: {missing}: snapshot file not found " \
                                "(take one with `aqe-inspect snapshot PLAN -o FILE`)\n"
    code, _, err = run("check", plan, "--snapshot", tmp_path)
    assert code == 2 and "directory" in err


# ---- the commands ---------------------------------------------------------------------------

def test_snapshot_then_check_exits_0_then_1_with_a_diff(tmp_path):
    folder = SAMPLE_PLANS / "spark-3.5.9"
    on = folder / "smj_to_bhj" / "formatted_after.txt"
    off = folder / "smj_to_bhj_off" / "formatted_after.txt"
    target = tmp_path / "join.snap"
    code, out, err = run("snapshot", on, "-o", target)
    assert (code, out, err) == (0, "", "")
    assert target.read_text("utf-8") == snap_of(on.read_text("utf-8"))
    code, out, err = run("snapshot", on)
    assert (code, out, err) == (0, target.read_text("utf-8"), "")
    # The same query of another run (new ids) passes.
    rerun = tmp_path / "rerun.txt"
    rerun.write_text(renamed(on.read_text("utf-8"), seed=3), "utf-8")
    code, out, err = run("check", rerun, "--snapshot", target, "--width", "200")
    assert (code, err) == (0, "") and out.startswith(f"PASS snapshot {target}")
    # Without the runtime broadcast: exit 1 and the diff.
    code, out, err = run("check", off, "--snapshot", target, "--width", "200")
    assert (code, err) == (1, "")
    assert f"FAIL snapshot {target}" in out
    assert f"--- {target}\n+++ {off}\n" in out
    assert "-rewrite smj-to-bhj: SortMergeJoin -> BroadcastHashJoin (2)" in out
    assert verdict(out).startswith("1 of 1 expectation(s) not met")


def test_check_takes_a_snapshot_and_expectations_together(tmp_path):
    on = SAMPLE_PLANS / "spark-4.3.0" / "multi_rewrite" / "formatted_after.txt"
    target = tmp_path / "multi.snap"
    assert run("snapshot", on, "-o", target)[0] == 0
    code, out, _ = run("check", on, "--snapshot", target, "--expect", "coalesced",
                       "--forbid", "skew-join")
    assert code == 0 and out.count("PASS") == 3
    code, out, _ = run("check", on, "--snapshot", target, "--forbid", "coalesced")
    assert code == 1 and "FAIL forbid coalesced" in out and "PASS snapshot" in out


def test_a_plan_in_another_mode_is_exit_2_not_a_diff(tmp_path):
    folder = SAMPLE_PLANS / "spark-4.3.0" / "smj_to_bhj"
    target = tmp_path / "formatted.snap"
    assert run("snapshot", folder / "formatted_after.txt", "-o", target)[0] == 0
    code, out, err = run("check", folder / "simple_after.txt", "--snapshot", target)
    assert (code, out) == (2, "")
    assert err.startswith(f"aqe-inspect: error: {target}:1: the snapshot was taken from a "
                          "formatted-mode plan and ")
    assert "simple-mode plan" in err
    with pytest.raises(snapshot.SnapshotModeError):
        snapshot.compare(target.read_text("utf-8"),
                         snap_of((folder / "simple_after.txt").read_text("utf-8")))


def test_snapshot_o_leaves_nothing_on_failure(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("== Physical Plan ==\n+- +- (((\n", "utf-8")
    target = tmp_path / "out.snap"
    code, out, err = run("snapshot", bad, "-o", target)
    assert code == 2 and err.startswith("aqe-inspect: error: ")
    assert list(tmp_path.iterdir()) == [bad]
    target.write_text("kept", "utf-8")
    assert run("snapshot", tmp_path / "missing.txt", "-o", target)[0] == 2
    assert target.read_text("utf-8") == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt", "out.snap"]


def _mismatch(tmp_path, format_name: str) -> str:
    folder = SAMPLE_PLANS / "spark-4.3.0"
    target = tmp_path / "join.snap"
    assert run("snapshot", folder / "smj_to_bhj" / "formatted_after.txt", "-o", target)[0] == 0
    code, out, err = run("check", folder / "smj_to_bhj_off" / "formatted_after.txt",
                         "--snapshot", target, "--expect", "coalesced", "--format",
                         format_name)
    assert (code, err) == (1, "")
    return out


def test_json_carries_the_snapshot_outcome(tmp_path):
    document = json.loads(_mismatch(tmp_path, "json"))
    assert document["passed"] is False
    kinds = [(e["kind"], e["passed"]) for e in document["expectations"]]
    assert kinds == [("coalesced", True), ("snapshot", False)]
    found = document["expectations"][1]
    assert found["detail"].startswith(f"--- {tmp_path / 'join.snap'}\n+++ ")
    assert "-rewrite smj-to-bhj" in found["detail"]
    assert "detail" not in document["expectations"][0]


def test_junit_sarif_github_html_carry_the_snapshot_outcome(tmp_path):
    junit = _mismatch(tmp_path, "junit")
    validate_junit(junit)
    assert 'tests="2" failures="1"' in junit and 'type="snapshot"' in junit
    assert "-rewrite smj-to-bhj: SortMergeJoin -&gt; BroadcastHashJoin" in junit
    sarif = json.loads(_mismatch(tmp_path, "sarif"))
    validate_sarif(sarif)
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "snapshot" and "-rewrite smj-to-bhj" in \
        result["properties"]["detail"]
    github = _mismatch(tmp_path, "github")
    assert "::error" in github and "-rewrite smj-to-bhj" in github.replace("%0A", "\n")
    html = _mismatch(tmp_path, "html")
    assert '<pre class="detail">' in html and "-rewrite smj-to-bhj" in html


# ---- live Spark: a new session, new ids --------------------------------------------------------

@pytest.mark.spark
def test_a_snapshot_matches_the_same_query_in_a_new_session(spark, tmp_path):
    generator, session = spark
    scenario = generator.scenario_named("multi_rewrite")

    def run_in(new_session, extra=None):
        confs = {**scenario.all_confs(), **(extra or {})}
        with generator._ScenarioConfs(new_session, confs):
            df = scenario.build(new_session, tmp_path)
            df.collect()
            return generator.explain_string(new_session, df, "formatted")

    first = run_in(session.newSession())
    second = run_in(session.newSession())
    ids = re.compile(r"#\d+|plan_id=\d+")
    assert set(ids.findall(first)) != set(ids.findall(second))  # a new run's ids
    taken = snap_of(first)
    assert "coalesced=1, smj-to-bhj=1, local-read=2" in taken.splitlines()[0]
    assert snapshot.compare(taken, snap_of(second)) is None
    # No runtime broadcast in a third session: the switch is gone, and the diff says so.
    third = run_in(session.newSession(),
                   {"spark.sql.adaptive.autoBroadcastJoinThreshold": "-1"})
    found = snapshot.compare(taken, snap_of(third), "multi.snap", "plan")
    assert found is not None
    assert "-rewrite smj-to-bhj: SortMergeJoin -> BroadcastHashJoin (" in found
    assert re.search(r"(?m)^\+\s*(\*\(\d+\) )?SortMergeJoin \(\d+\)", found)
    # The command line agrees: exit 0 for the rerun, 1 without the broadcast.
    saved = tmp_path / "multi.snap"
    saved.write_text(taken, "utf-8")
    for text, want in ((second, 0), (third, 1)):
        plan = tmp_path / "plan.txt"
        plan.write_text(text, "utf-8")
        code, out, err = run("check", plan, "--snapshot", saved)
        assert (code, err) == (want, ""), out
