"""The HTML page of `diff` and `check` (`--format html`).

Structure tests read the page with the standard library's html.parser and always run: every
finding is an element with `data-rewrite-kind`, linked to operator cells that carry
`data-rewrite` in the final tree and, where the rewrite has one, in the initial tree; the
counts in the page are those of `diff --format json`; nothing in the page is fetched from
anywhere; trees 5,000 levels deep are flat rows.

Browser tests open pages of real sample plans in headless Chromium (Debian's `chromium`,
driven by Playwright): the same DOM assertions, no console error, the keyboard and the
collapsing work, a 300-operator plan renders in under a second; a screenshot of each page is
saved under test-artifacts/html/. They skip when Chromium or Playwright is missing, except
under CI, where they fail.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from html.parser import HTMLParser
from typing import Dict, List, Optional

import pytest

from aqe_inspect.cli import main
from aqe_inspect.rewrites.findings import REWRITE_KINDS

from .conftest import IN_CI, ROOT

ARTIFACTS = ROOT / "test-artifacts" / "html"
SAMPLES = ROOT / "sample_plans"
#: Real sample plans of every kind of input: explain texts of both Spark lines, event logs.
PAGES = [
    "spark-4.3.0/multi_rewrite/formatted_after.txt",
    "spark-3.5.9/skew_join/formatted_after.txt",
    "spark-4.3.0/five_way_join/eventlog.json",
    "spark-4.3.0/smj_to_shj/formatted_after.txt",
    "spark-4.3.0/empty_relation/formatted_after.txt",
    "spark-4.3.0/cached_table/formatted_after.txt",
    "spark-4.3.0/scalar_subquery/simple_after.txt",
    "spark-4.3.0/dynamic_partition_pruning/formatted_after.txt",
    "spark-3.5.9/skew_join/eventlog.json",
]
BROWSER_PAGES = [
    "spark-4.3.0/multi_rewrite/formatted_after.txt",
    "spark-3.5.9/skew_join/formatted_after.txt",
    "spark-4.3.0/five_way_join/eventlog.json",
]

sys.path.insert(0, str(ROOT / "bench"))
import shapes  # noqa: E402  (bench/shapes.py: the worst plan shapes)


def run(args, monkeypatch, stdin: Optional[str] = None) -> tuple:
    monkeypatch.chdir(ROOT)
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    with redirect_stdout(out), redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def page_of(path: str, monkeypatch) -> str:
    code, out, err = run(["diff", path, "--format", "html"], monkeypatch)
    assert (code, err) == (0, ""), err
    return out


def json_of(path: str, monkeypatch) -> dict:
    code, out, err = run(["diff", path, "--format", "json"], monkeypatch)
    assert (code, err) == (0, ""), err
    return json.loads(out)


class Page(HTMLParser):
    """Every element's attributes, by id and in order, and the deepest nesting seen."""

    VOID = {"meta", "link", "input", "br", "img", "hr", "col", "source", "wbr"}

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.elements: List[tuple] = []
        self.by_id: Dict[str, dict] = {}
        self.depth = self.max_depth = 0
        self.styles: List[str] = []
        self._in_style = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.elements.append((tag, attributes))
        if "id" in attributes:
            assert attributes["id"] not in self.by_id, f"duplicate id {attributes['id']}"
            self.by_id[attributes["id"]] = attributes
        if tag not in self.VOID:
            self.depth += 1
            self.max_depth = max(self.max_depth, self.depth)
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        if tag not in self.VOID:
            self.depth -= 1
        self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.styles.append(data)

    def having(self, name: str) -> List[dict]:
        return [attrs for _, attrs in self.elements if name in attrs]


def findings_by_query(page: Page) -> Dict[str, List[dict]]:
    """The findings of each query section, in order."""
    found: Dict[str, List[dict]] = {}
    current = None
    for tag, attrs in page.elements:
        if tag == "section" and "data-query" in attrs:
            current = found.setdefault(attrs["data-query"], [])
        elif "data-rewrite-kind" in attrs:
            current.append(attrs)
    return found


def assert_findings_linked(page: Page, report: dict) -> None:
    """Every rewrite of the JSON report is a finding of its kind in the page, its final
    operator's cell marked with its kind, and its initial operator's too when it has one."""
    findings = findings_by_query(page)
    assert sorted(findings) == sorted(q["id"] for q in report["queries"])
    for query in report["queries"]:
        shown = findings[query["id"]]
        assert [f["data-rewrite-kind"] for f in shown] == \
            [r["kind"] for r in query["rewrites"]]
        for finding, rewrite in zip(shown, query["rewrites"]):
            kind = rewrite["kind"]
            for side in ("final", "initial"):
                if rewrite[f"{side}_node"] is None:
                    assert f"data-{side}" not in finding
                    continue
                cell = page.by_id[finding[f"data-{side}"]]
                assert kind in cell["data-rewrite"].split(), (rewrite, cell)
                assert finding["id"] in cell["data-findings"].split()
                # The cell stands in the tree of its side.
                assert cell["class"].split()[0] == ("f" if side == "final" else "i")


def assert_counts(page: Page, report: dict) -> None:
    sections = {a["data-query"]: json.loads(a["data-counts"]) for a in page.having("data-query")}
    assert sections == {q["id"]: q["counts"] for q in report["queries"]}
    totals = {a["data-total-kind"]: int(a["data-count"]) for a in page.having("data-total-kind")}
    assert totals == {kind: sum(q["counts"][kind] for q in report["queries"])
                      for kind in REWRITE_KINDS}


#: What a browser would fetch: a src/href/action/poster/srcset attribute, a CSS url() or
#: @import, that is not a fragment of the page itself.
FETCHED = ("src", "href", "action", "formaction", "poster", "srcset", "data", "background")


def assert_self_contained(text: str, page: Page) -> None:
    for _, attrs in page.elements:
        for name in FETCHED:
            value = (attrs.get(name) or "").strip()
            if value:
                assert value.startswith("#") or value == "data:,", (name, value)
    css = "".join(page.styles)
    assert "@import" not in css and "url(" not in css
    assert not re.search(r"https?://", text, re.IGNORECASE)
    assert "<iframe" not in text and "fetch(" not in text and "XMLHttpRequest" not in text


# ---- structure (always run) ------------------------------------------------------------------

@pytest.mark.parametrize("sample", PAGES)
def test_every_finding_is_linked_to_its_operators_in_both_trees(sample, monkeypatch):
    path = f"sample_plans/{sample}"
    text = page_of(path, monkeypatch)
    page, report = Page(text), json_of(path, monkeypatch)
    assert_findings_linked(page, report)
    assert_counts(page, report)
    assert_self_contained(text, page)
    assert page.max_depth < 20  # trees are rows, not nested elements


def test_the_marks_in_the_trees_are_those_of_the_findings(monkeypatch):
    """No operator is marked that no finding (or a skew join's reads) accounts for."""
    text = page_of("sample_plans/spark-4.3.0/five_way_join/formatted_after.txt", monkeypatch)
    page = Page(text)
    marked = page.having("data-rewrite")
    linked = {f[side] for f in page.having("data-rewrite-kind")
              for side in ("data-final", "data-initial") if side in f}
    assert marked and {cell["id"] for cell in marked} == linked


def test_a_join_switch_marks_the_sort_merge_join_it_was(monkeypatch):
    page = Page(page_of("sample_plans/spark-4.3.0/smj_to_bhj/formatted_after.txt", monkeypatch))
    switched = [f for f in page.having("data-rewrite-kind")
                if f["data-rewrite-kind"] == "smj-to-bhj"]
    assert switched
    for finding in switched:
        initial = page.by_id[finding["data-initial"]]
        assert initial["class"].split()[0] == "i" and "smj-to-bhj" in initial["data-rewrite"]


def test_plan_text_is_escaped(monkeypatch, tmp_path):
    """Whatever a plan holds is text in the page, never markup (a literal in a Filter)."""
    plan = (SAMPLES / "spark-4.3.0/multi_rewrite/formatted_after.txt").read_text()
    hostile = '"><script>alert(1)</script><img src=x onerror=alert(2)>'
    assert "Filter (2)" in plan
    plan = plan.replace("Filter (2)", f"Filter (2) {hostile}", 1)
    target = tmp_path / "plan.txt"
    target.write_text(plan)
    text = page_of(str(target), monkeypatch)
    assert "<script>alert" not in text and "<img" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert text.count("<script>") == 1  # the page's own
    Page(text)


def test_a_5000_level_plan_is_flat_rows(monkeypatch, tmp_path):
    target = tmp_path / "deep.txt"
    target.write_text(shapes.deep_levels(5000))
    text = page_of(str(target), monkeypatch)
    page = Page(text)
    rows = [a for tag, a in page.elements if tag == "tr" and "op" in a.get("class", "")]
    assert len(rows) == 5000
    assert page.max_depth < 20
    # The first row's subtree is every other row; each row's reaches the last.
    assert rows[0]["data-end"] == "4999" and rows[-2]["data-end"] == "4999"
    assert "data-end" not in rows[-1]
    assert '<span class="deep">depth 4999</span>' in text


def test_a_wide_plan(monkeypatch, tmp_path):
    target = tmp_path / "wide.txt"
    target.write_text(shapes.wide(64 * 1024))
    page = Page(page_of(str(target), monkeypatch))
    rows = [a for tag, a in page.elements if tag == "tr" and "op" in a.get("class", "")]
    assert len(rows) > 500
    assert rows[0]["data-end"] == str(len(rows) - 1)
    assert all("data-end" not in row for row in rows[1:])


def many_joins_plan(tmp_path) -> str:
    """bench/shapes.py's many joins: a plan of over 300 operators, each join switched."""
    target = tmp_path / "joins.txt"
    target.write_text(shapes.many_joins(26 * 1024))
    return str(target)


def test_a_300_operator_plan_is_under_a_megabyte(monkeypatch, tmp_path):
    path = many_joins_plan(tmp_path)
    report = json_of(path, monkeypatch)
    text = page_of(path, monkeypatch)
    page = Page(text)
    finals = [a for a in page.having("id") if a.get("class", "").split()[:1] == ["f"]]
    assert len(finals) >= 300
    assert len(text.encode()) < 1 << 20
    assert_findings_linked(page, report)


def test_many_queries_are_a_filterable_list(monkeypatch):
    path = "sample_plans/spark-4.3.0/multi_rewrite/eventlog_v2_local-1795447030718"
    report = json_of(path, monkeypatch)
    page = Page(page_of(path, monkeypatch))
    listed = [a for tag, a in page.elements if tag == "tr" and "data-for" in a]
    assert len(listed) == len(report["queries"]) > 1
    for row, query in zip(listed, report["queries"]):
        section = page.by_id[row["data-for"]]
        assert section["data-query"] == query["id"]
        assert row["data-kinds"].split() == [k for k in REWRITE_KINDS if query["counts"][k]]
    assert "filter" in page.by_id and "kind" in page.by_id


def test_an_event_log_gets_a_timeline_of_its_updates(monkeypatch):
    """Each AQE update of the execution is a step, in order; the last is the final plan,
    whose rewrites are the findings."""
    path = "sample_plans/spark-4.3.0/five_way_join/eventlog.json"
    report = json_of(path, monkeypatch)
    text = page_of(path, monkeypatch)
    steps = re.findall(r'<li class="step" data-step="(\d+)">(.*?)</li>\n', text)
    query = report["queries"][0]
    assert [int(n) for n, _ in steps] == list(range(1, query["replans"] + 1))
    assert "isFinalPlan=true" in steps[-1][1] and "isFinalPlan=false" in steps[0][1]
    last = re.search(r'<span class="sofar">(.*?)</span>', steps[-1][1]).group(1)
    assert last == ", ".join(f"{kind} {n}" for kind, n in query["counts"].items() if n)
    stages = re.findall(r"new query stage\(s\): ([^<]*)", text)
    assert stages and "ShuffleQueryStage 0" in stages[0]


def test_only_the_html_format_keeps_every_update(monkeypatch):
    """The other formats read an event log as fast and small as before: no update but the
    last is kept, so no execution has a timeline. The reader keeps each update's plan when
    asked; the diff makes the timeline of them, and lets the plans go."""
    from aqe_inspect.rewrites.engine import diff_built
    from aqe_inspect.sources.eventlog import stream_event_logs

    path = str(SAMPLES / "spark-4.3.0/five_way_join/eventlog.json")
    plain = list(stream_event_logs(path).queries)
    assert plain and all(q.execution.updates == () for q in plain)
    assert all(r.query.execution.timeline == ()
               for r in stream_event_logs(path).built_into(diff_built))
    kept = stream_event_logs(path)
    kept.keep_replans()
    reports = list(kept.built_into(diff_built))
    assert [len(r.query.execution.timeline) for r in reports] == \
        [q.execution.replans for q in plain]
    assert all(r.query.execution.updates == () for r in reports)


def test_a_long_timeline_is_capped_with_a_note(monkeypatch):
    from aqe_inspect.sources.eventlog import events, stream_event_logs

    monkeypatch.setattr(events, "MAX_REPLANS_KEPT", 3)
    stream = stream_event_logs(str(SAMPLES / "spark-4.3.0/five_way_join/eventlog.json"))
    stream.keep_replans()
    query = next(iter(stream.queries))
    assert len(query.execution.updates) == 3
    assert any(f"first 3 of its {query.execution.replans} AQE updates" in note
               for note in query.notes)


def test_check_shows_the_outcomes_then_the_failing_queries(monkeypatch):
    args = ["check", "sample_plans/spark-4.3.0/multi_rewrite/eventlog.json", "--config",
            "tests/fixtures/check/aqe-expect.toml"]
    code, text, _ = run([*args, "--format", "html"], monkeypatch)
    _, raw, _ = run([*args, "--format", "json"], monkeypatch)
    result = json.loads(raw)
    assert code == 1
    page = Page(text)
    outcomes = page.having("data-outcome")
    assert [o["data-outcome"] for o in outcomes] == \
        ["PASS" if e["passed"] else "FAIL" for e in result["expectations"]]
    assert text.index('data-outcome="') < text.index('<section class="query"')
    sections = [a["data-query"] for a in page.having("data-query")]
    assert sections == [q["id"] for q in result["queries"]]
    assert_findings_linked(page, {"queries": result["queries"]})
    failed = [e for e in result["expectations"] if not e["passed"]]
    for expectation in failed:
        where = expectation["location"]
        assert f"{where['file']}:{where['line']}" in text


def test_the_page_is_the_same_each_time(monkeypatch):
    path = "sample_plans/spark-4.3.0/five_way_join/eventlog.json"
    assert page_of(path, monkeypatch) == page_of(path, monkeypatch)


def test_output_file(monkeypatch, tmp_path):
    target = tmp_path / "report.html"
    code, out, err = run(["diff", "sample_plans/spark-4.3.0/multi_rewrite/formatted_after.txt",
                          "--format", "html", "-o", str(target)], monkeypatch)
    assert (code, out, err) == (0, "", "")
    assert target.read_text().startswith("<!DOCTYPE html>")


# ---- in a browser ----------------------------------------------------------------------------

def _browser_or_skip():
    chromium = shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    missing = ("playwright is not installed (pip install -e '.[test]')" if sync_playwright is None
               else "chromium is not on PATH (apt-get install chromium)" if chromium is None
               else None)
    if missing:
        if IN_CI:
            pytest.fail(f"browser tests cannot run under CI: {missing}")
        pytest.skip(missing)
    return sync_playwright, chromium


@pytest.fixture(scope="module")
def browser():
    sync_playwright, chromium = _browser_or_skip()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium,
                                              args=["--no-sandbox"])
        yield launched
        launched.close()


class Opened:
    """A page opened from a file, with the errors it logged."""

    def __init__(self, browser, path, scheme: str = "light"):
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000},
                                     color_scheme=scheme)
        self.errors: List[str] = []
        self.requests: List[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text)
                     if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.as_uri())

    def screenshot(self, name: str) -> str:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        target = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(target), full_page=True)
        print(f"screenshot: {target}")
        return str(target)


CHECK_IN_PAGE = """() => {
  const out = {findings: [], counts: {}};
  for (const f of document.querySelectorAll('[data-rewrite-kind]')) {
    const kind = f.dataset.rewriteKind, q = f.closest('section.query').dataset.query;
    const cell = id => { const c = id && document.getElementById(id);
      return c ? {tree: c.cellIndex, kinds: (c.dataset.rewrite || '').split(' '),
                  visible: c.getBoundingClientRect().height > 0} : null; };
    out.findings.push({q, kind, final: cell(f.dataset.final), initial: cell(f.dataset.initial)});
  }
  for (const s of document.querySelectorAll('section.query')) out.counts[s.dataset.query] =
    Object.fromEntries([...s.querySelectorAll('.counts li')].map(
      li => [li.dataset.countKind, +li.dataset.count]));
  return out;
}"""


def _name(sample: str) -> str:
    return sample.replace("/", "_").rsplit(".", 1)[0]


@pytest.mark.parametrize("sample", BROWSER_PAGES)
def test_in_chromium_every_finding_is_highlighted_in_both_trees(sample, browser, monkeypatch,
                                                                tmp_path):
    path = f"sample_plans/{sample}"
    report = json_of(path, monkeypatch)
    target = tmp_path / "page.html"
    target.write_text(page_of(path, monkeypatch))
    opened = Opened(browser, target)
    seen = opened.page.evaluate(CHECK_IN_PAGE)
    rewrites = [(q["id"], r) for q in report["queries"] for r in q["rewrites"]]
    assert len(seen["findings"]) == len(rewrites) > 0
    for found, (query_id, rewrite) in zip(seen["findings"], rewrites):
        assert (found["q"], found["kind"]) == (query_id, rewrite["kind"])
        # Final tree: column 1; initial tree: column 0; both drawn, both marked.
        assert found["final"]["tree"] == 1 and rewrite["kind"] in found["final"]["kinds"]
        assert found["final"]["visible"]
        if rewrite["initial_node"] is not None:
            assert found["initial"]["tree"] == 0
            assert rewrite["kind"] in found["initial"]["kinds"]
    assert seen["counts"] == {q["id"]: q["counts"] for q in report["queries"]}
    assert opened.errors == []
    assert all(url.startswith("file://") for url in opened.requests), opened.requests
    opened.screenshot(_name(sample))
    opened.page.emulate_media(color_scheme="dark")
    opened.screenshot(_name(sample) + "-dark")
    opened.page.close()


def test_in_chromium_keys_filter_and_collapse(browser, monkeypatch, tmp_path):
    target = tmp_path / "page.html"
    target.write_text(page_of("sample_plans/spark-4.3.0/multi_rewrite/eventlog_v2_local-1795447030718", monkeypatch))
    opened = Opened(browser, target)
    page = opened.page
    # j: the first finding; Enter: its final operator, outlined.
    page.keyboard.press("j")
    first = page.evaluate("document.activeElement.dataset.rewriteKind")
    assert first == page.evaluate("document.querySelector('[data-rewrite-kind]')"
                                  ".dataset.rewriteKind")
    page.keyboard.press("Enter")
    assert page.evaluate("document.querySelector('td.cur').id") == page.evaluate(
        "document.querySelector('[data-rewrite-kind]').dataset.final")
    # A toggle hides its subtree's rows and shows them again.
    rows = page.evaluate("""() => { const b = document.querySelector('.sbs .tg');
      const tr = b.closest('tr'); const end = +tr.dataset.end; b.click();
      const hidden = [...tr.parentNode.rows].filter(r => r.classList.contains('hidden')).length;
      b.focus(); return [end - tr.sectionRowIndex, hidden]; }""")
    assert rows[0] == rows[1] > 0
    page.keyboard.press("Enter")
    assert page.evaluate("document.querySelectorAll('.sbs tr.hidden').length") == 0
    # Collapsed, then reached from a finding: its rows open again.
    page.evaluate("document.querySelector('.sbs .tg').click()")
    page.evaluate("document.querySelector('[data-rewrite-kind]').click()")
    assert page.evaluate("document.querySelector('td.cur').getBoundingClientRect().height") > 0
    # /: the filter; a text no query holds leaves none.
    total = page.evaluate("document.querySelectorAll('#queries tbody tr').length")
    page.keyboard.press("/")
    page.keyboard.type("no query is called this")
    assert page.inner_text("#shown") == f"0 of {total} queries"
    assert page.evaluate("document.querySelectorAll('section.query:not(.hidden)').length") == 0
    page.fill("#filter", "")
    page.select_option("#kind", "smj-to-bhj")
    kept = page.evaluate("[...document.querySelectorAll('section.query:not(.hidden)')]"
                         ".map(s => JSON.parse(s.dataset.counts)['smj-to-bhj'] > 0)")
    assert kept and all(kept)
    assert opened.errors == []
    page.close()


def test_in_chromium_a_300_operator_plan_renders_in_under_a_second(browser, monkeypatch,
                                                                   tmp_path):
    target = tmp_path / "page.html"
    text = page_of(many_joins_plan(tmp_path), monkeypatch)
    target.write_text(text)
    size = len(text.encode())
    assert size < 1 << 20
    started = time.perf_counter()
    opened = Opened(browser, target)
    timing = opened.page.evaluate("""() => { const n = performance.getEntriesByType('navigation')[0];
      const paint = performance.getEntriesByName('first-contentful-paint')[0];
      return {dom: n.domContentLoadedEventEnd, load: n.loadEventEnd,
              paint: paint ? paint.startTime : null}; }""")
    wall = time.perf_counter() - started
    print(f"300-operator page: {size:,} bytes, DOMContentLoaded {timing['dom']:.0f} ms, "
          f"load {timing['load']:.0f} ms, first paint {timing['paint']} ms, "
          f"opened in {wall * 1000:.0f} ms")
    assert timing["dom"] < 1000 and timing["load"] < 1000
    assert timing["paint"] is None or timing["paint"] < 1000
    assert opened.errors == []
    opened.screenshot("many_joins_300")
    opened.page.close()


def test_in_chromium_check_page(browser, monkeypatch, tmp_path):
    target = tmp_path / "check.html"
    code, text, _ = run(["check", "sample_plans/spark-4.3.0/multi_rewrite/eventlog.json",
                         "--config", "tests/fixtures/check/aqe-expect.toml", "--format",
                         "html"], monkeypatch)
    assert code == 1
    target.write_text(text)
    opened = Opened(browser, target)
    assert opened.page.inner_text("#verdict").endswith("not met")
    assert opened.errors == []
    opened.screenshot("check")
    opened.page.close()


def test_two_files_draw_the_before_files_initial_tree(tmp_path):
    """`diff BEFORE AFTER`: the initial tree drawn (and marked) is the BEFORE file's, which the
    AFTER file does not print: its SortMergeJoin carries the join switch's mark."""
    scenario = SAMPLES / "spark-4.3.0" / "smj_to_bhj"
    target = tmp_path / "pair.html"
    code = main(["diff", str(scenario / "simple_before.txt"), str(scenario / "simple_after.txt"),
                 "--format", "html", "--output", str(target)])
    assert code == 0
    page = target.read_text("utf-8")
    initial_cells = re.findall(r'<td class="i[^"]*"[^>]*data-rewrite="([^"]+)"', page)
    assert "smj-to-bhj" in initial_cells, initial_cells


def test_check_shows_why_an_expected_rewrite_did_not_happen(monkeypatch):
    """A failed expectation lists its why-not answers, each with its verdict and kind."""
    args = ["check", "sample_plans/spark-4.3.0/smj_to_bhj_off/eventlog.json", "--expect",
            "smj-to-bhj"]
    code, text, _ = run([*args, "--format", "html"], monkeypatch)
    assert code == 1
    items = Page(text).having("data-verdict")
    assert [(i["data-verdict"], i["data-kind"]) for i in items] == [("blocked", "smj-to-bhj")]
    assert "spark.sql.adaptive.autoBroadcastJoinThreshold=-1" in text


# -- what the page says in words ------------------------------------------------------------


def test_the_main_plan_heading_says_what_it_is(monkeypatch):
    """The query's own plan is headed so a reader knows it from its subqueries' plans, each
    heading with a line that says what the tree is."""
    text = page_of(str(SAMPLES / "spark-4.3.0/scalar_subquery/formatted_after.txt"), monkeypatch)
    headings = re.findall(r'<section class="plan" id="[^"]+"><h3>([^<]*)</h3>\n'
                          r'(?:<p class="hint">([^<]*)</p>)?', text)
    assert headings[0][0] == "main query plan", headings
    assert "the query&#x27;s own plan" in headings[0][1].lower()
    subqueries = [(heading, hint) for heading, hint in headings if heading.startswith("subquery")]
    assert subqueries, headings
    assert all("subquery" in hint.lower() for _, hint in subqueries), subqueries
    assert "<h3>main</h3>" not in text


def test_spark_s_no_estimate_size_is_shown_as_unknown(monkeypatch):
    """Spark's ResultQueryStage reports Long.MaxValue bytes (printed 8.0 EiB) when it has no
    estimate: the page says the size is unknown rather than 8 EiB."""
    path = SAMPLES / "spark-4.3.0/local_read/eventlog.json"
    assert "Statistics(sizeInBytes=8.0 EiB)" in path.read_text("utf-8")
    text = page_of(str(path), monkeypatch)
    facts = re.findall(r'<span class="fact"><b>stage statistics</b> ([^<]*)</span>', text)
    assert "data size unknown (Spark&#x27;s 8.0 EiB: no estimate)" in facts, facts
    assert not any(fact.endswith("8.0 EiB") for fact in facts)
