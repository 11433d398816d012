"""`aqe-inspect compare` of two fleet tables, on what a table may hold: any CSV the fleet
writes reads back (a description longer than the csv module's default field limit, 131,072
characters), and a cell that is not what the fleet writes (a count `1e999`, `-1`, `1.5`, a
text where Parquet holds a number) is one line naming the file, its line and the column, exit
2, never a traceback.

The rows are real: the fleet's own row builder (`rows_of_log`, what its executors run) over
the compare scenarios' event logs (sample_plans/compare), written as Spark's CSV writer writes
them; only the hostile part (the padded description, the bad cell) is made here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, List

import pytest

from .test_compare import _log, _renamed_copy, compare_json, run

#: The csv module's default field limit, which a long description used to exceed.
CSV_FIELD_LIMIT = 131_072
#: The description of the execution whose broadcast `bhj_off` loses.
LABEL = "aqe-compare:smj_to_bhj"


def _rows(log: str) -> List[Dict[str, object]]:
    from aqe_inspect.fleet.rows import rows_of_log

    rows = rows_of_log(log)
    assert rows and not any(row["error"] for row in rows), rows[:1]
    return rows


def write_table(path: Path, rows: List[Dict[str, object]]) -> Path:
    """The rows as `aqe-inspect fleet --format csv` writes them: Spark's CSV writer with a
    header, null as an empty cell, booleans in lower case, a cell quoted when it holds a comma,
    a quote or a line break (CR or LF), its quotes doubled (`escape "`), lines ended by LF;
    text a spreadsheet would run starts with `'` (`csv_cell`)."""
    from aqe_inspect.fleet.table import COLUMN_NAMES, csv_cell

    def cell(value: object) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        text = str(csv_cell(value))
        if any(char in text for char in ',"\r\n'):
            return '"' + text.replace('"', '""') + '"'
        return text

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(",".join(COLUMN_NAMES) + "\n")
        for row in rows:
            handle.write(",".join(cell(row[name]) for name in COLUMN_NAMES) + "\n")
    return path


@pytest.fixture(scope="module")
def long_logs(tmp_path_factory) -> Dict[str, str]:
    """The 4.3.0 baseline and bhj_off runs, the description of the broadcast's execution
    padded past the field limit (a multi-line SQL text, with commas and quotes)."""
    folder = tmp_path_factory.mktemp("long")
    long = LABEL + " -- " + '"SELECT a, b\\nFROM t"; ' * (CSV_FIELD_LIMIT // 20 + 100)
    assert len(long) > CSV_FIELD_LIMIT + 1000
    escaped = json.dumps(long)[1:-1]  # as the JSON of the event log holds it
    return {run_: _renamed_copy(_log("4.3.0", run_), folder / f"{run_}.json", LABEL, escaped)
            for run_ in ("baseline", "bhj_off")}


@pytest.mark.parametrize("long_side", ["old", "new", "both"])
def test_a_description_longer_than_the_csv_field_limit_reads_back(long_logs, long_side,
                                                                  tmp_path):
    tables = {}
    for side, run_ in (("old", "baseline"), ("new", "bhj_off")):
        rows = _rows(long_logs[run_] if long_side in (side, "both") else _log("4.3.0", run_))
        longest = max(len(str(row["description"] or "")) for row in rows)
        # the fleet's row holds the whole description, past the csv module's default limit
        assert (longest > CSV_FIELD_LIMIT) == (long_side in (side, "both"))
        tables[side] = write_table(tmp_path / side / "part-00000.csv", rows)
    document, code = compare_json(str(tables["old"].parent), str(tables["new"].parent))
    groups = {(g["app_name"], g["description"][:len(LABEL)]): g for g in document["groups"]}
    if long_side == "both":  # the same description on both sides: one group, the broadcast lost
        assert code == 1
        group = next(g for (app, label), g in groups.items() if label == LABEL)
        assert group["executions"] == {"old": 1, "new": 1}
        assert group["rates"]["old"]["smj-to-bhj"]["rate"] == 1.0
        assert group["rates"]["new"]["smj-to-bhj"]["rate"] == 0.0
        assert group["lost"]["smj-to-bhj"] == 100
        assert len(document["groups"]) == 8 and not document["unmatched"]["old"]
    else:  # a long description on one side only: that execution is in one table only
        assert len(document["groups"]) == 7
        alone = document["unmatched"][long_side]
        assert [g["description"][:len(LABEL) + 4] for g in alone] == [LABEL + " -- "]
        assert [g["description"] for g in document["unmatched"][
            "new" if long_side == "old" else "old"]] == [LABEL]
    assert document["old"]["executions"] == document["new"]["executions"] == 8


def test_a_long_description_reads_back_as_the_cli_prints_it(long_logs, tmp_path):
    old = write_table(tmp_path / "old.csv", _rows(long_logs["baseline"]))
    new = write_table(tmp_path / "new.csv", _rows(long_logs["bhj_off"]))
    assert len(old.read_text("utf-8")) > CSV_FIELD_LIMIT
    for name in ("text", "markdown", "github"):
        done = run("compare", str(old), str(new), "--format", name)
        assert done.returncode == 1, done.stderr
        assert "smj-to-bhj" in done.stdout and "Traceback" not in done.stderr


# ---- malformed cells: one line naming the file, the line and the column, exit 2 -------------

BAD_COUNTS = ["1e999", "inf", "-inf", "nan", "NaN", "-1", "1.5", "99999999999999999999999",
              "2147483648", "1e3", "0x10", "+1", "one", "１", "1_000", "- 1", "9" * 5000,
              "\u202e1", "=1+1", "1,5"]


@pytest.fixture(scope="module")
def real_rows() -> Dict[str, List[Dict[str, object]]]:
    return {run_: _rows(_log("4.3.0", run_)) for run_ in ("baseline", "bhj_off")}


def _with_cell(rows, index: int, column: str, value: object):
    rows = [dict(row) for row in rows]
    rows[index][column] = value
    return rows


@pytest.mark.parametrize("value", BAD_COUNTS)
@pytest.mark.parametrize("side", ["old", "new"])
def test_a_malformed_count_is_one_line_naming_file_line_and_column(real_rows, tmp_path, value,
                                                                   side):
    index = 3
    tables = {}
    for which, run_ in (("old", "baseline"), ("new", "bhj_off")):
        rows = real_rows[run_]
        if which == side:
            rows = _with_cell(rows, index, "coalesced", value)
        tables[which] = write_table(tmp_path / f"{which}.csv", rows)
    out = tmp_path / "report.md"
    done = run("compare", str(tables["old"]), str(tables["new"]), "-f", "markdown", "-o",
               str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    # the header is line 1; no cell of these rows holds a line break
    assert lines[0].startswith(f"aqe-inspect: error: {tables[side]}:{index + 2}: column "
                               "coalesced: expected a count"), lines[0]
    assert len(lines[0]) < 400 and "\u202e" not in lines[0]
    assert not out.exists() and done.stdout == ""


def test_a_row_of_more_or_fewer_cells_than_the_header_is_one_line(real_rows, tmp_path):
    good = write_table(tmp_path / "good.csv", real_rows["baseline"])
    text = good.read_text("utf-8").splitlines(True)
    for name, line in (("short", text[4].rstrip("\n").rsplit(",", 1)[0] + "\n"),
                       ("long", text[4].rstrip("\n") + ",7\n")):
        bad = tmp_path / f"{name}.csv"
        bad.write_text("".join(text[:4] + [line] + text[5:]), encoding="utf-8")
        done = run("compare", str(good), str(bad))
        assert done.returncode == 2
        assert done.stderr.startswith(f"aqe-inspect: error: {bad}:5: expected ")
        assert len(done.stderr.splitlines()) == 1


def test_a_csv_damaged_mid_record_names_its_line(real_rows, tmp_path):
    good = write_table(tmp_path / "good.csv", real_rows["baseline"])
    text = good.read_text("utf-8").splitlines(True)
    bad = tmp_path / "bad.csv"  # a quoted cell never closed: Python's csv reads to the end
    bad.write_text("".join(text[:6]) + '"unclosed,' + "".join(text[6:]), encoding="utf-8")
    done = run("compare", str(good), str(bad))
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert re.match(rf"aqe-inspect: error: {re.escape(str(bad))}:\d+: cannot read the CSV "
                    "table: ", line), line


def test_well_formed_counts_read_as_their_numbers(real_rows, tmp_path):
    """What the fleet writes (digits), and integral decimals (`2.0`, as tools that read the
    table into floats write it back), count; 2147483647 (Spark's largest int) too."""
    from aqe_inspect.compare import compare

    base = real_rows["baseline"]
    labels = [row["description"] for row in base]
    for value, number in (("0", 0), ("7", 7), ("2.0", 2), ("3.", 3), (" 4 ", 4), ("", 0),
                          ("2147483647", 2147483647)):
        rows = _with_cell(base, 2, "skew_join", value)
        old = write_table(tmp_path / "old.csv", rows)
        result = compare(str(old), str(old))
        group = next(g for g in result.groups if g.description == labels[2])
        assert group.old["skew-join"].rewrites == number
        assert group.old["skew-join"].executions == int(number > 0)


def test_fuzzed_cells_give_a_count_or_one_located_error(real_rows, tmp_path):
    """Any text in any count cell of a real table: the count it writes, or an InspectError
    naming the file, the line and the column (never another exception)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from aqe_inspect.compare import compare
    from aqe_inspect.errors import InspectError
    from aqe_inspect.fleet.table import KIND_COLUMNS

    base = real_rows["bhj_off"]
    good = write_table(tmp_path / "good.csv", base)
    cells = st.one_of(st.sampled_from(BAD_COUNTS), st.text(max_size=40),
                      st.integers(min_value=-2 ** 70, max_value=2 ** 70).map(str),
                      st.floats(allow_nan=True, allow_infinity=True).map(repr),
                      st.from_regex(r"\A[0-9]{1,12}(\.[0-9]{0,3})?\Z"))

    @settings(max_examples=300, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(cells, st.sampled_from(KIND_COLUMNS), st.integers(0, len(base) - 1))
    def one(value, column, index):
        rows = _with_cell(base, index, column, value)
        bad = write_table(tmp_path / "fuzzed.csv", rows)
        valid = re.fullmatch(r" *([0-9]+)(\.0*)? *", value)
        number = int(valid.group(1)) if valid and len(value) <= 40 else None
        if value == "":
            number = 0
        for old, new in ((bad, good), (good, bad)):
            try:
                result = compare(str(old), str(new))
            except InspectError as error:
                assert number is None or number > 2 ** 31 - 1, (value, str(error))
                assert str(error).startswith(f"{bad}:{index + 2 + _breaks(rows, index)}: "
                                             f"column {column}: expected a count"), str(error)
                assert "\n" not in str(error)
                continue
            assert number is not None, value
            group = next(g for g in result.groups
                         if g.description == (rows[index]["description"] or ""))
            kind = column.replace("_", "-")
            counts = group.old if old == bad else group.new
            expected = sum(number if at == index else int(r[column] or 0)
                           for at, r in enumerate(rows)
                           if r["description"] == rows[index]["description"])
            assert counts[kind].rewrites == expected

    one()


def _breaks(rows, index: int) -> int:
    """The line breaks inside the cells of the rows before `index` (a quoted cell may hold
    one); none in these rows."""
    return sum(str(value).count("\n") for row in rows[:index] for value in row.values()
               if value is not None)


# ---- Parquet: the cells pyarrow gives, checked the same way ---------------------------------

def test_parquet_cells_of_the_wrong_type_or_range_are_one_line(real_rows, tmp_path):
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    from aqe_inspect.fleet.table import COLUMN_NAMES, KIND_COLUMNS

    base = real_rows["baseline"]

    def table(path, rows, types):
        columns = {name: [row[name] for row in rows] for name in COLUMN_NAMES
                   if name not in ("aqe_enabled",)}
        fields = [pyarrow.field(name, types.get(name, pyarrow.string() if name not in
                                                KIND_COLUMNS else pyarrow.int32()))
                  for name in columns]
        arrays = [pyarrow.array([None if v is None else (v if f.type != pyarrow.string()
                                                         else str(v)) for v in columns[f.name]],
                                type=f.type) for f in fields]
        parquet.write_table(pyarrow.Table.from_arrays(arrays, schema=pyarrow.schema(fields)),
                            str(path))
        return path

    good = table(tmp_path / "good.parquet", base, {})
    document, code = compare_json(str(good), str(good))
    assert code == 0 and len(document["groups"]) == 8
    for value, kind in ((float("inf"), pyarrow.float64()), (float("nan"), pyarrow.float64()),
                        (1.5, pyarrow.float64()), (-1, pyarrow.int64()),
                        (2 ** 40, pyarrow.int64())):
        rows = _with_cell(base, 3, "coalesced", value)
        bad = table(tmp_path / "bad.parquet", rows, {"coalesced": kind})
        done = run("compare", str(good), str(bad))
        assert done.returncode == 2, done.stdout
        [line] = done.stderr.splitlines()
        assert line.startswith(f"aqe-inspect: error: {bad}: row 4: column coalesced: "
                               "expected a count"), line
    rows = [dict(row, app_name=number) for number, row in enumerate(base)]
    bad = table(tmp_path / "bad.parquet", rows, {"app_name": pyarrow.int64()})
    done = run("compare", str(bad), str(good))
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith(f"aqe-inspect: error: {bad}: row 1: column app_name: expected "
                           "text"), line
    rows = _with_cell(base, 3, "coalesced", 2.0)  # an integral float counts
    doubles = table(tmp_path / "doubles.parquet", rows, {"coalesced": pyarrow.float64()})
    document, _ = compare_json(str(doubles), str(good))
    assert json.dumps(document)  # read, compared
