# Augments extract.py when Cython compiles it (issue 38): C types for the region reader's
# line loop (the lines' texts, the indentation, the characters kept) and direct C calls to
# the per-line tests. extract.py stays plain Python and is the pure route's module; these
# functions are module-level and never replaced by callers or tests.
import cython


@cython.locals(indent=cython.Py_ssize_t, chars=cython.Py_ssize_t, full=str, text=str,
               kept_lines=list, kept_numbers=list, kept_columns=list)
cpdef _region(stream, str role, Py_ssize_t max_chars)


cpdef _starts_section(str text)


cpdef bint _continues_after_blank(str text, str state)


cpdef _continues(str text, str state)
