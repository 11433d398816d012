# Augments planinfo.py when Cython compiles it (issue 38): C types for the metrics walk's
# indexes and containers. planinfo.py stays plain Python and is the pure route's module.
import cython


@cython.locals(role=cython.Py_ssize_t, found=list, waiting=list, stack=list, word=str)
cpdef info_carriers(info, values, evidence=*)


@cython.locals(at=cython.Py_ssize_t, place=cython.Py_ssize_t, any_figures=cython.bint,
               by_key=dict, by_family=dict, visits=list, parent_at=list, targets=list,
               place_of=dict, family_sizes=dict, initials=list, stack=list, owners=list,
               figures_of=dict, changed_at=list, plan_ids=dict)
cpdef attach_metrics(root, list sources)


@cython.locals(at=cython.Py_ssize_t, on_path=set, over_changed=set, rebuilt=dict)
cpdef _rebuild_paths(list visits, list parent_at, list changed_at, fields_of)


@cython.locals(stack=list, seen=set)
cpdef _named_by_line(query)


# The walk's small helpers, called from C within the module (no Python call a node).
cpdef list _children(item)
cpdef bint _is_wrapper(item)
cpdef object _metrics_of(item)
