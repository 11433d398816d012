"""`aqe-inspect compare OLD NEW`: two runs of one job, held to the JVM's truth.

The material is real: sample_plans/compare_runs.py ran one application (eight scenarios, one
labelled SQL execution each) under PySpark 3.5.9 and 4.3.0, once with the scenarios' own
settings (`baseline`), once more the same (`rerun`), and under changed settings
(`bhj_off`: the runtime broadcast threshold -1; `skew_off`; `coalesce_off`; `broadcast_more`:
the threshold 10MB), and recorded
each execution's rewrites from the JVM plan objects (`runs.json`). What `compare` says was
lost and gained must be exactly what the two truths imply, execution by execution; nothing
for the re-run. What a stronger rewrite took over (a coalesced read of a join's input read
map-locally once the join became a broadcast) is replaced, not lost, as the truths imply.
"""

from __future__ import annotations

import csv
import json
import re
import shlex
import subprocess
import xml.etree.ElementTree as ET
from itertools import permutations
from pathlib import Path

import pytest

from .conftest import AQE_INSPECT, ROOT, SAMPLE_PLANS, verdict

LINES = ("3.5.9", "4.3.0")
RUNS = ("baseline", "rerun", "bhj_off", "skew_off", "coalesce_off", "broadcast_more")
FORMATS = ("text", "json", "junit", "github", "sarif", "markdown", "html")


def _folder(line: str) -> Path:
    return SAMPLE_PLANS / "compare" / f"spark-{line}"


def _truth(line: str) -> dict:
    data = json.loads((_folder(line) / "runs.json").read_text("utf-8"))
    return {run["run"]: run for run in data["runs"]}


def _log(line: str, run: str) -> str:
    return str(_folder(line) / f"{run}.zstd")



def run(*args: str, cwd=None, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run([*AQE_INSPECT, *args], capture_output=True, text=True, cwd=cwd,
                          input=stdin, timeout=120, env={"PATH": "/usr/bin:/bin",
                                                         "COLUMNS": "100"})


def compare_json(old: str, new: str, *extra: str) -> tuple:
    done = run("compare", old, new, "--format", "json", *extra)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout), done.returncode


def implied_replaced(before: dict, after: dict) -> dict:
    """What the JVM truth of one execution in two runs says a stronger rewrite took over: when
    the new run turned a sort-merge join the old run kept into a broadcast (a
    BroadcastHashJoin where the old plan object held a SortMergeJoin, and `smj-to-bhj` made),
    the coalesced reads that went are those its local reads replaced (in these scenarios every
    local read is a broadcast join's input: OptimizeShuffleWithLocalRead), and a skew split or
    a shuffled-hash switch that went was taken over by the broadcast. Otherwise nothing."""
    old, new = before["rewrites"], after["rewrites"]
    switched = (new["smj-to-bhj"] > old["smj-to-bhj"]
                and after["joins"].count("BroadcastHashJoin")
                > before["joins"].count("BroadcastHashJoin")
                and before["joins"].count("SortMergeJoin") + before["joins"].count(
                    "ShuffledHashJoin") > after["joins"].count("SortMergeJoin")
                + after["joins"].count("ShuffledHashJoin"))
    if not switched:
        return {}
    found = {"coalesced": min(max(0, old["coalesced"] - new["coalesced"]),
                              max(0, new["local-read"] - old["local-read"])),
             "skew-join": max(0, old["skew-join"] - new["skew-join"]),
             "smj-to-shj": max(0, old["smj-to-shj"] - new["smj-to-shj"])}
    return {kind: count for kind, count in found.items() if count}


def implied(old_run: dict, new_run: dict) -> dict:
    """description -> (lost, gained), from the two runs' JVM truth; lost without what a
    stronger rewrite replaced (`implied_replaced`)."""
    new_by = {e["description"]: e for e in new_run["executions"]}
    found = {}
    for before in old_run["executions"]:
        after = new_by[before["description"]]
        replaced = implied_replaced(before, after)
        # Runs recorded later hold kinds added since; a kind a run did not record it made none of.
        old, new = before["rewrites"], after["rewrites"]
        kinds = [*old, *(k for k in new if k not in old)]
        lost = {k: max(0, old.get(k, 0) - new.get(k, 0)) - replaced.get(k, 0) for k in kinds}
        gained = {k: max(0, new.get(k, 0) - old.get(k, 0)) for k in kinds}
        found[before["description"]] = ({k: n for k, n in lost.items() if n},
                                        {k: n for k, n in gained.items() if n})
    return found


def implied_replacements(old_run: dict, new_run: dict) -> dict:
    """description -> {kind: count replaced}, from the two runs' JVM truth."""
    new_by = {e["description"]: e for e in new_run["executions"]}
    return {before["description"]: implied_replaced(before, new_by[before["description"]])
            for before in old_run["executions"]}


def said(document: dict) -> dict:
    return {pair["new"]["description"]: ({k: n for k, n in pair["lost"].items() if n},
                                         {k: n for k, n in pair["gained"].items() if n})
            for pair in document["pairs"]}


def said_replaced(document: dict) -> dict:
    return {pair["new"]["description"]: {r["kind"]: r["count"] for r in pair["replaced"]}
            for pair in document["pairs"]}


# ---- the truth ---------------------------------------------------------------------------

@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("old_run,new_run", list(permutations(RUNS, 2)))
def test_compare_names_exactly_what_the_truth_implies(line, old_run, new_run):
    truth = _truth(line)
    document, code = compare_json(_log(line, old_run), _log(line, new_run))
    expected = implied(truth[old_run], truth[new_run])
    assert said(document) == expected
    assert said_replaced(document) == implied_replacements(truth[old_run], truth[new_run])
    assert all(pair["matched_by"] == "description" for pair in document["pairs"])
    assert document["unmatched"] == {"old": [], "new": []}
    assert code == (1 if any(lost for lost, _ in expected.values()) else 0)
    assert document["failed"] is (code == 1)


@pytest.mark.parametrize("line", LINES)
def test_a_rerun_under_the_same_settings_changes_nothing(line):
    document, code = compare_json(_log(line, "baseline"), _log(line, "rerun"))
    assert code == 0
    assert document["summary"]["changed"] == 0
    assert all(not any(p["lost"].values()) and not any(p["gained"].values())
               and p["joins"]["old"] == p["joins"]["new"] for p in document["pairs"])
    assert all(p["settings"] == {"spark_version": None, "configs": []}
               for p in document["pairs"])
    assert document["verdict"].startswith("PASS: no rewrite lost or gained in 8 matched")


@pytest.mark.parametrize("line", LINES)
def test_the_changed_setting_and_the_why_not_of_a_lost_broadcast(line):
    document, _ = compare_json(_log(line, "baseline"), _log(line, "bhj_off"))
    pair = next(p for p in document["pairs"] if p["new"]["description"] ==
                "aqe-compare:smj_to_bhj")
    assert pair["joins"] == {"old": {"BroadcastHashJoin": 1}, "new": {"SortMergeJoin": 1}}
    assert {"key": "spark.sql.adaptive.autoBroadcastJoinThreshold", "old": "64KB",
            "new": "-1"} in pair["settings"]["configs"]
    assert any("spark.sql.adaptive.autoBroadcastJoinThreshold" in reason
               and "blocked" in reason for reason in pair["why_not"]["smj-to-bhj"])
    assert pair["duration_ms"]["ratio"] == pytest.approx(
        pair["duration_ms"]["new"] / pair["duration_ms"]["old"], rel=1e-3)
    assert pair["query_stages"]["old"] != pair["query_stages"]["new"]


def test_spark_35_against_43_names_what_the_truths_imply():
    old, new = _truth("3.5.9")["baseline"], _truth("4.3.0")["baseline"]
    document, code = compare_json(_log("3.5.9", "baseline"), _log("4.3.0", "baseline"))
    expected = implied(old, new)
    assert said(document) == expected
    assert code == (1 if any(lost for lost, _ in expected.values()) else 0)
    assert document["old"]["spark_versions"] == ["3.5.9"]
    assert document["new"]["spark_versions"] == ["4.3.0"]
    assert all(p["settings"]["spark_version"] == {"old": "3.5.9", "new": "4.3.0"}
               for p in document["pairs"])


def test_spark_35_with_a_setting_off_against_43():
    document, _ = compare_json(_log("3.5.9", "baseline"), _log("4.3.0", "skew_off"))
    assert said(document) == implied(_truth("3.5.9")["baseline"], _truth("4.3.0")["skew_off"])
    skew = next(p for p in document["pairs"] if p["new"]["description"] ==
                "aqe-compare:skew_join")
    assert skew["lost"]["skew-join"] == 1
    assert skew["why_not"]["skew-join"]


# ---- replaced, not lost ----------------------------------------------------------------------

def _pair_of(document: dict, scenario: str) -> dict:
    return next(p for p in document["pairs"]
                if p["new"]["description"] == f"aqe-compare:{scenario}")


#: The scenarios whose sort-merge join AQE broadcasts unless its threshold is -1.
SWITCHED = ("smj_to_bhj", "multi_rewrite", "local_read")


@pytest.mark.parametrize("line", LINES)
def test_a_run_that_made_the_broadcast_passes_and_the_reverse_fails(line):
    """The threshold-off run against the run that switched: what the old run coalesced at the
    join's inputs the new one reads map-locally; replaced, not lost: exit 0. The reverse lost
    the switch: exit 1."""
    truth = _truth(line)
    for scenario in SWITCHED:  # the JVM's plan objects: the join switched, inputs read locally
        before = next(e for e in truth["bhj_off"]["executions"] if e["scenario"] == scenario)
        after = next(e for e in truth["baseline"]["executions"] if e["scenario"] == scenario)
        assert before["joins"] == ["SortMergeJoin"] and after["joins"] == ["BroadcastHashJoin"]
        assert after["rewrites"]["smj-to-bhj"] == 1 and after["rewrites"]["local-read"] == 2
    document, code = compare_json(_log(line, "bhj_off"), _log(line, "baseline"))
    assert code == 0 and document["failed"] is False
    assert document["verdict"].startswith("PASS: 3 execution(s) changed")
    assert "coalesced 6 replaced by local-read 6" in document["verdict"]
    assert document["summary"]["replaced"]["coalesced"] == 6
    assert not any(document["summary"]["lost"].values())
    for scenario in SWITCHED:
        pair = _pair_of(document, scenario)
        [replacement] = pair["replaced"]
        assert {k: v for k, v in replacement.items() if k != "joins"} == {
            "kind": "coalesced", "count": 2, "by": "local-read", "because": "smj-to-bhj",
            "switched_in": "new", "by_count": 2,
            "text": "coalesced 2 replaced by local-read 2 (the join became smj-to-bhj)"}
        [join] = replacement["joins"]
        assert join.startswith("BroadcastHashJoin (")
        assert not any(pair["lost"].values())
        assert pair["gained"]["smj-to-bhj"] == 1 and pair["gained"]["local-read"] == 2
        assert pair["why_not"] == {}  # nothing lost, nothing to explain
    text = run("compare", _log(line, "bhj_off"), _log(line, "baseline"))
    assert text.returncode == 0
    assert text.stdout.count("REPLACED  execution") == 3
    assert "  replaced: coalesced 2 replaced by local-read 2 (the join became smj-to-bhj)" \
        in text.stdout
    assert "LOST" not in text.stdout

    reverse, code = compare_json(_log(line, "baseline"), _log(line, "bhj_off"))
    assert code == 1 and reverse["failed"] is True
    for scenario in SWITCHED:
        pair = _pair_of(reverse, scenario)
        assert pair["replaced"] == []
        assert {k: n for k, n in pair["lost"].items() if n} == {"smj-to-bhj": 1,
                                                                "local-read": 2}
    assert not any(reverse["summary"]["replaced"].values())


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("fail_on,code", [
    ("lost:coalesced", 0),   # replaced is not lost, whatever kind the rule names
    ("lost", 0),
    ("gained:local-read", 1),  # the rewrite that took over is still a gain
    ("any", 1),
])
def test_the_gate_on_a_replacement(line, fail_on, code):
    done = run("compare", _log(line, "bhj_off"), _log(line, "baseline"), "--fail-on", fail_on)
    assert done.returncode == code, done.stdout + done.stderr


@pytest.mark.parametrize("line", LINES)
def test_replacement_is_told_join_by_join_not_by_counting(line):
    """Coalescing off in the new run as well: the coalesced reads of the joins' inputs are
    still replaced by the local reads, but an aggregation's coalesced read has nothing that
    took it over: lost, and the comparison fails on those executions only."""
    truth = _truth(line)
    document, code = compare_json(_log(line, "bhj_off"), _log(line, "coalesce_off"))
    assert code == 1
    multi = _pair_of(document, "multi_rewrite")
    before = next(e for e in truth["bhj_off"]["executions"] if e["scenario"] == "multi_rewrite")
    after = next(e for e in truth["coalesce_off"]["executions"]
                 if e["scenario"] == "multi_rewrite")
    assert (before["rewrites"]["coalesced"], after["rewrites"]["coalesced"]) == (3, 0)
    assert [(r["kind"], r["count"], r["by"]) for r in multi["replaced"]] == \
        [("coalesced", 2, "local-read")]
    assert multi["lost"]["coalesced"] == 1
    failing = {p["new"]["description"].split(":")[1] for p in document["pairs"]
               if any(p["lost"].values())}
    expected = {d.split(":")[1] for d, (lost, _) in
                implied(truth["bhj_off"], truth["coalesce_off"]).items() if lost}
    assert failing == expected and "multi_rewrite" in failing
    assert not failing & {"smj_to_bhj", "local_read"}


@pytest.mark.parametrize("line", LINES)
def test_a_skew_split_and_a_shuffled_hash_switch_replaced_by_the_broadcast(line):
    """AQE's broadcast threshold raised: the skewed sort-merge join and the shuffled hash join
    become broadcasts. The skew split (OptimizeSkewedJoin splits shuffled joins only) and the
    shuffled-hash switch (join selection takes a broadcast first) are replaced by the switch;
    the coalesced reads are replaced input by input: the shuffled hash join's probe side kept
    its coalesced read, so only the build side's is replaced."""
    truth = _truth(line)
    document, code = compare_json(_log(line, "baseline"), _log(line, "broadcast_more"))
    assert code == 0, document["verdict"]
    skew = _pair_of(document, "skew_join")
    assert {r["kind"]: (r["count"], r["by"]) for r in skew["replaced"]} == {
        "coalesced": (2, "local-read"), "skew-join": (1, "smj-to-bhj")}
    shj = _pair_of(document, "smj_to_shj")
    assert {r["kind"]: (r["count"], r["by"]) for r in shj["replaced"]} == {
        "coalesced": (1, "local-read"), "smj-to-shj": (1, "smj-to-bhj")}
    for scenario, pair in (("skew_join", skew), ("smj_to_shj", shj)):
        after = next(e for e in truth["broadcast_more"]["executions"]
                     if e["scenario"] == scenario)
        assert after["joins"] == ["BroadcastHashJoin"] and after["rewrites"]["smj-to-bhj"] == 1
        assert after["rewrites"]["coalesced"] == 1  # the one read not replaced, still there
        assert pair["new"]["description"] == after["description"]
    reverse, code = compare_json(_log(line, "broadcast_more"), _log(line, "baseline"))
    assert code == 1
    assert _pair_of(reverse, "skew_join")["lost"]["smj-to-bhj"] == 1
    assert not any(p["replaced"] for p in reverse["pairs"])


#: Each input of the single-scenario samples that holds the initial plan and the final one.
SCENARIO_INPUTS = ("eventlog.json", "driver.log", "driver_json.log", "history_sql.json",
                   "formatted_after.txt", "simple_after.txt", "extended_after.txt")


@pytest.mark.parametrize("line,name", [
    (line, name) for line in LINES for name in SCENARIO_INPUTS
    if all((SAMPLE_PLANS / f"spark-{line}" / scenario / name).exists()
           for scenario in ("smj_to_bhj_off", "smj_to_bhj"))])
def test_every_input_of_the_scenarios_tells_the_replacement(line, name):
    """The scenarios' own runs (event logs, driver logs, History Server JSON, plan texts):
    the threshold-off join against the one AQE broadcast passes with the coalesced reads
    replaced; the reverse fails. Held to each scenario's truth.json."""
    base = SAMPLE_PLANS / f"spark-{line}"
    off, on = base / "smj_to_bhj_off" / name, base / "smj_to_bhj" / name
    truth_off = json.loads((off.parent / "truth.json").read_text("utf-8"))
    truth_on = json.loads((on.parent / "truth.json").read_text("utf-8"))
    assert [j["operator"] for j in truth_off["joins"]] == ["SortMergeJoin"]
    assert [j["operator"] for j in truth_on["joins"]] == ["BroadcastHashJoin"]
    replaced = min(truth_off["rewrites"]["coalesced"] - truth_on["rewrites"]["coalesced"],
                   truth_on["rewrites"]["local-read"])
    document, code = compare_json(str(off), str(on))
    assert code == 0, document["verdict"]
    [pair] = document["pairs"]
    assert [(r["kind"], r["count"], r["by"]) for r in pair["replaced"]] == \
        [("coalesced", replaced, "local-read")]
    assert not any(pair["lost"].values())
    reverse, code = compare_json(str(on), str(off))
    assert code == 1
    [pair] = reverse["pairs"]
    assert pair["replaced"] == [] and pair["lost"]["smj-to-bhj"] == truth_on["rewrites"][
        "smj-to-bhj"]


@pytest.mark.parametrize("line", LINES)
def test_local_reads_turned_on_replace_the_coalesced_reads_of_a_broadcast(line):
    """Both runs broadcast the join; the old one with local shuffle reads off read its inputs
    through coalesced reads, the new one reads them locally: the same rule
    (OptimizeShuffleWithLocalRead) took them over. Replaced; the reverse lost the local reads."""
    base = SAMPLE_PLANS / f"spark-{line}"
    off, on = base / "local_read_off", base / "local_read"
    truth_off = json.loads((off / "truth.json").read_text("utf-8"))
    truth_on = json.loads((on / "truth.json").read_text("utf-8"))
    for truth in (truth_off, truth_on):  # the broadcast in both runs
        assert [j["operator"] for j in truth["joins"]] == ["BroadcastHashJoin"]
        assert truth["rewrites"]["smj-to-bhj"] == 1
    assert (truth_off["rewrites"]["coalesced"], truth_on["rewrites"]["local-read"]) == (2, 2)
    log_off = next(p for p in sorted(off.iterdir()) if p.name.startswith("eventlog"))
    log_on = next(p for p in sorted(on.iterdir()) if p.name.startswith("eventlog"))
    document, code = compare_json(str(log_off), str(log_on))
    assert code == 0, document["verdict"]
    [pair] = document["pairs"]
    [replacement] = pair["replaced"]
    assert (replacement["kind"], replacement["count"], replacement["by"],
            replacement["switched_in"]) == ("coalesced", 2, "local-read", "both")
    assert "in both runs" in replacement["text"]
    reverse, code = compare_json(str(log_on), str(log_off))
    assert code == 1
    [pair] = reverse["pairs"]
    assert pair["replaced"] == [] and pair["lost"]["local-read"] == 2


@pytest.mark.parametrize("line", LINES)
def test_the_same_join_is_found_across_kinds_of_input(line):
    """An event log on one side, a driver log on the other: the join is found by its place in
    the initial plan, not by ids or the text's form."""
    base = SAMPLE_PLANS / f"spark-{line}"
    document, code = compare_json(str(base / "smj_to_bhj_off" / "eventlog.json"),
                                  str(base / "smj_to_bhj" / "driver.log"))
    assert code == 0
    [pair] = document["pairs"]
    assert [r["kind"] for r in pair["replaced"]] == ["coalesced"]


def test_a_final_plan_alone_replaces_nothing(tmp_path):
    """Without the initial plan no switch can be told, so nothing is replaced: the coalesced
    reads count as lost (never a PASS on evidence that is not there)."""
    base = SAMPLE_PLANS / "spark-4.3.0"
    final_only = []
    for scenario in ("smj_to_bhj_off", "smj_to_bhj"):
        text = (base / scenario / "simple_after.txt").read_text("utf-8")
        final = text[:text.index("+- == Initial Plan ==")]
        path = tmp_path / f"{scenario}.txt"
        path.write_text(final, encoding="utf-8")
        final_only.append(str(path))
    document, code = compare_json(*final_only)
    [pair] = document["pairs"]
    assert pair["replaced"] == [] and pair["lost"]["coalesced"] == 2
    assert code == 1


@pytest.mark.parametrize("line,name", [
    (line, name) for line in LINES for name in (*SCENARIO_INPUTS, "eventlog.lzf")
    if all((SAMPLE_PLANS / f"spark-{line}" / scenario / name).exists()
           for scenario in ("empty_relation_off", "empty_relation"))])
def test_an_empty_relation_replaces_what_was_made_inside_it(line, name):
    """AQEPropagateEmptyRelation on (the new run): one side of the join had no rows at run
    time, and the join (the whole plan here) became an empty relation; the old run, the rule
    excluded, ran the join over coalesced reads of both inputs. Those reads had nothing left
    to run on: replaced by the empty relation, not lost (exit 0). The reverse lost the empty
    relation: exit 1. Held to each scenario's truth.json (the JVM's plan objects)."""
    base = SAMPLE_PLANS / f"spark-{line}"
    off, on = base / "empty_relation_off" / name, base / "empty_relation" / name
    truth_off = json.loads((off.parent / "truth.json").read_text("utf-8"))
    truth_on = json.loads((on.parent / "truth.json").read_text("utf-8"))
    assert [j["operator"] for j in truth_off["joins"]] == ["SortMergeJoin"]
    assert truth_on["joins"] == [] and truth_on["rewrites"]["empty-relation"] == 1
    coalesced = truth_off["rewrites"]["coalesced"]
    assert coalesced == 2 and truth_on["rewrites"]["coalesced"] == 0
    document, code = compare_json(str(off), str(on))
    assert code == 0, document["verdict"]
    [pair] = document["pairs"]
    [replacement] = pair["replaced"]
    assert {k: v for k, v in replacement.items() if k not in ("joins", "text")} == {
        "kind": "coalesced", "count": coalesced, "by": "empty-relation",
        "because": "empty-relation", "switched_in": "new",
        "by_count": truth_on["rewrites"]["empty-relation"]}
    assert len(replacement["joins"]) == 1  # the new run's empty relation, as findings name it
    assert not any(pair["lost"].values())
    assert pair["gained"]["empty-relation"] == 1
    assert f"coalesced {coalesced} replaced by empty-relation 1" in document["verdict"]
    assert document["verdict"].startswith("PASS")
    reverse, code = compare_json(str(on), str(off))
    assert code == 1 and reverse["verdict"].startswith("FAIL")
    [pair] = reverse["pairs"]
    assert pair["replaced"] == [] and pair["lost"]["empty-relation"] == 1


@pytest.mark.parametrize("line", LINES)
def test_an_empty_relation_replaces_across_lines_and_kinds_of_input(line):
    """The operators are found by their place in the initial plan, whatever the input: an
    event log of one Spark line against a driver log of the other."""
    other = next(each for each in LINES if each != line)
    document, code = compare_json(
        str(SAMPLE_PLANS / f"spark-{line}" / "empty_relation_off" / "eventlog.json"),
        str(SAMPLE_PLANS / f"spark-{other}" / "empty_relation" / "driver.log"))
    assert code == 0, document["verdict"]
    [pair] = document["pairs"]
    assert [(r["kind"], r["count"], r["by"]) for r in pair["replaced"]] == \
        [("coalesced", 2, "empty-relation")]


def test_an_empty_relation_replaces_operator_by_operator_not_by_counting():
    """What an empty relation replaced is told operator by operator: the new run's empty
    relation with one of the join's inputs taken out of what it swallowed leaves that input's
    coalesced read lost, though the counts are the same."""
    import dataclasses

    from aqe_inspect.compare import Pair, compare

    base = SAMPLE_PLANS / "spark-4.3.0"
    result = compare(str(base / "empty_relation_off" / "eventlog.json"),
                     str(base / "empty_relation" / "eventlog.json"))
    [pair] = result.pairs
    places = [place for kind, place in pair.old.rewrite_places if kind == "coalesced"]
    assert len(places) == 2 and len(set(places)) == 2  # the two inputs, told apart
    swallowed = {place for place, _ in pair.new.emptied}
    assert set(places) <= swallowed
    kept = tuple(item for item in pair.new.emptied if item[0] != places[0])
    partial = Pair(pair.old, dataclasses.replace(pair.new, emptied=kept), pair.matched_by,
                   pair.kinds)
    assert [(r.kind, r.count) for r in partial.replaced] == [("coalesced", 1)]
    assert partial.lost["coalesced"] == 1
    nothing = Pair(pair.old, dataclasses.replace(pair.new, emptied=()), pair.matched_by,
                   pair.kinds)
    assert nothing.replaced == () and nothing.lost["coalesced"] == 2


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_says_what_an_empty_relation_replaced(name, tmp_path):
    base = SAMPLE_PLANS / "spark-3.5.9"
    out = tmp_path / f"report.{name}"
    done = run("compare", str(base / "empty_relation_off" / "eventlog.json"),
               str(base / "empty_relation" / "eventlog.json"), "--format", name, "-o",
               str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("aqe-inspect compare: PASS")
    text = out.read_text("utf-8")
    assert "coalesced 2 replaced by empty-relation 1" in text
    if name == "junit":
        assert ET.fromstring(text).get("failures") == "0"
    if name == "sarif":
        results = json.loads(text)["runs"][0]["results"]
        assert [r["properties"]["by"] for r in results if r["ruleId"] == "replaced/coalesced"] \
            == ["empty-relation"]
        assert not [r for r in results if r["level"] == "error"]
    if name == "github":
        assert "::error" not in text


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_says_what_was_replaced(name, tmp_path):
    out = tmp_path / f"report.{name}"
    done = run("compare", _log("4.3.0", "bhj_off"), _log("4.3.0", "baseline"), "--format",
               name, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("aqe-inspect compare: PASS")
    text = out.read_text("utf-8")
    assert "coalesced 2 replaced by local-read 2 (the join became smj-to-bhj)" in text
    if name == "junit":
        suite = ET.fromstring(text)
        assert suite.get("failures") == "0" and not list(suite.iter("failure"))
    if name == "sarif":
        results = json.loads(text)["runs"][0]["results"]
        replaced = [r for r in results if r["ruleId"] == "replaced/coalesced"]
        assert len(replaced) == 3 and {r["level"] for r in replaced} == {"note"}
        assert all(r["properties"]["by"] == "local-read" for r in replaced)
        assert not [r for r in results if r["level"] == "error"]
    if name == "github":
        assert "::error" not in text
        assert text.count("replaced a rewrite") == 3
    if name == "markdown":
        assert text.count("| REPLACED |") == 3
    if name == "html":
        assert text.count('data-status="REPLACED"') == 3


# ---- unfinished executions: no verdict ------------------------------------------------------

def _manifest_logs() -> list:
    manifest = json.loads((SAMPLE_PLANS / "eventlogs.json").read_text("utf-8"))
    return [entry for entry in manifest["logs"]
            if entry["layout"] == "single" and entry["codec"] is None
            and entry["path"].endswith(".json") and entry.get("truth")
            and (SAMPLE_PLANS / entry["path"]).is_file()]


#: One scenario that rewrote and one that did not, on each Spark line.
CUT_SCENARIOS = ("skew_join", "aqe_declines", "empty_relation")
CUT_LOGS = [entry for entry in _manifest_logs() if entry["scenario"] in CUT_SCENARIOS]


def _cut_copy(entry: dict, target: Path) -> str:
    """The real event log cut right after its measured execution's SQLExecutionStart line
    (`eventlogs.json` names the execution): the execution has no end, its plan is the
    initial one (isFinalPlan=false)."""
    lines = (SAMPLE_PLANS / entry["path"]).read_bytes().splitlines(keepends=True)
    start = next(number for number, text in enumerate(lines)
                 if b"SparkListenerSQLExecutionStart" in text
                 and json.loads(text).get("executionId") == entry["execution_id"])
    target.write_bytes(b"".join(lines[:start + 1]))
    return str(target)


def test_the_cut_logs_are_found():
    assert {(e["spark_version"], e["scenario"]) for e in CUT_LOGS} == {
        (line, scenario) for line in LINES for scenario in CUT_SCENARIOS}


@pytest.mark.parametrize("entry", CUT_LOGS, ids=[e["path"] for e in CUT_LOGS])
def test_a_run_against_a_cut_copy_of_itself_is_unfinished_both_ways(entry, tmp_path):
    """The whole log against a copy cut after its measured execution's start, either way
    round: never PASS (a cut new run lost nothing yet, a cut old run made nothing yet: the
    gate alone would pass the second whatever happened), exit 1, the pair `unfinished`
    naming the side, its execution and what is missing; --judge-unfinished judges what is
    there and says so."""
    whole = str(SAMPLE_PLANS / entry["path"])
    cut = _cut_copy(entry, tmp_path / "cut.json")
    truth = json.loads((SAMPLE_PLANS / entry["truth"]).read_text("utf-8"))
    made = {kind: count for kind, count in truth["rewrites"].items() if count}
    for old, new, side in ((whole, cut, "new"), (cut, whole, "old")):
        document, code = compare_json(old, new)
        assert code == 1, document["verdict"]
        assert document["failed"] is True and document["status"] == "unfinished"
        assert document["verdict"].startswith("UNFINISHED: 1 execution(s) unfinished")
        assert "--judge-unfinished" in document["verdict"]
        assert document["summary"]["unfinished"] == 1 and document["summary"]["failing"] == 0
        [pair] = document["pairs"]
        assert pair["status"] == "unfinished"
        [why] = pair["unfinished"]
        # The file and line the execution was read at, as messages name them.
        assert why.startswith(f"{side} run: execution {entry['execution_id']} ({cut}:")
        assert "had not ended" in why
        judged, code = compare_json(old, new, "--judge-unfinished")
        assert judged["judge_unfinished"] is True and judged["summary"]["unfinished"] == 0
        [pair] = judged["pairs"]
        assert pair["unfinished"] == [why]  # still said, though judged
        # Judged on what is there: the cut run made nothing yet, so the whole run's
        # rewrites are lost (new cut) or gained (old cut), as the JVM truth says.
        direction = "lost" if side == "new" else "gained"
        assert {k: n for k, n in pair[direction].items() if n} == made
        if side == "new" and made:
            assert code == 1 and judged["status"] == "failed"
            assert judged["verdict"].startswith("FAIL")
        else:
            assert code == 0 and judged["verdict"].startswith("PASS")
            assert "judged on what they hold (--judge-unfinished)" in judged["verdict"]


def test_an_isfinalplan_false_plan_is_unfinished():
    """A plan printed before the action ran (isFinalPlan=false) against the final one: no
    verdict."""
    base = SAMPLE_PLANS / "spark-4.3.0" / "skew_join"
    document, code = compare_json(str(base / "formatted_before.txt"),
                                  str(base / "formatted_after.txt"))
    assert code == 1 and document["status"] == "unfinished"
    [pair] = document["pairs"]
    [why] = pair["unfinished"]
    assert why.startswith("old run: ") and "isFinalPlan=false" in why


def test_a_gate_failure_beside_an_unfinished_pair_is_a_fail_saying_both(tmp_path):
    """Two inputs: one pair fails the gate, another is unfinished: FAIL, and the verdict names
    the unfinished one too."""
    base = SAMPLE_PLANS / "spark-4.3.0"
    skew = next(e for e in CUT_LOGS if e["spark_version"] == "4.3.0"
                and e["scenario"] == "skew_join")
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    for folder in (old, new):
        (folder / "a.json").write_bytes((base / "empty_relation" / "eventlog.json")
                                        .read_bytes())
    (old / "b.json").write_bytes((base / "skew_join" / "eventlog.json").read_bytes())
    _cut_copy(skew, new / "b.json")
    (new / "a.json").write_bytes((base / "empty_relation_off" / "eventlog.json")
                                 .read_bytes())
    document, code = compare_json(str(old), str(new))
    assert code == 1 and document["status"] == "failed"
    assert document["verdict"].startswith("FAIL: 1 execution(s) fail --fail-on lost")
    assert "; 1 execution(s) unfinished, no verdict" in document["verdict"]
    statuses = sorted(pair["status"] for pair in document["pairs"])
    assert statuses == ["failed", "unfinished"]


@pytest.fixture(scope="module")
def cut_pair(tmp_path_factory) -> tuple:
    entry = next(e for e in CUT_LOGS if e["spark_version"] == "3.5.9"
                 and e["scenario"] == "skew_join")
    cut = _cut_copy(entry, tmp_path_factory.mktemp("cut") / "cut.json")
    return str(SAMPLE_PLANS / entry["path"]), cut


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_says_unfinished(name, cut_pair, tmp_path):
    out = tmp_path / f"report.{name}"
    done = run("compare", *cut_pair, "--format", name, "-o", str(out))
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("aqe-inspect compare: UNFINISHED")
    text = out.read_text("utf-8")
    if name == "text":
        assert re.search(r"^UNFINISHED  execution \d+ -> execution \d+", text, re.M)
        assert "unfinished, no verdict: new run: execution" in text
    if name == "json":
        data = json.loads(text)
        assert data["status"] == "unfinished" and data["pairs"][0]["status"] == "unfinished"
    if name == "junit":
        from .schemas import validate_junit

        validate_junit(text)
        suite = ET.fromstring(text)
        assert suite.get("failures") == "0" and suite.get("errors") == "1"
        [error] = list(suite.iter("error"))
        assert error.get("type") == "unfinished" and not list(suite.iter("failure"))
    if name == "sarif":
        from .schemas import validate_sarif

        document = json.loads(text)
        validate_sarif(document)
        [result] = document["runs"][0]["results"]
        assert result["ruleId"] == "unfinished" and result["kind"] == "open"
        assert result["level"] == "none"  # SARIF 2.1.0, 3.27.9
        assert result["properties"]["status"] == "unfinished"
    if name == "github":
        assert re.search(r"^::error [^:]*title=aqe-inspect compare%3A execution \d+ "
                         r"unfinished::", text, re.M), text
    if name == "markdown":
        assert "⏳ UNFINISHED" in text and "| UNFINISHED |" in text
    if name == "html":
        assert 'data-status="UNFINISHED"' in text and 'class="verdict fail"' in text
    judged = run("compare", *cut_pair, "--format", name, "--judge-unfinished")
    assert judged.returncode == 1  # judged: the cut run lost what the whole one made
    assert "UNFINISHED: " not in judged.stdout


def test_the_library_takes_judge_unfinished(cut_pair):
    from aqe_inspect import api

    result = api.compare(*cut_pair)
    assert result.failed and len(result.unfinished) == 1 and not result.tripped
    judged = api.compare(*cut_pair, judge_unfinished=True)
    assert judged.failed and judged.unfinished == () and len(judged.tripped) == 1


# ---- matching -------------------------------------------------------------------------------

def _renamed_copy(source: str, target: Path, old: str, new: str) -> str:
    import zstandard

    with open(source, "rb") as handle:
        text = zstandard.ZstdDecompressor().stream_reader(handle).read().decode("utf-8")
    target.write_text(text.replace(old, new), encoding="utf-8")
    return str(target)


@pytest.mark.parametrize("new_run", ["rerun", "bhj_off", "coalesce_off"])
def test_executions_whose_descriptions_changed_match_by_shape(tmp_path, new_run):
    line = "4.3.0"
    renamed = _renamed_copy(_log(line, new_run), tmp_path / "renamed.json", "aqe-compare:",
                            "renamed:")
    document, _ = compare_json(_log(line, "baseline"), renamed)
    assert {p["matched_by"] for p in document["pairs"]} == {"shape"}
    assert len(document["pairs"]) == 8
    for pair in document["pairs"]:  # each with its own counterpart, strategies changed or not
        assert pair["old"]["description"].split(":")[1] == pair["new"]["description"].split(":")[1]
    expected = implied(_truth(line)["baseline"], _truth(line)[new_run])
    assert {p["old"]["description"]: ({k: n for k, n in p["lost"].items() if n},
                                      {k: n for k, n in p["gained"].items() if n})
            for p in document["pairs"]} == expected


def test_plan_texts_match_by_shape_and_the_truth_holds():
    base = SAMPLE_PLANS / "spark-3.5.9"
    document, code = compare_json(str(base / "smj_to_bhj" / "formatted_after.txt"),
                                  str(base / "smj_to_bhj_off" / "formatted_after.txt"))
    on = json.loads((base / "smj_to_bhj" / "truth.json").read_text("utf-8"))["rewrites"]
    off = json.loads((base / "smj_to_bhj_off" / "truth.json").read_text("utf-8"))["rewrites"]
    [pair] = document["pairs"]
    assert pair["matched_by"] == "shape"
    assert {k: n for k, n in pair["lost"].items() if n} == \
        {k: on[k] - off[k] for k in on if on[k] > off[k]}
    assert code == 1


def test_executions_of_one_run_only_are_listed(tmp_path):
    single = SAMPLE_PLANS / "spark-4.3.0" / "smj_to_bhj" / "eventlog.json"
    document, _ = compare_json(_log("4.3.0", "baseline"), str(single))
    assert len(document["unmatched"]["old"]) == 8 - len(document["pairs"])
    assert document["summary"]["unmatched_old"] == len(document["unmatched"]["old"])
    text = run("compare", _log("4.3.0", "baseline"), str(single))
    assert "only in the old run" in text.stdout


# ---- the gate ------------------------------------------------------------------------------

@pytest.mark.parametrize("fail_on,new_run,code", [
    ("none", "bhj_off", 0),
    ("gained", "bhj_off", 1),       # coalescing gained where the broadcast went
    ("lost:skew-join", "bhj_off", 0),
    ("lost:skew-join", "skew_off", 1),
    ("lost:smj-to-bhj,lost:skew-join", "bhj_off", 1),
    ("any:coalesced", "skew_off", 0),
    ("any:coalesced", "coalesce_off", 1),
    ("gained", "rerun", 0),
    ("any", "rerun", 0),
])
def test_fail_on_chooses_what_fails(fail_on, new_run, code):
    done = run("compare", _log("3.5.9", "baseline"), _log("3.5.9", new_run),
               "--fail-on", fail_on)
    assert done.returncode == code, done.stdout + done.stderr
    assert verdict(done.stdout).startswith(
        f"aqe-inspect compare: {'FAIL' if code else 'PASS'}")


def test_fail_on_repeated_is_the_union():
    done = run("compare", _log("3.5.9", "coalesce_off"), _log("3.5.9", "baseline"),
               "--fail-on", "lost:skew-join", "--fail-on", "gained:coalesced")
    assert done.returncode == 1
    assert "fails --fail-on gained:coalesced" in done.stdout


# ---- bad input: exit 2, one line, nothing written -------------------------------------------

@pytest.mark.parametrize("args,words", [
    (["missing.zstd", "{base}"], "missing.zstd"),
    (["{base}", "missing.zstd"], "missing.zstd"),
    (["{base}", "{base}", "--fail-on", "lost:skew"], "not a rewrite kind"),
    (["{base}", "{base}", "--fail-on", "sometimes"], "--fail-on"),
    (["{base}", "{base}", "--fail-on", "none,lost"], "--fail-on none"),
    (["{base}", "{base}", "--format", "yaml"], "--format"),
    (["{base}", "{table}"], "fleet table"),
    (["{base}", "{empty}"], "empty.txt"),
    (["-", "-"], "standard input"),
    (["{table}", "{badtable}"], "no column"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, words):
    (tmp_path / "table.csv").write_text(_table_csv([("a", "b", {})]), encoding="utf-8")
    (tmp_path / "bad.csv").write_text("x,y\n1,2\n", encoding="utf-8")
    (tmp_path / "empty.txt").write_text("nothing here\n", encoding="utf-8")
    values = {"base": _log("3.5.9", "baseline"), "table": str(tmp_path / "table.csv"),
              "badtable": str(tmp_path / "bad.csv"), "empty": str(tmp_path / "empty.txt")}
    out = tmp_path / "report.txt"
    done = run("compare", *[a.format(**values) for a in args], "-o", str(out), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("aqe-inspect: error: "), done.stderr
    assert words in lines[0]
    assert "Traceback" not in done.stderr and not out.exists()


def test_the_output_file_must_not_be_an_input(tmp_path):
    copy = tmp_path / "old.zstd"
    copy.write_bytes(Path(_log("3.5.9", "baseline")).read_bytes())
    done = run("compare", str(copy), _log("3.5.9", "rerun"), "-o", str(copy))
    assert done.returncode == 2
    assert copy.read_bytes() == Path(_log("3.5.9", "baseline")).read_bytes()


# ---- the formats ---------------------------------------------------------------------------

HOSTILE = ('</td><script>alert(1)</script> | *bold* [link](http://x) ::error::forged '
           '##[group] `tick` \u202eevil\x1b[31m\r\n::warning::second & <b>')


@pytest.fixture(scope="module")
def hostile_logs(tmp_path_factory) -> tuple:
    folder = tmp_path_factory.mktemp("hostile")
    escaped = json.dumps(HOSTILE)[1:-1]
    old = _renamed_copy(_log("4.3.0", "baseline"), folder / "old.json",
                        "aqe-compare:smj_to_bhj", escaped)
    new = _renamed_copy(_log("4.3.0", "bhj_off"), folder / "new.json",
                        "aqe-compare:smj_to_bhj", escaped)
    return old, new


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_escapes_text_from_the_inputs(hostile_logs, name):
    done = run("compare", *hostile_logs, "--format", name)
    assert done.returncode == 1, done.stderr
    out = done.stdout
    if name in ("json", "sarif"):  # JSON strings hold any text; it reads back the same
        document = json.loads(out)
        if name == "json":
            pair = next(p for p in document["pairs"] if p["new"]["description"] == HOSTILE)
            assert pair["lost"]["smj-to-bhj"] == 1
        else:
            assert any("alert(1)" in r["message"]["text"]
                       for r in document["runs"][0]["results"])
        return
    assert "\x1b" not in out and "\u202e" not in out and "\r" not in out
    if name == "text":  # for a terminal: the description stays on its line, defused
        # Wrapped to the width, its lines after the first are indented: none passes for a
        # line of its own; wide enough not to wrap, it is one line.
        assert not any(line.startswith(("::", "##[", "forged", "evil")) for line in
                       out.splitlines())
        wide = run("compare", *hostile_logs, "--format", name, "--width", "10000").stdout
        assert any("alert(1)" in line and "forged" in line for line in wide.splitlines())
    if name == "github":
        for line in out.splitlines():  # our own commands, and plain lines that are none
            assert not line.lstrip().startswith(("::warning::second", "::error::forged"))
            if not line.startswith(("::error ", "::warning ", "::notice ")):
                assert "##[" not in line and not line.lstrip().startswith("::")
    if name == "junit":
        ET.fromstring(out)
    if name in ("markdown", "html"):
        assert "<script>" not in out and "& <b>" not in out
    if name == "markdown":
        row = next(line for line in out.splitlines() if "alert" in line)
        cells = re.split(r"(?<!\\)\|", row)
        assert len(cells) == 12, row  # ten cells: no `|` of the description ends one
        assert "[link](" not in row


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_says_what_was_lost(name, tmp_path):
    out = tmp_path / f"report.{name}"
    done = run("compare", _log("4.3.0", "baseline"), _log("4.3.0", "bhj_off"), "--format",
               name, "-o", str(out))
    assert done.returncode == 1
    assert done.stdout.startswith("aqe-inspect compare: FAIL")
    text = out.read_text("utf-8")
    assert "smj-to-bhj" in text and "aqe-compare:smj_to_bhj" in text.replace("\\_", "_")


def test_json_validates_against_the_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    import aqe_inspect.compare

    schema = json.loads((Path(aqe_inspect.compare.__file__).parent / "schema.json")
                        .read_text("utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for old, new in ((_log("3.5.9", "baseline"), _log("4.3.0", "coalesce_off")),
                     (_log("3.5.9", "bhj_off"), _log("3.5.9", "baseline")),
                     (_log("4.3.0", "baseline"),
                      str(SAMPLE_PLANS / "spark-4.3.0" / "skew_join" / "eventlog.json")),
                     (str(SAMPLE_PLANS / "spark-4.3.0" / "empty_relation_off" / "eventlog.json"),
                      str(SAMPLE_PLANS / "spark-4.3.0" / "empty_relation" / "eventlog.json"))):
        document, _ = compare_json(old, new)
        errors = sorted(validator.iter_errors(document), key=str)
        assert not errors, errors[:3]
    entry = next(e for e in CUT_LOGS if e["scenario"] == "skew_join")
    cut = _cut_copy(entry, tmp_path / "cut.json")
    for extra in ((), ("--judge-unfinished",)):
        document, _ = compare_json(str(SAMPLE_PLANS / entry["path"]), cut, *extra)
        assert document["pairs"][0]["unfinished"]
        assert not sorted(validator.iter_errors(document), key=str)
    table_old, table_new = tmp_path / "a.csv", tmp_path / "b.csv"
    table_old.write_text(_table_csv([("app", "q1", {"coalesced": 1})]), encoding="utf-8")
    table_new.write_text(_table_csv([("app", "q1", {}), ("app", "q2", {})]), encoding="utf-8")
    document, _ = compare_json(str(table_old), str(table_new))
    assert not sorted(validator.iter_errors(document), key=str)


def test_sarif_and_junit_validate(tmp_path):
    from .schemas import validate_junit, validate_sarif

    for old, new in ((_log("3.5.9", "baseline"), _log("3.5.9", "skew_off")),
                     (_log("3.5.9", "bhj_off"), _log("3.5.9", "baseline")),
                     (_log("3.5.9", "baseline"), _log("3.5.9", "rerun"))):
        validate_sarif(json.loads(run("compare", old, new, "-f", "sarif").stdout))
        validate_junit(run("compare", old, new, "-f", "junit").stdout)


def test_html_puts_the_plans_side_by_side_and_marks_what_changed():
    done = run("compare", _log("4.3.0", "baseline"), _log("4.3.0", "bhj_off"), "-f", "html")
    page = done.stdout
    section = page[page.index("aqe-compare:smj_to_bhj"):]
    section = section[:section.index("</section>")]
    changed = re.findall(r'<tr class="changed">(.*?)</tr>', section)
    assert any("BroadcastHashJoin" in row for row in changed)
    assert any("SortMergeJoin" in row for row in changed)
    assert 'data-side="old"' in section and 'data-side="new"' in section
    unchanged = re.findall(r"<tr><td class=\"old\".*?</tr>", section)
    assert unchanged  # operators the two runs share are aligned, not marked


# ---- fleet tables --------------------------------------------------------------------------

def _table_csv(rows) -> str:
    from aqe_inspect.fleet.table import COLUMN_NAMES, KIND_COLUMNS

    lines = [",".join(COLUMN_NAMES)]
    for app, description, counts in rows:
        row = dict.fromkeys(COLUMN_NAMES, "")
        row.update(app_name=app, description=description, execution_id="1")
        for column in KIND_COLUMNS:
            row[column] = str(counts.get(column, 0))
        lines.append(",".join(_csv_value(row[name]) for name in COLUMN_NAMES))
    return "\n".join(lines) + "\n"


def _csv_value(value: str) -> str:
    return '"' + value.replace('"', '""') + '"' if any(c in value for c in ',"\n') else value


def test_fleet_tables_compare_rates_per_application_and_description(tmp_path):
    old = [("etl", "daily join", {"smj_to_bhj": 1})] * 4 + \
          [("etl", "daily agg", {"coalesced": 2})] * 2 + [("bi", "=cmd|'/c calc'!A1", {})]
    new = [("etl", "daily join", {"smj_to_bhj": 1})] * 1 + [("etl", "daily join", {})] * 3 + \
          [("etl", "daily agg", {"coalesced": 1})] * 2 + [("ml", "new query", {"skew_join": 1})]
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "part-00000.csv").write_text(_table_csv(old), encoding="utf-8")
    (tmp_path / "old" / "_SUCCESS").write_text("", encoding="utf-8")
    (tmp_path / "new.csv").write_text(_table_csv(new), encoding="utf-8")
    document, code = compare_json(str(tmp_path / "old"), str(tmp_path / "new.csv"))
    assert code == 1 and document["kind"] == "fleet"
    groups = {(g["app_name"], g["description"]): g for g in document["groups"]}
    join = groups[("etl", "daily join")]
    assert join["executions"] == {"old": 4, "new": 4}
    assert join["rates"]["old"]["smj-to-bhj"]["rate"] == 1.0
    assert join["rates"]["new"]["smj-to-bhj"]["rate"] == 0.25
    assert join["lost"]["smj-to-bhj"] == 75
    agg = groups[("etl", "daily agg")]
    assert not any(agg["lost"].values())  # fewer coalesced reads, but every execution has one
    assert [g["description"] for g in document["unmatched"]["old"]] == ["=cmd|'/c calc'!A1"]
    assert [g["app_name"] for g in document["unmatched"]["new"]] == ["ml"]
    markdown = run("compare", str(tmp_path / "old"), str(tmp_path / "new.csv"), "-f",
                   "markdown").stdout
    assert "75%" not in markdown and "100% → 25%" in markdown


def test_fleet_tables_of_100000_rows_compare(tmp_path):
    from aqe_inspect.fleet.table import COLUMN_NAMES

    for name, every in (("old.csv", 1), ("new.csv", 3)):
        with open(tmp_path / name, "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(COLUMN_NAMES)
            for number in range(100_000):
                row = dict.fromkeys(COLUMN_NAMES, "")
                row.update(app_name=f"app-{number % 50}", description=f"query {number % 400}",
                           coalesced=str(int(number % every == 0)), skew_join="0",
                           smj_to_bhj="0", smj_to_shj="0", empty_relation="0", local_read="0")
                writer.writerow([row[column] for column in COLUMN_NAMES])
    document, code = compare_json(str(tmp_path / "old.csv"), str(tmp_path / "new.csv"))
    assert code == 1
    assert document["old"]["executions"] == document["new"]["executions"] == 100_000
    assert len(document["groups"]) == 400  # app-N runs query M where N = M mod 50
    assert all(g["lost"]["coalesced"] > 0 or g["rates"]["new"]["coalesced"]["rate"] == 1.0
               for g in document["groups"])


def test_a_parquet_table_needs_pyarrow_or_says_so(tmp_path):
    table = tmp_path / "t.parquet"
    table.write_bytes(b"PAR1" + b"\0" * 16 + b"PAR1")
    done = run("compare", str(table), str(table))
    assert done.returncode == 2
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        assert "needs pyarrow" in done.stderr
    else:
        assert "cannot read the Parquet table" in done.stderr


# ---- the library ---------------------------------------------------------------------------

def test_the_library_function_returns_the_comparison():
    from aqe_inspect.compare import compare

    result = compare(_log("3.5.9", "baseline"), _log("3.5.9", "skew_off"),
                     fail_on=["lost:skew-join"])
    assert result.failed
    [(pair, reasons)] = result.tripped
    assert pair.new.description == "aqe-compare:skew_join" and reasons == ("lost:skew-join",)
    assert result.as_json()["schema"] == "aqe-inspect/compare/v1"


# ---- the README's recipe, as written --------------------------------------------------------

def _readme_recipe() -> list:
    text = (ROOT / "README.md").read_text("utf-8")
    section = text[text.index("<!-- compare-recipe -->"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.startswith("aqe-inspect compare")]


def test_the_readme_upgrade_recipe_runs_as_written(tmp_path):
    [line] = _readme_recipe()
    (tmp_path / "sample_plans").symlink_to(SAMPLE_PLANS, target_is_directory=True)
    words = shlex.split(line, comments=True)
    assert words[words.index("--format") + 1] == "github"
    done = run(*words[1:], cwd=tmp_path)
    expected = re.search(r"#\s*exit\s+(\d+)", line)
    assert done.returncode == (int(expected.group(1)) if expected else 0), done.stderr
    assert verdict(done.stdout).startswith("aqe-inspect compare: ")
    if done.returncode == 1:
        assert any(out.startswith("::error ") for out in done.stdout.splitlines())


# ---- fuzz: whatever the two inputs hold, a result or one line and exit 2 ---------------------

_SEEDS = [b"", b"\x28\xb5\x2f\xfd", b'{"Event":"SparkListenerLogStart"}\n',
          b"== Physical Plan ==\nAdaptiveSparkPlan isFinalPlan=true\n+- Scan x\n",
          b"app_name,description,coalesced\n", b"PAR1"]


def test_fuzzed_inputs_never_end_in_a_traceback(tmp_path):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    real = Path(_log("4.3.0", "baseline")).read_bytes()

    @settings(max_examples=25, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(_SEEDS + [real[:5000], real[:-7]]), st.binary(max_size=300),
           st.sampled_from(["a.txt", "a.csv", "a.json", "a.zstd", "a.parquet"]))
    def one(seed, noise, name):
        path = tmp_path / name
        path.write_bytes(seed + noise)
        for args in ((str(path), _log("4.3.0", "rerun")), (_log("4.3.0", "rerun"), str(path))):
            done = run("compare", *args, "--format", "json")
            assert done.returncode in (0, 1, 2), done.stderr
            assert "Traceback" not in done.stderr
            if done.returncode == 2:
                lines = done.stderr.splitlines()
                assert len(lines) == 1 and lines[0].startswith("aqe-inspect: error: ")
                assert done.stdout == ""
            else:
                assert json.loads(done.stdout)["schema"] == "aqe-inspect/compare/v1"

    one()


# ---- matching rounds, on summaries -----------------------------------------------------------

def _summary(number: int, description: str, shape: str):
    from aqe_inspect.compare.summary import ExecutionSummary

    return ExecutionSummary(source="x", execution_id=number, query_id=str(number),
                            description=description, shape=shape, counts={})


def test_matching_prefers_description_and_shape_then_description_then_shape():
    from aqe_inspect.compare.matching import match

    old = [_summary(0, "load", "a"), _summary(1, "load", "b"), _summary(2, "", "c"),
           _summary(3, "report", "d"), _summary(4, "gone", "e")]
    new = [_summary(10, "load", "b"), _summary(11, "load", "z"), _summary(12, "", "c"),
           _summary(13, "renamed", "d"), _summary(14, "", "q")]
    pairs, old_left, new_left = match(old, new)
    named = {(old[o].execution_id, new[n].execution_id): basis for o, n, basis in pairs}
    assert named == {(1, 10): "description",   # same description and shape first
                     (0, 11): "description",   # then the same description, the shape changed
                     (2, 12): "shape",         # no description: by shape
                     (3, 13): "shape"}         # the description changed: by shape
    assert [old[i].execution_id for i in old_left] == [4]
    assert [new[i].execution_id for i in new_left] == [14]


def test_ties_pair_in_the_order_the_executions_ran():
    from aqe_inspect.compare.matching import match

    old = [_summary(n, "collect at job.py:12", "s") for n in range(3)]
    new = [_summary(10 + n, "collect at job.py:12", "s") for n in range(4)]
    pairs, old_left, new_left = match(old, new)
    assert [(old[o].execution_id, new[n].execution_id) for o, n, _ in pairs] == \
        [(0, 10), (1, 11), (2, 12)]
    assert not old_left and [new[i].execution_id for i in new_left] == [13]


# ---- executions missing from the new run: no verdict (issue 48, item 12) -------------------

def _events(line: str, run_name: str) -> list:
    import zstandard

    with open(_log(line, run_name), "rb") as handle:
        text = zstandard.ZstdDecompressor().stream_reader(handle).read().decode("utf-8")
    return text.splitlines()


def _execution_of(event: dict):
    """The SQL execution an event belongs to: its executionId, or the job's or stage's
    `spark.sql.execution.id` property; None for the application's own events."""
    if "executionId" in event:
        return event["executionId"]
    properties = event.get("Properties") or {}
    number = properties.get("spark.sql.execution.id")
    return int(number) if number is not None else None


def _ended_early(tmp_path: Path, ending: str, new_run: str = "baseline") -> tuple:
    """The real baseline run (PySpark 4.3.0) cut to its first three executions (each made
    rewrites: coalesced; coalesced and skew-join; smj-to-bhj and local-read), as OLD; and NEW,
    the run `new_run` (the same, by default) that stopped after the first: executions 1 and
    on gone, and its application's end saying exit code 1 (`ending="exit 1"`) or gone
    (`"no end"`)."""
    old_lines, new_lines = [], []
    for text in _events("4.3.0", "baseline"):
        number = _execution_of(json.loads(text))
        if number is None or number <= 2:
            old_lines.append(text)
    for text in _events("4.3.0", new_run):
        event = json.loads(text)
        number = _execution_of(event)
        if number is not None and number > 0:
            continue
        if event["Event"] == "SparkListenerApplicationEnd":
            if ending == "no end":
                continue
            assert event["ExitCode"] == 0
            text = json.dumps({**event, "ExitCode": 1})
        new_lines.append(text)
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text("\n".join(old_lines) + "\n", encoding="utf-8")
    new.write_text("\n".join(new_lines) + "\n", encoding="utf-8")
    return str(old), str(new)


def test_the_old_run_cut_to_three_executions_made_rewrites_in_each(tmp_path):
    """The material holds what the test needs: three executions, each with rewrites, by the
    JVM's truth and as read."""
    old, _ = _ended_early(tmp_path, "exit 1")
    truth = _truth("4.3.0")["baseline"]["executions"][:3]
    assert all(any(execution["rewrites"].values()) for execution in truth)
    document, code = compare_json(old, old)
    assert code == 0 and len(document["pairs"]) == 3
    assert all(any(pair["counts"]["old"].values()) for pair in document["pairs"])


@pytest.mark.parametrize("ending", ["exit 1", "no end"])
@pytest.mark.parametrize("name", FORMATS)
def test_executions_missing_from_a_new_run_that_ended_early_are_unfinished(
        tmp_path, name, ending):
    """`compare OLD NEW --fail-on lost`, NEW the run that ended after the first of OLD's three
    executions: never PASS. Every format says UNFINISHED and names both missing executions
    (with their file and line); exit 1. `--allow-missing` is the old behaviour: listed,
    PASS, exit 0 (where NEW's log ended; one with no end stays unfinished for that)."""
    _ended_early(tmp_path, ending)
    old, new = "old.json", "new.json"  # named as given, from where the command runs
    out = tmp_path / f"report.{name}"
    done = run("compare", old, new, "--fail-on", "lost", "--format", name, "-o", str(out),
               cwd=tmp_path)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout.startswith("aqe-inspect compare: UNFINISHED: 2 execution(s) "
                                  "unfinished, no verdict"), done.stdout
    text = out.read_text("utf-8")
    flat = " ".join(text.split())
    why = "is missing from the new run new.json" if ending == "exit 1" else \
        "has no partner in the new run, whose log new.json ends before its application does"
    for number, scenario in ((1, "skew_join"), (2, "smj_to_bhj")):
        if name == "text":
            assert f'UNFINISHED execution {number} "aqe-compare:{scenario}"' in flat
        elif name == "html":
            assert f"<li>execution {number} aqe-compare:{scenario}: " in text
        else:  # each its own entry, naming the file and line it was read at
            assert re.search(rf"old run: execution {number} \(old\.json:\d+\) {why}",
                             flat.replace("\\_", "_")), (number, text[:3000])
    if name in ("text", "html", "markdown"):
        heading = "missing from the new run new.json" if ending == "exit 1" else \
            "the new run's log new.json ends before its application does"
        assert heading in flat.replace("\\_", "_").replace("&#x27;", "'")
    if name == "json":
        data = json.loads(text)
        assert data["status"] == "unfinished" and data["failed"] is True
        assert data["allow_missing"] is False
        assert data["summary"]["missing"] == (2 if ending == "exit 1" else 0)
        assert len(data["unpartnered"]) == 2
        assert [e["execution_id"] for e in data["unmatched"]["old"]] == [1, 2]
    if name == "junit":
        suite = ET.fromstring(text)
        assert suite.get("errors") == "2" and suite.get("failures") == "0"
    if name == "sarif":
        results = json.loads(text)["runs"][0]["results"]
        assert sum(1 for r in results if r["ruleId"] == "unfinished") == 2
    if name == "github":
        assert len(re.findall(r"^::error .*unfinished::", text, re.M)) == 2
    if name == "markdown":
        assert "⏳ UNFINISHED" in text
    if name == "html":
        assert 'class="verdict fail"' in text
    allowed = run("compare", old, new, "--fail-on", "lost", "--format", name,
                  "--allow-missing", cwd=tmp_path)
    if ending == "exit 1":
        assert allowed.returncode == 0, allowed.stdout
        assert "missing from the new run" not in allowed.stdout
        if name == "text":
            assert verdict(allowed.stdout).startswith("aqe-inspect compare: PASS")
            assert "only in the old run (2):" in allowed.stdout
        if name == "json":
            data = json.loads(allowed.stdout)
            assert data["allow_missing"] is True and data["status"] == "passed"
            assert data["summary"]["missing"] == 0 and data["unpartnered"] == []
            assert data["summary"]["unmatched_old"] == 2
    else:  # a log with no end: unfinished for that, whatever --allow-missing says
        assert allowed.returncode == 1
        assert "whose log" in allowed.stdout.replace("\n  ", " ")


def test_executions_missing_from_the_new_run_validate_against_the_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    import aqe_inspect.compare

    schema = json.loads((Path(aqe_inspect.compare.__file__).parent / "schema.json")
                        .read_text("utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    old, new = _ended_early(tmp_path, "exit 1")
    for extra in ((), ("--allow-missing",)):
        document, _ = compare_json(old, new, *extra)
        assert not sorted(validator.iter_errors(document), key=str)


def test_a_gate_failure_and_missing_executions_say_both(tmp_path):
    """NEW the run with coalescing off (a real run) that ended after its first execution,
    which lost its coalesced read: FAIL, and the verdict counts the two missing executions
    as unfinished after it; with --allow-missing, the FAIL alone."""
    old, new = _ended_early(tmp_path, "exit 1", new_run="coalesce_off")
    document, code = compare_json(old, new)
    assert code == 1 and document["status"] == "failed", document["verdict"]
    assert document["verdict"].startswith("FAIL: 1 execution(s) fail --fail-on lost "
                                          "(lost coalesced 1")
    assert "; 2 execution(s) unfinished, no verdict" in document["verdict"]
    assert document["summary"]["missing"] == 2
    allowed, code = compare_json(old, new, "--allow-missing")
    assert code == 1 and allowed["status"] == "failed"
    assert "unfinished" not in allowed["verdict"]


def test_the_library_and_the_old_behaviour_say_the_same(tmp_path):
    from aqe_inspect import api

    old, new = _ended_early(tmp_path, "exit 1")
    result = api.compare(old, new)
    assert result.failed and not result.tripped and not result.unfinished
    assert [s.execution_id for s in result.missing] == [1, 2]
    allowed = api.compare(old, new, allow_missing=True)
    assert not allowed.failed and allowed.missing == () and allowed.unpartnered == ()
    assert [s.execution_id for s in allowed.unmatched_old] == [1, 2]
