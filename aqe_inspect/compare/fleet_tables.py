"""Two `fleet` tables compared: per application name and execution description, how often
each rewrite happened before and after (a platform team's upgrade report).

A table is what `aqe-inspect fleet --output DIR` wrote: a folder of CSV or Parquet part
files (or one such file), one row per application and SQL execution, the rewrite counts in
the columns named after the kinds (`smj_to_bhj`). Rows are read one at a time (CSV through
the standard library, Parquet in record batches through pyarrow, which is needed only for
Parquet): memory holds one small record per group (application name and description), never
the rows. Rows with an `error` (a file the scan could not read) are counted and left out.
"""

from __future__ import annotations

import csv
import os
import sys
from typing import Dict, Iterator, List, Optional, Tuple

from ..errors import InspectError, printable

#: The columns a table must hold besides the rewrite kinds'.
KEY_COLUMNS = ("app_name", "description")
#: Text the fleet's CSV writer prefixed with `'` so that spreadsheets do not run it.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
#: A description longer than this groups by its first this many characters (SQL texts).
DESCRIPTION_KEY_CHARS = 2000
BATCH_ROWS = 8192


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


def _count(value, path: str, column: str) -> int:
    if value is None or value == "":
        return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            raise InspectError(f"column {column}: expected a count, found "
                               f"{printable(str(value))[:60]!r}", source=path) from None


def _check_columns(names, path: str, columns: Tuple[str, ...]) -> None:
    missing = [column for column in (*KEY_COLUMNS, *columns) if column not in names]
    if missing:
        raise InspectError(f"not a fleet table (aqe-inspect fleet --output): no column "
                           f"{', '.join(missing)}", source=path)


def _csv_rows(path: str, columns: Tuple[str, ...]) -> Iterator[Dict[str, object]]:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            _check_columns(reader.fieldnames or (), path, columns)
            for row in reader:
                yield row
    except UnicodeDecodeError:
        raise InspectError("cannot read: not UTF-8 text", source=path) from None
    except csv.Error as error:
        raise InspectError(f"cannot read the CSV table: {error}", source=path) from None
    except OSError as error:
        raise InspectError(f"cannot read: {error.strerror or error}", source=path) from None


def _parquet_rows(path: str, columns: Tuple[str, ...]) -> Iterator[Dict[str, object]]:
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        raise InspectError("reading a Parquet fleet table needs pyarrow (pip install pyarrow), "
                           "or write the table as CSV (aqe-inspect fleet --format csv)",
                           source=path) from None
    try:
        table = parquet.ParquetFile(path)
        names = set(table.schema_arrow.names)
        _check_columns(names, path, columns)
        wanted = [c for c in (*KEY_COLUMNS, "error", *columns) if c in names]
        for batch in table.iter_batches(batch_size=BATCH_ROWS, columns=wanted):
            yield from batch.to_pylist()
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
        for row in reader(file, columns):
            rows += 1
            if _uncell(row.get("error")):  # type: ignore[arg-type]
                errors += 1
                continue
            key = (sys.intern(_uncell(row.get("app_name"))),  # type: ignore[arg-type]
                   _uncell(row.get("description"))[:DESCRIPTION_KEY_CHARS])  # type: ignore
            figures = groups.get(key)
            if figures is None:
                figures = groups[key] = [0] * (1 + 2 * len(columns))
            figures[0] += 1
            for index, column in enumerate(columns):
                count = _count(row.get(column), file, column)
                if count > 0:
                    figures[1 + 2 * index] += 1
                    figures[2 + 2 * index] += count
    if not rows:
        raise InspectError("the fleet table holds no row", source=path)
    return groups, rows, errors
