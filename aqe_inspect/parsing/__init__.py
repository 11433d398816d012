"""Plan lines to the plan model.

    lexer.py          plan lines -> line tokens; tree glyphs -> _INDENT/_DEDENT; damage read
                      through (elisions, comment lines, cut tops) and recorded
    operator_line.py  one operator line / detail block into its parts
    parser.py         the cached Lark parser (grammars/explain.lark), its LALR tables driven
                      over the lexer's tokens, and the transformer into the model, building
                      nodes without recursion
    repeats.py        a plan text printed again in the same input parsed once (its Document
                      copied, line numbers moved)
    damage.py         the signs of a plan cut short, as notes on its query
    codegen.py        a codegen-mode explain's WholeStageCodegen subtrees as the one query
                      they come from

May import: `plan`, `errors`, `native` (a kernel's compiled module or its twin).
"""

from __future__ import annotations


# Imported on use: operators.py reads operator_line's limits, and the parser needs operators.
def parse_text(text: str, source: str = ""):
    """Parse the whole of an explain output into a Document (see parser.parse_text)."""
    from .parser import parse_text as parse

    return parse(text, source)


def parse_lines(plan, source: str = "", origin: str = ""):
    """Parse one plan's lines into a Document (see parser.parse_lines)."""
    from .parser import parse_lines as parse

    return parse(plan, source, origin)


__all__ = ["parse_lines", "parse_text"]
