# Augments damage.py when Cython compiles it (issue 38): C types for the walk over a query's
# nodes. damage.py stays plain Python and is the pure route's module; `_walked` is
# module-level and never replaced by callers or tests.
import cython


@cython.locals(nodes=list, stack=list, seen=set)
cpdef list _walked(query)


@cython.locals(hosted=set, value=str)
cpdef list _subquery_entries(query)
