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
from sys import intern

# A text that is not ASCII has its rows matched here (`_row`) and its blocks made by the
# twin's own loop; bounds outside the text are the twin's.
from aqe_inspect.parsing._blockrows_py import (blocks_of_rows as _twin_blocks_of_rows,
                                               block_rows as _twin_block_rows)


cdef inline bint _ascii_key(unsigned char c):
    return (97 <= c <= 122) or (65 <= c <= 90) or (48 <= c <= 57) or c == 32 or c == 95 \
        or c == 45


cdef inline bint _ascii_space(unsigned char c):
    """`str.isspace` of an ASCII character: \t \n \v \f \r, \x1c-\x1f, the space."""
    return c == 32 or (9 <= c <= 13) or (28 <= c <= 31)


cdef enum:
    BAD = -1
    EMPTY = 0
    HEADER = 1
    FIELD = 2


cdef int _ascii_scan(const unsigned char* data, Py_ssize_t begin, Py_ssize_t stop,
                     Py_ssize_t* parts):
    """What the ASCII line data[begin:stop] is (BAD when it matches no row) and where its
    parts stand: a header's id at parts[0]:parts[1] and title at parts[2]:stop, a field's
    key at begin:parts[0] and value at parts[1]:stop (parts[1] == stop: no value)."""
    cdef Py_ssize_t at, digits
    cdef unsigned char c
    if begin == stop:
        return EMPTY
    c = data[begin]
    if c == 40:  # (
        at = begin + 1
        while at < stop and 48 <= data[at] <= 57:
            at += 1
        digits = at
        if digits == begin + 1 or at + 2 >= stop or data[at] != 41 or data[at + 1] != 32 \
                or _ascii_space(data[at + 2]):
            return BAD
        parts[0] = begin + 1
        parts[1] = digits
        parts[2] = at + 2
        return HEADER
    if not ((97 <= c <= 122) or (65 <= c <= 90)):
        return BAD
    at = begin + 1
    while at < stop and _ascii_key(data[at]):
        at += 1
    if at == stop:
        return BAD
    c = data[at]
    if c == 58:  # :
        parts[0] = at
        at += 1
    elif c == 91 and data[at - 1] == 32:  # [ after a space
        parts[0] = at - 1
        at += 1
        digits = at
        while at < stop and 48 <= data[at] <= 57:
            at += 1
        if at == digits or at >= stop or data[at] != 93:
            return BAD
        at += 1
        if at < stop and data[at] == 32:
            at += 1
        if at >= stop or data[at] != 58:
            return BAD
        at += 1
    else:
        return BAD
    if at == stop:
        parts[1] = stop
        return FIELD
    if data[at] != 32:
        return BAD
    parts[1] = at + 1
    return FIELD


cdef object _ascii_row(str text, const unsigned char* data, Py_ssize_t begin,
                       Py_ssize_t stop):
    """`_row` of an ASCII text, read from its bytes."""
    cdef Py_ssize_t parts[3]
    cdef int kind = _ascii_scan(data, begin, stop, parts)
    if kind == EMPTY:
        return _EMPTY
    if kind == HEADER:
        return (PyUnicode_Substring(text, parts[0], parts[1]),
                PyUnicode_Substring(text, parts[2], stop), u"", u"")
    if kind == FIELD:
        return (u"", u"", PyUnicode_Substring(text, begin, parts[0]),
                PyUnicode_Substring(text, parts[1], stop) if parts[1] < stop else u"")
    return None


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
    return _twin_block_rows(text, start, end)


def read_blocks(str text, Py_ssize_t start, Py_ssize_t end, dict headings, dict keys,
                heading_of, Py_ssize_t known_max, Py_ssize_t max_digits):
    """The detail blocks of `text[start:end]` by id in printed order and the last one's id,
    or None (`_blockrows_py.read_blocks`). An ASCII text is read from its bytes: every line
    matched first (nothing is made when one does not match, as the twin's `block_rows`
    comes first), then the blocks made; any other, from `block_rows`' rows."""
    cdef const unsigned char* data
    cdef const void* found
    cdef Py_ssize_t begin, stop, at, value_end, number
    cdef Py_ssize_t parts[3]
    cdef int kind
    cdef dict blocks, fields = None
    cdef object name, key, value, before, title_stage, read, heading
    cdef object last = -1
    if end > len(text):
        end = len(text)
    if not PyUnicode_IS_ASCII(text) or start < 0 or start > end or \
            (start > 0 and text[start - 1] != u"\n"):
        return _twin_blocks_of_rows(block_rows(text, start, end), headings, keys,
                                    heading_of, known_max, max_digits)
    data = <const unsigned char*>PyUnicode_DATA(text)
    begin = start
    while True:  # every line matches, or nothing is made
        found = memchr(data + begin, 10, end - begin)
        stop = end if found == NULL else <const unsigned char*>found - data
        if _ascii_scan(data, begin, stop, parts) == BAD:
            return None
        if stop >= end:
            break
        begin = stop + 1
    blocks = {}
    begin = start
    while True:
        found = memchr(data + begin, 10, end - begin)
        stop = end if found == NULL else <const unsigned char*>found - data
        kind = _ascii_scan(data, begin, stop, parts)
        if kind == FIELD:
            if fields is None:
                return None  # a field line after an empty one: stray text
            key = PyUnicode_Substring(text, begin, parts[0])
            name = keys.get(key)
            if name is None:
                name = intern(key.rstrip())
                if parts[0] - begin <= 100:
                    if len(keys) >= known_max:
                        keys.clear()
                    keys[key] = name
            at = parts[1]
            value_end = stop
            while at < value_end and _ascii_space(data[at]):
                at += 1
            while value_end > at and _ascii_space(data[value_end - 1]):
                value_end -= 1
            value = PyUnicode_Substring(text, at, value_end)
            before = fields.get(name)
            fields[name] = value if before is None else f"{before}\n{value}"
        elif kind == HEADER:
            if parts[1] - parts[0] > max_digits:
                return None  # an error, raised where it stands by the line reading
            heading = PyUnicode_Substring(text, parts[2], stop)
            title_stage = headings.get(heading)
            if title_stage is None:
                read = heading_of(heading)
                if read is None:
                    return None
                title_stage = (intern(read[0]), read[1])
                if stop - parts[2] <= 1024:
                    if len(headings) >= known_max:
                        headings.clear()
                    headings[heading] = title_stage
            if parts[1] - parts[0] <= 18:  # what an int64 holds
                number = 0
                for at in range(parts[0], parts[1]):
                    number = number * 10 + (data[at] - 48)
                last = number
            else:
                last = int(PyUnicode_Substring(text, parts[0], parts[1]))
            if last in blocks:
                return None  # a block printed twice: read line by line
            fields = {}
            blocks[last] = (title_stage[0], title_stage[1], fields)
        else:
            fields = None
        if stop >= end:
            return blocks, last
        begin = stop + 1
