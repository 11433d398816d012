"""Terminal output for people: rich trees and tables, plain text when not on a terminal."""

from __future__ import annotations

import os
import sys
from typing import Iterable, Optional

from .model import Document, Node

PLAIN_WIDTH = 200


def console():
    """A rich console that colours only a terminal, and never when NO_COLOR is set."""
    from rich.console import Console

    plain = bool(os.environ.get("NO_COLOR")) or not sys.stdout.isatty()
    # Piped output is read by people and tools alike: wide enough not to cut operator lines.
    return Console(no_color=plain, color_system=None if plain else "auto", highlight=False,
                   width=PLAIN_WIDTH if plain else None, emoji=False)


def _node_label(node: Node, width: int = 160) -> str:
    from rich.markup import escape

    title = node.title or node.name
    parts = [f"[bold]{escape(title)}[/bold]"]
    if node.id is not None:
        parts.append(f"[cyan]({node.id})[/cyan]")
    summary = node.args if node.args not in title else ""
    summary = summary or node.details.get("Arguments", "")
    if node.description:
        summary = f"{summary} {node.description}".strip()
    if summary:
        if len(summary) > width:
            summary = summary[: width - 3] + "..."
        parts.append(escape(summary))
    if node.statistics:
        parts.append(f"[magenta]Statistics({escape(node.statistics)})[/magenta]")
    if node.is_adaptive_root and "isFinalPlan" not in summary:
        parts.append(f"[yellow]isFinalPlan={str(node.is_final_plan).lower()}[/yellow]")
    if node.codegen_stage is not None:
        parts.append(f"[dim]\\[codegen {node.codegen_stage}][/dim]")
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
    from rich.markup import escape

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
        for note in query.notes:
            out.print(f"[yellow]note: {escape(note)}[/yellow]")
    for note in document.notes:
        out.print(f"[yellow]note: {escape(note)}[/yellow]")


def print_rules(detectors: Iterable) -> None:
    import inspect

    from rich.markup import escape

    out = console()
    for detector in detectors:
        out.print(f"[bold]{detector.kind}[/bold]: {escape(detector.summary)}")
        out.print(escape(inspect.cleandoc(detector.doc)))
        out.print()


def print_report(report) -> None:
    """Each query: its final tree with rewritten operators marked beside their initial form,
    then a table of rewrites with the evidence, then what is information only."""
    from rich.markup import escape
    from rich.table import Table

    from .report import REWRITE_KINDS, describe

    out = console()
    for query_report in report.queries:
        query = query_report.query
        out.print(f"[bold]Query {query_report.id}[/bold] "
                  f"({query.source or report.source or '<input>'} line {query.line}, "
                  f"{'adaptive' if query.adaptive else 'static'}, "
                  f"isFinalPlan={str(query.is_final_plan).lower()})")
        marks = {}
        for rewrite in query_report.rewrites:
            if rewrite.final_node is None:
                continue
            was = f" (was {describe(rewrite.initial_node)})" if rewrite.initial_node else ""
            note = f"{rewrite.kind}{was}"
            key = id(rewrite.final_node)
            marks[key] = f"{marks[key]}; {note}" if key in marks else note
        out.print(build_tree(query.final, highlight=marks))
        for sub in query.subqueries:
            if sub.tree is not None:
                out.print(f"[bold]Subquery {sub.index}[/bold]")
                out.print(build_tree(sub.tree, highlight=marks))
        table = Table(title=f"AQE rewrites in query {query_report.id}", show_lines=False)
        for column in ("kind", "final", "initial", "what changed", "evidence"):
            table.add_column(column, overflow="fold")
        for rewrite in query_report.rewrites:
            table.add_row(rewrite.kind, describe(rewrite.final_node) or "-",
                          describe(rewrite.initial_node) or "-", escape(rewrite.message),
                          escape("; ".join(rewrite.evidence)))
        if query_report.rewrites:
            out.print(table)
        else:
            out.print("No AQE rewrite found.")
        counts = query_report.counts
        out.print("Counts: " + ", ".join(f"{kind}={counts[kind]}" for kind in REWRITE_KINDS))
        for observation in query_report.info:
            out.print(f"[dim]info: {escape(observation.message)}[/dim]")
        for note in query_report.notes:
            out.print(f"[yellow]note: {escape(note)}[/yellow]")
        out.print()
    for note in report.notes:
        out.print(f"[yellow]note: {escape(note)}[/yellow]")
