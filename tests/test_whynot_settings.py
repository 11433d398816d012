"""The settings a why-not answer uses: where each value comes from, what a default is worth,
and the user's --conf / --conf-file read as Spark reads them (bad ones are one-line errors)."""

from __future__ import annotations

import pytest

from aqe_inspect.cli import main
from aqe_inspect.errors import InspectError
from aqe_inspect.whynot.settings import (UNKNOWN, Given, Settings, conf_option, read_conf_file,
                                         settings_for)

ADAPTIVE = "spark.sql.adaptive.autoBroadcastJoinThreshold"
STATIC = "spark.sql.autoBroadcastJoinThreshold"


def test_a_recorded_value_wins_over_the_default():
    settings = Settings({ADAPTIVE: Given("-1", "event log")}, complete=True, version="3.5.1")
    found = settings.get(ADAPTIVE)
    assert (found.key, found.value, found.source, found.origin) == (
        ADAPTIVE, "-1", "config", "event log")


def test_the_adaptive_threshold_falls_back_to_the_static_one():
    settings = Settings({STATIC: Given("1MB", "event log")}, complete=True, version="3.5.1")
    found = settings.get(ADAPTIVE)
    assert (found.key, found.value) == (STATIC, "1MB")
    unset = Settings({}, complete=True, version="3.5.1").get(ADAPTIVE)
    assert (unset.key, unset.value, unset.source) == (STATIC, "10MB", "default")
    assert unset.origin == "Spark 3.5 default"


def test_without_complete_settings_a_default_is_not_taken_as_fact():
    found = Settings({}, complete=False, version="3.5.1").get(ADAPTIVE)
    assert found.source == UNKNOWN and found.value is None
    assert found.key == ADAPTIVE  # named by the key asked, with what it would fall back to
    assert "10MB" in (found.default or "")


def test_defaults_follow_the_spark_line():
    early = Settings({}, complete=True, version="3.1.2").get("spark.sql.adaptive.enabled")
    late = Settings({}, complete=True, version="3.2.0").get("spark.sql.adaptive.enabled")
    assert (early.value, late.value) == ("false", "true")


def test_user_settings_complete_the_set_and_override_the_log():
    settings = settings_for({ADAPTIVE: "-1"}, False, "4.0.0", {ADAPTIVE: Given("5MB", "--conf")})
    assert settings.complete
    assert settings.get(ADAPTIVE).value == "5MB"
    assert settings.get("spark.sql.adaptive.skewJoin.enabled").source == "default"


def test_conf_file_reads_java_properties(tmp_path):
    conf = tmp_path / "spark-defaults.conf"
    conf.write_text(
        "# comment\n! also a comment\n\n"
        "spark.sql.adaptive.enabled   true\n"
        "spark.sql.adaptive.autoBroadcastJoinThreshold=20MB\n"
        "spark.sql.adaptive.optimizer.excludedRules : a.B,\\\n    c.D\n"
        "spark.master local[4]\n", encoding="utf-8")
    found = read_conf_file(str(conf))
    assert found["spark.sql.adaptive.enabled"].value == "true"
    assert found[ADAPTIVE].value == "20MB"
    assert found[ADAPTIVE].origin == "spark-defaults.conf:5"
    assert found["spark.sql.adaptive.optimizer.excludedRules"].value == "a.B,c.D"
    assert found["spark.master"].value == "local[4]"


@pytest.mark.parametrize("body, line, words", [
    ("spark.sql.adaptive.autoBroadcastJoinThreshold ten\n", 1, "ten"),
    ("x 1\nspark.sql.adaptive.skewJoin.enabled maybe\n", 2, "true or false"),
    ("spark.sql.adaptive.skewJoin.skewedPartitionFactor five\n", 1, "a number"),
])
def test_a_bad_value_in_a_conf_file_is_named_with_its_line(tmp_path, body, line, words):
    conf = tmp_path / "bad.conf"
    conf.write_text(body, encoding="utf-8")
    with pytest.raises(InspectError) as error:
        read_conf_file(str(conf))
    assert error.value.line == line and words in str(error.value)


def test_binary_and_missing_conf_files_are_errors(tmp_path):
    junk = tmp_path / "junk.conf"
    junk.write_bytes(b"spark.a 1\n\x00\x01\x02")
    with pytest.raises(InspectError, match="binary"):
        read_conf_file(str(junk))
    latin = tmp_path / "latin.conf"
    latin.write_bytes(b"spark.a \xe9\xff\n")
    with pytest.raises(InspectError, match="UTF-8"):
        read_conf_file(str(latin))
    with pytest.raises(InspectError, match="cannot read"):
        read_conf_file(str(tmp_path / "absent.conf"))


def test_conf_option():
    assert conf_option(f"{ADAPTIVE}=10MB") == (ADAPTIVE, "10MB")
    for bad in ("foo", "=1", f"{ADAPTIVE}=lots"):
        with pytest.raises(InspectError):
            conf_option(bad)


@pytest.mark.parametrize("args, words", [
    (["--conf", "foo"], "expected KEY=VALUE"),
    (["--conf-file", "/nonexistent/spark-defaults.conf"], "cannot read"),
    (["--kind", "nonsense"], "not a rewrite kind"),
    (["--format", "xml"], "text or json"),
])
def test_why_rejects_bad_options_in_one_line(capsys, args, words):
    from tests.conftest import SAMPLE_PLANS

    plan = SAMPLE_PLANS / "spark-4.3.0" / "smj_to_bhj_off" / "formatted_after.txt"
    assert main(["why", str(plan), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aqe-inspect: error: ") and words in err
    assert err.count("\n") == 1 and "Traceback" not in err
