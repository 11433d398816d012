"""Every ```console block of the site runs as shown: each `$ aqe-inspect ...` line is run on
the bundled samples (in a folder of its own where `sample_plans` is the checkout's), its exit
code is the one its `# exit N` comment says (0 when none), and the lines shown after it are
what it prints now (a last line `...` elides the rest). Found by the issue-37 trial: the
snapshot page's output was of an older release, on placeholder files that exit 2."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import List, Tuple

import pytest

from .conftest import AQE_INSPECT, ROOT, SAMPLE_PLANS, user_env

PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
#: The width the shown outputs are printed at.
COLUMNS = "92"


def _sessions() -> List[Tuple[str, int, List[Tuple[str, int, List[str]]]]]:
    """(page, line, [(command, exit code, lines shown)]) of each console block."""
    found = []
    for page in PAGES:
        text = page.read_text("utf-8")
        for block in re.finditer(r"```console\n(.*?)```", text, re.S):
            steps: List[Tuple[str, int, List[str]]] = []
            for line in block.group(1).splitlines():
                if line.startswith("$ "):
                    command, _, comment = line[2:].partition("#")
                    code = re.search(r"exit (\d)", comment)
                    steps.append((command.strip(), int(code.group(1)) if code else 0, []))
                elif steps:
                    steps[-1][2].append(line)
            found.append((str(page.relative_to(ROOT)), text.count("\n", 0, block.start()) + 1,
                           steps))
    return found


SESSIONS = _sessions()


def test_there_are_console_blocks():
    assert SESSIONS and all(steps for _, _, steps in SESSIONS)


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: f"{s[0]}:{s[1]}")
def test_each_console_block_runs_as_shown(session, tmp_path):
    page, line, steps = session
    (tmp_path / "sample_plans").symlink_to(SAMPLE_PLANS, target_is_directory=True)
    env = user_env(tmp_path / "cache", COLUMNS=COLUMNS)
    for command, code, shown in steps:
        words = shlex.split(command)
        assert words[0] == "aqe-inspect", (page, line, command)
        done = subprocess.run([*AQE_INSPECT, *words[1:]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == code, (page, line, command, done.stderr)
        printed = (done.stdout + done.stderr).splitlines()
        if shown and shown[-1].strip() == "...":
            shown = shown[:-1]
            printed = printed[:len(shown)]
        assert printed == shown, (page, line, command)
