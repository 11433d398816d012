"""The fleet view of the HTML report: one self-contained page (inline CSS and inline SVG, no
script, nothing fetched) from a `FleetSummary`, in the page style of `formats/html.py`.

The page: the headline, a bar chart of the rewrite rates per kind over the fleet (SVG), the
applications as a table with an inline bar per kind, then the lists (executions where AQE did
nothing although it was on, the largest skew splits, the sort-merge joins that stayed
although small, the files with errors) as tables.

What tests and scripts may rely on (data attributes):

- `#rates [data-kind=KIND]`: a bar of the overall chart; `data-rate` the rate (0..1, empty
  when no execution was read), `data-executions` and `data-read` its fraction, `data-count`
  the rewrites;
- `#apps tr[data-app=ID]`: an application (`data-executions`); its cells
  `[data-kind=KIND][data-rate]` hold a bar each;
- `#idle tr`, `#skew tr[data-splits]`, `#small-joins tr[data-bytes]`, `#errors tr`: the lists.

Everything from the table is escaped; the page holds no time: the same rows give the same page.
"""

from __future__ import annotations

from typing import Iterable, Optional, TextIO

from ..formats.html import PageWriter, page_head  # the report's page head and CSS
from ..formats.html import escape_text as _e
from ..plan.units import show_bytes
from .summary import KINDS, FleetSummary, KindRate, Listed, aqe_line, aqe_state, \
    execution_name, fraction, headline, joins_after, partitions, percent, small_heading, \
    why_text

#: The overall chart's geometry (SVG user units): label column, bar track, figures column.
LABEL_WIDTH, TRACK_WIDTH, FIGURE_WIDTH = 130, 420, 150
BAR_HEIGHT, BAR_GAP = 22, 8
#: The applications the page lists, most executions first (a day of a fleet can hold a
#: hundred thousand: the page would weigh hundreds of MB).
PAGE_APPS = 2000

FLEET_CSS = """
.fleet h2{margin:1.2rem 0 .4rem}.fleet table{margin:.4rem 0 1rem;width:100%}
.fleet td,.fleet th{border-bottom:1px solid var(--line);padding:.2rem .5rem}
#rates-chart{max-width:720px;width:100%;height:auto;display:block}
#rates-chart text{fill:var(--fg);font:13px system-ui,sans-serif;dominant-baseline:middle}
#rates-chart .track{fill:var(--panel);stroke:var(--line)}
.b-coalesced{fill:var(--coalesced)}.b-skew-join{fill:var(--skew-join)}
.b-smj-to-bhj{fill:var(--smj-to-bhj)}.b-smj-to-shj{fill:var(--smj-to-shj)}
.b-empty-relation{fill:var(--empty-relation)}.b-local-read{fill:var(--local-read)}
.b-dpp{fill:var(--dpp)}.b-dpp-dropped{fill:var(--dpp-dropped)}
.b-rebalance-skew{fill:var(--rebalance-skew)}.b-one-row{fill:var(--one-row)}
.b-limit-removed{fill:var(--limit-removed)}
#apps{display:block;max-height:70vh;overflow:auto}
#apps td.rate{min-width:7.5rem;white-space:nowrap;font-variant-numeric:tabular-nums}
.bar{display:block;height:.55rem;background:var(--panel);border:1px solid var(--line);
border-radius:2px;margin-bottom:.15rem}
.bar>span{display:block;height:100%;min-width:0}
.f-coalesced{background:var(--coalesced)}.f-skew-join{background:var(--skew-join)}
.f-smj-to-bhj{background:var(--smj-to-bhj)}.f-smj-to-shj{background:var(--smj-to-shj)}
.f-empty-relation{background:var(--empty-relation)}.f-local-read{background:var(--local-read)}
.f-dpp{background:var(--dpp)}.f-dpp-dropped{background:var(--dpp-dropped)}
.f-rebalance-skew{background:var(--rebalance-skew)}.f-one-row{background:var(--one-row)}
.f-limit-removed{background:var(--limit-removed)}
.fleet td.nw{white-space:nowrap}.fleet td code{overflow-wrap:anywhere}
#apps td.rate.zero{opacity:.55}
.unknown{color:var(--dim)}.err{color:var(--fail)}.more{color:var(--dim)}
"""


def write_fleet_page(summary: FleetSummary, stream: TextIO) -> None:
    out = PageWriter(stream)
    page_head(out, "aqe-inspect fleet summary")
    out(f"<style>{FLEET_CSS}</style>\n")
    out(f'<header><h1>AQE across the fleet</h1><p class="src" id="headline">'
        f"{_e(headline(summary))}</p><p class=\"app\">{_e(aqe_line(summary))}</p></header>\n")
    out('<main class="fleet">\n')
    out("<h2>Rewrite rates</h2>\n<p class=\"hint\">Executions with at least one rewrite of "
        "the kind, of the executions read.</p>\n")
    out(_chart(summary.rates))
    _apps(out, summary)
    _idle(out, summary.idle)
    _skew(out, summary.skew)
    _small_joins(out, summary)
    _errors(out, summary.errors)
    if summary.notes:
        out('<ul class="notes">' + "".join(f"<li>note: {_e(note)}</li>"
                                           for note in summary.notes) + "</ul>\n")
    out("</main>\n</body></html>\n")
    out.flush()


def _rate_attr(rate: KindRate) -> str:
    value = rate.rate
    return "" if value is None else f"{value:.6g}"


def _chart(rates: Iterable[KindRate]) -> str:
    """The overall rates as horizontal bars, one per kind, in inline SVG."""
    rates = tuple(rates)
    height = len(rates) * (BAR_HEIGHT + BAR_GAP) + BAR_GAP
    width = LABEL_WIDTH + TRACK_WIDTH + FIGURE_WIDTH
    parts = [f'<svg id="rates-chart" role="img" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">'
             "<title>Rewrite rates per kind</title>"]
    parts.append('<g id="rates">')
    for index, rate in enumerate(rates):
        y = BAR_GAP + index * (BAR_HEIGHT + BAR_GAP)
        length = round((rate.rate or 0) * TRACK_WIDTH, 2)
        middle = y + BAR_HEIGHT / 2
        parts.append(
            f'<g class="kind" data-kind="{rate.kind}" data-rate="{_rate_attr(rate)}" '
            f'data-executions="{rate.executions}" data-read="{rate.read}" '
            f'data-count="{rate.count}">'
            f'<text x="0" y="{middle}">{rate.kind}</text>'
            f'<rect class="track" x="{LABEL_WIDTH}" y="{y}" width="{TRACK_WIDTH}" '
            f'height="{BAR_HEIGHT}"/>'
            f'<rect class="bar b-{rate.kind}" x="{LABEL_WIDTH}" y="{y}" width="{length}" '
            f'height="{BAR_HEIGHT}"><title>{_e(rate.kind)}: {_e(fraction(rate))}</title></rect>'
            f'<text class="figure" x="{LABEL_WIDTH + TRACK_WIDTH + 8}" y="{middle}">'
            f"{_e(percent(rate.rate))} ({rate.executions}/{rate.read})</text></g>")
    parts.append("</g></svg>\n")
    return "".join(parts)


def _bar(rate: KindRate) -> str:
    width = (rate.rate or 0) * 100
    zero = " zero" if not rate.executions else ""
    return (f'<td class="rate{zero}" data-kind="{rate.kind}" data-rate="{_rate_attr(rate)}" '
            f'data-executions="{rate.executions}"><span class="bar" title="'
            f'{_e(rate.kind)}: {_e(fraction(rate))}"><span class="f-{rate.kind}" '
            f'style="width:{width:.2f}%"></span></span>{_e(fraction(rate))}</td>')


def _apps(out: PageWriter, summary: FleetSummary) -> None:
    out(f"<h2>Applications ({summary.applications})</h2>\n")
    out('<table id="apps"><thead><tr><th>application</th><th>Spark</th>'
        '<th class="n">executions</th>'
        + "".join(f'<th><span class="k k-{kind}">{kind}</span></th>' for kind in KINDS)
        + "<th>partitions (coalesced)</th></tr></thead><tbody>\n")
    for app in summary.apps[:PAGE_APPS]:
        out(f'<tr data-app="{_e(app.app_id)}" data-executions="{app.executions}">'
            f'<td title="{_e(" ".join(app.sources))}">{_e(app.label)}</td>'
            f"<td>{_e(app.spark_version)}</td><td class=\"n\">{app.executions}</td>"
            + "".join(_bar(rate) for rate in app.rates)
            + f"<td>{_e(partitions(app))}</td></tr>\n")
    out("</tbody></table>\n")
    _more(out, Listed(summary.apps[:PAGE_APPS], len(summary.apps)))


def _more(out: PageWriter, listed: Listed) -> None:
    if listed.more:
        out(f'<p class="more">... and {listed.more} more.</p>\n')


def _idle(out: PageWriter, listed: Listed) -> None:
    out(f"<h2>Executions where AQE did nothing although it was on ({listed.total})</h2>\n")
    if listed.shown:
        out('<table id="idle"><thead><tr><th>application</th><th>execution</th>'
            "<th>description</th><th>AQE</th></tr></thead><tbody>\n")
        for item in listed.shown:
            where = item.where
            state = aqe_state(item.aqe_enabled)
            out(f'<tr data-aqe="{"on" if item.aqe_enabled else "unknown"}"><td>'
                f"{_e(where.application)}</td><td class=\"nw\">{_e(execution_name(where))}</td>"
                f"<td>{_e(where.description)}</td><td"
                f'{"" if item.aqe_enabled else " class=unknown"}>{_e(state)}</td></tr>\n')
        out("</tbody></table>\n")
    _more(out, listed)


def _skew(out: PageWriter, listed: Listed) -> None:
    out(f"<h2>Largest skew splits ({listed.total})</h2>\n")
    if listed.shown:
        out('<table id="skew"><thead><tr><th class="n">splits</th><th class="n">skewed '
            "partitions</th><th>application</th><th>execution</th><th>description</th>"
            "</tr></thead><tbody>\n")
        for item in listed.shown:
            where = item.where
            skewed = "-" if item.skewed_partitions is None else str(item.skewed_partitions)
            out(f'<tr data-splits="{item.skew_splits}"><td class="n">{item.skew_splits}</td>'
                f'<td class="n">{skewed}</td><td>{_e(where.application)}</td>'
                f'<td class="nw">{_e(execution_name(where))}</td><td>{_e(where.description)}'
                "</td></tr>\n")
        out("</tbody></table>\n")
    _more(out, listed)


def _small_joins(out: PageWriter, summary: FleetSummary) -> None:
    listed = summary.small_joins
    out(f"<h2>{_e(small_heading(summary))}: {listed.total}</h2>\n")
    if listed.shown:
        out('<table id="small-joins"><thead><tr><th class="n">smaller side\'s data size</th>'
            "<th>join</th>"
            "<th>application</th><th>execution</th><th>why not</th><th>config</th>"
            "</tr></thead><tbody>\n")
        for join in listed.shown:
            where = join.where
            out(f'<tr data-bytes="{join.smallest_side_bytes}" data-verdict='
                f'"{_e(join.verdict or "")}"><td class="n nw">'
                f"{_e(show_bytes(join.smallest_side_bytes))}</td><td>{_e(join.node)}</td>"
                f'<td>{_e(where.application)}</td><td class="nw">{_e(execution_name(where))}'
                f"</td><td>{_e(why_text(join))}</td><td><code>{_e(join.config or '-')}</code></td>"
                "</tr>\n")
        out("</tbody></table>\n")
    after: Optional[str] = joins_after(summary)
    if after:
        out(f'<p class="more">{_e(after)}.</p>\n')


def _errors(out: PageWriter, listed: Listed) -> None:
    if not listed.total:
        return
    out(f"<h2>Files with errors ({listed.total})</h2>\n")
    out('<table id="errors"><thead><tr><th>file</th><th>error</th></tr></thead><tbody>\n')
    for item in listed.shown:
        out(f'<tr><td>{_e(item.source)}</td><td class="err">{_e(item.message)}</td></tr>\n')
    out("</tbody></table>\n")
    _more(out, listed)
