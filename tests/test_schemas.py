"""The report validators in tests/schemas.py: the shipped schemas are the published ones, valid
reports pass, and each kind of broken report fails naming where it is broken."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from .schemas import JUNIT_SCHEMA, SARIF_SCHEMA, SCHEMAS, validate_junit, validate_sarif

jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("xmlschema")

SOURCES = {entry["file"]: entry
           for entry in json.loads((SCHEMAS / "SOURCES.json").read_text(encoding="utf-8"))}


@pytest.mark.parametrize("path", [SARIF_SCHEMA, JUNIT_SCHEMA], ids=lambda p: p.name)
def test_schema_files_are_the_published_bytes(path: Path) -> None:
    data = path.read_bytes()
    entry = SOURCES[path.name]
    assert len(data) == entry["bytes"]
    assert hashlib.sha256(data).hexdigest() == entry["sha256"]
    git_blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    assert git_blob == entry["git_blob"]


def test_sarif_schema_is_the_errata01_schema_and_a_valid_schema() -> None:
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    assert schema["id"].endswith("/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
    assert jsonschema.validators.validator_for(schema) is jsonschema.Draft4Validator
    jsonschema.Draft4Validator.check_schema(schema)
    jsonschema.Draft7Validator.check_schema(schema)


# ---------------------------------------------------------------- SARIF


def minimal_sarif() -> dict:
    """A SARIF log shaped as a check report: one run, one rule fully described, one result."""
    return {
        "$schema": "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
                   "sarif-schema-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "aqe-inspect",
                "version": "0.1.0",
                "informationUri": "https://example.org/aqe-inspect",
                "rules": [{
                    "id": "AQE001",
                    "name": "ExpectedSortMergeJoinToBroadcast",
                    "shortDescription": {"text": "Expected rewrite did not happen."},
                    "fullDescription": {"text": "AQE kept the SortMergeJoin."},
                    "help": {"text": "Check spark.sql.adaptive.enabled.",
                             "markdown": "Check `spark.sql.adaptive.enabled`."},
                    "helpUri": "https://spark.apache.org/docs/latest/sql-performance-tuning.html",
                    "properties": {"tags": ["aqe", "join"]},
                }],
            }},
            "invocations": [{"executionSuccessful": True,
                             "startTimeUtc": "2024-05-01T12:00:00.250Z"}],
            "results": [{
                "ruleId": "AQE001",
                "ruleIndex": 0,
                "level": "error",
                "message": {"text": "SortMergeJoin at line 7 was not rewritten."},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": "sample_plans/q3%20final.txt",
                                         "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": 7, "startColumn": 1},
                }}],
            }],
        }],
    }


def sarif_result(log: dict) -> dict:
    return log["runs"][0]["results"][0]


def sarif_rule(log: dict) -> dict:
    return log["runs"][0]["tool"]["driver"]["rules"][0]


def sarif_region(log: dict) -> dict:
    return sarif_result(log)["locations"][0]["physicalLocation"]["region"]


def sarif_artifact(log: dict) -> dict:
    return sarif_result(log)["locations"][0]["physicalLocation"]["artifactLocation"]


def test_minimal_sarif_log_is_valid() -> None:
    validate_sarif(minimal_sarif())


@pytest.mark.parametrize("edit", [
    lambda log: sarif_artifact(log).update(uri="file:///tmp/plans/q3.txt"),
    lambda log: sarif_artifact(log).update(uri="../plans/q3.txt"),
    lambda log: log["runs"][0].update(results=[]),
    lambda log: sarif_result(log).update(message={"id": "default", "arguments": ["x"]}),
    lambda log: sarif_result(log).pop("locations"),
    lambda log: log["runs"][0]["invocations"][0].update(startTimeUtc="2024-05-01T12:00:00+02:00"),
], ids=["absolute-file-uri", "relative-uri", "no-results", "message-by-id", "no-locations",
        "time-with-offset"])
def test_sarif_variants_that_stay_valid(edit: Callable[[dict], Any]) -> None:
    log = minimal_sarif()
    edit(log)
    validate_sarif(log)


SARIF_BREAKS = {
    "missing-version": (lambda log: log.pop("version"), "$: 'version' is a required property"),
    "wrong-version": (lambda log: log.update(version="2.0.0"), "$.version: '2.0.0' is not one of"),
    "missing-runs": (lambda log: log.pop("runs"), "$: 'runs' is a required property"),
    "run-without-tool": (lambda log: log["runs"][0].pop("tool"),
                         "$.runs[0]: 'tool' is a required property"),
    "driver-without-name": (lambda log: log["runs"][0]["tool"]["driver"].pop("name"),
                            "$.runs[0].tool.driver: 'name' is a required property"),
    "level-fatal": (lambda log: sarif_result(log).update(level="fatal"),
                    "$.runs[0].results[0].level: 'fatal' is not one of"),
    "start-line-0": (lambda log: sarif_region(log).update(startLine=0),
                     "$.runs[0].results[0].locations[0].physicalLocation.region.startLine: "
                     "0 is less than the minimum of 1"),
    "start-line-string": (lambda log: sarif_region(log).update(startLine="7"),
                          ".region.startLine: '7' is not of type 'integer'"),
    "result-without-message": (lambda log: sarif_result(log).pop("message"),
                               "$.runs[0].results[0]: 'message' is a required property"),
    "message-without-text-or-id": (lambda log: sarif_result(log).update(message={}),
                                   "'text' is a required property"),
    "unknown-result-property": (lambda log: sarif_result(log).update(severity="high"),
                                "$.runs[0].results[0]: Additional properties are not allowed"),
    "rule-without-id": (lambda log: sarif_rule(log).pop("id"),
                        ".rules[0]: 'id' is a required property"),
    "short-description-as-string": (lambda log: sarif_rule(log).update(shortDescription="x"),
                                    ".rules[0].shortDescription: 'x' is not of type 'object'"),
    "help-without-text": (lambda log: sarif_rule(log).update(help={"markdown": "only"}),
                          ".rules[0].help: 'text' is a required property"),
    "relative-help-uri": (lambda log: sarif_rule(log).update(helpUri="docs/rules.md"),
                          ".rules[0].helpUri: 'docs/rules.md' is not a 'uri'"),
    "windows-path-as-uri": (lambda log: sarif_artifact(log).update(uri="C:\\plans\\q3.txt"),
                            ".artifactLocation.uri: 'C:\\\\plans\\\\q3.txt' is not a "
                            "'uri-reference'"),
    "space-in-uri": (lambda log: sarif_artifact(log).update(uri="plans/q3 final.txt"),
                     ".artifactLocation.uri: 'plans/q3 final.txt' is not a 'uri-reference'"),
    "bad-start-time": (lambda log: log["runs"][0]["invocations"][0].update(
                           startTimeUtc="2024-13-01T12:00:00Z"),
                       ".startTimeUtc: '2024-13-01T12:00:00Z' is not a 'date-time'"),
    "invocation-without-success": (lambda log: log["runs"][0]["invocations"][0].pop(
                                       "executionSuccessful"),
                                   "$.runs[0].invocations[0]: 'executionSuccessful' is a "
                                   "required property"),
    "rule-index-below-minus-one": (lambda log: sarif_result(log).update(ruleIndex=-2),
                                   ".ruleIndex: -2 is less than the minimum of -1"),
}


@pytest.mark.parametrize("name", SARIF_BREAKS)
def test_broken_sarif_fails_with_its_path(name: str) -> None:
    edit, expected = SARIF_BREAKS[name]
    log = minimal_sarif()
    edit(log)
    with pytest.raises(AssertionError) as caught:
        validate_sarif(log)
    assert expected in str(caught.value)


def test_sarif_reports_every_problem_at_once() -> None:
    log = minimal_sarif()
    sarif_result(log).update(level="fatal")
    sarif_region(log).update(startLine=0)
    with pytest.raises(AssertionError) as caught:
        validate_sarif(log)
    assert str(caught.value).count("\n  $") == 2


def test_sarif_validation_does_not_change_the_document() -> None:
    log = minimal_sarif()
    before = copy.deepcopy(log)
    validate_sarif(log)
    assert log == before


# ---------------------------------------------------------------- JUnit

VALID_JUNIT = """\
<?xml version="1.0" encoding="utf-8"?>
<testsuites name="aqe-inspect check" tests="3" failures="1" errors="0" time="0.042">
  <testsuite name="sample_plans/q3.txt" tests="3" failures="1" errors="0" skipped="1"
             time="0.042" timestamp="2024-05-01T12:00:00" hostname="ci">
    <properties>
      <property name="spark.version" value="3.5.1"/>
    </properties>
    <testcase classname="sample_plans.q3" name="smj-to-bhj at line 7" time="0.010">
      <failure type="ExpectedRewriteMissing" message="SortMergeJoin was not rewritten">line 7:
SortMergeJoin [id#1], [id#2], Inner</failure>
    </testcase>
    <testcase classname="sample_plans.q3" name="coalesced at line 12" time="0.002"/>
    <testcase classname="sample_plans.q3" name="skew-join" time="0">
      <skipped message="no join in this plan"/>
      <system-out>nothing to check</system-out>
    </testcase>
    <system-out>read 1 plan</system-out>
  </testsuite>
</testsuites>
"""


def test_valid_junit_report_passes() -> None:
    validate_junit(VALID_JUNIT)


def test_single_testsuite_root_passes() -> None:
    validate_junit('<testsuite name="q" tests="1" failures="0" errors="0">'
                   '<testcase name="coalesced"/></testsuite>')


def test_empty_testsuites_passes() -> None:
    validate_junit('<testsuites tests="0" failures="0" errors="0"/>')


JUNIT_BREAKS = {
    "testcase-without-name": (('name="coalesced at line 12" ', ""),
                              "missing required attribute 'name'"),
    "failure-directly-in-testsuite": (("    <system-out>read 1 plan</system-out>",
                                       "    <failure message='x'/>"),
                                      "Unexpected child with tag 'failure'"),
    "failure-inside-failure": (('message="SortMergeJoin was not rewritten">',
                                'message="SortMergeJoin was not rewritten"><failure/>'),
                               "testcase[1]/failure: Unexpected child with tag 'failure'"),
    "non-numeric-tests": (('tests="3" failures="1" errors="0" skipped',
                           'tests="three" failures="1" errors="0" skipped'),
                          "tests='three' is not a non-negative integer"),
    "negative-failures": (('tests="3" failures="1" errors="0" time',
                           'tests="3" failures="-1" errors="0" time'),
                          "failures='-1' is not a non-negative integer"),
    "tests-miscounted": (('tests="3" failures="1" errors="0" skipped',
                          'tests="2" failures="1" errors="0" skipped'),
                         "tests='2' but it holds 3 testcases"),
    "failures-miscounted": (('tests="3" failures="1" errors="0" time',
                             'tests="3" failures="0" errors="0" time'),
                            "failures='0' but it holds 1 testcases with <failure>"),
    "skipped-miscounted": (('skipped="1"', 'skipped="0"'),
                           "skipped='0' but it holds 1 testcases with <skipped>"),
    "testsuite-without-tests": (('tests="3" failures="1" errors="0" skipped',
                                 'failures="1" errors="0" skipped'),
                                "missing required attribute 'tests'"),
    "testsuite-without-errors": (('errors="0" skipped', 'skipped'),
                                 "missing required attribute 'errors'"),
    "time-with-4-decimals": (('skipped="1"\n             time="0.042"',
                              'skipped="1"\n             time="0.0420"'),
                             "attribute time='0.0420'"),
    "testcase-time-not-a-number": (('time="0.002"', 'time="2ms"'),
                                   "time='2ms' is not a non-negative decimal number"),
    "testcase-file-attribute": (('name="coalesced at line 12"',
                                 'name="coalesced at line 12" file="q3.txt"'),
                                "'file' attribute not allowed"),
    "property-without-value": ((' value="3.5.1"', ""), "missing required attribute 'value'"),
    "skipped-on-testsuites": (('errors="0" time="0.042">\n  <testsuite',
                               'errors="0" skipped="1" time="0.042">\n  <testsuite'),
                              "'skipped' attribute not allowed"),
}


@pytest.mark.parametrize("name", JUNIT_BREAKS)
def test_broken_junit_fails(name: str) -> None:
    (old, new), expected = JUNIT_BREAKS[name]
    assert VALID_JUNIT.count(old) == 1, "the edit must hit exactly one place"
    with pytest.raises(AssertionError) as caught:
        validate_junit(VALID_JUNIT.replace(old, new))
    assert expected in str(caught.value)


@pytest.mark.parametrize("text, expected", [
    ("<failure message='x'/>", "the root must be <testsuites> or <testsuite>"),
    ("<testsuites><testsuite name='q' tests='0'", "not well-formed"),
    ("", "not well-formed"),
    ("report.xml", "no markup in 'report.xml'"),
], ids=["failure-as-root", "cut-off", "empty", "a-file-name"])
def test_junit_that_is_not_a_report_fails(text: str, expected: str) -> None:
    with pytest.raises(AssertionError) as caught:
        validate_junit(text)
    assert expected in str(caught.value)


def test_pytest_junit_report_passes(tmp_path: Path) -> None:
    """A report from a widely used real emitter (pytest's --junitxml, read by Jenkins and GitLab)
    passes, failures and skips included: the checks ask no more than CI systems get."""
    (tmp_path / "test_sample.py").write_text(
        "import pytest\n"
        "def test_ok():\n    print('out')\n"
        "def test_bad():\n    assert 1 == 2\n"
        "@pytest.mark.skip(reason='not here')\n"
        "def test_skip():\n    pass\n",
        encoding="utf-8")
    report = tmp_path / "report.xml"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          f"--junitxml={report}", "test_sample.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    text = report.read_text(encoding="utf-8")
    assert "<failure" in text and "<skipped" in text
    validate_junit(text)
