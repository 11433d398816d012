"""Every Markdown output keeps the inputs' text as text on GitHub: `compare --format markdown`
(two runs, and two fleet tables), the fleet summary's markdown and the snapshot diff in SARIF's
`message.markdown` are rendered here by GitHub's own Markdown renderer (cmark-gfm, through
the `cmarkgfm` bindings, with raw HTML kept as GitHub keeps it before its sanitizer), and
must make no link, tag or markup of what an event log or a plan held: not even of a bare
`http://...`, `www....` or `user@host.example`, which GitHub's autolink extension links by
itself.

The logs are real (sample_plans/compare, Spark 4.3.0); only their descriptions and the
application's name are rewritten to the hostile text.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Dict, List

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from .test_compare import _log, run
from .test_compare_fleet_tables import _rows, write_table

#: One per execution the baseline -> bhj_off comparison shows (each loses its broadcast),
#: each within the 120 characters a description is shortened to.
HOSTILE = {
    "aqe-compare:smj_to_bhj": "aqe-compare:smj_to_bhj http://evil.example/x?a=1 "
                              "https://evil.example/y ftp://evil.example/z HTTPS://EVIL.EXAMPLE/W",
    "aqe-compare:multi_rewrite": "aqe-compare:multi_rewrite www.evil.example/p "
                                 "(www.evil.example) *www.evil.example* x_www.evil.example "
                                 "WWW.EVIL.EXAMPLE",
    "aqe-compare:local_read": "aqe-compare:local_read admin@evil.example "
                              "first.last+tag@evil.example mailto:a@evil.example "
                              "xmpp:b@evil.example/r",
    "aqe-compare-sample": "etl http://evil.example/app www.evil.example ops_team@evil.example "
                          "cc @org/team (@admin) fixes #12 org/repo#34",
}
#: What the rewritten skew execution is called (the fleet summary lists skew splits).
SKEW = "aqe-compare:skew_join see https://evil.example/skew or www.evil.example, mail "\
       "skew@evil.example"


def rendered(markdown: str) -> str:
    """The HTML GitHub makes of `markdown`, before its sanitizer (which drops comments)."""
    return cmarkgfm.github_flavored_markdown_to_html(markdown,
                                                     options=Options.CMARK_OPT_UNSAFE)


def links(page: str) -> List[str]:
    return re.findall(r"<a\b[^>]*>", page)


def visible(fragment: str) -> str:
    """The text a reader sees of an HTML fragment: comments and tags gone."""
    return html.unescape(re.sub(r"<[^>]*>", "", re.sub(r"<!--.*?-->", "", fragment, flags=re.S)))


def mentions(page: str) -> List[str]:
    """What GitHub would make a mention (`@name`, which notifies) or a reference (`#12`, a
    link added after rendering) of: found in the page's text nodes (a comment or tag between
    `@` and the name keeps them apart)."""
    found = []
    for text in re.split(r"<!--.*?-->|<[^>]*>", page, flags=re.S):
        found += re.findall(r"@[A-Za-z0-9][\w/-]*|#\d+", html.unescape(text))
    return found


def cells(page: str) -> List[str]:
    return [visible(cell) for cell in re.findall(r"<td>(.*?)</td>", page, re.S)]


def _hostile_copy(source: str, target: Path, names: Dict[str, str]) -> str:
    import zstandard

    with open(source, "rb") as handle:
        text = zstandard.ZstdDecompressor().stream_reader(handle).read().decode("utf-8")
    for old, new in names.items():
        assert f'"{old}"' in text, old
        text = text.replace(f'"{old}"', json.dumps(new))
    target.write_text(text, encoding="utf-8")
    return str(target)


@pytest.fixture(scope="module")
def hostile_runs(tmp_path_factory) -> Dict[str, str]:
    folder = tmp_path_factory.mktemp("links")
    names = dict(HOSTILE, **{"aqe-compare:skew_join": SKEW})
    return {run_: _hostile_copy(_log("4.3.0", run_), folder / f"{run_}.json", names)
            for run_ in ("baseline", "bhj_off")}


# ---- the one escape -------------------------------------------------------------------------

def test_escaped_text_renders_as_itself_and_links_nothing():
    """Any text, in each place the outputs put it (a table cell, a list item after a label,
    a line after other words): GitHub renders exactly the text (escaped as `printable`
    escapes it), one cell, no link, no tag."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from aqe_inspect.errors import printable
    from aqe_inspect.formats.markdown_text import md

    pieces = st.sampled_from([
        "http://", "https://", "HTTP://", "ftp://", "www.", "WWW.", "@", ".", "a", "b.c", "_",
        "+", "-", "<", ">", "&", "&amp;", "&#64;", "|", "\\", "`", "``", "*", "~", "$", "#",
        "!", "[", "]", "(", ")", ":", "/", "//", "mailto:", "xmpp:", " ", "\n", "<!--", "-->",
        "<http://x.y>", "evil.example", "1.", "é", "\u202e", "\x1b[31m", "@org/team", "#12",
        "org/repo#3"])
    texts = st.one_of(st.text(max_size=40), st.lists(pieces, max_size=24).map("".join))

    @settings(max_examples=1500, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(texts)
    def one(text):
        want = printable(text)
        escaped = md(text)
        page = rendered(f"| h |\n|---|\n| {escaped} |\n")
        assert not links(page), (text, escaped, page)
        assert not mentions(page), (text, escaped, page)
        assert cells(page) == [want.strip(" ")], (text, escaped, page)
        for head in ("- execution 3: ", "note: "):
            page = rendered(f"{head}{escaped}\n")
            assert not links(page), (text, escaped, page)
            shown = visible(page).strip("\n")
            assert shown == (head.lstrip("- ") + want).rstrip(" "), (text, escaped, page)

    one()


def test_a_code_block_holds_any_text_whole():
    from aqe_inspect.formats.markdown_text import code_block

    for text in ("a\n```\nhttp://evil.example\n", " ```` x\nwww.evil.example", "", "``"):
        page = rendered(code_block(text, "diff") + "\nafter\n")
        [block] = re.findall(r"<pre[^>]*><code[^>]*>(.*?)</code></pre>", page, re.S)
        assert html.unescape(block) == text + ("\n" if text and not text.endswith("\n")
                                               else "")
        assert not links(page) and page.rstrip().endswith("<p>after</p>")


# ---- the outputs ----------------------------------------------------------------------------

def test_compare_markdown_links_nothing_the_logs_held(hostile_runs):
    done = run("compare", hostile_runs["baseline"], hostile_runs["bhj_off"], "-f", "markdown")
    assert done.returncode == 1, done.stderr
    page = rendered(done.stdout)
    assert not links(page), links(page)
    assert not mentions(page), mentions(page)
    shown = cells(page)
    for name in ("aqe-compare:smj_to_bhj", "aqe-compare:multi_rewrite",
                 "aqe-compare:local_read"):
        assert HOSTILE[name] in shown, (HOSTILE[name], shown)  # the text, as it was


def test_compare_markdown_of_fleet_tables_links_nothing_the_logs_held(hostile_runs, tmp_path):
    old = write_table(tmp_path / "old.csv", _rows(hostile_runs["baseline"]))
    new = write_table(tmp_path / "new.csv", _rows(hostile_runs["bhj_off"]))
    done = run("compare", str(old), str(new), "-f", "markdown")
    assert done.returncode == 1, done.stderr
    page = rendered(done.stdout)
    assert not links(page), links(page)
    assert not mentions(page), mentions(page)
    shown = cells(page)
    assert shown.count(HOSTILE["aqe-compare-sample"]) == 3  # the application of each group
    for name in ("aqe-compare:smj_to_bhj", "aqe-compare:multi_rewrite",
                 "aqe-compare:local_read"):
        assert HOSTILE[name] in shown, (HOSTILE[name], shown)


def test_fleet_summary_markdown_links_nothing_the_logs_held(hostile_runs):
    import io

    from aqe_inspect.fleet.summary_formats import write_summary

    rows = _rows(hostile_runs["baseline"])
    out = io.StringIO()
    write_summary(rows, out, "markdown")
    page = rendered(out.getvalue())
    assert not links(page), links(page)
    assert not mentions(page), mentions(page)
    shown = cells(page)
    assert any(cell.startswith(HOSTILE["aqe-compare-sample"]) for cell in shown), shown
    assert SKEW in shown, shown  # the largest skew split's execution


def test_sarif_snapshot_diff_is_one_code_block(tmp_path):
    """`check --snapshot` in SARIF: the diff in `message.markdown` is one code block (a plan
    line of backticks cannot close it), and the message before it is escaped text."""
    from .conftest import SAMPLE_PLANS

    folder = SAMPLE_PLANS / "spark-4.3.0"
    target = tmp_path / "join.snap"
    assert run("snapshot", str(folder / "smj_to_bhj" / "formatted_after.txt"), "-o",
               str(target)).returncode == 0
    plan = (folder / "smj_to_bhj_off" / "formatted_after.txt").read_text("utf-8")
    assert "(id#54L % 1000) < 20" in plan
    hostile = tmp_path / "plan.txt"
    hostile.write_text(plan.replace("(id#54L % 1000) < 20",
                                    "(id#54L % 1000) < 20) AND (s#9 = ```` www.evil.example "
                                    "ops@evil.example"),
                       encoding="utf-8")
    done = run("check", str(hostile), "--snapshot", str(target), "--format", "sarif")
    assert done.returncode == 1, done.stderr
    (result,) = json.loads(done.stdout)["runs"][0]["results"]
    detail = result["properties"]["detail"]
    assert "```` www.evil.example ops@evil.example" in detail
    page = rendered(result["message"]["markdown"])
    [block] = re.findall(r"<pre[^>]*><code[^>]*>(.*?)</code></pre>", page, re.S)
    assert html.unescape(block) == detail
    assert not links(page)
