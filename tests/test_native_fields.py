"""The compiled core's parser kernels give what their pure twins give: the detail-block
field reader (`parsing/_fields_c.pyx` / `_fields_py.py`, and both what `read_detail_block` read
before the kernel, on random lines made of the characters that matter and on every detail block
of the sample plans and the golden corpus) and the tree line's Node (`_node_c.pyx` /
`_node_py.py`)."""

from __future__ import annotations

import dataclasses
import os

import pytest
from hypothesis import given, settings, strategies as st

from aqe_inspect.parsing import _fields_py, operator_line
from aqe_inspect.plan.model import Node, PARSED_NODE_FIELDS, parsed_node

from .conftest import CORPUS, ROOT, compiled_kernel



def _compiled(name: str = "aqe_inspect.parsing._fields_c"):
    return compiled_kernel(name)


def _regex_fields(field_lines):
    """The loop `read_detail_block` ran before the kernels: the regexes, line by line."""
    fields, last_key = {}, None
    for text in field_lines:
        field = _fields_py.FIELD.match(text) or _fields_py.LOCATION_HIDDEN.match(text)
        if field:
            key, value = field.groups()
            key = key.rstrip()
            value = value.strip() if value else ""
            before = fields.get(key)
            fields[key] = value if before is None else f"{before}\n{value}"
            last_key = key
        elif last_key is not None:
            fields[last_key] += "\n" + text
        else:
            last_key = "Text"
            fields[last_key] = text
    return fields


#: Lines made of what FIELD and the header's reading turn on.
_LINE = st.lists(st.sampled_from(list("Ab0 _-:[]()\n\t\u0660x#,") +
                                 ["Input", " [2]", ": ", "Location [", "\u00a0", "\x1f", "\u3000",
                                  " [codegen id : ", "Location"]), max_size=12).map("".join)


@settings(max_examples=2000, deadline=None)
@given(st.lists(_LINE, max_size=6))
def test_fields_twins_agree(field_lines):
    compiled = _compiled()
    expected = _regex_fields(field_lines)
    assert _fields_py.read_fields(field_lines) == expected
    assert compiled.read_fields(field_lines) == expected


@settings(max_examples=2000, deadline=None)
@given(st.one_of(_LINE, st.builds(lambda a, b: f"({a}) {b}",
                                  st.text("0123456789\u0661", max_size=20), _LINE)),
       st.lists(_LINE, max_size=3))
def test_block_twins_agree(header, field_lines):
    compiled = _compiled()
    pure = _fields_py.read_block(header, field_lines, 7)
    assert compiled.read_block(header, field_lines, 7) == pure
    if pure is not None:
        # What the reader without the kernel makes of the header.
        assert operator_line.DETAIL_ID.match(header)
        title, stage = operator_line.title_and_stage(header[header.index(") ") + 2:], 7, 0)
        number = int(header[1:header.index(")")])
        assert pure == (number, title, stage, _regex_fields(field_lines), 7)


def _blocks(paths):
    from aqe_inspect.parsing.lexer import BlockToken, PlanLines, _LineLexer
    for path in paths:
        plan = PlanLines.from_text(path.read_text("utf-8", errors="replace"))
        try:
            chunks = list(_LineLexer(plan).chunks())
        except Exception:  # noqa: BLE001 - a text the lexer refuses holds no block to compare
            continue
        for chunk in chunks:
            if isinstance(chunk, BlockToken):
                yield from chunk.blocks


def test_real_blocks_agree():
    compiled = _compiled()
    paths = sorted((ROOT / "sample_plans").rglob("*.txt"))
    if CORPUS.is_dir():
        paths += sorted(CORPUS.rglob("explain.txt"))
    count = 0
    for header, field_lines, line in _blocks(paths):
        pure = _fields_py.read_block(header, field_lines, line)
        assert compiled.read_block(header, field_lines, line) == pure
        assert compiled.read_fields(field_lines) == _regex_fields(field_lines)
        count += 1
    assert count > 1000


def test_parsed_node_is_the_constructor():
    assert PARSED_NODE_FIELDS == tuple(f.name for f in dataclasses.fields(Node))
    child = Node(name="Scan")
    values = dict(name="Exchange", args="a", id=3, codegen_stage=2, whole_stage_codegen=True,
                  title="Exchange x", details={"Input": "[a]"}, children=(child,), inner=(),
                  statistics="s", description="d", initial=child, is_final_plan=True, line=4)
    made = parsed_node(*values.values())
    assert made == Node(**values)
    assert repr(made) == repr(Node(**values))


def test_parsed_nodes_keep_no_dictionary_of_their_own():
    """Nodes made by parsed_node are as small as the constructor's (a Node's __dict__ filled
    by hand would be half as large again, and make every later Node so too): measured in a
    fresh process, parsed_node first."""
    import subprocess
    import sys

    script = """
import tracemalloc
from aqe_inspect.plan.model import Node, parsed_node
def size(make):
    tracemalloc.start()
    nodes = [make(index) for index in range(2000)]
    used = tracemalloc.get_traced_memory()[0] / len(nodes)
    tracemalloc.stop()
    return used
made = size(lambda i: parsed_node("X", "", i, None, False, "X", {}, (), (), None, None,
                                  None, None, 1))
try:
    from aqe_inspect.parsing._node_c import parsed_node as compiled
except ImportError:
    compiled = parsed_node
made = max(made, size(lambda i: compiled("X", "", i, None, False, "X", {}, (), (), None, None,
                                         None, None, 1)))
built = size(lambda i: Node(name="X", id=i, title="X", line=1))
print(made, built)
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    made, built = map(float, subprocess.run([sys.executable, "-c", script], env=env, check=True,
                                            capture_output=True, text=True).stdout.split())
    assert made <= built * 1.05


_TEXT = st.text(max_size=5)
_OPTIONAL_INT = st.none() | st.integers(0, 10**6)


@settings(max_examples=300, deadline=None)
@given(_TEXT, _TEXT, _OPTIONAL_INT, _OPTIONAL_INT, st.booleans(), _TEXT,
       st.dictionaries(_TEXT, _TEXT, max_size=2), _OPTIONAL_INT, st.none() | st.booleans(),
       st.integers(0, 10**6))
def test_node_twins_agree(name, args, id, stage, whole, title, details, statistics, final,
                          line):
    compiled = _compiled("aqe_inspect.parsing._node_c")
    from aqe_inspect.parsing import _node_py

    child = Node(name="Scan")
    values = (name, args, id, stage, whole, title, details, (child,), (),
              None if statistics is None else str(statistics), None, child, final, line)
    made, twin = compiled.parsed_node(*values), _node_py.parsed_node(*values)
    assert made == twin == Node(*values)
    assert list(vars(made)) == list(vars(twin)) == list(PARSED_NODE_FIELDS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.name = "x"


@settings(max_examples=200, deadline=None)
@given(_TEXT, _OPTIONAL_INT, st.dictionaries(_TEXT, _TEXT, max_size=2),
       st.integers(0, 10**6), st.booleans(), st.booleans())
def test_moved_node_twins_agree(name, id, details, line, with_children, with_initial):
    """A Node moved to another line (parsing/repeats.py): both twins give what
    dataclasses.replace gives, every other field the very object the node held."""
    compiled = _compiled("aqe_inspect.parsing._node_c")
    from aqe_inspect.parsing import _node_py

    child = Node(name="Scan")
    node = Node(name=name, id=id, details=details, children=(child,), inner=(child,),
                initial=child, line=3, metrics={"rows": 1}, plan_line=True)
    other = Node(name="Other")
    children = (other,) if with_children else ()
    initial = other if with_initial else None
    expected = dataclasses.replace(node, line=line, children=children, inner=(),
                                   initial=initial)
    for moved in (compiled.moved_node(node, line, children, (), initial),
                  _node_py.moved_node(node, line, children, (), initial)):
        assert moved == expected and repr(moved) == repr(expected)
        assert list(vars(moved)) == list(PARSED_NODE_FIELDS)
        assert moved.details is node.details and moved.metrics is node.metrics
