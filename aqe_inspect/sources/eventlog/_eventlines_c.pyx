# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The kept events' lines of an event-log buffer (events.py `Scanner._lines`), compiled: the
lines are walked with `memchr` from newline to newline and each line's head compared in C
(`memcmp`), so that a Python object is made only for a line that holds a kept event. Its
pure-Python twin is `_eventlines_py.py` (the same function and results;
tests/test_eventlines_kernel.py holds them equal)."""

from libc.string cimport memchr, memcmp

#: How every event's line begins as Spark writes it.
LINE_HEAD = b'{"Event":"'
#: The kind of an entry whose line does not begin so: its markers are searched anywhere in it.
FOREIGN = -1

cdef enum:
    MAX_MARKERS = 64


def event_lines(const unsigned char[::1] buffer, Py_ssize_t begin, Py_ssize_t end,
                markers, Py_ssize_t sample, Py_ssize_t line_bytes):
    """See `_eventlines_py.event_lines`: `(entries, walked, rest)`."""
    cdef list found = []
    cdef tuple kept = tuple(markers)
    cdef Py_ssize_t count = len(kept)
    cdef const unsigned char* marker_at[MAX_MARKERS]
    cdef Py_ssize_t marker_size[MAX_MARKERS]
    cdef const unsigned char* p
    cdef const unsigned char* hit
    cdef Py_ssize_t n = buffer.shape[0]
    cdef Py_ssize_t at, stop, walked = 0, kind, i, room, top
    cdef bytes each
    if not (0 <= begin and 0 <= end < n) or buffer[end] != 10:
        raise ValueError("the lines must end at a newline within the buffer")
    if count > MAX_MARKERS:
        raise ValueError(f"at most {MAX_MARKERS} markers")
    for i in range(count):
        each = kept[i]
        marker_at[i] = <const unsigned char*>(<char*>each)
        marker_size[i] = len(each)
    p = &buffer[0]
    top = end + 1  # the search never passes end
    at = begin
    while at <= end:
        hit = <const unsigned char*>memchr(p + at, 10, top - at)
        stop = hit - p  # found: buffer[end] is a newline
        room = n - at  # what `startswith` may compare, past `end` too (as bytes.startswith)
        if room >= 10 and memcmp(p + at, b'{"Event":"', 10) == 0:
            kind = -1
            for i in range(count):
                if marker_size[i] <= room - 1 and \
                        memcmp(p + at + 1, marker_at[i], marker_size[i]) == 0:
                    kind = i
                    break
            if kind >= 0:
                found.append((walked, at, stop, kind))
        else:
            found.append((walked, at, stop, FOREIGN))
        at = stop + 1
        walked += 1
        if walked == sample and at <= end and at - begin < sample * line_bytes:
            return found, walked, at
    return found, walked, -1
