"""Driver logs that change under the reader (issue 36): a log cut while its plan-change log is
searched (logrotate's copytruncate) is one line and exit 2, not a death by SIGBUS.

The logs are real runs' driver logs from sample_plans/; the cut is made here, by a hook on
the search, in a process of its own (the defect killed its process)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import SAMPLE_PLANS

LOGS = sorted(SAMPLE_PLANS.glob("spark-*/*/driver_planchange.log"))

CUT_WHILE_SEARCHED = """
import os, sys
from aqe_inspect import cli
from aqe_inspect.sources import planchange

real = planchange.has_plan_changes
def cut_first(data):
    os.truncate(sys.argv[1], 4096)  # copytruncate: the file emptied, its writer goes on
    return real(data)
planchange.has_plan_changes = cut_first
# The plan-change log is read from the skim's own buffers (planchange.Stream): the file is
# read again only when those cannot serve (here: made so), and that second read is cut.
planchange.Stream.finish = lambda self: None
sys.exit(cli.main(["diff", sys.argv[1], "--format", "json"]))
"""

GROWN_AFTER_READ = """
import sys
from aqe_inspect import cli
from aqe_inspect.sources import planchange

finish = planchange.Stream.finish
def grow(self):
    with open(sys.argv[1], "ab") as log:  # the writer goes on after the file was read
        log.write(open(sys.argv[2], "rb").read())
    return finish(self)
planchange.Stream.finish = grow
again = planchange.attach_from_file
def counted(document, path):
    print("read again", file=sys.stderr)
    return again(document, path)
planchange.attach_from_file = counted
sys.exit(cli.main(["diff", sys.argv[1], "--format", "json"]))
"""


@pytest.mark.parametrize("sample", LOGS[:2], ids=lambda path: path.parent.name)
def test_a_driver_log_cut_while_searched_is_one_line(tmp_path, sample):
    path = tmp_path / "driver.log"
    path.write_bytes(sample.read_bytes())
    assert path.stat().st_size > 1 << 16
    done = subprocess.run([sys.executable, "-c", CUT_WHILE_SEARCHED, str(path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
    assert done.stderr.startswith(f"aqe-inspect: error: {path}: changed while it was read")
    assert done.stderr.count("\n") == 1
    assert done.stdout == ""


def test_a_driver_log_grown_after_it_was_read_has_its_plan_changes_read_again(tmp_path):
    """The plan-change log read with the skim's buffers is the file's only while the file
    is as long as what was read: grown since, it is read again, as it always was."""
    path = tmp_path / "driver.log"
    path.write_bytes(LOGS[0].read_bytes())
    done = subprocess.run([sys.executable, "-c", GROWN_AFTER_READ, str(path), str(LOGS[1])],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stderr == "read again\n"


def test_a_driver_log_read_whole_is_unchanged_by_the_window_reader(tmp_path):
    """The same findings as before for a log that stays still (the windowed reader finds
    what a mapping found)."""
    from aqe_inspect.sources import read_document, read_text_document

    sample = LOGS[0]
    from_file = read_document(str(sample), plan_changes=True)
    from_text = read_text_document(sample.read_text(), str(sample))
    found = [query.plan_changes for query in from_file.queries]
    assert any(changes is not None for changes in found)
    assert found == [query.plan_changes for query in from_text.queries]


_MARKERS = ((b"=== Applying Rule ", "rule"), (b"Plan changed", "changed"),
            (b" has no effect.", "no-effect"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.sampled_from([b"=== Applying Rule ", b"Plan changed", b" has no effect.",
                                        b"\n", b"x", b"== ", b"Plan ", b"ab\ncd"]), max_size=60),
       window=st.integers(1, 40))
def test_file_bytes_answer_as_the_bytes_do(pieces, window, tmp_path_factory):
    """`FileBytes` (the file read a window at a time) gives what the bytes themselves give:
    every find, rfind and slice, and the plan-change search's markers and lines."""
    from aqe_inspect.sources import filebytes, planchange

    data = b"".join(pieces)
    path = tmp_path_factory.mktemp("window") / "log"
    path.write_bytes(data)
    kept = filebytes.WINDOW, planchange.WINDOW
    filebytes.WINDOW = planchange.WINDOW = window
    try:
        with open(path, "rb") as handle:
            read = filebytes.FileBytes(handle.fileno(), str(path))
            assert len(read) == len(data)
            for sub in (b"\n", b"Plan", b"=== Applying Rule ", b"zz"):
                for start, stop in ((None, None), (3, None), (0, len(data) // 2), (5, 9)):
                    assert read.find(sub, start, stop) == data.find(sub, start, stop)
                    assert read.rfind(sub, start, stop) == data.rfind(sub, start, stop)
            assert read[:3] == data[:3] and read[2:17] == data[2:17]
            expected = sorted((m.start(), kind) for marker, kind in _MARKERS
                              for m in re.finditer(re.escape(marker), data))
            assert planchange._find_all(read, _MARKERS) == expected
            assert planchange._newlines(read, 0, len(data)) == data.count(b"\n")
    finally:
        filebytes.WINDOW, planchange.WINDOW = kept


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=120).map(lambda b: b.replace(b"\x00", b"\n")),
       window=st.integers(1, 40),
       calls=st.lists(st.tuples(st.sampled_from(["find", "rfind", "slice"]),
                                st.sampled_from([b"\n", b"ab", b"\nx", b"abc\n", b"", b"q"]),
                                st.one_of(st.none(), st.integers(-130, 130)),
                                st.one_of(st.none(), st.integers(-130, 130))), max_size=30))
def test_file_bytes_answer_as_the_bytes_do_in_any_order(data, window, calls, tmp_path_factory):
    """Whatever window is kept from the calls before (a search looking back to a line's start,
    then forward: the readers' way), each answer is the bytes' own."""
    from aqe_inspect.sources import filebytes

    data = data.replace(b"a", b"ab", 3) + b"abc\nq"
    path = tmp_path_factory.mktemp("order") / "log"
    path.write_bytes(data)
    kept = filebytes.WINDOW
    filebytes.WINDOW = window
    try:
        with open(path, "rb") as handle:
            read = filebytes.FileBytes(handle.fileno(), str(path))
            for call, sub, start, stop in calls:
                if call == "slice":
                    assert read[start:stop] == data[start:stop]
                else:
                    assert getattr(read, call)(sub, start, stop) == \
                        getattr(data, call)(sub, start, stop), (call, sub, start, stop)
    finally:
        filebytes.WINDOW = kept
