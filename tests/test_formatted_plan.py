"""The plain-shape reader of formatted plan descriptions (parsing/formatted_plan.py) against the
grammar's parse it stands in for: on every plan description of every sample event log (every
codec, the compare runs), of the published logs, on every golden explain of Spark's own, and on
damaged and altered forms of them, it gives the grammar's Query (notes included) or None, and
None only where the text is not in its plain shape."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, List, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.errors import InspectError, PlanSyntaxError
from aqe_inspect.parsing import parse_text
from aqe_inspect.parsing.formatted_plan import parse_formatted
from aqe_inspect.sources.eventlog.events import Scanner, _load
from aqe_inspect.sources.eventlog.files import search_event_logs

from .conftest import ROOT, SAMPLE_PLANS

FIXTURES = ROOT / "tests" / "fixtures"


def _event_logs() -> List[Path]:
    logs = sorted(SAMPLE_PLANS.glob("spark-*/*/eventlog*"))
    logs += sorted(p for p in (SAMPLE_PLANS / "compare").rglob("eventlog*") if p.is_file())
    logs += sorted(p for p in (FIXTURES / "published_eventlogs").rglob("*")
                   if p.is_file() and p.name not in ("SOURCES.json", "README.md", "survey.py"))
    logs += sorted(p for p in (FIXTURES / "eventlogs").rglob("*") if p.is_file())
    return logs


def _descriptions(path: Path) -> Iterator[str]:
    """Every plan description the log holds for its executions: the start's, each update's."""
    try:
        found = search_event_logs(str(path))
    except InspectError:
        return
    for log in found.logs:
        try:
            for raw in Scanner(log, [], keep_replans=True).executions():
                if raw.start is not None:
                    event = _load(raw.start, raw.part, raw.start_line, [])
                    text = event.get("physicalPlanDescription") if event else None
                    if isinstance(text, str):
                        yield text
                for _, text in raw.replans:
                    if text:
                        yield text
        except InspectError:
            continue


def _grammar(text: str):
    try:
        document = parse_text(text, "log")
    except PlanSyntaxError:
        return None
    return document.queries[0] if document.queries else None


@pytest.fixture(scope="module")
def descriptions() -> List[Tuple[str, str]]:
    found = []
    for path in _event_logs():
        found.extend((str(path.relative_to(ROOT)), text) for text in _descriptions(path))
    assert len(found) > 500, "the sample event logs are not beside the tests"
    return found


def test_every_sample_description_reads_as_the_grammar_reads_it(descriptions):
    plain = 0
    for where, text in descriptions:
        query = parse_formatted(text, "log")
        if query is None:
            continue
        plain += 1
        assert query == _grammar(text), where
    # Most descriptions are in the plain shape (the rest: simple and extended modes, cached
    # plans printed inside their scan, logical plans under an EmptyRelation, commands).
    assert plain >= 0.8 * len(descriptions), (plain, len(descriptions))


def test_the_golden_explains_read_as_the_grammar_reads_them(corpus):
    checked = 0
    for path in sorted(corpus.rglob("*.txt")):
        text = path.read_text("utf-8", errors="replace")
        query = parse_formatted(text, "log")
        if query is None:
            continue
        checked += 1
        assert query == _grammar(text), path
    assert checked > 100


def _altered(text: str, how: str, at: int, extra: str) -> str:
    lines = text.split("\n")
    at %= max(len(lines), 1)
    if how == "drop":
        del lines[at]
    elif how == "insert":
        lines.insert(at, extra)
    elif how == "duplicate":
        lines.insert(at, lines[at])
    elif how == "cut":
        return "\n".join(lines[:at]) + extra[:1]
    elif how == "indent":
        lines[at] = " " + lines[at]
    elif how == "glyph":
        lines[at] = lines[at].replace("+- ", ":- ", 1) if "+- " in lines[at] else \
            lines[at].replace(":- ", "+- ", 1)
    elif how == "id":
        lines[at] = lines[at].replace("(", "(9", 1)
    return "\n".join(lines)


SAMPLES = [p for p in sorted(SAMPLE_PLANS.glob("spark-4.3.0/*/eventlog.json"))][:12]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(sample=st.sampled_from(SAMPLES) if SAMPLES else st.nothing(),
       how=st.sampled_from(["drop", "insert", "duplicate", "cut", "indent", "glyph", "id"]),
       at=st.integers(min_value=0, max_value=10_000),
       extra=st.sampled_from(["", "   +- * Project (999)", "(999) Project", "...",
                              "===== Subqueries =====", "Subquery:9 Hosting operator id = 1",
                              "   +- == Final Plan ==", "\x00", "garbage line", "(1) Range",
                              "+- == Initial Plan ==", "   :  +- Exchange (4)"]))
def test_altered_descriptions_read_as_the_grammar_reads_them_or_go_to_it(sample, how, at,
                                                                         extra):
    texts = list(_cached_descriptions(sample))
    text = _altered(texts[at % len(texts)], how, at // 7, extra)
    query = parse_formatted(text, "log")
    if query is not None:
        assert query == _grammar(text)


_CACHE: dict = {}


def _cached_descriptions(path: Path) -> List[str]:
    if path not in _CACHE:
        _CACHE[path] = list(_descriptions(path)) or ["== Physical Plan ==\n"]
    return _CACHE[path]


def test_an_event_log_reads_the_same_by_either_route(monkeypatch):
    """The whole reader (metrics attached, notes) gives the same queries when every
    description goes to the grammar."""
    from aqe_inspect.sources.eventlog import read_event_logs
    from aqe_inspect.parsing import formatted_plan

    logs = [SAMPLE_PLANS / "spark-4.3.0" / "five_way_join" / "eventlog.json",
            *sorted(SAMPLE_PLANS.glob("spark-3.5*/*/eventlog*"))[:6]]
    for log in logs:
        fast = read_event_logs(str(log), workers=1)
        monkeypatch.setattr(formatted_plan, "read_formatted", lambda text: None)
        grammar = read_event_logs(str(log), workers=1)
        monkeypatch.undo()
        assert fast == grammar, log


# ---- the reader's shortcuts, each against the route it stands in for ---------------------------

def _by_lines(monkeypatch, text: str):
    """parse_formatted(text) with every run of detail blocks read line by line."""
    from aqe_inspect.parsing import formatted_plan

    with monkeypatch.context() as patched:
        patched.setattr(formatted_plan, "_plain_blocks",
                        lambda text, start, end: formatted_plan._ASK_LINES)
        return _outcome(text)


def _outcome(text: str):
    """What parse_formatted gives: its query (or None), or the error it raises."""
    try:
        return parse_formatted(text, "log")
    except PlanSyntaxError as error:
        return ("error", str(error), error.line, error.column)


def test_blocks_read_at_once_read_as_line_by_line(descriptions, monkeypatch):
    """Runs of plain detail blocks are matched in one regex call; the same texts read line by
    line (read_detail_block, as the grammar's parser reads them) give the same queries."""
    from aqe_inspect.parsing import formatted_plan

    plain_blocks = formatted_plan._plain_blocks
    runs = []

    def counted(text, start, end):
        runs.append(plain_blocks(text, start, end) is not formatted_plan._ASK_LINES)
        return plain_blocks(text, start, end)

    for where, text in descriptions:
        with monkeypatch.context() as patched:
            patched.setattr(formatted_plan, "_plain_blocks", counted)
            query = _outcome(text)
        assert query == _by_lines(monkeypatch, text), where
    assert sum(runs) > 0.9 * len(runs) and sum(runs) > 500, (sum(runs), len(runs))


def test_the_notes_skipped_are_those_check_query_finds_none_of(descriptions, corpus):
    """parse_formatted skips damage.check_query only where the reader proved it notes nothing:
    wherever it skips, check_query says nothing indeed (over the samples and Spark's golden
    explains), and it skips for nearly every sample read in the plain shape."""
    from aqe_inspect.parsing import formatted_plan
    from aqe_inspect.parsing.damage import check_query
    from aqe_inspect.parsing.lexer import PlanLines

    samples = [text for _, text in descriptions]
    golden = [path.read_text("utf-8", errors="replace") for path in sorted(corpus.rglob("*.txt"))]
    for texts, share in ((samples, 0.95), (golden, 0)):
        plain = skipped = 0
        for text in texts:
            read = formatted_plan._read_plain(text)
            if read is None:
                continue
            plain += 1
            query, whole = read
            if whole:
                skipped += 1
                assert check_query(query, PlanLines.from_text(text), True) == [], text[:200]
        assert plain and skipped >= share * plain, (skipped, plain)


def test_remembered_lines_read_as_fresh_ones(descriptions):
    """Tree lines, headings and field keys are remembered by their text: a second reading,
    and one after the memory is emptied, give what the first gave."""
    from aqe_inspect.parsing import formatted_plan

    texts = [text for _, text in descriptions][:400]
    for memory in (formatted_plan._TREE_LINES, formatted_plan._HEADINGS, formatted_plan._KEYS):
        memory.clear()
    cold = [_outcome(text) for text in texts]
    assert formatted_plan._TREE_LINES and formatted_plan._KEYS
    assert [_outcome(text) for text in texts] == cold
    for memory in (formatted_plan._TREE_LINES, formatted_plan._HEADINGS, formatted_plan._KEYS):
        memory.clear()
    assert [_outcome(text) for text in texts] == cold


#: Lines that make a run of detail blocks not plain, or wrong, in ways the line reading decides.
BLOCK_EXTRAS = ["   ", "\t", "\u00a0", "  continued value", "Output [1]: [a#1]",
                "Location [not included in comparison]/x", "(1234567890123456789) Range",
                "(3) Range [codegen id : 1234567890123456789]", "Arguments: scalar-subquery#5",
                "(1) Range", "(5) Sort", "Keys: [a#1", "Input [2]:", "Input [2]:x",
                "Condition : (a > b)", "(\u0663) Range", "===== Subqueries =====", "== x ==",
                "Subquery:1 Hosting operator id = 2 Hosting Expression = Subquery "
                "scalar-subquery#5, [id=#3]", "Subquery:9 Hosting operator id = 1", ""]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(sample=st.sampled_from(SAMPLES) if SAMPLES else st.nothing(),
       how=st.sampled_from(["drop", "insert", "duplicate", "cut", "indent", "id"]),
       at=st.integers(min_value=0, max_value=10_000), extra=st.sampled_from(BLOCK_EXTRAS),
       then=st.sampled_from(["drop", "insert", "duplicate", "cut", "indent", "id"]),
       second=st.integers(min_value=0, max_value=10_000))
def test_altered_blocks_read_as_line_by_line(sample, how, at, extra, then, second):
    """Altered detail blocks (and subquery sections) give what the line reading gives: the
    same query, None, or the same error at the same place."""
    import pytest as _pytest

    texts = list(_cached_descriptions(sample))
    text = _altered(texts[at % len(texts)], how, at // 7, extra)
    text = _altered(text, then, second, extra)
    with _pytest.MonkeyPatch.context() as monkeypatch:
        assert _outcome(text) == _by_lines(monkeypatch, text)


def test_a_tree_of_5000_levels_reads_without_recursion():
    depth = 5000
    lines = ["== Physical Plan ==", "* Project (1)"]
    lines += ["   " * (level - 1) + "+- * Project (%d)" % (level + 1) for level in range(1, depth)]
    lines[-1] = lines[-1].replace("Project", "Range")
    lines.append("")
    for number in range(1, depth + 1):
        name = "Range" if number == depth else "Project"
        lines += [f"({number}) {name} [codegen id : 1]", "Output [1]: [id#0L]",
                  "Input [1]: [id#0L]" if name == "Project" else "Arguments: Range (0, 9)", ""]
    query = parse_formatted("\n".join(lines), "log")
    assert query is not None and query.notes == ()
    node, seen = query.root, 1
    while node.children:
        (node,) = node.children
        seen += 1
    assert seen == depth and node.name == "Range" and node.line == depth + 1


#: A command's description as Spark 4.3 prints it (sample_plans, spark-4.3.0): the command's
#: query is an inner plan, printed two levels below it.
COMMAND = """== Physical Plan ==
Execute CreateViewCommand (1)
   +- CreateViewCommand (2)
         +- Project (4)
            +- Range (3)


(1) Execute CreateViewCommand
Output: []

(2) CreateViewCommand
Arguments: `v`, false, true, LocalTempView, UNSUPPORTED, true

(3) Range
Arguments: 0, 20000, 1, 2, [id#576L], false

(4) Project
Arguments: [(id#576L % 10) AS k#577L, id#576L AS v#578L]

"""


@pytest.mark.parametrize("text", [
    COMMAND,
    # a second inner root, an inner plan below a child, a child after an inner plan
    COMMAND.replace("            +- Range (3)", "            +- Range (3)\n         +- Range (5)")
    + "(5) Range\nArguments: 0, 1, 1, 2, [id#1L], false\n",
    COMMAND.replace("   +- CreateViewCommand (2)\n",
                    "   :- CreateViewCommand (2)\n   +- Range (5)\n").replace(
        "         +- Project (4)\n            +- Range (3)\n", "")
    .replace("\n\n\n(1)", "\n         +- Project (4)\n            +- Range (3)\n\n\n(1)")
    + "(5) Range\nArguments: 0, 1, 1, 2, [id#1L], false\n",
    COMMAND.replace("Execute CreateViewCommand (1)\n",
                    "Execute CreateViewCommand (1)\n+- Range (5)\n")
    + "(5) Range\nArguments: 0, 1, 1, 2, [id#1L], false\n",
])
def test_inner_plans_read_as_the_grammar_reads_them(text):
    query = parse_formatted(text, "log")
    assert query is not None
    assert query == _grammar(text)
    assert any(node.inner for node in query.walk())


def test_a_jump_of_three_levels_goes_to_the_grammar():
    text = COMMAND.replace("         +- Project (4)", "            +- Project (4)")
    assert parse_formatted(text, "log") is None


@pytest.mark.parametrize("where", ["tree", "block"])
def test_a_number_too_long_past_an_inner_plan_goes_to_the_grammar(where):
    """Such a text went to the grammar before inner plans were read here (its error is then
    a note on the execution): it still does; before the inner plan, the error stands."""
    long = "1234567890123456789"
    if where == "tree":
        text = COMMAND.replace("Range (3)\n", f"Range ({long})\n", 1)
    else:
        text = COMMAND.replace("(3) Range", f"({long}) Range")
    assert parse_formatted(text, "log") is None
    with pytest.raises(PlanSyntaxError):
        parse_formatted(text.replace("Execute CreateViewCommand (1)",
                                     f"Execute CreateViewCommand ({long})", 1), "log")


@pytest.mark.parametrize("shape", ["nested stages", "unknown", "inner plan"])
def test_the_shapes_once_given_to_the_grammar_read_as_it_reads_them(descriptions, shape):
    """Descriptions this reader once gave to the grammar (a cached relation's AdaptiveSparkPlan
    with its stages, Spark 4's `(unknown)` operators under an EmptyRelation, a command's inner
    plan): the samples that hold them are read here now, as the grammar reads them."""
    def holds(text: str) -> bool:
        lines = text.split("\n")
        if not any(line.startswith("(1) ") for line in lines):
            return False  # not formatted mode
        if shape == "nested stages":
            return any(" +- == Final Plan ==" in line for line in lines)
        if shape == "unknown":
            return any(line.rstrip().endswith(" (unknown)") for line in lines)
        return any(line.startswith("   +- ") for line in lines[2:3])

    found = [(where, text) for where, text in descriptions if holds(text)]
    read = 0
    for where, text in found:
        query = parse_formatted(text, "log")
        if query is not None:
            read += 1
            assert query == _grammar(text), where
    assert found and read >= 0.9 * len(found), (read, len(found))
