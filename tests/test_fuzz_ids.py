"""Malformed ids (issue 48, item 14): every JSON type at every id field of a real event log's
events and of real History Server JSON. An id that is not one (a list, an object, a string,
a fraction, true or false, null, a negative number or one past a Java long) is a located
note (the event, node or edge skipped, the rest read) or a one-line error naming the file:
exit 0 or 1 with a note, or exit 2 with one line; never an internal error, never a
traceback; and the compiled core and its pure-Python twin print the same bytes.

The material: the sample generator's event logs (real PySpark 4.3.0 and 3.5.9 runs) and the
History Server's own `/sql` answers saved in tests/fixtures/eventlogs/addresses/.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, Iterator, List, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import AQE_INSPECT, IN_CI, ROOT, SAMPLE_PLANS

EVENT_LOGS = [SAMPLE_PLANS / "spark-4.3.0" / "skew_join" / "eventlog.json",
              SAMPLE_PLANS / "spark-3.5.9" / "multi_rewrite" / "eventlog.json"]
ADDRESSES = ROOT / "tests" / "fixtures" / "eventlogs" / "addresses"
HISTORY = [ADDRESSES / "spark-4.3.0" / "history_sql.json",
           ADDRESSES / "spark-3.5.9" / "history_sql.json"]
#: A key that holds an id: `executionId`, `Stage ID`, `accumulatorId`, `fromId`, `id`, ...
ID_KEY = re.compile(r"(?:^id$|Id$|ID$|IDs$|Ids$)")
#: One value of every JSON type, and the numbers an id must not be.
EVERY_TYPE: List[Any] = [[], {"id": 1}, "7", 1.5, True, None, -1, 2 ** 63, 10 ** 40]
COMMANDS = (("diff", "--format", "json"), ("check", "--forbid", "skew-join"),
            ("parse", "--format", "json"))


def _id_keys(value: Any) -> List[str]:
    """Every id key in a decoded JSON value, walked without recursion."""
    found, stack = set(), [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.update(key for key in item if ID_KEY.search(key))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return sorted(found)


def _sites(value: Any) -> List[Tuple[Any, ...]]:
    """The path (keys and indexes) of every id field in `value`."""
    found, stack = [], [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                if ID_KEY.search(key):
                    found.append((*path, key))
                stack.append((inner, (*path, key)))
        elif isinstance(item, list):
            stack.extend((inner, (*path, index)) for index, inner in enumerate(item))
    return sorted(found, key=str)


def _replaced(value: Any, key: str, new: Any) -> Any:
    """`value` with every field named `key` set to `new`."""
    if isinstance(value, dict):
        return {k: new if k == key else _replaced(v, key, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, key, new) for v in value]
    return value


def _set(value: Any, path: Tuple[Any, ...], new: Any) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = new


def _events(path: Path) -> List[Any]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _write(target: Path, kind: str, document: Any) -> Path:
    if kind == "log":
        target.write_text("".join(json.dumps(event) + "\n" for event in document), "utf-8")
    else:
        target.write_text(json.dumps(document, indent=2), "utf-8")
    return target


def _sweep(folder: Path) -> Iterator[Path]:
    """Every id key of each input set to each value of EVERY_TYPE (every occurrence at once),
    each a file in `folder`."""
    number = 0
    for kind, sources in (("log", EVENT_LOGS), ("history", HISTORY)):
        for source in sources:
            document = _events(source) if kind == "log" else json.loads(source.read_text("utf-8"))
            for key in _id_keys(document):
                for value in EVERY_TYPE:
                    number += 1
                    yield _write(folder / f"{number:04d}.{kind}.json", kind,
                                 _replaced(document, key, value))


def check_answer(path: Path, code: int, out: str, err: str) -> None:
    """Exit 0 or 1 (any note is one of the run's); or exit 2 and one line naming the file;
    never an internal error or a traceback."""
    assert "Traceback" not in err and "internal error" not in err, (path, err[-2000:])
    assert code in (0, 1, 2), (path, code, err[-2000:])
    if code == 2:
        assert err.startswith("aqe-inspect: error: ") and err.count("\n") == 1, (path, err)
        assert path.name in err, (path, err)


def _run_here(path: Path, command: Tuple[str, ...]) -> Tuple[int, str, str]:
    from aqe_inspect.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([command[0], str(path), *command[1:]])
    return code, out.getvalue(), err.getvalue()


# ---- the installed command, both routes: the cases the issue names -------------------------

def _installed(args: List[str], cwd: Path, pure: bool) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items()
           if key != "AQE_INSPECT_PURE_PYTHON"}
    env.update(COLUMNS="100", **({"AQE_INSPECT_PURE_PYTHON": "1"} if pure else {}))
    return subprocess.run([*AQE_INSPECT, *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120)


def _compiled_installed() -> bool:
    done = subprocess.run([*AQE_INSPECT, "--version"], capture_output=True, text=True,
                          timeout=60)
    return "compiled by Cython" in done.stdout


def _named_cases(folder: Path) -> List[Tuple[Path, str]]:
    """The issue's cases on real material: `executionId` a list or an object in every SQL
    event of an event log, or in one execution's start only; `edges[].fromId` a list, and an
    execution's `id` an object, in History Server JSON. Each with the words its note says."""
    cases = []
    events = _events(EVENT_LOGS[0])
    for value, words in (([], "executionId is a list"), ({}, "executionId is an object")):
        every = [{**e, "executionId": value} if "executionId" in e else e for e in events]
        cases.append((_write(folder / f"every_{type(value).__name__}.json", "log", every),
                      words))
    start = next(i for i, e in enumerate(events) if e["Event"].endswith("SQLExecutionStart"))
    one = [dict(e) for e in events]
    one[start]["executionId"] = []
    cases.append((_write(folder / "start_list.json", "log", one),
                  f"start_list.json:{start + 1}: an SQL event whose executionId is a list"))
    history = json.loads(HISTORY[0].read_text("utf-8"))
    history[0]["edges"][0]["fromId"] = []
    cases.append((_write(folder / "edge_list.json", "history", history),
                  "execution 0: edges[0].fromId is a list"))
    history = json.loads(HISTORY[0].read_text("utf-8"))
    history[0]["id"] = {}
    cases.append((_write(folder / "id_object.json", "history", history),
                  "entry 1: id is an object; skipped"))
    return cases


def test_the_issues_malformed_ids_are_notes_through_the_installed_command(tmp_path):
    """`"executionId": []` or `{}`, `edges[].fromId: []`, an `id` object: every command said
    `internal error (TypeError: unhashable type: 'list')`. Now a note naming the file and
    line and the field (or, where nothing is left to read, one line naming the file: exit
    2), the same bytes on the compiled and the pure route."""
    routes = (True, False) if _compiled_installed() else (True,)
    if IN_CI:
        assert routes == (True, False), "CI=true but the installed command is not compiled"
    for path, words in _named_cases(tmp_path):
        for command in COMMANDS:
            printed = {}
            for pure in routes:
                done = _installed([command[0], path.name, *command[1:]], tmp_path, pure)
                check_answer(path, done.returncode, done.stdout, done.stderr)
                said = " ".join((done.stdout + done.stderr).split())
                assert words in said, (path.name, command, pure, said[-1500:])
                printed[pure] = (done.returncode, done.stdout, done.stderr)
            assert len(set(printed.values())) == 1, (path.name, command)


# ---- every JSON type at every id field, both routes ----------------------------------------

_EACH = r"""
import io, json, sys
from contextlib import redirect_stderr, redirect_stdout
from aqe_inspect import native
from aqe_inspect.cli import main
answers = {}
for line in open(sys.argv[1], encoding="utf-8"):
    path, *command = line.rstrip("\n").split("\t")
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([command[0], path, *command[1:]])
    answers[line] = [code, out.getvalue(), err.getvalue()]
json.dump({"route": native.describe(), "answers": answers}, open(sys.argv[2], "w"))
"""


def test_every_json_type_at_every_id_field_both_routes(tmp_path):
    """Each id key of two real event logs and two real History Server answers, set to each
    JSON type (every occurrence at once), through `diff`: never an
    internal error; the compiled and the pure route answer byte for byte alike."""
    files = list(_sweep(tmp_path))
    assert len(files) > 400, len(files)
    listing = tmp_path / "inputs.tsv"
    listing.write_text("".join(f"{path}\t" + "\t".join(command) + "\n"
                               for path in files for command in COMMANDS[:1]), "utf-8")
    python = Path(AQE_INSPECT[0]).with_name("python") if AQE_INSPECT[0].endswith(
        "aqe-inspect") else Path(sys.executable)
    routes = (True, False) if _compiled_installed() else (True,)
    running = {}
    for pure in routes:  # both at once: one core each
        out = tmp_path / f"{'pure' if pure else 'compiled'}.json"
        env = {key: value for key, value in os.environ.items()
               if key != "AQE_INSPECT_PURE_PYTHON"}
        env.update(COLUMNS="100", **({"AQE_INSPECT_PURE_PYTHON": "1"} if pure else {}))
        running[pure] = (out, subprocess.Popen(
            [str(python), "-c", _EACH, str(listing), str(out)], cwd=tmp_path, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = {}
    for pure, (out, process) in running.items():
        _, errors = process.communicate(timeout=1500)
        assert process.returncode == 0, errors[-3000:]
        results[pure] = json.loads(out.read_text("utf-8"))
    for line, (code, out, err) in results[True]["answers"].items():
        check_answer(Path(line.split("\t")[0]), code, out, err)
    if False in results:
        assert results[False]["route"].startswith("core: compiled by Cython")
        differ = [line for line, answer in results[True]["answers"].items()
                  if results[False]["answers"][line] != answer]
        assert differ == [], differ[:5]


# ---- Hypothesis: any JSON value at any one id field ----------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats()
    | st.text(max_size=20) | st.sampled_from([*EVERY_TYPE, [], {}, 2 ** 64, 3.0, ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=6)
FUZZ = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
_LOADED = {}


def _document(kind: str, source: Path) -> Tuple[Any, List[Tuple[Any, ...]]]:
    if source not in _LOADED:
        document = _events(source) if kind == "log" else json.loads(source.read_text("utf-8"))
        _LOADED[source] = (document, _sites(document))
    document, sites = _LOADED[source]
    return json.loads(json.dumps(document)), sites


@st.composite
def id_damaged(draw) -> Tuple[str, Any]:
    kind = draw(st.sampled_from(["log", "history"]))
    document, sites = _document(kind, draw(st.sampled_from(EVENT_LOGS if kind == "log"
                                                           else HISTORY)))
    for _ in range(draw(st.integers(1, 3))):
        _set(document, draw(st.sampled_from(sites)), draw(JSON_VALUES))
    return kind, document


@FUZZ
@given(damaged=id_damaged(), command=st.sampled_from(COMMANDS))
def test_any_json_value_at_any_id_field_is_a_note_or_one_line(tmp_path, damaged, command):
    kind, document = damaged
    path = _write(tmp_path / f"fuzzed.{kind}.json", kind, document)
    code, out, err = _run_here(path, command)
    check_answer(path, code, out, err)
