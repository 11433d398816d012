"""Every ```console block of the site runs as shown. Its `$ ...` lines run in a folder of their
own where `sample_plans`, `tests` and `examples` are the checkout's: `$ aqe-inspect ...` as the
installed command, any other line (making a cut log with `head`, a broken file with `printf`)
with `bash`. Each exits as its `# exit N` comment says (0 when none) and prints what the page
shows after it, standard output then standard error, at COLUMNS=92. A line `...` in the shown
output stands for lines left out: at the start, before the first shown line; at the end, after
the last; between two runs of lines, between them. Found by the issue-37 trial: the snapshot
page's output was of an older release, on placeholder files that exit 2.

`AQE_UPDATE_DOCS=1` rewrites the shown output of a block that no longer matches with what
the commands print now, keeping each run of lines where its first line is still printed, as
many lines as it had (read the diff before committing it)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import List, Tuple

import pytest

from .conftest import AQE_INSPECT, ROOT, user_env

PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
#: The width the shown outputs are printed at.
COLUMNS = "92"
#: The checkout's folders a command may name, linked into the folder the block runs in.
NAMED = ("sample_plans", "tests", "examples")
#: What a line other than `aqe-inspect` may run: making an input from the samples.
PREPARING = ("head", "printf", "cp", "mkdir", "gzip", "sed")
BLOCK = re.compile(r"^```console\n(.*?)^```", re.S | re.M)
ELIDED = "..."

Step = Tuple[str, int, List[str]]


def _steps(block: str) -> List[Step]:
    steps: List[Step] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            command, _, comment = line[2:].partition(" #")
            code = re.search(r"exit (\d)", comment)
            steps.append((command.strip(), int(code.group(1)) if code else 0, []))
        elif steps:
            steps[-1][2].append(line)
    return steps


def _sessions() -> list:
    found = []
    for page in PAGES:
        text = page.read_text("utf-8")
        for index, block in enumerate(BLOCK.finditer(text)):
            name = f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, block.start()) + 1}"
            found.append(pytest.param(page, index, _steps(block.group(1)), id=name))
    return found


SESSIONS = _sessions()


def runs(shown: List[str]) -> Tuple[List[List[str]], bool, bool]:
    """The runs of lines `shown` holds between its `...` lines, and whether lines were left
    out before the first and after the last."""
    chunks: List[List[str]] = [[]]
    for line in shown:
        if line.strip() == ELIDED:
            chunks.append([])
        else:
            chunks[-1].append(line)
    head, tail = not chunks[0], not chunks[-1]
    return [chunk for chunk in chunks if chunk], head, tail


def shows(printed: List[str], shown: List[str]) -> bool:
    """Whether `shown`, with its `...` lines, is what `printed` is."""
    if not shown:
        return not printed
    chunks, open_head, open_tail = runs(shown)
    at = 0
    for number, chunk in enumerate(chunks):
        pinned = []  # where the run must start: at the start, or at the end, of the output
        if number == 0 and not open_head:
            pinned.append(0)
        if number == len(chunks) - 1 and not open_tail:
            pinned.append(len(printed) - len(chunk))
        starts = pinned[:1] if pinned else range(at, len(printed) - len(chunk) + 1)
        found = next((start for start in starts
                      if start >= at and all(start == p for p in pinned)
                      and printed[start:start + len(chunk)] == chunk), None)
        if found is None:
            return False
        at = found + len(chunk)
    return True


def updated(printed: List[str], shown: List[str]) -> List[str]:
    """`shown` redone from `printed`: each run of lines where its first line is printed (or,
    for the first run when nothing was left out before it, the start), as many lines."""
    if not shown:
        return printed
    chunks, open_head, open_tail = runs(shown)
    out: List[str] = [ELIDED] if open_head and shown and shown[0].strip() == ELIDED else []
    at = 0
    for number, chunk in enumerate(chunks):
        if number == 0 and not open_head:
            start = 0
        else:
            start = next((i for i in range(at, len(printed)) if printed[i] == chunk[0]), None)
            if start is None:
                continue
        if number == len(chunks) - 1 and not open_tail:
            out += printed[start:]
        else:
            out += printed[start:start + len(chunk)]
            out.append(ELIDED)
        at = start + len(chunk)
    if out and out[-1] == ELIDED and not open_tail:
        out.pop()
    return out


def _run(command: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    words = shlex.split(command)
    if words[0] == "aqe-inspect":
        return subprocess.run([*AQE_INSPECT, *words[1:]], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=300)
    assert words[0] in PREPARING, f"a console block may run aqe-inspect or {PREPARING}: {command}"
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


def test_there_are_console_blocks():
    assert len(SESSIONS) >= 15 and all(session.values[2] for session in SESSIONS)


@pytest.mark.parametrize("page,index,steps", SESSIONS)
def test_each_console_block_runs_as_shown(page, index, steps, tmp_path):
    for name in NAMED:
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    env = user_env(tmp_path / "cache", COLUMNS=COLUMNS)
    env.pop("NO_COLOR", None)
    wrong = []
    outputs = []
    for command, code, shown in steps:
        assert not shown or any(line.strip() != ELIDED for line in shown), \
            f"{command}: shows nothing but `...`"
        done = _run(command, tmp_path, env)
        assert done.returncode == code, (command, done.stderr[-2000:])
        printed = (done.stdout + done.stderr).splitlines()
        outputs.append(printed)
        if not shows(printed, shown):
            wrong.append((command, shown, printed))
    if wrong and os.environ.get("AQE_UPDATE_DOCS"):
        _rewrite(page, index, [updated(printed, shown)
                               for (_, _, shown), printed in zip(steps, outputs)])
        pytest.skip(f"rewrote the shown output of {page.name}'s block {index + 1}")
    assert not wrong, "\n\n".join(
        f"$ {command}\nshown:\n" + "\n".join(shown) + "\nprinted:\n" + "\n".join(printed)
        for command, shown, printed in wrong)


def _rewrite(page: Path, index: int, shown: List[List[str]]) -> None:
    text = page.read_text("utf-8")
    block = list(BLOCK.finditer(text))[index]
    lines = []
    steps = iter(shown)
    for line in block.group(1).splitlines():
        if line.startswith("$ "):
            lines.append(line)
            lines += next(steps)
    page.write_text(text[:block.start(1)] + "\n".join(lines) + "\n" + text[block.end(1):],
                    "utf-8")


@pytest.mark.parametrize("shown,printed,expected", [
    (["a", "b"], ["a", "b"], True),
    (["a", "b"], ["a", "b", "c"], False),
    (["a", "..."], ["a", "b", "c"], True),
    (["...", "c"], ["a", "b", "c"], True),
    (["...", "b"], ["a", "b", "c"], False),
    (["a", "...", "c"], ["a", "b", "c"], True),
    (["a", "...", "c", "..."], ["a", "b", "c", "d"], True),
    (["...", "b", "..."], ["a", "b", "c"], True),
    (["...", "x", "..."], ["a", "b", "c"], False),
    (["b", "..."], ["a", "b", "c"], False),
    (["a", "...", "b", "...", "a"], ["a", "b", "a"], True),
    (["c", "...", "a"], ["a", "b", "c"], False),
    (["a"], ["a", "a"], False),
    ([], ["a"], False),
    ([], [], True),
])
def test_elided_lines_are_read_as_the_docstring_says(shown, printed, expected):
    assert shows(printed, shown) is expected


def test_an_update_keeps_what_was_elided():
    assert updated(["x", "a", "B", "c", "d"], ["...", "a", "b", "...", "d"]) == \
        ["...", "a", "B", "...", "d"]
    assert updated(["a", "b", "c"], ["a", "..."]) == ["a", "..."]
