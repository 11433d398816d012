"""Margins (issue 49): every adaptive size decision with its figure, the threshold it was held
to and how far apart they were, held against the JVM's own run-time statistics of the same
stage (truth.json's `stages`, read from `getRuntimeStatistics()` and `mapStats()`), and
`check --margin` on real runs: a broadcast threshold set just above the side's measured size
(broadcast_just_fits, 1.05x) fails a 10% margin; the same expectation at 10x
(broadcast_tenfold) passes."""

from __future__ import annotations

import io
import json
import subprocess
from contextlib import redirect_stderr, redirect_stdout

import pytest

from aqe_inspect import api
from aqe_inspect.cli import main
from aqe_inspect.plan.units import conf_bytes
from aqe_inspect.whynot.evidence import spark_median
from aqe_inspect.whynot.verdicts import HAPPENED, OVER, UNDER

from .conftest import AQE_INSPECT, SAMPLE_PLANS

LINES = ("spark-3.5.9", "spark-4.3.0")
BROADCAST_KEY = "spark.sql.adaptive.autoBroadcastJoinThreshold"


def truth(line: str, scenario: str) -> dict:
    return json.loads((SAMPLE_PLANS / line / scenario / "truth.json").read_text())


def candidates(line: str, scenario: str, kind: str):
    answer = api.why(str(SAMPLE_PLANS / line / scenario / "eventlog.json"), kinds=[kind])
    return [c for _, found, _ in answer.queries() for c in found.candidates]


def stage(found: dict, stage_id: int) -> dict:
    return next(s for s in found["stages"] if s["id"] == stage_id and s["location"] == "main")


# ---- margins equal the JVM's figures ------------------------------------------------------

@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("scenario, fired", [
    ("smj_to_bhj", True), ("broadcast_just_fits", True), ("broadcast_tenfold", True),
    ("broadcast_just_above", False)])
def test_broadcast_margin_is_the_stage_runtime_size(line, scenario, fired):
    found = truth(line, scenario)
    threshold = conf_bytes(found["confs"][BROADCAST_KEY])
    # The join's two shuffles, left then right (a broadcast join's build side reads its
    # shuffle through a broadcast stage of its own).
    left, right = sorted((s for s in found["stages"] if s["kind"] == "shuffle"),
                         key=lambda s: s["id"])
    sides = {"left": left["size_in_bytes"], "right": right["size_in_bytes"]}
    (joined,) = candidates(line, scenario, "smj-to-bhj")
    assert (joined.verdict == HAPPENED) is fired
    sized = [m for m in joined.margins if m.config == BROADCAST_KEY]
    assert sized, joined
    for margin in sized:
        side = "left" if margin.what.startswith("the left") else "right"
        assert margin.exact and margin.figure == sides[side]
        assert margin.threshold == threshold and margin.measure == "data size"
        assert margin.side == (UNDER if sides[side] <= threshold else OVER)
        assert margin.percent == pytest.approx(abs(sides[side] - threshold) * 100 / threshold)
        assert margin.origin == "event log" and margin.fires == UNDER
    smaller = min(sized, key=lambda m: m.figure)
    assert smaller.fired is fired
    if fired:
        assert joined.closest is smaller


@pytest.mark.parametrize("line", LINES)
def test_just_above_and_tenfold_margins(line):
    """The tuned pair: 1.05x the side is a margin of under 5% (4.76%), 10x one of 90%."""
    (fits,) = candidates(line, "broadcast_just_fits", "smj-to-bhj")
    (tenfold,) = candidates(line, "broadcast_tenfold", "smj-to-bhj")
    assert fits.closest.percent == pytest.approx(100 * (1 - 1 / 1.05), abs=0.05)
    assert tenfold.closest.percent == pytest.approx(90.0)


def test_non_empty_ratio_margin_is_the_map_statistics():
    line, scenario = "spark-4.3.0", "smj_to_bhj"
    found = truth(line, scenario)
    build = stage(found, 1)["bytes_by_partition"]  # the right side's shuffle, broadcast
    (joined,) = candidates(line, scenario, "smj-to-bhj")
    (ratio,) = [m for m in joined.margins if m.unit == "ratio"]
    assert ratio.figure == sum(1 for b in build if b) / len(build)
    assert ratio.threshold == 0.2 and ratio.fired and ratio.side == OVER


@pytest.mark.parametrize("line", LINES)
def test_skew_margin_is_the_map_statistics(line):
    """The largest partition against the larger of the threshold and factor x median, as
    OptimizeSkewedJoin takes them from `bytesByPartitionId`. The event log's per-task bytes
    read are the blocks' exact sizes; the map statistics store each block's size rounded up
    to a power of 1.1 (`MapStatus.compressSize`), so they stand up to 10% above."""
    found = truth(line, "skew_below_factor")
    sizes = stage(found, found["joins"][0]["left_stage"])["bytes_by_partition"]
    factor = float(found["confs"]["spark.sql.adaptive.skewJoin.skewedPartitionFactor"])
    limit = conf_bytes(found["confs"]["spark.sql.adaptive.skewJoin."
                                      "skewedPartitionThresholdInBytes"])
    (joined,) = candidates(line, "skew_below_factor", "skew-join")
    left = next(m for m in joined.margins if m.what.startswith("the largest partition of "
                                                              "the left"))
    assert max(sizes) / 1.1 <= left.figure <= max(sizes)
    (term,) = left.also
    median = term.amount / factor
    assert spark_median(sizes) / 1.1 <= median <= spark_median(sizes)
    assert left.threshold == max(limit, term.amount)
    assert left.side == UNDER and not left.fired and left.fires == OVER
    assert joined.closest is not None


def test_why_shows_margins_in_text_and_json():
    path = str(SAMPLE_PLANS / "spark-3.5.9" / "broadcast_just_above" / "eventlog.json")
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["why", path, "--kind", "smj-to-bhj", "--format", "json"]) == 0
    (query,) = json.loads(out.getvalue())["queries"]
    (joined,) = query["candidates"]
    right = next(m for m in joined["margins"] if m["what"].startswith("the right"))
    assert right["figure"] == 9600 and right["threshold"] == 8928
    assert right["side"] == "over" and right["percent"] == 7.53 and not right["fired"]
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["why", path, "--kind", "smj-to-bhj", "--width", "200"]) == 0
    assert ("margin: the right side ShuffleQueryStage (12), data size 9.4 KiB, against "
            f"{BROADCAST_KEY}=8928 (8.7 KiB, event log): 7.5% over") in out.getvalue()


# ---- check --margin ------------------------------------------------------------------------

def log(line: str, scenario: str) -> str:
    return str(SAMPLE_PLANS / line / scenario / "eventlog.json")


@pytest.mark.parametrize("line", LINES)
def test_check_margin_fails_just_fits_and_passes_tenfold(line):
    fragile = api.check_input(log(line, "broadcast_just_fits"), expect=["smj-to-bhj"],
                              margin=10)
    (outcome,) = fragile.outcomes
    assert not fragile.passed and outcome.fragile and outcome.actual == 1
    assert "but by only 4.8%, under --margin 10%" in outcome.message
    assert outcome.margin.figure == 9600
    sound = api.check_input(log(line, "broadcast_tenfold"), expect=["smj-to-bhj"], margin=10)
    (outcome,) = sound.outcomes
    assert sound.passed and not outcome.fragile and "held by 90%" in outcome.message
    # Without --margin both pass, as before.
    assert api.check_input(log(line, "broadcast_just_fits"), expect=["smj-to-bhj"]).passed


@pytest.mark.parametrize("line", LINES)
def test_check_margin_on_a_forbidden_rewrite(line):
    """broadcast_just_above: the threshold just under the side (7.5% over): the broadcast
    that did not happen is one tomorrow's data may bring."""
    path = log(line, "broadcast_just_above")
    assert not api.check_input(path, forbid=["smj-to-bhj"], margin=10).passed
    assert api.check_input(path, forbid=["smj-to-bhj"], margin=5).passed


def test_check_margin_unmeasurable_fails():
    """A plan text holds no settings: the margin cannot be measured, so no PASS."""
    path = str(SAMPLE_PLANS / "spark-4.3.0" / "broadcast_tenfold" / "formatted_after.txt")
    result = api.check_input(path, expect=["smj-to-bhj"], margin=10)
    assert not result.passed and "cannot be measured" in result.outcomes[0].message
    given = api.check_input(path, expect=["smj-to-bhj"], margin=10,
                            conf=[f"{BROADCAST_KEY}=96000"])
    assert given.passed, given.outcomes[0].message


def test_margin_in_the_expectation_file(tmp_path):
    config = tmp_path / "aqe-expect.toml"
    config.write_text('margin = 10\nexpect = ["smj-to-bhj"]\n\n[[query]]\nid = 0\n'
                      'margin = 2\nexpect = ["smj-to-bhj"]\n')
    result = api.check_input(log("spark-4.3.0", "broadcast_just_fits"), config=str(config))
    assert [o.passed for o in result.outcomes] == [False, True]
    config.write_text('margin = "10"\nexpect = ["smj-to-bhj"]\n')
    with pytest.raises(Exception, match="margin must be a number"):
        api.check_input(log("spark-4.3.0", "broadcast_just_fits"), config=str(config))


@pytest.mark.parametrize("fmt", ["text", "json", "junit", "github", "sarif"])
def test_installed_command_fails_with_the_figure_in_every_format(fmt):
    run = subprocess.run([*AQE_INSPECT, "check", log("spark-3.5.9", "broadcast_just_fits"),
                          "--expect", "smj-to-bhj", "--margin", "10", "--format", fmt,
                          "--width", "400"] if fmt == "text" else
                         [*AQE_INSPECT, "check", log("spark-3.5.9", "broadcast_just_fits"),
                          "--expect", "smj-to-bhj", "--margin", "10", "--format", fmt],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    assert "4.8%" in run.stdout and "--margin 10%" in run.stdout
    passed = subprocess.run([*AQE_INSPECT, "check", log("spark-3.5.9", "broadcast_tenfold"),
                             "--expect", "smj-to-bhj", "--margin", "10", "--format", fmt],
                            capture_output=True, text=True, timeout=120)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    if fmt == "json":
        (item,) = json.loads(run.stdout)["expectations"]
        assert item["margin"]["asked"] == 10 and item["margin"]["fragile"] is True
        assert item["margin"]["nearest"]["figure"] == 9600


def test_bad_margin_is_one_line():
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        code = main(["check", log("spark-3.5.9", "broadcast_tenfold"), "--expect",
                     "smj-to-bhj", "--margin", "-3"])
    assert code == 2 and err.getvalue().startswith("aqe-inspect: error: --margin")
    assert err.getvalue().count("\n") == 1


# ---- compare -------------------------------------------------------------------------------

def test_compare_reports_the_margin_that_shrank():
    old, new = log("spark-4.3.0", "broadcast_tenfold"), log("spark-4.3.0",
                                                            "broadcast_just_fits")
    data = api.compare(old, new).as_json()
    (pair,) = data["pairs"]
    (shrank,) = [m for m in pair["margins_shrank"] if m["config"] == BROADCAST_KEY]
    assert shrank["kind"] == "smj-to-bhj"
    assert shrank["old"]["percent"] == 90.0 and shrank["new"]["percent"] == 4.76
    # The other way round, nothing shrank.
    (pair,) = api.compare(new, old).as_json()["pairs"]
    assert not [m for m in pair["margins_shrank"] if m["config"] == BROADCAST_KEY]


# ---- diff: each rewrite that happened with its margins (why's) -----------------------------

def diff_json(path: str) -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["diff", path, "--format", "json"]) == 0
    return json.loads(out.getvalue())


def why_happened(path: str, kind: str):
    answer = api.why(path, kinds=[kind])
    return [c for _, found, _ in answer.queries() for c in found.candidates
            if c.verdict == HAPPENED]


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("scenario, kind", [
    ("broadcast_just_fits", "smj-to-bhj"), ("broadcast_tenfold", "smj-to-bhj"),
    ("smj_to_bhj", "smj-to-bhj"), ("smj_to_shj", "smj-to-shj")])
def test_diff_shows_why_margins_of_each_rewrite(line, scenario, kind):
    """diff's margins of a rewrite are why's for the same rewrite (one computation), in the
    library, the text and the JSON; a broadcast's figure is the JVM's runtime size."""
    path = log(line, scenario)
    (happened,) = why_happened(path, kind)
    assert happened.margins
    (query,) = api.diff_input(path).queries
    from aqe_inspect.whynot import rewrite_margins
    found = dict(zip((r.kind for r in query.rewrites), rewrite_margins(query)))
    assert found[kind] == happened.margins
    (data,) = diff_json(path)["queries"]
    (rewrite,) = [r for r in data["rewrites"] if r["kind"] == kind]
    from aqe_inspect.whynot.margins import margin_text
    assert [m["text"] for m in rewrite["margins"]] == [margin_text(m) for m in happened.margins]
    assert [(m["figure"], m["threshold"], m["config"], m["fired"]) for m in rewrite["margins"]] \
        == [(round(m.figure) if m.unit == "bytes" else m.figure,
             round(m.threshold) if m.unit == "bytes" else m.threshold, m.config, m.fired)
            for m in happened.margins]
    assert all(m["fired"] for m in rewrite["margins"])
    # Kinds that hold no figure against a setting carry no `margins` key.
    assert all("margins" not in r for r in data["rewrites"]
               if r["kind"] not in ("smj-to-bhj", "smj-to-shj", "skew-join"))
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["diff", path, "--width", "400"]) == 0
    for margin in happened.margins:
        assert f"    margin: {margin_text(margin)}\n" in out.getvalue()
    if kind == "smj-to-bhj":
        found = truth(line, scenario)
        right = max((s for s in found["stages"] if s["kind"] == "shuffle"),
                    key=lambda s: s["id"])
        (sized,) = [m for m in rewrite["margins"] if m["config"] == BROADCAST_KEY]
        assert sized["figure"] == right["size_in_bytes"]
        assert sized["threshold"] == conf_bytes(found["confs"][BROADCAST_KEY])


def test_diff_margin_in_the_installed_command_and_html(tmp_path):
    """broadcast_just_fits: 4.8% under, through the installed command, in text, JSON and
    the HTML report."""
    path = log("spark-4.3.0", "broadcast_just_fits")
    text = subprocess.run([*AQE_INSPECT, "diff", path, "--width", "300"], capture_output=True,
                          text=True, timeout=120)
    assert text.returncode == 0, text.stderr
    assert (f"margin: the right side ShuffleQueryStage (11), data size 9.4 KiB, against "
            f"{BROADCAST_KEY}=10080 (9.8 KiB, event log): 4.8% under") in text.stdout
    run = subprocess.run([*AQE_INSPECT, "diff", path, "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    (query,) = json.loads(run.stdout)["queries"]
    (joined,) = [r for r in query["rewrites"] if r["kind"] == "smj-to-bhj"]
    sized = next(m for m in joined["margins"] if m["config"] == BROADCAST_KEY)
    assert (sized["figure"], sized["threshold"], sized["percent"], sized["side"]) == \
        (9600, 10080, 4.76, UNDER)
    page = tmp_path / "diff.html"
    run = subprocess.run([*AQE_INSPECT, "diff", path, "--format", "html", "-o", str(page)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    html = page.read_text("utf-8")
    assert (f'<ul class="margins"><li data-config="{BROADCAST_KEY}" data-side="under" '
            f'data-percent="4.76">margin: the right side ShuffleQueryStage (11), data size '
            f"9.4 KiB, against {BROADCAST_KEY}=10080 (9.8 KiB, event log): 4.8% under</li>") \
        in html


def test_diff_without_settings_measures_nothing():
    """A plan text holds no settings: no margin (and no claim of one)."""
    path = str(SAMPLE_PLANS / "spark-4.3.0" / "broadcast_just_fits" / "formatted_after.txt")
    (query,) = diff_json(path)["queries"]
    (joined,) = [r for r in query["rewrites"] if r["kind"] == "smj-to-bhj"]
    assert joined["margins"] == []


def test_measured_kinds_are_the_explainers_that_measure():
    from aqe_inspect.rewrites.kinds import MEASURED_KINDS
    from aqe_inspect.whynot import EXPLAINERS
    assert set(MEASURED_KINDS) == {k for k, e in EXPLAINERS.items() if e.measures}


@pytest.mark.parametrize("fmt", ["markdown", "html", "sarif"])
def test_compare_formats_show_the_margin_that_shrank(fmt):
    old, new = log("spark-4.3.0", "broadcast_tenfold"), log("spark-4.3.0",
                                                            "broadcast_just_fits")
    line = (f"margin shrank: smj-to-bhj {BROADCAST_KEY} 90% under -> 4.8% under (the right "
            f"side ShuffleQueryStage (11), data size 9.4 KiB, against {BROADCAST_KEY}=10080 "
            f"(9.8 KiB, event log): 4.8% under)")
    run = subprocess.run([*AQE_INSPECT, "compare", old, new, "--format", fmt],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    if fmt == "markdown":
        assert "### Margins that shrank" in run.stdout
        assert f"- execution 0: {line}".replace("_", "\\_") in run.stdout
    elif fmt == "html":
        assert (f'<tr class="shrank" data-kind="smj-to-bhj" data-config="{BROADCAST_KEY}" '
                f'data-old-percent="90.0" data-new-percent="4.76"><th>margin</th><td>'
                f"{line.replace('->', '-&gt;')}</td></tr>") in run.stdout
    else:
        results = json.loads(run.stdout)["runs"][0]["results"]
        (shrank,) = [r for r in results if r["ruleId"] == "margin-shrank"]
        assert shrank["level"] == "note" and shrank["message"]["text"].endswith(line)
        assert shrank["properties"] == {"kind": "smj-to-bhj", "config": BROADCAST_KEY,
                                        "old_percent": 90.0, "new_percent": 4.76,
                                        "side": UNDER}
    # The other way round the margin grew: nothing said of it.
    back = subprocess.run([*AQE_INSPECT, "compare", new, old, "--format", fmt],
                          capture_output=True, text=True, timeout=120)
    assert back.returncode == 0
    if fmt == "sarif":
        results = json.loads(back.stdout)["runs"][0]["results"]
        assert not [r for r in results if r["ruleId"] == "margin-shrank"]
    else:
        assert "margin shrank" not in back.stdout


@pytest.mark.parametrize("workers", [1, 2])
def test_diff_json_written_where_built_holds_the_spark_line(workers):
    """An event log's JSON is written where each execution is built (in the pool's processes
    for a long log), before the query names its application: its margins are still held to
    the application's Spark line's defaults, as the text's and why's are."""
    from aqe_inspect.formats.report_json import diff_built_json
    from aqe_inspect.sources.eventlog.events import Scanner, build_queries
    from aqe_inspect.sources.eventlog.files import find_event_logs

    path = log("spark-4.3.0", "broadcast_just_fits")
    (happened,) = why_happened(path, "smj-to-bhj")
    (found,) = find_event_logs(path)
    ((raw, _),) = list(build_queries(Scanner(found, []), workers=workers, pool_min=0,
                                     then=diff_built_json))
    (joined,) = [r for r in json.loads(raw.text)["rewrites"] if r["kind"] == "smj-to-bhj"]
    from aqe_inspect.whynot.margins import margin_text
    assert [m["text"] for m in joined["margins"]] == [margin_text(m) for m in happened.margins]
    assert any("(Spark 4.3 default)" in m["text"] for m in joined["margins"])
