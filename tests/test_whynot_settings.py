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


# ---- --conf-file as java.util.Properties.load reads it ---------------------------------------

#: The examples of the Javadoc of `Properties.load(Reader)`, and its rules one by one.
JAVADOC = [
    ("Truth = Beauty\n Truth:Beauty\nTruth                    :Beauty\n",
     [("Truth", "Beauty")] * 3),
    ("fruits                           apple, banana, pear, \\\n"
     "                                  cantaloupe, watermelon, \\\n"
     "                                  kiwi, mango\n",
     [("fruits", "apple, banana, pear, cantaloupe, watermelon, kiwi, mango")]),
    ("cheeses\n", [("cheeses", "")]),
    ("\\:\\=\n", [(":=", "")]),                                    # escaped separators
    ("key\\ with\\ spaces = v\n", [("key with spaces", "v")]),
    ("a\\u0041b = c\\u00e9\\td\\n\n", [("aAb", "c\u00e9\td\n")]),   # \uXXXX, \t, \n
    ("k = \\b\\z\\\"\\'\n", [("k", "bz\"'")]),                    # \ before another char
    ("k = \\ud83d\\ude00\n", [("k", "\U0001F600")]),               # UTF-16 pairs join
    ("  # comment\n\t! comment\n\fk\fv\n", [("k", "v")]),           # space, tab, form feed
    ("# comment \\\nk=v\n", [("k", "v")]),                          # comments do not continue
    ("k=a\\\\\n", [("k", "a\\")]),                                  # 2n backslashes: n
    ("k=a\\\\\\\n  b\n", [("k", "a\\b")]),                          # 2n+1: continued
    ("k=a\\\n#b\n", [("k", "a#b")]),                                # a continued '#' is text
    ("k=a\\\n\nj=b\n", [("k", "a"), ("j", "b")]),                   # a blank line ends it
    ("a\rb\r\nc\n", [("a", ""), ("b", ""), ("c", "")]),             # \r, \r\n, \n
    ("k=a\u2028b\x85c\x0bd\n", [("k", "a\u2028b\x85c\x0bd")]),     # no other terminators
    ("k : = v\n", [("k", "= v")]), ("k==v\n", [("k", "=v")]),
    ("k = v  \n", [("k", "v  ")]),                                  # trailing space kept
    ("k=v\\", [("k", "v")]),                                       # a last lone backslash
]


@pytest.mark.parametrize("text, expected", JAVADOC)
def test_properties_read_as_the_javadoc_says(text, expected):
    from aqe_inspect.whynot.settings import java_properties

    assert [(key, value) for _, key, value in java_properties(text)] == expected


def test_escapes_in_keys_and_values_of_a_conf_file(tmp_path):
    conf = tmp_path / "spark-defaults.conf"
    conf.write_text("spark.sql.adaptive.\\u0065nabled=true\n"
                    f"{ADAPTIVE}=\\u0031\\u0030MB  \n"
                    "spark.sql.adaptive.skewJoin.\\\n    enabled : false\n", encoding="utf-8")
    found = read_conf_file(str(conf))
    assert found["spark.sql.adaptive.enabled"].value == "true"
    assert found[ADAPTIVE].value == "10MB"  # and trimmed, as Spark trims values
    assert found["spark.sql.adaptive.skewJoin.enabled"].value == "false"
    assert found["spark.sql.adaptive.skewJoin.enabled"].origin == "spark-defaults.conf:3"


@pytest.mark.parametrize("body, line, column", [
    ("a=1\nspark.x=\\u00g1\n", 2, 9),
    ("a=1\nb=\\\n   x\\u12", 3, 5),
    ("\\uzzzz=1\n", 1, 1),
])
def test_a_malformed_unicode_escape_is_a_located_one_line_error(tmp_path, capsys, body, line,
                                                                column):
    from tests.conftest import SAMPLE_PLANS

    conf = tmp_path / "bad.conf"
    conf.write_text(body, encoding="utf-8")
    plan = SAMPLE_PLANS / "spark-4.3.0" / "smj_to_bhj_off" / "formatted_after.txt"
    assert main(["why", str(plan), "--conf-file", str(conf)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"aqe-inspect: error: {conf}:{line}:{column}: malformed \\uxxxx")
    assert err.count("\n") == 1


#: Read by the JVM itself: each file's properties, escaped to ASCII one a line, sorted.
JAVA_READER = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

public class ReadProperties {
    static String escape(String s) {
        StringBuilder out = new StringBuilder();
        for (char c : s.toCharArray()) {
            if (c >= 0x21 && c <= 0x7e && c != '\\') out.append(c);
            else out.append(String.format("\\u%04x", (int) c));
        }
        return out.toString();
    }
    public static void main(String[] args) throws Exception {
        for (String name : args) {
            System.out.println("FILE " + name);
            Properties properties = new Properties();
            try (Reader reader = new InputStreamReader(new FileInputStream(name),
                                                       StandardCharsets.UTF_8)) {
                properties.load(reader);
            } catch (IllegalArgumentException e) {
                System.out.println("ERROR");
                continue;
            }
            List<String> lines = new ArrayList<>();
            for (String key : properties.stringPropertyNames())
                lines.add(escape(key) + " " + escape(properties.getProperty(key)));
            Collections.sort(lines);
            for (String line : lines) System.out.println(line);
        }
    }
}
"""

#: What the generated files are made of: every rule's characters, and near misses.
PIECES = ["a", "b", "k", "é", "\U0001F600", " ", "\t", "\f", "\x0b", "=", ":", "#", "!",
          "\\", "\\\\", "\\ ", "\\=", "\\:", "\\#", "\\t", "\\n", "\\r", "\\f", "\\b", "\\z",
          "\\u0041", "\\u00e9", "\\ud83d\\ude00", "\\uD83D", "\\u00", "\\uzz12", "\\u",
          "\n", "\r", "\r\n", "\\\n", "\\\r\n", "\\\n   ", "\n\n", "\n#", "\n!", "\n ",
          "\u2028", "\x85", "spark.sql.adaptive.enabled"]


def java_escaped(text: str) -> str:
    data = text.encode("utf-16-le", "surrogatepass")
    out = []
    for at in range(0, len(data), 2):
        unit = int.from_bytes(data[at:at + 2], "little")
        out.append(chr(unit) if 0x21 <= unit <= 0x7E and unit != 0x5C else f"\\u{unit:04x}")
    return "".join(out)


def test_properties_read_as_the_jvm_reads_them(tmp_path):
    """The JVM's own Properties.load on the Javadoc's cases and 400 generated files (one JVM
    run for them all), against ours: the same properties, or both refusing the file."""
    import os
    import random
    import shutil
    import subprocess

    from aqe_inspect.whynot.settings import PropertiesError, java_properties

    from .conftest import IN_CI

    java = shutil.which("java")
    if java is None:
        if IN_CI:
            pytest.fail("CI=true but java is not on PATH: the JVM comparison cannot run")
        pytest.skip("java is not on PATH: Properties.load cannot be asked (Java 11+ runs the "
                    "reader as a single-file program)")
    chance = random.Random(20261123)
    texts = [text for text, _ in JAVADOC]
    texts += ["".join(chance.choice(PIECES) for _ in range(chance.randint(1, 25)))
              for _ in range(400)]
    paths = []
    for number, text in enumerate(texts):
        path = tmp_path / f"case{number}.properties"
        path.write_bytes(text.encode("utf-8"))
        paths.append(path)
    (tmp_path / "ReadProperties.java").write_text(JAVA_READER, encoding="utf-8")
    result = subprocess.run([java, "-Xshare:auto", str(tmp_path / "ReadProperties.java"),
                             *map(str, paths)], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "JAVA_TOOL_OPTIONS": ""})
    assert result.returncode == 0, result.stderr
    theirs = {}
    for block in result.stdout.split("FILE ")[1:]:
        name, _, rest = block.partition("\n")
        theirs[name] = rest.splitlines()
    assert len(theirs) == len(texts)
    for path, text in zip(paths, texts):
        try:
            found = {}
            for _, key, value in java_properties(text):
                found[key] = value
            ours = sorted(f"{java_escaped(k)} {java_escaped(v)}" for k, v in found.items())
        except PropertiesError:
            ours = ["ERROR"]
        assert ours == theirs[str(path)], repr(text)
