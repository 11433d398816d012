"""Output formats, one module each, behind one interface: `diff` and `check` choose one with
`--format`, and write it to standard output or, with `--output FILE`, to a file.

A format writes a diff report (`write_report`: a `Report`, or a `ReportStream` read as it is
written) and a check result (`write_check`). Every format writes both:

- text: for people (trees, tables, what failed and the plans that show why);
- json: `aqe-inspect/report/v1` and `aqe-inspect/check/v1`, stable contracts;
- junit: JUnit XML (Jenkins, GitLab, most CI): a test case per expectation, or per query;
- github: GitHub Actions workflow commands, annotations at the plan's line;
- sarif: SARIF 2.1.0 (GitHub code scanning, IDEs): a rule per rewrite kind;
- html: one self-contained page (trees side by side, findings linked to operators).

What only the formats use sits beside them: `terminal.py` (drawing for people, line by line),
`views.py` (what the text and HTML views show of a diff, before either draws it),
`json_writer.py`, `node_json.py`, `parse_json.py` and `report_json.py` (the JSON contracts,
streamed), `why.py` (the `why` answers, text and `aqe-inspect/why/v1`), `outputs.py` (standard
output, and files written whole or not at all), `markdown_text.py` (the one escape of input text
in every Markdown output: no markup, HTML or autolink); `advice/` (the formats of `advise`:
text, json `aqe-inspect/advice/v1`, markdown, spark-submit).

May import: `expectations`, `advice`, `whynot`, `rewrites`, `plan`, `errors`, `version`.
"""

from __future__ import annotations

import importlib
from typing import Dict, Optional, TextIO, Tuple

from ..errors import InspectError

#: The format names, in the order `--help` lists them; each is the module of that name.
FORMAT_NAMES: Tuple[str, ...] = ("text", "json", "junit", "github", "sarif", "html")
_MODULES = {"text": "text", "json": "json_format", "junit": "junit", "github": "github",
            "sarif": "sarif", "html": "html"}


class Format:
    """One output format. `escapes_json`: what the output's encoding cannot hold is written
    as a JSON `\\u` escape (rather than a backslash escape)."""

    name = ""
    escapes_json = False
    #: Whether the format prints for a terminal (styles, width) rather than for a program.
    for_people = False
    #: Whether an event log's reader keeps every AQE update of an execution (a timeline).
    keeps_replans = False

    def configured(self, view: Optional[str] = None, width: Optional[int] = None) -> "Format":
        """This format with the terminal options `--tree`/`--side-by-side` (`view`) and
        `--width`; formats for programs take none and are returned as they are."""
        return self

    def write_report(self, report, stream: TextIO) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def write_check(self, result, stream: TextIO) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


_loaded: Dict[str, Format] = {}


def get_format(name: str) -> Format:
    """The format called `name`, imported on first use (start-up stays small)."""
    if name not in _MODULES:
        raise InspectError(f"--format: unknown format {name!r} (known: "
                           f"{', '.join(FORMAT_NAMES)})")
    if name not in _loaded:
        module = importlib.import_module(f"{__name__}.{_MODULES[name]}")
        _loaded[name] = module.FORMAT
    return _loaded[name]
