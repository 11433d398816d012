"""A parsed tree line's Node, and a Node moved to another line, made quickly: the pure Python
twin of `_node_c.pyx` (same functions, equal results; aqe_inspect.native.load)."""

from ..plan.model import moved_node, parsed_node

__all__ = ["moved_node", "parsed_node"]
