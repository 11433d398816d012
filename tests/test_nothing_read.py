"""No input, no PASS: an input of which no query and no application can be read (an event log
cut before its application started, plain or compressed; History Server JSON none of whose
entries is an execution; a folder with no event log; a driver log with no plan; any of them on
standard input) is exit 2 with one line saying why, in `diff`, `why`, `check`, `compare`,
`parse` alike, and through the library (`api`) as an InspectError. An application that ran
no SQL is read: `diff` and `why` exit 0 with the note, `check` does not pass on it.

The logs are the sample generator's real ones (sample_plans/), cut or thinned here."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from aqe_inspect import api
from aqe_inspect.errors import InspectError

from .conftest import AQE_INSPECT, SAMPLE_PLANS

SCENARIO = SAMPLE_PLANS / "spark-4.3.0" / "skew_join"
PLAIN = SCENARIO / "eventlog.json"
ZSTD = SCENARIO / "eventlog.zstd"
HISTORY = SCENARIO / "history_sql.json"
DRIVER_LOG = SCENARIO / "driver.log"
COMMANDS = (("diff",), ("why",), ("check", "--forbid", "skew-join"), ("parse",))
NOTHING = "no Spark application or SQL execution could be read"


def run(*args: str, stdin: bytes = None) -> subprocess.CompletedProcess:
    return subprocess.run([*AQE_INSPECT, *args], input=stdin, capture_output=True,
                          stdin=None if stdin is not None else subprocess.DEVNULL, timeout=120)


def one_line_error(result: subprocess.CompletedProcess, source: str) -> str:
    assert result.returncode == 2, (result.stdout[-2000:], result.stderr)
    assert result.stdout == b""
    error = result.stderr.decode()
    assert error.startswith(f"aqe-inspect: error: {source}: ") and error.count("\n") == 1, error
    assert "Traceback" not in error and "internal error" not in error
    return error[len(f"aqe-inspect: error: {source}: "):-1]


def _before_the_application(data: bytes) -> bytes:
    """The log's bytes up to the middle of its application's start event."""
    start = data.index(b'{"Event":"SparkListenerApplicationStart"')
    return data[:start + 40]


def _without_sql(data: bytes) -> bytes:
    return b"".join(line for line in data.splitlines(keepends=True)
                    if b"org.apache.spark.sql.execution.ui." not in line)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """{name: (path, what the error says)} of inputs that hold nothing to judge."""
    root = tmp_path_factory.mktemp("nothing")
    zstd40 = root / "app.zstd"
    zstd40.write_bytes(ZSTD.read_bytes()[:40])  # the issue's `head -c 40`
    plain_cut = root / "app-1.inprogress"
    plain_cut.write_bytes(_before_the_application(PLAIN.read_bytes()))
    history = root / "sql.json"
    entries = json.loads(HISTORY.read_text())
    # The real answer as `?details=false&planDescription=false` gives it: each execution
    # with an empty plan description and no nodes or edges.
    history.write_text(json.dumps([dict(entry, planDescription="", nodes=[], edges=[])
                                   for entry in entries]))
    folder = root / "logs"
    folder.mkdir()
    (folder / "README.txt").write_text("Event logs of the nightly jobs.\n")
    (folder / "sizes.csv").write_text("app,bytes\nlocal-1,2048\n")
    driver = root / "driver.log"
    driver.write_text("".join(line for line in DRIVER_LOG.read_text().splitlines(True)
                              if line[:2].isdigit()))  # the log4j messages, no plan lines
    return {
        "zstd cut in its first frame": (zstd40, f"{NOTHING}: no event of a Spark application "
                                                "in it (the last zstd frame (byte offset 0) "
                                                "is cut short"),
        "plain cut before the application": (plain_cut, f"{NOTHING}: its events end before "
                                                        "the application's start event"),
        "History JSON of no execution": (history, "no SQL execution could be read from this "
                                                  "History Server answer (execution "),
        "folder of no event log": (folder, "is a directory with no Spark event log in it"),
        "driver log with no plan": (driver, "with no plan in it"),
    }


CASES = ["zstd cut in its first frame", "plain cut before the application",
         "History JSON of no execution", "folder of no event log", "driver log with no plan"]


@pytest.mark.parametrize("case", CASES)
def test_nothing_read_is_exit_2_in_every_command(inputs, case):
    path, says = inputs[case]
    errors = {one_line_error(run(*command[:1], str(path), *command[1:]), str(path))
              for command in COMMANDS}
    assert len(errors) == 1, errors  # one reason, whatever the command
    assert says in errors.pop()
    # compare: either side.
    for old, new in ((path, PLAIN), (PLAIN, path)):
        assert says in one_line_error(run("compare", str(old), str(new)), str(path))


@pytest.mark.parametrize("case", ["zstd cut in its first frame",
                                  "plain cut before the application",
                                  "History JSON of no execution", "driver log with no plan"])
def test_nothing_read_on_standard_input_is_exit_2_too(inputs, case):
    path, says = inputs[case]
    data = Path(path).read_bytes()
    for command in COMMANDS[:3]:
        assert says in one_line_error(run(*command[:1], "-", *command[1:], stdin=data),
                                      "<stdin>")


def test_history_json_on_standard_input_is_read_as_history_json():
    """Standard input is told by content as a file is: the /sql answer's executions."""
    piped = run("diff", "-", "--format", "json", stdin=HISTORY.read_bytes())
    filed = run("diff", str(HISTORY), "--format", "json")
    assert piped.returncode == filed.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["queries"] and \
        json.loads(piped.stdout)["queries"] == json.loads(filed.stdout.replace(
            json.dumps(str(HISTORY))[1:-1].encode(), b"<stdin>"))["queries"]


@pytest.mark.parametrize("case", CASES)
def test_the_library_raises_what_the_command_prints(inputs, case):
    path, says = inputs[case]
    for call in (lambda: api.diff_input(str(path)), lambda: api.why(str(path)),
                 lambda: api.check_input(str(path), forbid=["skew-join"]),
                 lambda: api.read_document(str(path))):
        with pytest.raises(InspectError) as raised:
            call()
        assert says in str(raised.value)


def test_an_application_that_ran_no_sql_is_a_note_and_no_pass(tmp_path):
    """Its start event read whole, the application is known: `diff` and `why` exit 0 with
    the note; `check` is no PASS on no query (exit 1); `compare` has nothing to compare."""
    for name, data in (("app-no-sql", _without_sql(PLAIN.read_bytes())),
                       ("app-1.inprogress", PLAIN.read_bytes()[:PLAIN.read_bytes().index(
                           b"\n", PLAIN.read_bytes().index(b"SparkListenerApplicationStart"))
                           + 1])):
        path = tmp_path / name
        path.write_bytes(data)
        diff = run("diff", str(path), "--format", "json")
        assert diff.returncode == 0, diff.stderr
        report = json.loads(diff.stdout)
        assert report["queries"] == [] and report["application"]["name"] == \
            "aqe-sample-skew_join"
        assert f"{path}: no SQL execution in this event log" in report["notes"]
        why = run("why", str(path))
        # (wrapped to the terminal's width, as every text output is)
        assert why.returncode == 0 and \
            b"no SQL execution in this event log" in b" ".join(why.stdout.split())
        check = run("check", str(path), "--forbid", "skew-join")
        assert check.returncode == 1 and b"holds no query" in check.stdout
        assert b"PASS" not in check.stdout
