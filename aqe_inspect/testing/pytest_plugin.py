"""The pytest plugin (entry point `pytest11`): assert what AQE did to a DataFrame in a test,
and keep plan snapshots beside the tests.

- the `aqe` fixture: `aqe.assert_aqe(df, expect=[...], forbid=[...], query=None, each=False)`
  (`aqe_inspect.testing.assert_aqe`; called without expectations it holds the test's marker's)
  and `aqe.snapshot(df, name=None, query=None)`;
- the marker `@pytest.mark.aqe(expect=[...], forbid=[...], query=None, each=False)`;
- `--aqe-snapshot-update`: write snapshots that changed (and missing ones under CI).

A snapshot is one file, `__aqe_snapshots__/<test module>/<test name>[-<name>].txt` beside the
test module, holding `aqe_inspect.expectations.snapshot.take`'s text. A missing one is written and the run
says so at its end; under CI (`CI=true`) a missing one fails instead, since a snapshot
written on the CI machine would be checked against itself. A changed one fails with the
unified diff, until `--aqe-snapshot-update` accepts it.

Nothing here imports PySpark: the DataFrame a test gives brings its own py4j objects.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

import pytest

SNAPSHOT_DIR = "__aqe_snapshots__"
UPDATE_OPTION = "--aqe-snapshot-update"
MARKER = "aqe"
#: Characters a snapshot file name keeps; the rest become `_` (parametrize ids hold anything).
_UNSAFE = re.compile(r"[^\w.\[\]=+-]")


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@dataclass
class SnapshotLog:
    """The snapshot files this run wrote, for the summary at its end."""

    created: List[str] = field(default_factory=list)
    updated: List[str] = field(default_factory=list)


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
        if not path.exists():
            if _in_ci() and not update:
                raise AssertionError(
                    f"AQE plan snapshot {shown} is missing, and CI=true does not write "
                    f"snapshots: run the test with {UPDATE_OPTION} (or without CI=true) and "
                    "commit the file")
            _write(path, actual)
            log.created.append(shown)
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
        """`<test dir>/__aqe_snapshots__/<module>/<test>[-<name>].txt`; a test's second
        unnamed snapshot is `<test>-2`, its third `<test>-3`. A name used twice in one test
        is an error (the two would overwrite each other)."""
        node = self._request.node
        module = Path(str(node.fspath))
        test = ".".join(node.nodeid.split("::")[1:]) or node.name
        key = name if name is not None else ""
        seen = self._names.get(key, 0) + 1
        self._names[key] = seen
        if name is not None and seen > 1:
            raise ValueError(f"aqe.snapshot(name={name!r}) is used twice in {test}")
        suffix = f"-{name}" if name else (f"-{seen}" if seen > 1 else "")
        file_name = _UNSAFE.sub("_", f"{test}{suffix}") + ".txt"
        return module.parent / SNAPSHOT_DIR / module.stem / file_name


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
