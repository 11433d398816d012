"""sarif: SARIF 2.1.0, the static-analysis format GitHub code scanning, Azure DevOps and IDEs
read. One run; the tool's rules are the rewrite kinds, each with its Spark rule, summary and
the detector's own help text. A check gives one `error` result per unmet expectation, located
at the plan's line, with the expectation's own line (in aqe-expect.toml) as a related location;
a diff gives one `note` result per rewrite found. Paths under the working directory are
relative URIs (code scanning resolves them against the checkout), others `file://` URIs.
"""

from __future__ import annotations

import inspect
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, TextIO
from urllib.parse import quote

from ..version import __version__
from ..expectations.check import CheckResult
from ..rewrites.locations import Location, rewrite_location
from .json_writer import write_json
from .markdown_text import code_block, md
from . import Format

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
AQE_DOCS = "https://spark.apache.org/docs/latest/sql-performance-tuning.html#adaptive-query-execution"


def rules() -> List[Dict[str, Any]]:
    from ..rewrites.detectors import DETECTORS

    found = []
    for detector in DETECTORS:
        doc = inspect.cleandoc(detector.doc)
        first = doc.split("\n\n")[1] if "\n\n" in doc else doc
        found.append({
            "id": detector.kind,
            "name": type(detector).__name__,
            "shortDescription": {"text": detector.summary},
            "fullDescription": {"text": " ".join(first.split())},
            "help": {"text": doc},
            "helpUri": AQE_DOCS,
            "properties": {"spark_rule": detector.spark_rule, "tags": ["spark", "aqe"]},
        })
    return found


def artifact(location: Location) -> Optional[Dict[str, Any]]:
    if not location.has_file:
        return None
    path = location.path
    if path.startswith("/") or re.match(r"[A-Za-z]:/", path):
        return {"uri": Path(path).as_uri()}
    # The file name's bytes, percent-encoded: a name that is no UTF-8 (held with surrogate
    # escapes) is the URI of the very file, not an encoding error.
    return {"uri": quote(os.fsencode(path), safe="/")}


def physical(location: Optional[Location], message: str = "") -> Optional[Dict[str, Any]]:
    found = artifact(location) if location is not None else None
    if found is None:
        return None
    place: Dict[str, Any] = {"physicalLocation": {"artifactLocation": found}}
    if location.line:
        place["physicalLocation"]["region"] = {"startLine": location.line}
    if message:
        place["message"] = {"text": message}
    return place


#: The rule of a `check --snapshot` mismatch (listed only in a log that holds one).
SNAPSHOT_RULE = {
    "id": "snapshot",
    "name": "PlanSnapshot",
    "shortDescription": {"text": "The final plan or AQE's rewrites differ from the snapshot"},
    "fullDescription": {"text": "The query's final plan, normalised (ids renumbered; paths, "
                                "sizes and partition counts masked), or the rewrites AQE made "
                                "differ from the snapshot file given to check --snapshot."},
    "help": {"text": "Review the diff; take the snapshot anew with aqe-inspect snapshot PLAN "
                     "-o FILE when the change is wanted."},
    "helpUri": AQE_DOCS,
    "properties": {"tags": ["spark", "aqe", "snapshot"]},
}


def _log(results: List[Dict[str, Any]], notes, properties: Dict[str, Any]) -> Dict[str, Any]:
    rule_list = rules()
    if any(result["ruleId"] == SNAPSHOT_RULE["id"] for result in results):
        rule_list.append(SNAPSHOT_RULE)
    index = {rule["id"]: number for number, rule in enumerate(rule_list)}
    for result in results:
        result["ruleIndex"] = index[result["ruleId"]]
    run: Dict[str, Any] = {
        "tool": {"driver": {"name": "aqe-inspect", "version": __version__,
                            "informationUri": AQE_DOCS, "rules": rule_list}},
        "results": results,
        "invocations": [{
            "executionSuccessful": True,
            "toolExecutionNotifications": [{"level": "warning", "message": {"text": note}}
                                           for note in notes],
        }],
        "properties": properties,
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


class SarifFormat(Format):
    name = "sarif"
    escapes_json = True

    def write_check(self, result: CheckResult, stream: TextIO) -> None:
        results = []
        for outcome in result.failures:
            expectation = outcome.expectation
            entry: Dict[str, Any] = {
                "ruleId": expectation.kind,
                # SARIF's kind: `fail` a rule broken; `open` the tool could not tell (a
                # query that had not finished), which still fails the check (exit 1). SARIF
                # 2.1.0 (3.27.9) has a result of any other kind than `fail` at level `none`.
                "level": "none" if outcome.unfinished else "error",
                "kind": "open" if outcome.unfinished else "fail",
                "message": {"text": "\n".join((outcome.message, *(
                    f"why not: {line}" for line in outcome.why_lines())))},
                "properties": {"expectation": outcome.name, "actual": outcome.actual,
                               "status": outcome.status,
                               "queries": list(outcome.query_ids)},
            }
            if outcome.detail:
                entry["message"]["markdown"] = f"{md(outcome.message)}\n\n" \
                                               f"{code_block(outcome.detail, 'diff')}"
                entry["properties"]["detail"] = outcome.detail
            place = physical(outcome.location)
            if place is not None:
                entry["locations"] = [place]
            origin = expectation.origin
            related = physical(Location(origin.file, origin.line),
                               f"the expectation {expectation.text}") if origin.file else None
            if related is not None:
                entry["relatedLocations"] = [{"id": 1, **related}]
            results.append(entry)
        write_json(_log(results, result.notes, {
            "source": result.source, "query_count": result.query_count,
            "expectations": len(result.outcomes), "unmet": len(result.failures),
            "unfinished": len(result.unfinished)}), stream)

    def write_report(self, report, stream: TextIO) -> None:
        results = []
        count = 0
        for query_report in report.queries:
            count += 1
            for rewrite in query_report.rewrites:
                entry: Dict[str, Any] = {
                    "ruleId": rewrite.kind,
                    "level": "note",
                    "message": {"text": rewrite.message},
                    "properties": {"query": query_report.id, "unit": query_report.query.unit,
                                   "evidence": list(rewrite.evidence)},
                }
                place = physical(rewrite_location(query_report, rewrite, report.source))
                if place is not None:
                    entry["locations"] = [place]
                results.append(entry)
        write_json(_log(results, list(report.notes),
                        {"source": report.source, "query_count": count}), stream)


FORMAT = SarifFormat()
