"""Every output format, of `check` and of `diff`, against a snapshot kept in
tests/snapshots/formats/ (a change to a format is a change to a contract others parse: it
shows in review as a diff of these files). `AQE_UPDATE_SNAPSHOTS=1 pytest` writes them anew."""

from __future__ import annotations

import io
import os
from contextlib import redirect_stderr, redirect_stdout

import pytest

from aqe_inspect import __version__
from aqe_inspect.cli import main
from aqe_inspect.formats import FORMAT_NAMES

from .conftest import IN_CI, ROOT

SNAPSHOTS = ROOT / "tests" / "snapshots" / "formats"
SUFFIX = {"text": "txt", "json": "json", "junit": "xml", "github": "log", "sarif": "sarif",
          "html": "html"}
LOG = "sample_plans/spark-4.3.0/multi_rewrite/eventlog.json"
PLAN = "sample_plans/spark-4.3.0/multi_rewrite/formatted_after.txt"
CONFIG = "tests/fixtures/check/aqe-expect.toml"
COMMANDS = {
    "check": (["check", LOG, "--config", CONFIG], 1),
    "diff": (["diff", PLAN], 0),
}


def output_of(args, monkeypatch) -> tuple:
    monkeypatch.chdir(ROOT)  # paths in reports are relative to the working directory
    monkeypatch.delenv("NO_COLOR", raising=False)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(args)
    # The tool's version is in SARIF's driver: a release is not a format change.
    return code, err.getvalue(), out.getvalue().replace(f'"{__version__}"', '"<version>"')


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("format_name", FORMAT_NAMES)
def test_format_matches_its_snapshot(command, format_name, monkeypatch):
    args, want_code = COMMANDS[command]
    code, err, text = output_of([*args, "--format", format_name], monkeypatch)
    assert (code, err) == (want_code, "")
    snapshot = SNAPSHOTS / f"{command}.{SUFFIX[format_name]}"
    if os.environ.get("AQE_UPDATE_SNAPSHOTS") == "1" and not IN_CI:
        snapshot.write_text(text, "utf-8")
    assert snapshot.is_file(), f"no snapshot {snapshot}: run AQE_UPDATE_SNAPSHOTS=1 pytest"
    assert text == snapshot.read_text("utf-8")


def test_every_snapshot_is_a_format_of_a_command():
    """No stale snapshot is left behind when a format or command goes."""
    want = {f"{command}.{SUFFIX[name]}" for command in COMMANDS for name in FORMAT_NAMES}
    assert {p.name for p in SNAPSHOTS.iterdir()} == want
