"""MkDocs hooks: what the site shows of the program is taken from the program when the site is
built, never copied by hand.

In a page, an HTML comment names what goes in its place:

``<!-- aqe-docs: rules [KIND] -->``
    what ``aqe-inspect rules [KIND]`` prints (its own code, 100 columns, as piped);
``<!-- aqe-docs: file PATH LANG -->``
    a file of the checkout (PATH from its root) as a fenced block: the format examples of
    ``tests/snapshots/formats/``, which ``tests/test_format_snapshots.py`` keeps equal to what
    the commands print now;
``<!-- aqe-docs: schema-sources -->``
    the table of ``tests/fixtures/schemas/SOURCES.json``.

The schema files the tests validate reports against, and the HTML report examples, are added to
the site as files (``schemas/``, ``formats/examples/``), so pages link to them.

Pictures of the terminal (``TERMINAL_PICTURES``) are drawn when the site is built: the command
runs on a bundled sample as on a terminal of ``PICTURE_COLUMNS`` columns (its ANSI colours and
all), and rich draws what it printed as an SVG (``pictures/*.svg`` of the site). The picture of
the HTML report is a screenshot taken in Chromium, which a build cannot count on: it is kept in
``docs/pictures/`` with a sidecar naming the SHA-256 of the page it shows, and
``tests/test_docs_pictures.py`` fails when that page has changed since
(``AQE_UPDATE_SCREENSHOTS=1`` takes it again).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"<!-- aqe-docs: (.*?) -->")
#: Files of the checkout published with the site: where they go -> where they are.
PUBLISHED = {
    "schemas/sarif-schema-2.1.0.json": "tests/fixtures/schemas/sarif-schema-2.1.0.json",
    "schemas/junit-10.xsd": "tests/fixtures/schemas/junit-10.xsd",
    "formats/examples/diff.html": "tests/snapshots/formats/diff.html",
    "formats/examples/check.html": "tests/snapshots/formats/check.html",
}
#: Pictures of what a terminal shows, drawn when the site is built: where they go -> the
#: command (run from the checkout's root, on a bundled sample).
TERMINAL_PICTURES = {
    "pictures/diff-side-by-side.svg": [
        "diff", "sample_plans/spark-4.3.0/multi_rewrite/formatted_after.txt", "--side-by-side"],
}
#: The width of the terminal the pictures are taken on.
PICTURE_COLUMNS = 100


def _run(args: list[str], out: io.StringIO, settings: dict, cwd: Path | None = None) -> str:
    """What `aqe-inspect ARGS` prints into `out`, with the environment's `settings` (None:
    unset) and, when given, from `cwd`; both put back after."""
    from aqe_inspect.cli import main

    saved = {name: os.environ.get(name) for name in settings}
    for name, value in settings.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out):
            code = main(args)
    finally:
        os.chdir(here)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    if code != 0:
        raise PluginError(f"aqe-inspect {' '.join(args)} exited {code}")
    return out.getvalue()


def command_output(args: list[str]) -> str:
    """What `aqe-inspect ARGS` prints on standard output, piped (100 columns, no colour)."""
    return _run(args, io.StringIO(), {"COLUMNS": "100", "NO_COLOR": "1"})


class _Terminal(io.StringIO):
    """Standard output that says it is a terminal: the commands print their ANSI styles."""

    def isatty(self) -> bool:
        return True


def terminal_output(args: list[str], columns: int = PICTURE_COLUMNS) -> str:
    """What `aqe-inspect ARGS` prints on a terminal `columns` wide (ANSI styles and all), run
    from the checkout's root (the sample's path as the command names it, from any folder)."""
    return _run(args, _Terminal(),
                {"COLUMNS": str(columns), "TERM": "xterm-256color", "NO_COLOR": None}, ROOT)


def terminal_svg(ansi: str, title: str, columns: int = PICTURE_COLUMNS) -> str:
    """`ansi`, text with ANSI styles as a terminal `columns` wide shows it, drawn by rich as an
    SVG. The same text gives the same SVG; no font is fetched (the web fonts rich's template
    names are left out: a reader's own monospace font draws it). A line wider than `columns`
    (a header's path longer than the line, which the commands keep whole) widens the picture:
    every line is drawn as printed, none cut or folded."""
    from rich.cells import cell_len
    from rich.console import Console
    from rich.text import Text

    text = Text.from_ansi(ansi.rstrip("\n"))
    widest = max((cell_len(line) for line in text.plain.split("\n")), default=0)
    console = Console(record=True, width=max(columns, widest), file=io.StringIO(),
                      force_terminal=True, color_system="truecolor", legacy_windows=False)
    console.print(text, soft_wrap=True, crop=False)
    svg = console.export_svg(title=title)
    return re.sub(r"[ \t]*@font-face\s*\{[^}]*\}\n?", "", svg)


def _fence(text: str, lang: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text.rstrip(chr(10))}\n{ticks}"


def _schema_sources() -> str:
    entries = json.loads((ROOT / "tests/fixtures/schemas/SOURCES.json").read_text("utf-8"))
    rows = ["| file | published at | bytes | SHA-256 |", "|---|---|---|---|"]
    for entry in entries:
        where = entry.get("published_at") or f"{entry.get('repo')}: {entry.get('path')}"
        rows.append(f"| `{entry['file']}` | {where} | {entry['bytes']:,} | "
                    f"`{entry['sha256']}` |")
    return "\n".join(rows)


def _replace(match: re.Match) -> str:
    words = shlex.split(match.group(1))
    if words[0] == "rules":
        return _fence(command_output(words), "text")
    if words[0] == "file" and len(words) == 3:
        path = ROOT / words[1]
        if not path.is_file():
            raise PluginError(f"aqe-docs: no file {words[1]}")
        return _fence(path.read_text("utf-8"), words[2])
    if words == ["schema-sources"]:
        return _schema_sources()
    raise PluginError(f"aqe-docs: unknown marker {match.group(0)}")


def on_page_markdown(markdown: str, page, config, files) -> str:
    return MARKER.sub(_replace, markdown)


def on_files(files, config):
    for uri, source in PUBLISHED.items():
        files.append(File.generated(config, uri, abs_src_path=str(ROOT / source)))
    for uri, args in TERMINAL_PICTURES.items():
        title = shlex.join(["aqe-inspect", *args])
        files.append(File.generated(config, uri, content=terminal_svg(terminal_output(args),
                                                                      title)))
    return files
