"""The parser's fast path against the plain one it stands for: driving Lark's LALR tables
directly gives what Lark's own parser gives (documents, notes, errors with their line and
column)."""

from __future__ import annotations

from typing import List, Tuple

import pytest

from aqe_inspect.errors import PlanSyntaxError
from aqe_inspect.parsing import parser as parser_module
from aqe_inspect.parsing import parse_text

from .conftest import SAMPLE_PLANS


def _texts() -> List[Tuple[str, str]]:
    """Real plans of every explain mode, and damaged forms of them that read with notes or
    fail with an error the grammar raises (a stray line, a section out of place, a cut)."""
    texts = []
    for path in sorted((SAMPLE_PLANS / "spark-4.3.0").glob("*/*_after.txt"))[:40]:
        text = path.read_text("utf-8")
        lines = text.split("\n")
        texts.append((path.name, text))
        texts.append((f"{path.name} cut", "\n".join(lines[: len(lines) // 2])))
        texts.append((f"{path.name} stray", text + "\n\nthis is not a plan line\n"))
        texts.append((f"{path.name} header only", lines[0] + "\n"))
    texts.append(("subquery at top", "== Physical Plan ==\n* Project (1)\n\n"
                                      "Subquery:1 Hosting operator id = 1\n"))
    texts.append(("codegen none printed", "Found 2 WholeStageCodegen subtrees.\n"))
    return texts


def _outcome(text: str):
    try:
        return parse_text(text, "plan.txt")
    except PlanSyntaxError as error:
        return ("error", str(error), error.line, error.column)


@pytest.mark.parametrize("name,text", _texts(), ids=[name for name, _ in _texts()])
def test_driven_tables_read_what_larks_parser_reads(monkeypatch, name, text):
    driven = _outcome(text)
    monkeypatch.setattr(parser_module, "_tables", lambda: None)  # Lark's own parser loop
    assert _outcome(text) == driven


def test_the_tables_are_driven():
    assert parser_module._tables() is not None
