# Augments json_writer.py when Cython compiles it (issue 38): C types for the walk that tells
# whether a report's value is what msgspec writes as json does. json_writer.py stays plain
# Python and is the pure route's module; `_plain` is module-level and never replaced.
import cython


@cython.locals(stack=list, kind=object, member=object, key=object)
cpdef bint _plain(value)
