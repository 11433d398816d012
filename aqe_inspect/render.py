"""Terminal output for people: rich trees and tables, plain text when not on a terminal."""

from __future__ import annotations

import os
import sys
from typing import Iterable, Optional

from .model import Document, Node


def console():
    """A rich console that colours only a terminal, and never when NO_COLOR is set."""
    from rich.console import Console

    plain = bool(os.environ.get("NO_COLOR")) or not sys.stdout.isatty()
    return Console(no_color=plain, color_system=None if plain else "auto",
                   highlight=False, soft_wrap=plain, emoji=False)


def _node_label(node: Node, width: int = 160) -> str:
    from rich.markup import escape

    parts = [f"[bold]{escape(node.title or node.name)}[/bold]"]
    if node.id is not None:
        parts.append(f"[cyan]({node.id})[/cyan]")
    if node.codegen_stage is not None:
        parts.append(f"[dim]codegen {node.codegen_stage}[/dim]")
    summary = node.args or node.details.get("Arguments", "")
    if node.description:
        summary = f"{summary} {node.description}".strip()
    if summary:
        if len(summary) > width:
            summary = summary[: width - 3] + "..."
        parts.append(escape(summary))
    if node.statistics:
        parts.append(f"[magenta]Statistics({escape(node.statistics)})[/magenta]")
    if node.is_adaptive_root:
        parts.append(f"[yellow]isFinalPlan={str(node.is_final_plan).lower()}[/yellow]")
    return " ".join(parts)


def build_tree(node: Node, tree=None, highlight: Optional[dict] = None):
    """A rich Tree of `node`; `highlight` maps id(node) to a note shown beside it."""
    from rich.markup import escape
    from rich.tree import Tree

    label = _node_label(node)
    if highlight and id(node) in highlight:
        label = f"[reverse green]{label}[/reverse green]  [green]<- {escape(highlight[id(node)])}[/green]"
    branch = Tree(label) if tree is None else tree.add(label)
    for inner in node.inner:
        build_tree(inner, branch.add("[dim]inner plan[/dim]"), highlight)
    if node.is_adaptive_root and node.initial is not None and node.children and \
            node.initial is not node.children[0]:
        build_tree(node.children[0], branch.add(
            "[bold yellow]== Final Plan ==[/bold yellow]" if node.is_final_plan
            else "[bold yellow]== Current Plan ==[/bold yellow]"), highlight)
        build_tree(node.initial, branch.add("[bold yellow]== Initial Plan ==[/bold yellow]"))
        return branch
    for child in node.children:
        build_tree(child, branch, highlight)
    return branch


def print_document_tree(document: Document) -> None:
    out = console()
    for number, query in enumerate(document.queries, 1):
        kind = "adaptive" if query.adaptive else "static"
        out.print(f"[bold]Query {number}[/bold] ({kind}, {query.mode} mode, "
                  f"{document.source or '<input>'} line {query.line})")
        out.print(build_tree(query.root))
        for sub in query.subqueries:
            if sub.tree is not None:
                out.print(f"[bold]Subquery {sub.index}[/bold] hosted by operator "
                          f"{sub.hosting_operator_id}")
                out.print(build_tree(sub.tree))
        for number_out, tree in enumerate(query.optimized_out, 1):
            out.print(f"[bold]Adaptively optimized out exchange {number_out}[/bold]")
            out.print(build_tree(tree))


def print_rules(detectors: Iterable) -> None:
    out = console()
    for detector in detectors:
        out.print(f"[bold]{detector.kind}[/bold]: {detector.summary}")
        out.print(detector.doc.strip())
        out.print()
