"""The documentation site (mkdocs.yml, docs/): it builds with `mkdocs build --strict` (every
link and anchor resolves, every marker of docs/hooks.py is filled), the generated parts say what
the program says, and every command on it that runs a bundled sample runs as written."""

from __future__ import annotations

import html
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import AQE_INSPECT, IN_CI, ROOT

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]
#: A command's expected exit, when not 0, as the page says it: `... # exit 1`.
EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")
#: The checkout's folders a sample command may name; linked into the folder it runs in, so a
#: command that writes a file (`-o report.html`) writes it there, not into the checkout.
NAMED = ("sample_plans", "tests", "examples")


def _sample_commands() -> list:
    """(page, line) of each line of a ```sh block starting `aqe-inspect` that names a sample.
    `fleet` runs on Spark: tests/test_fleet_summary.py holds its page's example to what the
    command prints, without Spark."""
    found = []
    for page in PAGES:
        for block in re.findall(r"^```sh\n(.*?)^```", page.read_text("utf-8"), re.S | re.M):
            for line in block.splitlines():
                if (line.startswith("aqe-inspect ") and "sample_plans/" in line
                        and not line.startswith("aqe-inspect fleet")):
                    found.append(pytest.param(line, id=f"{page.relative_to(ROOT)}: {line[12:70]}"))
    return found


def test_pages_show_sample_commands():
    assert len(_sample_commands()) >= 10


@pytest.mark.parametrize("line", _sample_commands())
def test_sample_command_runs_as_written(line, tmp_path):
    for name in NAMED:
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    expected = EXIT.search(line)
    words = shlex.split(line, comments=True)
    ran = subprocess.run([*AQE_INSPECT, *words[1:]], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "COLUMNS": "100"})
    assert ran.returncode == (int(expected.group(1)) if expected else 0), ran.stderr[-2000:]
    assert ran.stdout or any(tmp_path.iterdir()), "printed nothing"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        if IN_CI:
            pytest.fail("CI=true: mkdocs and mkdocs-material must be installed (the 'docs' extra)")
        pytest.skip("mkdocs or mkdocs-material is not installed: pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                            "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
                           cwd=ROOT, capture_output=True, text=True, timeout=120,
                           env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return out


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text("utf-8")))


def test_site_builds_strict_with_every_marker_filled(site):
    for page in site.rglob("*.html"):
        assert "aqe-docs:" not in page.read_text("utf-8"), page
    for name in ("commands/parse", "commands/diff", "commands/check", "commands/why",
                 "commands/snapshot", "commands/rules", "commands/fleet", "inputs", "ci",
                 "pytest", "json", "rewrite-kinds", *(f"formats/{f}" for f in
                 ("text", "json", "junit", "github", "sarif", "html"))):
        assert (site / name / "index.html").is_file(), name


def test_rewrite_kinds_page_is_what_the_rules_command_prints(site):
    printed = subprocess.run([*AQE_INSPECT, "rules"], capture_output=True, text=True,
                             timeout=60, env={"PATH": "/usr/bin:/bin", "COLUMNS": "100"})
    assert printed.returncode == 0
    page = _text(site / "rewrite-kinds" / "index.html")
    for line in printed.stdout.splitlines():
        assert line.strip() in page, line


def test_format_pages_show_the_kept_examples(site):
    formats = ROOT / "tests" / "snapshots" / "formats"
    for name, suffix in (("text", "txt"), ("github", "log"), ("junit", "xml")):
        page = _text(site / "formats" / name / "index.html")
        for command in ("diff", "check"):
            for line in (formats / f"{command}.{suffix}").read_text("utf-8").splitlines():
                assert line.strip() in page, (name, line)
    for command in ("diff", "check"):
        assert ((site / "formats" / "examples" / f"{command}.html").read_bytes()
                == (formats / f"{command}.html").read_bytes())
    for schema in ("sarif-schema-2.1.0.json", "junit-10.xsd"):
        assert ((site / "schemas" / schema).read_bytes()
                == (ROOT / "tests" / "fixtures" / "schemas" / schema).read_bytes())
