"""junit: JUnit XML, the test report Jenkins, GitLab, Azure DevOps and most CI systems read.

A check is one `<testsuite>` with a `<testcase>` per expectation (with `each`, per expectation
and query) and a `<failure>` in each unmet one: its message, where the expectation was written,
where in the input it failed, and the rewrites the failing queries do hold. A diff is a test
case per query, passing, with its rewrites as the case's output. Times are 0: a check judges a
plan, it does not time one, and a report that differs run to run is no use in a snapshot.
Characters XML 1.0 cannot hold (control characters, lone surrogates) are written escaped.
The output validates against the JUnit schema of Jenkins' xUnit plugin, which takes no `file`
or `line` on a test case: where a failure is in the input is in its text instead.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import List, Optional, TextIO

from ..expectations.check import CheckResult
from ..errors import printable
from ..rewrites.locations import display_path, query_location
from ..rewrites.findings import describe
from . import Format

_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")


def _text(value: object) -> str:
    text = printable(str(value), newlines=True)
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _element(tag: str, parent: Optional[ET.Element] = None, text: Optional[str] = None,
             **attributes: object) -> ET.Element:
    fields = {key.rstrip("_"): _text(value) for key, value in attributes.items()
              if value is not None}
    element = ET.Element(tag, fields) if parent is None else ET.SubElement(parent, tag, fields)
    if text is not None:
        element.text = _text(text)
    return element


def _suite(name: str, tests: int, failures: int, errors: int = 0) -> ET.Element:
    return _element("testsuite", name=name, tests=tests, failures=failures, errors=errors,
                    skipped=0, time="0")


def _write(suite: ET.Element, stream: TextIO) -> None:
    root = _element("testsuites", name="aqe-inspect", tests=suite.get("tests"),
                    failures=suite.get("failures"), errors=suite.get("errors"), time="0")
    root.append(suite)
    ET.indent(root)
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    stream.write(ET.tostring(root, encoding="unicode"))
    stream.write("\n")


def _properties(suite: ET.Element, source: str, application) -> None:
    properties = _element("properties", suite)
    _element("property", properties, name="source", value=source or "<stdin>")
    if application is not None:
        _element("property", properties, name="spark.app.id", value=application.app_id)
        _element("property", properties, name="spark.version", value=application.spark_version)


class JunitFormat(Format):
    name = "junit"

    def write_check(self, result: CheckResult, stream: TextIO) -> None:
        unfinished = len(result.unfinished)
        suite = _suite(f"aqe-inspect check {result.source or '<stdin>'}",
                       len(result.outcomes), len(result.failures) - unfinished, unfinished)
        _properties(suite, result.source, result.application)
        for outcome in result.outcomes:
            expectation = outcome.expectation
            location = outcome.location
            case = _element("testcase", suite, name=outcome.name,
                            classname=f"aqe-inspect.{expectation.kind}", time="0")
            if outcome.passed:
                continue
            detail: List[str] = [outcome.message,
                                 f"expectation written at: {expectation.origin}"]
            if location is not None:
                detail.append(f"input: {location.path or '<stdin>'}"
                              + (f":{location.line}" if location.line else ""))
            for report in outcome.shown:
                detail.append(f"{report.name} rewrites:")
                detail.extend(f"  {r.kind} at {describe(r.final_node) or '-'}: {r.message}"
                              for r in report.rewrites)
                if not report.rewrites:
                    detail.append("  none")
            detail.extend(f"why not: {line}" for line in outcome.why_lines())
            if outcome.detail:
                detail.append(outcome.detail.rstrip("\n"))
            # Unfinished: the test could not run to a verdict (an error), not a failed one.
            _element("error" if outcome.unfinished else "failure", case, "\n".join(detail),
                     message=outcome.message,
                     type="unfinished" if outcome.unfinished else expectation.kind)
        if result.notes:
            _element("system-out", suite, "\n".join(f"note: {n}" for n in result.notes))
        _write(suite, stream)

    def write_report(self, report, stream: TextIO) -> None:
        cases = []
        for query_report in report.queries:  # a stream is read once: keep what is written
            query = query_report.query
            label = (query.execution.description if query.execution is not None
                     else query.label)
            lines = [f"{r.kind} at {describe(r.final_node) or '-'}: {r.message}"
                     for r in query_report.rewrites] or ["no AQE rewrite found"]
            lines += [f"note: {note}" for note in query_report.notes]
            where = query_location(query_report, report.source)
            cases.append((query_report.name + (f": {label}" if label else ""),
                          display_path(where.file), where.line, lines))
        suite = _suite(f"aqe-inspect diff {report.source or '<stdin>'}", len(cases), 0)
        _properties(suite, report.source, report.application)
        for name, file, line, lines in cases:
            case = _element("testcase", suite, name=name, classname="aqe-inspect.diff",
                            time="0")
            _element("system-out", case, "\n".join([f"at {file}" + (f":{line}" if line else ""),
                                                    *lines]))
        if report.notes:
            _element("system-out", suite, "\n".join(f"note: {n}" for n in report.notes))
        _write(suite, stream)


FORMAT = JunitFormat()
