"""The formats of `aqe-inspect compare`: one module each, a `write(comparison, stream)`.

    text       for people: each execution that changed, what it lost and gained and why
    json       `aqe-inspect/compare/v1` (compare/result.py writes the contract)
    junit      a test case per matched execution, failing where the gate fails
    github     GitHub Actions annotations, one per failing execution
    sarif      SARIF 2.1.0: a result per lost or gained rewrite
    markdown   a CI job summary (`$GITHUB_STEP_SUMMARY`): tables
    html       one self-contained page: the two runs' plans side by side per query

A comparison is read through its attributes only (`compare.result.Comparison`), so the
formats stay below the comparison in the import graph. Every writer escapes the text that
came from the inputs (descriptions, file and application names) for what it writes.
"""

from __future__ import annotations

import importlib
from typing import Callable, TextIO, Tuple

from ...errors import InspectError

#: The names `--format` takes, in the order `--help` lists them.
COMPARE_FORMAT_NAMES: Tuple[str, ...] = ("text", "json", "junit", "github", "sarif",
                                         "markdown", "html")
_MODULES = {"text": "text", "json": "json_format", "junit": "junit", "github": "github",
            "sarif": "sarif", "markdown": "markdown", "html": "html"}
#: Formats whose output escapes what its encoding cannot hold as JSON does.
JSON_ESCAPED = ("json", "sarif")


def compare_writer(name: str) -> Callable[[object, TextIO], None]:
    """The writer of the format called `name`, imported on first use."""
    if name not in _MODULES:
        raise InspectError(f"--format: unknown format {name!r} (known: "
                           f"{', '.join(COMPARE_FORMAT_NAMES)})")
    module = importlib.import_module(f"{__name__}.{_MODULES[name]}")
    return module.write



