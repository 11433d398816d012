"""sarif: SARIF 2.1.0 (GitHub code scanning, IDEs). A rule per rewrite kind and direction
(`lost/smj-to-bhj`, `replaced/coalesced`, `gained/coalesced`); a result per matched execution
and kind that changed, at the new run's file (and the execution's line where the input has
one): an error where the gate fails, else a warning (lost) or a note (replaced: a stronger
rewrite took it over, with by what in its properties; gained). A matched execution of either
run that had not finished is one result of the rule `unfinished`, of kind `open` (the tool
could not tell: no verdict, which fails the comparison) and level `error`, instead of its lost
and gained results. A size decision both runs took the same way whose margin shrank (nearer
to flipping) is a result of the rule `margin-shrank`, level `note`, with both percents in its
properties. Executions of one run only are listed in the run's properties. Written with the
JSON writer, so every string is JSON-escaped."""

from __future__ import annotations

from typing import Any, Dict, List, TextIO

from ...rewrites.locations import Location
from ...version import __version__
from ..json_writer import write_json
from ..sarif import AQE_DOCS, SCHEMA_URI, physical
from .common import kinds_text, margin_lines, pair_title, settings_lines

DIRECTIONS = ("lost", "gained")
#: Every rule's direction, in the order the rules are listed.
RULE_DIRECTIONS = ("lost", "replaced", "gained")
#: The rule of a matched execution that had not finished (listed after the directions').
UNFINISHED = "unfinished"
#: The rule of a size decision whose margin shrank between the runs (listed last).
MARGIN_SHRANK = "margin-shrank"


def _rules(kinds) -> List[Dict[str, Any]]:
    found = []
    for direction in RULE_DIRECTIONS:
        for kind in kinds:
            if direction == "replaced":
                short = f"A stronger rewrite took over AQE's {kind} rewrite"
                full = (f"An execution of the new run no longer makes the {kind} rewrite "
                        "that its counterpart in the old run made, because a stronger one "
                        "took its place at the same join (a coalesced read of a join's input "
                        "read locally once the join became a broadcast).")
            else:
                verb = "no longer makes" if direction == "lost" else "now makes"
                short = f"AQE {verb} the {kind} rewrite"
                full = (f"An execution of the new run {verb} the {kind} rewrite that its "
                        "counterpart in the old run "
                        f"{'made' if direction == 'lost' else 'did not'}.")
            found.append({
                "id": f"{direction}/{kind}",
                "name": f"{direction.capitalize()}Rewrite",
                "shortDescription": {"text": short},
                "fullDescription": {"text": full},
                "helpUri": AQE_DOCS,
                "properties": {"tags": ["spark", "aqe", "compare"]},
            })
    found.append({
        "id": UNFINISHED,
        "name": "UnfinishedExecution",
        "shortDescription": {"text": "An execution had not finished: no verdict"},
        "fullDescription": {"text": "An execution of the old or the new run had not finished "
                                    "where its input ends (a cut or in-progress log, an "
                                    "isFinalPlan=false plan): what AQE made so far is no "
                                    "verdict on what it would have made."},
        "helpUri": AQE_DOCS,
        "properties": {"tags": ["spark", "aqe", "compare"]},
    })
    found.append({
        "id": MARGIN_SHRANK,
        "name": "MarginShrank",
        "shortDescription": {"text": "A size decision's margin shrank"},
        "fullDescription": {"text": "A size decision of AQE (a join side against the broadcast "
                                    "threshold, the largest partition against the skew bar or "
                                    "the local-map threshold) went the same way in both runs, "
                                    "but the new run's figure lies nearer to its threshold, by "
                                    "a percentage point or more: a plan nearer to flipping."},
        "helpUri": AQE_DOCS,
        "properties": {"tags": ["spark", "aqe", "compare", "margin"]},
    })
    return found


def _result(rule_index: Dict[str, int], direction: str, kind: str, count: int, level: str,
            message: str, location: Location) -> Dict[str, Any]:
    rule = f"{direction}/{kind}"
    result: Dict[str, Any] = {"ruleId": rule, "ruleIndex": rule_index[rule], "level": level,
                              "message": {"text": message},
                              "properties": {"count": count}}
    place = physical(location)
    if place is not None:
        result["locations"] = [place]
    return result


def write(comparison, stream: TextIO) -> None:
    rules = _rules(comparison.kinds)
    index = {rule["id"]: number for number, rule in enumerate(rules)}
    tripped = {id(item): reasons for item, reasons in comparison.tripped}
    unfinished = {id(pair) for pair in comparison.unfinished}
    results: List[Dict[str, Any]] = []
    for item in comparison.items:
        if id(item) in unfinished:
            result = {"ruleId": UNFINISHED, "ruleIndex": index[UNFINISHED], "level": "none",
                      # SARIF's kind: `open`, the tool could not tell (as `check` says it);
                      # a result of another kind than `fail` is at level `none` (3.27.9).
                      "kind": "open",
                      "message": {"text": "\n".join([
                          f"{pair_title(item)}: unfinished, no verdict", *item.unfinished,
                          f"lost so far: {kinds_text(item.lost)}",
                          f"gained so far: {kinds_text(item.gained)}",
                          *settings_lines(item)])},
                      "properties": {"status": "unfinished",
                                     "unfinished": list(item.unfinished)}}
            place = physical(Location(item.new.source, item.new.line))
            if place is not None:
                result["locations"] = [place]
            results.append(result)
            continue
        gate = tripped.get(id(item), ())
        if comparison.fleet:
            where = Location(comparison.new.source)
            title = f"{item.app_name}: {item.description}"
        else:
            where = Location(item.new.source, item.new.line)
            title = pair_title(item)
        for direction in DIRECTIONS:
            for kind, count in getattr(item, direction).items():
                if not count:
                    continue
                fails = any(rule in gate for rule in (direction, "any", f"{direction}:{kind}",
                                                      f"any:{kind}"))
                level = "error" if fails else "warning" if direction == "lost" else "note"
                unit = " rate points" if comparison.fleet else ""
                lines = [f"{title}: {direction} {kind} ({count}{unit})"]
                if not comparison.fleet:
                    lines.extend(settings_lines(item))
                    for why_kind, reasons in item.new.why_not:
                        if why_kind == kind and direction == "lost":
                            lines.extend(f"why not: {reason}" for reason in reasons)
                results.append(_result(index, direction, kind, count, level,
                                       "\n".join(lines), where))
        if not comparison.fleet:
            for (before, after), line in zip(item.margins_shrank, margin_lines(item)):
                result = {"ruleId": MARGIN_SHRANK, "ruleIndex": index[MARGIN_SHRANK],
                          "level": "note", "message": {"text": f"{title}: {line}"},
                          "properties": {"kind": after.kind, "config": after.config,
                                         "old_percent": round(before.percent, 2),
                                         "new_percent": round(after.percent, 2),
                                         "side": after.side}}
                place = physical(where)
                if place is not None:
                    result["locations"] = [place]
                results.append(result)
        for replacement in item.replaced:
            result = _result(index, "replaced", replacement.kind, replacement.count, "note",
                             "\n".join([f"{title}: {replacement.text}",
                                        f"at {', '.join(replacement.joins)} of the new run",
                                        *settings_lines(item)]), where)
            result["properties"].update({"by": replacement.by,
                                         "because": replacement.because,
                                         "joins": list(replacement.joins)})
            results.append(result)
    for summary, text in comparison.unpartnered_executions:
        result = {"ruleId": UNFINISHED, "ruleIndex": index[UNFINISHED], "level": "none",
                  "kind": "open", "message": {"text": f"unfinished, no verdict: {text}"},
                  "properties": {"status": "unfinished", "unfinished": [text]}}
        place = physical(Location(summary.source, summary.line))
        if place is not None:
            result["locations"] = [place]
        results.append(result)
    unmatched = {"old": [], "new": []} if comparison.fleet else {
        "old": [s.label for s in comparison.unmatched_old],
        "new": [s.label for s in comparison.unmatched_new]}
    run: Dict[str, Any] = {
        "tool": {"driver": {"name": "aqe-inspect", "version": __version__,
                            "informationUri": AQE_DOCS, "rules": rules}},
        "results": results,
        "invocations": [{
            "executionSuccessful": True,
            "toolExecutionNotifications": [{"level": "warning", "message": {"text": note}}
                                           for note in comparison.notes],
        }],
        "properties": {"old": comparison.old.source, "new": comparison.new.source,
                       "fail_on": comparison.gate.text, "verdict": comparison.verdict,
                       "unmatched": unmatched},
    }
    write_json({"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}, stream)
