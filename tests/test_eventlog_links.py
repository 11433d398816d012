"""Folders of event logs as shared `spark-events` folders hold them (issue 48, items 2 and 8):
a part swapped for a link to another log after the folder was listed is never read through the
link, and one application reached twice (a link to its log, a rolling log linked as `current`,
a link loop, a leftover `.inprogress` copy) is read once, with a note.

The logs are real runs from sample_plans/; the folders are arranged here, and the commands run
as users run them (the installed `aqe-inspect`, and `aqe-inspect mcp` through the MCP SDK's
client). The swap is made deterministic by a hook loaded into the command's process (a
`sitecustomize` module on its PYTHONPATH): it swaps the part at a chosen point between the
listing and the reading, and the real code paths do the rest.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from .conftest import AQE_INSPECT, SAMPLE_PLANS

if sys.platform == "win32":  # pragma: no cover
    pytest.skip("symbolic links need privileges on Windows", allow_module_level=True)

#: One application (1 smj-to-bhj), plain JSON lines.
APP = SAMPLE_PLANS / "spark-3.5.9" / "multi_rewrite" / "eventlog.json"
APP_ID = "local-1795445927196"
#: A rolling log of another application (2 zstd parts).
ROLLING = SAMPLE_PLANS / "spark-3.5.9" / "multi_rewrite" / "eventlog_v2_local-1795445776076"
#: The log outside the folder a swap leads to: another application (4 smj-to-bhj).
OUTSIDE = SAMPLE_PLANS / "spark-4.3.0" / "five_way_join" / "eventlog.json"
OUTSIDE_DESCRIPTION = "aqe-sample:five_way_join"

HOOK = '''
import json, os
_swap = json.loads(os.environ["AQE_TEST_SWAP"])


def _do():
    if not os.path.islink(_swap["part"]):
        os.remove(_swap["part"])
        os.symlink(_swap["target"], _swap["part"])


if _swap["when"] == "before-reading":  # the folder listed (and checked), its parts not read
    from aqe_inspect.sources.eventlog import files

    _read_chunks = files.read_chunks

    def read_chunks(*args, **kwargs):
        _do()
        return _read_chunks(*args, **kwargs)

    files.read_chunks = read_chunks
else:  # "before-listing": the source checked (the MCP server's --allow), not listed yet
    from aqe_inspect.sources import eventlog

    _search = eventlog.search_event_logs

    def search_event_logs(*args, **kwargs):
        _do()
        return _search(*args, **kwargs)

    eventlog.search_event_logs = search_event_logs
'''


def _run(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([*AQE_INSPECT, *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env)


def _hooked_env(tmp_path: Path, part: Path, target: Path, when: str) -> dict:
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(HOOK)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(hook), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    env["AQE_TEST_SWAP"] = json.dumps({"part": str(part), "target": str(target), "when": when})
    return env


def _rolling_plain(folder: Path) -> Path:
    """A rolling log of APP's events in two plain parts (split at a line, as Spark rolls)."""
    rolling = folder / f"eventlog_v2_{APP_ID}"
    rolling.mkdir(parents=True)
    lines = APP.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    (rolling / f"events_1_{APP_ID}").write_bytes(b"".join(lines[:half]))
    (rolling / f"events_2_{APP_ID}").write_bytes(b"".join(lines[half:]))
    (rolling / f"appstatus_{APP_ID}").write_bytes(b"")
    return rolling


def _descriptions(report: dict) -> List[str]:
    return [query.get("description") or "" for query in report["queries"]]


# ---- item 2: a part swapped for a link after the check ---------------------------------------

def test_a_rolling_part_swapped_for_a_link_after_the_listing_is_refused_not_read(tmp_path):
    rolling = _rolling_plain(tmp_path / "spark-events")
    part = rolling / f"events_2_{APP_ID}"
    unswapped = _run("diff", rolling, "--format", "json")
    assert unswapped.returncode == 0, unswapped.stderr
    assert OUTSIDE_DESCRIPTION not in unswapped.stdout

    env = _hooked_env(tmp_path, part, OUTSIDE, "before-reading")
    done = _run("diff", rolling, "--format", "json", env=env)
    assert os.path.islink(part)  # the hook swapped it
    assert OUTSIDE_DESCRIPTION not in done.stdout  # nothing of the other log came back
    assert done.returncode == 2, done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"aqe-inspect: error: {part}: replaced since its folder was "
                               "listed"), lines[0]

    # check: never a verdict on the swapped log
    os.remove(part)
    shutil.rmtree(rolling)
    _rolling_plain(tmp_path / "spark-events")
    checked = _run("check", rolling, "--forbid", "skew-join", env=env)
    assert os.path.islink(part)
    assert checked.returncode == 2 and "PASS" not in checked.stdout, checked.stdout
    assert f"{part}: replaced since its folder was listed" in checked.stderr


def test_a_log_swapped_for_a_link_in_a_folder_of_applications_is_not_read(tmp_path):
    folder = tmp_path / "spark-events"
    folder.mkdir()
    shutil.copy(APP, folder / APP_ID)
    shutil.copy(ROLLING.parent / "eventlog.json", folder / "other")  # (the same as APP: a copy)
    second = SAMPLE_PLANS / "spark-3.5.9" / "smj_to_bhj" / "eventlog.json"
    shutil.copy(second, folder / "second")
    env = _hooked_env(tmp_path, folder / "second", OUTSIDE, "before-reading")
    done = _run("check", folder, "--forbid", "skew-join", "--format", "json", env=env)
    assert os.path.islink(folder / "second")  # the hook swapped it
    assert OUTSIDE_DESCRIPTION not in done.stdout
    # not a note beside a verdict on the other logs: the run stops on it, in one line
    assert done.returncode == 2 and not done.stdout, done.stdout
    assert done.stderr.strip() == (
        f"aqe-inspect: error: {folder / 'second'}: replaced since its folder was listed (its "
        "name now leads to another file: replaced, or a link swapped in); it was not read: "
        "read the folder again once it is still"), done.stderr


# ---- item 2, the MCP server: never a file outside --allow, whatever is swapped when ----------

@pytest.mark.parametrize("when", ["before-listing", "before-reading"])
def test_the_mcp_server_reads_no_part_swapped_for_a_link_out(tmp_path, monkeypatch, when):
    from .mcp_client import call, run, stdio_session

    allowed = tmp_path / "open"
    rolling = _rolling_plain(allowed)
    part = rolling / f"events_2_{APP_ID}"
    outside = tmp_path / "elsewhere" / "app.json"
    outside.parent.mkdir()
    shutil.copy(OUTSIDE, outside)
    env = _hooked_env(tmp_path, part, outside, when)
    for name in ("PYTHONPATH", "AQE_TEST_SWAP"):
        monkeypatch.setenv(name, env[name])

    async def main():
        async with stdio_session("--allow", str(allowed)) as session:
            return await call(session, "list_executions", source=rolling.name)

    error, text, data = run(main)
    assert os.path.islink(part)  # the hook swapped it
    assert OUTSIDE_DESCRIPTION not in text and OUTSIDE_DESCRIPTION not in json.dumps(data)
    assert error, text
    assert text.startswith("aqe-inspect: error: ") and "\n" not in text, text
    assert str(part) in text, text
    # (the confinement to --allow's folders is checked first on the open file)
    assert "outside the folders open to this server" in text, text


# ---- item 8: one application reached twice is read once ---------------------------------------

def _counts(report: dict, kind: str) -> int:
    return sum((query.get("counts") or {}).get(kind, 0) for query in report["queries"])


def test_links_a_loop_and_a_linked_rolling_log_are_read_once(tmp_path):
    alone = json.loads(_run("diff", APP, "--format", "json").stdout)
    rolling_alone = json.loads(_run("diff", ROLLING, "--format", "json").stdout)
    folder = tmp_path / "spark-events"
    folder.mkdir()
    shutil.copy(APP, folder / "app-1")
    (folder / "latest").symlink_to("app-1")
    shutil.copytree(ROLLING, folder / ROLLING.name)
    (folder / "current").symlink_to(ROLLING.name, target_is_directory=True)
    (folder / "loop").symlink_to(".", target_is_directory=True)

    done = _run("diff", folder, "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert len(report["queries"]) == len(alone["queries"]) + len(rolling_alone["queries"])
    # each log named by its own path, not a link's
    parts = {Path(query.get("part") or query.get("source")).relative_to(folder).parts[0]
             for query in report["queries"]}
    assert parts == {"app-1", ROLLING.name}, parts
    notes = " ".join(report["notes"])
    assert "each application is read once: skipped 3 duplicates" in notes, notes
    assert "latest (the same file as app-1)" in notes
    assert f"current (the same folder as {ROLLING.name})" in notes
    assert "loop (the same folder as .)" in notes

    # the verdict counts each execution once
    expected = _counts(alone, "smj-to-bhj") + _counts(rolling_alone, "smj-to-bhj")
    assert expected >= 1
    over = _run("check", folder, "--expect", f"smj-to-bhj>={expected + 1}")
    assert over.returncode == 1, over.stdout
    exact = _run("check", folder, "--expect", f"smj-to-bhj<={expected}")
    assert exact.returncode == 0, exact.stdout
    # (the note is wrapped to the terminal's width, where the temporary folder's name falls)
    assert "each application is read once" in " ".join((exact.stdout + exact.stderr).split())


def test_a_leftover_inprogress_copy_is_passed_over_for_the_finished_log(tmp_path):
    alone = json.loads(_run("diff", APP, "--format", "json").stdout)
    folder = tmp_path / "spark-events"
    folder.mkdir()
    # the copy sorts first, and is cut where the application was still running
    lines = APP.read_bytes().splitlines(keepends=True)
    (folder / "a-copy.inprogress").write_bytes(b"".join(lines[:len(lines) * 2 // 3]))
    shutil.copy(APP, folder / "b-finished")

    done = _run("diff", folder, "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert len(report["queries"]) == len(alone["queries"])
    assert all("b-finished" in (query.get("part") or query.get("source"))
               for query in report["queries"])
    notes = " ".join(report["notes"])
    assert (f"a-copy.inprogress (application {APP_ID}, an unfinished copy of b-finished, "
            "which was read)") in notes, notes

    count = _counts(alone, "smj-to-bhj")
    over = _run("check", folder, "--expect", f"smj-to-bhj>={count + 1}")
    assert over.returncode == 1, over.stdout


def test_two_applications_in_one_folder_are_both_read(tmp_path):
    """Not every second log is a duplicate: two runs (two application ids) are two."""
    folder = tmp_path / "spark-events"
    folder.mkdir()
    shutil.copy(APP, folder / "one")
    shutil.copy(SAMPLE_PLANS / "spark-3.5.9" / "smj_to_bhj" / "eventlog.json", folder / "two")
    report = json.loads(_run("diff", folder, "--format", "json").stdout)
    sources = {query.get("part") or query.get("source") for query in report["queries"]}
    assert any(s.endswith("one") for s in sources) and any(s.endswith("two") for s in sources)
    assert "each application is read once" not in " ".join(report["notes"])
