"""Spark's size figures (aqe_inspect.plan.units) against what Spark prints and reads.

Known answers come from Spark itself: its own unit tests (`UtilsSuite."bytesToString"`,
`JavaUtilsSuite`), the `Statistics(...)` printed in the bundled sample plans and the golden
corpus, and, marked `spark`, the JVM of the installed PySpark.
"""

from __future__ import annotations

import re

import pytest

from aqe_inspect.plan.units import (LONG_MAX, SCIENTIFIC_FROM, Size, conf_bytes, is_unknown_size,
                               parse_statistics, printed_bytes, printed_count, show_bytes)

from .conftest import CORPUS, SAMPLE_PLANS

KIB, MIB, GIB, TIB, PIB, EIB = (1 << s for s in (10, 20, 30, 40, 50, 60))

#: Spark's `UtilsSuite` test("bytesToString") (core/src/test/scala/org/apache/spark/util),
#: with the 3.0+ unit names.
SPARK_PRINTS = [
    (10, "10.0 B"), (1500, "1500.0 B"), (2000000, "1953.1 KiB"), (2097152, "2.0 MiB"),
    (2306867, "2.2 MiB"), (5368709120, "5.0 GiB"), (5 * TIB, "5.0 TiB"), (5 * PIB, "5.0 PiB"),
    (5 * EIB, "5.0 EiB"), (SCIENTIFIC_FROM, "2.36E+21 B"),
]


def _statistics_in(*roots):
    """Every distinct `Statistics(...)` printed in the plans under `roots` (text files)."""
    found = set()
    for root in roots:
        if not root.is_dir():
            continue
        for path in root.rglob("*"):
            if path.suffix in (".txt", ".out", ".log", ".json") and path.is_file():
                found.update(re.findall(r"Statistics\(([^)]*)\)", path.read_text("utf-8", "replace")))
    return sorted(found)


@pytest.mark.parametrize("count, text", SPARK_PRINTS)
def test_show_bytes_prints_as_spark(count, text):
    assert show_bytes(count) == text
    size = printed_bytes(text)
    assert size.low <= count <= size.high


def test_show_bytes_rounds_half_up_and_changes_unit_at_twice():
    # Seen on Spark 4.3's Utils.bytesToString: 9574 -> 9.3 KiB, 9575 -> 9.4 KiB (9.3505..),
    # 2304 -> 2.3 KiB (2.25 exactly, half up), 2047 -> 2047.0 B, 1 MiB -> 1024.0 KiB.
    assert [show_bytes(n) for n in (9574, 9575, 9676, 9677, 2304, 2047, 2048, MIB, 2 * MIB)] == [
        "9.3 KiB", "9.4 KiB", "9.4 KiB", "9.5 KiB", "2.3 KiB", "2047.0 B", "2.0 KiB",
        "1024.0 KiB", "2.0 MiB"]
    assert show_bytes((1 << 63) - 1) == "8.0 EiB"  # Statistics.DUMMY, a plan without estimates
    assert show_bytes(0) == "0.0 B"


def test_printed_bytes_is_the_interval_that_prints_so():
    assert printed_bytes("9.4 KiB") == Size(9575, 9676)
    assert printed_bytes("1152.0 B") == Size(1152, 1152) and printed_bytes("1152.0 B").exact
    assert printed_bytes("0.0 B") == Size(0, 0)
    assert printed_bytes("2.0 KiB").low == 2048  # below twice a KiB Spark prints bytes
    assert printed_bytes("1024.0 KiB") == Size(1048525, 1048627)
    assert printed_bytes("4.0 MB") == printed_bytes("4.0 MiB")  # Spark 2.x unit names
    assert str(printed_bytes("468.8  KiB")) == "468.8 KiB"
    assert printed_bytes("1.0 MiB") == Size(996148, 1101004)  # not Spark's (1024.0 KiB): as written
    for junk in ("", "ten", "9.4", "9.4 KB/s", "1.5 B", "-"):
        with pytest.raises(ValueError):
            printed_bytes(junk)


@pytest.mark.parametrize("text", ["9.4 KiB", "2.0 KiB", "1024.0 KiB", "3.7 GiB",
                                  "26.5 TiB", "2047.9 PiB", "8.0 EiB", "2047.9 EiB", "2.36E+21 B"])
def test_printed_bytes_bounds_are_tight(text):
    size = printed_bytes(text)
    assert show_bytes(size.low) == show_bytes(size.high) == text
    assert show_bytes(size.low - 1) != text and show_bytes(size.high + 1) != text


def test_every_statistics_spark_printed_reads_back():
    """Each `Statistics(...)` of the real plans: its size interval prints as the same figure
    at both ends and is tight, and its row count reads."""
    found = _statistics_in(SAMPLE_PLANS, CORPUS)
    assert len(found) >= 50, "the sample plans hold dozens of Statistics(...)"
    unknown = 0
    for inside in found:
        stats = parse_statistics(inside)
        if stats.size is None:  # Spark's "no estimate": Long.MaxValue bytes, 8.0 EiB
            assert re.search(r"sizeInBytes=8\.0 EiB\b", inside), inside
            unknown += 1
            continue
        text = stats.size.text
        assert show_bytes(stats.size.low) == text == show_bytes(stats.size.high), inside
        if stats.size.low:
            assert show_bytes(stats.size.low - 1) != text, inside
        assert show_bytes(stats.size.high + 1) != text, inside
        assert stats.is_runtime is None  # no Spark line prints isRuntime
        if "rowCount" in inside:
            assert stats.rows is not None and stats.rows.low <= stats.rows.high
    assert unknown < len(found), "most printed sizes are figures, not Spark's no-estimate"


def test_printed_count():
    assert printed_count("2.00E+4") == Size(19950, 20049)
    assert printed_count("1.23E+7") == Size(12250000, 12349999)
    assert printed_count("1.00E+4") == Size(9995, 10049)  # 9,995 rounds up to 1.00E+4
    assert printed_count("400") == Size(400, 400)
    assert printed_count("20,000") == Size(20000, 20000)
    assert str(printed_count("2.00E+4")) == "2.00E+4"
    for junk in ("", "2.5", "1,00", "many", "2.00E+4 rows"):
        with pytest.raises(ValueError):
            printed_count(junk)


def test_parse_statistics():
    stats = parse_statistics("sizeInBytes=468.8 KiB, rowCount=2.00E+4")
    assert stats.size == Size(480000, 480102) and stats.rows == Size(19950, 20049)
    assert stats.is_runtime is None
    stats = parse_statistics("Statistics(sizeInBytes=1.0 B, rowCount=0, isRuntime=true)")
    assert stats.size == Size(1, 1) and stats.rows == Size(0, 0) and stats.is_runtime is True
    assert parse_statistics("sizeInBytes=10.2 KiB").rows is None
    with pytest.raises(ValueError, match="sizeInBytes|size"):
        parse_statistics("sizeInBytes=lots")
    with pytest.raises(ValueError, match="isRuntime"):
        parse_statistics("sizeInBytes=1.0 B, isRuntime=maybe")


def test_size_comparisons_say_when_they_cannot_tell():
    size = printed_bytes("9.4 KiB")  # 9,575..9,676 bytes
    assert size.at_most(10 * KIB) is True and size.at_most(9000) is False
    assert size.at_most(9600) is None  # the threshold falls inside the printed figure
    assert size.above(9600) is None and size.below(9575) is False and size.at_least(9575) is True
    assert Size.of_bytes(10 * MIB).at_most(conf_bytes("10MB")) is True
    assert str(Size.of_bytes(10 * MIB)) == "10.0 MiB"


#: `JavaUtilsSuite` / `ConfigEntrySuite` style answers, checked on Spark 4.3's SQLConf.
CONF_READS = [("10MB", 10 * MIB), ("10m", 10 * MIB), ("64KB", 64 * KIB), ("1g", GIB),
              ("256MB", 256 * MIB), ("10485760", 10485760), ("-1", -1), ("1k", KIB),
              ("1b", 1), ("1T", TIB), ("1p", PIB), ("0", 0), (" 5mb ", 5 * MIB),
              ("-10m", -10 * MIB), ("1KiB", KIB), ("9223372036854775807", (1 << 63) - 1)]


@pytest.mark.parametrize("text, value", CONF_READS)
def test_conf_bytes(text, value):
    assert conf_bytes(text) == value


@pytest.mark.parametrize("text, why", [
    ("ten", "not a number"), ("1.5MB", "whole numbers"), ("10 MB", "not a number"),
    (" -1", "not a number"), ("1eb", "unknown unit"), ("+5", "not a number"), ("", "not a number"),
    ("99999999999999999999", "Java long"), ("8388608t", "Java long")])
def test_conf_bytes_rejects_what_spark_rejects(text, why):
    with pytest.raises(ValueError, match=why):
        conf_bytes(text)


@pytest.mark.spark
def test_units_agree_with_the_jvm(spark):
    """show_bytes against `Utils.bytesToString`, printed_count against `Statistics`' BigDecimal,
    conf_bytes against SQLConf's own parse, on the installed PySpark."""
    _, session = spark
    jvm = session._jvm
    sizes = [0, 1, 1023, 2047, 2048, 2304, 9574, 9575, 9676, 9677, MIB - 1, MIB, 2 * MIB - 52,
             480000, 5 * GIB + 12345, 3 * TIB + 7, 1 << 53, 2047 * PIB, 5 * EIB, (1 << 63) - 1]
    sizes += [(n * 7919) ** 2 % (1 << 62) for n in range(1, 200)]
    utils = jvm.org.apache.spark.util.Utils
    for n in sizes:
        assert show_bytes(n) == utils.bytesToString(n), n
    for n in [1, 7, 400, 999, 1000, 9994, 9995, 19950, 20049, 20050, 12345678, 10 ** 12 - 1]:
        # Range's estimate: rowCount n, sizeInBytes 8n, printed by Statistics.simpleString
        printed = session.range(n)._jdf.queryExecution().optimizedPlan().stats().toString()
        stats = parse_statistics(printed)
        assert stats.rows.low <= n <= stats.rows.high, printed
        assert stats.size.low <= 8 * n <= stats.size.high, printed
    conf = session._jsparkSession.sessionState().conf().clone()
    key = "spark.sql.autoBroadcastJoinThreshold"
    version = tuple(int(p) for p in session.version.split(".")[:2])
    for text, value in CONF_READS:
        if "i" in text.lower() and version < (4, 2):
            continue  # KiB-style suffixes are read from Spark 4.2 on (SPARK-55051)
        conf.setConfString(key, text)
        assert conf.autoBroadcastJoinThreshold() == value, text


# -- Spark's "no estimate" size -----------------------------------------------------------------


@pytest.mark.parametrize("text, unknown", [
    ("8.0 EiB", True), ("8.0 EB", True), (str(LONG_MAX), True), (show_bytes(LONG_MAX), True),
    ("7.9 EiB", False), ("8.1 EiB", False), ("8.0 PiB", False), (str(LONG_MAX - 1), False),
    ("168.0 B", False), ("not a size", False)])
def test_long_max_bytes_is_an_unknown_size(text, unknown):
    assert is_unknown_size(text) is unknown


def test_statistics_of_unknown_size_give_no_size_but_keep_the_rows():
    stats = parse_statistics("sizeInBytes=8.0 EiB, rowCount=3")
    assert stats.size is None
    assert stats.rows == Size(3, 3)
    assert parse_statistics("sizeInBytes=7.9 EiB").size is not None


def test_a_result_stage_s_unknown_size_in_text_and_json():
    """A real event log whose ResultQueryStage prints Statistics(sizeInBytes=8.0 EiB): the tree
    and the short statistics say unknown; the JSON keeps Spark's text and marks it."""
    from aqe_inspect import api
    from aqe_inspect.formats import views
    from aqe_inspect.formats.node_json import node_fields

    path = SAMPLE_PLANS / "spark-4.3.0" / "local_read" / "eventlog.json"
    stages = [node for query in api.read_document(str(path)).queries for node in query.root.walked()
              if node.name == "ResultQueryStage" and node.statistics]
    assert stages and all(is_unknown_size(s.statistics.split("=", 1)[1]) for s in stages)
    stage = stages[0]
    assert views.short_statistics(stage.statistics) == \
        "data size unknown (Spark's 8.0 EiB: no estimate)"
    assert "8.0 EiB: no estimate" in views.statistics_text(stage.statistics)
    assert views.statistics_text("sizeInBytes=168.0 B, rowCount=7") == \
        "sizeInBytes=168.0 B, rowCount=7"
    fields = node_fields(stage)
    assert fields["statistics"] == "sizeInBytes=8.0 EiB"
    assert fields["statistics_size_unknown"] is True
