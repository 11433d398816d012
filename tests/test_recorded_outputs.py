"""Every output on every sample, byte for byte as recorded: the safety net of a change that must
not change behaviour (moving modules into folders, a refactoring).

Inputs: every entry of every scenario folder `sample_plans/spark-*/<scenario>/`, by what is
there (no list to keep up to date): the plan texts of each explain mode, the driver logs, the
event logs of every codec and layout (a rolling log's folder is one input, an in-progress or cut
log one), History Server JSON; `truth.json`, `queries.json` and `advised.json` (the generators' answer keys,
not inputs) and dot-files are left out. Each `X_before.txt` with its `X_after.txt` is one more
input, the pair. `test_every_indexed_log_is_an_input` checks that sample_plans/eventlogs.json
lists nothing this misses.

Commands: `diff --format F` for every format F of the tool, and `parse --format json` (one
path: not of a pair). Recorded for each: the exit code, the SHA-256 of standard output and, when
it is not empty, of standard error (UTF-8). The whole texts would be ~100 MB; their hashes are
in tests/snapshots/recorded_outputs.json, grouped by Spark line and scenario, one test each.

Runs in this process (`aqe_inspect.cli.main`), from the checkout's root with paths relative to
it, `COLUMNS=100`, `NO_COLOR=1`, `TERM=dumb`, standard output not a terminal: nothing depends on
where the clone lives or on the terminal. Outputs hold no time and no random id (checked: the
html page says so of itself and was run twice to compare; recording runs every command twice and
refuses to record outputs that differ), so nothing is normalised. The html pages do hold paths
of the machine that generated the samples (`/work/wt-gen/sample_plans/event_log_job.py:160`, a
call site Spark wrote into the logs): part of the input, not of this machine. SARIF names the
tool's version (`__version__`): kept, since it changes only on a release; the record notes the
version it was made with, and a mismatch under another version says so.

On a mismatch the failure names each input, command and format that differ and the shell command
that prints the output, to compare with the same command run at the commit the record was made
at (`git log tests/snapshots/recorded_outputs.json`).

To record anew, on purpose (an intended change of output; never for a move that must not change
any): `AQE_RECORD=1 pytest tests/test_recorded_outputs.py` (refused under CI), then review
`git diff tests/snapshots/recorded_outputs.json`: every changed line is a changed output.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shlex
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from aqe_inspect import __version__
from aqe_inspect.cli import main
from aqe_inspect.formats import FORMAT_NAMES

from .conftest import IN_CI, ROOT, SAMPLE_PLANS

RECORD = ROOT / "tests" / "snapshots" / "recorded_outputs.json"
RECORDING = os.environ.get("AQE_RECORD") == "1"
ENVIRONMENT = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
NOT_INPUTS = {"truth.json", "queries.json", "advised.json"}
COMMANDS = [("diff", name) for name in FORMAT_NAMES] + [("parse", "json")]


def scenario_folders() -> List[str]:
    """`spark-X/scenario` of every scenario folder, sorted."""
    return sorted(f"{line.name}/{folder.name}"
                  for line in SAMPLE_PLANS.glob("spark-*") if line.is_dir()
                  for folder in line.iterdir() if folder.is_dir())


def inputs_of(group: str) -> List[Tuple[str, ...]]:
    """The inputs of a scenario folder: each entry alone, then each before/after pair. Paths
    relative to the checkout's root."""
    folder = SAMPLE_PLANS / group
    names = sorted(p.name for p in folder.iterdir()
                   if not p.name.startswith(".") and p.name not in NOT_INPUTS)
    prefix = f"sample_plans/{group}/"
    found: List[Tuple[str, ...]] = [(prefix + name,) for name in names]
    for name in names:
        if name.endswith("_before.txt") and name.replace("_before", "_after") in names:
            found.append((prefix + name, prefix + name.replace("_before", "_after")))
    return found


def commands_of(paths: Tuple[str, ...]) -> List[List[str]]:
    return [[command, *paths, "--format", fmt] for command, fmt in COMMANDS
            if command == "diff" or len(paths) == 1]


def key(group: str, args: List[str]) -> str:
    """The record's name of a command: its arguments, the folder's prefix left out."""
    return " ".join(arg.replace(f"sample_plans/{group}/", "") for arg in args)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def outcome(args: List[str]) -> str:
    """`EXIT STDOUT-SHA256[ STDERR-SHA256]` of the CLI run in this process."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exit_:  # a usage error exits rather than returns
            code = exit_.code
    fields = [str(code), _sha(out.getvalue())]
    if err.getvalue():
        fields.append(_sha(err.getvalue()))
    return " ".join(fields)


def reproduce(args: List[str]) -> str:
    env = " ".join(f"{k}={v}" for k, v in ENVIRONMENT.items())
    return (f"cd {shlex.quote(str(ROOT))} && {env} PYTHONIOENCODING=utf-8 aqe-inspect "
            + " ".join(shlex.quote(a) for a in args) + " | sha256sum")


@pytest.fixture(scope="module")
def record():
    """The record, as loaded; when recording, written back after the module's tests, the
    groups of scenario folders that are gone left out."""
    held = json.loads(RECORD.read_text("utf-8")) if RECORD.is_file() else {}
    held.setdefault("outputs", {})
    yield held
    if RECORDING and not IN_CI:
        groups = set(scenario_folders())
        outputs = {g: held["outputs"][g] for g in sorted(held["outputs"]) if g in groups}
        lines = ['{', f'  "about": {json.dumps(ABOUT)},', f'  "version": "{__version__}",',
                 '  "outputs": {']
        for number, group in enumerate(outputs):
            lines.append(f'    {json.dumps(group)}: {{')
            entries = list(outputs[group].items())
            for index, (name, value) in enumerate(entries):
                comma = "," if index < len(entries) - 1 else ""
                lines.append(f'      {json.dumps(name)}: {json.dumps(value)}{comma}')
            lines.append("    }" + ("," if number < len(outputs) - 1 else ""))
        lines += ["  }", "}"]
        RECORD.write_text("\n".join(lines) + "\n", "utf-8")


ABOUT = ("Exit code and SHA-256 of standard output (and of standard error when not empty) of "
         "aqe-inspect on every sample input; see tests/test_recorded_outputs.py")


@pytest.fixture
def fixed_environment(monkeypatch):
    monkeypatch.chdir(ROOT)
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("FORCE_COLOR", raising=False)


@pytest.mark.parametrize("group", scenario_folders())
def test_outputs_are_as_recorded(group, record, fixed_environment):
    got: Dict[str, str] = {}
    argv: Dict[str, List[str]] = {}
    for paths in inputs_of(group):
        for args in commands_of(paths):
            argv[key(group, args)] = args
            got[key(group, args)] = outcome(args)
            if RECORDING:
                again = outcome(args)
                assert again == got[key(group, args)], \
                    f"not deterministic, not recorded: {reproduce(args)}"
    if RECORDING:
        if IN_CI:
            pytest.fail("AQE_RECORD=1 under CI: record on a developer's machine and commit it")
        record["outputs"][group] = got
        return
    want = record["outputs"].get(group)
    assert want is not None, \
        f"no record of {group}: run AQE_RECORD=1 pytest tests/test_recorded_outputs.py"
    problems = []
    for name in sorted(set(want) | set(got)):
        if want.get(name) == got.get(name):
            continue
        if name not in want:
            problems.append(f"  new, not recorded: {name}")
        elif name not in got:
            problems.append(f"  recorded, no longer run (input gone?): {name}")
        else:
            problems.append(f"  {name}\n    exit and hashes recorded {want[name]}\n"
                            f"                        now {got[name]}\n"
                            f"    reproduce: {reproduce(argv[name])}")
    version = record.get("version")
    note = "" if version == __version__ else \
        f"\n(recorded under version {version}, this is {__version__}: SARIF names the version)"
    assert not problems, (f"{len(problems)} output(s) of sample_plans/{group} differ from the "
                          f"record:\n" + "\n".join(problems) + note)


def test_every_indexed_log_is_an_input():
    """The samples' index lists no event log or History Server JSON the test leaves out."""
    index = json.loads((SAMPLE_PLANS / "eventlogs.json").read_text("utf-8"))
    covered = {paths[0] for group in scenario_folders() for paths in inputs_of(group)}
    missing = [e["path"] for e in index["logs"] if f"sample_plans/{e['path']}" not in covered]
    assert not missing


def test_the_record_holds_every_scenario_and_no_other(record):
    if RECORDING:
        pytest.skip("recording")
    assert sorted(record["outputs"]) == scenario_folders()
