"""The fleet job: many Spark event logs -> the fleet table (`table.py`), built on Spark.

    aqe-inspect fleet PATH... --output DIR [--format parquet|csv] [--master M]
    spark-submit .../site-packages/aqe_inspect/fleet/submit.py PATH... --output DIR (a cluster)

The driver expands the inputs (files, folders, globs; local paths or any URI Hadoop reads:
s3a://, hdfs://, file:) into log units by their names alone: a file is a unit, a rolling
`eventlog_v2_*` or Databricks folder is one unit of its parts in reading order, a folder of
applications is searched for its units (`files.folder_parts`, `files.MAX_DEPTH`). Nothing of a
log is read on the driver. Each unit becomes its rows in an executor (`rows.py`, the library
code `diff` uses); the rows (small) come back to the driver, are written to `--output` as one
Parquet or CSV table, and returned for the summary.

How a log's bytes reach an executor, chosen by the inputs:

    path     local paths (no scheme): the unit list is parallelized and each task opens its
             logs by path, streamed (no size limit, no copy); the paths go as absolute `file:`
             URIs (an executor's working directory is not the driver's), so on a cluster they
             must name what every executor sees (a shared mount)
    binary   URIs (s3a://, hdfs://, file:...): Spark's binaryFile source reads each file in the
             executor that handles it; a rolling log's parts are brought together by a shuffle
             between executors (`groupByKey` on the unit), never through the driver. binaryFile
             holds a file whole and refuses files of 2 GiB or more: such a file is an error row

The executors run `tasks.py`, shipped by value: a Python worker never imports aqe_inspect from
its working directory (a checkout there is no installed package). A unit that cannot be read
is one error row, never a failed job; a unit that yields no row at all (a file gone between
listing and reading) gets one too. A file found in a folder that is not an event log is
skipped and counted, as `diff` skips it (`run_fleet`'s `skipped`), not a row. The output is
written to a temporary folder beside `--output` and renamed over it at the end: a re-run
replaces the table whole (idempotent), a failure leaves the previous one.
"""

from __future__ import annotations

import os
import sys

import functools
import glob
import json
import re
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from aqe_inspect.errors import InspectError
from aqe_inspect.fleet import tasks
from aqe_inspect.fleet.table import COLUMN_NAMES, csv_cell, error_row, spark_schema
from aqe_inspect.sources.eventlog.files import MAX_DEPTH, SHOWN, folder_parts, is_hidden, \
    is_marker

FORMATS = ("parquet", "csv")
#: The file a fleet table's folder holds, so that a later run knows it may replace the folder.
MARKER = "_AQE_INSPECT_FLEET_TABLE"
MARKER_SCHEMA = "aqe-inspect/fleet-table/v1"
DEFAULT_MASTER = "local[*]"
INSTALL_HINT = ("the fleet scan runs on PySpark, which is not installed: pip install "
                "'pyspark>=3.3' (aqe-inspect's 'spark' extra)")
#: binaryFile's limit: a file's bytes are one Java array.
BINARY_MAX = (1 << 31) - 1
#: Tasks per core: enough for balance and a progress bar that moves, few enough that a task's
#: start-up (tens of ms) stays small beside its logs.
TASKS_PER_CORE = 16
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/")

Row = Dict[str, Any]


@dataclass(frozen=True)
class Unit:
    """One application's log as the job reads it: `source` names it in the rows (the file, or
    the folder of a rolling log), `parts` are its files in reading order; `error` is set when
    it is known unreadable from its listing alone."""

    source: str
    layout: str
    parts: Tuple[str, ...]
    sizes: Tuple[int, ...] = ()
    error: str = ""
    #: Found in a folder, not given: a file that turns out not to be an event log is skipped.
    found: bool = False

    @property
    def size(self) -> int:
        return sum(self.sizes)


# -- listing: names only ---------------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    path: str
    name: str
    is_dir: bool
    size: int


class LocalFiles:
    """The driver's own file system, through `os` (paths without a scheme)."""

    def matches(self, pattern: str) -> List[Entry]:
        paths = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        found = []
        for path in paths:
            try:
                info = os.stat(path)
            except FileNotFoundError:
                continue
            except OSError as error:
                raise InspectError(f"cannot read: {error.strerror or error}", source=path) \
                    from None
            found.append(Entry(path, os.path.basename(os.path.normpath(path)),
                               os.path.isdir(path), info.st_size))
        return found

    def entries(self, path: str) -> List[Entry]:
        try:
            with os.scandir(path) as listing:
                return sorted((Entry(item.path, item.name, item.is_dir(),
                                     0 if item.is_dir() else item.stat().st_size)
                               for item in listing), key=lambda entry: entry.name)
        except OSError as error:
            raise InspectError(f"cannot read the directory: {error.strerror or error}",
                               source=path) from None


class HadoopFiles:
    """Any file system Spark reads (s3a://, hdfs://, file:), through Hadoop's FileSystem API
    in the driver's JVM; paths come back qualified (`file:/tmp/x`), as binaryFile names them."""

    def __init__(self, session):
        self._jvm = session._jvm
        self._conf = session._jsc.hadoopConfiguration()

    def _fs(self, path):
        return path.getFileSystem(self._conf)

    def matches(self, pattern: str) -> List[Entry]:
        path = self._jvm.org.apache.hadoop.fs.Path(pattern)
        try:
            statuses = self._fs(path).globStatus(path)
        except Exception as error:  # py4j: the JVM's IOException, as one line
            raise InspectError(f"cannot read: {_java_message(error)}", source=pattern) from None
        return [self._entry(status) for status in (statuses or ())]

    def entries(self, path: str) -> List[Entry]:
        target = self._jvm.org.apache.hadoop.fs.Path(path)
        try:
            statuses = self._fs(target).listStatus(target)
        except Exception as error:
            raise InspectError(f"cannot read the directory: {_java_message(error)}",
                               source=path) from None
        return sorted((self._entry(status) for status in statuses), key=lambda e: e.name)

    @staticmethod
    def _entry(status) -> Entry:
        path = status.getPath()
        return Entry(path.toString(), path.getName(), bool(status.isDirectory()),
                     int(status.getLen()))


def _java_message(error: Exception) -> str:
    text = str(getattr(error, "java_exception", "") or error)
    return " ".join(text.split())[:300]


def has_scheme(path: str) -> bool:
    """Whether `path` is a URI (`s3a://b/k`, `file:/tmp/x`) rather than a local path."""
    return bool(_SCHEME.match(path)) and not re.match(r"[A-Za-z]:[\\/]", path)


def expand_units(paths: Sequence[str], files) -> List[Unit]:
    """The log units the inputs name, in the order given (a folder's in name order). A path
    that names nothing, or a folder with no file in it, is an InspectError: the command line is
    wrong. Every file is a unit: one named or matched by a glob that is no event log is an
    error row; one found in a folder (`found`) is skipped, as `diff` skips it, once an
    executor has read its first bytes."""
    units: List[Unit] = []
    for given in paths:
        matched = files.matches(given)
        if not matched:
            raise InspectError("no such file or directory" if not glob.has_magic(given)
                               else "matches no file", source=given)
        found: List[Unit] = []
        for entry in matched:
            if entry.is_dir:
                found.extend(_folder_units(entry, files))
            else:
                found.append(Unit(entry.path, "file", (entry.path,), (entry.size,)))
        if not found:
            raise InspectError("is a directory with no Spark event log in it (no files, nor "
                               "eventlog_v2_* folders)", source=given)
        units.extend(found)
    return units


def _folder_units(folder: Entry, files) -> List[Unit]:
    """The units under a folder: itself when laid out as one log, else its files and log
    folders, searched `MAX_DEPTH` deep (a walk with a stack, in name order)."""
    units: List[Unit] = []
    stack = [(folder, 1)]
    while stack:
        entry, depth = stack.pop()
        children = [child for child in files.entries(entry.path) if not is_hidden(child.name)]
        unit = _log_folder(entry, children)
        if unit is not None:
            units.append(unit)
            continue
        below = []
        for child in children:
            if child.is_dir:
                if depth < MAX_DEPTH:
                    below.append((child, depth + 1))
                else:
                    sub = _log_folder(child, [c for c in files.entries(child.path)
                                              if not is_hidden(c.name)])
                    if sub is not None:
                        units.append(sub)
            elif not is_marker(child.name):
                units.append(Unit(child.path, "file", (child.path,), (child.size,), found=True))
        stack.extend(reversed(below))
    return sorted(units, key=lambda unit: unit.source)


def _log_folder(folder: Entry, children: List[Entry]) -> Optional[Unit]:
    names = [child.name for child in children if not child.is_dir]
    try:
        found = folder_parts(folder.path, names)
    except InspectError as error:  # a rolling folder without its parts: an error row
        return Unit(folder.path, "rolling", (), (), str(error))
    if found is None:
        return None
    layout, chosen = found
    by_name = {child.name: child for child in children}
    parts = tuple(by_name[name].path for name in chosen)
    return Unit(folder.path, layout, parts, tuple(by_name[name].size for name in chosen))


# -- the job ---------------------------------------------------------------------------------

def require_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise InspectError(INSTALL_HINT) from None


def session_for(master: Optional[str]):
    """The SparkSession to run on: the active one (a test's, a notebook's, spark-submit's), or
    a new one on `master` (default `local[*]`; under spark-submit, the master it was given).
    Returns (session, whether this call started it)."""
    require_pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    builder = SparkSession.builder.appName("aqe-inspect fleet").config(
        "spark.ui.showConsoleProgress", "false")
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started this Python
    chosen = master or (None if submitted else DEFAULT_MASTER)
    if chosen is not None:
        builder = builder.master(chosen)
    if chosen is not None and chosen.startswith("local") and "PYSPARK_PYTHON" not in os.environ:
        os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers import this aqe_inspect
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session, True


def scan(session, units: Sequence[Unit], binary: bool,
         on_progress: Optional[Callable[[int], None]] = None,
         skipped: Optional[List[str]] = None) -> List[Row]:
    """Every unit's rows, read in the executors: by path (`binary` false) or through
    binaryFile; in unit order, each unit's rows in the order its executions ended.
    `on_progress(units_done)` is called from a thread while the job runs. Files found in
    folders that are not event logs give no row: their sources are added to `skipped`."""
    sc = session.sparkContext
    done = sc.accumulator(0)
    known = [(index, unit) for index, unit in enumerate(units) if not unit.error]
    found: List[Tuple[int, Optional[tuple]]] = [(index, _error(unit.source, unit.error))
                                                for index, unit in enumerate(units) if unit.error]
    if binary:
        big = [(index, unit) for index, unit in known
               if any(size > BINARY_MAX for size in unit.sizes)]
        found.extend((index, _error(unit.source, f"{unit.source}: larger than 2 GiB, more than "
                                    "Spark's binaryFile source reads; give it as a local path"))
                     for index, unit in big)
        # binaryFile leaves empty files out: what they are is known from their size alone.
        empty = [(index, unit) for index, unit in known
                 if unit.layout == "file" and unit.size == 0 and index not in dict(big)]
        found.extend((index, None if unit.found else _empty(unit)) for index, unit in empty)
        skipping = {index for index, _ in big + empty}
        known = [(index, unit) for index, unit in known if index not in skipping]
    with _Watch(done, on_progress):
        if known:
            tasks.ship()
            rdd = _binary_rows(session, known, done) if binary else _path_rows(sc, known, done)
            try:
                found.extend(rdd.collect())
            except Exception as error:  # py4j: the job failed
                failure = tasks.import_failure(error)
                if failure:
                    raise InspectError(failure) from None
                raise
    seen = {index for index, _ in found}
    found.extend((index, _error(unit.source, f"{unit.source}: no such file (it went away "
                                "while the fleet was read)"))
                 for index, unit in enumerate(units) if index not in seen)
    found.sort(key=lambda item: item[0])  # stable: a unit's rows keep their order
    if skipped is not None:
        skipped.extend(units[index].source for index, values in found if values is None)
    return [dict(zip(COLUMN_NAMES, values)) for _, values in found if values is not None]


def _empty(unit: Unit) -> tuple:
    """The row of an empty file named on the command line, as its reader words it."""
    from aqe_inspect.fleet.rows import rows_of_bytes

    (row,) = rows_of_bytes(unit.source, "file", [(unit.parts[0], b"")])
    return tuple(row[name] for name in COLUMN_NAMES)


def _error(source: str, message: str) -> tuple:
    row = error_row(source, message)
    return tuple(row[name] for name in COLUMN_NAMES)


def _slices(sc, count: int) -> int:
    return max(1, min(count, TASKS_PER_CORE * sc.defaultParallelism))


def _path_rows(sc, known: List[Tuple[int, Unit]], done):
    """Each task opens its units' logs by path: local paths, sent as absolute `file:` URIs
    (an executor's working directory is not the driver's)."""
    # Largest first: the long logs start early and the short ones fill the gaps at the end.
    ordered = [(index, unit.source, tasks.local_uri(unit.source), unit.found)
               for index, unit in sorted(known, key=lambda item: -item[1].size)]
    return sc.parallelize(ordered, _slices(sc, len(ordered))).mapPartitions(
        functools.partial(tasks.read_paths, done))


def _binary_rows(session, known: List[Tuple[int, Unit]], done):
    """binaryFile over the units' files: single files read where they are listed (no
    shuffle), the parts of rolling and Databricks logs grouped by unit between executors."""
    sc = session.sparkContext
    places = {part: (index, order) for index, unit in known
              for order, part in enumerate(unit.parts)}
    lookup = sc.broadcast({"places": places,
                           "units": {index: (unit.source, unit.layout, unit.parts, unit.found)
                                     for index, unit in known}})
    singles = [unit.parts[0] for _, unit in known if unit.layout == "file"]
    several = [part for _, unit in known if unit.layout != "file" for part in unit.parts]
    reader = session.read.format("binaryFile")
    rdds = []
    if singles:
        rdds.append(reader.load(singles).select("path", "content").rdd.mapPartitions(
            functools.partial(tasks.read_single_bytes, lookup, done)))
    if several:
        grouped = reader.load(several).select("path", "content").rdd.map(
            functools.partial(tasks.keyed_part, lookup)).filter(tasks.is_kept)
        slices = _slices(sc, len({place[0] for place in places.values()}))
        rdds.append(grouped.groupByKey(slices).flatMap(
            functools.partial(tasks.read_grouped_bytes, lookup, done)))
    return rdds[0] if len(rdds) == 1 else sc.union(rdds)


class _Watch:
    """While the job runs, a thread calls `on_progress` with the accumulator's value (updated
    on the driver as each task ends)."""

    def __init__(self, done, on_progress: Optional[Callable[[int], None]]):
        self._done, self._on_progress = done, on_progress
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> "_Watch":
        if self._on_progress is not None:
            self._thread = threading.Thread(target=self._poll, name="aqe-inspect-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.wait(0.2):
            self._on_progress(self._done.value)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._on_progress(self._done.value)


# -- writing ---------------------------------------------------------------------------------

class _Target:
    """`--output`: checked before the job (its folder must exist), written beside it to a
    temporary folder and renamed over it when whole (Hadoop's FileSystem: any URI)."""

    def __init__(self, session, output: str, shown: str):
        jvm = session._jvm
        self.output = shown  # as the user gave it, for messages
        self._path = jvm.org.apache.hadoop.fs.Path(output)
        self._fs = self._path.getFileSystem(session._jsc.hadoopConfiguration())
        parent = self._path.getParent()
        name = self._path.getName()
        self._temporary = jvm.org.apache.hadoop.fs.Path(
            parent, f".{name}.aqe-inspect-{uuid.uuid4().hex[:12]}")
        self._old = jvm.org.apache.hadoop.fs.Path(
            parent, f".{name}.aqe-inspect-old-{uuid.uuid4().hex[:12]}")
        self._parent = parent

    def check(self) -> None:
        if self._parent is None:
            raise InspectError("cannot write the table: give a folder, not a root",
                               source=self.output)
        try:
            if not self._fs.exists(self._parent):
                raise InspectError("cannot write the table: its parent folder does not exist",
                                   source=self.output)
            if self._fs.exists(self._path):
                if not self._fs.getFileStatus(self._path).isDirectory():
                    raise InspectError("cannot write the table: a file is there (the table is a "
                                       "folder)", source=self.output)
                self._check_replaceable()
        except InspectError:
            raise
        except Exception as error:
            raise InspectError(f"cannot write the table: {_java_message(error)}",
                               source=self.output) from None
        if self._fs.getScheme() == "file":
            local = self._fs.pathToFile(self._parent).getPath()
            if not os.access(local, os.W_OK | os.X_OK):
                raise InspectError("cannot write the table: permission denied",
                                   source=self.output)

    def write(self, session, rows: List[Row], output_format: str) -> None:
        cell = csv_cell if output_format == "csv" else (lambda value: value)
        frame = session.createDataFrame([tuple(cell(row[name]) for name in COLUMN_NAMES)
                                         for row in rows], schema=spark_schema())
        writer = frame.coalesce(1).write.mode("overwrite").format(output_format)
        if output_format == "csv":  # quotes doubled, as RFC 4180 and Python's csv read them
            writer = writer.option("header", "true").option("escape", '"')
        try:
            writer.save(self._temporary.toString())
            self._mark(output_format)
            moved = False
            if self._fs.exists(self._path):
                moved = bool(self._fs.rename(self._path, self._old))
            if not self._fs.rename(self._temporary, self._path):
                if moved:
                    self._fs.rename(self._old, self._path)
                raise InspectError("cannot write the table: renaming the written folder "
                                   "failed", source=self.output)
            if moved:
                self._fs.delete(self._old, True)
        except InspectError:
            self._remove()
            raise
        except Exception as error:
            self._remove()
            raise InspectError(f"cannot write the table: {_java_message(error)}",
                               source=self.output) from None

    def _check_replaceable(self) -> None:
        """An existing folder is replaced only when it is empty or a table this command wrote
        (its marker file): never a folder of the user's own files."""
        listed = self._fs.listStatus(self._path)
        if len(listed) == 0:
            return
        marker = self._path.suffix("/" + MARKER)
        if not self._fs.exists(marker):
            raise InspectError(
                f"will not replace a folder that is not a fleet table (it holds {len(listed)} "
                f"entr{'y' if len(listed) == 1 else 'ies'} and no {MARKER} file): give a new or "
                "empty folder, or a table an earlier fleet run wrote", source=self.output)

    def _mark(self, output_format: str) -> None:
        """The marker a later run checks before it replaces the folder (Spark's and Hadoop's
        readers pass over names starting with `_`)."""
        stream = self._fs.create(self._temporary.suffix("/" + MARKER), True)
        try:
            stream.write(bytearray(json.dumps({"schema": MARKER_SCHEMA, "format": output_format})
                                   .encode() + b"\n"))
        finally:
            stream.close()

    def _remove(self) -> None:
        try:
            self._fs.delete(self._temporary, True)
        except Exception:  # noqa: BLE001 - cleaning up after a failure already reported
            pass


def refuse_local_output(output: str, paths: Sequence[str]) -> None:
    """A local `--output` that replacing would lose what the user did not ask to replace: the
    current folder or one above it, or a folder that is, holds or lies inside an input."""
    target = os.path.realpath(output)
    if _within(os.getcwd(), target):
        raise InspectError("will not replace the current folder or a folder above it: give "
                           "the table a folder of its own", source=output)
    for path in paths:
        if has_scheme(path):
            continue
        for named in glob.glob(path) if glob.has_magic(path) else [path]:
            found = os.path.realpath(named)
            if _within(found, target) or _within(target, found):
                raise InspectError(f"the table's folder overlaps the input {named}: give it a "
                                   "folder of its own", source=output)


def _within(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or lies under it (both real paths)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def run_fleet(paths: Sequence[str], output: str, output_format: str = "parquet",
              master: Optional[str] = None, progress: Optional[bool] = None,
              session=None, skipped: Optional[List[str]] = None) -> List[Row]:
    """Scan the event logs at `paths` into the fleet table, write it to `output` (a local path
    unless it is a URI), and return its rows. `progress`: a bar of logs done on standard
    error (default: when it is a terminal). `session`: run on it (default: the active one,
    else a new one on `master`). `skipped`: a list the files found in folders that are not
    event logs are added to (they give no row)."""
    if output_format not in FORMATS:
        raise InspectError(f"--format: expected parquet or csv, found {output_format!r}")
    if not paths:
        raise InspectError("fleet takes one or more event logs, folders or globs")
    binary = any(has_scheme(path) for path in paths)
    # Local paths are listed before Spark starts: a wrong path fails at once.
    units = [] if binary else expand_units(paths, LocalFiles())
    given = output
    if not has_scheme(output):  # a local path, wherever Spark's default file system is
        refuse_local_output(output, paths)
        output = "file:" + os.path.abspath(output)
    own = False
    if session is None:
        session, own = session_for(master)
    try:
        if binary:
            units = expand_units(paths, HadoopFiles(session))
        target = _Target(session, output, given)
        target.check()
        show = sys.stderr.isatty() if progress is None else progress
        passed: List[str] = []
        with _bar(len(units), show) as on_progress:
            rows = scan(session, units, binary, on_progress, passed)
        if skipped is not None:
            skipped.extend(passed)
        empty = nothing_read(paths, rows, passed)
        if empty is not None:  # no table of nothing: the previous one, if any, stays
            raise empty
        target.write(session, rows, output_format)
        return rows
    finally:
        if own:
            session.stop()


def nothing_read(paths: Sequence[str], rows: Sequence[Row], skipped: Sequence[str]
                 ) -> Optional[InspectError]:
    """The error of a scan that read nothing to judge, as `diff` says of the same inputs: no
    row holds an execution or an application (every file found in the folders skipped as no
    event log, every log unreadable or cut before its application started). None when one
    row does: an application that ran no SQL is a row of its own, a table worth writing."""
    if any(row["execution_id"] is not None or row["app_id"] for row in rows):
        return None
    if rows:  # every log an error row: the first says why, as `diff` of it would
        more = len(rows) - 1
        others = f"; {more} other event log{'s' if more > 1 else ''} cannot be read " \
                 f"either" if more else ""
        return InspectError(f"{rows[0]['error']}{others}")
    where = paths[0] if len(paths) == 1 else ", ".join(paths)
    relative = len(paths) == 1 and not has_scheme(where) and os.path.isdir(where)
    names = [os.path.relpath(path, where) if relative else path for path in skipped]
    shown = ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more"
                                        if len(names) > SHOWN else "")
    said = (f"; skipped {len(names)} file that is not an event log: {shown}" if len(names) == 1
            else f"; skipped {len(names)} files that are not event logs: {shown}" if names
            else "")
    folders = "is a directory with no Spark event log in it" if len(paths) == 1 \
        else "are directories with no Spark event log in them"
    return InspectError(folders + " (expected files of JSON lines that start with "
                        "{\"Event\":, plain or compressed, or eventlog_v2_* folders)" + said,
                        source=where)


class _bar:
    """A rich progress bar of logs done on standard error, or nothing."""

    def __init__(self, total: int, show: bool):
        self._total, self._show, self._progress, self._task = total, show, None, None

    def __enter__(self) -> Optional[Callable[[int], None]]:
        if not self._show:
            return None
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn)

        self._progress = Progress(TextColumn("event logs"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), console=Console(file=sys.stderr),
                                  transient=True)
        self._progress.start()
        self._task = self._progress.add_task("scan", total=self._total)
        return lambda done: self._progress.update(self._task, completed=min(done, self._total))

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()
