"""The checkout stays tidy: what the docs' examples write is ignored by git, and no stray file
(a shell accident such as `=1.2`, an empty file at the root) is committed.

The output paths are read from the commands in README.md, docs/, examples/ and the CI files
(`--output X`, `-o X`, `--junitxml X`, `> X`, `python3 -m venv X`), so an example added later
is held to the same rule. The tests need a git checkout and skip without one (an sdist).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Set

import pytest

from .conftest import ROOT

#: Where the commands a user may run from the checkout are written.
SOURCES = ["README.md", ".gitlab-ci.yml", "action.yml", "docs", "examples"]
#: `--output X`, `--output=X`, `-o X`, `--junitxml X`, `> X` / `>> X`, `-m venv X`.
_WRITES = re.compile(r"(?:--output[= ]|--junitxml[= ]|(?<![\w-])-o |(?<![\w>-])>>? ?|-m venv )"
                     r"([A-Za-z0-9_.][A-Za-z0-9_./-]*)(?![\w./:-])")  # not a URL (s3a://...)
#: Written on purpose to be committed: a plan snapshot is kept under version control
#: (docs/commands/snapshot.md) and must not be ignored.
KEPT = {"tests/plans/daily_join.snap"}


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def checkout() -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed: these tests read the checkout's index")
    inside = _git("rev-parse", "--show-toplevel")
    if inside.returncode != 0 or Path(inside.stdout.strip()).resolve() != ROOT.resolve():
        pytest.skip("not a git checkout (an sdist or a copy): nothing to hold to .gitignore")
    return ROOT


def _command_lines(text: str, suffix: str) -> List[str]:
    """The lines that are commands: in Markdown, those of ```sh/```bash/```yaml blocks (and
    of indented YAML inside them); in YAML, shell and Python files, every line."""
    if suffix != ".md":
        return text.splitlines()
    lines: List[str] = []
    for block in re.findall(r"```(?:sh|bash|shell|console|yaml|yml)\n(.*?)```", text, re.S):
        lines.extend(block.splitlines())
    return lines


def documented_outputs() -> Dict[str, Set[str]]:
    """Every relative path a documented command writes, with the files that say so."""
    found: Dict[str, Set[str]] = {}
    for source in SOURCES:
        path = ROOT / source
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            if file.suffix not in (".md", ".yml", ".yaml", ".sh", ".toml"):
                continue
            for line in _command_lines(file.read_text("utf-8"), file.suffix):
                line = line.split(" #", 1)[0]
                for target in _WRITES.findall(line):
                    if target.isupper() or target.startswith(("/", "-")) or target == ".":
                        continue  # a placeholder (FILE), an absolute path, an option
                    found.setdefault(target.rstrip("/") + ("/" if target.endswith("/") else ""),
                                     set()).add(str(file.relative_to(ROOT)))
    return found


def test_the_documented_outputs_are_found():
    """The reader finds the outputs the issue named, so the next test checks something."""
    outputs = documented_outputs()
    for expected in ("aqe-junit.xml", "fleet-out", "report.html", "fleet_venv.tar.gz"):
        assert expected in outputs, sorted(outputs)


def test_what_the_docs_examples_write_is_ignored(checkout):
    outputs = documented_outputs()
    probe = [target for target in sorted(outputs) if target not in KEPT]
    # A folder's contents: git ignores `fleet-out/` for any file under it.
    paths = [target.rstrip("/") + "/part-0" if not Path(target).suffix else target
             for target in probe]
    result = _git("check-ignore", "--no-index", "--verbose", "--non-matching", *paths)
    assert result.returncode in (0, 1), result.stderr
    not_ignored = [line.split("\t", 1)[1] for line in result.stdout.splitlines()
                   if line.startswith("::")]
    assert not not_ignored, {path: sorted(outputs[target]) for path, target
                             in zip(paths, probe) if path in not_ignored}
    for kept in KEPT & set(outputs):
        assert _git("check-ignore", "--no-index", "-q", kept).returncode == 1, \
            f"{kept} is a snapshot to commit, yet git ignores it"


def test_no_stray_file_is_committed(checkout):
    """No file a shell accident makes (`pip install aqe-inspect[x] >=1.2` writes `=1.2`), and no
    empty file at the root of the checkout."""
    files = _git("ls-files", "-z").stdout.split("\0")
    files = [name for name in files if name]
    assert files, "git ls-files listed nothing"
    stray = [name for name in files
             if re.match(r"[=<>&|;'\"`$~\\]", Path(name).name) or Path(name).name.startswith(" ")
             or Path(name).name.endswith(" ") or "\n" in name]
    assert not stray, stray
    empty_at_root = [name for name in files if "/" not in name
                     and (ROOT / name).is_file() and (ROOT / name).stat().st_size == 0]
    assert not empty_at_root, empty_at_root
