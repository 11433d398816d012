"""The fleet job's tasks: the code Spark's Python workers run, shipped to them by value.

PySpark starts its Python workers with `python -m pyspark.daemon` (or `pyspark.worker`), and
`python -m` puts the worker's working directory first on `sys.path`. In local mode that is
the directory the command was run from: run from a checkout of aqe-inspect, a worker's
`import aqe_inspect` would find the source tree there, not the package installed for its
Python (and the tree is no package as installed: the wheel maps the top-level `grammars/` in
as `aqe_inspect.grammars`). So nothing of aqe_inspect may be imported to unpickle a task:

- `ship()` registers this module with PySpark's cloudpickle, so its functions are pickled by
  value (their code, not a reference to `aqe_inspect.fleet.tasks`);
- this module imports the standard library only, and what goes in and out of its tasks is
  plain tuples, dicts and strings (pickle names a class of aqe_inspect by its module);
- a task first takes the working directory `python -m` put first off `sys.path` (what
  PYTHONSAFEPATH does, which Python has from 3.11 only and PySpark does not set), then imports
  aqe_inspect as installed for the worker's Python (`_library`).

Files reach a task as absolute `file:` URIs (`local_uri`), made on the driver: a path
relative to the driver's directory means nothing in an executor running elsewhere.
"""

from __future__ import annotations

import os
import sys
from urllib.parse import quote_from_bytes, unquote_to_bytes, urlsplit

#: The first words of the error a task raises when the executors' Python has no aqe_inspect;
#: the driver finds them in the failed job's message (`import_failure`).
IMPORT_FAILED = "the executors' Python cannot import aqe_inspect"
_ADVICE = ("install aqe-inspect for the executors' Python (PYSPARK_PYTHON) on every node, or "
           "ship it as a packed virtualenv with --archives (docs/commands/fleet.md)")


def ship() -> None:
    """On the driver, before a job: this module's functions go to the workers by value."""
    try:
        from pyspark.cloudpickle import register_pickle_by_value
    except ImportError:  # pragma: no cover - PySpark 3.3's vendored cloudpickle 2.0
        from pyspark.cloudpickle.cloudpickle import register_pickle_by_value
    register_pickle_by_value(sys.modules[__name__])


def local_uri(path: str) -> str:
    """The `file:` URI of a local path, absolute (made on the driver, from its directory)."""
    return "file://" + quote_from_bytes(os.fsencode(os.path.abspath(path)))


def local_path(uri: str) -> str:
    """The path a `local_uri` names (any bytes of a file name survive the round trip)."""
    return os.fsdecode(unquote_to_bytes(urlsplit(uri).path))


def import_failure(error: BaseException) -> str:
    """The one line a task's import failure left in a failed job's message, or ''."""
    text = str(error)
    start = text.find(IMPORT_FAILED)
    return "" if start < 0 else text[start:].splitlines()[0].strip()


def _library():
    """aqe_inspect's `rows` and `table` modules, imported as installed for this Python."""
    if "aqe_inspect" not in sys.modules:  # the first task this worker runs
        _drop_working_directory()
    try:
        from aqe_inspect.fleet import rows, table
    except ImportError as error:
        raise ImportError(f"{IMPORT_FAILED} ({sys.executable}: {error}): {_ADVICE}") from None
    return rows, table


def _drop_working_directory() -> None:
    if sys.flags.isolated or getattr(sys.flags, "safe_path", False) or not sys.path:
        return  # started with -I, -P or PYTHONSAFEPATH: nothing was put first
    first = sys.path[0]
    try:
        if first == "" or os.path.samefile(first, os.getcwd()):
            del sys.path[0]
    except OSError:  # a first entry that is no folder, or a working directory gone
        pass


def _values(row, names, local: str, source: str) -> tuple:
    """A row as the tuple of its columns; its error names the file as the driver was given it
    (`source`), not by the absolute path the task opened."""
    error = row.get("error")
    if error and local != source:
        row = dict(row, error=error.replace(local, source))
    return tuple(row[name] for name in names)


# -- by path ----------------------------------------------------------------------------------

def read_paths(done, units):
    """Each unit's rows, its log opened by path: `units` of (index, source, uri, found); yields
    (index, row values), or (index, None) for a file `found` in a folder that is not an event
    log (skipped, as `diff` skips it)."""
    rows, table = _library()
    for index, source, uri, found in units:
        path = local_path(uri)
        if found and rows.is_skipped_file(path):
            yield index, None
        else:
            for row in rows.rows_of_log(path, source):
                yield index, _values(row, table.COLUMN_NAMES, path, source)
        done.add(1)


# -- by bytes (Spark's binaryFile source) ---------------------------------------------------------
# `lookup` is a broadcast of {"places": {file: (index, order)}, "units": {index: (source,
# layout, parts, found)}}: a file's unit and place among its parts, each unit's parts in order.

def read_single_bytes(lookup, done, records):
    """The rows of single-file units, from binaryFile's (path, content) records."""
    rows, table = _library()
    places, units = lookup.value["places"], lookup.value["units"]
    for record in records:
        place = places.get(record.path)
        if place is None:  # not a file of ours (cannot happen: binaryFile lists what it is given)
            continue
        source, _, parts, found = units[place[0]]
        content = record.content
        if found and rows.is_skipped_bytes(content, parts[0]):
            yield place[0], None
        else:
            for row in rows.rows_of_bytes(source, "file", [(parts[0], content)]):
                yield place[0], _values(row, table.COLUMN_NAMES, source, source)
        done.add(1)


def keyed_part(lookup, record):
    """A part of a rolling or Databricks log keyed by its unit: (index, (order, file, bytes))."""
    place = lookup.value["places"].get(record.path)
    return None if place is None else (place[0], (place[1], record.path, record.content))


def is_kept(item) -> bool:
    return item is not None


def read_grouped_bytes(lookup, done, item):
    """The rows of one rolling or Databricks log from its parts, brought together by unit."""
    rows, table = _library()
    index, parts = item
    source, layout, _, _ = lookup.value["units"][index]
    ordered = [(path, content) for _, path, content in sorted(parts, key=lambda p: p[0])]
    found = rows.rows_of_bytes(source, layout, ordered)
    done.add(1)
    return [(index, _values(row, table.COLUMN_NAMES, source, source)) for row in found]
