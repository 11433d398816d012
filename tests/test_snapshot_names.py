"""Where the pytest helper stores a snapshot: one file per snapshot, never one for several.

Earlier builds of aqe-inspect wrote every character of a test's or a snapshot's name other
than letters, digits and `_ . [ ] = + -` as `_`: `name="a b"`, `"a_b"`, `"a/b"` and `"a:b"`
were one file, and each overwrote (or was checked against) the others'. Names of the kept characters keep
their file names; the others are written `%XX`.

The inner runs (pytester) take the plan of a real sample (sample_plans/) in place of a live
DataFrame's: `plan_report` is given the sample's text, so no Spark is needed here (the live
tests of test_testing.py run the same helper on real DataFrames).
"""

from __future__ import annotations

import pytest

from aqe_inspect.testing.pytest_plugin import snapshot_file_name

from .conftest import SAMPLE_PLANS

pytest_plugins = ["pytester"]

#: Four real plans whose snapshots differ (each rewrite kind its own).
PLANS = {name: SAMPLE_PLANS / "spark-3.5.9" / name / "formatted_after.txt"
         for name in ("coalesced_aggregation", "smj_to_bhj", "skew_join", "empty_relation")}

INNER_CONFTEST = '''
import importlib
import pathlib

import pytest

import aqe_inspect


@pytest.fixture(autouse=True)
def plan_of_a_sample(monkeypatch):
    """`aqe.snapshot(path)` snapshots the plan text stored at `path` (a real sample)."""
    # The module the plugin imports (pytester may have dropped an earlier run's from
    # sys.modules while the package still holds it as an attribute).
    assertions = importlib.import_module("aqe_inspect.testing.assertions")
    monkeypatch.setattr(assertions, "plan_report",
                        lambda df, query=None, event_log=None, ui_url=None:
                        aqe_inspect.diff(pathlib.Path(df).read_text("utf-8")))
'''


@pytest.fixture
def inner(pytester, monkeypatch):
    for path in PLANS.values():
        if not path.is_file():
            pytest.skip(f"{path} is not in this checkout")
    monkeypatch.delenv("CI", raising=False)
    pytester.makeconftest(INNER_CONFTEST)
    return pytester


def run(pytester, *args):
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)


# ---- the file names -------------------------------------------------------------------------

def test_names_that_differ_are_files_that_differ():
    names = ["a b", "a_b", "a/b", "a:b", "a%20b", "a%2Fb", "a\\b", "a\nb", "a]b", "a[b"]
    files = [snapshot_file_name("test_x", name) for name in names]
    assert len(set(files)) == len(names), files
    for file in files:
        assert "/" not in file and "\\" not in file and ":" not in file and "\n" not in file
    # Parametrize ids too, and the `::` a parametrize id may hold.
    tests = ["test_x[a b]", "test_x[a_b]", "test_x[a/b]", "test_x[a::b]", "test_x[a.b]"]
    assert len({snapshot_file_name(test) for test in tests}) == len(tests)
    # A name can not read as a parametrize id: `test_x[a]` named `b]` is not `test_x[a]-b]`.
    assert snapshot_file_name("test_x[a]", "b]") != snapshot_file_name("test_x[a]-b]")


def test_names_of_kept_characters_keep_their_file_names():
    """What earlier builds wrote for a name without other characters is what is read now."""
    assert snapshot_file_name("test_grouped") == "test_grouped.txt"
    assert snapshot_file_name("test_grouped", "join") == "test_grouped-join.txt"
    assert snapshot_file_name("test_grouped", None, 2) == "test_grouped-2.txt"
    assert snapshot_file_name("TestJoins.test_x[1-2.5=x+y]", "a_b") == \
        "TestJoins.test_x[1-2.5=x+y]-a_b.txt"
    assert snapshot_file_name("test_café", "naïve") == "test_café-naïve.txt"


def test_a_long_name_is_cut_to_a_file_name_the_file_system_takes_and_stays_its_own():
    long_a, long_b = "x" * 300 + "a", "x" * 300 + "b"
    first, second = snapshot_file_name("test_x", long_a), snapshot_file_name("test_x", long_b)
    assert first != second
    assert len(first.encode("utf-8")) <= 255 and len(second.encode("utf-8")) <= 255
    escaped = snapshot_file_name("test_x", "/" * 300)  # cut inside the escapes, never half one
    assert len(escaped.encode("utf-8")) <= 255
    assert escaped.rsplit("~", 1)[0].endswith("%2F")


# ---- the helper in a pytest run --------------------------------------------------------------

def test_four_names_folded_onto_one_file_before_are_four_snapshots(inner, monkeypatch):
    plans = list(PLANS.values())
    inner.makepyfile(test_names=f'''
        def test_names(aqe):
            aqe.snapshot({str(plans[0])!r}, name="a b")
            aqe.snapshot({str(plans[1])!r}, name="a_b")
            aqe.snapshot({str(plans[2])!r}, name="a/b")
            aqe.snapshot({str(plans[3])!r}, name="a:b")
    ''')
    first = run(inner)
    first.assert_outcomes(passed=1)
    folder = inner.path / "__aqe_snapshots__" / "test_names"
    stored = sorted(path.name for path in folder.iterdir())
    assert stored == ["test_names-a%20b.txt", "test_names-a%2Fb.txt", "test_names-a%3Ab.txt",
                      "test_names-a_b.txt"]
    assert "rewrite coalesced" in (folder / "test_names-a%20b.txt").read_text("utf-8")
    assert "smj-to-bhj" in (folder / "test_names-a_b.txt").read_text("utf-8")
    # Again under CI: each snapshot is matched against its own file.
    monkeypatch.setenv("CI", "true")
    run(inner).assert_outcomes(passed=1)


def test_a_name_meeting_another_snapshot_in_one_file_fails_naming_both(inner):
    plan = str(PLANS["coalesced_aggregation"])
    inner.makepyfile(test_clash=f'''
        def test_numbered(aqe):
            aqe.snapshot({plan!r}, name="2")
            aqe.snapshot({plan!r})
            aqe.snapshot({plan!r})

        def test_case(aqe):
            aqe.snapshot({plan!r}, name="Join")
            aqe.snapshot({plan!r}, name="join")
    ''')
    result = run(inner)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*ValueError: test_numbered aqe.snapshot() #2 and test_numbered "
        "aqe.snapshot(name='2') would be stored in one snapshot file, "
        "__aqe_snapshots__/test_clash/test_numbered-2.txt: give one of them another name=",
    ])
    # Names that differ in case only are one file on macOS and Windows: refused everywhere.
    result.stdout.fnmatch_lines([
        "*ValueError: test_case aqe.snapshot(name='join') and test_case "
        "aqe.snapshot(name='Join') would be stored in one snapshot file*"])


def test_a_snapshot_stored_under_its_earlier_name_is_pointed_at(inner, monkeypatch):
    plan = str(PLANS["smj_to_bhj"])
    inner.makepyfile(test_old=f'''
        def test_join(aqe):
            aqe.snapshot({plan!r}, name="broadcast join")
    ''')
    folder = inner.path / "__aqe_snapshots__" / "test_old"
    folder.mkdir(parents=True)
    (folder / "test_join-broadcast_join.txt").write_text("stored by an earlier build\n", "utf-8")
    monkeypatch.setenv("CI", "true")
    result = run(inner)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*test_join-broadcast%20join.txt is missing, and CI=true does not write snapshots*; "
        "__aqe_snapshots__/test_old/test_join-broadcast_join.txt is where earlier builds "
        "of aqe-inspect stored it*"])
    assert not (folder / "test_join-broadcast%20join.txt").exists()
