"""Hypothesis: a damaged event log (cut anywhere, bytes flipped, lines lost, doubled, swapped
or replaced by junk; plain and each Spark codec) is read as far as it can be, or fails with
one line naming the file: never a traceback. The logs are the sample generator's real ones."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.cli import main

from .conftest import SAMPLE_PLANS

MANIFEST = json.loads((SAMPLE_PLANS / "eventlogs.json").read_text("utf-8"))["logs"]
PLAIN = [SAMPLE_PLANS / e["path"] for e in MANIFEST
         if e["layout"] == "single" and e["codec"] is None and e["scenario"] in
         ("coalesced_aggregation", "skew_join", "empty_relation")]
COMPRESSED = [SAMPLE_PLANS / e["path"] for e in MANIFEST
              if e["layout"] == "single" and e["codec"] is not None]

FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


def run_cli(path: Path, *args: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["diff", str(path), "--format", "json", *args])
    assert code in (0, 2), err.getvalue()
    if code == 2:
        message = err.getvalue()
        assert message.startswith("aqe-inspect: error: "), message
        assert message.count("\n") == 1, message
        assert "internal error" not in message, message
        assert str(path) in message, message
    else:
        report = json.loads(out.getvalue())
        assert isinstance(report["queries"], list)


@st.composite
def damaged_plain_logs(draw) -> bytes:
    lines = draw(st.sampled_from(PLAIN)).read_bytes().split(b"\n")
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["cut", "flip", "drop", "double", "swap", "junk"]))
        line = lines[index]
        if action == "cut":
            lines = lines[:index] + [line[: draw(st.integers(0, len(line)))]]
        elif action == "flip" and line:
            at = draw(st.integers(0, len(line) - 1))
            lines[index] = line[:at] + bytes([line[at] ^ draw(st.integers(1, 255))]) + \
                line[at + 1:]
        elif action == "drop":
            del lines[index]
        elif action == "double":
            lines.insert(index, line)
        elif action == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[index], lines[other] = lines[other], lines[index]
        else:
            lines.insert(index, draw(st.binary(max_size=60)).replace(b"\n", b""))
        if not lines:
            lines = [b""]
    return b"\n".join(lines)


@FUZZ
@given(data=damaged_plain_logs())
def test_damaged_plain_logs_are_read_or_fail_cleanly(tmp_path, data):
    path = tmp_path / "app-1.inprogress"
    path.write_bytes(data)
    run_cli(path)


@pytest.mark.parametrize("source", COMPRESSED, ids=lambda p: p.name + "-" + p.parent.parent.name)
@FUZZ
@given(cut=st.floats(0, 1), flip=st.one_of(st.none(), st.floats(0, 1)),
       value=st.integers(1, 255))
def test_damaged_compressed_logs_are_read_or_fail_cleanly(tmp_path, source, cut, flip, value):
    data = bytearray(source.read_bytes())
    if flip is not None:
        at = int(flip * (len(data) - 1))
        data[at] ^= value
    data = bytes(data[: max(1, int(cut * len(data)))])
    path = tmp_path / source.name
    path.write_bytes(data)
    run_cli(path)
    run_cli(path, "--query", "aqe-sample")
