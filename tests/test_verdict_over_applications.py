"""A verdict is over applications (issue 48, items 7, 9, 10, 11, 13): whatever else the input
holds, an application it may lack queries of makes the counts lower bounds, so a verdict they
do not settle is `unfinished`, naming the application, log or part, in every format:

* 7: a folder holding a log with no application end (`.inprogress` or not), or a log that
  could not be read: the outcome names that log, a note too;
* 9: a rolling log with a part missing from its numbering (`events_1`, `events_3`), or a
  compacted part (Spark's compaction drops the events of executions that had ended);
* 10: a driver log whose first application never stopped, a complete run appended after it;
* 11: History Server JSON (saved, or over `--url`) showing an execution RUNNING;
* 13: `--judge-unfinished` judges such an input, and its PASS says it judged lower bounds;
  `diff` notes what is missing.

All through the installed command, on real runs' logs (sample_plans/, tests/fixtures/) cut or
arranged as the issue describes.
"""

from __future__ import annotations

import http.server
import json
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from .conftest import AQE_INSPECT, ROOT, SAMPLE_PLANS

LINES = sorted(p.name for p in SAMPLE_PLANS.glob("spark-*") if p.is_dir())
GENERATED = ROOT / "tests" / "fixtures" / "eventlogs" / "generated"
APP_END = b"SparkListenerApplicationEnd"
FORMATS = ("json", "junit", "github", "sarif", "html")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*AQE_INSPECT, *args], capture_output=True, text=True, timeout=300)


def _joined(text: str) -> str:
    """The output with its wrapped lines joined (the text format wraps at the width)."""
    return " ".join(text.split())


def _check_json(*args: str) -> dict:
    done = _run("check", *args, "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def _absent_kinds(path: Path) -> List[str]:
    """The rewrite kinds no query of `path` holds (read whole, as diff reports it)."""
    done = _run("diff", str(path), "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    counts: Dict[str, int] = {}
    for query in data["queries"]:
        for kind, count in query["counts"].items():
            counts[kind] = counts.get(kind, 0) + count
    return [kind for kind, count in counts.items() if not count]


def _unfinished_everywhere(args: Tuple[str, ...], said: str, noted: str = "") -> None:
    """`check ARGS` is UNFINISHED in every format, the outcome saying `said` and a note
    `noted` (`said` too, when not given)."""
    noted = noted or said
    text = _run("check", *args)
    assert text.returncode == 1, text.stdout + text.stderr
    assert text.stdout.startswith("UNFINISHED"), text.stdout[:400]
    assert "expectation(s) unfinished" in text.stdout
    assert said in _joined(text.stdout)
    data = _check_json(*args)
    assert data["passed"] is False and data["status"] == "unfinished", data["status"]
    assert all(outcome["status"] == "unfinished" for outcome in data["expectations"])
    assert said in data["expectations"][0]["message"], data["expectations"][0]["message"]
    assert any(noted in note for note in data["notes"]), data["notes"]
    assert noted in _joined(text.stdout)
    for name in FORMATS[1:]:
        done = _run("check", *args, "--format", name)
        assert done.returncode == 1, (name, done.stdout[:300], done.stderr)
        out = done.stdout
        if name == "junit":
            assert '<error message="unfinished' in out and "<failure" not in out
        elif name == "github":
            assert "unfinished" in out and "::error" in out
        elif name == "sarif":
            results = json.loads(out)["runs"][0]["results"]
            assert results[0]["kind"] == "open"
            assert results[0]["properties"]["status"] == "unfinished"
        elif name == "html":
            assert 'data-outcome="UNFINISHED"' in out
        assert "unfinished" in out.lower(), name


# ---- 7: a folder holding an application with no end -------------------------------------

@pytest.mark.parametrize("name", ["app-2.inprogress", "app-2"])
def test_a_folder_with_an_application_with_no_end_is_unfinished(tmp_path, name):
    """A folder of a whole log and a log whose application has no end (named `.inprogress`
    or not): a forbid over both is UNFINISHED, the outcome naming the log with no end (not
    only the note), in every format; the folder of the whole log alone passes."""
    line = LINES[0]
    whole = (SAMPLE_PLANS / line / "skew_join_off" / "eventlog.json").read_bytes()
    other = (SAMPLE_PLANS / line / "local_read" / "eventlog.json").read_bytes()
    probe = tmp_path / "other.json"
    probe.write_bytes(other)
    folder = tmp_path / "spark-events"
    folder.mkdir()
    (folder / "app-1.json").write_bytes(whole)
    absent = [kind for kind in _absent_kinds(folder / "app-1.json")
              if kind in _absent_kinds(probe)][0]
    assert _run("check", str(folder), "--forbid", absent).returncode == 0
    cut = b"".join(text for text in other.splitlines(keepends=True) if APP_END not in text)
    (folder / name).write_bytes(cut)
    said = f"{folder / name}: the log ends before its application does"
    noted = f"{folder / name}: the application "
    _unfinished_everywhere((str(folder), "--forbid", absent), said, noted)
    # Lower bounds that settle it stand, saying which application never ended.
    data = _check_json(str(folder), "--expect", "coalesced>=0")
    assert data["passed"] is True
    assert f"{folder / name}: the application has no end in the log" in \
        data["expectations"][0]["message"]


def test_a_folder_with_a_log_that_cannot_be_read_is_unfinished(tmp_path):
    """A log damaged so that nothing of it is read is an application whose executions are
    not counted: a forbid over the folder is UNFINISHED, naming it (it passed before)."""
    line = LINES[0]
    folder = tmp_path / "spark-events"
    folder.mkdir()
    shutil.copyfile(SAMPLE_PLANS / line / "skew_join_off" / "eventlog.json", folder / "a.json")
    raw = bytearray((SAMPLE_PLANS / line / "skew_join" / "eventlog.zstd").read_bytes())
    middle = len(raw) // 2
    raw[middle:middle + 64] = bytes(64)
    (folder / "b.zstd").write_bytes(bytes(raw))
    _unfinished_everywhere((str(folder), "--forbid", "one-row"), f"{folder / 'b.zstd'}: ")


# ---- 9: a rolling log with a part missing, or compacted ---------------------------------

def _baseline_lines(line: str) -> List[bytes]:
    import zstandard

    path = SAMPLE_PLANS / "compare" / line / "baseline.zstd"
    with path.open("rb") as handle:
        return zstandard.ZstdDecompressor().stream_reader(handle).read() \
            .splitlines(keepends=True)


def _rolling(tmp_path: Path, line: str) -> Tuple[Path, str, List[int]]:
    """A real run's log (eight SQL executions, one after another) laid out as Spark's rolling
    log of three parts, split where an execution starts: `eventlog_v2_<app>/events_<n>_<app>`.
    The folder, the application id and the executions of each part."""
    lines = _baseline_lines(line)
    app = next(json.loads(text)["App ID"] for text in lines
               if b"SparkListenerApplicationStart" in text)
    starts = [n for n, text in enumerate(lines) if b"SQLExecutionStart" in text]
    assert len(starts) >= 7
    cuts = [0, starts[3], starts[6], len(lines)]
    folder = tmp_path / f"eventlog_v2_{app}"
    folder.mkdir(parents=True)
    for number in range(3):
        part = b"".join(lines[cuts[number]:cuts[number + 1]])
        (folder / f"events_{number + 1}_{app}").write_bytes(part)
    (folder / f"appstatus_{app}").write_bytes(b"")
    return folder, app, [3, 3, len(starts) - 6]


@pytest.mark.parametrize("line", LINES)
def test_a_rolling_log_with_a_part_missing_is_unfinished(tmp_path, line):
    """Whole, the rolling log passes a forbid of a kind it never made; with its second part
    removed (`events_1`, `events_3`), or its first, the executions logged there could not be
    read: UNFINISHED in every format, naming the gap; `diff` notes it too. Before, it passed
    with no note."""
    folder, app, executions = _rolling(tmp_path, line)
    absent = _absent_kinds(folder)[0]
    whole = _run("check", str(folder), "--forbid", absent)
    assert whole.returncode == 0, whole.stdout
    (folder / f"events_2_{app}").unlink()
    said = (f"{folder}: this rolling event log has no part events_2 (events_1_{app} is "
            f"followed by events_3_{app})")
    _unfinished_everywhere((str(folder), "--forbid", absent), said)
    # What was read settles at least N found: it stands, saying what is missing.
    data = _check_json(str(folder), "--expect", "coalesced>=0")
    assert data["passed"] and said in data["expectations"][0]["message"]
    diffed = json.loads(_run("diff", str(folder), "--format", "json").stdout)
    assert len(diffed["queries"]) == executions[0] + executions[2]
    assert any(note.startswith(said) for note in diffed["notes"]), diffed["notes"]
    assert said in _joined(_run("diff", str(folder)).stdout)
    # The first part gone (a log copied from its second part on).
    again, app, _ = _rolling(tmp_path / "again", line)
    (again / f"events_1_{app}").unlink()
    first = _check_json(str(again), "--forbid", absent)
    assert first["status"] == "unfinished", first["expectations"]
    assert any(note.startswith(f"{again}: this rolling event log has no part events_1 (its "
                               f"first part is events_2_{app})") for note in first["notes"])


@pytest.mark.parametrize("line", LINES)
def test_a_rolling_log_with_a_compacted_part_is_unfinished(tmp_path, line):
    """A part Spark's compaction wrote (`events_1_<app>.compact`: only the executions still
    running when it was written keep their events) means executions that ended before it
    could not be read: UNFINISHED, naming the compacted part. Parts before the last compacted
    one are in it: not read again (as Spark reads), and said."""
    folder, app, _ = _rolling(tmp_path, line)
    absent = _absent_kinds(folder)[0]
    compacted = folder / f"events_1_{app}.compact"
    (folder / f"events_1_{app}").rename(compacted)
    said = f"{folder}: its part {compacted.name} is compacted"
    _unfinished_everywhere((str(folder), "--forbid", absent), said)
    diffed = json.loads(_run("diff", str(folder), "--format", "json").stdout)
    assert any(note.startswith(said) for note in diffed["notes"]), diffed["notes"]
    # The second part compacted too, the first still there: read from the compacted one on.
    second = folder / f"events_2_{app}"
    shutil.copyfile(second, folder / f"events_2_{app}.compact")
    second.unlink()
    data = _check_json(str(folder), "--forbid", absent)
    assert data["status"] == "unfinished"
    assert any("skipped 1 part that a later compacted part holds" in note and
               compacted.name in note for note in data["notes"]), data["notes"]


# ---- 10: a driver log whose first application never stopped ------------------------------

APPLICATION_START = "Submitted application: "
APPLICATION_STOP = "Successfully stopped SparkContext"


@pytest.mark.parametrize("line", LINES)
def test_a_driver_log_whose_first_application_never_stopped_is_unfinished(tmp_path, line):
    """A run's driver log cut before its SparkContext stopped (the driver killed), then a
    whole run appended to the same file (log4j appends): the first run alone is UNFINISHED,
    and so is the file with both, naming the line where the first run started; the two whole
    runs pass. `diff` notes the run that never stopped."""
    folder = SAMPLE_PLANS / line
    first = (folder / "skew_join_off" / "driver.log").read_text("utf-8")
    second = (folder / "skew_join" / "driver.log").read_text("utf-8")
    assert APPLICATION_STOP in first and APPLICATION_STOP in second
    lines = first.splitlines(keepends=True)
    stop = next(n for n, text in enumerate(lines) if APPLICATION_STOP in text)
    start = next(n for n, text in enumerate(lines) if APPLICATION_START in text) + 1
    killed = "".join(lines[:stop])
    whole, cut, alone = tmp_path / "whole.log", tmp_path / "both.log", tmp_path / "alone.log"
    whole.write_text(first + second, "utf-8")
    cut.write_text(killed + second, "utf-8")
    alone.write_text(killed, "utf-8")
    absent = [kind for kind in _absent_kinds(whole)][0]
    assert _run("check", str(whole), "--forbid", absent).returncode == 0
    assert _run("check", str(alone), "--forbid", absent).stdout.startswith("UNFINISHED")
    next_start = len(killed.splitlines()) + 1 + next(
        n for n, text in enumerate(second.splitlines()) if APPLICATION_START in text)
    said = (f"the application started at line {start} of the driver log has no end before "
            f"the next one starts at line {next_start}")
    note = (f"line {start}: the application started here ('Submitted application:') has no "
            f"end before the next one starts at line {next_start}")
    _unfinished_everywhere((str(cut), "--forbid", absent), said, note)
    diffed = json.loads(_run("diff", str(cut), "--format", "json").stdout)
    assert any(item.startswith(note) for item in diffed["notes"]), diffed["notes"]
    judged = _check_json(str(cut), "--forbid", absent, "--judge-unfinished")
    assert judged["passed"] and "judged though its counts are lower bounds" in \
        judged["expectations"][0]["message"]


# ---- 11: History Server JSON with an execution RUNNING ----------------------------------

def _running(tmp_path: Path, name: str) -> Tuple[Path, int, List[str], int]:
    """A real run's saved /sql answer with one execution's status edited to RUNNING (its plan
    final, as the History Server shows an execution whose last stages run): the file, that
    execution's id, the kinds no execution made and how many coalesced reads there are."""
    data = json.loads((GENERATED / name).read_text("utf-8"))
    running = next(item for item in data if "isFinalPlan=true" in item["planDescription"]
                   and item["id"] > 0)
    running["status"] = "RUNNING"
    path = tmp_path / "sql.json"
    path.write_text(json.dumps(data, indent=2), "utf-8")
    original = tmp_path / "completed.json"
    shutil.copyfile(GENERATED / name, original)
    done = json.loads(_run("diff", str(original), "--format", "json").stdout)
    coalesced = sum(query["counts"]["coalesced"] for query in done["queries"])
    return path, running["id"], _absent_kinds(original), coalesced


@pytest.mark.parametrize("name", ["spark35_history_sql.json", "spark43_history_sql.json"])
def test_history_server_json_with_an_execution_running_is_unfinished(tmp_path, name):
    """Saved: a forbid of a kind no execution made and an at-most that holds both pass on the
    answer as the server gave it (every execution COMPLETED), and are UNFINISHED with an
    execution RUNNING, as an event log in that state is, naming it, in every format."""
    path, running, absent, coalesced = _running(tmp_path, name)
    completed = tmp_path / "completed.json"
    assert _run("check", str(completed), "--forbid", absent[0]).returncode == 0
    assert _run("check", str(completed), "--expect", f"coalesced<={coalesced}").returncode == 0
    said = (f"execution {running} (line {_line_of(path, running)}, where its JSON begins): its "
            "execution was still running when the History Server answered (status RUNNING)")
    noted = f"{path}: execution {running} (line {_line_of(path, running)}) was still running"
    _unfinished_everywhere((str(path), "--forbid", absent[0]), said, noted)
    _unfinished_everywhere((str(path), "--expect", f"coalesced<={coalesced}"), said, noted)
    diffed = json.loads(_run("diff", str(path), "--format", "json").stdout)
    assert any(note.startswith(noted) for note in diffed["notes"]), diffed["notes"]


def _line_of(path: Path, execution: int) -> int:
    """The line where the execution's JSON object begins in a saved answer (indented 2)."""
    lines = path.read_text("utf-8").splitlines()
    return next(number for number, text in enumerate(lines, 1)
                if text == f'    "id": {execution},') - 1


@pytest.fixture()
def running_history_server(tmp_path):
    """A local http.server answering the REST path with a real run's /sql answer, one
    execution RUNNING."""
    path, running, absent, coalesced = _running(tmp_path, "spark35_history_sql.json")
    served = tmp_path / "served"
    root = served / "api/v1/applications/local-1795444629345"
    root.mkdir(parents=True)
    (root / "sql").write_bytes(path.read_bytes())

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(served), **kwargs)

        def translate_path(self, path):
            return super().translate_path(path.split("?")[0])

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/api/v1/applications/local-1795444629345"
    yield url, running, absent, coalesced
    server.shutdown()
    server.server_close()


def test_history_server_url_with_an_execution_running_is_unfinished(running_history_server):
    url, running, absent, coalesced = running_history_server
    for args in (("--forbid", absent[0]), ("--expect", f"coalesced<={coalesced}")):
        data = _check_json("--url", url, *args)
        assert data["status"] == "unfinished", data["expectations"]
        assert f"execution {running} (line " in data["expectations"][0]["message"]
        assert "still running when the History Server answered" in \
            data["expectations"][0]["message"]
        assert any("still running when the History Server answered" in note
                   for note in data["notes"]), data["notes"]


# ---- 13: --judge-unfinished on a log with no application end -----------------------------

@pytest.mark.parametrize("line", LINES)
def test_judging_a_log_with_no_application_end_says_it_judged_lower_bounds(tmp_path, line):
    """`--judge-unfinished` judges what a log with no application end holds, as asked; its
    PASS says the counts it judged are lower bounds and why (a plan that is not final says
    "judged though ..." alike), in every format's message; `diff` of the log notes the
    missing end."""
    source = SAMPLE_PLANS / line / "local_read" / "eventlog.json"
    path = tmp_path / "no-end.json"
    path.write_bytes(b"".join(text for text in source.read_bytes().splitlines(keepends=True)
                              if APP_END not in text))
    absent = _absent_kinds(path)[0]
    text = _run("check", str(path), "--forbid", absent, "--judge-unfinished")
    assert text.returncode == 0 and text.stdout.startswith("PASS"), text.stdout
    said = ("judged though its counts are lower bounds: the log ends before its application "
            "does (no SparkListenerApplicationEnd")
    assert said in _joined(text.stdout)
    data = _check_json(str(path), "--forbid", absent, "--judge-unfinished")
    assert data["passed"] and said in data["expectations"][0]["message"]
    for name in ("github", "html"):  # (JUnit and SARIF carry no message of a PASS)
        done = _run("check", str(path), "--forbid", absent, "--judge-unfinished",
                    "--format", name)
        assert done.returncode == 0 and "judged though its counts are lower bounds" in \
            _joined(done.stdout), name
    for name in ("text", "json"):
        diffed = _run("diff", str(path), "--format", name)
        assert "has no end in this log (no SparkListenerApplicationEnd)" in \
            _joined(diffed.stdout), name


@pytest.mark.parametrize("line", LINES[-1:])
def test_compare_names_why_the_new_run_may_lack_executions(tmp_path, line):
    """`compare` against a NEW rolling log with a part missing: the old run's executions
    without a partner are no verdict, and the message gives the reader's reason (the gap),
    not a generic "ends before its application does"."""
    old = SAMPLE_PLANS / "compare" / line / "baseline.zstd"
    folder, app, _ = _rolling(tmp_path, line)
    (folder / f"events_2_{app}").unlink()
    result = _run("compare", str(old), str(folder), "--format", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    data = json.loads(result.stdout)
    said = "this rolling event log has no part events_2"
    assert data["status"] == "unfinished" or data.get("passed") is False, data
    assert said in result.stdout, result.stdout[:2000]
    text = _joined(_run("compare", str(old), str(folder)).stdout)
    # the verdict itself says why, not only the notes
    verdict = text[text.rindex("aqe-inspect compare: UNFINISHED"):]
    assert "may lack executions" in verdict and said in verdict, verdict
