# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Byte searches for markers over a buffer (skim.py, planchange.py), compiled: one pass over
the bytes, stopping only where two bytes are a marker's anchor pair (a table of 65,536
pairs: a rare pair stops far less often than a rare byte), where each marker anchored on
the pair's first byte is compared whole. `Scan` serves the skim and the plan-change
headings from one such pass. Its pure-Python twin is `_markers_py.py`
(the same functions and results; tests/test_markers_kernel.py holds them equal)."""

from libc.stdlib cimport calloc, free, realloc
from libc.string cimport memcmp
from libc.stdint cimport uint32_t, uint64_t

#: The patterns this kernel matches by hand (skim.MARKER_PATTERNS, by their regex source).
GLYPH_PATTERN = rb"\*(?:\(\d+\) | ?)[A-Za-z_]"
CARET_PATTERN = rb"\^(?:\(\d+\) | ?)[A-Za-z_]"
ID_PATTERN = rb" \(\d{1,9}\)"
cdef enum:
    MAX_MARKERS = 32  # (bits of a uint32_t: the markers anchored on one byte)


cdef inline bint _letter(unsigned char c) noexcept nogil:
    return (65 <= c <= 90) or (97 <= c <= 122) or c == 95


cdef inline bint _digit(unsigned char c) noexcept nogil:
    return 48 <= c <= 57


cdef inline bint _glyph_at(const unsigned char* p, Py_ssize_t s, Py_ssize_t n) noexcept nogil:
    """`[*^](?:\\(\\d+\\) | ?)[A-Za-z_]` at p[s] (p[s] is the first byte)."""
    cdef Py_ssize_t i = s + 1, j
    if i >= n:
        return False
    if p[i] == 40:  # '(': the codegen id, then a blank and the name
        j = i + 1
        while j < n and _digit(p[j]):
            j += 1
        return j > i + 1 and j + 2 < n and p[j] == 41 and p[j + 1] == 32 and _letter(p[j + 2])
    if p[i] == 32:
        return i + 1 < n and _letter(p[i + 1])
    return _letter(p[i])


cdef inline bint _id_at(const unsigned char* p, Py_ssize_t s, Py_ssize_t n) noexcept nogil:
    """` \\(\\d{1,9}\\)` at p[s]."""
    cdef Py_ssize_t j = s + 2, top
    if s + 1 >= n or p[s] != 32 or p[s + 1] != 40:
        return False
    top = s + 11 if s + 11 < n else n  # at most 9 digits, then ')'
    while j < top and _digit(p[j]):
        j += 1
    return j > s + 2 and j - (s + 2) <= 9 and j < n and p[j] == 41


cdef inline (Py_ssize_t, Py_ssize_t) _span(Py_ssize_t start, Py_ssize_t end,
                                         Py_ssize_t n) noexcept:
    """start and end within a buffer of n bytes, end not before start."""
    if end > n:
        end = n
    if start < 0:
        start = 0
    if end < start:
        end = start
    return start, end


cdef class Table:
    """What to search for: `markers` (bytes), each found by its byte at `anchors[i]`;
    `patterns`: skim.MARKER_PATTERNS (first bytes, compiled regex), matched by hand."""

    cdef readonly tuple markers
    cdef readonly tuple anchors
    cdef readonly tuple patterns
    cdef int count
    cdef const unsigned char* text[MAX_MARKERS]
    cdef Py_ssize_t length[MAX_MARKERS]
    cdef Py_ssize_t offset[MAX_MARKERS]
    cdef uint32_t by_byte[256]  # the markers anchored on each byte, as bits
    cdef unsigned char stop[65536]  # nonzero: a pair to stop at (byte, next byte << 8)
    cdef bint glyph, caret, ids
    cdef Py_ssize_t reach  # the largest anchor offset

    def __init__(self, markers, anchors, patterns=()):
        cdef int index
        cdef bytes marker
        markers, anchors, patterns = tuple(markers), tuple(anchors), tuple(patterns)
        if len(markers) != len(anchors) or any(
                not 0 <= at < len(marker) - 1 for marker, at in zip(markers, anchors)):
            raise ValueError("one anchor in each marker, a pair of its bytes: where it begins")
        if len(markers) > MAX_MARKERS:
            raise ValueError(f"at most {MAX_MARKERS} markers")
        self.markers, self.anchors, self.patterns = markers, anchors, patterns
        self.count = len(markers)
        self.reach = 1 if patterns else 0
        for index in range(256):
            self.by_byte[index] = 0
        for index in range(65536):
            self.stop[index] = 0
        for index in range(self.count):
            marker = markers[index]
            self.text[index] = marker
            self.length[index] = len(marker)
            self.offset[index] = anchors[index]
            self.by_byte[marker[anchors[index]]] |= (<uint32_t>1) << index
            self.stop[marker[anchors[index]] | (marker[anchors[index] + 1] << 8)] = 1
            if anchors[index] > self.reach:
                self.reach = anchors[index]
        self.glyph = self.caret = self.ids = False
        # A pattern's pairs: a codegen marker and what can follow it (a blank, an id's '(',
        # a name); an id's '(' and its first digit (a blank before it is too common a byte).
        following = b"( ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
        for first, pattern in patterns:
            source = pattern.pattern
            if first == b"*" and source == GLYPH_PATTERN:
                self.glyph = True
                for index in following:
                    self.stop[42 | (index << 8)] = 1
            elif first == b"^" and source == CARET_PATTERN:
                self.caret = True
                for index in following:
                    self.stop[94 | (index << 8)] = 1
            elif first == b" (" and source == ID_PATTERN:
                self.ids = True
                for index in b"0123456789":
                    self.stop[40 | (index << 8)] = 1
            else:
                raise ValueError(f"no compiled match for the pattern {source!r}")


cdef inline unsigned int _pair(const unsigned char* p, Py_ssize_t i) noexcept nogil:
    return p[i] | (<unsigned int>p[i + 1] << 8)


cdef inline Py_ssize_t _skip(const unsigned char* stop, const unsigned char* p, Py_ssize_t i,
                             Py_ssize_t limit, Py_ssize_t n) noexcept nogil:
    """The first i at or after `i` (before `limit`) where p[i], p[i + 1] is a pair to stop
    at; `limit` when none (a pair needs p[i + 1] in the buffer, of `n` bytes): eight pairs
    looked up at a time, one branch for them."""
    if limit > n - 1:
        limit = n - 1
    while i + 8 < limit:
        if stop[_pair(p, i)] | stop[_pair(p, i + 1)] | stop[_pair(p, i + 2)] | \
                stop[_pair(p, i + 3)] | stop[_pair(p, i + 4)] | stop[_pair(p, i + 5)] | \
                stop[_pair(p, i + 6)] | stop[_pair(p, i + 7)]:
            break
        i += 8
    while i < limit and not stop[_pair(p, i)]:
        i += 1
    return i


cdef inline Py_ssize_t _start_at(Table table, const unsigned char* p, Py_ssize_t i,
                                 Py_ssize_t n, Py_ssize_t pos) noexcept nogil:
    """The earliest start (>= pos) of a marker or pattern anchored on p[i]; -1 when none.
    Among markers at one start, the lowest index is not told apart (any start is one)."""
    cdef unsigned char c = p[i]
    cdef uint32_t bits = table.by_byte[c]
    cdef Py_ssize_t best = -1, s
    cdef int index = 0
    while bits:
        if bits & 1:
            s = i - table.offset[index]
            if s >= pos and (best < 0 or s < best) and s + table.length[index] <= n and \
                    memcmp(p + s, table.text[index], table.length[index]) == 0:
                best = s
        bits >>= 1
        index += 1
    if c == 42:
        if table.glyph and (best < 0 or i < best) and _glyph_at(p, i, n):
            best = i
    elif c == 94:
        if table.caret and (best < 0 or i < best) and _glyph_at(p, i, n):
            best = i
    elif c == 40:
        if table.ids and i - 1 >= pos and (best < 0 or i - 1 < best) and _id_at(p, i - 1, n):
            best = i - 1
    return best


cdef Py_ssize_t _next(Table table, const unsigned char* p, Py_ssize_t n,
                      Py_ssize_t pos) noexcept nogil:
    cdef Py_ssize_t i = pos, s, best = -1, limit = n
    cdef const unsigned char* stop = table.stop
    if pos < 0:
        i = pos = 0
    while True:
        i = _skip(stop, p, i, limit, n)
        if i >= limit or i >= n - 1:
            return best
        s = _start_at(table, p, i, n, pos)
        if s >= 0 and (best < 0 or s < best):
            best = s
            # A marker starting before it has its anchor at most `reach` bytes after it.
            if best + table.reach + 1 < limit:
                limit = best + table.reach + 1
        i += 1


cdef class Finder:
    """`next(pos)`: where the first marker or pattern of `table` at or after `pos` begins in
    `buffer` (-1 when none)."""

    cdef bytes _buffer
    cdef Table _table

    def __init__(self, bytes buffer, Table table):
        self._buffer = buffer
        self._table = table

    def next(self, Py_ssize_t pos):
        cdef const unsigned char* p = self._buffer
        return _next(self._table, p, len(self._buffer), pos)


cdef inline void _mark(uint64_t* blocks, Py_ssize_t s) noexcept nogil:
    blocks[s >> 12] |= (<uint64_t>1) << ((s >> 6) & 63)


cdef Py_ssize_t _first_in(Table table, const unsigned char* p, Py_ssize_t n, Py_ssize_t lo,
                          Py_ssize_t hi, int split) noexcept nogil:
    """The first start in [lo, hi) of a marker of `table` before `split`, or of a pattern;
    -1 when none (their anchors lie at most `reach` bytes after their starts)."""
    cdef Py_ssize_t i = lo, best = -1, limit = hi + table.reach + 1, s
    cdef const unsigned char* stop = table.stop
    cdef uint32_t bits
    cdef int index
    cdef unsigned char c
    while True:
        i = _skip(stop, p, i, limit, n)
        if i >= limit or i >= n - 1:
            return best
        c = p[i]
        bits = table.by_byte[c]
        index = 0
        while bits and index < split:
            if bits & 1:
                s = i - table.offset[index]
                if lo <= s < hi and (best < 0 or s < best) and s + table.length[index] <= n and \
                        memcmp(p + s, table.text[index], table.length[index]) == 0:
                    best = s
            bits >>= 1
            index += 1
        if c == 42:
            if table.glyph and i < hi and (best < 0 or i < best) and _glyph_at(p, i, n):
                best = i
        elif c == 94:
            if table.caret and i < hi and (best < 0 or i < best) and _glyph_at(p, i, n):
                best = i
        elif c == 40:
            if table.ids and lo <= i - 1 < hi and (best < 0 or i - 1 < best) and \
                    _id_at(p, i - 1, n):
                best = i - 1
        i += 1


#: A buffer this long is scanned on two cores, when the process has two (`_pool`).
PARALLEL_SCAN = 1 << 20


cdef struct _Found:
    Py_ssize_t* items  # (start, heading index) pairs, two items each
    Py_ssize_t count
    Py_ssize_t capacity


cdef int _found_add(_Found* found, Py_ssize_t s, Py_ssize_t index) noexcept nogil:
    cdef Py_ssize_t* grown
    cdef Py_ssize_t capacity
    if found.count == found.capacity:
        capacity = found.capacity * 2 if found.capacity else 64
        grown = <Py_ssize_t*>realloc(found.items, capacity * 2 * sizeof(Py_ssize_t))
        if grown == NULL:
            return -1
        found.items = grown
        found.capacity = capacity
    found.items[2 * found.count] = s
    found.items[2 * found.count + 1] = index
    found.count += 1
    return 0


cdef int _scan_range(Table table, const unsigned char* p, Py_ssize_t n, Py_ssize_t lo,
                     Py_ssize_t hi, int split, uint64_t* blocks, _Found* found) noexcept nogil:
    """Scan's pass over the anchors at lo <= i < hi (a marker starts before its anchor, so
    the ranges of a buffer cut anywhere find, together, what one pass finds): the blocks of
    the starts of markers before `split` and patterns noted in `blocks`, the other markers'
    starts added to `found`. -1 when memory runs out."""
    cdef Py_ssize_t i = lo, s
    cdef const unsigned char* stop = table.stop
    cdef uint32_t bits
    cdef int index
    cdef unsigned char c
    while True:
        i = _skip(stop, p, i, hi, n)
        if i >= hi or i >= n - 1:
            return 0
        c = p[i]
        bits = table.by_byte[c]
        index = 0
        while bits:
            if bits & 1:
                s = i - table.offset[index]
                if s >= 0 and s + table.length[index] <= n and \
                        memcmp(p + s, table.text[index], table.length[index]) == 0:
                    if index < split:
                        _mark(blocks, s)
                    elif _found_add(found, s, index - split):
                        return -1
            bits >>= 1
            index += 1
        if c == 42:
            if table.glyph and _glyph_at(p, i, n):
                _mark(blocks, i)
        elif c == 94:
            if table.caret and _glyph_at(p, i, n):
                _mark(blocks, i)
        elif c == 40:
            if table.ids and i >= 1 and _id_at(p, i - 1, n):
                _mark(blocks, i - 1)
        i += 1


cdef class _RangeScan:
    """`run()`: _scan_range over buffer[lo:hi]'s anchors, into bits and starts of its own
    (another thread's part of a Scan; the GIL let go while it reads)."""

    cdef bytes buffer
    cdef Table table
    cdef int split
    cdef Py_ssize_t lo, hi
    cdef uint64_t* blocks
    cdef _Found found
    cdef int failed

    def __cinit__(self):
        self.blocks = NULL
        self.found.items = NULL
        self.found.count = self.found.capacity = 0

    def __init__(self, bytes buffer, Table table, int split, Py_ssize_t lo, Py_ssize_t hi):
        self.buffer, self.table, self.split, self.lo, self.hi = buffer, table, split, lo, hi
        self.blocks = <uint64_t*>calloc((len(buffer) >> 12) + 1, sizeof(uint64_t))
        if self.blocks == NULL:
            raise MemoryError()
        self.failed = 0

    def __dealloc__(self):
        free(self.blocks)
        free(self.found.items)

    def run(self):
        cdef const unsigned char* p = self.buffer
        cdef Py_ssize_t n = len(self.buffer)
        cdef Table table = self.table
        with nogil:
            self.failed = _scan_range(table, p, n, self.lo, self.hi, self.split, self.blocks,
                                      &self.found)

    cdef list hits(self):
        """The heading starts found, as (start, heading index)."""
        cdef Py_ssize_t k
        return [(self.found.items[2 * k], self.found.items[2 * k + 1])
                for k in range(self.found.count)]


_scan_pool = None
_scan_pool_pid = 0


def _pool():
    """A thread of its own for the second half of long buffers' scans, made at the first
    (again in a process forked since: the thread stayed with the parent); None where the
    process has one core to run on."""
    global _scan_pool, _scan_pool_pid
    import os

    pid = os.getpid()
    if _scan_pool is None or _scan_pool_pid != pid:
        _scan_pool_pid = pid
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):  # (not Linux)
            cores = os.cpu_count() or 1
        if cores < 2:
            _scan_pool = False
        else:
            from concurrent.futures import ThreadPoolExecutor

            _scan_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aqe-scan")
    return _scan_pool or None


cdef class Scan:
    """One pass over `buffer` for two searches at once: the markers of `table` before
    `split` and its patterns (the skim's: `next`, as Finder's) and the markers from `split`
    on (the plan-change headings: `headings`, as find_all's with a table of them alone).
    The pass notes which blocks of 64 bytes hold a start of the first kind (a bit each: its
    memory is a 512th of the buffer's), and every start of the second; `next` looks again
    only at the blocks noted. A buffer of PARALLEL_SCAN bytes or more is passed over in two
    halves at once (`_RangeScan`, on `_pool`'s thread), where the process has two cores."""

    cdef readonly bytes buffer
    cdef Table _table
    cdef int _split
    cdef Py_ssize_t _blocks_count
    cdef uint64_t* _blocks
    cdef list _found  # (start, heading index), in order

    def __cinit__(self):
        self._blocks = NULL

    def __dealloc__(self):
        free(self._blocks)

    def __init__(self, bytes buffer, Table table, int split):
        cdef Py_ssize_t n = len(buffer), k
        cdef _RangeScan first, second = None
        if not 0 <= split <= table.count:
            raise ValueError("split: at most the table's markers")
        self.buffer, self._table, self._split = buffer, table, split
        self._blocks_count = (n + 63) >> 6
        first = _RangeScan(buffer, table, split, 0, n)
        pool = _pool() if n >= PARALLEL_SCAN else None
        if pool is not None:
            # The second half's anchors on another core (its own bits, OR-ed in after),
            # while this thread reads the first half's.
            first.hi = n >> 1
            second = _RangeScan(buffer, table, split, first.hi, n)
            try:
                job = pool.submit(second.run)
            except RuntimeError:  # (the interpreter is shutting down) read here, after
                job = None
        first.run()
        if second is not None:
            if job is None:
                second.run()
            else:
                job.result()
        if first.failed or (second is not None and second.failed):
            raise MemoryError()
        free(self._blocks)  # (the first part's bits become the Scan's)
        self._blocks = first.blocks
        first.blocks = NULL
        hits = first.hits()
        if second is not None:
            for k in range((n >> 12) + 1):
                self._blocks[k] |= second.blocks[k]
            hits.extend(second.hits())
        hits.sort()
        self._found = hits

    def next(self, Py_ssize_t pos):
        """Where the first marker before `split`, or pattern, at or after `pos` begins
        (-1 when none): Finder(buffer, table).next(pos) with the markers before `split`."""
        cdef const unsigned char* p = self.buffer
        cdef Py_ssize_t n = len(self.buffer), block, lo, hi, s
        cdef uint64_t word
        if pos < 0:
            pos = 0
        block = pos >> 6
        while block < self._blocks_count:
            word = self._blocks[block >> 6] >> (block & 63)
            if word == 0:
                block = ((block >> 6) + 1) << 6
                continue
            while not (word & 1):
                word >>= 1
                block += 1
            lo = block << 6
            if lo < pos:
                lo = pos
            hi = (block + 1) << 6
            if hi > n:
                hi = n
            s = _first_in(self._table, p, n, lo, hi, self._split)
            if s >= 0:
                return s
            block += 1
        return -1

    def headings(self, Py_ssize_t start, Py_ssize_t end):
        """find_all(buffer, start, end, TABLE) where TABLE holds the markers from `split` on
        (their indexes counted from `split`)."""
        cdef const unsigned char* p = self.buffer
        cdef Py_ssize_t n = len(self.buffer), s, counted, line = 0
        start, end = _span(start, end, n)
        counted = start
        hits = []
        for s, index in self._found:
            if s < start:
                continue
            if s >= end:
                break
            line += _count(p, counted, s)
            counted = s
            hits.append((s, index, line))
        return hits, line + _count(p, counted, end)


def find_all(bytes buffer, Py_ssize_t start, Py_ssize_t end, Table table):
    """Every position from `start` to before `end` where a marker of `table` begins in
    `buffer` (the marker whole in it), in order: (position, the marker's index, the
    newlines of buffer[start:position]), markers beginning at one position in the table's
    order; and the newlines of buffer[start:end] (0 <= start <= end <= len(buffer))."""
    cdef const unsigned char* p = buffer
    cdef Py_ssize_t n = len(buffer), i, s, counted, line = 0
    cdef const unsigned char* stop = table.stop
    cdef uint32_t bits
    cdef int index
    cdef list found = []
    start, end = _span(start, end, n)
    i = counted = start
    # Anchors up to `reach` bytes past `end` can still begin a marker before it.
    cdef Py_ssize_t limit = end + table.reach if end + table.reach < n else n
    while True:
        i = _skip(stop, p, i, limit, n)
        if i >= limit or i >= n - 1:
            break
        bits = table.by_byte[p[i]]
        index = 0
        while bits:
            if bits & 1:
                s = i - table.offset[index]
                if start <= s < end and s + table.length[index] <= n and \
                        memcmp(p + s, table.text[index], table.length[index]) == 0:
                    found.append((s, index))
            bits >>= 1
            index += 1
        i += 1
    found.sort()
    hits = []
    for s, index in found:
        line += _count(p, counted, s)
        counted = s
        hits.append((s, index, line))
    return hits, line + _count(p, counted, end)


cdef Py_ssize_t _count(const unsigned char* p, Py_ssize_t start, Py_ssize_t stop) noexcept nogil:
    """The newlines of p[start:stop], written for the compiler to vectorize: sixteen byte
    counters, one per lane, each counting at most 255 rows of sixteen bytes before they are
    added up."""
    cdef Py_ssize_t total = 0, i = start, j
    cdef unsigned char lanes[16]
    cdef int k
    while i + 4080 <= stop:  # 255 rows of 16
        for k in range(16):
            lanes[k] = 0
        j = 0
        while j < 4080:
            for k in range(16):
                lanes[k] += p[i + j + k] == 10
            j += 16
        for k in range(16):
            total += lanes[k]
        i += 4080
    while i < stop:
        total += p[i] == 10
        i += 1
    return total


def count_newlines(bytes buffer, Py_ssize_t start, Py_ssize_t stop):
    """buffer.count(b"\\n", start, stop) (start and stop within the buffer)."""
    cdef const unsigned char* p = buffer
    cdef Py_ssize_t n = len(buffer)
    if stop > n:
        stop = n
    if start < 0:
        start = 0
    if stop <= start:
        return 0
    return _count(p, start, stop)


def holds(bytes buffer, Py_ssize_t start, Py_ssize_t stop, Table table):
    """Whether a marker of `table` (its markers; not its patterns) stands whole in
    buffer[start:stop] (0 <= start): one pass, for them all."""
    cdef const unsigned char* p = buffer
    cdef Py_ssize_t n = len(buffer), i, s
    cdef const unsigned char* pairs = table.stop
    cdef uint32_t bits
    cdef int index
    if stop > n:
        stop = n
    if start < 0:
        start = 0
    i = start
    # A marker whole in the span has its anchor pair at some i with i + 1 < stop.
    while True:
        i = _skip(pairs, p, i, stop - 1, n)
        if i >= stop - 1 or i >= n - 1:
            return False
        bits = table.by_byte[p[i]]
        index = 0
        while bits:
            if bits & 1:
                s = i - table.offset[index]
                if s >= start and s + table.length[index] <= stop and \
                        memcmp(p + s, table.text[index], table.length[index]) == 0:
                    return True
            bits >>= 1
            index += 1
        i += 1
