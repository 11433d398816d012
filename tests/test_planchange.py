"""The plan-change log (spark.sql.planChangeLog.level=INFO) in real driver logs: each finding
names the rule the log shows making it, re-plannings with no `Plan changed:` after them are
kept plans, and damaged blocks are notes, never a crash.

The logs are `sample_plans/spark-*/<scenario>/driver_planchange.log`, written by
`sample_plans/driver_logs.py --planchange` from real spark-submit runs (the job checks its
rewrites against the JVM truth of truth.json). Every claim is checked against the log read
here another way: the line a finding cites is read from the file and must be that rule's
heading, and re-plannings are counted with a plain line search.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.sources import read_text_document
from aqe_inspect.sources.planchange import read_events, right_column

from .conftest import AQE_INSPECT, SAMPLE_PLANS

LOGS = sorted(SAMPLE_PLANS.glob("spark-*/*/driver_planchange.log"))
#: The rule each kind's finding names, as Spark's classes are called on 3.5 and 4.x (None:
#: no rule, AQE's re-planning itself: the planner picks the broadcast).
RULE = {"coalesced": "CoalesceShufflePartitions", "skew-join": "OptimizeSkewedJoin",
        "smj-to-bhj": None,
        # 4.x split DynamicJoinSelection: DemoteBroadcastHashJoin and this physical rule.
        "smj-to-shj": {"spark-3.5.9": "DynamicJoinSelection",
                       "spark-4.3.0": "ConvertSortMergeJoinToShuffledHashJoin"},
        "empty-relation": "AQEPropagateEmptyRelation",
        "local-read": "OptimizeShuffleWithLocalRead",
        "dpp": "PlanAdaptiveDynamicPruningFilters",
        "dpp-dropped": "PlanAdaptiveDynamicPruningFilters",
        "rebalance-skew": "OptimizeSkewInRebalancePartitions",
        "one-row": "OptimizeOneRowPlan", "limit-removed": "EliminateLimits"}


def _id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*AQE_INSPECT, *args], capture_output=True, text=True, timeout=120)


def diff_json(path: Path) -> dict:
    done = run("diff", str(path), "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_samples_hold_planchange_logs_of_every_kind_on_both_lines():
    assert len(LOGS) >= 26, [str(p) for p in LOGS]
    for line in ("spark-3.5.9", "spark-4.3.0"):
        kinds = set()
        for path in LOGS:
            if path.parent.parent.name == line:
                truth = json.loads((path.parent / "truth.json").read_text("utf-8"))
                kinds.update(k for k, count in truth["rewrites"].items() if count)
        assert kinds == set(RULE), (line, set(RULE) - kinds)


#: Logs whose plans the assembler does not pair with their other prints (none now: a 4.x
#: EmptyRelation over its logical plan, which names no expression id, is paired by its plan
#: ids and by its message's other side).
UNPAIRED_REPRINTS: set = set()


@pytest.mark.parametrize("path", [
    pytest.param(path, marks=pytest.mark.xfail(
        strict=True, reason="an unpaired re-print gets no rule: " + _id(path)))
    if _id(path) in UNPAIRED_REPRINTS else path for path in LOGS], ids=_id)
def test_each_finding_names_the_rule_the_log_shows(path: Path):
    truth = json.loads((path.parent / "truth.json").read_text("utf-8"))
    lines = path.read_text("utf-8").split("\n")
    report = diff_json(path)
    counts: Dict[str, int] = {}
    for query in report["queries"]:
        for rewrite in query["rewrites"]:
            counts[rewrite["kind"]] = counts.get(rewrite["kind"], 0) + 1
            rule = rewrite.get("rule")
            assert rule is not None, (rewrite["kind"], rewrite["message"])
            expected = RULE[rewrite["kind"]]
            if isinstance(expected, dict):
                expected = expected[path.parent.parent.name]
            assert rule["rule"] == expected, rewrite
            heading = lines[rule["line"] - 1]
            if rule["rule"] is None:
                assert heading.endswith("Plan changed:"), heading
                continue
            assert heading == f"=== Applying Rule {rule['qualified']} ===", heading
            assert rule["qualified"].rsplit(".", 1)[-1] == rule["rule"]
    assert counts == {k: v for k, v in truth["rewrites"].items() if v}


def _shuffle_read_exchange(lines: List[str], line: int) -> str:
    """The exchange under a shuffle read printed at `line` (simple mode), as its text."""
    for text in lines[line:line + 6]:
        found = re.search(r"Exchange \S.*", text)
        if found:
            return found.group(0)
    raise AssertionError(f"no exchange under line {line}")


@pytest.mark.parametrize("path", [p for p in LOGS if p.parent.name in
                                  ("skew_join", "dpp_subquery", "dpp_dropped", "smj_to_bhj")],
                         ids=_id)
def test_each_read_names_the_application_that_added_it(path: Path):
    """Where several applications of one rule made several reads, each read names the one
    whose after plan first shows an AQE read over its exchange: read from the log here by
    cutting Spark's side-by-side lines in two, not by the tool."""
    lines = path.read_text("utf-8").split("\n")
    report = diff_json(path)
    checked = 0
    for query in report["queries"]:
        for rewrite in query["rewrites"]:
            if rewrite["kind"] not in ("coalesced", "local-read"):
                continue
            line = int(re.search(r"line (\d+)", rewrite["final_node"]).group(1))
            exchange = _shuffle_read_exchange(lines, line)
            word = "coalesced" if rewrite["kind"] == "coalesced" else "local"
            first = None
            for number, text in enumerate(lines, 1):
                if text != f"=== Applying Rule {rewrite['rule']['qualified']} ===":
                    continue
                block = []
                for below in lines[number:]:
                    if not below.strip() or below[:1] not in " !":
                        break
                    block.append(below)
                rights = _right_side(block)
                lefts = _left_side(block)
                if _read_over(rights, exchange, word) and not _read_over(lefts, exchange, word):
                    first = number
                    break
            assert first is not None, (rewrite, exchange)
            assert rewrite["rule"]["line"] == first, (rewrite["final_node"], exchange)
            checked += 1
    assert checked


def _halves(block: List[str]):
    """Each side-by-side line cut where the right plan starts: the longest line with a
    right side that equals its left side tells the column (`' ' + l + pad + l`)."""
    width = None
    for text in block:
        body = text[1:].rstrip()
        for size in range(len(body) // 2, 0, -1):
            left, right = body[:size], body[len(body) - size:]
            if left == right and body[size:len(body) - size].strip() == "" and \
                    len(body) - 2 * size >= 3 and left.strip():
                width = 1 + len(body) - size
                break
        if width is not None:
            break
    if width is None:  # every line changed: the tool's own column finder
        width = right_column(block)
    return [(text[1:width - 3], text[width:]) for text in block]


def _left_side(block: List[str]) -> List[str]:
    return [left for left, _ in _halves(block)]


def _right_side(block: List[str]) -> List[str]:
    return [right for _, right in _halves(block)]


def _read_over(side: List[str], exchange: str, word: str) -> bool:
    for index, text in enumerate(side):
        if re.search(rf"AQEShuffleRead (?:.*\b)?{word}\b", text):
            for below in side[index + 1:index + 4]:
                if exchange in below:
                    return True
    return False


REPLANNING = re.compile(r"^(?:=== Result of Batch AQE Replanning ===|.* Batch AQE Replanning "
                        r"has no effect\.)$")
PLAN_CHANGED = re.compile(r"AdaptiveSparkPlanExec: Plan changed:$")


@pytest.mark.parametrize("path", LOGS, ids=_id)
def test_replannings_and_kept_plans_are_counted(path: Path):
    lines = path.read_text("utf-8").split("\n")
    replannings = sum(1 for text in lines if REPLANNING.match(text))
    changed = sum(1 for text in lines if PLAN_CHANGED.search(text))
    report = diff_json(path)
    said = [q["plan_changes"] for q in report["queries"] if "plan_changes" in q]
    assert said, "no query got the plan-change log"
    assert sum(s["replannings"] for s in said) == replannings
    assert sum(s["changed"] for s in said) == changed
    assert sum(s["kept"] for s in said) == replannings - changed
    for s in said:
        for number, replanning in enumerate(s["replanning"], 1):
            assert replanning["number"] == number
            assert REPLANNING.match(lines[replanning["line"] - 1])
            if replanning["changed"]:
                assert PLAN_CHANGED.search(lines[replanning["changed_line"] - 1])
            else:
                assert replanning["changed"] is False and replanning["changed_line"] is None


def test_kept_plans_show_in_the_text_diff():
    path = SAMPLE_PLANS / "spark-3.5.9" / "aqe_declines" / "driver_planchange.log"
    done = run("diff", str(path))
    assert done.returncode == 0, done.stderr
    assert "plan-change log: 2 re-plannings, 0 changed the plan, 2 kept it" in \
        " ".join(done.stdout.split())


def test_why_says_the_rule_never_fired_and_what_demoted_the_broadcast():
    off = SAMPLE_PLANS / "spark-4.3.0" / "one_row_off" / "driver_planchange.log"
    done = run("why", str(off))
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "the plan-change log never shows OptimizeOneRowPlan changing this query's plan" in text
    declines = SAMPLE_PLANS / "spark-4.3.0" / "aqe_declines" / "driver_planchange.log"
    text = " ".join(run("why", str(declines)).stdout.split())
    # 4.x's DemoteBroadcastHashJoin is 3.x's DynamicJoinSelection demoting a broadcast.
    assert re.search(r"DemoteBroadcastHashJoin hinted no_broadcast_hash on a join of this "
                     r"query \(log line \d+\)", text), text
    old = SAMPLE_PLANS / "spark-3.5.9" / "aqe_declines" / "driver_planchange.log"
    assert re.search(r"DynamicJoinSelection hinted no_broadcast_hash on a join of this query "
                     r"\(log line \d+\)", " ".join(run("why", str(old)).stdout.split()))
    done = run("why", str(declines), "--format", "json")
    reasons = [r for q in json.loads(done.stdout)["queries"] for c in q["candidates"]
               if c["kind"] == "smj-to-bhj" for r in c["reasons"]]
    assert any(r["config"] == "spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin"
               for r in reasons)


@pytest.mark.parametrize("name", ["driver.log", "simple_after.txt"])
def test_inputs_without_the_plan_change_log_gain_no_key(name):
    report = diff_json(SAMPLE_PLANS / "spark-3.5.9" / "skew_join" / name)
    for query in report["queries"]:
        assert "plan_changes" not in query
        assert all("rule" not in rewrite for rewrite in query["rewrites"])


def test_a_log_without_aqe_messages_cannot_tell_kept_plans(tmp_path):
    """spark.sql.adaptive.logLevel left at DEBUG: no `Plan changed:`, no `Final plan:`; the
    re-plannings are counted, whether each kept its plan is not said."""
    source = SAMPLE_PLANS / "spark-3.5.9" / "skew_join" / "driver_planchange.log"
    lines = source.read_text("utf-8").split("\n")
    kept, skipping = [], False
    for text in lines:
        if "AdaptiveSparkPlanExec: " in text:
            skipping = True
            continue
        if skipping and text[:1] in (" ", "!", "") and not re.match(r"\d", text):
            continue
        skipping = False
        kept.append(text)
    path = tmp_path / "driver.log"
    path.write_text("\n".join(kept), "utf-8")
    report = diff_json(path)
    said = [q["plan_changes"] for q in report["queries"] if "plan_changes" in q]
    assert said and said[0]["replannings"] == 3
    assert all(r["changed"] is None for r in said[0]["replanning"])
    assert said[0]["kept"] == 0
    text = " ".join(run("diff", str(path)).stdout.split())
    assert "whether each kept its plan cannot be told" in text


# ---- damaged and cut blocks -----------------------------------------------------------------

SKEW = SAMPLE_PLANS / "spark-4.3.0" / "skew_join" / "driver_planchange.log"


def _skew_lines() -> List[str]:
    return SKEW.read_text("utf-8").split("\n")


def test_a_heading_with_no_closing_is_a_note(tmp_path):
    lines = _skew_lines()
    at = next(i for i, t in enumerate(lines) if t.endswith("adaptive.OptimizeSkewedJoin ==="))
    lines[at] = lines[at][:-4]
    path = tmp_path / "damaged.log"
    path.write_text("\n".join(lines), "utf-8")
    done = run("diff", str(path))
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert f"line {at + 1}: a plan-change rule heading with no name closed by ' ===' was " \
           "skipped" in text
    assert "by OptimizeSkewedJoin" not in text  # the application was not read
    assert "skew-join:" in text  # the finding itself stays


def test_a_block_not_side_by_side_is_a_note(tmp_path):
    lines = _skew_lines()
    at = next(i for i, t in enumerate(lines) if t.endswith("adaptive.OptimizeSkewedJoin ==="))
    end = at + 1
    while lines[end].strip():
        lines[end] = lines[end].lstrip(" !")[:40]
        end += 1
    path = tmp_path / "damaged.log"
    path.write_text("\n".join(lines), "utf-8")
    done = run("diff", str(path), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    notes = report["queries"][0]["plan_changes"]["notes"]
    assert any(n.startswith(f"line {at + 1}: the plans of the plan-change block "
                            "'OptimizeSkewedJoin'") for n in notes), notes
    skew = [r for r in report["queries"][0]["rewrites"] if r["kind"] == "skew-join"]
    assert skew[0]["rule"]["rule"] == "OptimizeSkewedJoin"  # the heading still names it


@pytest.mark.parametrize("where", ["heading", "inside", "plan changed"])
def test_a_log_cut_in_a_block_is_read(tmp_path, where):
    lines = _skew_lines()
    if where == "plan changed":
        at = next(i for i, t in enumerate(lines) if t.endswith("Plan changed:")) + 3
    else:
        at = next(i for i, t in enumerate(lines) if t.endswith("OptimizeSkewedJoin ==="))
        at += 1 if where == "heading" else 5
    path = tmp_path / "cut.log"
    path.write_text("\n".join(lines[:at])[:-7], "utf-8")  # mid-line too
    done = run("diff", str(path), "--format", "json")
    assert done.returncode in (0, 2), done.stderr
    assert "Traceback" not in done.stderr
    if done.returncode == 2:
        assert done.stderr.startswith("aqe-inspect: error: ")
    else:
        json.loads(done.stdout)


# ---- the reader fuzzed ----------------------------------------------------------------------

def _fragments() -> List[str]:
    """Real pieces of plan-change logs: each heading with the lines under it."""
    pieces: List[str] = []
    for path in LOGS[:6]:
        text = path.read_text("utf-8")
        for match in re.finditer(r"(?m)^(?:=== (?:Applying Rule|Result of Batch) .*|.*"
                                 r"(?:Plan changed:|has no effect\.|Final plan:))$", text):
            end = text.find("\n\n", match.end())
            pieces.append(text[match.start():end if 0 <= end < match.end() + 4000
                               else match.end() + 4000])
            if len(pieces) > 400:
                break
    return pieces


FRAGMENTS = _fragments()
FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def mangled_logs(draw) -> str:
    pieces = draw(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=8))
    lines = "\n".join(pieces).split("\n")
    for _ in range(draw(st.integers(0, 8))):
        if not lines:
            break
        index = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["drop", "cut", "insert", "swap", "mark"]))
        if action == "drop":
            del lines[index]
        elif action == "cut":
            lines[index] = lines[index][:draw(st.integers(0, len(lines[index])))]
        elif action == "insert":
            lines.insert(index, draw(st.text(max_size=60)))
        elif action == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[index], lines[other] = lines[other], lines[index]
        else:
            lines[index] = "!" + lines[index][1:]
    return "\n".join(lines)


@FUZZ
@given(mangled_logs())
def test_the_reader_never_fails_on_mangled_blocks(text):
    events, notes = read_events(text.encode("utf-8", "surrogatepass"))
    assert all(isinstance(note, str) and note.startswith("line ") for note in notes)
    assert all(event.line >= 1 for event in events)


@FUZZ
@given(st.binary(max_size=400).map(lambda b: b"=== Applying Rule " + b))
def test_the_reader_never_fails_on_bytes(data):
    read_events(data)
    read_events(b"x\n" + data + b"\n" + data)


@FUZZ
@given(mangled_logs())
def test_a_mangled_log_with_a_plan_is_read_whole(text):
    plan = (SAMPLE_PLANS / "spark-4.3.0" / "skew_join" / "simple_after.txt").read_text("utf-8")
    document = read_text_document(plan + "\n" + text + "\n" + plan, "fuzz")
    for query in document.queries:
        if query.plan_changes is not None:
            for replanning in query.plan_changes.replannings:
                assert replanning.changed in (True, False, None)


def test_the_html_page_names_the_rules_and_the_kept_plans():
    path = SAMPLE_PLANS / "spark-3.5.9" / "skew_join" / "driver_planchange.log"
    done = run("diff", str(path), "--format", "html")
    assert done.returncode == 0, done.stderr
    assert "<dt>re-plannings</dt><dd>3 re-plannings, 1 changed the plan, 2 kept it" in done.stdout
    assert re.search(r"by OptimizeSkewedJoin \(log line \d+\)", done.stdout)


def _tree(names: List[str]) -> List[str]:
    """A one-child-each plan as Spark's treeString prints it."""
    return [name if depth == 0 else "   " * (depth - 1) + "+- " + name
            for depth, name in enumerate(names)]


def _side_by_side(left: List[str], right: List[str]) -> List[str]:
    """Spark's `sideBySide`: a mark, the left line padded to the longest, three blanks, the
    right line."""
    width = max(len(text) for text in left)
    left = left + [""] * (len(right) - len(left))
    right = right + [""] * (len(left) - len(right))
    return [(" " if a == b else "!") + a + " " * (width - len(a) + 3) + b
            for a, b in zip(left, right)]


def test_a_deep_plan_block_is_read():
    """A 3,000-level plan: no recursion, the one operator the rule added found."""
    below = [f"Filter (v#{n}L > {n})" for n in range(3000)] + ["Range (0, 10, step=1)"]
    before = _tree(["HashAggregate(keys=[k#1L])", "ShuffleQueryStage 0",
                    "Exchange hashpartitioning(k#1L, 20), ENSURE_REQUIREMENTS, [plan_id=9]",
                    *below])
    after = _tree(["HashAggregate(keys=[k#1L])", "AQEShuffleRead coalesced",
                   "ShuffleQueryStage 0",
                   "Exchange hashpartitioning(k#1L, 20), ENSURE_REQUIREMENTS, [plan_id=9]",
                   *below])
    text = ("26/11/26 08:27:07 INFO PlanChangeLogger: \n=== Applying Rule "
            "org.apache.spark.sql.execution.adaptive.CoalesceShufflePartitions ===\n"
            + "\n".join(_side_by_side(before, after)) + "\n           \n")
    events, notes = read_events(text.encode())
    assert not notes
    (rule,) = [event for event in events if event.kind == "rule"]
    assert rule.added == ("AQEShuffleRead coalesced",) and not rule.removed
    ((name, head, ids),) = rule.touched
    assert name == "AQEShuffleRead coalesced"
    assert head == "Exchangehashpartitioning(k#1L,20),ENSURE_REQUIREMENTS,[plan_id=9]"
    assert "2999" in ids and "1" in ids


LOG4J = re.compile(r"(\d\d/\d\d/\d\d \d\d:\d\d:\d\d) (INFO|WARN|ERROR|DEBUG) ([\w$.]+): (.*)")


def _as_json_log(text: str) -> str:
    """A plain driver log as Spark 4's structured logging writes it (SparkLayout.json: one
    record a message, `msg` holding its lines)."""
    records, current = [], None
    for line in text.split("\n"):
        found = LOG4J.match(line)
        if found:
            if current is not None:
                records.append(current)
            current = {"ts": found.group(1), "level": found.group(2), "msg": found.group(4),
                       "logger": found.group(3)}
        elif current is not None:
            current["msg"] += "\n" + line
        else:
            records.append({"ts": "", "level": "INFO", "msg": line, "logger": "stdout"})
    if current is not None:
        records.append(current)
    return "\n".join(json.dumps(r) for r in records) + "\n"


@pytest.mark.parametrize("scenario", ["skew_join", "aqe_declines", "dpp_subquery"])
def test_a_structured_json_log_names_the_same_rules(tmp_path, scenario):
    path = SAMPLE_PLANS / "spark-4.3.0" / scenario / "driver_planchange.log"
    converted = tmp_path / "driver_json.log"
    converted.write_text(_as_json_log(path.read_text("utf-8")), "utf-8")
    plain, structured = diff_json(path), diff_json(converted)

    def said(report):
        queries = [q for q in report["queries"] if "plan_changes" in q]
        return ([sorted((r["kind"], r.get("rule", {}).get("rule"))
                        for r in q["rewrites"]) for q in queries],
                [(q["plan_changes"]["replannings"], q["plan_changes"]["kept"])
                 for q in queries])

    assert said(structured) == said(plain)
    assert said(plain)[0]


# --- the file searched a window at a time ----------------------------------------------------

_MARKERS = ((b"=== Applying Rule ", "rule"), (b"Plan changed", "changed"), (b" has no effect.", "no-effect"))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.sampled_from([b"=== Applying Rule ", b"Plan changed", b" has no effect.",
                                        b"\n", b"x", b"== ", b"Plan ", b"ab\ncd"]), max_size=60),
       window=st.integers(1, 40))
def test_windowed_search_finds_what_one_search_finds(pieces, window, tmp_path_factory):
    """The plan-change reader searches a mapped file a window at a time and gives each
    window's pages back: it finds every marker one search of the whole text finds, a marker
    across a window's end included, and counts the same lines."""
    import mmap

    from aqe_inspect.sources import planchange

    data = b"".join(pieces)
    expected = sorted((at, kind) for marker, kind in _MARKERS
                      for at in [m.start() for m in re.finditer(re.escape(marker), data)])
    kept = planchange.WINDOW
    planchange.WINDOW = window
    try:
        assert planchange._find_all(data, _MARKERS) == expected
        if data:
            path = tmp_path_factory.mktemp("window") / "log"
            path.write_bytes(data)
            with open(path, "rb") as handle, \
                    mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                assert planchange._find_all(mapped, _MARKERS) == expected
                assert planchange._newlines(mapped, 0, len(data)) == data.count(b"\n")
                assert planchange.has_plan_changes(mapped) == (b"=== Applying Rule " in data)
    finally:
        planchange.WINDOW = kept


def test_a_large_log_is_searched_in_bounded_memory(tmp_path):
    """A 64 MB driver log whose plan-change log is at its end (the rest other messages) is
    searched with the process's memory growing by far less than the file: the mapped pages
    are given back window by window, as they are passed."""
    import sys

    path = tmp_path / "long.log"
    noise = b"26/11/23 13:53:00 INFO TaskSetManager: Finished task 0.0 in stage 1.0 (TID 1)\n"
    with open(path, "wb") as out:
        chunk = noise * ((1 << 20) // len(noise))
        while out.tell() < 64 << 20:
            out.write(chunk)
        out.write(LOGS[0].read_bytes())
    size = path.stat().st_size
    script = ("import mmap, resource, sys\n"
              "from aqe_inspect.sources import planchange\n"
              "with open(sys.argv[1], 'rb') as h, "
              "mmap.mmap(h.fileno(), 0, access=mmap.ACCESS_READ) as d:\n"
              "    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
              "    events, notes = planchange.read_events(d)\n"
              "    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
              "print(len(events), (after - before) * 1024)\n")
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                          text=True, check=True)
    events, grown = map(int, done.stdout.split())
    assert events > 10
    assert grown < size / 2, (grown, size)  # (a window mapped and a window copied: 16 MB)


def _right_column_by_intervals(lines):
    """right_column as it was (each line's allowed columns as intervals, intersected): the
    definition the faster search is held to."""
    if not lines or any(text[:1] not in (" ", "!") for text in lines):
        return None
    stripped = [text.rstrip() for text in lines]
    longest = max(len(text) for text in stripped)
    if longest < 2:
        return None
    allowed = [(4, longest + 3)]
    for text in stripped:
        own = [(len(text) + 3, longest + 3)]
        own.extend((run.start() + 3, run.end()) for run in re.finditer(r" {3,}", text))
        merged = []
        for low, high in sorted(own):
            if merged and low <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], high))
            else:
                merged.append((low, high))
        out, i, j = [], 0, 0
        while i < len(allowed) and j < len(merged):
            low, high = max(allowed[i][0], merged[j][0]), min(allowed[i][1], merged[j][1])
            if low <= high:
                out.append((low, high))
            if allowed[i][1] < merged[j][1]:
                i += 1
            else:
                j += 1
        allowed = out
        if not allowed:
            return None
    for low, _ in allowed:
        if low < longest:
            return low
    return longest + 3


_SIDE_TEXT = st.lists(st.sampled_from([" ", "  ", "   ", "    ", "x", "ab", "!", "\t", "é",
                                       "+- ", ":- ", "Project [a#1]"]), max_size=24).map("".join)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from([" ", "!", "x", ""]), _SIDE_TEXT).map("".join),
                max_size=12))
def test_the_right_column_is_the_intervals_definition(lines):
    assert right_column(lines) == _right_column_by_intervals(lines)


def test_the_right_column_of_every_sample_block_is_the_intervals_definition():
    for path in LOGS:
        blocks, block = [], []
        for text in path.read_text("utf-8", "replace").split("\n"):
            if text[:1] in (" ", "!") and text.strip():
                block.append(text)
            elif block:
                blocks.append(block)
                block = []
        for block in blocks:
            assert right_column(block) == _right_column_by_intervals(block), path


def test_the_operators_remembered_are_bounded_and_the_same_as_read_afresh():
    """The operator of a plan line is remembered (a query's rule blocks repeat their plan's
    lines), never more than OPERATORS_KEPT lines, none longer than OPERATOR_LINE, and what is
    remembered is what matching the line again gives."""
    from aqe_inspect.sources import planchange

    planchange._operators.clear()
    lines = [f"   +- Project [c{i}#{i}L]" for i in range(planchange.OPERATORS_KEPT + 50)]
    assert [planchange._operator(line) for line in lines] == ["Project"] * len(lines)
    assert 0 < len(planchange._operators) <= planchange.OPERATORS_KEPT
    long_line = "*(2) HashAggregate(keys=[" + "x#1, " * planchange.OPERATOR_LINE + "])"
    assert planchange._operator(long_line) == "HashAggregate"
    assert long_line not in planchange._operators
    for line in (":  +- Exchange hashpartitioning(a#1, 200)", "!+- AQEShuffleRead coalesced",
                 "   ", "+- *(3) Sort [a#1 ASC]"):
        first = planchange._operator(line)
        assert planchange._operator(line) == first
        match = planchange._OPERATOR.match(line)
        assert first == ("" if match is None else match.group(1) + match.group(2))
