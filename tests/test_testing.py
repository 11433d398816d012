"""`aqe_inspect.testing.assert_aqe` and the pytest plugin, on real PySpark queries.

The queries are the sample generator's scenarios (their configs give each rewrite, or take it
away, deterministically; the generator checks that against the JVM's plan objects). Plugin
runs go through `pytester` in this process, so the inner tests reuse this session's JVM: they
take `SparkSession.builder.getOrCreate()` and work in a `newSession()` of it (own SQL
configs, shared status store)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aqe_inspect.testing import assert_aqe, plan_report, recorded_executions, selected

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
#: Where the pytest example lives: the site's page on the pytest helper.
README_EXAMPLE = ROOT / "docs" / "pytest.md"


def ran(generator, session, name, overrides=None):
    """A scenario's DataFrame after `collect()` (its own plan ran), in a session of its own
    so no config leaks out; the plan stays final after."""
    scenario = generator.scenario_named(name)
    scoped = session.newSession()
    for key, value in {**scenario.all_confs(), **(overrides or {})}.items():
        scoped.conf.set(key, value)
    df = scenario.build(scoped, None)
    df.collect()
    return df


def execution_count(session) -> int:
    return len(recorded_executions(session).queries)


# ---- no PySpark needed -----------------------------------------------------------------------

def test_importing_never_imports_pyspark():
    code = ("import sys, aqe_inspect, aqe_inspect.testing, aqe_inspect.testing.pytest_plugin\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))")
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_a_spark_connect_dataframe_without_metrics_says_which_actions_give_them():
    connect = type("DataFrame", (), {"__module__": "pyspark.sql.connect.dataframe",
                                     "executionInfo": None})
    with pytest.raises(AssertionError, match="no plan metrics") as error:
        assert_aqe(connect(), expect=["coalesced"])
    assert "df.collect(), df.toPandas() or df.toArrow()" in str(error.value)
    with pytest.raises(TypeError, match="event_log="):  # the client cannot list executions
        assert_aqe(connect(), expect=["coalesced"], query="0")


def test_the_plugin_is_registered_through_pytest11():
    from importlib import metadata

    points = metadata.entry_points()
    group = (points.select(group="pytest11") if hasattr(points, "select")
             else points.get("pytest11", ()))
    assert "aqe_inspect.testing.pytest_plugin" in {point.value for point in group}


def test_something_else_than_a_dataframe_is_a_type_error():
    with pytest.raises(TypeError, match="takes a PySpark DataFrame, got builtins.str"):
        assert_aqe("SELECT 1", expect=["coalesced"])


# ---- assert_aqe on a live session -----------------------------------------------------------

@pytest.mark.spark
@pytest.mark.parametrize("name", ["coalesced_aggregation", "smj_to_bhj", "skew_join"])
def test_assert_aqe_holds_what_each_scenario_exists_to_show(spark, name):
    generator, session = spark
    scenario = generator.scenario_named(name)
    kinds = set(generator.REWRITE_KEYS)
    expect = [kind for kind, wanted in scenario.expect.items() if wanted and kind in kinds]
    forbid = [kind for kind, wanted in scenario.expect.items() if not wanted and kind in kinds]
    assert expect
    result = assert_aqe(ran(generator, session, name), expect=expect, forbid=forbid)
    assert result.passed and result.query_count == 1
    assert len(result.outcomes) == len(expect) + len(forbid)


@pytest.mark.spark
def test_an_unmet_expectation_names_it_and_shows_the_plans(spark):
    generator, session = spark
    kept_sort_merge = ran(generator, session, "smj_to_bhj_off")
    with pytest.raises(AssertionError) as error:
        assert_aqe(kept_sort_merge, expect=["smj-to-bhj>=1"])
    message = str(error.value)
    assert "1 of 1 expectation(s) not met" in message
    assert "FAIL smj-to-bhj>=1" in message and "expected at least 1 smj-to-bhj" in message
    assert "from assert_aqe" in message
    assert "Initial plan" in message and "Final plan" in message
    assert "SortMergeJoin" in message and "BroadcastHashJoin" not in message
    # Why not, from the plan's run-time sizes and the session's own settings.
    why = " ".join(message.split())
    assert re.search(r"why not: query 1: SortMergeJoin \(\d+\): blocked: run-time broadcasting "
                     r"is off: spark\.sql\.adaptive\.autoBroadcastJoinThreshold=-1 \(the "
                     r"session\)", why), why

    broadcast = ran(generator, session, "smj_to_bhj")
    with pytest.raises(AssertionError) as error:
        assert_aqe(broadcast, expect=["local-read"], forbid=["smj-to-bhj"])
    message = str(error.value)
    assert "PASS local-read" in message and "FAIL forbid smj-to-bhj" in message
    assert "expected no smj-to-bhj in all queries, found 1" in message
    assert "BroadcastHashJoin" in message and "[smj-to-bhj]" in message


@pytest.mark.spark
def test_a_plan_not_run_yet_says_so_and_what_to_do(spark):
    generator, session = spark
    df = generator.scenario_named("coalesced_aggregation").build(session, None)
    with pytest.raises(AssertionError, match="has not run yet") as error:
        assert_aqe(df, expect=["coalesced"])
    assert "df.collect()" in str(error.value) and "query=" in str(error.value)


@pytest.mark.spark
def test_query_selects_a_recorded_execution_after_count(spark):
    generator, session = spark
    scenario = generator.scenario_named("coalesced_aggregation")
    scoped = session.newSession()
    for key, value in scenario.all_confs().items():
        scoped.conf.set(key, value)
    df = scenario.build(scoped, None)
    session.sparkContext.setJobDescription("aqe-testing: grouped count")
    try:
        df.count()  # a Dataset of its own: df's plan stays unrun
    finally:
        session.sparkContext.setJobDescription(None)
    with pytest.raises(AssertionError, match="has not run yet"):
        assert_aqe(df, expect=["coalesced"])
    result = assert_aqe(df, expect=["coalesced"], query=r"aqe-testing: grouped")
    assert [outcome.query_ids for outcome in result.outcomes] != [()]
    number = result.outcomes[0].query_ids[0]
    assert assert_aqe(scoped, expect=["coalesced"], query=number).passed  # by execution id
    # What a snapshot with query= reads: that execution alone.
    chosen = selected(plan_report(scoped, "aqe-testing: grouped"), "aqe-testing: grouped")
    assert [report.id for report in chosen.queries] == [number]
    with pytest.raises(AssertionError) as error:
        assert_aqe(df, expect=["coalesced"], query="no such description")
    assert "'aqe-testing: grouped count'" in str(error.value)  # the executions to choose from


@pytest.mark.spark
def test_assert_aqe_runs_no_sql_execution(spark):
    generator, session = spark
    df = ran(generator, session, "coalesced_aggregation")
    before = execution_count(session)
    for _ in range(3):
        assert_aqe(df, expect=["coalesced"])
    session.sparkContext.setJobDescription("aqe-testing: no new execution")
    try:
        df.count()
    finally:
        session.sparkContext.setJobDescription(None)
    after_count = execution_count(session)
    assert after_count == before + 1  # the count is seen: the store is read up to date
    assert_aqe(session, expect=["coalesced"], query="aqe-testing: no new execution")
    assert execution_count(session) == after_count


# ---- the plugin, through pytester -----------------------------------------------------------

INNER_CONFTEST = '''
import sys

import pytest
from pyspark.sql import SparkSession


@pytest.fixture
def scenario():
    """Run a sample generator scenario (loaded by the outer test session) and return its
    DataFrame after collect(); overrides from AQE_TEST_CONFS (key=value;...)."""
    import os

    generator = sys.modules["sample_generator"]
    session = SparkSession.builder.getOrCreate().newSession()

    def run(name):
        found = generator.scenario_named(name)
        overrides = dict(item.split("=", 1) for item in
                         filter(None, os.environ.get("AQE_TEST_CONFS", "").split(";")))
        for key, value in {**found.all_confs(), **overrides}.items():
            session.conf.set(key, value)
        df = found.build(session, None)
        df.collect()
        return df

    return run
'''


@pytest.fixture
def inner(pytester, spark, monkeypatch):
    """A pytester directory whose tests run scenarios in this process's Spark."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("AQE_TEST_CONFS", raising=False)
    pytester.makeconftest(INNER_CONFTEST)
    return pytester


@pytest.mark.spark
def test_plugin_assertions_pass_and_fail_with_the_plan_diff(inner):
    inner.makepyfile(test_joins='''
        import pytest

        def test_broadcast(scenario, aqe):
            aqe.assert_aqe(scenario("smj_to_bhj"), expect=["smj-to-bhj", "local-read>=1"])

        @pytest.mark.aqe(expect=["coalesced"], forbid=["skew-join"])
        def test_marker(scenario, aqe):
            aqe.assert_aqe(scenario("coalesced_aggregation"))

        @pytest.mark.aqe(expect=["smj-to-bhj"])
        def test_marker_fails(scenario, aqe):
            aqe.assert_aqe(scenario("smj_to_bhj_off"))
    ''')
    result = inner.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    text = result.stdout.str()
    assert "aqe-inspect 0.1.0, pyspark " in text  # the report header
    failure = text[text.index("test_marker_fails"):]
    assert "FAIL smj-to-bhj" in failure and "from @pytest.mark.aqe" in failure
    assert "SortMergeJoin" in failure and "Final plan" in failure
    # The whole report, not cut to pytest's assertion-explanation length (no -vv needed).
    assert "expectation(s) not met (1 query read from the DataFrame's executed plan)" in failure
    assert "truncated" not in failure
    # pytest hides the plugin's own frames: the test's line is where it failed.
    assert "aqe_inspect/testing/" not in failure


@pytest.mark.spark
def test_marker_typo_is_an_error_not_a_pass(inner):
    inner.makepyfile(test_typo='''
        import pytest

        @pytest.mark.aqe(expected=["coalesced"])
        def test_typo(aqe):
            aqe.assert_aqe(None)  # the marker is read before any plan

        @pytest.mark.aqe(expect=["coalesed"])
        def test_unknown_kind(aqe):
            aqe.assert_aqe(None)
    ''')
    result = inner.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*takes the keywords expect=, forbid=, query=, each= only "
                                 "(got expected)*", "*coalesed*"])


SNAPSHOT_TEST = '''
def test_grouped(scenario, aqe):
    aqe.snapshot(scenario("coalesced_aggregation"))
    aqe.snapshot(scenario("smj_to_bhj"), name="join")
'''


@pytest.mark.spark
def test_snapshots_are_written_matched_diffed_and_updated(inner, monkeypatch):
    inner.makepyfile(test_snap=SNAPSHOT_TEST)
    folder = inner.path / "__aqe_snapshots__" / "test_snap"
    first = inner.runpytest_inprocess("-p", "no:cacheprovider")
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(["*aqe-inspect snapshots*", "2 snapshot(s) written (new):",
                                "  __aqe_snapshots__/test_snap/test_grouped.txt",
                                "  __aqe_snapshots__/test_snap/test_grouped-join.txt"])
    stored = (folder / "test_grouped.txt").read_text("utf-8")
    assert "rewrite coalesced: AQEShuffleRead" in stored
    assert "SortMergeJoin -> BroadcastHashJoin" in (folder / "test_grouped-join.txt").read_text()

    # The same queries again (new DataFrames, new expression ids), under CI: they match.
    monkeypatch.setenv("CI", "true")
    again = inner.runpytest_inprocess("-p", "no:cacheprovider")
    again.assert_outcomes(passed=1)
    assert "aqe-inspect snapshots" not in again.stdout.str()

    # Coalescing turned off: the rewrite is gone and the diff says so.
    monkeypatch.setenv("AQE_TEST_CONFS", "spark.sql.adaptive.coalescePartitions.enabled=false")
    changed = inner.runpytest_inprocess("-p", "no:cacheprovider")
    changed.assert_outcomes(failed=1)
    text = changed.stdout.str()
    assert "does not match this run's plan" in text and "--aqe-snapshot-update" in text
    assert "-rewrite coalesced: AQEShuffleRead" in text
    assert "+++ plan (this run)" in text
    assert (folder / "test_grouped.txt").read_text("utf-8") == stored  # left as it was

    updated = inner.runpytest_inprocess("-p", "no:cacheprovider", "--aqe-snapshot-update")
    updated.assert_outcomes(passed=1)
    updated.stdout.fnmatch_lines(["1 snapshot(s) updated:",
                                  "  __aqe_snapshots__/test_snap/test_grouped.txt"])
    assert "rewrite coalesced" not in (folder / "test_grouped.txt").read_text("utf-8")

    # Under CI a missing snapshot fails rather than being written.
    (folder / "test_grouped-join.txt").unlink()
    missing = inner.runpytest_inprocess("-p", "no:cacheprovider")
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["*test_grouped-join.txt is missing, and CI=true does not "
                                  "write snapshots*"])
    assert not (folder / "test_grouped-join.txt").exists()


def test_the_page_says_to_install_what_its_example_imports():
    """The pytest page's example imports pytest and pyspark: the page's install command, said
    before the example, brings both (pytest by name, pyspark with the `spark` extra of the
    checkout, as pyproject.toml declares it)."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib
    text = README_EXAMPLE.read_text("utf-8")
    before = text[:text.index("```python")]
    commands = re.findall(r"`(pip install [^`]*)`", before)
    assert commands, f"{README_EXAMPLE.name} says no install command before its example"
    words = commands[0].replace("'", "").split()[2:]
    imported = set(re.findall(r"^(?:from|import) (\w+)", readme_example(), re.M))
    assert imported == {"pytest", "pyspark"}, imported
    assert "pytest" in words, commands[0]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"][
        "optional-dependencies"]
    (checkout,) = [word for word in words if word.startswith(".[")]
    brought = [requirement for extra in checkout[2:-1].split(",") for requirement in extras[extra]]
    assert any(requirement.startswith("pyspark") for requirement in brought), brought


# ---- the README's example, as written --------------------------------------------------------

def readme_example() -> str:
    """The first ```python block of README_EXAMPLE that is a pytest file."""
    text = README_EXAMPLE.read_text("utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    found = [block for block in blocks if "def test_" in block and "aqe" in block]
    assert found, f"{README_EXAMPLE} holds no pytest example"
    return found[0]


@contextlib.contextmanager
def session_kept(session, monkeypatch):
    """Run an example that builds, configures and stops "its" session in this process: the
    session stays up, and its SQL configs are put back after."""
    from pyspark.sql import SparkSession

    conf = session._jsparkSession.sessionState().conf()

    def configs():
        converters = session._jvm.scala.collection.JavaConverters
        return dict(converters.mapAsJavaMapConverter(conf.getAllConfs()).asJava())

    saved = configs()
    monkeypatch.setattr(SparkSession, "stop", lambda self: None)
    try:
        yield
    finally:
        for key, value in configs().items():
            if key not in saved:
                conf.unsetConf(key)
            elif saved[key] != value:
                conf.setConfString(key, saved[key])


@pytest.mark.spark
def test_the_readme_example_works_as_written(pytester, spark, monkeypatch):
    _, session = spark
    monkeypatch.delenv("CI", raising=False)
    example = readme_example()
    name = re.search(r"^# (test_\w+)\.py$", example, re.M).group(1)
    pytester.makepyfile(**{name: example})
    with session_kept(session, monkeypatch):
        result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
        result.assert_outcomes(passed=example.count("\ndef test_"))
        assert list((pytester.path / "__aqe_snapshots__" / name).iterdir())
        monkeypatch.setenv("CI", "true")  # and again: the snapshot written matches
        again = pytester.runpytest_inprocess("-p", "no:cacheprovider")
        again.assert_outcomes(passed=example.count("\ndef test_"))
