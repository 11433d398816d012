"""json: `aqe-inspect/compare/v1`, the contract `Comparison.as_json` makes (compare/result.py;
the schema: aqe_inspect/compare/schema.json)."""

from __future__ import annotations

from typing import TextIO

from ..json_writer import write_json


def write(comparison, stream: TextIO) -> None:
    write_json(comparison.as_json(), stream)
