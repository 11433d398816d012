# cython: language_level=3, boundscheck=False, wraparound=False
"""The fields of formatted-mode detail blocks, read: `_fields_py.py` in typed Cython (the same
function, equal results). `FIELD` is matched by hand over the line's characters; a line the
hand-written match cannot judge alone (one holding a newline, where `.` and `$` of the regex
say otherwise) is asked of the regex. A key is found among the keys read before (`_key`) with
no string made for it, when it is one of them."""

from sys import intern

from cpython.unicode cimport Py_UNICODE_ISSPACE

from aqe_inspect.parsing._fields_py import CODEGEN_ID, FIELD, LOCATION_HIDDEN, MAX_DIGITS


cdef inline bint _key_char(Py_UCS4 c):
    return ('a' <= c <= 'z') or ('A' <= c <= 'Z') or ('0' <= c <= '9') or c == ' ' or \
        c == '_' or c == '-'


cdef inline bint _letter(Py_UCS4 c):
    return ('a' <= c <= 'z') or ('A' <= c <= 'Z')


cdef Py_ssize_t _field(str text, Py_ssize_t *value_start):
    """Where FIELD's key ends in `text` (-1: no match); `value_start[0]` where its value
    starts (-1: no value)."""
    cdef Py_ssize_t n = len(text), end, colon, digits
    if n == 0 or not _letter(text[0]):
        return -1
    end = 1
    while end < n and _key_char(text[end]):
        end += 1
    if end == n:
        return -1
    key_end = end
    if text[end] == ':':
        colon = end
    elif text[end] == '[' and text[end - 1] == ' ' and end >= 2:
        key_end = end - 1
        digits = end + 1
        while digits < n and text[digits].isdecimal():
            digits += 1
        if digits == end + 1 or digits >= n or text[digits] != ']':
            return -1
        colon = digits + 1
        if colon < n and text[colon] == ' ':
            colon += 1
        if colon >= n or text[colon] != ':':
            return -1
    else:
        return -1
    if colon + 1 == n:
        value_start[0] = -1
    elif text[colon + 1] == ' ':
        value_start[0] = colon + 2
    else:
        return -1
    return key_end


cdef inline void fields_value(str text, Py_ssize_t start, Py_ssize_t *first,
                              Py_ssize_t *end):
    """Where `text[start:].strip()` starts and ends in `text` (`first[0]` -1: no value, or
    nothing but blanks: the value is "")."""
    cdef Py_ssize_t n = len(text), at = start, stop
    if start < 0:
        first[0] = -1
        return
    while at < n and Py_UNICODE_ISSPACE(text[at]):
        at += 1
    if at == n:
        first[0] = -1
        return
    stop = n
    while Py_UNICODE_ISSPACE(text[stop - 1]):
        stop -= 1
    first[0] = at
    end[0] = stop


#: The interned keys read lately, by a hash of their characters (`_key`): a block's keys are
#: a few dozen names (`Input`, `Output`, `Arguments`, ...) repeated in every block.
cdef list _keys = [None] * 256
#: Keys longer than this are interned without being remembered.
cdef Py_ssize_t _LONGEST_KEY = 64


cdef str _key(str text, Py_ssize_t end):
    """`intern(text[:end])`, without making the string when a key read lately is it."""
    cdef Py_ssize_t i
    cdef size_t h = <size_t>end
    cdef str key
    if end > _LONGEST_KEY:
        return intern(text[:end])
    for i in range(end):
        h = h * 31 + <size_t>text[i]
    h &= 255
    slot = _keys[h]
    if slot is not None:
        key = <str>slot
        if len(key) == end and text.startswith(key):
            return key
    key = intern(text[:end])
    _keys[h] = key
    return key


def read_fields(list field_lines):
    """A detail block's fields by key (see _fields_py.read_fields)."""
    return _read_fields(field_lines)


cdef dict _read_fields(list field_lines):
    cdef dict fields = {}
    cdef object last_key = None
    cdef Py_ssize_t key_end, value_start, value_end
    cdef str text, key, value
    key_text = None
    for text in field_lines:
        if "\n" in text:
            field = FIELD.match(text) or LOCATION_HIDDEN.match(text)
            if field:
                key_text, value_text = field.groups()
                key_end, value_start = 0, 0
            else:
                key_end = -1
        else:
            key_end = _field(text, &value_start)
            if key_end >= 0:
                # The key and the value, stripped here (`rstrip()`, `strip()`: the key's
                # only blank character is the space)
                while text[key_end - 1] == ' ':  # (a key starts with a letter)
                    key_end -= 1
                key = _key(text, key_end)
                fields_value(text, value_start, &value_start, &value_end)
                value = text[value_start:value_end] if value_start >= 0 else ""
            elif text.startswith("Location ["):
                key_text, value_text = "Location", text[9:]
                key_end = 0
        if key_end >= 0:
            if key_text is not None:
                key = intern(key_text.rstrip())
                value = value_text.strip() if value_text else ""
                key_text = None
            before = fields.get(key)
            fields[key] = value if before is None else before + "\n" + value
            last_key = key
        elif last_key is not None:
            fields[last_key] += "\n" + text
        else:
            last_key = "Text"
            fields[last_key] = text
    return fields


def read_block(str header, list field_lines, line):
    """`(id, title, codegen stage, fields, line)` of a detail block, or None (see
    _fields_py.read_block)."""
    cdef Py_ssize_t close, n = len(header), i, at
    cdef long long number
    cdef Py_UCS4 c
    if n < 4 or header[0] != '(':
        return None
    close = 1
    while close < n and '0' <= header[close] <= '9':
        close += 1
    if close == 1 or close - 1 > MAX_DIGITS or close + 1 >= n or header[close] != ')' or \
            header[close + 1] != ' ':
        return None
    # the id's digits are ASCII and at most MAX_DIGITS (18): int(digits), in C
    number = 0
    for i in range(1, close):
        number = number * 10 + (<long long>header[i] - 48)
    heading = header[close + 2:].rstrip()
    if heading.endswith("]"):
        at = heading.rfind(CODEGEN_ID)
        stage_digits = heading[at + len(CODEGEN_ID):len(heading) - 1] if at >= 0 else ""
        if stage_digits.isdecimal():
            if len(stage_digits) > MAX_DIGITS:
                return None
            return (number, heading[:at].strip(), int(stage_digits),
                    _read_fields(field_lines), line)
    return number, heading.strip(), None, _read_fields(field_lines), line
