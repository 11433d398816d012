"""The formats of `aqe-inspect advise`: one module each, a `write(advice, stream)`.

    text          for people: each query's changes, with the figures and what else they do
    json          `aqe-inspect/advice/v1` (the schema: aqe_inspect/advice/schema.json)
    markdown      a CI job summary or a comment
    spark_submit  one `--conf KEY=VALUE` line a setting and nothing else, so that
                  `$(aqe-inspect advise app.log --format spark-submit)` pastes into a
                  spark-submit line

An advice is read through its attributes only (`advice.changes.Advice`). Every writer escapes
the text that came from the inputs for what it writes.
"""

from __future__ import annotations

import importlib
from typing import Callable, TextIO, Tuple

from ...errors import InspectError

#: The names `--format` takes, in the order `--help` lists them.
ADVICE_FORMAT_NAMES: Tuple[str, ...] = ("text", "json", "markdown", "spark-submit")
_MODULES = {"text": "text", "json": "json_format", "markdown": "markdown",
            "spark-submit": "spark_submit"}


def advice_writer(name: str) -> Callable[..., None]:
    """The writer of the format called `name`, imported on first use."""
    if name not in _MODULES:
        raise InspectError(f"--format: unknown format {name!r} (known: "
                           f"{', '.join(ADVICE_FORMAT_NAMES)})")
    return importlib.import_module(f"{__name__}.{_MODULES[name]}").write
