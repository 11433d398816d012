"""The fleet scan (aqe_inspect.fleet.rows and .job): the committed sample event logs (real
Spark 3.5.9 and 4.3.0 runs of the sample generator: plain, zstd, lz4, snappy, lzf, a rolling
log, killed and cut `.inprogress` files) scanned into the table and checked row by row against
their truth.json; bad files named as error rows, files in folders that are no event logs
skipped and counted; the job on the session's Spark (path and binaryFile modes, CSV and
Parquet, a re-run over the same output); the command run from a folder holding a source tree
of aqe_inspect, whose workers must import the installed package."""

from __future__ import annotations

import csv
import glob
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from aqe_inspect.errors import InspectError
from aqe_inspect.fleet.job import LocalFiles, expand_units, nothing_read, run_fleet
from aqe_inspect.fleet.rows import rows_of_bytes, rows_of_log
from aqe_inspect.fleet.table import COLUMN_NAMES, KIND_COLUMNS, kind_column
from aqe_inspect.sources.eventlog.files import folder_parts

from .conftest import AQE_INSPECT, SAMPLE_PLANS

MANIFEST = json.loads((SAMPLE_PLANS / "eventlogs.json").read_text())
#: Every committed event log (History Server JSON is not one).
LOGS = [entry for entry in MANIFEST["logs"] if entry["layout"] != "history-sql"]
HISTORY = next(entry for entry in MANIFEST["logs"] if entry["layout"] == "history-sql")


def _truth(entry):
    return json.loads((SAMPLE_PLANS / entry["truth"]).read_text())


def _check_labelled(rows, entry, where):
    """The labelled execution's row against the log's manifest entry and truth.json."""
    truth = _truth(entry)
    found = [row for row in rows if row["execution_id"] == entry["execution_id"]]
    assert len(found) == 1, where
    row = found[0]
    assert row["error"] == "", where
    assert row["description"] == entry["description"], where
    assert (row["app_id"], row["app_name"]) == (entry["app_id"], entry["app_name"]), where
    assert row["spark_version"] == entry["spark_version"] == truth["spark_version"], where
    assert row["is_final_plan"] == truth["is_final_plan"], where
    assert row["adaptive"] == bool(truth["adaptive_plans"]), where
    expected = {kind_column(kind): count for kind, count in truth["rewrites"].items()}
    assert {kind: row[kind] for kind in KIND_COLUMNS} == expected, where
    assert row["aqe_enabled"] == (truth["confs"]["spark.sql.adaptive.enabled"] == "true"), where


# ---- rows of one log, without Spark --------------------------------------------------------

@pytest.mark.parametrize("entry", LOGS, ids=[entry["path"] for entry in LOGS])
def test_rows_of_each_committed_log_match_truth(entry):
    path = str(SAMPLE_PLANS / entry["path"])
    rows = rows_of_log(path)
    assert all(set(row) == set(COLUMN_NAMES) for row in rows)
    assert all(row["source"] == path and row["error"] == "" for row in rows)
    _check_labelled(rows, entry, entry["path"])


def test_rows_of_bytes_are_the_rows_of_the_files():
    """What binaryFile hands an executor (the bytes, a rolling log's parts in order) reads as
    the files do."""
    for entry in LOGS:
        if entry["codec"] is None and entry["layout"] == "single":
            continue
        path = str(SAMPLE_PLANS / entry["path"])
        if os.path.isdir(path):
            layout, names = folder_parts(path, sorted(os.listdir(path)))
            parts = [(os.path.join(path, name), Path(path, name).read_bytes()) for name in names]
        else:
            layout, parts = "file", [(path, Path(path).read_bytes())]
        assert rows_of_bytes(path, layout, parts) == rows_of_log(path), entry["path"]


def test_what_is_not_an_event_log_is_one_error_row(tmp_path):
    garbage = tmp_path / "garbage.zstd"
    garbage.write_bytes(os.urandom(4096))
    damaged = tmp_path / "damaged.lz4"
    damaged.write_bytes(GARBAGE)
    text = tmp_path / "notes.txt"
    text.write_text("just text\n")
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    history = str(SAMPLE_PLANS / HISTORY["path"])
    for path, says in ((garbage, "not an event log"), (text, "not an event log"),
                       (empty, "empty"), (history, "History Server SQL JSON"),
                       (damaged, "lz4 block header is damaged"),
                       (tmp_path / "gone", "no such file")):
        rows = rows_of_log(str(path))
        assert len(rows) == 1 and rows[0]["source"] == str(path)
        assert rows[0]["error"].startswith(f"{path}: ") and says in rows[0]["error"]
        assert all(rows[0][name] is None for name in COLUMN_NAMES
                   if name not in ("source", "error"))
        if "gone" in str(path):
            assert rows_of_bytes(str(path), "file", [(str(path), b"")])[0]["error"]
        else:  # the bytes as binaryFile hands them say what the file says
            assert rows_of_bytes(str(path), "file", [(str(path), Path(path).read_bytes())]) \
                == rows


def test_a_log_damaged_part_way_keeps_what_came_before(tmp_path):
    """A rolling log whose second part is garbage: the executions of the first part, then one
    error row naming the damaged file."""
    entry = next(e for e in LOGS if e["layout"] == "rolling")
    folder = tmp_path / Path(entry["path"]).name
    shutil.copytree(SAMPLE_PLANS / entry["path"], folder)
    second = sorted(folder.glob("events_2_*"))[0]
    data = bytearray(second.read_bytes())
    data[len(data) // 2:] = os.urandom(len(data) - len(data) // 2)
    second.write_bytes(bytes(data))
    rows = rows_of_log(str(folder))
    good, bad = rows[:-1], rows[-1]
    _check_labelled(good, entry, "rolling")
    assert all(row["error"] == "" for row in good)
    assert str(second) in bad["error"] and bad["app_id"] == entry["app_id"]
    assert bad["execution_id"] is None


def test_a_log_without_sql_is_one_error_row(tmp_path):
    source = (SAMPLE_PLANS / LOGS[0]["path"]).read_text().splitlines(keepends=True)
    no_sql = tmp_path / "no_sql.json"
    no_sql.write_text("".join(line for line in source if "SparkListenerSQL" not in line))
    rows = rows_of_log(str(no_sql))
    assert len(rows) == 1 and "no SQL execution" in rows[0]["error"]
    assert rows[0]["app_id"] == LOGS[0]["app_id"]


# ---- log units: names only -----------------------------------------------------------------

def _tree(root: Path) -> None:
    rolling = next(e for e in LOGS if e["layout"] == "rolling")
    shutil.copytree(SAMPLE_PLANS / rolling["path"], root / "apps" / Path(rolling["path"]).name)
    (root / "apps" / "deep" / "er").mkdir(parents=True)
    shutil.copy(SAMPLE_PLANS / LOGS[0]["path"], root / "apps" / "deep" / "er" / "local-1")
    shutil.copy(SAMPLE_PLANS / LOGS[1]["path"], root / "apps" / "local-2.inprogress")
    (root / "apps" / ".local-2.crc").write_text("x")
    (root / "apps" / "_SUCCESS").write_text("")
    (root / "apps" / "appstatus_local-3").write_text("")
    (root / "apps" / "garbage").write_text("?")
    (root / "empty").mkdir()


def test_units_of_folders_and_globs(tmp_path):
    _tree(tmp_path)
    units = expand_units([str(tmp_path / "apps")], LocalFiles())
    names = [os.path.relpath(unit.source, tmp_path) for unit in units]
    rolling = next(unit for unit in units if unit.layout == "rolling")
    assert names == sorted(names) and len(units) == 4
    assert {"apps/deep/er/local-1", "apps/local-2.inprogress", "apps/garbage"} < set(names)
    assert [Path(part).name.split("_")[1] for part in rolling.parts] == ["1", "2"]
    # Files found in the folder are skipped if no event log; a rolling log's folder never is.
    assert [unit.found for unit in units] == [unit.layout == "file" for unit in units]
    assert rolling.sizes == tuple(os.path.getsize(part) for part in rolling.parts)
    assert [u.source for u in expand_units([str(tmp_path / "apps" / "*.inprogress")],
                                           LocalFiles())] == [str(tmp_path / "apps" /
                                                                  "local-2.inprogress")]
    named = expand_units([str(tmp_path / "apps" / "garbage"), str(tmp_path / "apps" / "g*")],
                         LocalFiles())
    assert [unit.found for unit in named] == [False, False]  # named, or matched: error rows
    for wrong, says in (("nothing", "no such file"), ("apps/*.zstd", "matches no file"),
                        ("empty", "no Spark event log")):
        with pytest.raises(InspectError, match=says):
            expand_units([str(tmp_path / wrong)], LocalFiles())


# ---- the job on Spark ----------------------------------------------------------------------

#: Files beside the logs that are no event logs: found in a folder, skipped and counted (as
#: `diff` passes them over: text that is not events, an empty file).
NOT_LOGS = {"README.txt": b"Event logs of the nightly jobs.\n",
            "sizes.csv": b"app,bytes\nlocal-1,2048\n",
            "local-3.inprogress": b""}
#: An lz4 stream damaged at its start: a log that cannot be read, an error row wherever it is.
GARBAGE = b"LZ4Block" + bytes(range(200))
#: One log of each Spark line, layout and codec: a small fleet for the runs that start Spark.
SAMPLER = list({(e["spark_version"], e["layout"], e["codec"]): e for e in LOGS[::-1]}
               .values())


def place_logs(root: Path, entries, named=None):
    """Copies of the logs of `entries` in the folder `root`, each Spark line in its own
    sub-folder (as a spark.eventLog.dir holds them), and the NOT_LOGS beside them; returns
    {source: manifest entry}, the sources named as `named(path)` does (default: str)."""
    placed = {}
    for entry in entries:
        source = SAMPLE_PLANS / entry["path"]
        folder = root / f"spark-{entry['spark_version']}"
        folder.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            target = folder / source.name
            shutil.copytree(source, target)
        else:
            target = folder / f"{entry['scenario']}__{source.name}"
            shutil.copy(source, target)
        placed[(named or str)(target)] = entry
    for name, data in NOT_LOGS.items():
        (root / name).write_bytes(data)
    return placed


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Every committed log in one folder, with NOT_LOGS and a damaged log (`damaged.lz4`)
    beside them: (root, {source: entry})."""
    root = tmp_path_factory.mktemp("fleet") / "logs"
    placed = place_logs(root, LOGS)
    (root / "damaged.lz4").write_bytes(GARBAGE)
    return root, placed


def check_table(rows, placed, errors=()):
    """The table's rows: those of each placed log against its truth, one error row for each
    of `errors` (files that cannot be read as event logs), nothing else."""
    by_source = {}
    for row in rows:
        by_source.setdefault(row["source"], []).append(row)
    assert set(by_source) == set(placed) | set(errors)
    for source in errors:
        assert len(by_source[source]) == 1 and by_source[source][0]["error"], source
    for source, entry in placed.items():
        assert all(row["error"] == "" for row in by_source[source]), source
        _check_labelled(by_source[source], entry, source)


def csv_rows(folder):
    (found,) = glob.glob(os.path.join(folder, "part-*.csv"))
    types = dict((name, kind) for name, kind in __import__(
        "aqe_inspect.fleet.table", fromlist=["COLUMNS"]).COLUMNS)
    with open(found, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        for name, value in row.items():
            if value == "" and name != "error":
                row[name] = None
            elif types[name] in ("int", "bigint"):
                row[name] = int(value)
            elif types[name] == "boolean":
                row[name] = value == "true"
    return rows


@pytest.mark.spark
def test_fleet_table_row_by_row_against_truth(spark, fleet, tmp_path):
    _, session = spark
    root, placed = fleet
    named = tmp_path / "given" / "named.lz4"  # no event log, named: an error row
    named.parent.mkdir()
    named.write_bytes(b"not an event log\n")
    output = tmp_path / "table"
    skipped = []
    rows = run_fleet([str(root), str(named)], str(output), "csv", session=session,
                     progress=False, skipped=skipped)
    check_table(rows, placed, [str(root / "damaged.lz4"), str(named)])
    assert rows[-1]["source"] == str(named) and "not an event log" in rows[-1]["error"]
    assert skipped == sorted(str(root / name) for name in NOT_LOGS)
    assert len(rows) > len(placed) + 1  # the rolling logs' fillers, other executions
    written = csv_rows(output)
    assert written == [{name: row[name] if row[name] is not None or name == "error" else None
                        for name in COLUMN_NAMES} for row in rows]
    # A re-run over the same output replaces it whole, and leaves nothing beside it.
    again = run_fleet([str(root), str(named)], str(output), "csv", session=session,
                      progress=False)
    assert again == rows and csv_rows(output) == written
    assert sorted(os.listdir(tmp_path)) == ["given", "table"]


@pytest.mark.spark
def test_fleet_through_binary_file_reads_the_same(spark, fleet, tmp_path):
    """URIs go through binaryFile (the rolling parts grouped between executors): the same
    table as by path, the same files skipped, the sources named as Hadoop names them."""
    _, session = spark
    root, placed = fleet
    output = tmp_path
    empty = tmp_path / "given" / "empty.log"  # named: an error row (binaryFile omits it)
    empty.parent.mkdir()
    empty.write_bytes(b"")
    skipped_by_path, skipped_by_uri = [], []
    by_path = run_fleet([str(root), str(empty)], str(output / "by_path"), "parquet",
                        session=session, progress=False, skipped=skipped_by_path)
    uri = run_fleet([f"file:{root}", f"file:{empty}"], f"file:{output}/by_uri", "parquet",
                    session=session, progress=False, skipped=skipped_by_uri)
    def local_path(value):
        for folder in (root, tmp_path):
            value = value.replace(f"file:{folder}", str(folder))
        return value

    local = [{name: local_path(value) if isinstance(value, str) else value
              for name, value in row.items()} for row in uri]
    assert local == by_path
    check_table(by_path, placed, [str(root / "damaged.lz4"), str(empty)])
    assert "the file is empty" in by_path[-1]["error"]
    assert [path.replace(f"file:{root}", str(root)) for path in skipped_by_uri] == \
        skipped_by_path == sorted(str(root / name) for name in NOT_LOGS)
    read = session.read.parquet(str(output / "by_path")).collect()
    assert sorted(map(tuple, read), key=repr) == sorted(
        (tuple(row[name] for name in COLUMN_NAMES) for row in by_path), key=repr)


def _cut_before_its_application(tmp_path):
    """A real zstd log cut 40 bytes in (inside its first frame): nothing of it can be read."""
    entry = next(e for e in LOGS if e["codec"] == "zstd" and e["layout"] == "single")
    cut = tmp_path / "cut.zstd"
    cut.write_bytes((SAMPLE_PLANS / entry["path"]).read_bytes()[:40])
    return cut


def test_nothing_read_is_what_diff_says_and_no_sql_is_a_row(tmp_path):
    """Rows with no execution and no application (a log cut before its application started)
    are nothing to judge: the scan's error is the first row's, the line `diff` prints; a log
    whose application ran no SQL is a row naming the application, a table worth writing."""
    cut = _cut_before_its_application(tmp_path)
    rows = rows_of_log(str(cut))
    assert len(rows) == 1 and rows[0]["app_id"] is None
    said = subprocess.run([*AQE_INSPECT, "diff", str(cut)], capture_output=True, text=True)
    assert said.returncode == 2 and said.stdout == ""
    error = nothing_read([str(cut)], rows, [])
    assert error is not None and f"aqe-inspect: error: {error}\n" == said.stderr
    assert "no Spark application or SQL execution could be read" in str(error)
    assert "; 1 other event log cannot be read either" in str(
        nothing_read([str(tmp_path)], rows + rows, []))
    source = (SAMPLE_PLANS / LOGS[0]["path"]).read_text().splitlines(keepends=True)
    no_sql = tmp_path / "no_sql.json"
    no_sql.write_text("".join(line for line in source if "SparkListenerSQL" not in line))
    assert nothing_read([str(tmp_path)], rows + rows_of_log(str(no_sql)), []) is None


def _folder_of_non_logs(root: Path) -> Path:
    root.mkdir()
    for name, data in NOT_LOGS.items():
        (root / name).write_bytes(data)
    return root


@pytest.mark.spark
def test_a_folder_of_non_logs_is_exit_2_as_diff_says(spark, tmp_path):
    """The folder `diff` refuses (no event log in it, its files skipped) is no table of
    nothing: the scan stops with diff's line and writes no table; a folder whose only log is
    cut before its application started, the same. Beside a readable log, both are passed
    over as before (skipped, an error row)."""
    _, session = spark
    folder = _folder_of_non_logs(tmp_path / "not-logs")
    said = subprocess.run([*AQE_INSPECT, "diff", str(folder)], capture_output=True, text=True)
    assert said.returncode == 2
    diff_error = said.stderr.removeprefix("aqe-inspect: error: ").strip()
    output = tmp_path / "table"
    skipped = []
    with pytest.raises(InspectError) as raised:
        run_fleet([str(folder)], str(output), "csv", session=session, progress=False,
                  skipped=skipped)
    # diff tells an empty file apart from text that is not events; the fleet counts both.
    assert str(raised.value).startswith(diff_error.split("; skipped")[0] + "; skipped 3 files")
    assert all(name in str(raised.value) for name in NOT_LOGS)
    assert skipped == sorted(str(folder / name) for name in NOT_LOGS)
    assert not output.exists() and sorted(os.listdir(tmp_path)) == ["not-logs"]

    cut_folder = tmp_path / "cut"
    cut_folder.mkdir()
    shutil.move(str(_cut_before_its_application(tmp_path)), cut_folder / "app.zstd")
    with pytest.raises(InspectError, match="no Spark application or SQL execution could be "
                                           "read: no event of a Spark application in it"):
        run_fleet([str(cut_folder)], str(output), "csv", session=session, progress=False)
    assert not output.exists()

    log = folder / "app-1.json"
    shutil.copy(SAMPLE_PLANS / LOGS[0]["path"], log)
    rows = run_fleet([str(folder), str(cut_folder)], str(output), "csv", session=session,
                     progress=False)
    assert {row["source"] for row in rows} == {str(log), str(cut_folder / "app.zstd")}
    assert csv_rows(output)


# ---- the command, as a user runs it -------------------------------------------------------------

def spark_env(tmp_path: Path, **more: str) -> dict:
    """The environment a Spark the tests start runs in: on loopback, no web UI, a fresh cache
    (the grammar's compiled tables built anew, as on a first run)."""
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", XDG_CACHE_HOME=str(tmp_path / "cache"),
               PYSPARK_SUBMIT_ARGS="--conf spark.ui.enabled=false pyspark-shell")
    env.pop("PYTHONPATH", None)
    env.update(more)
    return env


@pytest.mark.spark
def test_workers_never_import_a_source_tree_in_the_working_directory(tmp_path):
    """`python -m pyspark.daemon` puts a Python worker's working directory first on its
    sys.path, and in local mode that is the directory the command was run from: run from a
    checkout, the workers imported its source tree, not the installed package (every row was
    `internal error (ModuleNotFoundError: No module named 'aqe_inspect.grammars')`). Here the
    working directory holds an `aqe_inspect` that fails on import, and the logs by a relative
    path: every log is read, the files that are no event logs skipped and counted."""
    here = tmp_path / "checkout"
    (here / "aqe_inspect").mkdir(parents=True)
    (here / "aqe_inspect" / "__init__.py").write_text(
        "raise ImportError('the source tree in the working directory was imported')\n")
    entries = [entry for entry in SAMPLER if entry["spark_version"] == "4.3.0"]
    placed = place_logs(here / "logs", entries, lambda path: os.path.relpath(path, here))
    result = subprocess.run(
        [*AQE_INSPECT, "fleet", "logs", "--output", "out", "--format", "csv",
         "--master", "local[2]"], cwd=here, env=spark_env(tmp_path, COLUMNS="1000"),
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    check_table(csv_rows(here / "out"), placed)
    headline = result.stdout.splitlines()[0]
    assert headline.endswith(f", {len(NOT_LOGS)} files skipped (not event logs)"), headline
    assert f"note: skipped {len(NOT_LOGS)} files found in folders, not Spark event logs" \
        in result.stdout
