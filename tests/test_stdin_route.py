"""Standard input gives what the same file gives: every sample input, piped, prints what its
file prints, byte for byte but the input's name, in text and JSON (`diff`).

Was: a driver log read from standard input (`cat driver_planchange.log | aqe-inspect diff -`)
was read by another route than a file (every line, and no plan-change log): every `by
CoalesceShufflePartitions (log line N)`, `by OptimizeSkewedJoin` and the plan-change summary
was lost.

Inputs: every file under sample_plans/ a user could give (plan texts, driver logs, event logs
of every codec and layout, each part of a rolling log, History Server JSON; not the
generators, their manifests and truth, nor dot-files), grouped by folder. Each runs in this
process (`aqe_inspect.cli.main`, as test_recorded_outputs.py), once as a file and once as
standard input. So that the text is laid out alike (a long name wraps a line where `<stdin>`
does not), the file is given under a name as long as `<stdin>` (a link to the sample, in a
folder of its own, keeping its suffix), which is then the one difference allowed.
"""

from __future__ import annotations

import io
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from aqe_inspect.cli import main

from .conftest import AQE_INSPECT, SAMPLE_PLANS

STDIN_NAME = "<stdin>"
#: What the generators write beside the inputs: the answer keys, manifests, configurations.
NOT_INPUTS = {"truth.json", "queries.json", "runs.json", "eventlogs.json"}
NOT_INPUT_SUFFIXES = {".py", ".md", ".properties"}
COMMANDS = (("diff", "text"), ("diff", "json"))
ENVIRONMENT = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}


def sample_inputs() -> Dict[str, List[Path]]:
    """Every sample input file, by its folder (relative to sample_plans/)."""
    found: Dict[str, List[Path]] = {}
    for path in sorted(SAMPLE_PLANS.rglob("*")):
        relative = path.relative_to(SAMPLE_PLANS)
        if not path.is_file() or path.name in NOT_INPUTS or \
                path.suffix in NOT_INPUT_SUFFIXES or \
                any(part.startswith(".") for part in relative.parts):
            continue
        found.setdefault(str(relative.parent), []).append(path)
    return found


INPUTS = sample_inputs()


def short_name(path: Path) -> str:
    """A name as long as `<stdin>`, ending as the sample's does where that fits (a codec's
    suffix can tell a file too short for its magic)."""
    suffix = path.suffix if len(path.suffix) < len(STDIN_NAME) else ""
    return "Q" * (len(STDIN_NAME) - len(suffix)) + suffix


def run(args: List[str], stdin: bytes = None) -> Tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exit_:
                code = exit_.code
    finally:
        sys.stdin = saved
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def fixed_environment(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return tmp_path


def test_the_inputs_are_every_kind_of_sample():
    names = [path.name for paths in INPUTS.values() for path in paths]
    assert len(names) > 500
    for kind in ("driver_planchange.log", "driver_json.log", "formatted_after.txt",
                 "eventlog.json", "eventlog.zstd", "eventlog.lz4", "eventlog.snappy",
                 "eventlog.lzf", "eventlog.inprogress", "history_sql.json"):
        assert kind in names, kind
    assert any(name.startswith("events_1_") for name in names)  # a rolling log's part


@pytest.mark.parametrize("folder", sorted(INPUTS))
def test_standard_input_gives_what_the_file_gives(folder, fixed_environment):
    problems = []
    for path in INPUTS[folder]:
        data = path.read_bytes()
        name = short_name(path)
        link = fixed_environment / name
        link.symlink_to(path)
        try:
            for command, output in COMMANDS:
                by_file = run([command, name, "--format", output])
                by_stdin = run([command, "-", "--format", output], data)
                as_stdin = tuple(part.replace(name, STDIN_NAME) if isinstance(part, str)
                                 else part for part in by_file)
                if as_stdin != by_stdin:
                    problems.append(f"{path.relative_to(SAMPLE_PLANS)}: {command} --format "
                                    f"{output}: {_first_difference(as_stdin, by_stdin)}")
        finally:
            link.unlink()
    assert not problems, "\n".join(problems)


def _first_difference(by_file: Tuple, by_stdin: Tuple) -> str:
    if by_file[0] != by_stdin[0]:
        return f"exit {by_file[0]} from the file, {by_stdin[0]} from standard input " \
               f"({by_stdin[2].strip()[:200]!r})"
    for what, mine, theirs in (("output", by_file[1], by_stdin[1]),
                               ("error", by_file[2], by_stdin[2])):
        if mine != theirs:
            lines, others = mine.splitlines(), theirs.splitlines()
            for number, (one, other) in enumerate(zip(lines, others), 1):
                if one != other:
                    return f"{what} line {number}: file {one!r}, stdin {other!r}"
            return f"{what}: {len(lines)} lines from the file, {len(others)} from stdin"
    return "?"


@pytest.mark.parametrize("name", ["driver_planchange.log", "eventlog.zstd", "history_sql.json"])
def test_a_pipe_is_read_as_standard_input_is(name, fixed_environment):
    """A path that is no file (`<(zcat log)`: /dev/fd/N, a pipe; a named pipe) is read once,
    as standard input is: its first bytes, read to tell what it holds, are read again (was:
    lost, the first 64 KiB of a driver log, its lines numbered from there, a compressed event
    log cut), and a driver log's plan-change log is read. Run as the shell runs it: the
    command given the pipe's read end as /dev/fd/N."""
    import subprocess
    import threading

    data = (SAMPLE_PLANS / "spark-3.5.9" / "skew_join" / name).read_bytes()
    read_end, write_end = os.pipe()

    def feed():
        with os.fdopen(write_end, "wb") as handle:
            handle.write(data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    path = f"/dev/fd/{read_end}"
    try:
        by_pipe = subprocess.run([*AQE_INSPECT, "diff", path, "--format", "json"],
                                 pass_fds=(read_end,), capture_output=True, text=True,
                                 timeout=120)
    finally:
        os.close(read_end)
        writer.join(timeout=30)
    by_stdin = subprocess.run([*AQE_INSPECT, "diff", "-", "--format", "json"], input=data,
                              capture_output=True, timeout=120)
    assert (by_pipe.returncode, by_pipe.stderr) == (0, "")
    assert by_pipe.stdout.replace(path, STDIN_NAME) == by_stdin.stdout.decode("utf-8")
    if name == "driver_planchange.log":
        assert '"rule": "OptimizeSkewedJoin"' in by_pipe.stdout


def test_a_log_with_no_plan_is_counted_alike(fixed_environment):
    """A driver log cut before its first plan (its plan-change rule blocks and ordinary
    messages only): the error counts its messages, from standard input as from the file
    (a file is read again for it; standard input, read once, hands every line on until a
    plan is read)."""
    log = SAMPLE_PLANS / "spark-3.5.9" / "skew_join" / "driver_planchange.log"
    lines = log.read_bytes().split(b"\n")
    first_plan = lines.index(b"== Physical Plan ==")
    data = b"\n".join(lines[:first_plan]) + b"\n"
    assert b"=== Applying Rule " in data
    name = "QQQ.log"
    (fixed_environment / name).write_bytes(data)
    by_file = run(["diff", name, "--format", "text"])
    by_stdin = run(["diff", "-", "--format", "text"], data)
    assert by_file[0] == by_stdin[0] == 2
    assert "messages) with no plan in it" in by_stdin[2]
    assert by_file[2].replace(name, STDIN_NAME) == by_stdin[2]
