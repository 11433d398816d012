"""The pytest plugin (entry point `pytest11`): assert what AQE did to a DataFrame in a test,
and keep plan snapshots beside the tests.

- the `aqe` fixture: `aqe.assert_aqe(df, expect=[...], forbid=[...], query=None, each=False)`
  (`aqe_inspect.testing.assert_aqe`; called without expectations it holds the test's marker's)
  and `aqe.snapshot(df, name=None, query=None)`;
- the marker `@pytest.mark.aqe(expect=[...], forbid=[...], query=None, each=False)`;
- `--aqe-snapshot-update`: write snapshots that changed (and missing ones under CI).

A snapshot is one file, `__aqe_snapshots__/<test module>/<test name>[-<name>].txt` beside the
test module, holding `aqe_inspect.expectations.snapshot.take`'s text (a character a file name
does not keep as it is is written `%XX`, its UTF-8 bytes: two names never share one file; see
`snapshot_file_name`). A missing one is written and the run
says so at its end; under CI (`CI=true`) a missing one fails instead, since a snapshot
written on the CI machine would be checked against itself. A changed one fails with the
unified diff, until `--aqe-snapshot-update` accepts it.

Nothing here imports PySpark: the DataFrame a test gives brings its own py4j objects.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

import pytest

SNAPSHOT_DIR = "__aqe_snapshots__"
UPDATE_OPTION = "--aqe-snapshot-update"
MARKER = "aqe"
#: Characters a snapshot file name keeps as they are in a test's name (parametrize ids hold
#: anything); any other is written `%XX`, its UTF-8 bytes (so `a b`, `a_b`, `a/b` and `a:b`
#: are four files; earlier builds wrote each of them `_`, one file for all four).
_UNSAFE = re.compile(r"[^\w.\[\]=+-]")
#: In a snapshot's own `name=`, brackets are written `%5B`/`%5D` too: the name then never
#: reads as part of a parametrize id (`test_x[a]-b]` is one test's and one name's alone).
_UNSAFE_IN_NAME = re.compile(r"[^\w.=+-]")
#: A file name longer than this (in UTF-8 bytes, before `.txt`) is cut and ends with `~` and a
#: hash of the whole name (`~` is never kept as it is, so such a name is no other's).
_LONGEST_STEM = 200


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@dataclass
class SnapshotLog:
    """The snapshot files this run wrote, for the summary at its end."""

    created: List[str] = field(default_factory=list)
    updated: List[str] = field(default_factory=list)
    #: Each snapshot file this run used (its key: `_file_key`) -> which snapshot it holds, so
    #: two snapshots meeting in one file (names a case-insensitive file system folds
    #: together, `name="2"` beside a test's second unnamed snapshot) fail rather than
    #: overwrite each other.
    claimed: Dict[Tuple[str, str], str] = field(default_factory=dict)


_LOG = pytest.StashKey[SnapshotLog]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("aqe-inspect", "AQE plan assertions and snapshots (aqe-inspect)")
    group.addoption(UPDATE_OPTION, action="store_true", default=False,
                    help="rewrite AQE plan snapshots that changed (and write missing ones, "
                         "under CI too)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(expect=[...], forbid=[...], query=None, each=False): what "
        "aqe.assert_aqe(df) holds the DataFrame's AQE rewrites to when called without "
        "expectations of its own")
    config.stash[_LOG] = SnapshotLog()


def pytest_report_header(config: pytest.Config) -> str:
    from importlib import metadata

    from ..version import __version__

    try:  # the installed version, without importing PySpark
        pyspark = metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        pyspark = "not installed"
    return f"aqe-inspect {__version__}, pyspark {pyspark}"


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    log = config.stash.get(_LOG, None)
    if log is None or not (log.created or log.updated):
        return
    terminalreporter.section("aqe-inspect snapshots")
    for verb, paths in (("written (new)", log.created), ("updated", log.updated)):
        if paths:
            terminalreporter.write_line(f"{len(paths)} snapshot(s) {verb}:")
            for path in paths:
                terminalreporter.write_line(f"  {path}")


@pytest.fixture
def aqe(request: pytest.FixtureRequest) -> "AqeFixture":
    """`aqe.assert_aqe(df, ...)` and `aqe.snapshot(df)` for this test."""
    return AqeFixture(request)


class AqeFixture:
    """What the `aqe` fixture gives a test."""

    def __init__(self, request: pytest.FixtureRequest):
        self._request = request
        self._names: Dict[str, int] = {}

    # ---- assertions ------------------------------------------------------------------------
    def assert_aqe(self, df: Any = None, expect: Iterable[str] = (),
                   forbid: Iterable[str] = (), query: Optional[str] = None,
                   each: Optional[bool] = None, event_log: Optional[str] = None,
                   ui_url: Optional[str] = None):
        """`aqe_inspect.testing.assert_aqe`; without `expect` and `forbid`, the test's
        `@pytest.mark.aqe(...)` says what to expect (and its `query`/`each`, unless given)."""
        __tracebackhide__ = True
        from .assertions import _session_of, expectations, hold_expectations, plan_report

        expect, forbid = list(_listed(expect)), list(_listed(forbid))
        origin = "aqe.assert_aqe"
        if not expect and not forbid:
            marker = self._request.node.get_closest_marker(MARKER)
            if marker is None:
                raise TypeError(
                    "aqe.assert_aqe(df) without expect=/forbid= needs the test marked "
                    "@pytest.mark.aqe(expect=[...], forbid=[...])")
            options = _marker_options(marker)
            expect, forbid = options["expect"], options["forbid"]
            query = query if query is not None else options["query"]
            each = each if each is not None else options["each"]
            origin = f"@pytest.mark.{MARKER}"
        wanted = expectations(expect, forbid, query, bool(each), origin)
        return hold_expectations(plan_report(df, query, event_log, ui_url), wanted,
                                 session=_session_of(df) if df is not None else None)

    # ---- snapshots -------------------------------------------------------------------------
    def snapshot(self, df: Any = None, name: Optional[str] = None,
                 query: Optional[str] = None, event_log: Optional[str] = None,
                 ui_url: Optional[str] = None) -> str:
        """Compare `df`'s final plan and rewrites (or, with `query`, the SQL executions it
        selects) with the stored snapshot; write it when missing. Returns the snapshot text."""
        __tracebackhide__ = True
        from ..errors import InspectError
        from ..expectations.snapshot import SnapshotModeError, compare, load, take_all
        from .assertions import plan_report, selected

        report = plan_report(df, query, event_log, ui_url)
        # The server's record was chosen by tag already: query= is no selector on it.
        actual = take_all(report if event_log or ui_url else selected(report, query))
        path = self.snapshot_path(name)
        shown = _shown_path(path, self._request.config)
        update = self._request.config.getoption(UPDATE_OPTION)
        log = self._request.config.stash[_LOG]
        other = _held_by_another(path) if path.exists() else None
        if other is not None:
            raise AssertionError(
                f"AQE plan snapshot {shown} is the file {other} of another snapshot on this "
                "file system (it ignores case or Unicode normalisation): give one of them "
                "another name=")
        if not path.exists():
            legacy = path.with_name(_legacy_file_name(_test_name(self._request.node), name,
                                                      self._names.get(name or "", 1)))
            older = ""
            if legacy != path and legacy.exists():
                older = (f"; {_shown_path(legacy, self._request.config)} is where earlier "
                         "builds of aqe-inspect stored it (they wrote other characters than "
                         "letters, digits and _.[]=+- as _, one file for several names): "
                         "rename that file if it holds this snapshot")
            if _in_ci() and not update:
                raise AssertionError(
                    f"AQE plan snapshot {shown} is missing, and CI=true does not write "
                    f"snapshots: run the test with {UPDATE_OPTION} (or without CI=true) and "
                    f"commit the file{older}")
            _write(path, actual)
            log.created.append(shown + older)
            return actual
        try:
            expected = load(str(path))
            difference = compare(expected, actual, f"{shown} (stored)", "plan (this run)")
        except SnapshotModeError as error:
            difference = f"{error.message}\n"
        except InspectError as error:
            if not update:
                raise AssertionError(f"AQE plan snapshot {error}; rewrite it with "
                                     f"{UPDATE_OPTION}") from None
            difference = str(error)
        if difference is None:
            return actual
        if update:
            _write(path, actual)
            log.updated.append(shown)
            return actual
        raise AssertionError(
            f"AQE plan snapshot {shown} does not match this run's plan (accept the change "
            f"with {UPDATE_OPTION}):\n{difference.rstrip()}")

    def snapshot_path(self, name: Optional[str] = None) -> Path:
        """`<test dir>/__aqe_snapshots__/<module>/<test>[-<name>].txt` (see
        `snapshot_file_name`); a test's second unnamed snapshot is `<test>-2`, its third
        `<test>-3`. A name used twice in one test is an error (the two would overwrite each
        other), and so is a file this run gave another snapshot already (`name="2"` beside a
        second unnamed one; names that differ in case only, on a case-insensitive file
        system): the error names both."""
        __tracebackhide__ = True
        node = self._request.node
        module = Path(str(node.fspath))
        test = _test_name(node)
        key = name if name is not None else ""
        seen = self._names.get(key, 0) + 1
        self._names[key] = seen
        if name is not None and seen > 1:
            raise ValueError(f"aqe.snapshot(name={name!r}) is used twice in {test}")
        path = module.parent / SNAPSHOT_DIR / module.stem / snapshot_file_name(test, name, seen)
        which = (f"{test} aqe.snapshot(name={name!r})" if name
                 else f"{test} aqe.snapshot() #{seen}")
        claimed = self._request.config.stash[_LOG].claimed
        holder = claimed.setdefault(_file_key(path), which)
        if holder != which:
            raise ValueError(
                f"{which} and {holder} would be stored in one snapshot file, "
                f"{_shown_path(path, self._request.config)}: give one of them another name=")
        return path


def _test_name(node: Any) -> str:
    """`Class.test[param]` of a test's node id: the parts after the module, the last one the
    test's own name whole (a parametrize id holding `::` stays in it)."""
    nodeid, own = node.nodeid, node.name
    if own and nodeid.endswith(own) and nodeid[:-len(own)].endswith("::"):
        return ".".join([*nodeid[:-len(own)].split("::")[1:-1], own])
    return ".".join(nodeid.split("::")[1:]) or own


def _escaped(text: str, unsafe: "re.Pattern[str]") -> str:
    return unsafe.sub(lambda match: "".join(
        f"%{byte:02X}" for byte in match.group().encode("utf-8", "surrogatepass")), text)


def snapshot_file_name(test: str, name: Optional[str] = None, seen: int = 1) -> str:
    """The file name of a test's snapshot: `<test>.txt`, `<test>-<name>.txt` or, for its
    second unnamed one, `<test>-2.txt`. Letters, digits and `_ . [ ] = + -` are kept as they
    are (a name of those alone is the file name aqe-inspect always gave it); any other
    character is written `%XX`, its UTF-8 bytes, and a name's brackets too (`a b` ->
    `a%20b`, `a/b` -> `a%2Fb`), so two names are never one file. A name longer than
    `_LONGEST_STEM` bytes is cut and ends with `~` and 16 hex digits of its SHA-256."""
    suffix = f"-{_escaped(name, _UNSAFE_IN_NAME)}" if name else (f"-{seen}" if seen > 1 else "")
    stem = _escaped(test, _UNSAFE) + suffix
    if len(stem.encode("utf-8")) > _LONGEST_STEM:
        exact = f"{test}\0{name if name else seen}".encode("utf-8", "surrogatepass")
        cut = stem
        while len(cut.encode("utf-8")) > _LONGEST_STEM - 17:
            cut = cut[:-1]
        cut = re.sub(r"%[0-9A-F]?$", "", cut)  # never half an escape
        stem = f"{cut}~{hashlib.sha256(exact).hexdigest()[:16]}"
    return stem + ".txt"


def _legacy_file_name(test: str, name: Optional[str], seen: int) -> str:
    """The file name earlier builds gave a snapshot: every other character `_`."""
    suffix = f"-{name}" if name else (f"-{seen}" if seen > 1 else "")
    return _UNSAFE.sub("_", f"{test}{suffix}") + ".txt"


def _file_key(path: Path) -> Tuple[str, str]:
    """A snapshot file as a file system that ignores case and Unicode normalisation
    (macOS, Windows) sees it: two snapshots with one key would share a file there."""
    return (str(path.parent), unicodedata.normalize("NFC", path.name).casefold())


def _held_by_another(path: Path) -> Optional[str]:
    """When `path` exists but under another spelling (a file system that ignores case or
    Unicode normalisation found `Test-A.txt` for `test-a.txt`), that file's name."""
    try:
        names = os.listdir(path.parent)
    except OSError:
        return None
    ours = unicodedata.normalize("NFC", path.name)
    if any(unicodedata.normalize("NFC", entry) == ours for entry in names):
        return None
    key = ours.casefold()
    return next((entry for entry in names
                 if unicodedata.normalize("NFC", entry).casefold() == key), None)


def _listed(values: Any) -> Tuple[str, ...]:
    if values is None:
        return ()
    return (values,) if isinstance(values, str) else tuple(values)


def _marker_options(marker: Any) -> Dict[str, Any]:
    """`@pytest.mark.aqe(expect=..., forbid=..., query=..., each=...)`, checked: anything
    else is a usage error (a typo must not turn into a passing test)."""
    __tracebackhide__ = True
    known = {"expect", "forbid", "query", "each"}
    unknown = sorted(set(marker.kwargs) - known)
    if marker.args or unknown:
        raise TypeError(
            f"@pytest.mark.{MARKER} takes the keywords expect=, forbid=, query=, each= only "
            f"(got {', '.join(unknown) or 'positional arguments'})")
    return {"expect": list(_listed(marker.kwargs.get("expect"))),
            "forbid": list(_listed(marker.kwargs.get("forbid"))),
            "query": marker.kwargs.get("query"), "each": bool(marker.kwargs.get("each"))}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))


def _shown_path(path: Path, config: pytest.Config) -> str:
    """The path relative to the run's root directory, as pytest names test files."""
    try:
        return str(path.relative_to(config.rootpath))
    except ValueError:
        return str(path)
