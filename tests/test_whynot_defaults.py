"""The defaults table per Spark line (aqe_inspect.whynot.defaults): its shape, the changes
between lines that Spark's SQLConf shows, and, marked `spark`, every key against the installed
PySpark's own SQLConf entries (CI runs this on PySpark 4.x and 3.5)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from aqe_inspect.plan.units import conf_bytes
from aqe_inspect.whynot.defaults import (KEYS, LINES, MEASURED, Default, default,
                                         effective_default, spark_line)

from .conftest import ROOT

#: The settings the explainers read (issue 15); the table holds each one.
NEEDED = (
    "spark.sql.adaptive.enabled", "spark.sql.adaptive.coalescePartitions.enabled",
    "spark.sql.adaptive.coalescePartitions.parallelismFirst",
    "spark.sql.adaptive.coalescePartitions.minPartitionSize",
    "spark.sql.adaptive.coalescePartitions.minPartitionNum",
    "spark.sql.adaptive.coalescePartitions.initialPartitionNum",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes",
    "spark.sql.adaptive.localShuffleReader.enabled", "spark.sql.adaptive.skewJoin.enabled",
    "spark.sql.adaptive.skewJoin.skewedPartitionFactor",
    "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes",
    "spark.sql.adaptive.forceOptimizeSkewedJoin", "spark.sql.adaptive.autoBroadcastJoinThreshold",
    "spark.sql.autoBroadcastJoinThreshold",
    "spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin",
    "spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold",
    "spark.sql.adaptive.optimizer.excludedRules", "spark.sql.join.preferSortMergeJoin",
    "spark.sql.shuffle.partitions", "spark.sql.adaptive.forceApply",
    "spark.sql.adaptive.shuffle.targetPostShuffleInputSize",
)
BYTE_SIZED = ("spark.sql.adaptive.coalescePartitions.minPartitionSize",
              "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes",
              "spark.sql.autoBroadcastJoinThreshold",
              "spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold",
              "spark.sql.adaptive.shuffle.targetPostShuffleInputSize")


def _tool():
    """tools/spark_defaults.py, the reader of SQLConf entries the table was built with."""
    spec = importlib.util.spec_from_file_location("spark_defaults", ROOT / "tools" / "spark_defaults.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_table_holds_every_needed_key_on_every_line():
    assert set(NEEDED) <= set(KEYS)
    assert list(LINES) == sorted(LINES, key=lambda line: tuple(map(int, line.split("."))))
    assert set(MEASURED) == set(LINES) and all(MEASURED[line].startswith(line + ".")
                                               for line in LINES)
    for key in KEYS:
        for line in LINES:
            found = default(key, MEASURED[line])
            assert isinstance(found, Default) and found.key == key and found.line == line
            assert MEASURED[line] in found.cite
            if not found.exists:
                assert found.value is None and found.fallback is None
                continue
            constant = found.cite.split(",")[0][len("SQLConf."):]
            assert found.cite.startswith("SQLConf.") and constant.isupper(), found.cite
            assert found.value is not None or found.fallback or found.note, (key, line)
            if found.fallback:
                assert default(found.fallback, line).exists, (key, line)


def test_byte_sized_defaults_read_as_spark_reads_them():
    assert conf_bytes(default("spark.sql.autoBroadcastJoinThreshold", "3.0").value) == 10 << 20
    for key in BYTE_SIZED:
        for line in LINES:
            found = default(key, line)
            if found.exists and found.value is not None:
                assert conf_bytes(found.value) >= 0, (key, line)
    assert effective_default("spark.sql.adaptive.advisoryPartitionSizeInBytes", "4.3").value == "64MB"


def test_changes_between_lines():
    enabled = {line: default("spark.sql.adaptive.enabled", line).value for line in LINES}
    assert enabled["3.0"] == enabled["3.1"] == "false"
    assert all(enabled[line] == "true" for line in LINES[2:])
    factor = "spark.sql.adaptive.skewJoin.skewedPartitionFactor"
    assert default(factor, "3.3").value == "5" and default(factor, "3.4").value == "5.0"
    force = "spark.sql.adaptive.forceOptimizeSkewedJoin"
    assert not default(force, "3.2").exists and default(force, "3.3").value == "false"
    assert default("spark.sql.adaptive.optimizer.excludedRules", "3.0").exists is False
    assert default("spark.sql.adaptive.coalescePartitions.parallelismFirst", "3.1").exists is False
    assert default("spark.sql.adaptive.coalescePartitions.parallelismFirst", "3.2").value == "true"
    shj = "spark.sql.adaptive.convertSortMergeJoinToShuffledHashJoin.enabled"
    assert not default(shj, "4.2").exists and default(shj, "4.3").value == "true"


def test_fallbacks():
    adaptive = "spark.sql.adaptive.autoBroadcastJoinThreshold"
    assert not default(adaptive, "3.1.3").exists  # AQE read the one threshold before 3.2
    on_35 = default(adaptive, "3.5.9")
    assert on_35.value is None and on_35.fallback == "spark.sql.autoBroadcastJoinThreshold"
    assert "canBroadcastBySize" in on_35.note
    in_force = effective_default(adaptive, "3.5.9")
    assert (in_force.key, in_force.value) == ("spark.sql.autoBroadcastJoinThreshold", "10MB")
    assert in_force.cite == "SQLConf.AUTO_BROADCASTJOIN_THRESHOLD, Spark 3.5.9"
    advisory = effective_default("spark.sql.adaptive.advisoryPartitionSizeInBytes", "3.0.1")
    assert (advisory.key, advisory.value) == (
        "spark.sql.adaptive.shuffle.targetPostShuffleInputSize", "64MB")
    initial = effective_default("spark.sql.adaptive.coalescePartitions.initialPartitionNum", "4.0")
    assert (initial.key, initial.value) == ("spark.sql.shuffle.partitions", "200")
    # no value and nothing standing in: comes back as it is
    rules = effective_default("spark.sql.adaptive.optimizer.excludedRules", "3.5")
    assert rules.value is None and rules.fallback is None and rules.note
    assert not effective_default(adaptive, "3.0").exists


@pytest.mark.parametrize("version, line", [
    ("3.5.9", "3.5"), ("4.3.0", "4.3"), ("4.3.0-SNAPSHOT", "4.3"), ("3.0", "3.0"),
    ("v3.2.1", "3.2"), (" 3.3.2 ", "3.3"), ("3.5.1-amzn-0", "3.5"), ("4.4.0", "4.3"),
    ("5.0.0-SNAPSHOT", "4.3"), ("2.4.8", None), ("13.3.x-scala2.12", None), ("", None),
    (None, None), ("latest", None), ("3.6.0", None), ("3", None)])
def test_spark_line(version, line):
    assert spark_line(version) == line


def test_unknown_key_or_version():
    assert default("spark.sql.adaptive.enabled", "2.4.8") is None
    assert default("spark.sql.adaptive.enabled", None) is None
    assert default("spark.sql.no.such.key", "3.5.9") is None
    assert effective_default("spark.sql.no.such.key", "3.5.9") is None


@pytest.mark.spark
def test_the_table_agrees_with_the_installed_spark(spark):
    """Every key of the table against the `SQLConf` entries of the running PySpark: default
    string, fallback key, the constant cited, and absence. Read from the entries, not from the
    session (the sample generator's session sets some of these keys)."""
    _, session = spark
    tool = _tool()
    entries = tool.sqlconf_entries(session._jvm)
    assert "spark.sql.adaptive.enabled" in entries and len(entries) > 200
    line = spark_line(session.version)
    assert line is not None, session.version
    assert tool.compare(line, entries) == []
    # and the comparison can fail: a wrong default is named
    wrong = dict(entries)
    wrong["spark.sql.shuffle.partitions"] = entries["spark.sql.shuffle.partitions"]._replace(value="7")
    assert any("spark.sql.shuffle.partitions" in p for p in tool.compare(line, wrong))
