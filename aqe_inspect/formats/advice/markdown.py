"""markdown: the advice as GitHub-flavoured Markdown (a job summary, a comment): a section a
query, a table of its changes, the settings to paste in a code block. Every text from an input
goes through `markdown_text.md` (no markup, HTML or link); the code block holds only keys and
values `spark_submit.pasteable` lets through."""

from __future__ import annotations

from ..markdown_text import md
from .spark_submit import pasteable


def write(advice, stream, width=None) -> None:
    lines = ["# AQE advice", ""]
    if advice.incomplete:
        lines += ["**Incomplete evidence**: some queries lack what a full advice needs "
                  "(see each query).", ""]
    for query in advice.queries:
        head = md(query.title) + (f" - {md(query.label)}" if query.label else "")
        lines += [f"## {head}", ""]
        for lack in query.incomplete:
            lines.append(f"- incomplete: {md(lack)}")
        if query.nothing:
            lines.append(f"- nothing to change: {md(query.nothing)}")
        if query.incomplete or query.nothing:
            lines.append("")
        if query.changes or query.instead:
            lines += ["| kind | operator | set | now | from | headroom | also |",
                      "| --- | --- | --- | --- | --- | --- | --- |"]
            for change in (*query.changes, *query.instead):
                lines.append("| " + " | ".join((
                    md(change.kind), md(change.node), md(f"{change.key}={change.value}"),
                    md(change.current.describe()), md(change.figure), md(change.headroom),
                    md("; ".join((*change.effects, *change.alternatives))))) + " |")
            lines.append("")
        for item in query.fixed:
            lines.append(f"- {md(item.kind)} at {md(item.node)}: {md(item.text)}"
                         + "".join(f"; instead: {md(o)}" for o in item.instead))
        if query.fixed:
            lines.append("")
    settings = [(k, v) for k, v in advice.settings() if pasteable(k, v)]
    if settings:
        lines += ["## Settings", "", "```", *(f"--conf {k}={v}" for k, v in settings), "```",
                  ""]
    else:
        lines += ["No setting to change.", ""]
    stream.write("\n".join(lines))
