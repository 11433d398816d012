"""Skew evidence beside each skew decision: every partition's size of each side of a join, as
OptimizeSkewedJoin weighs them (count, min, median, p95, max, how many exceed both the
threshold and factor x the median), held to the event log's own task metrics and to the
JVM's map output statistics (truth.json's `bytes_by_partition`, read by the generator from
`MapOutputStatistics.bytesByPartitionId`)."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from aqe_inspect import api
from .conftest import AQE_INSPECT, SAMPLE_PLANS

VERSIONS = ("3.5.9", "4.3.0")
#: The skew samples whose reading stage reads one partition per task (coalescing off): the
#: log holds every partition's size.
MEASURED = ("skew_below_factor", "skew_unsplittable_side")
FACTOR = "spark.sql.adaptive.skewJoin.skewedPartitionFactor"
THRESHOLD = "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes"


def _run(*args: str) -> str:
    done = subprocess.run([*AQE_INSPECT, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _median(values: List[int]) -> int:
    """Spark's Utils.median, written out: the mean of the two middle values of an even count
    (integer division), at least 1."""
    ordered, n = sorted(values), len(values)
    middle = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) // 2
    return max(middle, 1)


def _bytes(text: str) -> int:
    number, unit = text[:-2], text[-2:].upper()
    return int(number) * {"KB": 1024, "MB": 1024 ** 2}[unit]


def _per_task_reads(log: Path) -> Dict[Tuple[int, ...], List[int]]:
    """From the raw events alone: for each Exchange of the final plan (by its read metrics'
    accumulator ids), what each successful task of the stage reading it read (local + remote
    bytes read, the SQL metrics' per-task updates), in task-index order."""
    events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    plans = [e["sparkPlanInfo"] for e in events if "sparkPlanInfo" in e]
    exchanges: List[Tuple[int, ...]] = []
    stack = [plans[-1]]
    while stack:
        node = stack.pop()
        if node["nodeName"] == "Exchange":
            exchanges.append(tuple(sorted(m["accumulatorId"] for m in node["metrics"]
                                          if m["name"] in ("local bytes read",
                                                           "remote bytes read"))))
        stack.extend(node["children"])
    found: Dict[Tuple[int, ...], Dict[Tuple[int, int], int]] = {ids: {} for ids in exchanges}
    for event in events:
        if event["Event"] != "SparkListenerTaskEnd" or \
                event["Task End Reason"]["Reason"] != "Success":
            continue
        info = event["Task Info"]
        for item in info["Accumulables"]:
            for ids, tasks in found.items():
                if item["ID"] in ids:
                    key = (event["Stage ID"], info["Index"])
                    tasks[key] = tasks.get(key, 0) + int(item["Update"])
    return {ids: [tasks[key] for key in sorted(tasks)] for ids, tasks in found.items() if tasks}


def _expected(sizes: List[int], factor: float, threshold: int) -> dict:
    ordered = sorted(sizes)
    median = _median(sizes)
    bar = max(threshold, int(median * factor))
    return {"partitions": len(sizes), "min": ordered[0], "median": median,
            "p95": ordered[math.ceil(0.95 * len(sizes)) - 1], "max": ordered[-1],
            "over": sum(1 for size in sizes if size > bar)}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scenario", MEASURED)
def test_figures_are_the_task_metrics_own_partition_sizes(version, scenario):
    """`why --kind skew-join --format json` (the installed command): each side's figures equal
    those of one exchange's per-task bytes read, computed here from the raw TaskEnd events;
    the two sides are the join's two exchanges."""
    folder = SAMPLE_PLANS / f"spark-{version}" / scenario
    truth = json.loads((folder / "truth.json").read_text())
    factor, threshold = float(truth["confs"][FACTOR]), _bytes(truth["confs"][THRESHOLD])
    expected = [_expected(sizes, factor, threshold)
                for sizes in _per_task_reads(folder / "eventlog.json").values()]
    answer = json.loads(_run("why", str(folder / "eventlog.json"), "--kind", "skew-join",
                             "--format", "json"))
    (query,) = answer["queries"]
    (candidate,) = query["candidates"]
    sides = candidate["skew"]
    assert [side["side"].split(" side ")[0] for side in sides] == ["left", "right"]
    shown = []
    for side in sides:
        assert side["missing"] is None and side["source"] == "metric"
        assert (side["threshold"], side["factor"]) == (threshold, factor)
        assert side["bar"] == max(threshold, int(side["median"] * factor))
        figures = {key: side[key] for key in ("partitions", "min", "median", "p95", "max",
                                              "over")}
        assert figures in expected
        shown.append(figures)
    assert shown[0] != shown[1]  # two exchanges, not one twice


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scenario", MEASURED)
def test_figures_agree_with_the_jvm_map_output_statistics(version, scenario):
    """The library's sizes, partition by partition, are the bytes the JVM's map statuses
    recorded (truth's bytes_by_partition: each block's size rounded up by at most 10%,
    MapStatus's log-1.1 encoding), and the partitions over the bar are the ones Spark's rule
    counts on the JVM's own sizes: none on a side it split (the samples split nothing), the
    skewed one on the side a LEFT OUTER join cannot split."""
    folder = SAMPLE_PLANS / f"spark-{version}" / scenario
    truth = json.loads((folder / "truth.json").read_text())
    factor, threshold = float(truth["confs"][FACTOR]), _bytes(truth["confs"][THRESHOLD])
    jvm = [stage["bytes_by_partition"] for stage in truth["stages"]]
    answers = api.why(str(folder / "eventlog.json"), kinds=["skew-join"])
    ((_, answer, _),) = list(answers.queries())
    (candidate,) = answer.candidates
    assert len(candidate.skew) == 2
    overs = []
    for side in candidate.skew:
        figures = side.figures
        assert figures is not None
        (match,) = [sizes for sizes in jvm if len(sizes) == figures.count and all(
            measured <= recorded <= measured * 1.1 + 1
            for measured, recorded in zip(figures.sizes, sizes))]
        by_spark = sum(1 for size in match if size > max(threshold, int(_median(match) * factor)))
        assert figures.over == by_spark
        overs.append(figures.over)
    assert truth["rewrites"]["skew-join"] == 0
    assert overs == ([0, 0] if scenario == "skew_below_factor" else [0, 1])


def test_figures_by_rule():
    """The figures' own rules: Spark's median of an even count, nearest-rank p95, the bar
    (the larger of the threshold and factor x median, cut to whole bytes), `over` strictly
    above it."""
    from aqe_inspect.whynot.evidence import nearest_rank, skew_bar, skew_figures

    found = skew_figures([10, 1, 7, 3, 40, 2], "metric", "here", factor=2.5, threshold=20)
    assert found is not None
    assert (found.count, found.minimum, found.median, found.p95, found.maximum) == \
        (6, 1, 5, 40, 40)
    assert found.bar == 20 and found.over == 1
    assert skew_bar(5, 2.5, 10) == 12 and nearest_rank([1, 2, 3, 4], 95) == 4
    assert nearest_rank(list(range(1, 21)), 95) == 19
    assert skew_figures([], "metric", "here") is None
    unknown = skew_figures([1, 2], "metric", "here")
    assert unknown is not None and unknown.bar is None and unknown.over is None


@pytest.mark.parametrize("version", VERSIONS)
def test_a_plan_text_says_what_is_missing_once(version):
    """A plan text has no partition sizes: `why` says which input gives them, the event log,
    once a side (its needs), never a figure; the JSON says it of each side."""
    path = SAMPLE_PLANS / f"spark-{version}" / "skew_below_factor" / "formatted_after.txt"
    answer = json.loads(_run("why", str(path), "--kind", "skew-join", "--format", "json"))
    (candidate,) = answer["queries"][0]["candidates"]
    assert [side["partitions"] for side in candidate["skew"]] == [None, None]
    assert all("event log" in side["missing"] for side in candidate["skew"])
    text = _run("why", str(path), "--kind", "skew-join", "--width", "400")
    assert text.count("(an event log)") == 2 and "partition sizes of the" not in text


@pytest.mark.parametrize("version", VERSIONS)
def test_diff_shows_a_split_joins_sizes_or_why_they_are_unknown(version, tmp_path):
    """The skew-join rewrite of `diff` (text, JSON, HTML) carries each side's evidence: in the
    skew_join sample both reads are coalesced (one split for skew), so no log of the run holds
    each partition's size, and that is said, with the read's modes."""
    log = SAMPLE_PLANS / f"spark-{version}" / "skew_join" / "eventlog.json"
    report = json.loads(_run("diff", str(log), "--format", "json"))
    (rewrite,) = [r for q in report["queries"] for r in q["rewrites"] if r["kind"] == "skew-join"]
    assert [side["partitions"] for side in rewrite["skew"]] == [None, None]
    assert "coalesced and skewed read" in rewrite["skew"][0]["missing"]
    assert "coalesced read" in rewrite["skew"][1]["missing"]
    assert all(r.get("skew") is None for q in report["queries"] for r in q["rewrites"]
               if r["kind"] != "skew-join")
    text = _run("diff", str(log), "--width", "400")
    assert "partition sizes of the left side ShuffleQueryStage" in text
    page = tmp_path / "report.html"
    _run("diff", str(log), "--format", "html", "--output", str(page))
    assert page.read_text().count('<ul class="skew"><li>partition sizes of the') == 1


def test_rewrite_skew_is_the_why_answers_evidence():
    """`rewrite_skew`, the function `diff`'s formats (and `advise`) use for a skew-join
    rewrite, gives what the why answer's happened candidate holds; nothing for another kind."""
    from aqe_inspect.whynot import rewrite_skew

    path = str(SAMPLE_PLANS / "spark-4.3.0" / "skew_join" / "eventlog.json")
    answers = api.why(path, kinds=["skew-join"])
    ((report, answer, _),) = list(answers.queries())
    (candidate,) = answer.candidates
    assert candidate.verdict == "happened"
    (split,) = [r for r in report.rewrites if r.kind == "skew-join"]
    assert rewrite_skew(report, split, "4.3.0") == candidate.skew and len(candidate.skew) == 2
    coalesced = next(r for r in report.rewrites if r.kind == "coalesced")
    assert rewrite_skew(report, coalesced) == ()
