# cython: language_level=3
"""A parsed tree line's Node, made quickly: `plan.model.parsed_node` in Cython (the same
function, equal results); and `plan.model.moved_node`, a Node moved to another line. Each field is set by PyObject_GenericSetAttr, what
object.__setattr__ does once its arguments are unpacked (a third of its time): the Node
keeps its fields in its own values, not in a dictionary of its own, as its constructor makes
it."""

from cpython.object cimport PyObject_GenericSetAttr

from aqe_inspect.plan.model import Node

cdef object _new = object.__new__
cdef object _Node = Node


def parsed_node(name, args, id, codegen_stage, whole_stage_codegen, title, details, children,
                inner, statistics, description, initial, is_final_plan, line):
    """`Node(name=name, ..., line=line)`, metrics and spreads empty (see model.parsed_node)."""
    node = _new(_Node)
    PyObject_GenericSetAttr(node, "name", name)
    PyObject_GenericSetAttr(node, "args", args)
    PyObject_GenericSetAttr(node, "id", id)
    PyObject_GenericSetAttr(node, "codegen_stage", codegen_stage)
    PyObject_GenericSetAttr(node, "whole_stage_codegen", whole_stage_codegen)
    PyObject_GenericSetAttr(node, "title", title)
    PyObject_GenericSetAttr(node, "details", details)
    PyObject_GenericSetAttr(node, "children", children)
    PyObject_GenericSetAttr(node, "inner", inner)
    PyObject_GenericSetAttr(node, "statistics", statistics)
    PyObject_GenericSetAttr(node, "description", description)
    PyObject_GenericSetAttr(node, "initial", initial)
    PyObject_GenericSetAttr(node, "is_final_plan", is_final_plan)
    PyObject_GenericSetAttr(node, "line", line)
    PyObject_GenericSetAttr(node, "plan_line", False)
    PyObject_GenericSetAttr(node, "metrics", {})
    PyObject_GenericSetAttr(node, "spreads", {})
    return node


def moved_node(node, line, children, inner, initial):
    """`dataclasses.replace(node, line=line, children=children, inner=inner,
    initial=initial)`, every other field the object `node` holds (see model.moved_node)."""
    made = _new(_Node)
    PyObject_GenericSetAttr(made, "name", node.name)
    PyObject_GenericSetAttr(made, "args", node.args)
    PyObject_GenericSetAttr(made, "id", node.id)
    PyObject_GenericSetAttr(made, "codegen_stage", node.codegen_stage)
    PyObject_GenericSetAttr(made, "whole_stage_codegen", node.whole_stage_codegen)
    PyObject_GenericSetAttr(made, "title", node.title)
    PyObject_GenericSetAttr(made, "details", node.details)
    PyObject_GenericSetAttr(made, "children", children)
    PyObject_GenericSetAttr(made, "inner", inner)
    PyObject_GenericSetAttr(made, "statistics", node.statistics)
    PyObject_GenericSetAttr(made, "description", node.description)
    PyObject_GenericSetAttr(made, "initial", initial)
    PyObject_GenericSetAttr(made, "is_final_plan", node.is_final_plan)
    PyObject_GenericSetAttr(made, "line", line)
    PyObject_GenericSetAttr(made, "plan_line", node.plan_line)
    PyObject_GenericSetAttr(made, "metrics", node.metrics)
    PyObject_GenericSetAttr(made, "spreads", node.spreads)
    return made
