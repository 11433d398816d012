"""The fleet summary (`aqe_inspect/fleet/summary.py`, `fleet/html.py`) over real rows.

The rows are the fleet table's, built with the table's own code (`row_from_report`) from every
real event log of the sample manifest (`sample_plans/eventlogs.json`: both Spark lines, plain,
zstd, lz4, snappy, lzf, a rolling folder, `.inprogress` files whole and cut), keeping each
log's scenario execution, plus an error row for a garbage file. Every figure the summary
shows is checked against what `truth.json` says of each scenario (the rewrites Spark made, the
adaptive setting, the sizes of the sides of the sort-merge joins that stayed), never against
the rows themselves; then the Markdown tables' shape, the text's width, the HTML page's
structure, and the page in Chromium (the charts drawn, the rates shown).
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from collections import defaultdict
from html.parser import HTMLParser
from typing import Dict, List

import pytest

from aqe_inspect.rewrites.engine import diff_queries
from aqe_inspect.errors import InspectError
from aqe_inspect.fleet.summary import KINDS, SMALL_JOIN_BYTES, summarize
from aqe_inspect.fleet.summary_formats import print_summary, write_summary
from aqe_inspect.fleet.table import COLUMN_NAMES, error_row, row_from_report
from aqe_inspect.sources.routing import read_input
from aqe_inspect.plan.units import show_bytes

from .conftest import SAMPLE_PLANS
from .test_html import Opened, browser  # noqa: F401  (the Chromium fixture, module-scoped)

MANIFEST = json.loads((SAMPLE_PLANS / "eventlogs.json").read_text())
EVENT_LOGS = [entry for entry in MANIFEST["logs"] if entry["layout"] != "history-sql"]
GARBAGE = "not an event log at all\n\x00\x01 just bytes\n"


def _truth(entry: dict) -> dict:
    return json.loads((SAMPLE_PLANS / entry["truth"]).read_text())


def _rows_of(path: str) -> List[dict]:
    """The table's rows of one input, as the fleet job makes them: an unreadable file is one
    error row."""
    try:
        stream = read_input(path)
        return [row_from_report(report, path, stream.application)
                for report in diff_queries(stream.queries)]
    except InspectError as error:
        return [error_row(path, str(error))]


def _scenario_row(entry: dict) -> dict:
    path = str(SAMPLE_PLANS / entry["path"])
    found = [row for row in _rows_of(path) if row["description"] == entry["description"]
             and row["execution_id"] == entry["execution_id"]]
    assert len(found) == 1, (entry["path"], len(found))
    return found[0]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """(rows, entries, garbage path): one row per sample event log, then the garbage's."""
    assert len({e["spark_version"] for e in EVENT_LOGS}) == 2
    assert {e["codec"] for e in EVENT_LOGS} >= {None, "zstd", "lz4", "snappy", "lzf"}
    assert {e["layout"] for e in EVENT_LOGS} >= {"single", "rolling", "inprogress"}
    garbage = tmp_path_factory.mktemp("fleet") / "garbage.zstd"
    garbage.write_text(GARBAGE)
    rows = [_scenario_row(entry) for entry in EVENT_LOGS]
    errors = _rows_of(str(garbage))
    assert len(errors) == 1 and errors[0]["error"]
    return rows + errors, EVENT_LOGS, str(garbage)


# ---- what truth.json says the summary must show ----------------------------------------------

def _enabled(entry: dict) -> bool:
    return _truth(entry)["confs"].get("spark.sql.adaptive.enabled", "true") != "false"


def _fired(entry: dict) -> Dict[str, int]:
    return _truth(entry)["rewrites"]


def _smaller_sides(entry: dict) -> List[int]:
    """The exact run-time size of the smaller side of each sort-merge join in the final plan:
    of the sides that read a query stage (kept_by_cost's upper join reads the lower join's
    output on its left: no stage, so its right side's size is the only one known)."""
    return [size for size, _ in _smaller_sides_known(entry)]


def _smaller_sides_known(entry: dict) -> List[tuple]:
    """(size, whether both sides' sizes are known) of each final sort-merge join."""
    truth = _truth(entry)
    stages = {stage["id"]: stage["size_in_bytes"] for stage in truth["stages"]}
    found = []
    for join in truth["joins"]:
        if join["operator"] != "SortMergeJoin":
            continue
        sizes = [stages[join[side]] for side in ("left_stage", "right_stage")
                 if join[side] is not None]
        found.append((min(sizes), len(sizes) == 2))
    return found


def test_overall_rates_and_counts_are_truths(fleet):
    rows, entries, garbage = fleet
    summary = summarize(rows)
    assert summary.executions == len(entries) >= 36
    assert summary.files == len(entries) + 1
    assert summary.applications == len({e["app_id"] for e in entries})
    assert [(e.source, bool(e.message)) for e in summary.errors.shown] == [(garbage, True)]
    assert summary.aqe_on == sum(_enabled(e) for e in entries)
    assert summary.aqe_off == sum(not _enabled(e) for e in entries) >= 2
    assert summary.aqe_unknown == 0
    for rate in summary.rates:
        with_it = sum(_fired(e)[rate.kind] > 0 for e in entries)
        assert (rate.kind, rate.executions, rate.read) == (rate.kind, with_it, len(entries))
        assert rate.count == sum(_fired(e)[rate.kind] for e in entries)
        assert rate.rate == pytest.approx(with_it / len(entries))
    assert [rate.kind for rate in summary.rates] == list(KINDS)
    assert all(rate.executions > 0 for rate in summary.rates)  # every kind is in the samples


def test_per_application_rates_and_partitions_are_truths(fleet):
    rows, entries, _ = fleet
    by_app = defaultdict(list)
    for entry in entries:
        by_app[entry["app_id"]].append(entry)
    apps = {app.app_id: app for app in summarize(rows).apps}
    assert set(apps) == set(by_app)
    # The .inprogress log and its copy cut mid-line are one application twice.
    assert max(app.executions for app in apps.values()) == 2
    for app_id, group in by_app.items():
        app = apps[app_id]
        assert (app.app_name, app.spark_version, app.executions) == (
            group[0]["app_name"], group[0]["spark_version"], len(group))
        assert set(app.sources) == {str(SAMPLE_PLANS / e["path"]) for e in group}
        for rate in app.rates:
            assert rate.executions == sum(_fired(e)[rate.kind] > 0 for e in group)
        # Each coalesced read reads one shuffle of spark.sql.shuffle.partitions partitions,
        # except where a shuffle is read twice (a reused exchange, a subquery's).
        if group[0]["scenario"] not in ("reused_exchange", "scalar_subquery", "dpp_subquery",
                                        "kept_by_cost", "empty_scalar_subquery",
                                        "empty_several"):
            coalesced = sum(_fired(e)["coalesced"] for e in group)
            partitions = int(_truth(group[0])["confs"]["spark.sql.shuffle.partitions"])
            assert app.partitions_before == (coalesced * partitions if coalesced else None)
            assert (app.partitions_after is None) == (coalesced == 0)
            if coalesced:
                assert 0 < app.partitions_after < app.partitions_before
    executions = [app.executions for app in summarize(rows).apps]
    assert executions == sorted(executions, reverse=True)


def test_idle_executions_are_those_truth_says_aqe_left_alone(fleet):
    rows, entries, _ = fleet
    expected = sorted((e["app_id"], e["execution_id"], e["description"]) for e in entries
                      if _enabled(e) and _truth(e)["adaptive"] and not any(_fired(e).values()))
    summary = summarize(rows, top=1000)
    assert len(expected) >= 6
    assert summary.idle.total == len(expected) == len(summary.idle.shown)
    assert sorted((i.where.app_id, i.where.execution_id, i.where.description)
                  for i in summary.idle.shown) == expected
    assert all(i.aqe_enabled is True for i in summary.idle.shown)
    # The aqe_off scenario did nothing too, but AQE was off: not listed; nor no_exchange,
    # whose plan AQE had nothing to re-plan in.
    assert not any("aqe_off" in i.where.description or "no_exchange" in i.where.description
                   for i in summary.idle.shown)


def test_skew_splits_are_the_skew_joins_of_truth(fleet):
    rows, entries, _ = fleet
    # A skew join's reads and a rebalance's (rebalance-skew) both split skewed partitions.
    skewed = sorted(e["app_id"] for e in entries
                    if _fired(e)["skew-join"] or _fired(e)["rebalance-skew"])
    summary = summarize(rows)
    assert len(skewed) >= 2
    assert sorted(s.where.app_id for s in summary.skew.shown) == skewed
    for split in summary.skew.shown:
        assert split.skew_splits >= 2 and split.skewed_partitions >= 1
    keys = [(-s.skew_splits, -(s.skewed_partitions or 0)) for s in summary.skew.shown]
    assert keys == sorted(keys)


@pytest.mark.parametrize("small_bytes", [SMALL_JOIN_BYTES, 5000, 0])
def test_small_sort_merge_joins_are_those_truth_sizes(fleet, small_bytes):
    rows, entries, _ = fleet
    expected = sorted((size, e["app_id"]) for e in entries for size in _smaller_sides(e)
                      if size <= small_bytes)
    summary = summarize(rows, small_bytes=small_bytes, top=1000)
    got = [(join.smallest_side_bytes, join.where.app_id) for join in summary.small_joins.shown]
    assert [size for size, _ in got] == sorted(size for size, _ in got)  # smallest first
    assert summary.small_joins.total == len(got) == len(expected)
    # The plan prints a size to a tenth of its unit (`9.4 KiB`): the same figure as truth's.
    assert sorted((show_bytes(size), app) for size, app in got) == \
        sorted((show_bytes(size), app) for size, app in expected)
    one_sided = {(show_bytes(size), e["app_id"]) for e in entries
                 for size, both in _smaller_sides_known(e) if not both}
    uncounted = {e["app_id"] for e in entries if e["spark_version"].startswith("3.")
                 and (json.loads((SAMPLE_PLANS / e["truth"]).read_text("utf-8"))["control"]
                      or {}).get("reason") == "too-many-empty-partitions"}
    for join in summary.small_joins.shown:
        assert join.node.startswith("SortMergeJoin")
        if (show_bytes(join.smallest_side_bytes), join.where.app_id) in one_sided:
            # a side reads no stage (kept_by_cost's upper join): its size is not known
            assert join.verdict == "cannot-tell"
            continue
        if join.where.app_id in uncounted:
            # aqe_declines on 3.x: the event log cannot count the partitions that hold data
            # under a coalesced read (Spark 4 added the read's 'number of empty partitions')
            assert join.verdict == "cannot-tell"
            continue
        if join.where.app_name.endswith("dpp_dropped"):
            # A merge hint keeps this join: the hint is in the logical plan only, which the
            # event log does not hold. What the log shows decides: the non-empty partition
            # ratio where its metrics count the partitions (3.5), else "cannot tell" (4.3).
            assert join.verdict in ("blocked", "cannot-tell")
            continue
        assert join.verdict == "blocked"
        assert join.reason and join.config.startswith("spark.sql.")
    if small_bytes == 5000:
        assert len(got) >= 4 and {show_bytes(size) for size, _ in got} >= {"0.0 B", "480.0 B"}


def test_the_rows_order_does_not_matter_and_csv_text_reads_the_same(fleet):
    rows, _, _ = fleet
    shuffled = list(rows)
    random.Random(16).shuffle(shuffled)
    text = _write(rows, "markdown")
    assert _write(shuffled, "markdown") == text
    # The CSV output read back: every cell text, null cells empty.
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, COLUMN_NAMES)
    writer.writeheader()
    writer.writerows({k: ("" if v is None else str(v).lower() if isinstance(v, bool) else v)
                      for k, v in row.items()} for row in rows)
    read_back = list(csv.DictReader(io.StringIO(buffer.getvalue())))
    assert _write(read_back, "markdown") == text
    assert summarize(read_back) == summarize(rows)


def test_lists_are_bounded_and_say_how_many_more(fleet):
    rows, _, _ = fleet
    full, top = summarize(rows, top=1000), summarize(rows, top=3)
    assert top.idle.shown == full.idle.shown[:3] and top.idle.total == full.idle.total
    assert top.idle.more == full.idle.total - 3 > 0
    assert top.small_joins.shown == full.small_joins.shown[:3]
    text = _write(rows, "text", top=3)
    assert f"... and {top.idle.more} more" in text
    assert f"... and {full.applications - 3} more" in text


def test_unknown_aqe_setting_is_said(fleet):
    """A row whose log did not record spark.sql.adaptive.enabled (here: a History Server JSON
    of the coalesced_aggregation_off scenario, read as `diff` reads it) counts as unknown, and
    an idle execution of it is listed as such."""
    entry = next(e for e in MANIFEST["logs"] if e["layout"] == "history-sql"
                 and e["scenario"] == "coalesced_aggregation_off"
                 and e["spark_version"] == "4.3.0")
    row = _scenario_row(entry)
    assert row["aqe_enabled"] is None
    summary = summarize([row])
    assert (summary.aqe_unknown, summary.idle.total) == (1, 1)
    assert summary.idle.shown[0].aqe_enabled is None
    assert "[AQE setting unknown]" in _write([row], "text")
    assert "| unknown (not in the log) |" in _write([row], "markdown")


# ---- the three formats ---------------------------------------------------------------------

def _write(rows, format: str, **options) -> str:
    out = io.StringIO()
    write_summary(rows, out, format, **options)
    return out.getvalue()


def _markdown_tables(text: str) -> List[List[List[str]]]:
    tables, current = [], None
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if current is None:
                current = []
                tables.append(current)
            current.append(cells)
        else:
            current = None
    return tables


def test_markdown_is_github_tables_of_the_figures(fleet):
    rows, entries, garbage = fleet
    text = _write(rows, "markdown", top=1000)
    assert text.startswith("## AQE fleet summary\n")
    tables = _markdown_tables(text)
    for table in tables:
        assert len({len(row) for row in table}) == 1, table[0]  # every row as wide as its head
        assert all(re.fullmatch(r"-{3}:?|:?-{3}", cell) for cell in table[1])
    rates = next(t for t in tables if t[0] == ["kind", "executions", "rate", "rewrites"])
    summary = summarize(rows)
    assert [row[0] for row in rates[2:]] == list(KINDS)
    for row, rate in zip(rates[2:], summary.rates):
        assert row[1] == f"{rate.executions}/{len(entries)}"
        assert row[2] == f"{100 * rate.executions / len(entries):.1f}%"
    apps = next(t for t in tables if t[0][0] == "application" and "Spark" in t[0])
    assert len(apps) - 2 == summary.applications
    assert apps[0][3:3 + len(KINDS)] == list(KINDS)
    errors = next(t for t in tables if t[0] == ["file", "error"])
    assert errors[2][0].replace("\\_", "_") == garbage


def test_markdown_and_html_escape_what_the_logs_hold(fleet):
    rows, _, _ = fleet
    hostile = dict(rows[0], app_name="a|b <script>alert(1)</script>\nnext *x* [l](u)",
                   description="d|e")
    text = _write([hostile], "markdown")
    for table in _markdown_tables(text):
        assert len({len(row) for row in table}) == 1
    assert "<script>" not in text and "\nnext" not in text
    page = _write([hostile], "html")
    assert "<script>" not in page and "&lt;script&gt;" in page
    screen = _write([dict(hostile, app_name="\x1b[31mred")], "text", width=80)
    assert "\x1b" not in screen and "\\x1b[31mred" in screen


@pytest.mark.parametrize("width", [60, 100])
def test_text_is_wrapped_to_the_width(fleet, width):
    rows, entries, garbage = fleet
    text = _write(rows, "text", width=width)
    lines = text.splitlines()
    assert lines[0].startswith("Fleet summary: ")
    assert f"{len(entries)} executions read" in " ".join(lines[:2])
    # A word longer than the line (a config key) stands alone; no other line runs past.
    for line in lines:
        assert len(line) <= width or " " not in line.strip(), line
    for heading in ("Rewrite rates", "Applications", "AQE did nothing", "Largest skew splits",
                    "Sort-merge joins that stayed although small", "Files with errors"):
        assert any(heading in line for line in lines), heading
    assert garbage in text
    out = io.StringIO()
    print_summary(rows, out, width=width)
    assert out.getvalue() == text


def test_an_empty_table_and_a_bad_format(fleet):
    for format in ("text", "markdown", "html"):
        assert _write([], format)
    assert "0 executions read" in _write([], "text")
    with pytest.raises(InspectError, match="unknown summary format"):
        _write([], "pdf")
    rows, _, _ = fleet
    broken = dict(rows[0], stayed_sort_merge_joins="[{not json")
    assert "unreadable stayed_sort_merge_joins" in _write([broken], "text")


def test_skipped_files_are_counted_and_the_first_named(fleet):
    """Files the scan skipped (found in folders, no event logs): their count in the headline
    of every format, the first SKIPPED_NAMED named in a note, the rest counted; no row."""
    from aqe_inspect.fleet.summary import SKIPPED_NAMED

    rows, _, _ = fleet
    skipped = [f"logs/note<{number}>.txt" for number in range(SKIPPED_NAMED + 2, 0, -1)]
    summary = summarize(rows, skipped=skipped + skipped[:1])  # named twice: one file
    assert summary.skipped.total == len(skipped) and summary.files == summarize(rows).files
    assert summary.skipped.shown == tuple(sorted(skipped)[:SKIPPED_NAMED])
    headline = f", {len(skipped)} files skipped (not event logs)"
    text = _write(rows, "text", width=1000, skipped=skipped)
    assert text.splitlines()[0].endswith(headline)
    assert (f"note: skipped {len(skipped)} files found in folders, not Spark event logs (as "
            f"diff skips them): {', '.join(sorted(skipped)[:SKIPPED_NAMED])} and 2 more") in text
    assert headline in _write(rows, "markdown", skipped=skipped)
    page = _write(rows, "html", skipped=skipped)
    assert headline in page and "logs/note&lt;1&gt;.txt" in page and "<1>" not in page
    assert "skipped" not in _write(rows, "text")


# ---- HTML -----------------------------------------------------------------------------------

class _Elements(HTMLParser):
    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.elements: List[tuple] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))


def test_html_page_is_self_contained_with_the_rates(fleet):
    rows, entries, _ = fleet
    page = _write(rows, "html")
    elements = _Elements(page).elements
    tags = {tag for tag, _ in elements}
    assert "script" not in tags and "svg" in tags
    for tag, attrs in elements:
        for name in ("src", "href"):
            value = attrs.get(name) or ""
            assert not re.match(r"(?i)(https?:)?//", value), (tag, attrs)
    bars = {a["data-kind"]: a for t, a in elements if t == "g" and "data-rate" in a}
    summary = summarize(rows)
    assert list(bars) == list(KINDS)
    for rate in summary.rates:
        bar = bars[rate.kind]
        # The attribute holds six significant digits (`0.22093` for 19/86).
        assert float(bar["data-rate"]) == pytest.approx(rate.executions / len(entries),
                                                        rel=1e-5)
        assert int(bar["data-executions"]) == rate.executions
    apps = [a for t, a in elements if t == "tr" and "data-app" in a]
    assert len(apps) == summary.applications  # the page lists every application


def test_html_in_chromium_draws_the_charts(fleet, browser, tmp_path):  # noqa: F811
    rows, entries, _ = fleet
    target = tmp_path / "fleet.html"
    target.write_text(_write(rows, "html"))
    opened = Opened(browser, target)
    seen = opened.page.evaluate("""() => {
      const box = e => e.getBoundingClientRect();
      const bars = [...document.querySelectorAll('#rates [data-kind]')].map(g => ({
        kind: g.dataset.kind, rate: +g.dataset.rate,
        bar: box(g.querySelector('rect.bar')).width,
        track: box(g.querySelector('rect.track')).width,
        fill: getComputedStyle(g.querySelector('rect.bar')).fill,
        label: g.querySelector('text.figure').textContent}));
      const cells = [...document.querySelectorAll('#apps td[data-rate]')].map(td => ({
        rate: +td.dataset.rate, fill: box(td.querySelector('.bar>span')).width,
        track: box(td.querySelector('.bar')).width, shown: box(td).height > 0}));
      return {bars, cells, lists: [...document.querySelectorAll('table[id]')].map(t => t.id)};
    }""")
    summary = summarize(rows)
    assert [bar["kind"] for bar in seen["bars"]] == list(KINDS)
    for bar, rate in zip(seen["bars"], summary.rates):
        assert bar["track"] > 200
        assert bar["bar"] == pytest.approx(bar["track"] * rate.rate, abs=1.5)
        assert bar["bar"] > 0 and bar["fill"] not in ("", "none", "rgb(0, 0, 0)")
        assert bar["label"].startswith(f"{100 * rate.rate:.1f}% ({rate.executions}/")
    assert len(seen["cells"]) == summary.applications * len(KINDS)
    for cell in seen["cells"]:
        assert cell["shown"]
        assert cell["fill"] == pytest.approx(cell["rate"] * (cell["track"] - 2), abs=1.5)
    assert seen["lists"] == ["apps", "idle", "skew", "small-joins", "errors"]
    assert opened.errors == []
    assert all(url.startswith("file://") for url in opened.requests), opened.requests
    opened.screenshot("fleet_summary")
    opened.page.emulate_media(color_scheme="dark")
    opened.screenshot("fleet_summary-dark")
    opened.page.close()


def test_rows_read_back_from_parquet_through_spark_sum_up_the_same(fleet, spark, tmp_path):
    """The README's way to summarise a table the job wrote: Spark reads it, the rows go
    through `toLocalIterator` (never all on the driver at once)."""
    from aqe_inspect.fleet.table import spark_schema

    _, session = spark
    rows, _, _ = fleet
    target = str(tmp_path / "table")
    session.createDataFrame([tuple(row[name] for name in COLUMN_NAMES) for row in rows],
                            spark_schema()).repartition(3).write.parquet(target)
    read = (row.asDict() for row in session.read.parquet(target).toLocalIterator())
    assert _write(read, "markdown") == _write(rows, "markdown")


# ---- the README -----------------------------------------------------------------------------

def _readme_section() -> str:
    """The site's page on `aqe-inspect fleet` (the README's section moved there)."""
    return (SAMPLE_PLANS.parent / "docs" / "commands" / "fleet.md").read_text("utf-8")


def test_the_readme_names_every_column_and_shows_a_real_summary(monkeypatch):
    """The columns, the commands (the summary example's is the command the example was made
    with: `fleet` takes no option the example needs), and the example: what the command prints
    of those logs, built here without Spark as its executors build it (the units it lists, each
    unit's rows, files found in folders that are no event logs skipped)."""
    from aqe_inspect.fleet.job import LocalFiles, expand_units
    from aqe_inspect.fleet.rows import is_skipped_file, rows_of_log

    monkeypatch.chdir(SAMPLE_PLANS.parent)  # the example names the logs from the clone's root
    monkeypatch.setenv("COLUMNS", "100")  # as it runs piped
    section = _readme_section()
    table = section[section.index("| column |"):]
    for name in COLUMN_NAMES:
        assert f"`{name}`" in table, name
    assert "aqe-inspect fleet 'logs/*.zstd' --output fleet-out" in section
    assert "spark-submit --master yarn" in section and "aqe_inspect.fleet.submit" in section
    (command,) = re.findall(r"```sh\n(aqe-inspect fleet '[^\n]*)\n```\n\n```text\n", section)
    words = command.split()
    assert words[:2] == ["aqe-inspect", "fleet"] and words[3:] == ["--output", "fleet-out"]
    example = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    rows, skipped = [], []
    for unit in expand_units([words[2].strip("'")], LocalFiles()):
        if unit.found and is_skipped_file(unit.source):
            skipped.append(unit.source)
        else:
            rows.extend(rows_of_log(unit.source))
    assert rows and not any(row["error"] for row in rows) and skipped
    out = io.StringIO()
    write_summary(rows, out, "text", skipped=skipped)
    assert out.getvalue() == example


def test_html_lists_at_most_page_apps_applications(fleet, monkeypatch):
    from aqe_inspect.fleet import html

    rows, _, _ = fleet
    monkeypatch.setattr(html, "PAGE_APPS", 5)
    page = _write(rows, "html")
    shown = [a for t, a in _Elements(page).elements if t == "tr" and "data-app" in a]
    applications = summarize(rows).applications
    assert len(shown) == 5 and f"... and {applications - 5} more." in page
