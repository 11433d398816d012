"""Validators for the machine-readable reports, against the schemas CI systems publish.

Two checks, each loading its schema once (on first use) from ``tests/fixtures/schemas/``, where
``SOURCES.json`` says where every file comes from:

``validate_sarif(document)``
    A SARIF log, as ``json.loads`` returns it, against the OASIS SARIF 2.1.0 Errata 01 JSON schema,
    kept verbatim. The schema declares JSON Schema draft-04, so it is applied with the validator
    class it declares (the only differences from draft-07 that matter elsewhere, ``id`` versus
    ``$id`` and boolean ``exclusiveMinimum``, do not occur in it). Its three string formats are
    checked with the standard library: ``uri`` (absolute: a scheme, then RFC 3986 characters),
    ``uri-reference`` (RFC 3986 characters only: no spaces, no backslashes) and ``date-time``
    (RFC 3339).

``validate_junit(xml_text)``
    A JUnit XML report against ``junit-10.xsd``, the schema the Jenkins xUnit plugin validates JUnit
    reports with. That schema types every count as ``xs:string``, so the fields CI systems read as
    numbers are then checked one by one: the root is ``<testsuites>`` or ``<testsuite>`` (the XSD
    accepts any of its global elements as the root, ``<failure/>`` included); ``tests``,
    ``failures``, ``errors`` and ``skipped`` are non-negative integers that equal what the element
    holds (testcases, and testcases with a ``<failure>``, ``<error>`` or ``<skipped>`` child,
    counted through nested suites); a testcase's ``time`` is a non-negative decimal.

Both raise ``AssertionError`` naming every violation with its path in the document.
"""

from __future__ import annotations

import datetime
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator
from xml.etree import ElementTree

SCHEMAS = Path(__file__).resolve().parent / "fixtures" / "schemas"
SARIF_SCHEMA = SCHEMAS / "sarif-schema-2.1.0.json"
JUNIT_SCHEMA = SCHEMAS / "junit-10.xsd"

# RFC 3986: unreserved / gen-delims / sub-delims characters, or a percent-encoded octet.
_URI_REFERENCE = re.compile(r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*")
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
# RFC 3339 section 5.6 date-time.
_DATE_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?"
                        r"(?:[Zz]|[+-](\d{2}):(\d{2}))")
_COUNT = re.compile(r"\d+")
_DECIMAL = re.compile(r"\d+(?:\.\d+)?")
# Count attribute -> the testcase child that the count counts ("tests" counts every testcase).
_COUNTED = {"tests": None, "failures": "failure", "errors": "error", "skipped": "skipped"}
_MAX_MESSAGE = 300


def validate_sarif(document: dict) -> None:
    """Raise AssertionError listing every way ``document`` breaks the SARIF 2.1.0 schema."""
    problems = [f"{_json_path(error.absolute_path)}: {_sarif_message(error)}"
                for error in _sarif_validator().iter_errors(document)]
    if problems:
        raise AssertionError("SARIF log does not validate against sarif-schema-2.1.0.json:\n  "
                             + "\n  ".join(sorted(problems)))


def validate_junit(xml_text: str) -> None:
    """Raise AssertionError listing every way ``xml_text`` breaks junit-10.xsd or its counts."""
    import xmlschema

    if not xml_text.lstrip().startswith("<"):  # xmlschema would take other text for a path or URL
        raise AssertionError(f"JUnit XML is not well-formed: no markup in {xml_text[:40]!r}")
    try:
        resource = xmlschema.XMLResource(xml_text)
    except (ElementTree.ParseError, ValueError, xmlschema.XMLResourceError) as error:
        raise AssertionError(f"JUnit XML is not well-formed: {error}") from None
    problems = [f"{error.path or '/'}: {error.reason}"
                for error in _junit_schema().iter_errors(resource)]
    problems.extend(_junit_field_problems(resource.root))
    if problems:
        raise AssertionError("JUnit XML does not validate against junit-10.xsd:\n  "
                             + "\n  ".join(problems))


@lru_cache(maxsize=None)
def _sarif_validator() -> Any:
    import jsonschema

    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    checker = jsonschema.FormatChecker(formats=())
    checker.checks("uri")(_is_uri)
    checker.checks("uri-reference")(_is_uri_reference)
    checker.checks("date-time")(_is_date_time)
    return cls(schema, format_checker=checker)


@lru_cache(maxsize=None)
def _junit_schema() -> Any:
    import xmlschema

    return xmlschema.XMLSchema10(str(JUNIT_SCHEMA))


def _is_uri_reference(value: object) -> bool:
    return not isinstance(value, str) or _URI_REFERENCE.fullmatch(value) is not None


def _is_uri(value: object) -> bool:
    return not isinstance(value, str) or (_URI_SCHEME.match(value) is not None
                                          and _is_uri_reference(value))


def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    match = _DATE_TIME.fullmatch(value)
    if match is None:
        return False
    year, month, day, hour, minute, second, off_hour, off_minute = match.groups()
    try:  # second 60 is a leap second; the offset must be a real one
        datetime.datetime(int(year), int(month), int(day), int(hour), int(minute),
                          min(int(second), 59))
        datetime.time(int(off_hour or 0), int(off_minute or 0))
    except ValueError:
        return False
    return True


def _json_path(path: Any) -> str:
    return "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


def _sarif_message(error: Any) -> str:
    message = _short(error.message)
    if error.context:  # anyOf / oneOf: say what each alternative missed
        reasons = sorted({_short(sub.message) for sub in error.context})
        message += " (" + "; ".join(reasons) + ")"
    return message


def _short(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "..."


def _junit_field_problems(root: Any) -> Iterator[str]:
    if root.tag not in ("testsuites", "testsuite"):
        yield f"/{root.tag}: the root must be <testsuites> or <testsuite>"
        return
    suites = [root] if root.tag == "testsuite" else [root, *root.iter("testsuite")]
    paths = {root: f"/{root.tag}"}
    for parent in root.iter():
        for index, child in enumerate(parent):
            paths[child] = f"{paths[parent]}/{child.tag}[{index + 1}]"
    for suite in suites:
        yield from _count_problems(suite, paths[suite])
    for case in root.iter("testcase"):
        time = case.get("time")
        if time is not None and _DECIMAL.fullmatch(time) is None:
            yield f"{paths[case]}: time={time!r} is not a non-negative decimal number"


def _count_problems(suite: Any, path: str) -> Iterator[str]:
    cases = list(suite.iter("testcase"))
    for attribute, outcome in _COUNTED.items():
        value = suite.get(attribute)
        if value is None:
            continue
        if _COUNT.fullmatch(value) is None:
            yield f"{path}: {attribute}={value!r} is not a non-negative integer"
            continue
        held = len(cases) if outcome is None else sum(
            1 for case in cases if case.find(outcome) is not None)
        if int(value) != held:
            what = "testcases" if outcome is None else f"testcases with <{outcome}>"
            yield f"{path}: {attribute}={value!r} but it holds {held} {what}"
