"""The documentation site (mkdocs.yml, docs/): it builds with `mkdocs build --strict` (every
link and anchor resolves, every marker of docs/hooks.py is filled), the generated parts say what
the program says. Its commands are run by tests/test_docs_commands.py, its shown outputs by
tests/test_docs_console.py."""

from __future__ import annotations

import html
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import AQE_INSPECT, IN_CI, ROOT

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]
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
