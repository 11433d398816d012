# cython: language_level=3
"""The lines of a run of plain detail blocks, matched by a loop over the text's characters
(the compiled twin of `_blockrows_py.py`, which matches them with the regex BLOCK_ROW): the
same rows, or None when a line does not match. Each line is one of

- a header `(N) Title`: `(`, decimal digits, `) `, a character that is not a blank, anything;
- a field `Key [n]: value`: the key a run of `[A-Za-z0-9 _-]` that starts with an ASCII
  letter, then ` [digits]` or nothing, an optional space, `:`, then nothing or a space and
  the value (the regex's greedy key backs off one space at most, before `[` or `:`);
- an empty line.

Digits are `\\d`'s (any Unicode decimal digit), blanks `\\s`'s (`str.isspace`)."""


cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object text)
    void* PyUnicode_DATA(object text)
    object PyUnicode_Substring(object text, Py_ssize_t start, Py_ssize_t end)
from libc.string cimport memchr


cdef inline bint _ascii_key(unsigned char c):
    return (97 <= c <= 122) or (65 <= c <= 90) or (48 <= c <= 57) or c == 32 or c == 95 \
        or c == 45


cdef inline bint _ascii_space(unsigned char c):
    """`str.isspace` of an ASCII character: \t \n \v \f \r, \x1c-\x1f, the space."""
    return c == 32 or (9 <= c <= 13) or (28 <= c <= 31)


cdef object _ascii_row(str text, const unsigned char* data, Py_ssize_t begin,
                       Py_ssize_t stop):
    """`_row` of an ASCII text, read from its bytes."""
    cdef Py_ssize_t at, key_end, digits
    cdef unsigned char c
    if begin == stop:
        return _EMPTY
    c = data[begin]
    if c == 40:  # (
        at = begin + 1
        while at < stop and 48 <= data[at] <= 57:
            at += 1
        digits = at
        if digits == begin + 1 or at + 2 >= stop or data[at] != 41 or data[at + 1] != 32 \
                or _ascii_space(data[at + 2]):
            return None
        return (PyUnicode_Substring(text, begin + 1, digits),
                PyUnicode_Substring(text, at + 2, stop), u"", u"")
    if not ((97 <= c <= 122) or (65 <= c <= 90)):
        return None
    at = begin + 1
    while at < stop and _ascii_key(data[at]):
        at += 1
    if at == stop:
        return None
    c = data[at]
    if c == 58:  # :
        key_end = at
        at += 1
    elif c == 91 and data[at - 1] == 32:  # [ after a space
        key_end = at - 1
        at += 1
        digits = at
        while at < stop and 48 <= data[at] <= 57:
            at += 1
        if at == digits or at >= stop or data[at] != 93:
            return None
        at += 1
        if at < stop and data[at] == 32:
            at += 1
        if at >= stop or data[at] != 58:
            return None
        at += 1
    else:
        return None
    if at == stop:
        return (u"", u"", PyUnicode_Substring(text, begin, key_end), u"")
    if data[at] != 32:
        return None
    return (u"", u"", PyUnicode_Substring(text, begin, key_end),
            PyUnicode_Substring(text, at + 1, stop))


_EMPTY = (u"", u"", u"", u"")


cdef inline bint _key_char(Py_UCS4 c):
    return (u"a" <= c <= u"z") or (u"A" <= c <= u"Z") or (u"0" <= c <= u"9") or \
        c == u" " or c == u"_" or c == u"-"


cdef object _row(str text, Py_ssize_t begin, Py_ssize_t stop):
    """The row of the line text[begin:stop], or None when it does not match."""
    cdef Py_ssize_t at, key_end, digits
    cdef Py_UCS4 c
    if begin == stop:
        return _EMPTY
    c = text[begin]
    if c == u"(":
        at = begin + 1
        while at < stop and text[at].isdecimal():
            at += 1
        digits = at
        if digits == begin + 1 or at + 2 >= stop or text[at] != u")" or \
                text[at + 1] != u" " or text[at + 2].isspace():
            return None
        return (text[begin + 1:digits], text[at + 2:stop], u"", u"")
    if not ((u"a" <= c <= u"z") or (u"A" <= c <= u"Z")):
        return None
    at = begin + 1
    while at < stop and _key_char(text[at]):
        at += 1
    if at == stop:
        return None
    c = text[at]
    if c == u":":
        key_end = at
        at += 1
    elif c == u"[" and text[at - 1] == u" ":
        key_end = at - 1
        at += 1
        digits = at
        while at < stop and text[at].isdecimal():
            at += 1
        if at == digits or at >= stop or text[at] != u"]":
            return None
        at += 1
        if at < stop and text[at] == u" ":
            at += 1
        if at >= stop or text[at] != u":":
            return None
        at += 1
    else:
        return None
    if at == stop:
        return (u"", u"", text[begin:key_end], u"")
    if text[at] != u" ":
        return None
    return (u"", u"", text[begin:key_end], text[at + 1:stop])


def block_rows(str text, Py_ssize_t start, Py_ssize_t end):
    """`BLOCK_ROW.findall(text, start, end)` when every line of `text[start:end]` (which
    begins a line) matches, one row a line; None when any line does not."""
    cdef list rows = []
    cdef Py_ssize_t begin = start, stop
    cdef object row
    cdef const unsigned char* data
    cdef const void* found
    if end > len(text):
        end = len(text)
    if start < 0 or start > end:
        return BLOCK_ROW_FINDALL(text, start, end)
    if start > 0 and text[start - 1] != u"\n":
        return None  # the regex's `^` holds only at a line's beginning
    if PyUnicode_IS_ASCII(text):
        data = <const unsigned char*>PyUnicode_DATA(text)
        while True:
            found = memchr(data + begin, 10, end - begin)
            stop = end if found == NULL else <const unsigned char*>found - data
            row = _ascii_row(text, data, begin, stop)
            if row is None:
                return None
            rows.append(row)
            if stop >= end:
                return rows
            begin = stop + 1
    while True:
        stop = text.find(u"\n", begin, end)
        if stop < 0:
            stop = end
        row = _row(text, begin, stop)
        if row is None:
            return None
        rows.append(row)
        if stop >= end:
            return rows
        begin = stop + 1


def BLOCK_ROW_FINDALL(text, start, end):
    """Bounds outside the text: the twin's answer (never asked by the reader)."""
    from ._blockrows_py import block_rows as twin

    return twin(text, start, end)
