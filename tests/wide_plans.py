"""Wide plans built from a real one of sample_plans/: the adaptive plan of `union_of_aggregates`
(a Union of two aggregations, each over its own shuffle, AQE coalescing both reads) with its
Union given `count` branches, the sample's branches repeated in turn in the final and in the
initial plan. Each copy gets its own numbers, as Spark would give another branch: expression
ids (`#n`), exchange plan ids (`plan_id=n`), whole-stage codegen ids (`*(n)`, `[codegen id :
n]`), query stage ids, and in formatted mode the operator ids (`(n)`) of the tree and of its
detail blocks, each moved by an offset per copy."""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Sequence, Tuple

SAMPLE_PLANS = Path(__file__).resolve().parent.parent / "sample_plans"

#: Room between two copies' numbers: above every number of the sample.
_STEP = 10_000
_EXPRESSION = re.compile(r"#(\d+)")
_PLAN_ID = re.compile(r"plan_id=(\d+)")
_CODEGEN = re.compile(r"\*\((\d+)\)|\[codegen id : (\d+)\]")
_SIMPLE_STAGE = re.compile(r"(QueryStage )(\d+)")
_OPERATOR = re.compile(r"(?<!\w)\((\d+)\)")
_STAGE_ARGUMENT = re.compile(r"^(Arguments: )(\d+)$", re.M)


def sample_plan(mode: str = "simple", version: str = "3.5.9",
                scenario: str = "union_of_aggregates") -> Path:
    return SAMPLE_PLANS / f"spark-{version}" / scenario / f"{mode}_after.txt"


_HEADINGS = ("+- == Final Plan ==", "+- == Initial Plan ==")


def _moved(text: str, offset: int, formatted: bool) -> str:
    """`text` (one branch of a tree, or detail blocks) with its numbers moved by `offset`."""
    if not offset:
        return text
    shift = lambda m: str(int(m.group(1)) + offset)  # noqa: E731
    text = _EXPRESSION.sub(lambda m: "#" + shift(m), text)
    text = _PLAN_ID.sub(lambda m: "plan_id=" + shift(m), text)
    text = _CODEGEN.sub(lambda m: f"*({int(m.group(1)) + offset})" if m.group(1)
                        else f"[codegen id : {int(m.group(2)) + offset}]", text)
    if formatted:
        text = _OPERATOR.sub(lambda m: f"({shift(m)})", text)
        text = _STAGE_ARGUMENT.sub(lambda m: m.group(1) + str(int(m.group(2)) + offset), text)
    else:
        text = _SIMPLE_STAGE.sub(lambda m: m.group(1) + str(int(m.group(2)) + offset), text)
    return text


def _union_branches(lines: Sequence[str], at: int) -> Tuple[str, List[List[str]], int]:
    """The Union's line at `at`: its indent, its branches (each its lines with the branch
    glyphs cut off), and the index of the line after the last branch."""
    line = lines[at]
    indent = line[:len(line) - len(line.lstrip(" "))]
    child = indent  # where `:- ` and `+- ` stand, under the Union
    branches: List[List[str]] = []
    end = at + 1
    while end < len(lines) and lines[end].startswith(child) and \
            lines[end][len(child):len(child) + 3] in (":- ", "+- ", ":  ", "   "):
        glyph = lines[end][len(child):len(child) + 3]
        if glyph in (":- ", "+- "):
            branches.append([])
        branches[-1].append(lines[end][len(child) + 3:])
        end += 1
    return child, branches, end


def _wide_tree(lines: List[str], count: int, formatted: bool, step: int = _STEP) -> List[str]:
    """The tree lines with each Union (the final's, the initial's) given `count` branches
    (numbers moved by `step` per copy; 0: each copy the same, as a DataFrame united with
    itself prints)."""
    out: List[str] = []
    at = 0
    while at < len(lines):
        line = lines[at]
        if line.lstrip(" ").startswith("Union"):
            child, branches, end = _union_branches(lines, at)
            out.append(line)
            for number in range(count):
                body = branches[number % len(branches)]
                moved = _moved("\n".join(body), step * (number // len(branches)),
                               formatted).split("\n")
                last = number == count - 1
                out.append(child + ("+- " if last else ":- ") + moved[0])
                out.extend(child + ("   " if last else ":  ") + rest for rest in moved[1:])
            at = end
            continue
        out.append(line)
        at += 1
    return out


def wide_union(count: int, mode: str = "simple", version: str = "3.5.9") -> str:
    """The sample's adaptive plan (`simple` or `formatted` explain) with a Union of `count`
    branches in both its final and its initial plan."""
    text = sample_plan(mode, version).read_text("utf-8")
    if mode == "simple":
        return "\n".join(_wide_tree(text.split("\n"), count, False))
    # Formatted: the tree, then the detail blocks `(n) Name ...` separated by blank lines.
    tree_text, _, details = text.partition("\n\n\n")
    lines = tree_text.split("\n")
    blocks = details.split("\n\n")
    # Which blocks belong to the branches: those of operator ids named under a Union.
    in_branches = set()
    for at, line in enumerate(lines):
        if line.lstrip(" ").startswith("Union"):
            _, branches, _ = _union_branches(lines, at)
            for body in branches:
                for row in body:
                    in_branches.update(_OPERATOR.findall(row))
    kept, branch_blocks = [], []
    for block in blocks:
        found = re.match(r"\((\d+)\) ", block)
        (branch_blocks if found and found.group(1) in in_branches else kept).append(block)
    pairs = 2  # the sample's branches, repeated in turn
    copies = (count + pairs - 1) // pairs
    extra = [_moved("\n\n".join(branch_blocks), _STEP * k, True) for k in range(1, copies)]
    wide = "\n".join(_wide_tree(lines, count, True))
    named = set(_OPERATOR.findall(wide))  # an odd count leaves out the last copy's second
    shown = [block for block in "\n\n".join([*branch_blocks, *extra]).split("\n\n")
             if re.match(r"\((\d+)\) ", block).group(1) in named]
    return wide + "\n\n\n" + "\n\n".join([*shown, *kept])


def union_of_copies(count: int, scenario: str, version: str = "3.5.9",
                    renumbered: bool = True) -> str:
    """Any sample's adaptive plan (simple explain) run `count` times as the branches of one
    Union (`df.union(df)...`): the final and the initial plan each a Union of the copies."""
    lines = sample_plan("simple", version, scenario).read_text("utf-8").split("\n")
    out: List[str] = []
    at = 0
    while at < len(lines):
        out.append(lines[at])
        if lines[at] in _HEADINGS:
            # The plan under the heading, its lines three columns in: one Union branch.
            end = at + 1
            while end < len(lines) and lines[end].startswith("   "):
                end += 1
            body = lines[at + 1:end]
            out.append("   Union")
            out.extend("   " + ("+- " if number == 0 else "   ") + line[3:]
                       for number, line in enumerate(body))
            at = end
            continue
        at += 1
    return "\n".join(_wide_tree(out, count, False, _STEP if renumbered else 0))
