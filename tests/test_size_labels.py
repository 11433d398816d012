"""Every size figure `diff` and `why` print says which of a shuffle's two sizes it is: `data size`
(a query stage's run-time statistics: its rows uncompressed, the exchange's `data size`
metric) or `shuffle bytes` (the bytes the shuffle wrote to disk, per partition: what
coalescing and skew handling read). Run on each sample scenario's event log and pasted plans
(formatted and cost mode print the stages' `Statistics(...)`), both Spark lines; and the
docs page that says what the two are exists and is linked."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import List, Tuple

import pytest

from aqe_inspect.cli import main

from .conftest import ROOT, SAMPLE_PLANS

VERSIONS = ("spark-3.5.9", "spark-4.3.0")
#: A size as aqe-inspect and Spark print it: `468.8 KiB`, `220.0 B`, `512 B`.
SIZE = re.compile(r"\b\d+(?:\.\d+)? (?:B|KiB|MiB|GiB|TiB|PiB|EiB)\b")
#: What may stand right before a size: its label (`data size`, `shuffle bytes`, either
#: followed by `at most`), the median of the partitions whose largest was just labelled
#: (`the median (220.0 B)`), and Spark's own `Statistics(sizeInBytes=...)`.
LABELLED = re.compile(r"(?:data size|shuffle bytes|shuffle bytes written|local bytes read|"
                      r"remote bytes read|size of files read|the median \(|sizeInBytes=|unknown \(Spark's"
                      # a setting's value, its size beside it: `...Threshold=64KB (64.0 KiB`
                      r"|[\w.]+=\S+ \("
                      # the skew figures, labelled once: `20 partition(s), shuffle bytes: min
                      # 128.0 B, median 220.0 B, ...; 0 over both the threshold (1.0 KiB) and
                      # 15.9 x the median (3.4 KiB)`, and the skew bar of a margin
                      r"|shuffle bytes: [^()]*?(?:min|median|p95|max)|over both the threshold \("
                      r"|x (?:the )?median \(?|a bar of)"
                      r"(?: at (?:most|least))?\s*$")
#: A tree's guides, between the words of an operator's wrapped line.
GUIDES = re.compile("[\u2502\u251c\u2514\u2500]")


def run(args: List[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(args)
    assert code in (0, 1), (args, code, err.getvalue())
    return out.getvalue()


def bare_sizes(text: str) -> List[str]:
    """Each size figure of `text` not preceded by its label, with what comes before it (the
    text's lines joined: a label and its figure may be wrapped apart)."""
    flat = " ".join(GUIDES.sub(" ", text).split())
    return [flat[max(0, m.start() - 60):m.end()] for m in SIZE.finditer(flat)
            if not LABELLED.search(flat[:m.start()])]


def inputs() -> List[Tuple[str, Path]]:
    found = []
    for version in VERSIONS:
        for scenario in sorted((SAMPLE_PLANS / version).iterdir()):
            for name in ("eventlog.json", "formatted_after.txt", "cost_after.txt"):
                path = scenario / name
                if path.is_file():
                    found.append((f"{version}/{scenario.name}/{name}", path))
    return found


INPUTS = inputs()


@pytest.mark.parametrize("path", [p for _, p in INPUTS], ids=[i for i, _ in INPUTS])
def test_every_size_diff_and_why_print_is_labelled(path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    printed = {
        "diff": run(["diff", str(path)]),
        "diff --tree": run(["diff", "--tree", str(path)]),
        "diff --side-by-side": run(["diff", "--side-by-side", str(path)]),
        "why": run(["why", str(path)]),
    }
    for view, text in printed.items():
        assert "; stage " not in text, view
        assert bare_sizes(text) == [], view


def test_the_broadcast_just_above_join_says_which_size_is_which(monkeypatch):
    """The issue's case: the join sides' data sizes (held against the broadcast threshold) and
    their partitions' shuffle bytes (held against the skew threshold) side by side, each named;
    the diff's stage figure is the data size of the stage's statistics."""
    monkeypatch.setenv("COLUMNS", "1000")
    path = SAMPLE_PLANS / "spark-4.3.0" / "broadcast_just_above" / "eventlog.json"
    diff = run(["diff", str(path)])
    assert "; data size 468.8 KiB, 2.00E+4 rows (stage statistics)" in diff
    why = run(["why", str(path)])
    assert "the left side ShuffleQueryStage (5) has data size 468.8 KiB at run time (plan: " \
           "Statistics of ShuffleQueryStage (5))" in why
    assert "(shuffle bytes at most 185.6 KiB, metric: 'shuffle bytes written' of Exchange (4)" \
        in why
    tree = run(["diff", "--tree", str(path)])
    assert "shuffle bytes written 168.7 KiB" in tree  # 172778 bytes, as a size
    assert "shuffle bytes 178.2 KiB" in tree  # the AQE shuffle read's `partition data size`


def test_why_json_says_which_size_a_reason_holds(capsys):
    """Each reason's `measure`: the broadcast threshold against the data size, the skew
    threshold against shuffle bytes; the figures likewise."""
    path = SAMPLE_PLANS / "spark-4.3.0" / "broadcast_just_above" / "eventlog.json"
    assert main(["why", str(path), "--format", "json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    measures = {}
    for query in answer["queries"]:
        for item in query["candidates"]:
            for reason in item["reasons"]:
                measures.setdefault((item["kind"], reason["config"]), set()).add(
                    reason["measure"])
    assert measures[("smj-to-bhj", "spark.sql.adaptive.autoBroadcastJoinThreshold")] == {
        "data size"}
    assert measures[("smj-to-bhj", None)] == {"data size"}
    assert measures[("skew-join", "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes")] \
        == {"shuffle bytes"}
    assert measures[("coalesced", None)] == {None}


def test_a_pasted_plan_asks_for_shuffle_bytes_not_the_data_size(monkeypatch):
    """A formatted plan holds the stages' statistics (data size) but no shuffle bytes: the
    partition rules say what they lack, the data size is named as such."""
    monkeypatch.setenv("COLUMNS", "1000")
    path = SAMPLE_PLANS / "spark-4.3.0" / "broadcast_just_above" / "formatted_after.txt"
    why = run(["why", str(path)])
    assert "needs the partition sizes (shuffle bytes) of the left side ShuffleQueryStage (5)" \
        in why
    assert "the left side ShuffleQueryStage (5) has data size 468.8 KiB at run time (plan: " \
           "Statistics of ShuffleQueryStage (5))" in why
    assert "shuffle bytes at most" not in why


def test_the_docs_say_what_the_two_sizes_are():
    page = (ROOT / "docs" / "sizes.md").read_text(encoding="utf-8")
    for words in ("data size", "shuffle bytes", "bytesByPartitionId", "runtimeStatistics",
                  "autoBroadcastJoinThreshold", "skewedPartitionThresholdInBytes",
                  "advisoryPartitionSizeInBytes", "OptimizeShuffleWithLocalRead",
                  "compressed"):
        assert words in page, words
    assert "sizes.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for linking in ("commands/why.md", "commands/diff.md", "json.md"):
        assert "sizes.md" in (ROOT / "docs" / linking).read_text(encoding="utf-8"), linking
