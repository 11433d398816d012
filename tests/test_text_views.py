"""The terminal views of `diff` (compact, `--tree`, `--side-by-side`) on real sample plans, at
80 and 160 columns, against snapshots in tests/snapshots/text/ (`AQE_UPDATE_SNAPSHOTS=1
pytest` writes them anew, never under CI); and what any width must hold: no line wider than
the width unless it is one word, no word cut in two, no ANSI escapes off a terminal or under
NO_COLOR, COLUMNS followed when piped. Also the view model (`aqe_inspect.formats.views`): every
rewritten operator marked on both sides of the side-by-side rows, and a tree 5,000 levels
deep laid out without recursion."""

from __future__ import annotations

import io
import os
import re
import subprocess
from contextlib import redirect_stderr, redirect_stdout

import pytest

from aqe_inspect import api
from aqe_inspect.formats import views
from aqe_inspect.cli import main
from aqe_inspect.rewrites.detectors.base import PlanPair
from aqe_inspect.rewrites.engine import BEFORE_ACTION_NOTE, plan_pairs
from aqe_inspect.plan.model import Node
from aqe_inspect.formats.terminal import PLAIN_WIDTH, print_report

from .conftest import AQE_INSPECT, IN_CI, ROOT, SAMPLE_PLANS
from .test_robustness import DEPTH, chain, on_a_terminal, recursion_limit

SNAPSHOTS = ROOT / "tests" / "snapshots" / "text"
PLANS = {
    "multi_rewrite-4.3.0": "sample_plans/spark-4.3.0/multi_rewrite/formatted_after.txt",
    "skew_join-3.5.9": "sample_plans/spark-3.5.9/skew_join/simple_after.txt",
    "empty_relation-4.3.0": "sample_plans/spark-4.3.0/empty_relation/formatted_after.txt",
    "eventlog-skew_join-4.3.0": "sample_plans/spark-4.3.0/skew_join/eventlog.json",
}
VIEWS = {"compact": [], "tree": ["--tree"], "side-by-side": ["--side-by-side"]}
WIDTHS = (80, 160)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def output_of(args, monkeypatch) -> str:
    monkeypatch.chdir(ROOT)  # paths in reports are relative to the working directory
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(args)
    assert (code, err.getvalue()) == (0, "")
    return out.getvalue()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("plan", sorted(PLANS))
def test_text_matches_its_snapshot(plan, view, width, monkeypatch):
    text = output_of(["diff", PLANS[plan], *VIEWS[view], "--width", str(width)], monkeypatch)
    snapshot = SNAPSHOTS / f"{plan}.{view}.{width}.txt"
    if os.environ.get("AQE_UPDATE_SNAPSHOTS") == "1" and not IN_CI:
        snapshot.parent.mkdir(exist_ok=True)
        snapshot.write_text(text, "utf-8")
    assert snapshot.is_file(), f"no snapshot {snapshot}: run AQE_UPDATE_SNAPSHOTS=1 pytest"
    assert text == snapshot.read_text("utf-8")


def test_every_text_snapshot_is_a_view_of_a_plan():
    want = {f"{plan}.{view}.{width}.txt" for plan in PLANS for view in VIEWS
            for width in WIDTHS}
    assert {p.name for p in SNAPSHOTS.iterdir()} == want


def unwrapped_words(plan: str, view: str, monkeypatch) -> list:
    """The words of the view printed wide enough for nothing to wrap."""
    return output_of(["diff", plan, *VIEWS[view], "--width", "10000"], monkeypatch).split()


@pytest.mark.parametrize("width", (20, 41, 80, 97, 160))
@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("plan", sorted(PLANS))
def test_lines_fit_and_no_letter_is_lost(plan, view, width, monkeypatch):
    """Every line fits the width: a word wider than a tree's or a column's room is cut, a
    line's width at a time (a header's path, alone on its line, runs past it). Nothing is
    lost: the letters are those of the view printed wide enough for nothing to wrap."""
    text = output_of(["diff", PLANS[plan], *VIEWS[view], "--width", str(width)], monkeypatch)
    for line in text.splitlines():
        assert len(line) <= width or len(line.split()) == 1, line
    wide = output_of(["diff", PLANS[plan], *VIEWS[view], "--width", "10000"], monkeypatch)
    if view != "side-by-side":
        assert letters(text) == letters(wide)
    else:  # two columns interleave the words of two trees: each piece is of a wide word
        whole = set(words(wide + " " + " ".join(unwrapped_words(PLANS[plan], "tree",
                                                                monkeypatch))))
        for word in set(words(text)):
            assert word in whole or any(word in other for other in whole), word


def letters(text: str) -> str:
    """The letters of a view: no space, tree guide or depth marker (`15:`)."""
    lines = (re.sub(r"^\s*\d+: ", "", line) for line in text.splitlines())
    return re.sub(r"[\s│├└─]", "", "".join(lines))


GUIDE_MARKS = " │├└─|+`*:0123456789"
GUIDES_ONLY = re.compile(r"^[│├└─|+`*-]*$|^\d+:$|^\.\.\.$")


def words(text: str) -> list:
    """The words of a view, without tree guides, depth markers (`15:`) and highlight marks."""
    out = []
    for word in text.split():
        word = word.lstrip("│├└|+`")
        if word and not GUIDES_ONLY.match(word):
            out.append(word)
    return out


def run_cli(*args, env=None, **kwargs):
    return subprocess.run([*AQE_INSPECT, *args], capture_output=True,
                          timeout=120, cwd=ROOT, env={**os.environ, **(env or {})}, **kwargs)


def test_piped_text_follows_columns_and_has_no_escapes():
    plan = PLANS["multi_rewrite-4.3.0"]
    environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    plain = run_cli("diff", plan, "--tree", env={**environment}).stdout.decode()
    assert "\x1b[" not in plain
    assert max(map(len, plain.splitlines())) <= PLAIN_WIDTH < 200
    assert any(len(line) > 80 for line in plain.splitlines())  # 100, not 80
    narrow = run_cli("diff", plan, "--tree", env={**environment, "COLUMNS": "60"}).stdout
    lines = narrow.decode().splitlines()
    assert max(map(len, lines)) <= 60 or all(
        len(line) <= 60 or len(line.split()[-1]) > 20 for line in lines)
    assert max(map(len, lines)) < max(map(len, plain.splitlines()))
    # --width wins over COLUMNS.
    assert run_cli("diff", plan, "--width", "80", env={"COLUMNS": "60"}).stdout == \
        run_cli("diff", plan, "--width", "80").stdout


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="a pseudo-terminal")
@pytest.mark.parametrize("no_color", ("", "1"))
def test_a_terminal_gets_styles_unless_no_color(no_color):
    environment = {**os.environ, "COLUMNS": "100", "TERM": "xterm", "NO_COLOR": no_color}
    code, written, _ = on_a_terminal([*AQE_INSPECT, "diff",
                                      PLANS["skew_join-3.5.9"], "--side-by-side"],
                                     environment, cwd=ROOT)
    assert code == 0
    out = written.decode("utf-8")
    assert ("\x1b[" in out) == (not no_color)
    plain = ANSI.sub("", out)
    assert max(len(line) for line in plain.splitlines()) <= 100 + 30
    # On a terminal the highlight is a style; the `* ` marker is for plain text.
    assert ("* AQEShuffleRead" in plain) == bool(no_color)


# ---- the view model --------------------------------------------------------------------------

def sample_reports():
    for path in sorted(SAMPLE_PLANS.glob("spark-*/*/formatted_after.txt")) + \
            sorted(SAMPLE_PLANS.glob("spark-*/*/simple_after.txt")):
        yield path, api.diff(path.read_text("utf-8"))


def test_every_rewritten_operator_is_marked_on_both_sides():
    checked = 0
    for path, report in sample_reports():
        for query_report in report.queries:
            marked = views.marks(query_report)
            rows = [row for pair in plan_pairs(query_report.query)
                    for row in views.side_by_side_rows(pair, marked=marked)]
            finals = {id(row.final): row.final_marks for row in rows if row.final is not None}
            initials = {id(row.initial): row.initial_marks for row in rows
                        if row.initial is not None}
            for rewrite in query_report.rewrites:
                # An operator AQE removed (one-row, limit-removed) is in the initial plan only.
                if rewrite.final_node is not None:
                    assert rewrite.kind in finals[id(rewrite.final_node)], (path, rewrite)
                if rewrite.initial_node is not None:
                    assert rewrite.kind in initials[id(rewrite.initial_node)], (path, rewrite)
                    checked += 1
    assert checked > 50


def test_side_by_side_rows_read_as_both_trees():
    for path, report in sample_reports():
        for pair in plan_pairs(report.queries[0].query):
            rows = views.side_by_side_rows(pair)
            final = [(row.final, row.final_depth) for row in rows if row.final is not None]
            initial = [(row.initial, row.initial_depth) for row in rows
                       if row.initial is not None]
            assert final == views._preorder(pair.final), path
            assert initial == views._preorder(pair.initial), path
            for row in rows:
                if row.aligned:
                    assert row.initial is not None and row.final is not None


def test_a_coalesced_and_skewed_read_carries_both_kinds():
    report = api.diff((SAMPLE_PLANS / "spark-4.3.0/skew_join/formatted_after.txt")
                      .read_text("utf-8"))
    marked = views.marks(report.queries[0])
    read = next(node for node in report.queries[0].query.final.walk()
                if node.description == "coalesced and skewed")
    assert marked.on_final(read) == ("coalesced", "skew-join")


def test_labels_say_each_word_once():
    report = api.diff((SAMPLE_PLANS / "spark-4.3.0/skew_join/formatted_after.txt")
                      .read_text("utf-8"))
    labels = [views.node_label(node) for node in report.queries[0].query.final.walk()]
    assert "AQEShuffleRead (19) coalesced" in labels
    assert "AQEShuffleRead (6) coalesced and skewed" in labels
    assert any(label.startswith("SortMergeJoin(skew=true) (14)") for label in labels)
    for label in labels:
        words = label.split()
        assert "(skew=true)" not in words[1:], label
        assert words.count("coalesced") <= 1, label


def test_finding_lines_hold_the_numbers():
    report = api.diff((SAMPLE_PLANS / "spark-4.3.0/multi_rewrite/formatted_after.txt")
                      .read_text("utf-8"))
    lines = [views.finding_line(rewrite) for rewrite in report.queries[0].rewrites]
    switch = next(line for line in lines if line.startswith("smj-to-bhj"))
    assert "BuildRight" in switch and "keys [k#84L] = [k#90L]" in switch
    from aqe_inspect.sources.routing import read_input

    log = api.diff(read_input(str(SAMPLE_PLANS / "spark-4.3.0/skew_join/eventlog.json"),
                              1 << 28).document())
    lines = [views.finding_line(r) for q in log.queries for r in q.rewrites]
    assert any("20 -> 4 partitions" in line for line in lines)
    assert any("1 skewed partition(s) split into 2 tasks" in line for line in lines)
    facts = dict(views.node_facts(next(node for node in log.queries[0].query.final.walk()
                                       if node.description == "coalesced and skewed")))
    assert facts["partitions"] == "20 -> 4" and facts["skewed"] == "1 split into 2"


def test_a_local_read_line_gives_the_reads_own_partitions():
    """A local read's tasks each read map outputs, not a shuffle partition: in the local_read
    sample's event log each read has 1 partition (its metric; the stage reading it ran 1 task)
    over a shuffle of 20 (the JVM's truth: 20 bytes by partition). The line says `20 -> 1`,
    not the shuffle's 20 as the read's; a plan text, which prints no count of the read, says
    the 20 are the shuffle's."""
    from aqe_inspect.sources.routing import read_input

    sample = SAMPLE_PLANS / "spark-4.3.0" / "local_read"
    log = api.diff(read_input(str(sample / "eventlog.json"), 1 << 28).document())
    reads = [r for q in log.queries for r in q.rewrites if r.kind == "local-read"]
    assert len(reads) == 2
    for rewrite in reads:
        assert rewrite.final_node.metrics["number of partitions"] == 1
        assert rewrite.numbers["partitions_before"] == 20
        assert rewrite.numbers["partitions_after"] == 1
        line = views.finding_line(rewrite)
        assert "; 20 -> 1 partitions;" in line and "; 20 partitions" not in line, line
    text = api.diff((sample / "formatted_after.txt").read_text("utf-8"))
    for rewrite in (r for r in text.queries[0].rewrites if r.kind == "local-read"):
        assert "; 20 shuffle partitions;" in views.finding_line(rewrite)


def test_an_empty_relation_says_what_it_replaced():
    for version in ("3.5.9", "4.3.0"):
        report = api.diff((SAMPLE_PLANS / f"spark-{version}/empty_relation/formatted_after.txt")
                          .read_text("utf-8"))
        rewrite = next(r for r in report.queries[0].rewrites if r.kind == "empty-relation")
        assert rewrite.initial_node is report.queries[0].query.initial
        assert f"{rewrite.initial_node.label} of the initial plan" in rewrite.message


def test_a_plan_explained_before_its_action_says_so():
    report = api.diff((SAMPLE_PLANS / "spark-3.5.9/local_read/simple_before.txt")
                      .read_text("utf-8"))
    assert f"main: {BEFORE_ACTION_NOTE}" in report.queries[0].notes
    after = api.diff((SAMPLE_PLANS / "spark-3.5.9/local_read/simple_after.txt")
                     .read_text("utf-8"))
    assert not any(BEFORE_ACTION_NOTE in note for note in after.queries[0].notes)


def test_side_by_side_rows_of_a_tree_5000_levels_deep():
    exchange = Node("Exchange", args="hashpartitioning(a#1L, 20), ENSURE_REQUIREMENTS",
                    children=(Node("Range", args="(0, 10, step=1, splits=2)"),))
    read = Node("AQEShuffleRead", args="coalesced",
                children=(Node("ShuffleQueryStage", args="0", children=(exchange,)),))
    pair = PlanPair(final=chain(DEPTH, bottom=read), initial=chain(DEPTH, bottom=exchange),
                    is_final_plan=True)
    with recursion_limit(300):
        rows = views.side_by_side_rows(pair)
        out = io.StringIO()
        from aqe_inspect.formats.terminal import Screen, print_side_by_side

        print_side_by_side(Screen(out, 120), rows, True)
    finals = sum(1 for _ in pair.final.walk())
    initials = sum(1 for _ in pair.initial.walk())
    assert finals == initials + 2  # the read and the stage are final-only rows
    assert len(rows) == finals and sum(row.aligned for row in rows) == initials
    assert [row for row in rows if row.final_marks][0].final is read
    assert [row for row in rows if row.initial_marks][0].initial is exchange
    assert max(len(line) for line in out.getvalue().splitlines()) <= 120


# ---- rules KIND --------------------------------------------------------------------------------

def test_rules_prints_one_detector_or_suggests_one():
    one = run_cli("rules", "skew-join")
    assert one.returncode == 0
    assert one.stdout.decode().startswith("skew-join: ")
    assert b"coalesced:" not in one.stdout
    wrong = run_cli("rules", "skew")
    assert (wrong.returncode, wrong.stdout) == (2, b"")
    assert wrong.stderr.decode().count("\n") == 1
    assert "did you mean 'skew-join'?" in wrong.stderr.decode()


def test_views_that_need_text_are_refused_elsewhere():
    plan = PLANS["multi_rewrite-4.3.0"]
    for args in (["--tree", "--format", "json"], ["--tree", "--side-by-side"],
                 ["--width", "3"]):
        result = run_cli("diff", plan, *args)
        assert (result.returncode, result.stdout) == (2, b""), args
        assert result.stderr.decode().startswith("aqe-inspect: error: ")


def test_the_compact_view_names_its_options_and_folds_information():
    text = print_to_string(PLANS["multi_rewrite-4.3.0"])
    assert "--side-by-side" in text and "--tree" in text
    assert "is a query stage" not in text and "5 query stages" in text


def print_to_string(plan: str) -> str:
    out = io.StringIO()
    print_report(api.diff((ROOT / plan).read_text("utf-8")), out, "compact", 100)
    return out.getvalue()
