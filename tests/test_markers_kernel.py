"""The compiled marker search (sources/_markers_c.pyx) gives what its pure-Python twin
(sources/_markers_py.py) gives, on the same bytes: the skim's next marker or pattern at or
after each position (skim.py), every plan-change heading with its line (planchange.py), the
newlines of a span. Both routes are also held to a plain definition (each marker's
`bytes.find`, each pattern's regex), and run over every sample driver log whole.

The compiled side is skipped, with its reason, when it is not built; under CI=true it must
be built, so the test fails instead.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.sources import _markers_py
from aqe_inspect.sources import planchange, skim

from .conftest import SAMPLE_PLANS, compiled_kernel


def _compiled():
    return compiled_kernel("aqe_inspect.sources._markers_c")


@pytest.fixture(params=["compiled", "pure"], scope="module")
def kernel(request):
    return _compiled() if request.param == "compiled" else _markers_py


SKIM = (skim.MARKERS, skim.MARKER_ANCHORS, skim.MARKER_PATTERNS)
HEADINGS = ([marker for marker, _ in planchange.HEADINGS], planchange.HEADING_ANCHORS)

#: Bytes that make markers, parts of them, the patterns' digits, parens and names, and what
#: breaks them: so that markers stand split, overlapping, at a buffer's edges.
PIECES = sorted({*skim.MARKERS, *(m[:k] for m in skim.MARKERS for k in (1, 2, 3, 5)),
                 *(m[k:] for m in skim.MARKERS for k in (1, 2, 4)),
                 *(marker for marker, _ in planchange.HEADINGS),
                 *(m[:k] for m, _ in planchange.HEADINGS for k in (1, 4, 9, 10)),
                 b"*", b"^", b"(", b")", b" (", b"*(", b"^(", b"12", b"1234567890", b"7",
                 b" ", b"x", b"_", b"Z", b"\n", b"\r\n", b"=", b"-", b"+", b":", b"\\", b"u00",
                 b"\xff", b"\x00", b"Batch X", b"#12"})
buffers = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=40).map(b"".join),
    st.binary(max_size=200),
    st.lists(st.one_of(st.sampled_from(PIECES), st.binary(max_size=4)), max_size=30
             ).map(b"".join))


def _defined_next(buffer: bytes, pos: int) -> int:
    """The first marker or pattern at or after `pos`, by definition."""
    found = [buffer.find(marker, pos) for marker in skim.MARKERS]
    for _, pattern in skim.MARKER_PATTERNS:
        match = pattern.search(buffer, pos)
        found.append(match.start() if match else -1)
    found = [at for at in found if at >= 0]
    return min(found) if found else -1


def _hits(kernel, buffer: bytes, steps):
    return _scan_hits(kernel.Finder(buffer, kernel.Table(*SKIM)), steps)


SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(buffer=buffers, steps=st.lists(st.integers(0, 30), min_size=1, max_size=60))
def test_the_skim_search_finds_the_same_hits_in_the_same_order(buffer, steps):
    compiled = _compiled()
    pure = _hits(_markers_py, buffer, steps)
    assert _hits(compiled, buffer, steps) == pure
    pos = 0
    for step, at in zip(steps, pure):  # both are the definition
        assert at == _defined_next(buffer, pos)
        pos = at + step


@SETTINGS
@given(buffer=buffers, pos=st.integers(0, 210))
def test_each_search_from_any_position_is_the_definition(buffer, pos, kernel):
    finder = kernel.Finder(buffer, kernel.Table(*SKIM))
    assert finder.next(pos) == _defined_next(buffer, pos)


@SETTINGS
@given(buffer=buffers, start=st.integers(0, 220), end=st.integers(0, 220))
def test_the_headings_are_found_alike_with_their_lines(buffer, start, end):
    compiled = _compiled()
    table_c, table_py = compiled.Table(*HEADINGS), _markers_py.Table(*HEADINGS)
    end = min(end, len(buffer))
    start = min(start, end)
    hits, newlines = _markers_py.find_all(buffer, start, end, table_py)
    assert compiled.find_all(buffer, start, end, table_c) == (hits, newlines)
    expected = sorted((m.start(), index) for index, marker in enumerate(HEADINGS[0])
                      for m in re.finditer(b"(?=" + re.escape(marker) + b")", buffer)
                      if start <= m.start() < end)
    assert [(at, index) for at, index, _ in hits] == expected
    assert [line for _, _, line in hits] == [buffer.count(b"\n", start, at)
                                             for at, _ in expected]
    assert newlines == buffer.count(b"\n", start, end)


@SETTINGS
@given(buffer=buffers, markers=st.lists(st.binary(min_size=2, max_size=5), min_size=1,
                                        max_size=6, unique=True), data=st.data())
def test_any_markers_are_found_alike_overlapping_ones_too(buffer, markers, data):
    """Markers that overlap themselves or each other, one a prefix of another, anchored
    anywhere in them: every position each begins at, ties in the markers' order."""
    compiled = _compiled()
    anchors = [data.draw(st.integers(0, len(marker) - 2)) for marker in markers]
    buffer = buffer + b"".join(markers) + buffer[:7]
    end = data.draw(st.integers(0, len(buffer)))
    start = data.draw(st.integers(0, end))
    expected = _markers_py.find_all(buffer, start, end, _markers_py.Table(markers, anchors))
    assert compiled.find_all(buffer, start, end, compiled.Table(markers, anchors)) == expected


#: The skim's markers and patterns, then the plan-change headings: the table of one Scan.
BOTH = (skim.MARKERS + tuple(HEADINGS[0]), skim.MARKER_ANCHORS + tuple(HEADINGS[1]),
        skim.MARKER_PATTERNS)
#: Buffers of several of the Scan's blocks of 64 bytes, markers across their edges.
long_buffers = st.lists(st.one_of(buffers, st.sampled_from([b"x" * 61, b" " * 63, b"\n" * 64])),
                        max_size=8).map(b"".join)


def _scan_hits(scan, steps):
    """Where a Finder's or a Scan's `next` stops, asked again `step` past each hit (as the
    skim asks again past a message's end)."""
    pos, out = 0, []
    for step in steps:
        at = scan.next(pos)
        out.append(at)
        if at < 0:
            break
        pos = at + step
    return out


@SETTINGS
@given(buffer=long_buffers, steps=st.lists(st.integers(0, 90), min_size=1, max_size=60),
       start=st.integers(0, 900), end=st.integers(0, 900))
def test_one_scan_finds_the_skims_hits_and_the_headings_alike(buffer, steps, start, end):
    """A Scan gives the skim's Finder's hits (`next`) and find_all's headings with their
    lines (`headings`), compiled and pure alike, from any position and over any span."""
    split = len(skim.MARKERS)
    compiled = _compiled()
    end = min(end, len(buffer))
    start = min(start, end)
    for kernel in (compiled, _markers_py):
        scan = kernel.Scan(buffer, kernel.Table(*BOTH), split)
        assert scan.buffer is buffer
        assert _scan_hits(scan, steps) == _hits(_markers_py, buffer, steps)
        assert scan.headings(start, end) == _markers_py.find_all(
            buffer, start, end, _markers_py.Table(*HEADINGS))
    scan = compiled.Scan(buffer, compiled.Table(*BOTH), split)
    for pos in range(0, len(buffer) + 2, 7):  # any position asked, in any order
        assert scan.next(pos) == _defined_next(buffer, pos)
    assert scan.next(len(buffer) - 3) == _defined_next(buffer, max(0, len(buffer) - 3))


@SETTINGS
@given(buffer=long_buffers, markers=st.lists(st.binary(min_size=2, max_size=5), min_size=2,
                                             max_size=8, unique=True), data=st.data())
def test_a_scan_of_any_markers_splits_them_alike(buffer, markers, data):
    """Any markers, split anywhere: the first part's next hits as a Finder's, the rest's
    every position as find_all's, markers overlapping across the split too."""
    compiled = _compiled()
    anchors = [data.draw(st.integers(0, len(marker) - 2)) for marker in markers]
    split = data.draw(st.integers(0, len(markers)))
    buffer = buffer + b"".join(markers) + buffer[:70]
    end = data.draw(st.integers(0, len(buffer)))
    start = data.draw(st.integers(0, end))
    first = _markers_py.Table(markers[:split], anchors[:split])
    rest = _markers_py.Table(markers[split:], anchors[split:])
    expected = _markers_py.find_all(buffer, start, end, rest)
    for kernel in (compiled, _markers_py):
        scan = kernel.Scan(buffer, kernel.Table(markers, anchors), split)
        assert scan.headings(start, end) == expected
        finder = _markers_py.Finder(buffer, first)
        for pos in range(0, len(buffer) + 1, 5):
            assert scan.next(pos) == finder.next(pos)
    with pytest.raises(ValueError):
        compiled.Scan(buffer, compiled.Table(markers, anchors), len(markers) + 1)


@SETTINGS
@given(buffer=st.tuples(st.binary(max_size=400), st.integers(1, 40)).map(
           lambda piece: (piece[0] * piece[1]).replace(b"\x01", b"\n")),
       start=st.integers(-5, 16100), stop=st.integers(-5, 16100))
def test_newlines_are_counted_alike(buffer, start, stop, kernel):
    """Buffers of up to 16,000 bytes: the compiled count works in rows of 4,080 bytes (255
    rows of 16, a byte's count per lane), then byte by byte; newlines up to every byte."""
    start, stop = max(start, 0), max(0, min(stop, len(buffer)))  # (as the callers ask)
    assert kernel.count_newlines(buffer, start, stop) == buffer.count(b"\n", start, stop)


def test_a_buffer_of_newlines_only_is_counted_past_a_lane_count():
    """Every byte a newline: each lane counts 255, the most its byte holds."""
    compiled = _compiled()
    for size in (4079, 4080, 4081, 8160, 8161, 100_000):
        buffer = b"\n" * size
        assert compiled.count_newlines(buffer, 0, size) == size
        assert compiled.count_newlines(buffer, 3, size - 5) == max(size - 8, 0)


def test_a_pattern_the_kernel_cannot_match_is_refused():
    compiled = _compiled()
    with pytest.raises(ValueError):
        compiled.Table([b"x"], [0], [(b"*", re.compile(rb"\*x"))])
    with pytest.raises(ValueError):
        compiled.Table([b"xy"], [1])  # an anchor is a pair of the marker's bytes
    with pytest.raises(ValueError):
        _markers_py.Table([b"xy"], [1])


DRIVER_LOGS = sorted(SAMPLE_PLANS.glob("spark-*/*/driver*.log"))


def test_every_sample_driver_log_is_searched_alike():
    compiled = _compiled()
    assert len(DRIVER_LOGS) > 100
    skim_c, skim_py = compiled.Table(*SKIM), _markers_py.Table(*SKIM)
    head_c, head_py = compiled.Table(*HEADINGS), _markers_py.Table(*HEADINGS)
    for path in DRIVER_LOGS:
        data = path.read_bytes()
        finders = compiled.Finder(data, skim_c), _markers_py.Finder(data, skim_py)
        pos = 0
        while True:
            at = finders[0].next(pos)
            assert at == finders[1].next(pos), (path, pos)
            if at < 0:
                break
            pos = at + 1
        assert compiled.find_all(data, 0, len(data), head_c) == _markers_py.find_all(
            data, 0, len(data), head_py), path


@SETTINGS
@given(buffer=buffers, markers=st.lists(st.binary(min_size=2, max_size=5), min_size=1,
                                        max_size=6, unique=True), data=st.data())
def test_a_span_is_told_to_hold_a_marker_alike(buffer, markers, data):
    """`holds`: whether any marker stands whole in a span (skim.SECTION_MARKERS in a rule
    block), as `bytes.find` over the span says."""
    compiled = _compiled()
    anchors = [data.draw(st.integers(0, len(marker) - 2)) for marker in markers]
    if data.draw(st.booleans()):
        buffer = buffer + b"".join(markers) + buffer[:7]
    start = data.draw(st.integers(0, len(buffer) + 3))
    stop = data.draw(st.integers(0, len(buffer) + 3))
    expected = any(buffer.find(marker, start, stop) >= 0 for marker in markers)
    assert _markers_py.holds(buffer, start, stop, _markers_py.Table(markers, anchors)) == \
        expected
    assert compiled.holds(buffer, start, stop, compiled.Table(markers, anchors)) == expected


@pytest.mark.parametrize("kernel_name", ["compiled", "pure"])
def test_the_section_markers_are_found_in_spans_alike(kernel_name):
    kernel = _compiled() if kernel_name == "compiled" else _markers_py
    table = kernel.Table(skim.SECTION_MARKERS, skim.SECTION_ANCHORS)
    for marker in skim.SECTION_MARKERS:
        text = b"x" * 5 + marker + b"y" * 3
        assert kernel.holds(text, 5, 5 + len(marker), table)
        assert not kernel.holds(text, 5, 4 + len(marker), table)
        assert not kernel.holds(text, 6, 8 + len(marker), table)


@pytest.fixture(scope="module")
def scanned_in_halves():
    """The compiled kernel with its two-core threshold lowered to a few bytes, so that every
    Scan of the tests below is read in two halves, on two threads (where the process may
    run on two cores; on one, the whole in one pass: the results are those either way)."""
    compiled = _compiled()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compiled, "PARALLEL_SCAN", 16)
        yield compiled


@SETTINGS
@given(buffer=long_buffers, steps=st.lists(st.integers(0, 90), min_size=1, max_size=60),
       start=st.integers(0, 900), end=st.integers(0, 900))
def test_a_scan_read_in_halves_finds_what_one_pass_finds(scanned_in_halves, buffer, steps,
                                                         start, end):
    """Cut at its middle, wherever that falls (inside a marker, between a pattern's bytes),
    a Scan's halves together give the twin's hits and headings."""
    compiled = scanned_in_halves
    end = min(end, len(buffer))
    start = min(start, end)
    scan = compiled.Scan(buffer, compiled.Table(*BOTH), len(skim.MARKERS))
    assert _scan_hits(scan, steps) == _hits(_markers_py, buffer, steps)
    assert scan.headings(start, end) == _markers_py.find_all(
        buffer, start, end, _markers_py.Table(*HEADINGS))


def test_a_long_buffer_is_scanned_on_two_cores_alike():
    """A buffer past PARALLEL_SCAN (the skim's are 4 MB) with markers and headings across
    its middle: the compiled Scan (both halves) and the twin agree; a process forked after
    a scan scans too (the scanning thread stays with its parent: the child makes its own)."""
    import multiprocessing

    compiled = _compiled()
    size = compiled.PARALLEL_SCAN * 2 + 12_345
    half = size // 2
    filler = b"26/11/23 12:35:45 INFO TaskSetManager: Finished task 1.0 in stage 2.0\n"
    buffer = bytearray(filler * (size // len(filler) + 1))[:size]
    for at in range(half - 40, half + 40, 13):  # markers on and about the cut
        piece = b"\n+- *(3) Project (12)\n=== Applying Rule x ===\nFinal plan:"
        buffer[at:at + len(piece)] = piece
    buffer = bytes(buffer)
    scan = compiled.Scan(buffer, compiled.Table(*BOTH), len(skim.MARKERS))
    twin = _markers_py.Scan(buffer, _markers_py.Table(*BOTH), len(skim.MARKERS))
    assert scan.headings(0, size) == twin.headings(0, size)
    assert scan.headings(half - 100, half + 100)[0], "no heading across the middle"
    for pos in [0, *range(half - 120, half + 120), size - 1, size]:  # (the twin's in order)
        assert scan.next(pos) == twin.next(pos), pos
    assert scan.next(0) == _defined_next(buffer, 0) > 0
    if "fork" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("fork")
        with context.Pool(1) as pool:
            result = pool.apply_async(_scan_headings, (buffer,))
            assert result.get(timeout=60) == twin.headings(0, size)


def _scan_headings(buffer: bytes):
    compiled = _compiled()
    return compiled.Scan(buffer, compiled.Table(*BOTH), len(skim.MARKERS)).headings(
        0, len(buffer))
