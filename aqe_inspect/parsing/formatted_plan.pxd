# Augments formatted_plan.py when Cython compiles it (issue 38): C types for the loop
# indexes of the tree reader and the node builder. formatted_plan.py stays plain Python and
# is the pure route's module; these functions are module-level and never replaced by
# callers or tests (`_plain_blocks` and `read_formatted` are, and stay `def`).
import cython


@cython.locals(count=cython.Py_ssize_t, raw=cython.Py_ssize_t, level=cython.Py_ssize_t,
               at=cython.Py_ssize_t, owner=cython.Py_ssize_t, last_colon=cython.bint,
               parts=list, numbers=list, parents=list, path=list, frames=list,
               known=dict, stages=dict, line=str, entry=tuple)
cpdef _read_tree(list lines, Py_ssize_t index, list shape_from)


@cython.locals(at=cython.Py_ssize_t, parent=cython.Py_ssize_t, owner=cython.Py_ssize_t,
               signs=cython.bint, literal=cython.bint, all_parts=list, numbers=list,
               parents=list, below=list, inside=list, stage_roots=dict, roots=list,
               used=set, kids=list, siblings=list)
cpdef _build(list trees, dict blocks, last_block)


cpdef _read_blocks(str text, Py_ssize_t start, Py_ssize_t end)
