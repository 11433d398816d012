"""A parsed tree line's Node, made quickly: the pure Python twin of `_node_c.pyx` (same
function, equal results; aqe_inspect.native.load)."""

from ..plan.model import parsed_node

__all__ = ["parsed_node"]
