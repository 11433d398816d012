# Augments parser.py when Cython compiles it (issue 38): C types for the tree builders' loops
# (the node of a tree line, an operator tree built from its tokens). parser.py stays plain
# Python and is the pure route's module; these functions are module-level and never replaced
# by callers or tests.
import cython


@cython.locals(formatted=cython.bint, adaptive=cython.bint, children=list, fields=dict,
               used=set)
cpdef _built_node(builder, raw)


@cython.locals(open_blocks=list, block=list, kind=str, previous=str, value=str, stage=str)
cpdef _direct_tree(tokens)
