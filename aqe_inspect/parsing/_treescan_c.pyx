# cython: language_level=3, boundscheck=False, wraparound=False
"""What the tree lexer asks of every tree line and of every detail block's header, and what
the damage walk asks of every detail, read by hand over the characters: `_treescan_py.py`'s
regexes and searches in typed Cython (the same functions, equal results). No match object
and no string is made; the regexes' `\\d` and `\\S` are Unicode's (Py_UNICODE_ISDECIMAL,
Py_UNICODE_ISSPACE), their letters ASCII's."""

from cpython.unicode cimport (Py_UNICODE_ISDECIMAL, Py_UNICODE_ISSPACE, PyUnicode_1BYTE_KIND,
                              PyUnicode_DATA, PyUnicode_KIND, PyUnicode_READ)
from libc.string cimport memchr


cdef inline bint _operator_letter(Py_UCS4 c):
    return ('a' <= c <= 'z') or ('A' <= c <= 'Z') or c == '_'


cdef bint _operator_start(str line, Py_ssize_t at, Py_ssize_t n):
    """Whether `CODEGEN_MARKER?[A-Za-z_]` matches at `at`."""
    cdef Py_UCS4 c
    cdef Py_ssize_t digits
    if at >= n:
        return False
    c = line[at]
    if c == '*' or c == '^':
        # `[*^]\(\d+\) `, else `[*^] ?`, then the letter
        if at + 1 < n and line[at + 1] == '(':
            digits = at + 2
            while digits < n and Py_UNICODE_ISDECIMAL(line[digits]):
                digits += 1
            if digits > at + 2 and digits + 2 < n and line[digits] == ')' and \
                    line[digits + 1] == ' ' and _operator_letter(line[digits + 2]):
                return True
        if at + 1 < n and line[at + 1] == ' ':
            if at + 2 < n and _operator_letter(line[at + 2]):
                return True
        return at + 1 < n and _operator_letter(line[at + 1])
    if c == '!':
        return at + 1 < n and _operator_letter(line[at + 1])
    return _operator_letter(c)


def tree_operator(str line):
    """Where the tree glyphs of `line` end, plus or minus (see _treescan_py.tree_operator)."""
    cdef Py_ssize_t n = len(line), at = 0
    cdef Py_UCS4 c
    # `(?:[ :|]  )*`: its groups never back off (each ends in two spaces, the connector's
    # second character is `-`), so the connector must follow the last of them.
    while at + 2 < n:
        c = line[at]
        if (c == ' ' or c == ':' or c == '|') and line[at + 1] == ' ' and line[at + 2] == ' ':
            at += 3
        else:
            break
    if at + 2 >= n:
        return -1
    c = line[at]
    if not ((c == '+' or c == ':') and line[at + 1] == '-' and line[at + 2] == ' '):
        return -1
    at += 3
    return at if _operator_start(line, at, n) else -at


def is_detail_header(str line):
    """Whether `\\(\\d+\\) \\S` matches at the start of `line`."""
    cdef Py_ssize_t n = len(line), at = 1
    if n < 5 or line[0] != '(':
        return False
    while at < n and Py_UNICODE_ISDECIMAL(line[at]):
        at += 1
    return at > 1 and at + 2 < n and line[at] == ')' and line[at + 1] == ' ' and \
        not Py_UNICODE_ISSPACE(line[at + 2])


cdef bint _mark_before(unsigned int kind, void *data, Py_ssize_t at):
    """Whether `uery` or `pruning` ends right before `at` (a `#`)."""
    return (at >= 4 and PyUnicode_READ(kind, data, at - 1) == 'y' and
            PyUnicode_READ(kind, data, at - 2) == 'r' and
            PyUnicode_READ(kind, data, at - 3) == 'e' and
            PyUnicode_READ(kind, data, at - 4) == 'u') or \
        (at >= 7 and PyUnicode_READ(kind, data, at - 1) == 'g' and
         PyUnicode_READ(kind, data, at - 2) == 'n' and
         PyUnicode_READ(kind, data, at - 3) == 'i' and
         PyUnicode_READ(kind, data, at - 4) == 'n' and
         PyUnicode_READ(kind, data, at - 5) == 'u' and
         PyUnicode_READ(kind, data, at - 6) == 'r' and
         PyUnicode_READ(kind, data, at - 7) == 'p')


def holds_subquery_mark(str text):
    """Whether `text` holds `uery#` or `pruning#`: each `#` looked back from (found by memchr
    in a text of one byte a character)."""
    cdef Py_ssize_t n = len(text), at
    cdef unsigned int kind = PyUnicode_KIND(text)
    cdef void *data = PyUnicode_DATA(text)
    cdef const char *start
    cdef const char *hit
    if kind == PyUnicode_1BYTE_KIND:
        start = <const char *>data
        hit = <const char *>memchr(start, 35, n)  # '#'
        while hit != NULL:
            at = hit - start
            if _mark_before(kind, data, at):
                return True
            hit = <const char *>memchr(hit + 1, 35, n - at - 1)
        return False
    for at in range(n):
        if PyUnicode_READ(kind, data, at) == '#' and _mark_before(kind, data, at):
            return True
    return False
