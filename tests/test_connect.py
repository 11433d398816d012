"""`assert_aqe`, the pytest plugin and snapshots on Spark Connect, against a real server.

The server is PySpark 4.x's own: `sbin/start-connect-server.sh` from the installed pyspark
package (SparkConnectServer from its jars), on loopback ports chosen free, with its event log
and its UI on, in a process group of its own; the module's fixture stops it
(`stop-connect-server.sh`, same pid folder, then whatever is left of its process group) and
checks that the process is gone, on SIGTERM to pytest too (tests/stopping.py). Every sample
scenario the generator defines runs through a Connect client and through the classic session
of the same process; `assert_aqe` must pass and fail alike on each rewrite kind. Under CI=true
nothing here may skip (the `connect` extra is installed in CI's venv).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from aqe_inspect.testing import assert_aqe, plan_report
from aqe_inspect.testing import connect as connect_module

from . import stopping
from .conftest import AQE_INSPECT, IN_CI

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
DOCS_EXAMPLE = ROOT / "docs" / "pytest.md"

pytestmark = pytest.mark.spark


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _connect_pyspark():
    """The installed pyspark, when it can be a Spark Connect client (4.x, the connect extra's
    gRPC, pandas and Arrow); else skip (a failure under CI)."""
    reason = None
    try:
        import pyspark
        from pyspark.sql.connect.utils import check_dependencies

        try:
            check_dependencies()
        except TypeError:  # 4.0-4.1 name the module asking
            check_dependencies("pyspark.sql.connect.session")
        if int(pyspark.__version__.split(".")[0]) < 4:
            reason = f"pyspark {pyspark.__version__}: DataFrame.executionInfo needs 4.0+"
    except ImportError as error:
        reason = f"no Spark Connect client ({error}); pip install '.[connect]' from the checkout"
    if reason:
        if IN_CI:
            pytest.fail(f"CI=true: {reason}")
        pytest.skip(reason)
    return pyspark


class ConnectServer:
    """A Spark Connect server started from the pyspark package's own scripts."""

    def __init__(self, home: Path, work: Path):
        self.home, self.work = home, work
        self.port, self.ui_port = _free_port(), _free_port()
        self.event_log = work / "events"
        self.event_log.mkdir(parents=True)
        self.env = {**os.environ, "SPARK_HOME": str(home), "SPARK_PID_DIR": str(work / "pid"),
                    "SPARK_LOG_DIR": str(work / "log"),
                    "SPARK_IDENT_STRING": f"aqe-test-{uuid.uuid4().hex[:8]}",
                    "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
                    # The scripts find java and the Python workers through PATH.
                    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        self.env.pop("SPARK_REMOTE", None)
        self.env.pop("SPARK_CONNECT_MODE_ENABLED", None)

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"

    #: The process group the start script made (the server's JVM stays in it).
    group = None

    def start(self) -> None:
        script = self.home / "sbin" / "start-connect-server.sh"
        starting = subprocess.Popen(
            ["bash", str(script), "--master", "local[2]",
             "--conf", f"spark.connect.grpc.binding.address=127.0.0.1",
             "--conf", f"spark.connect.grpc.binding.port={self.port}",
             "--conf", "spark.driver.host=127.0.0.1",
             "--conf", "spark.driver.bindAddress=127.0.0.1",
             "--conf", f"spark.ui.port={self.ui_port}",
             "--conf", "spark.port.maxRetries=0",
             "--conf", "spark.eventLog.enabled=true",
             "--conf", f"spark.eventLog.dir={self.event_log.as_uri()}",
             "--conf", "spark.sql.ui.retainedExecutions=1000"],
            env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True)
        self.group = starting.pid  # known before anything can interrupt the start
        said, _ = starting.communicate(timeout=120)
        if starting.returncode:
            raise RuntimeError(f"{script.name} failed ({starting.returncode}):\n"
                               f"{said.decode('utf-8', 'replace')[-3000:]}")
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self._answers():
                return
            if self.pid() is None or not _alive(self.pid()):
                break
            time.sleep(1)
        log = "\n".join(p.read_text("utf-8", "replace")[-3000:]
                        for p in (self.work / "log").glob("*.out"))
        self.stop()
        raise RuntimeError(f"the Spark Connect server did not start on {self.url}:\n{log}")

    def _answers(self) -> bool:
        for path in (self.work / "log").glob("*.out"):
            if "Spark Connect server started" in path.read_text("utf-8", "replace"):
                with socket.socket() as probe:
                    return probe.connect_ex(("127.0.0.1", self.port)) == 0
        return False

    _pid = None

    def pid(self):
        files = list((self.work / "pid").glob("*.pid"))
        if files:
            self._pid = int(files[0].read_text().strip())
            return self._pid
        return None

    def stop(self) -> None:
        """The stop script, then whatever is left of the start's process group (a start
        interrupted before its pid file was written leaves a server only the group names)."""
        with stopping.held():
            pid = self.pid() or self._pid
            if pid is not None:
                subprocess.run(["bash", str(self.home / "sbin" / "stop-connect-server.sh")],
                               env=self.env, capture_output=True, timeout=120)
            deadline = time.monotonic() + 60
            while pid is not None and _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.5)
            if pid is not None and _alive(pid):  # ours, by its own pid file
                os.kill(pid, signal.SIGKILL)
            stopping.stop_group(self.group, grace=10)


_alive = stopping.alive  # a zombie left by the daemon script's fork is gone for our purposes


@pytest.fixture(scope="module")
def server():
    pyspark = _connect_pyspark()
    home = Path(pyspark.__file__).parent
    if not (home / "sbin" / "start-connect-server.sh").is_file():
        message = f"pyspark {pyspark.__version__} ships no sbin/start-connect-server.sh"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    # A folder of its own, not pytest's: pytest removes old base folders, and other pytest
    # sessions on the machine may remove this one while the server still writes in it.
    stopping.install()  # SIGTERM to pytest stops the server too
    work = Path(tempfile.mkdtemp(prefix="aqe-connect-server-"))
    started = ConnectServer(home, work)
    pid = None
    try:
        started.start()
        pid = started.pid()
        yield started
    finally:
        with stopping.held():
            started.stop()
            shutil.rmtree(work, ignore_errors=True)
    assert pid is not None and not _alive(pid)
    assert not stopping.group_members(started.group)


#: PySpark marks a process that made a Connect session with this variable, and from then on
#: builds Columns (`F.col`) for Connect. The classic session of the same process must build
#: its own: the variable is set for this module's tests only, and off around classic runs.
CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"


@contextlib.contextmanager
def mode(connect: bool):
    before = os.environ.get(CONNECT_MODE)
    if connect:
        os.environ[CONNECT_MODE] = "1"
    else:
        os.environ.pop(CONNECT_MODE, None)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CONNECT_MODE, None)
        else:
            os.environ[CONNECT_MODE] = before


@pytest.fixture(autouse=True)
def connect_mode(spark):
    """Connect's Columns in this module's tests (the classic session exists before)."""
    with mode(True):
        yield


@pytest.fixture(scope="module")
def remote(server, spark):
    # Connect's own builder: pyspark.sql.SparkSession.builder refuses a remote session in a
    # process that runs a classic one (this suite's).
    from pyspark.sql.connect.session import SparkSession

    with mode(True):
        session = SparkSession.builder.remote(server.url).getOrCreate()
    yield session
    # Every client is closed while the server is up: an open one calls the server at exit
    # (pyspark's atexit clean-up) and, the server gone, retries for minutes.
    with mode(True):
        for made in [*SESSIONS, session]:
            made.stop()
    SESSIONS.clear()


#: The Connect sessions this module's tests made (each a client of its own), closed at the end.
SESSIONS: list = []


def new_session(remote):
    made = remote.newSession()
    SESSIONS.append(made)
    return made


def connect_ran(generator, remote, name, scratch):
    """A scenario's DataFrame after `collect()`, in a Connect session of its own."""
    scenario = generator.scenario_named(name)
    session = new_session(remote)
    for key, value in scenario.all_confs().items():
        session.conf.set(key, value)
    df = scenario.build(session, scratch)
    df.collect()
    return df


def classic_ran(generator, session, name, scratch):
    scenario = generator.scenario_named(name)
    with mode(False):
        scoped = session.newSession()
        for key, value in scenario.all_confs().items():
            scoped.conf.set(key, value)
        df = scenario.build(scoped, scratch)
        df.collect()
    return df


def shown_kinds(generator):
    """The kinds the metrics tree shows (the others are not judged from it, with a note)."""
    from aqe_inspect.sources.connect import UNSHOWN_KINDS

    return tuple(kind for kind in generator.REWRITE_KEYS if kind not in UNSHOWN_KINDS)


def holds(df, kind: str, **where) -> bool:
    return answer(df, kind, **where) == "met"


def answer(df, kind: str, **where) -> str:
    """`met`, `not met` or `unfinished`: what `assert_aqe(df, expect=[kind])` says."""
    try:
        with mode(not hasattr(df, "_jdf")):
            assert_aqe(df, expect=[kind], **where)
    except AssertionError as error:
        return "unfinished" if "unfinished" in str(error) else "not met"
    return "met"


#: Where the recorded client material of each scenario is written (AQE_RECORD_CONNECT=1):
#: the metrics tree's rows and the explain printed after the action, for the tests that read
#: a Connect client's evidence without a server (tests/test_connect_recorded.py).
RECORDED = ROOT / "tests" / "fixtures" / "connect"


def record_client_material(df, name: str) -> None:
    import json

    from aqe_inspect.testing.connect import _metric_items, explain_text

    rows = []
    for item in _metric_items(df.executionInfo.metrics):
        if not isinstance(item, dict):
            item = {"name": item.name, "plan_id": item.plan_id,
                    "parent_plan_id": item.parent_plan_id,
                    "metrics": [{"name": m.name, "value": m.value, "type": m.metric_type}
                                for m in item.metrics]}
        rows.append(item)
    folder = RECORDED / f"pyspark-{df.sparkSession.version}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(
        {"scenario": name, "rows": rows, "explain": explain_text(df)}, indent=1,
        default=str) + "\n")


def _scenarios():
    import importlib.util

    spec = importlib.util.spec_from_file_location("_connect_scenarios",
                                                  ROOT / "sample_plans" / "generate.py")
    try:
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    except ImportError:  # no pyspark: the tests skip (or fail under CI) in their fixtures
        return ["coalesced_aggregation"]
    finally:
        sys.modules.pop(spec.name, None)
    # Scenarios tuned by a measuring run set their confs from the JVM's sizes; the rest run
    # as they are on any session.
    return [s.name for s in module.SCENARIOS if s.tune is None]


# ---- every scenario: Connect holds what classic holds ----------------------------------------

@pytest.mark.parametrize("name", _scenarios())
def test_connect_passes_and_fails_as_classic_on_each_kind(spark, remote, server, name,
                                                           tmp_path):
    generator, session = spark
    kinds = shown_kinds(generator)
    on_connect = connect_ran(generator, remote, name, tmp_path / "connect")
    on_classic = classic_ran(generator, session, name, tmp_path / "classic")
    if os.environ.get("AQE_RECORD_CONNECT"):
        record_client_material(on_connect, name)
    connect = {kind: answer(on_connect, kind) for kind in kinds}
    classic = {kind: holds(on_classic, kind) for kind in kinds}
    for kind in kinds:
        if connect[kind] == "unfinished":
            # The client cannot see it all (the subqueries' plans): it says so rather than
            # answer, and the server's own record, read by the same action, answers as the
            # classic session does.
            assert holds(on_connect, kind, ui_url=server.ui_url) is classic[kind], kind
        else:
            assert (connect[kind] == "met") is classic[kind], kind
    # and what the scenario exists to show
    scenario = generator.scenario_named(name)
    for kind, wanted in scenario.expect.items():
        if kind in kinds:
            assert classic[kind] is wanted, kind


#: How many times a pair of runs is made again when Spark itself decided differently in them.
_SPARK_TRIES = 3


def _final_shape(report) -> list:
    """The final plans' operators, each as its name and its arguments with every number left
    out (expression ids, sizes, ids differ between two sessions): equal when Spark made the
    same decisions in two runs of one query."""
    shape = []
    for query_report in report.queries:
        for node in query_report.query.final.walk(inner=True):
            shape.append((node.name, re.sub(r"[0-9]+", "#", node.args or "")))
    return sorted(shape)


def test_counts_match_the_classic_plan_but_subqueries_are_noted(spark, remote, tmp_path):
    generator, session = spark
    for name in ("five_way_join", "skew_join", "multi_rewrite"):
        for attempt in range(1, _SPARK_TRIES + 1):
            counts, shapes = [], []
            for df in (connect_ran(generator, remote, name, tmp_path),
                       classic_ran(generator, session, name, tmp_path)):
                report = _report(df)
                rewrites = [w.kind for q in report.queries for w in q.rewrites]
                counts.append({kind: rewrites.count(kind) for kind in shown_kinds(generator)})
                shapes.append(_final_shape(report))
            # Two runs of a query can re-plan differently (AQE reads run-time statistics, and a
            # loaded machine changes which stage ends first): only runs whose final plans are
            # alike must give the same counts; unlike ones are made again.
            if counts[0] == counts[1] or shapes[0] == shapes[1] or attempt == _SPARK_TRIES:
                break
        assert counts[0] == counts[1], (name, attempt)
    report = plan_report(connect_ran(generator, remote, "scalar_subquery", tmp_path))
    notes = " ".join(note for q in report.queries for note in q.notes)
    assert "subquery plan(s)" in notes and "event_log=" in notes


def _report(df):
    with mode(not hasattr(df, "_jdf")):
        return plan_report(df)


# ---- messages ----------------------------------------------------------------------------------

def test_a_failure_shows_the_plans_side_by_side_and_why_not_from_spark_conf(spark, remote,
                                                                            tmp_path):
    generator, _ = spark
    kept = connect_ran(generator, remote, "smj_to_bhj_off", tmp_path)
    with pytest.raises(AssertionError) as error:
        assert_aqe(kept, expect=["smj-to-bhj>=1"])
    message = str(error.value)
    assert "1 of 1 expectation(s) not met" in message
    assert "FAIL smj-to-bhj>=1" in message and "from assert_aqe" in message
    assert "Initial plan" in message and "Final plan" in message
    assert "SortMergeJoin" in message and "BroadcastHashJoin" not in message
    why = " ".join(message.split())
    assert re.search(r"why not: query 1: SortMergeJoin \(\d+\): blocked: run-time broadcasting "
                     r"is off: spark\.sql\.adaptive\.autoBroadcastJoinThreshold=-1 \(the "
                     r"session\)", why), why

    broadcast = connect_ran(generator, remote, "smj_to_bhj", tmp_path)
    with pytest.raises(AssertionError) as error:
        assert_aqe(broadcast, expect=["local-read"], forbid=["smj-to-bhj"])
    message = str(error.value)
    assert "PASS local-read" in message and "FAIL forbid smj-to-bhj" in message
    assert "[smj-to-bhj]" in message and "BroadcastHashJoin" in message
    assert "Spark Connect metrics tree" in message  # what was read, and what it cannot show


def test_actions_without_metrics_are_named(spark, remote):
    generator, _ = spark
    scenario = generator.scenario_named("coalesced_aggregation")
    session = new_session(remote)
    for key, value in scenario.all_confs().items():
        session.conf.set(key, value)
    unrun = scenario.build(session, None)
    with pytest.raises(AssertionError, match="no plan metrics") as error:
        assert_aqe(unrun, expect=["coalesced"])
    assert "df.collect(), df.toPandas() or df.toArrow()" in str(error.value)
    counted = scenario.build(session, None)
    counted.count()
    with pytest.raises(AssertionError, match="no plan metrics"):
        assert_aqe(counted, expect=["coalesced"])
    for action in ("toPandas", "toArrow"):
        df = scenario.build(session, None)
        getattr(df, action)()
        assert assert_aqe(df, expect=["coalesced"]).passed, action
    with pytest.raises(TypeError, match="event_log="):
        assert_aqe(df, expect=["coalesced"], query="anything")


# ---- the server's record: event log and UI -----------------------------------------------------

def test_event_log_and_ui_give_the_whole_plan_by_operation_and_by_tag(spark, remote, server,
                                                                      tmp_path, monkeypatch):
    # Read at once after the action: assert_aqe itself waits for the server to write its
    # record of the execution (its event log and status store lag the client's answer).
    generator, _ = spark
    broadcast = connect_ran(generator, remote, "smj_to_bhj", tmp_path)
    session = broadcast.sparkSession
    if getattr(broadcast.executionInfo, "operation_id", None):  # PySpark 4.3+
        for where in ({"event_log": str(server.event_log)}, {"ui_url": server.ui_url}):
            result = assert_aqe(broadcast, expect=["smj-to-bhj"], **where)
            text = " ".join(o.query_ids[0] for o in result.outcomes if o.query_ids)
            assert text, where
            # The server's plan text has the build side the metrics tree cannot show.
            report = plan_report(broadcast, None, **where)
            found = [r for q in report.queries for r in q.rewrites if r.kind == "smj-to-bhj"]
            assert found and found[0].numbers.get("build_side") == "BuildRight", where

    tag = f"aqe-{uuid.uuid4().hex[:8]}"
    scenario = generator.scenario_named("coalesced_aggregation")
    for key, value in scenario.all_confs().items():
        session.conf.set(key, value)
    session.addTag(tag)
    try:
        scenario.build(session, None).count()  # no metrics on the client: found by its tag
    finally:
        session.removeTag(tag)
    for where in ({"event_log": str(server.event_log)}, {"ui_url": server.ui_url}):
        result = assert_aqe(None, expect=["coalesced"], query=tag, **where)
        assert result.passed and result.query_count == 1, where
        monkeypatch.setattr(connect_module, "SERVER_SETTLE_SECONDS", 2.0)
        with pytest.raises(AssertionError, match=r"no SQL execution tagged 'no-such-tag'.*"
                                                 r"read for 2 s while the server wrote"):
            assert_aqe(None, expect=["coalesced"], query="no-such-tag", **where)


def _eventually(check, seconds: float = 60):
    """The server writes its event log as events arrive: a command run on it retries a while."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def test_cli_labels_connect_executions_by_tag_and_selects_them(spark, remote, server,
                                                                tmp_path):
    generator, _ = spark
    session = new_session(remote)
    scenario = generator.scenario_named("coalesced_aggregation")
    for key, value in scenario.all_confs().items():
        session.conf.set(key, value)
    tag = f"label-{uuid.uuid4().hex[:8]}"
    session.addTag(tag)
    try:
        scenario.build(session, None).collect()
    finally:
        session.removeTag(tag)

    def labelled():
        out = subprocess.run([*AQE_INSPECT, "check", str(server.event_log), "--query", tag,
                              "--expect", "coalesced"], capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        out = subprocess.run([*AQE_INSPECT, "diff", str(server.event_log), "--query", tag],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        return " ".join(out.stdout.split())

    out = _eventually(labelled)
    assert f"Spark Connect [{tag}] aggregate at generate.py:" in out, out
    assert len(re.findall(r"\bExecution \d+:", out)) == 1, out  # that execution only
    assert "plan {" not in out and "session_id:" not in out


# ---- the pytest plugin on a Connect session ----------------------------------------------------

INNER_CONFTEST = '''
import os
import sys

import pytest
from pyspark.sql.connect.session import SparkSession


@pytest.fixture
def scenario():
    generator = sys.modules["sample_generator"]
    session = SparkSession.builder.remote(os.environ["AQE_TEST_REMOTE"]).getOrCreate()
    session = session.newSession()

    def run(name):
        found = generator.scenario_named(name)
        overrides = dict(item.split("=", 1) for item in
                         filter(None, os.environ.get("AQE_TEST_CONFS", "").split(";")))
        for key, value in {**found.all_confs(), **overrides}.items():
            session.conf.set(key, value)
        df = found.build(session, None)
        df.collect()
        return df

    yield run
    session.stop()  # closed while the server is up
'''


def test_plugin_marker_fixture_and_snapshots_on_connect(spark, server, remote, pytester,
                                                        monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("AQE_TEST_CONFS", raising=False)
    monkeypatch.setenv("AQE_TEST_REMOTE", server.url)
    pytester.makeconftest(INNER_CONFTEST)
    pytester.makepyfile(test_joins='''
        import pytest

        def test_broadcast(scenario, aqe):
            aqe.assert_aqe(scenario("smj_to_bhj"), expect=["smj-to-bhj", "local-read>=1"])

        @pytest.mark.aqe(expect=["coalesced"], forbid=["skew-join"])
        def test_marker(scenario, aqe):
            aqe.assert_aqe(scenario("coalesced_aggregation"))

        @pytest.mark.aqe(expect=["smj-to-bhj"])
        def test_marker_fails(scenario, aqe):
            aqe.assert_aqe(scenario("smj_to_bhj_off"))

        def test_snapshot(scenario, aqe):
            aqe.snapshot(scenario("coalesced_aggregation"))
    ''')
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    text = result.stdout.str()
    failure = text[text.index("test_marker_fails"):]
    assert "FAIL smj-to-bhj" in failure and "from @pytest.mark.aqe" in failure
    assert "SortMergeJoin" in failure and "Final plan" in failure
    assert "autoBroadcastJoinThreshold=-1 (the session)" in " ".join(failure.split())
    stored = (pytester.path / "__aqe_snapshots__" / "test_joins" / "test_snapshot.txt")
    assert "rewrite coalesced: AQEShuffleRead" in stored.read_text("utf-8")

    # Again under CI: the snapshot matches; coalescing off: it does not, and says how.
    monkeypatch.setenv("CI", "true")
    again = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-k", "snapshot")
    again.assert_outcomes(passed=1)
    monkeypatch.setenv("AQE_TEST_CONFS", "spark.sql.adaptive.coalescePartitions.enabled=false")
    changed = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-k", "snapshot")
    changed.assert_outcomes(failed=1)
    assert "-rewrite coalesced: AQEShuffleRead" in changed.stdout.str()


def _connect_example() -> str:
    text = DOCS_EXAMPLE.read_text("utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    found = [block for block in blocks if "def test_" in block and ".remote(" in block]
    assert found, f"{DOCS_EXAMPLE} holds no Spark Connect pytest example"
    return found[0]


def test_the_connect_example_works_as_written(server, remote, pytester, tmp_path):
    example = _connect_example()
    name = re.search(r"^# (test_\w+)\.py$", example, re.M).group(1)
    pytester.makepyfile(**{name: example})
    env = {**os.environ, "SPARK_REMOTE": server.url}
    env.pop("CI", None)
    tests = example.count("\ndef test_")
    for run in range(2):  # the second run, under CI, matches the snapshot the first wrote
        if run:
            env["CI"] = "true"
        out = subprocess.run([str(Path(sys.executable).parent / "pytest"), "-q",
                              "-p", "no:cacheprovider", f"{name}.py"],
                             cwd=pytester.path, env=env, capture_output=True, text=True,
                             timeout=600)
        assert f"{tests} passed" in out.stdout, out.stdout[-4000:] + out.stderr[-2000:]
    assert list((pytester.path / "__aqe_snapshots__" / name).iterdir())
