"""From any input to the plans it holds: a clean explain text, a pasted or damaged plan, a
notebook's output, a driver log (log4j lines, Spark 4's JSON records, AQE's own plan
messages). Each plan keeps where it stood in the original text.

    reading.py    bytes -> numbered lines, streamed, with a size guard
    magic.py      a file's first bytes -> event log (compressed, JSON) or text, told cheaply
    skim.py       a log's bytes -> only the lines that can hold a plan (byte searches)
    lines.py      lines -> cleaned lines (log prefixes, JSON records, markers, prompts off)
    extract.py    cleaned lines -> one region per plan (explain output, AQE messages)
    assemble.py   parsed plans -> the queries a person ran (duplicates and pairs joined)
    connect.py    a Spark Connect client's metrics tree (DataFrame.executionInfo) -> a Query
    planchange.py a driver log's plan-change log (spark.sql.planChangeLog.level) -> each
                  query's rules and re-plannings (`Query.plan_changes`)

A plan that cannot be read is a note when others can; the input fails (exit 2) only when
no plan at all can be read.

May import: `parsing`, `plan`, `errors`, `signals`, `native` (a kernel's compiled module
or its twin).
"""

from __future__ import annotations

import dataclasses
import os
from typing import List, Optional, Tuple

from ..errors import InspectError, PlanSyntaxError
from ..plan.model import DRIVER_LOG_NOT_ENDED, Document, Query
from .assemble import assemble
from .extract import ORIGIN, find_plans
from .lines import APPLICATION_START, APPLICATION_STOP, logical_lines, raw_lines
from .reading import DEFAULT_MAX_SIZE, STDIN, InputReader

__all__ = ["DEFAULT_MAX_SIZE", "STDIN", "LOG_HINT", "read_document", "read_text_document"]

#: How to have a driver log hold plans (spark.sql.adaptive.logLevel: SQLConf, Spark 3.0+,
#: default debug; AdaptiveSparkPlanExec logs `Plan changed:` and `Final plan:` at it).
LOG_HINT = ("to log plans, run with spark.sql.adaptive.logLevel=INFO (AQE's 'Plan changed:' "
            "and 'Final plan:', Spark 3.0+), or print df.explain(\"formatted\") after the "
            "action, or read the event log instead (spark.eventLog.enabled=true)")


def read_document(path: str, max_size: int = DEFAULT_MAX_SIZE, plan_changes: bool = False,
                  stream=None) -> Document:
    """Every plan in the file (or `-`, standard input), as one Document; with `plan_changes`,
    each query of a driver log holding Spark's plan-change log gets what it says of it
    (`Query.plan_changes`: planchange.py). `stream`: the input at `path` opened already (a
    pipe whose first bytes were peeked at: `reading.Peeked`)."""
    reader = InputReader(path, max_size, stream)
    from .skim import Skimmer

    skimmer = Skimmer(reader)
    # The plan-change log read from the skim's own buffers: the file is read once.
    skimmer.plan_changes = plan_changes
    # Standard input, a pipe (`<(...)`), anything but a file, is read once, by the same
    # route: nothing is read again, so its plan-change log is read from the first buffer on
    # and its lines are counted (every line handed on) until a plan is read, for the error
    # of a text that holds none.
    once = skimmer.once = path == STDIN or not os.path.isfile(path)
    headings: List[int] = []  # the line of the first rule heading handed on (planchange.py)
    document = _document(skimmer.lines(), reader.name, reader, max_size, skimmed=not once,
                         rule_headings=headings, skimmer=skimmer)
    if document is None:
        # No plan: read every line, for the error that counts them (or whatever else it finds).
        reader = InputReader(path, max_size)
        return _document(reader.lines(), reader.name, reader, max_size)
    if not plan_changes:
        return document
    # The skimmer counts the plan-change rule blocks it passed over: none, and the log holds
    # no plan-change log unless a block came through with an explain in it (rare; then the
    # file is searched for one). Without that count, the file is searched.
    blocks = getattr(skimmer, "rule_blocks", None)
    if blocks == 0 and not headings:
        return document
    if once:
        from .planchange import attach_read_once

        return attach_read_once(document, skimmer.sink)
    from .planchange import attach_streamed

    # The bytes the skim read are the file's when it took nothing out (no byte-order mark,
    # no NUL gap); else the file is read again.
    gaps = reader.gaps
    usable = not getattr(skimmer, "bom", True) and (
        gaps is None or not (gaps.leading or gaps.gaps))
    return attach_streamed(document, path, getattr(skimmer, "sink", None), usable)


def read_text_document(text: str, source: str = "") -> Document:
    """Every plan in a text already in memory."""
    from .planchange import attach_from_text

    return attach_from_text(_document(raw_lines(text), source, None, DEFAULT_MAX_SIZE), text)


def _document(raw, name: str, reader, max_size: int, skimmed: bool = False,
              rule_headings: Optional[List[int]] = None, skimmer=None) -> Optional[Document]:
    """The Document of the lines `raw`; with `skimmed` (only the lines that can hold a plan:
    skim.py), None when no plan was read, so that every line is read for the error. The
    line of the first plan-change rule heading read goes to `rule_headings`. `skimmer`: the skim
    giving `raw`, told when a plan has been read (`Skimmer.plan_read`)."""
    from ..parsing.repeats import RepeatedPlans

    parse_lines = RepeatedPlans().parse  # a plan printed again is parsed once
    items: List[Tuple[Query, str]] = []
    notes: List[str] = []
    errors: List[PlanSyntaxError] = []
    read = 0  # regions that parsed (codegen's `Found 0 ... subtrees.` holds no query)
    nonblank = 0
    messages = 0  # lines that began a log message (a log4j prefix, a JSON log record)

    damaged: List[str] = []
    runs: List[int] = []  # the lines where an application starts
    stops: List[int] = []  # and where one stops

    def counted(lines):
        nonlocal nonblank, messages
        for line in lines:
            if line.text.strip():
                nonblank += 1
            if line.message_start:
                messages += 1
            if line.damage:
                damaged.append(f"line {line.number}: {line.damage}")
            yield line

    # Read skimmed, a text with no plan is read again whole for its error: only the notes on
    # damaged lines (and the rule headings handed on) are needed from this reading, not the
    # counts.
    if skimmed:
        lines = logical_lines(raw, damaged, runs, rule_headings, stops)
    else:
        lines = counted(logical_lines(raw, None, runs, rule_headings, stops))
    try:
        for region in find_plans(lines, max_chars=max_size):
            if not region.plan.lines:
                notes.extend(region.notes)
                continue
            try:
                document = parse_lines(region.plan, name, ORIGIN[region.role])
            except PlanSyntaxError as error:
                errors.append(error)
                notes.append(f"line {error.line}: a plan that could not be read was skipped "
                             f"({error.message})")
                continue
            read += 1
            if skimmer is not None:
                skimmer.plan_read = True
            notes.extend(document.notes)
            for query in document.queries:
                if region.notes:
                    query = _with_notes(query, region.notes)
                items.append((query, region.role))
    except InspectError as error:
        raise error.located(name) from None
    if not items and not read:
        if skimmed:
            return None
        nuls = reader.only_nuls() if reader is not None else 0
        if nuls:
            from .reading import TRUNCATED_WHILE_WRITTEN

            raise InspectError(f"holds nothing but {nuls:,} NUL byte{'s' * (nuls != 1)} "
                               f"({TRUNCATED_WHILE_WRITTEN}, and nothing written since?)",
                               source=name)
        if reader is not None and reader.binary is not None:
            line, column, what = reader.binary
            raise InspectError(f"expected UTF-8 plan text, found {what}", source=name,
                               line=line, column=column)
        if errors:
            raise errors[0].located(name)
        if nonblank == 0:
            raise PlanSyntaxError("expected a Spark plan, found an empty text", source=name,
                                  line=1, column=1)
        if messages:
            raise InspectError(f"a log ({messages} messages) with no plan in it; {LOG_HINT}",
                               source=name)
        raise PlanSyntaxError(
            f"expected '== Physical Plan ==' or an operator tree; none of the text's "
            f"{nonblank} non-blank line(s) starts a Spark plan", source=name, line=1, column=1)
    if reader is not None:
        notes.extend(reader.gap_notes())
    if reader is not None and reader.binary is not None:
        line, _, what = reader.binary
        notes.append(f"line {line}: {what.split(' (')[0]} that is not UTF-8 text was replaced")
    # Each plan numbered by its place in the text, once put together: the number that names
    # it wherever it goes, a selection (`--query 2`) leaving the others out included.
    queries = [dataclasses.replace(query, number=number)
               for number, query in enumerate(assemble(items, runs), 1)]
    said = {note for query in queries for note in query.notes}
    notes.extend(note for note in dict.fromkeys(damaged) if note not in said)
    ended = application_ended(runs, stops)
    unended: List[str] = []
    for start, after in never_stopped(runs, stops):
        notes.append(f"line {start}: {APPLICATION_NOT_STOPPED_BEFORE.format(after=after)}")
        unended.append(NEVER_STOPPED.format(start=start, after=after))
    if ended is False:
        notes.append(f"line {runs[-1]}: {APPLICATION_NOT_STOPPED}")
        unended.append(DRIVER_LOG_NOT_ENDED)
    return Document(queries=tuple(queries), source=name, notes=tuple(notes),
                    ended=False if unended else ended, unended=tuple(unended))


#: The note on a driver log whose last application has no stop (`application_ended`).
APPLICATION_NOT_STOPPED = (
    f"the application started here ('{APPLICATION_START.strip()}') has no end in the log (no "
    f"'{APPLICATION_STOP}' after it): the log is cut short, still being written, or its "
    f"driver was killed; queries run after the log's end could not be read")


#: The note on an application of a driver log that never stopped before the next one
#: started (log4j appends the next run's lines to the same file): `never_stopped`.
APPLICATION_NOT_STOPPED_BEFORE = (
    f"the application started here ('{APPLICATION_START.strip()}') has no end before the next "
    f"one starts at line {{after}} (no '{APPLICATION_STOP}' between them): its driver was "
    f"killed, or its log cut, and the next run's lines appended; queries it ran after its last "
    f"line here could not be read")
#: Why a check's counts over such a log are lower bounds (`Document.unended`).
NEVER_STOPPED = (
    f"the application started at line {{start}} of the driver log has no end before the next "
    f"one starts at line {{after}} (no '{APPLICATION_STOP}' between them: its driver was "
    f"killed, or its log cut): queries it ran after its last line there could not be read")


def never_stopped(runs: List[int], stops: List[int]) -> List[Tuple[int, int]]:
    """The applications of a driver log, but its last, that did not stop before the next one
    started: (the line it started at, the line the next one started at), in order. Of its
    last, `application_ended` says."""
    found = []
    at = 0  # the first stop after the run being looked at
    for start, after in zip(runs, runs[1:]):
        while at < len(stops) and stops[at] < start:
            at += 1
        if not (at < len(stops) and stops[at] < after):
            found.append((start, after))
    return found


def application_ended(runs: List[int], stops: List[int]) -> Optional[bool]:
    """Whether a driver log holds the end of its last application: the lines where one
    starts (`runs`) and where one stops (`stops`), in order. None when it says neither (a
    log at WARN level, an explain output): nothing tells."""
    if not runs:
        return True if stops else None
    return bool(stops) and stops[-1] > runs[-1]


def _with_notes(query: Query, notes: List[str]) -> Query:
    return dataclasses.replace(query, notes=tuple(dict.fromkeys((*notes, *query.notes))))

