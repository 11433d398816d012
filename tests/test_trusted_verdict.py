"""A verdict to trust (issue: two runs of one query, cut logs).

* One execution, one query; two executions, two queries: the driver logs of a scenario and of
  its negative control (one query under two settings, real spark-submit runs) joined in either
  order report what each reports alone, and `check --forbid` fails when one run rewrote;
  the same with SparkContext's application-start line taken out (plan ids and AQE's own
  decisions alone tell the runs apart). One query run three times in one application
  (`sample_plans/rerun_job.py`, each run's rewrites held to the JVM's by the job) is three
  queries, each with its scenario's counts.
* A verdict on a plan that is not final is never PASS: every sample event log cut right
  after its measured execution's start, or midway through its AQE updates, fails a
  `--forbid` of every rewrite the whole run made (`unfinished`), and every format says so.
"""

from __future__ import annotations

import collections
import json
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from aqe_inspect import api
from aqe_inspect.rewrites.findings import REWRITE_KINDS

from .conftest import AQE_INSPECT, SAMPLE_PLANS, verdict

LINES = sorted(p.name for p in SAMPLE_PLANS.glob("spark-*") if p.is_dir())
APPLICATION_START = b"Submitted application: "


def _truth(line: str, scenario: str) -> dict:
    return json.loads((SAMPLE_PLANS / line / scenario / "truth.json").read_text("utf-8"))


def _pairs() -> List[Tuple[str, str, str, str]]:
    """(line, positive, control, log name): the negative controls whose twin is the same
    query, with each driver log both have (log4j text; Spark 4's JSON records)."""
    found = []
    for line in LINES:
        for truth_path in sorted((SAMPLE_PLANS / line).glob("*/truth.json")):
            control = json.loads(truth_path.read_text("utf-8")).get("control") or {}
            twin = control.get("twin")
            for name in ("driver.log", "driver_json.log"):
                if twin and (SAMPLE_PLANS / line / twin / name).is_file() and \
                        (truth_path.parent / name).is_file():
                    found.append((line, twin, truth_path.parent.name, name))
    return found


PAIRS = _pairs()


def _counts(path: Path) -> List[Tuple[Tuple[str, int], ...]]:
    """Each query's rewrite counts (the kinds found), as a sorted multiset."""
    report = api.diff_input(str(path))
    found = []
    for query in report.queries:
        tally = collections.Counter(rewrite.kind for rewrite in query.rewrites)
        found.append(tuple(sorted(tally.items())))
    return sorted(found)


def _rewrote(truth: dict) -> List[str]:
    return [kind for kind, count in truth["rewrites"].items() if count and kind in REWRITE_KINDS]


def test_pairs_are_found():
    assert len({(line, control) for line, _, control, _ in PAIRS}) >= 10 * len(LINES), PAIRS
    assert len(LINES) >= 2


@pytest.mark.parametrize("strip_start", [False, True], ids=["as-logged", "no-app-start"])
@pytest.mark.parametrize("line,positive,control,log_name", PAIRS,
                         ids=[f"{line}/{control}/{log}" for line, _, control, log in PAIRS])
def test_joined_driver_logs_report_each_run(tmp_path, line, positive, control, log_name,
                                            strip_start):
    logs = {}
    for name in (positive, control):
        data = (SAMPLE_PLANS / line / name / log_name).read_bytes()
        if strip_start:
            data = b"".join(part for part in data.splitlines(keepends=True)
                            if APPLICATION_START not in part)
            assert APPLICATION_START not in data
        logs[name] = tmp_path / f"{name}.log"
        logs[name].write_bytes(data)
    alone = {name: _counts(path) for name, path in logs.items()}
    differs = sorted(set(_rewrote(_truth(line, positive))) -
                     set(_rewrote(_truth(line, control))))
    for first, second in ((positive, control), (control, positive)):
        joined = tmp_path / f"{first}+{second}.log"
        joined.write_bytes(logs[first].read_bytes() + logs[second].read_bytes())
        assert _counts(joined) == sorted(alone[first] + alone[second]), (first, second)
        for kind in differs:  # the positive run made it: a forbid fails, in either order
            result = api.check_input(str(joined), forbid=[kind])
            assert not result.passed, (first, second, kind)
            assert result.failures[0].actual >= 1


@pytest.mark.parametrize("line", LINES)
def test_one_query_run_again_in_one_application_is_reported_per_run(line):
    logs = sorted((SAMPLE_PLANS / line / "reruns").glob("*.log"))
    assert len(logs) >= 10, f"no rerun logs for {line}: sample_plans/driver_logs.py --reruns"
    for log in logs:
        control = log.stem
        positive = _truth(line, control)["control"]["twin"]
        report = api.diff_input(str(log))
        queries = list(report.queries)
        assert len(queries) == 3, (log, [q.query.line for q in queries])
        for query, scenario in zip(queries, (positive, control, positive)):
            truth = _truth(line, scenario)["rewrites"]
            counts = {kind: query.counts[kind] for kind in REWRITE_KINDS if kind in truth}
            assert counts == {kind: truth[kind] for kind in counts}, (log, scenario)
        # The third run (the first's settings again: the same plan but for its ids) says
        # which print it was told apart from, and why.
        first, third = queries[0].query, queries[2].query
        assert f"line {third.line}: the query printed at line {first.line} run again (other " \
               "plan ids): reported on its own" in third.notes, (log, third.notes)
        # A forbid of what the positive run made fails, whatever ran after it.
        for kind in _rewrote(_truth(line, positive)):
            if not _truth(line, control)["rewrites"].get(kind):
                assert not api.check_input(str(log), forbid=[kind]).passed, (log, kind)


def test_a_final_plan_message_shown_again_is_a_note_naming_both_lines():
    log = SAMPLE_PLANS / LINES[-1] / "reruns" / "skew_join_off.log"
    report = api.diff_input(str(log))
    for query in report.queries:
        notes = query.query.notes
        assert any("AQE's 'Final plan' log message shows this plan again" in n for n in notes)
        assert any("printed again (formatted mode; the same plan ids as line "
                   f"{query.query.line})" in n for n in notes), notes


# ---- cut event logs ------------------------------------------------------------------------

def _event_logs() -> List[dict]:
    manifest = json.loads((SAMPLE_PLANS / "eventlogs.json").read_text("utf-8"))
    return [entry for entry in manifest["logs"]
            if entry["layout"] == "single" and entry["codec"] is None and
            entry["path"].endswith(".json") and entry.get("truth") and
            (SAMPLE_PLANS / entry["path"]).is_file()]


EVENT_LOGS = _event_logs()


def _cuts(entry: dict) -> Dict[str, bytes]:
    """The log cut right after its measured execution's start, and midway through the AQE
    updates of that execution (when it has any)."""
    lines = (SAMPLE_PLANS / entry["path"]).read_bytes().splitlines(keepends=True)
    wanted = entry["execution_id"]
    start = updates = None
    found: List[int] = []
    for number, text in enumerate(lines):
        if b"SparkListenerSQLExecutionStart" in text and \
                json.loads(text).get("executionId") == wanted:
            start = number
        elif b"SparkListenerSQLAdaptiveExecutionUpdate" in text and \
                json.loads(text).get("executionId") == wanted:
            found.append(number)
    assert start is not None, entry["path"]
    cuts = {"after-start": b"".join(lines[:start + 1])}
    if len(found) >= 2:
        updates = found[len(found) // 2]
        cuts["mid-updates"] = b"".join(lines[:updates])
    return cuts


def test_event_logs_are_found():
    assert len(EVENT_LOGS) >= 30 * len(LINES)


@pytest.mark.parametrize("entry", EVENT_LOGS, ids=[e["path"] for e in EVENT_LOGS])
def test_a_cut_log_never_passes_a_forbid_of_what_the_run_made(tmp_path, entry):
    truth = json.loads((SAMPLE_PLANS / entry["truth"]).read_text("utf-8"))
    made = _rewrote(truth)
    for cut, data in _cuts(entry).items():
        path = tmp_path / f"{cut}.json"
        path.write_bytes(data)
        for kind in made:
            result = api.check_input(str(path), forbid=[kind])
            assert not result.passed, (cut, kind, result.outcomes[0].message)
        # Nothing forbidden either: still no PASS, for nothing was judged.
        result = api.check_input(str(path), forbid=["skew-join"], expect=["coalesced>=0"])
        if not result.passed:
            assert result.unfinished or result.failures[0].actual, result.verdict
        else:  # pragma: no cover - a cut log must not pass
            pytest.fail(f"{cut}: PASS on a cut log")
        # Asked to judge what is there, it does (and says it did).
        judged = api.check_input(str(path), expect=["coalesced>=0"], judge_unfinished=True)
        assert judged.passed and not judged.unfinished


@pytest.fixture(scope="module")
def cut_log(tmp_path_factory) -> Path:
    entry = next(e for e in EVENT_LOGS if e["scenario"] == "skew_join")
    path = tmp_path_factory.mktemp("cut") / "cut.json"
    path.write_bytes(_cuts(entry)["after-start"])
    return path


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*AQE_INSPECT, *args], capture_output=True, text=True, timeout=120)


def test_every_format_says_unfinished(cut_log):
    text = _run("check", str(cut_log), "--forbid", "skew-join")
    assert text.returncode == 1, text.stderr
    assert text.stdout.startswith("UNFINISHED forbid skew-join"), text.stdout[:200]
    assert "expectation(s) unfinished" in verdict(text.stdout)
    data = json.loads(_run("check", str(cut_log), "--forbid", "skew-join", "--format",
                           "json").stdout)
    assert data["passed"] is False and data["status"] == "unfinished"
    assert data["expectations"][0]["status"] == "unfinished"
    junit = _run("check", str(cut_log), "--forbid", "skew-join", "--format", "junit")
    assert junit.returncode == 1
    assert '<error message="unfinished' in junit.stdout and "<failure" not in junit.stdout
    assert 'errors="1"' in junit.stdout and 'failures="0"' in junit.stdout
    sarif = json.loads(_run("check", str(cut_log), "--forbid", "skew-join", "--format",
                            "sarif").stdout)
    result = sarif["runs"][0]["results"][0]
    assert result["kind"] == "open" and result["properties"]["status"] == "unfinished"
    assert result["level"] == "none"  # SARIF 2.1.0 3.27.9: a kind other than fail
    github = _run("check", str(cut_log), "--forbid", "skew-join", "--format", "github")
    assert github.returncode == 1
    assert "::error" in github.stdout and "skew-join unfinished" in github.stdout
    html = _run("check", str(cut_log), "--forbid", "skew-join", "--format", "html")
    assert html.returncode == 1 and 'data-outcome="UNFINISHED"' in html.stdout
    judged = _run("check", str(cut_log), "--forbid", "skew-join", "--judge-unfinished")
    assert judged.returncode == 0, judged.stdout


def test_an_isfinalplan_false_text_is_unfinished():
    before = SAMPLE_PLANS / LINES[-1] / "skew_join" / "formatted_before.txt"
    result = api.check_input(str(before), forbid=["skew-join"])
    assert not result.passed and result.unfinished
    assert "isFinalPlan=false" in result.outcomes[0].message


# ---- compressed logs cut anywhere ----------------------------------------------------------

def _compressed_logs() -> List[dict]:
    manifest = json.loads((SAMPLE_PLANS / "eventlogs.json").read_text("utf-8"))
    return [entry for entry in manifest["logs"]
            if entry["layout"] == "single" and entry["codec"] is not None and
            entry.get("truth") and (SAMPLE_PLANS / entry["path"]).is_file()]


COMPRESSED = _compressed_logs()


def test_compressed_logs_are_found():
    assert {entry["codec"] for entry in COMPRESSED} >= {"zstd", "lz4", "snappy", "lzf"}


@pytest.mark.parametrize("entry", COMPRESSED, ids=[e["path"] for e in COMPRESSED])
def test_no_prefix_of_a_compressed_log_passes_a_forbid_of_what_the_run_made(tmp_path, entry):
    """A log cut anywhere (a crash while Spark wrote it, a copy taken too soon): the cut
    either holds the execution whole (the rewrite is found), or holds it unfinished (no
    verdict), or does not hold it (nothing to judge, or nothing read at all: exit 2). No cut
    passes. Cut at 24 places spread over the file, in whatever codec frame they fall."""
    from aqe_inspect.errors import InspectError

    truth = json.loads((SAMPLE_PLANS / entry["truth"]).read_text("utf-8"))
    made = _rewrote(truth)
    if not made:
        pytest.skip(f"{entry['scenario']} made no rewrite to forbid")
    data = (SAMPLE_PLANS / entry["path"]).read_bytes()
    path = tmp_path / Path(entry["path"]).name
    outcomes = collections.Counter()
    for step in range(1, 25):
        path.write_bytes(data[:len(data) * step // 25])
        try:
            result = api.check_input(str(path), forbid=made[:1])
        except InspectError:
            outcomes["nothing read"] += 1
            continue
        assert not result.passed, (step, result.verdict)
        outcomes["unfinished" if result.unfinished else "failed"] += 1
    path.write_bytes(data)
    whole = api.check_input(str(path), forbid=made[:1])
    assert not whole.passed and not whole.unfinished
    assert sum(outcomes.values()) == 24, outcomes


@pytest.mark.parametrize("line", LINES)
def test_compare_with_a_cut_copy_of_a_run_never_passes(tmp_path, line):
    """`compare` of a run with its own log cut anywhere, either way round: the executions the
    cut lacks have no partner in a log that ends before its application does, so they are no
    verdict (or, cut before the application, nothing is read: exit 2); never PASS. Judged on
    what is there (--judge-unfinished), a verdict either way."""
    from aqe_inspect.errors import InspectError

    baseline = SAMPLE_PLANS / "compare" / line / "baseline.zstd"
    data = baseline.read_bytes()
    cut = tmp_path / "cut.zstd"
    seen = collections.Counter()
    for step in range(1, 13):
        cut.write_bytes(data[:len(data) * step // 13])
        for old, new in ((baseline, cut), (cut, baseline)):
            try:
                comparison = api.compare(str(old), str(new))
            except InspectError:
                seen["nothing read"] += 1
                continue
            assert comparison.failed, (step, comparison.verdict)
            assert comparison.verdict.startswith(("UNFINISHED", "FAIL")), comparison.verdict
            seen[comparison.verdict.split(":")[0]] += 1
            if not comparison.tripped:  # judged on what is there: a verdict either way
                judged = api.compare(str(old), str(new), judge_unfinished=True)
                assert judged.verdict.startswith(("PASS", "FAIL")), judged.verdict
    assert seen["UNFINISHED"] >= 6, seen


def test_each_query_of_a_log_cut_before_its_application_ends(tmp_path):
    """`--each`: the queries read are judged one by one; the ones the cut log lacks are one
    more outcome, unfinished."""
    entry = next(e for e in COMPRESSED if e["scenario"] == "rebalance_skew_none" and
                 e["codec"] == "zstd")
    data = (SAMPLE_PLANS / entry["path"]).read_bytes()
    path = tmp_path / "cut.zstd"
    for step in range(1, 25):
        path.write_bytes(data[:len(data) * step // 25])
        try:
            result = api.check_input(str(path), forbid=["rebalance-skew"], each=True)
        except Exception:  # nothing read at all (exit 2)
            continue
        assert not result.passed
        per_query = [o for o in result.outcomes if o.query_count]
        if per_query and all(o.passed for o in per_query):  # those read hold: the rest is open
            [rest] = [o for o in result.outcomes if not o.query_count]
            assert rest.status == "unfinished" and "beyond the" in rest.message


@pytest.mark.parametrize("line", LINES)
def test_an_execution_cut_off_after_its_final_plan_is_never_a_pass(tmp_path, line):
    """Cut after the update that carries the final plan (isFinalPlan=true) and before the
    execution's end, the application's end missing too (a driver killed while the last
    stages ran): the execution did not end, so no expectation over it passes (`unfinished`,
    saying it was cut off, naming the file); what is there judges it with
    --judge-unfinished, and a forbidden rewrite found fails it either way (AQE does not undo
    one). `compare` holds it the same: the pair is unfinished."""
    source = SAMPLE_PLANS / line / "skew_join" / "eventlog.json"
    lines = source.read_bytes().splitlines(keepends=True)
    final = max(n for n, text in enumerate(lines)
                if b"SQLAdaptiveExecutionUpdate" in text and b"isFinalPlan=true" in text)
    assert not any(b"SQLExecutionEnd" in text for text in lines[:final + 1])
    path = tmp_path / "final-no-end.json"
    path.write_bytes(b"".join(lines[:final + 1]))
    [query] = [q for q in api.diff_input(str(path)).queries]
    assert query.query.execution.finished is False and query.query.unfinished == ""
    assert query.query.cut_off
    expected = api.check_input(str(path), expect=["skew-join", "coalesced>=1"])
    assert not expected.passed and len(expected.unfinished) == 2, expected.verdict
    for outcome in expected.outcomes:
        assert "it was cut off while it ran" in outcome.message, outcome.message
        assert outcome.location.path == str(path)
    for each in (False, True):
        held = api.check_input(str(path), expect=["skew-join"], each=each)
        assert not held.passed and held.unfinished, held.verdict
    judged = api.check_input(str(path), expect=["skew-join", "coalesced>=1"],
                             judge_unfinished=True)
    assert judged.passed, judged.verdict  # every rewrite AQE made is there
    forbidden = api.check_input(str(path), forbid=["skew-join"])
    assert not forbidden.passed and not forbidden.unfinished  # found: a failure
    comparison = api.compare(str(source), str(path))
    assert comparison.failed and [pair.unfinished for pair in comparison.unfinished] == [
        (f"new run: execution {query.query.execution.execution_id} ({path}:{query.query.line}): "
         "its execution had not ended where the log ends, and the log ends before its "
         "application does (no SparkListenerApplicationEnd): it was cut off while it ran",)]
    assert not api.compare(str(source), str(path), judge_unfinished=True).failed


# ---- a driver log that ends before its last application does ----------------------------

APPLICATION_STOP = b"Successfully stopped SparkContext"


def _driver_logs() -> List[Tuple[str, str, str]]:
    """(line, scenario, log name) of every sample driver log that logs its application's
    start and stop (SparkContext at INFO), a plan-change log first where a scenario has one."""
    found = []
    for line in LINES:
        for folder in sorted(p for p in (SAMPLE_PLANS / line).iterdir() if p.is_dir()):
            for name in ("driver_planchange.log", "driver.log", "driver_json.log"):
                path = folder / name
                if path.is_file():
                    data = path.read_bytes()
                    if APPLICATION_START in data and APPLICATION_STOP in data:
                        found.append((line, folder.name, name))
                    break
    return found


DRIVER_LOGS = _driver_logs()


def _cut_before_plans(data: bytes) -> bytes:
    """A driver log's lines up to just before its first plan: inside its plan-change log
    (after its third rule block's heading) where it has one, else just after the line of its
    application's start."""
    lines = data.splitlines(keepends=True)
    start = next(i for i, text in enumerate(lines) if APPLICATION_START in text)
    rules = [i for i, text in enumerate(lines) if b"=== Applying Rule" in text]
    end = rules[2] + 2 if len(rules) >= 3 else start + 1
    cut = lines[:end]
    assert not any(marker in text for text in cut for marker in (
        b"== Physical Plan ==", b"Final plan:", b"Plan changed", b"AdaptiveSparkPlan")), end
    return b"".join(cut)


def test_driver_logs_are_found():
    assert len(DRIVER_LOGS) >= 20 * len(LINES), DRIVER_LOGS


@pytest.mark.parametrize("line,scenario,log_name", DRIVER_LOGS,
                         ids=[f"{line}/{scenario}/{name}" for line, scenario, name in DRIVER_LOGS])
def test_a_driver_log_cut_inside_its_second_application_is_no_pass(tmp_path, line, scenario,
                                                                   log_name):
    """One application's whole driver log, then another's cut before its first plan: what
    the first ran is read, but the second's queries are not, so no forbid passes (the counts
    are lower bounds: `unfinished`), and the cut is noted at the second's start. Whole, the
    two applications' log passes as the first alone does."""
    first = SAMPLE_PLANS / line / scenario / log_name
    other = next(item for item in DRIVER_LOGS if item[0] == line and item[1] != scenario)
    second = (SAMPLE_PLANS / other[0] / other[1] / other[2]).read_bytes()
    whole = tmp_path / "whole.log"
    whole.write_bytes(first.read_bytes() + second)
    cut = tmp_path / "cut.log"
    cut.write_bytes(first.read_bytes() + _cut_before_plans(second))
    made = set(_rewrote(_truth(line, scenario))) | set(_rewrote(_truth(*other[:2])))
    absent = next(kind for kind in REWRITE_KINDS if kind not in made)
    alone = api.check_input(str(first), forbid=[absent])
    assert alone.passed, alone.verdict
    assert api.check_input(str(whole), forbid=[absent]).passed
    result = api.check_input(str(cut), forbid=[absent])
    assert not result.passed and result.unfinished, result.verdict
    assert "Successfully stopped SparkContext" in result.outcomes[0].message
    report = api.diff_input(str(cut))
    assert len(report.queries) == len(api.diff_input(str(first)).queries)
    start_line = first.read_bytes().count(b"\n") + 1 + next(
        i for i, text in enumerate(second.splitlines()) if APPLICATION_START in text)
    assert any(note.startswith(f"line {start_line}: the application started here")
               for note in report.notes), report.notes
    judged = api.check_input(str(cut), forbid=[absent], judge_unfinished=True)
    assert judged.passed and not judged.unfinished


def test_a_driver_log_cut_is_unfinished_in_the_cli_and_compare(tmp_path):
    """The same through the command line (exit 1, `UNFINISHED`, the note) and `compare`: the
    queries of the whole run have no partner in a run whose log ends before its last
    application does, so they are no verdict."""
    line, scenario, log_name = DRIVER_LOGS[0]
    other = next(item for item in DRIVER_LOGS if item[0] == line and item[1] != scenario)
    first = (SAMPLE_PLANS / line / scenario / log_name).read_bytes()
    second = (SAMPLE_PLANS / other[0] / other[1] / other[2]).read_bytes()
    whole, cut = tmp_path / "whole.log", tmp_path / "cut.log"
    whole.write_bytes(first + second)
    cut.write_bytes(first + _cut_before_plans(second))
    checked = _run("check", str(cut), "--forbid", "skew-join")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert checked.stdout.startswith("UNFINISHED forbid skew-join"), checked.stdout[:300]
    data = json.loads(_run("diff", str(cut), "--format", "json").stdout)
    assert any("has no end in the log" in note for note in data["notes"]), data["notes"]
    assert _run("check", str(whole), "--forbid", "skew-join").returncode == 0
    comparison = api.compare(str(whole), str(cut))
    assert comparison.failed and comparison.unpartnered, comparison.verdict
    assert not api.compare(str(whole), str(whole)).failed
