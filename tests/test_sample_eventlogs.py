"""The sample generator's real event logs (PySpark 3.5 and 4.3, every scenario): the scenario's
SQL execution, found by its job description, diffs to exactly what the JVM plan objects said
(truth.json). Plain logs for all; zstd, lz4, snappy and lzf for some; a rolling log; a log
killed mid-run and one cut mid-line; plan texts cut by `spark.sql.maxPlanStringLength` (the
tree is built from sparkPlanInfo); simple and extended explain modes; the live UI's /sql JSON."""

from __future__ import annotations

import json
import subprocess

import pytest

from aqe_inspect.rewrites.engine import diff_query
from aqe_inspect.rewrites.findings import REWRITE_KINDS
from aqe_inspect.sources.eventlog import read_event_logs
from aqe_inspect.sources.eventlog.history import read_history

from .conftest import AQE_INSPECT, SAMPLE_PLANS

MANIFEST = json.loads((SAMPLE_PLANS / "eventlogs.json").read_text("utf-8"))
LOGS = MANIFEST["logs"]


def log_id(entry) -> str:
    return entry["path"]


def _query(entry):
    path = SAMPLE_PLANS / entry["path"]
    if entry["layout"] == "history-sql":
        documents = [read_history(path.read_bytes(), str(path))]
    else:
        documents = read_event_logs(str(path))
    assert len(documents) == 1
    (document,) = documents
    found = [q for q in document.queries if q.execution.description == entry["description"]]
    assert len(found) == 1, [q.execution.description for q in document.queries]
    return document, found[0]


ISSUE_26_KINDS = ("dpp", "dpp-dropped", "rebalance-skew", "one-row", "limit-removed")


def test_the_manifest_covers_what_the_issue_asks():
    versions = {e["spark_version"] for e in LOGS}
    assert {"3.5.9", "4.3.0"} <= versions
    for version in versions:
        mine = [e for e in LOGS if e["spark_version"] == version]
        plain = {e["scenario"] for e in mine if e["variant"] == "plain" and e["layout"] == "single"}
        scenarios = {t.parent.name for t in SAMPLE_PLANS.glob(f"spark-{version}/*/truth.json")}
        assert plain == scenarios and len(plain) == 61, version
        assert {e["codec"] for e in mine} >= {None, "zstd", "lz4", "snappy", "lzf"}
        for codec in ("zstd", "lz4", "snappy", "lzf"):
            # each codec is read on a scenario of a decision issue 26 named: a kind it added
            # happened there, or its control is a join the cost evaluator kept
            truths = [json.loads((SAMPLE_PLANS / e["truth"]).read_text("utf-8"))
                      for e in mine if e["codec"] == codec]
            assert any(any(t["rewrites"][kind] for kind in ISSUE_26_KINDS)
                       or (t["control"] or {}).get("reason") == "kept-by-cost"
                       for t in truths), (version, codec)
        layouts = {e["layout"] for e in mine}
        assert {"rolling", "inprogress", "inprogress-cut", "history-sql"} <= layouts
        assert {e["variant"] for e in mine} >= {"maxplanstring", "explain-simple",
                                               "explain-extended"}


@pytest.mark.parametrize("entry", LOGS, ids=log_id)
def test_the_scenario_execution_diffs_to_the_truth(entry):
    truth = json.loads((SAMPLE_PLANS / entry["truth"]).read_text("utf-8"))
    document, query = _query(entry)
    assert query.execution.execution_id == entry["execution_id"]
    assert query.adaptive is truth["adaptive"]
    if entry["layout"] != "history-sql":
        assert document.application.app_id == entry["app_id"]
        assert document.application.spark_version == entry["spark_version"]
        assert query.execution.finished
        assert query.execution.configs.get("spark.sql.adaptive.enabled") == \
            truth["confs"]["spark.sql.adaptive.enabled"]
    report = diff_query(query, "1")
    want = {kind: truth["rewrites"][kind] for kind in REWRITE_KINDS}
    assert report.counts == want, (report.notes, [r.message for r in report.rewrites])
    if truth["adaptive"]:
        assert query.is_final_plan is truth["is_final_plan"]
    if entry["variant"] == "maxplanstring":
        assert any("sparkPlanInfo" in note for note in query.notes), query.notes


@pytest.mark.parametrize("entry", [e for e in LOGS if e["layout"] == "inprogress-cut"],
                         ids=log_id)
def test_a_log_cut_mid_line_is_read_up_to_the_cut_with_a_note(entry):
    document, _ = _query(entry)
    assert any("cut" in note for note in document.notes), document.notes


def test_coalesced_partitions_come_from_the_logged_metrics():
    entry = next(e for e in LOGS if e["scenario"] == "coalesced_aggregation"
                 and e["variant"] == "plain" and e["layout"] == "single"
                 and e["spark_version"].startswith("4."))
    _, query = _query(entry)
    (rewrite,) = [r for r in diff_query(query, "1").rewrites if r.kind == "coalesced"]
    assert "20 -> " in rewrite.message, rewrite.message


def test_the_cli_selects_the_scenario_by_its_description():
    entry = next(e for e in LOGS if e["scenario"] == "skew_join" and e["codec"] == "zstd")
    truth = json.loads((SAMPLE_PLANS / entry["truth"]).read_text("utf-8"))
    result = subprocess.run(
        [*AQE_INSPECT, "diff", str(SAMPLE_PLANS / entry["path"]),
         "--query", "^aqe-sample:skew_join$", "--format", "json"],
        capture_output=True, check=False)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    (query,) = report["queries"]
    assert query["description"] == "aqe-sample:skew_join"
    assert query["counts"] == {k: truth["rewrites"][k] for k in REWRITE_KINDS}
    assert report["application"]["spark_version"] == entry["spark_version"]


@pytest.mark.parametrize("codec", [None, "zstd", "lz4"])
def test_an_event_log_on_standard_input_is_read_as_one(codec):
    entry = next(e for e in LOGS if e["spark_version"] == "4.3.0" and e["codec"] == codec
                 and e["layout"] == "single" and e["variant"] in ("plain", codec))
    truth = json.loads((SAMPLE_PLANS / entry["truth"]).read_text("utf-8"))
    result = subprocess.run([*AQE_INSPECT, "diff", "-", "--format", "json"],
                            input=(SAMPLE_PLANS / entry["path"]).read_bytes(),
                            capture_output=True, check=False)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["application"]["app_id"] == entry["app_id"]
    (query,) = [q for q in report["queries"] if q["description"] == entry["description"]]
    assert query["counts"] == {k: truth["rewrites"][k] for k in REWRITE_KINDS}
    assert query["source"] == "<stdin>"


# ---- a killed application: its log has no SparkListenerApplicationEnd ------------------------

KILLED = [e for e in LOGS if e["layout"] in ("inprogress", "inprogress-cut")]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*AQE_INSPECT, *args], capture_output=True, text=True, check=False,
                          env={"PATH": "/usr/bin:/bin", "COLUMNS": "100"})


@pytest.mark.parametrize("entry", KILLED, ids=log_id)
def test_a_pass_on_a_killed_application_says_it_never_ended(entry):
    """The driver was killed after the labelled execution ended (the cut copy holds it whole
    too): what it made passes, and every output says the application never ended, naming the
    file and the application, in the PASS and in a note; a forbid stays open (the executions
    after the log's end could not be read)."""
    path = str(SAMPLE_PLANS / entry["path"])
    truth = json.loads((SAMPLE_PLANS / entry["truth"]).read_text("utf-8"))
    kind = next(kind for kind in REWRITE_KINDS if truth["rewrites"].get(kind))
    absent = next(kind for kind in REWRITE_KINDS if not truth["rewrites"].get(kind))
    note = (f"{path}: the application {entry['app_id']} ({entry['app_name']}) has no end in "
            "this log (no SparkListenerApplicationEnd): the log is cut short, still being "
            "written, or its driver was killed; executions run after the log's end could not "
            "be read")
    done = _cli("check", path, "--query", entry["description"], "--expect", kind,
                "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    [outcome] = data["expectations"]
    assert outcome["status"] == "met"
    assert outcome["message"].endswith(
        "in 1 execution, every one of which ended; the application has no end in the log (no "
        "SparkListenerApplicationEnd; see the note): executions after its end could not be "
        "read"), outcome["message"]
    assert note in data["notes"], data["notes"]
    text = _cli("check", path, "--query", entry["description"], "--expect", kind)
    assert text.returncode == 0 and text.stdout.startswith(f"PASS {kind}")
    assert f"note: {note}" in " ".join(text.stdout.split())
    forbid = _cli("check", path, "--query", entry["description"], "--forbid", absent)
    assert forbid.returncode == 1 and forbid.stdout.startswith(f"UNFINISHED forbid {absent}")
    diffed = json.loads(_cli("diff", path, "--format", "json").stdout)
    assert note in diffed["notes"]


def test_a_killed_application_in_a_folder_is_said_and_keeps_a_forbid_open(tmp_path):
    """A folder of two applications, one killed: its log is named in the note, and a forbid
    over both is open (`unfinished`), as it is over the killed log alone."""
    killed = next(e for e in KILLED if e["layout"] == "inprogress"
                  and e["spark_version"] == "3.5.9")
    whole = next(e for e in LOGS if e["scenario"] == "smj_to_bhj" and e["layout"] == "single"
                 and e["variant"] == "plain" and e["spark_version"] == "3.5.9")
    (tmp_path / "killed.inprogress").write_bytes((SAMPLE_PLANS / killed["path"]).read_bytes())
    (tmp_path / "whole.json").write_bytes((SAMPLE_PLANS / whole["path"]).read_bytes())
    done = _cli("check", str(tmp_path), "--query", "^aqe-sample:", "--forbid", "skew-join",
                "--format", "json")
    assert done.returncode == 1, done.stdout + done.stderr
    data = json.loads(done.stdout)
    [outcome] = data["expectations"]
    assert outcome["status"] == "unfinished" and "no SparkListenerApplicationEnd" in \
        outcome["message"]
    assert [note for note in data["notes"] if "has no end in this log" in note] == [
        f"{tmp_path / 'killed.inprogress'}: the application {killed['app_id']} "
        f"({killed['app_name']}) has no end in this log (no SparkListenerApplicationEnd): the "
        "log is cut short, still being written, or its driver was killed; executions run after "
        "the log's end could not be read"]


@pytest.mark.parametrize("codec", ["zstd"])
def test_compare_names_every_unfinished_execution_it_counts(tmp_path, codec):
    """A run of eight executions against its own log cut inside the fourth (the driver
    killed): the fourth is an unfinished pair, the four after it have no partner in a log
    that ends before its application does. The verdict counts five, and every format lists
    the five, each naming its file."""
    import zstandard

    whole = SAMPLE_PLANS / "compare" / "spark-3.5.9" / f"baseline.{codec}"
    lines = zstandard.ZstdDecompressor().stream_reader(whole.open("rb")).read() \
        .splitlines(keepends=True)
    starts = [n for n, text in enumerate(lines) if b"SQLExecutionStart" in text]
    cut = tmp_path / "killed.json"
    cut.write_bytes(b"".join(lines[:starts[3] + 1]))  # the fourth execution begun, no more
    done = _cli("compare", str(whole), str(cut))
    assert done.returncode == 1, done.stdout + done.stderr
    text = done.stdout
    verdict = " ".join(text.strip().split("\n\n")[-1].split())
    assert verdict.startswith("aqe-inspect compare: UNFINISHED: 5 execution(s) unfinished")
    body = text[:text.rindex("aqe-inspect compare: UNFINISHED")]
    marked = [line.split()[1:3] for line in body.splitlines()
              if line.strip().startswith("UNFINISHED")]
    assert marked == [["execution", "3"]] + [["execution", str(n)] for n in range(4, 8)], body
    assert (f"only in the old run (4), unfinished, no verdict: the new run's log {cut} ends "
            "before its application does") in " ".join(body.split())
    data = json.loads(_cli("compare", str(whole), str(cut), "--format", "json").stdout)
    [pair] = [pair for pair in data["pairs"] if pair["status"] == "unfinished"]
    assert pair["unfinished"][0].startswith(f"new run: execution 3 ({cut}:")
    assert [why.split(" has no partner")[0] for why in data["unpartnered"]] == [
        f"old run: execution {n} ({whole}:{line})" for n, line in
        zip(range(4, 8), [e["line"] for e in data["unmatched"]["old"]])]
    assert all(f"whose log {cut} ends before its application does" in why
               for why in data["unpartnered"])
    markdown = _cli("compare", str(whole), str(cut), "--format", "markdown").stdout
    section = markdown[markdown.index("### Unfinished"):].split("\n\n")[1]
    assert len(section.splitlines()) == 5, section
