"""Two `fleet` tables compared: per application name and execution description, how often
each rewrite happened before and after (a platform team's upgrade report).

A table is what `aqe-inspect fleet --output DIR` wrote: a folder of CSV or Parquet part
files (or one such file), one row per application and SQL execution, the rewrite counts in
the columns named after the kinds (`smj_to_bhj`). Rows are read one at a time (CSV through
the standard library, Parquet in record batches through pyarrow, which is needed only for
Parquet): memory holds one small record per group (application name and description), never
the rows. Rows with an `error` (a file the scan could not read) are counted and left out.

Any table the fleet wrote reads back: a CSV cell may be as long as its file (a description
holding a long SQL text), beyond the standard library's default field limit. A cell that is
not what the fleet writes (a count that is not a whole number from 0 to `MOST_COUNT`: `-1`,
`1.5`, `1e999`, `nan`; a row of more or fewer cells than the header) is one error naming the
file, the line (CSV) or row (Parquet) and the column.
"""

from __future__ import annotations

import csv
import math
import os
import re
import sys
import threading
from typing import Dict, Iterator, List, Optional, Tuple

from ..errors import InspectError, printable

#: The columns a table must hold besides the rewrite kinds'.
KEY_COLUMNS = ("app_name", "description")
#: Text the fleet's CSV writer prefixed with `'` so that spreadsheets do not run it.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
#: A description longer than this groups by its first this many characters (SQL texts).
DESCRIPTION_KEY_CHARS = 2000
BATCH_ROWS = 8192
#: The largest count a cell may hold: the fleet table's count columns are Spark `int`s.
MOST_COUNT = 2 ** 31 - 1
#: A count as text: digits (a whole number written `2.0` too, as some tools write integers).
_COUNT_TEXT = re.compile(r"[0-9]+(?:\.0*)?")
#: The CSV field limit is the csv module's, for the whole process: it is raised (never
#: lowered) under this lock, so that two tables read at once never lower it for each other.
_FIELD_LIMIT_LOCK = threading.Lock()
#: The most the csv module's field limit can be set to on every platform (a C long).
_MOST_FIELD_LIMIT = 2 ** 31 - 1


def table_files(path: str) -> Optional[Tuple[str, List[str]]]:
    """("csv" | "parquet", its files) when `path` is a fleet table, else None: a `.csv` or
    `.parquet` file, or a folder whose data files (Spark's `part-*`, hidden and `_SUCCESS`
    files aside) are all one of the two."""
    if os.path.isfile(path):
        lowered = path.lower()
        for kind in ("csv", "parquet"):
            if lowered.endswith("." + kind):
                return kind, [path]
        return None
    if not os.path.isdir(path):
        return None
    try:
        names = sorted(name for name in os.listdir(path)
                       if not name.startswith((".", "_")))
    except OSError:
        return None
    files = [os.path.join(path, name) for name in names
             if os.path.isfile(os.path.join(path, name))]
    for kind in ("csv", "parquet"):
        if files and all(name.lower().endswith("." + kind) for name in files):
            return kind, files
    return None


def _uncell(value: Optional[str]) -> str:
    if value is None:
        return ""
    if value.startswith("'") and value[1:].startswith(_FORMULA_STARTS):
        return value[1:]
    return value


class _CellError(ValueError):
    """A cell that is not what the fleet writes; the reader says where."""


def _count(value: object, column: str) -> int:
    """A count cell as its number: empty (or null) is 0; else a whole number from 0 to
    `MOST_COUNT` (CSV text, or Parquet's integer or integral float)."""
    if value is None or value == "":
        return 0
    if isinstance(value, str):
        text = value.strip(" ")
        if len(text) <= 40 and _COUNT_TEXT.fullmatch(text):
            number = int(text.split(".")[0])
            if number <= MOST_COUNT:
                return number
    elif isinstance(value, int) and not isinstance(value, bool):
        if 0 <= value <= MOST_COUNT:
            return value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        if 0 <= value <= MOST_COUNT:
            return int(value)
    shown = value if isinstance(value, str) else f"{value!r} ({type(value).__name__})"
    raise _CellError(f"column {column}: expected a count (a whole number from 0 to "
                     f"{MOST_COUNT}), found {printable(str(shown))[:60]!r}")


def _text(value: object, column: str) -> str:
    """A text cell (application name, description, error): null is empty."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _CellError(f"column {column}: expected text, found "
                         f"{printable(repr(value))[:60]} ({type(value).__name__})")
    return _uncell(value)


def _check_columns(names, path: str, columns: Tuple[str, ...]) -> None:
    missing = [column for column in (*KEY_COLUMNS, *columns) if column not in names]
    if missing:
        raise InspectError(f"not a fleet table (aqe-inspect fleet --output): no column "
                           f"{', '.join(missing)}", source=path)


def _raise_field_limit(size: int) -> None:
    """Let the csv module read a cell as long as a file of `size` bytes (no cell is longer,
    in characters, than its file in UTF-8 bytes)."""
    wanted = min(max(size, 1), _MOST_FIELD_LIMIT)
    with _FIELD_LIMIT_LOCK:
        if csv.field_size_limit() < wanted:
            csv.field_size_limit(wanted)


#: A row as a reader gives it: its cells by column, and where it is (for an error): the line
#: it starts on (CSV), or None and `row N: ` (Parquet).
Located = Tuple[Dict[str, object], Optional[int], str]


def _csv_rows(path: str, columns: Tuple[str, ...]) -> Iterator[Located]:
    """Each row of a CSV table, and the line it starts on."""
    import io

    from ..sources.opening import open_file

    line = 1
    try:
        with io.TextIOWrapper(open_file(path), encoding="utf-8", newline="") as handle:
            _raise_field_limit(os.fstat(handle.fileno()).st_size)
            reader = csv.reader(handle, strict=True)  # as RFC 4180 and Spark write it
            names = next(reader, None) or []
            _check_columns(names, path, columns)
            while True:
                line = reader.line_num + 1
                cells = next(reader, None)
                if cells is None:
                    return
                if not cells:  # a blank line
                    continue
                if len(cells) != len(names):
                    raise InspectError(f"expected {len(names)} cells as the header has, "
                                       f"found {len(cells)}", source=path, line=line)
                yield dict(zip(names, cells)), line, ""
    except UnicodeDecodeError:
        raise InspectError("cannot read: not UTF-8 text", source=path) from None
    except csv.Error as error:
        raise InspectError(f"cannot read the CSV table: {error}", source=path,
                           line=line) from None
    except OSError as error:
        raise InspectError(f"cannot read: {error.strerror or error}", source=path) from None


def _parquet_rows(path: str, columns: Tuple[str, ...]) -> Iterator[Located]:
    """Each row of a Parquet table, and which row it is."""
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        raise InspectError("reading a Parquet fleet table needs pyarrow (pip install pyarrow), "
                           "or write the table as CSV (aqe-inspect fleet --format csv)",
                           source=path) from None
    from ..sources.opening import open_file

    try:
        with open_file(path) as handle:
            table = parquet.ParquetFile(handle)
            names = set(table.schema_arrow.names)
            _check_columns(names, path, columns)
            wanted = [c for c in (*KEY_COLUMNS, "error", *columns) if c in names]
            number = 0
            for batch in table.iter_batches(batch_size=BATCH_ROWS, columns=wanted):
                for row in batch.to_pylist():
                    number += 1
                    yield row, None, f"row {number}: "
    except InspectError:
        raise
    except OSError as error:
        raise InspectError(f"cannot read the Parquet table: {error}", source=path) from None
    except Exception as error:  # noqa: BLE001 - pyarrow's errors for a damaged file vary
        raise InspectError(f"cannot read the Parquet table: {type(error).__name__}: "
                           f"{' '.join(str(error).split())[:200]}", source=path) from None


def read_groups(path: str, kinds: Tuple[str, ...]) -> Tuple[
        Dict[Tuple[str, str], List[int]], int, int]:
    """The table's groups: (app name, description) -> [executions, then per kind executions
    holding it and rewrites of it]; the rows read and the rows with an error."""
    found = table_files(path)
    if found is None:  # pragma: no cover - the caller asked table_files first
        raise InspectError("not a fleet table", source=path)
    kind, files = found
    columns = tuple(k.replace("-", "_") for k in kinds)
    groups: Dict[Tuple[str, str], List[int]] = {}
    rows = errors = 0
    reader = _csv_rows if kind == "csv" else _parquet_rows
    for file in files:
        for row, line, label in reader(file, columns):
            rows += 1
            try:
                if _text(row.get("error"), "error"):
                    errors += 1
                    continue
                key = (sys.intern(_text(row.get("app_name"), "app_name")),
                       _text(row.get("description"), "description")[:DESCRIPTION_KEY_CHARS])
                counts = [_count(row.get(column), column) for column in columns]
            except _CellError as error:
                raise InspectError(f"{label}{error}", source=file, line=line) from None
            figures = groups.get(key)
            if figures is None:
                figures = groups[key] = [0] * (1 + 2 * len(columns))
            figures[0] += 1
            for index, count in enumerate(counts):
                if count > 0:
                    figures[1 + 2 * index] += 1
                    figures[2 + 2 * index] += count
    if not rows:
        raise InspectError("the fleet table holds no row", source=path)
    return groups, rows, errors
