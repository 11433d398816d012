# Augments lexer.py when Cython compiles it (issue 38): C types for the tree lexer's line
# loop (indexes, levels, columns; the lines' texts). lexer.py stays plain Python and is the
# pure route's module; `_tree_tokens` is module-level and never replaced by callers or tests
# (the method of the same name calls it).
import cython


@cython.locals(index=cython.Py_ssize_t, level=cython.Py_ssize_t, base=cython.Py_ssize_t,
               pre=cython.Py_ssize_t, raw=cython.Py_ssize_t, logical=cython.Py_ssize_t,
               content_column=cython.Py_ssize_t, last_glyphs_end=cython.Py_ssize_t,
               last_operator=cython.Py_ssize_t, last_level=cython.Py_ssize_t,
               root_column=cython.Py_ssize_t, last_adaptive=cython.bint, glyphs_end=cython.Py_ssize_t, cut_top=cython.bint,
               direct=cython.bint, line=str, rest=str, root=str, first=str, frames=list)
cpdef _tree_tokens(lexer, Py_ssize_t index, out)


@cython.locals(start=cython.Py_ssize_t, count=cython.Py_ssize_t,
               following=cython.Py_ssize_t, line=str, head=cython.Py_UCS4, direct=cython.bint)
cpdef Py_ssize_t _detail_blocks(lexer, Py_ssize_t index, list blocks) except -1
