"""Plans from any text: real driver logs (plain and JSON), AQE's own log messages, plans people
published (tests/fixtures/published, see its SOURCES.json), real sample plans damaged the
ways pasting damages them, and two files paired by structure."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict

import pytest

from aqe_inspect.api import diff_pair
from aqe_inspect.rewrites.engine import diff_document
from aqe_inspect.errors import InspectError
from aqe_inspect.plan.operators import family
from aqe_inspect.rewrites.findings import REWRITE_KINDS
from aqe_inspect.sources import read_document, read_text_document
from aqe_inspect.sources.lines import LOG_PREFIX
from aqe_inspect.sources.eventlog.history import read_history

from .conftest import AQE_INSPECT, SAMPLE_PLANS
from .test_samples import SCENARIOS, scenario_id

LOGS = sorted(SAMPLE_PLANS.glob("spark-*/*/driver*.log"))
PUBLISHED = Path(__file__).parent / "fixtures" / "published"


def totals(report) -> Dict[str, int]:
    counts = dict.fromkeys(REWRITE_KINDS, 0)
    for query in report.queries:
        for kind, count in query.counts.items():
            counts[kind] += count
    return counts


def truth_of(folder: Path) -> Dict[str, int]:
    truth = json.loads((folder / "truth.json").read_text("utf-8"))
    return {kind: truth["rewrites"].get(kind, 0) for kind in REWRITE_KINDS}


def log_id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}/{path.name}"


# ---- driver logs --------------------------------------------------------------------------
def test_driver_logs_cover_both_lines_and_json_logging():
    names = {(p.parent.parent.name[:9], p.name) for p in LOGS}
    assert ("spark-3.5", "driver.log") in names
    assert ("spark-4.3", "driver.log") in names and ("spark-4.3", "driver_json.log") in names
    assert len({p.parent for p in LOGS}) == len(SCENARIOS)


@pytest.mark.parametrize("log", LOGS, ids=log_id)
def test_driver_log_gives_the_truth(log):
    """`spark-submit job.py 2>&1 | aqe-inspect diff -`: explain before and after the action,
    in two modes, among INFO lines and AQE's own messages: one query, the JVM's rewrites."""
    report = diff_document(read_document(str(log)))
    assert totals(report) == truth_of(log.parent)
    adaptive = json.loads((log.parent / "truth.json").read_text("utf-8"))["adaptive"]
    if adaptive:
        assert any("before its action" in n for q in report.queries for n in q.notes)
    for query in report.queries:
        assert query.query.source == str(log) and query.query.line > 1  # the log's lines


def aqe_messages_only(text: str) -> str:
    """The log without the job's explain output: only log records, and the plan lines that
    continue AdaptiveSparkPlanExec's messages."""
    kept, keep = [], False
    for line in text.split("\n"):
        if LOG_PREFIX.match(line) or line.startswith('{"ts"'):
            kept.append(line)
            keep = "AdaptiveSparkPlanExec" in line
        elif keep and line.strip():
            kept.append(line)
        else:
            keep = False
    return "\n".join(kept)


@pytest.mark.parametrize("log", LOGS, ids=log_id)
def test_aqe_log_messages_alone_give_the_truth(log):
    """A log with no explain: `Final plan:` gives the final plan, the plan before AQE's first
    `Plan changed:` the initial one (side by side in the message)."""
    text = aqe_messages_only(log.read_text("utf-8"))
    if "Final plan:" not in text:
        with pytest.raises(InspectError):
            read_text_document(text, "aqe.log")
        return
    report = diff_document(read_text_document(text, "aqe.log"))
    assert totals(report) == truth_of(log.parent)
    assert all(q.query.origin == "AQE log" for q in report.queries)


# ---- published plans ----------------------------------------------------------------------
SOURCES = json.loads((PUBLISHED / "SOURCES.json").read_text("utf-8"))
#: Where a reader that knows AQE's log messages sees more than the collector's rule counted.
LOG_AWARE = {"spark_pr36045_log_plan_changed_cut.txt": {"smj-to-bhj": 1}}
#: Published texts that are not Spark's layout and are read as a located error.
NOT_SPARK_LAYOUT = {
    # Gluten's doc re-typed by hand: two columns per level and a '-' before the root.
    "gluten_velox_md_formatted_odd_indent.txt",
    # A hand-simplified plan with no join keys and no ids: its switch cannot be paired.
    "spark_pr29137_schematic_headers_elided_cut.txt",
}


@pytest.mark.parametrize("entry", SOURCES, ids=lambda e: e["file"])
def test_published_plan_reads_as_its_text_shows(entry):
    path = PUBLISHED / entry["file"]
    assert path.is_file()
    if entry["file"] in NOT_SPARK_LAYOUT and "odd_indent" in entry["file"]:
        with pytest.raises(InspectError) as error:
            read_document(str(path))
        assert error.value.line is not None and str(path) in str(error.value)
        return
    report = diff_document(read_document(str(path)))
    assert report.queries
    want = {k: v for k, v in entry["shows"]["rewrites"].items() if v}
    want.update(LOG_AWARE.get(entry["file"], {}))
    got = {k: v for k, v in totals(report).items() if v}
    if entry["file"] in NOT_SPARK_LAYOUT:
        assert got == {} and any(q.notes for q in report.queries)
        return
    assert got == want
    if re.search(r"\bcut\b|elid|truncat|\.\.\.", entry["shows"].get("damage", "")):
        assert any(q.notes for q in report.queries) or report.notes, "damage went unsaid"


# ---- damage, made from real sample plans -------------------------------------------------
DAMAGE_SCENARIOS = [p for p in SCENARIOS if p.name in ("multi_rewrite", "skew_join",
                                                       "empty_relation", "scalar_subquery")]


def _prefix(prefix: str):
    return lambda text: "\n".join((prefix + line) if line else prefix.rstrip()
                                  for line in text.split("\n"))


def _numbered(text: str) -> str:
    header, _, tree = text.partition("\n")
    lines = [line for line in tree.split("\n") if line]
    return header + "\n" + "\n".join(f"{n:02d} {line}" for n, line in enumerate(lines))


def _comment(text: str) -> str:
    return re.sub(r"(\n[^\n]*Exchange hashpartitioning[^\n]*)",
                  r"\1\n   // <- the shuffle AQE reads", text, count=1)


def _zero_width(text: str) -> str:
    return text.replace("HashAggregate", "Hash\u200bAggregate").replace("Join", "J\u200boin")


#: Damage that loses nothing: same counts; `noted` says a note must say what was done.
LOSSLESS = {
    "common indentation": (lambda t: "\n".join("    " + line for line in t.split("\n")), False),
    "tab indentation": (lambda t: "\n".join("\t" + line for line in t.split("\n")), False),
    "CRLF": (lambda t: t.replace("\n", "\r\n"), False),
    "notebook prompt": (lambda t: "In [3]: df.explain()\n" + t + "\nIn [4]: ", False),
    "-- MAGIC prefix": (_prefix("-- MAGIC "), False),
    "# prefix": (_prefix("# "), False),
    "> quote": (_prefix("> "), False),
    "numbered tree string": (_numbered, False),
    "trailing text": (lambda t: t + "\nSee the shuffle above.\nThanks, Ann\n", False),
    "prose before": (lambda t: "Here is the plan after the run:\n\n" + t, False),
    "log prefix on the first line": (
        lambda t: "24/11/23 12:00:00 INFO Main: explain output follows\n" + t, False),
    "comment line in the tree": (_comment, True),
    "zero-width characters": (_zero_width, True),
    "top cut at the Final Plan header": (
        lambda t: t[t.index("+- == Final Plan =="):], True),
}


@pytest.mark.parametrize("scenario", DAMAGE_SCENARIOS, ids=scenario_id)
@pytest.mark.parametrize("damage", sorted(LOSSLESS))
def test_pasted_plans_read_whole(scenario, damage):
    make, noted = LOSSLESS[damage]
    for mode in ("simple_after", "formatted_after"):
        text = (scenario / f"{mode}.txt").read_text("utf-8")
        if damage == "numbered tree string" and mode == "formatted_after":
            continue  # Spark numbers tree strings, not formatted explains
        if damage == "comment line in the tree" and _comment(text) == text:
            continue
        document = read_text_document(make(text), "pasted.txt")
        report = diff_document(document)
        assert totals(report) == truth_of(scenario), (damage, mode)
        notes = [n for q in report.queries for n in q.notes]
        if noted:
            assert notes, (damage, mode)


def _elide(text: str) -> str:
    """The initial plan's subtree under its first Exchange, replaced by `...`."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if "== Initial Plan ==" in line)
    exchange = next(i for i in range(start, len(lines)) if "Exchange" in lines[i])
    depth = lines[exchange].index("+-") + 3
    end = exchange + 1
    while end < len(lines) and len(lines[end]) > depth and lines[end][:depth].strip(" :") == "":
        end += 1
    return "\n".join(lines[: exchange + 1] + [" " * depth + "..."] + lines[end:])


def _without_details(text: str) -> str:
    return text[: text.index("\n\n\n")] if "\n\n\n" in text else text.split("\n\n")[0]


LOSSY = {
    "elided subtree": ("simple_after", _elide),
    "formatted tree without detail blocks": ("formatted_after", _without_details),
}


@pytest.mark.parametrize("scenario", DAMAGE_SCENARIOS, ids=scenario_id)
@pytest.mark.parametrize("damage", sorted(LOSSY))
def test_damaged_plans_are_read_with_a_note_and_lower_bounds(scenario, damage):
    mode, make = LOSSY[damage]
    text = (scenario / f"{mode}.txt").read_text("utf-8")
    report = diff_document(read_text_document(make(text), "damaged.txt"))
    notes = [n for q in report.queries for n in q.notes]
    assert any("counts may be incomplete" in n and n.startswith("line ") for n in notes)
    got, want = totals(report), truth_of(scenario)
    assert all(got[k] <= want[k] for k in REWRITE_KINDS), (got, want)


def test_several_queries_in_one_log_are_reported_one_by_one():
    texts = [(s / "simple_after.txt").read_text("utf-8") for s in SCENARIOS
             if s.parent.name.startswith("spark-4") and s.name in ("smj_to_bhj", "skew_join")]
    log = "\n".join(f"26/11/23 12:00:0{n} INFO Job: query {n}\n{t}\nrows: 7\n"
                    for n, t in enumerate(texts))
    report = diff_document(read_text_document(log, "job.log"))
    assert len(report.queries) == 2
    assert report.queries[0].query.line == 2 and report.queries[1].query.line > 10


def test_one_bad_plan_in_a_log_is_a_note_and_the_rest_is_read():
    good = (SCENARIOS[0] / "simple_after.txt").read_text("utf-8")
    log = ("26/11/23 12:00:00 INFO A: a\n== Physical Plan ==\n\n"
           "26/11/23 12:00:01 INFO A: b\n" + good)
    document = read_text_document(log, "job.log")
    assert len(document.queries) == 1
    assert any(n.startswith("line 2") and "skipped" in n for n in document.notes)


# ---- two files, paired by structure -------------------------------------------------------
def reuses_an_exchange(scenario: Path) -> bool:
    """Whether the JVM's final plan holds a ReusedExchange (reused_exchange, kept_by_cost)."""
    truth = json.loads((scenario / "truth.json").read_text("utf-8"))
    return truth["info"]["reused-exchange"] > 0


@pytest.mark.parametrize("scenario", SCENARIOS, ids=scenario_id)
@pytest.mark.parametrize("before_mode, after_mode", [("formatted", "formatted"),
                                                     ("simple", "simple"),
                                                     ("simple", "formatted")])
def test_before_and_after_files_give_the_truth_paired_by_structure(scenario, before_mode,
                                                                   after_mode):
    before = read_document(str(scenario / f"{before_mode}_before.txt"))
    after = read_document(str(scenario / f"{after_mode}_after.txt"))
    expected_family = {"coalesced": {"Exchange"}, "local-read": {"Exchange"},
                       "smj-to-bhj": {"SortMergeJoin"}, "smj-to-shj": {"SortMergeJoin"},
                       "skew-join": {"SortMergeJoin", "ShuffledHashJoin"}}
    for report, swapped in ((diff_pair(before, after), False), (diff_pair(after, before), True)):
        assert totals(report) == truth_of(scenario)
        for query in report.queries:
            for rewrite in query.rewrites:
                families = expected_family.get(rewrite.kind)
                if not families:
                    continue
                if rewrite.initial_node is None:
                    # a read of a reused exchange: the initial plan has no exchange of its own
                    assert reuses_an_exchange(scenario), rewrite.message
                    continue
                assert family(rewrite.initial_node) in families, rewrite.message
        if swapped and after.queries[0].adaptive:
            assert any("read" in n and "as the initial plan" in n
                       for q in report.queries for n in q.notes)


# ---- size -----------------------------------------------------------------------------------
def test_a_100_mb_log_streams_through_in_bounded_memory(tmp_path):
    """Every real driver log, again and again, to 100 MB: read as a stream, every plan found,
    memory bounded by the plans kept, not by the log (its speed is in bench/run.py)."""
    import subprocess

    from .hostile_sizes import run_measured

    data = b"".join(path.read_bytes() for path in LOGS)
    once = tmp_path / "once.log"
    once.write_bytes(data)
    result = subprocess.run([*AQE_INSPECT, "diff", str(once), "--format", "json"],
                            capture_output=True, timeout=600)
    assert result.returncode == 0, result.stderr[-500:]
    per_copy = len(json.loads(result.stdout)["queries"])
    assert per_copy >= len(LOGS)
    path = tmp_path / "big.log"
    copies = 100_000_000 // len(data) + 1
    with path.open("wb") as handle:
        for _ in range(copies):
            handle.write(data)
    assert path.stat().st_size >= 100_000_000
    # The peak of this run alone, through a fresh helper process: the test process's own
    # children's peak counts whatever it waited for before (another test's compiler, pip or
    # JVM), which read 1,951 MB in one full run.
    result, peak = run_measured([*AQE_INSPECT, "diff", str(path), "--format", "json"])
    assert result.returncode == 0, result.stderr[-500:]
    report = json.loads(result.stdout)
    # Each copy is other applications (each log opens with SparkContext's `Submitted
    # application:`): every copy's queries are runs of their own, none merged across copies.
    assert len(report["queries"]) == copies * per_copy
    peak_mb = peak / 1024 / 1024
    assert 20 < peak_mb < 1024, f"{peak_mb:.0f} MB for a 100 MB log"


# ---- shapes published plans take: the REST API's planDescription, elided excerpts -------

def _rest_api_trees():
    """Each execution of the real /sql answers that switched a join to a broadcast, as people
    copy its `planDescription`: the formatted tree alone (no detail blocks), indented."""
    for path in sorted(SAMPLE_PLANS.glob("spark-*/*/history_sql.json")):
        for entry in json.loads(path.read_text("utf-8")):
            text = entry.get("planDescription") or ""
            tree = text.split("\n\n\n(1) ")[0]
            if "BroadcastHashJoin" in tree and "SortMergeJoin" in tree and \
                    "== Initial Plan ==" in tree and "(1) " in text:
                yield path, "\n".join("    " + line for line in tree.split("\n"))


def test_a_rest_api_plan_description_tree_pairs_the_switched_join_by_its_inputs():
    """No detail blocks: no join keys; the join's id is new. The inputs it joins keep their
    ids, so the initial SortMergeJoin is the final join over the same inputs."""
    found = list(_rest_api_trees())
    assert found, "no /sql answer with a switched join among the samples"
    for path, tree in found:
        whole = totals(diff_document(read_history(path.read_bytes(), str(path))))
        copied = totals(diff_document(read_text_document(tree, "copied.txt")))
        assert copied["smj-to-bhj"] == whole["smj-to-bhj"] >= 1, path


def test_an_elided_excerpt_counts_the_shuffle_read_its_detail_blocks_describe():
    """The tree drawn without the read (`...`), its detail block printed whole: the read ran
    in the final plan and is counted as its `Arguments:` say, with a note."""
    for path in sorted(SAMPLE_PLANS.glob("spark-*/coalesced_aggregation/formatted_after.txt")):
        text = path.read_text("utf-8")
        lines = text.split("\n")
        drawn = [line for line in lines[:lines.index("+- == Initial Plan ==")]
                 if "AQEShuffleRead (" not in line and "ShuffleQueryStage (" not in line
                 and "Exchange (" not in line and not line.lstrip(" +-*").startswith(
                     ("HashAggregate (3)", "Project", "Range"))]
        excerpt = "\n".join(drawn + ["   ..."]) + "\n\n" + text[text.index("\n(1) "):]
        report = diff_document(read_text_document(excerpt, "excerpt.txt"))
        assert totals(report)["coalesced"] == totals(
            diff_document(read_text_document(text, "whole.txt")))["coalesced"] == 1, path
        notes = [note for query in report.queries for note in query.notes]
        assert any("AQEShuffleRead has no operator in the tree" in note for note in notes)
