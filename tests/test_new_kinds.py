"""The kinds named for AQE's other run-time decisions (dpp, dpp-dropped, rebalance-skew, one-row,
limit-removed) on `check`, through the installed console script, over the real event logs of
the sample scenarios (PySpark 3.5.9 and 4.3.0; truth.json read from the JVM plan objects)."""

from __future__ import annotations

import json
import subprocess

import pytest

from .conftest import AQE_INSPECT, SAMPLE_PLANS

NEW_KINDS = ("dpp", "dpp-dropped", "rebalance-skew", "one-row", "limit-removed")
POSITIVE = ("dynamic_partition_pruning", "dpp_subquery", "dpp_dropped", "rebalance_skew",
            "rebalance_skew_none", "one_row_sort", "one_row_aggregate", "limit_removed")
CONTROLS = ("dynamic_partition_pruning_off", "rebalance_skew_off", "rebalance_skew_none_off",
            "one_row_off", "limit_removed_off", "kept_by_cost")
LINES = ("spark-3.5.9", "spark-4.3.0")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*AQE_INSPECT, *args], capture_output=True, text=True, timeout=300)


def truth(line: str, scenario: str) -> dict:
    return json.loads((SAMPLE_PLANS / line / scenario / "truth.json").read_text("utf-8"))


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("scenario", POSITIVE)
def test_check_holds_the_event_log_to_the_jvm_counts(line, scenario):
    counts = truth(line, scenario)["rewrites"]
    log = str(SAMPLE_PLANS / line / scenario / "eventlog.json")
    kinds = [kind for kind in NEW_KINDS if counts[kind]]
    assert kinds, scenario
    held = run("check", log, "--query", f"aqe-sample:{scenario}$",
               *[f"--expect={kind}={counts[kind]}" for kind in kinds])
    assert held.returncode == 0, held.stdout + held.stderr
    broken = run("check", log, "--query", f"aqe-sample:{scenario}$", f"--forbid={kinds[0]}")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert kinds[0] in broken.stdout


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("scenario", CONTROLS)
def test_check_of_a_control_fails_and_says_which_setting(line, scenario):
    control = truth(line, scenario)["control"]
    log = str(SAMPLE_PLANS / line / scenario / "eventlog.json")
    failed = run("check", log, "--query", f"aqe-sample:{scenario}$",
                 f"--expect={control['kind']}", "--format", "json")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert control["config"] in failed.stdout, failed.stdout


def test_rules_describe_every_new_kind():
    for kind in NEW_KINDS:
        described = run("rules", kind)
        assert described.returncode == 0, described.stderr
        assert "Before" in described.stdout and "After" in described.stdout
        assert "Configs:" in described.stdout
