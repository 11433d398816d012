"""A real SparkSession end to end: run scenarios with the installed PySpark, read the truth
from the JVM plan objects, and check that diff finds exactly that in the printed plans."""

from __future__ import annotations

import json

import pytest

import aqe_inspect
from aqe_inspect.rewrites.engine import diff_document
from aqe_inspect.rewrites.findings import REWRITE_KINDS

pytestmark = pytest.mark.spark

LIVE_SCENARIOS = ["multi_rewrite", "skew_join", "empty_relation", "smj_to_shj", "aqe_declines",
                  "dpp_dropped", "rebalance_skew", "one_row_aggregate", "limit_removed"]


def test_live_run_agrees_with_the_jvm(spark, tmp_path):
    generator, session = spark
    generator.generate(session, tmp_path, only=LIVE_SCENARIOS, strict=True)
    folders = sorted(p.parent for p in tmp_path.rglob("truth.json"))
    assert [f.name for f in folders] == sorted(LIVE_SCENARIOS)
    for folder in folders:
        truth = json.loads((folder / "truth.json").read_text("utf-8"))
        want = {kind: truth["rewrites"].get(kind, 0) for kind in REWRITE_KINDS}
        for mode in ("formatted_after", "simple_after", "extended_after"):
            path = folder / f"{mode}.txt"
            report = diff_document(aqe_inspect.parse(path.read_text("utf-8"), str(path)))
            got = dict.fromkeys(REWRITE_KINDS, 0)
            for query in report.queries:
                for kind, count in query.counts.items():
                    got[kind] += count
            assert got == want, (folder.name, mode)


def test_assert_aqe_takes_the_new_kinds(spark, tmp_path):
    """assert_aqe on live DataFrames of the new scenarios: each names the kind the JVM says
    happened, and forbidding it fails."""
    from aqe_inspect.testing import assert_aqe

    generator, session = spark
    for name, kind in (("rebalance_skew", "rebalance-skew"), ("one_row_sort", "one-row"),
                       ("limit_removed", "limit-removed"), ("dpp_dropped", "dpp-dropped")):
        scenario = generator.scenario_named(name)
        with generator._ScenarioConfs(session, scenario.all_confs()):
            df = scenario.build(session, tmp_path / name)
            df.collect()
            assert_aqe(df, expect=[kind])
            with pytest.raises(AssertionError, match=kind):
                assert_aqe(df, forbid=[kind])
