"""The library's one public Python API: what every `aqe-inspect` command does, as functions.

Each command of the CLI is one call here and one `write`:

    parse       read_document(path, query=...)                     -> Document
    diff        diff_input(paths, url=..., query=...)              -> Report | ReportStream
    check       check_input(path, expect=..., config=..., ...)     -> CheckResult
    why         why(path, kinds=..., conf=..., ...)                -> WhyAnswers
    advise      advise(path, kinds=..., conf=..., ...)             -> Advice
    snapshot    snapshot(path, query=...)                          -> str
    rules       rules(kind)                                        -> Rules
    fleet       fleet(paths, output, ...)                          -> FleetResult
    (any)       write(result, format, output)  standard output, or a file written whole

and the plan texts a program already holds go through `parse`, `diff` and `check`.

An input is a path (a plan text, a driver log, an event log file or folder, History Server
JSON), `-` for standard input, or a History Server / Spark UI `url`. `query` selects executions
(an execution id, or a regular expression over their descriptions; for a plan text, the
query's number). An event log is read as a stream: its executions are diffed as they are read
(in a pool of processes for a long log), so memory is that of the executions in flight.

Every error a user can cause is an `InspectError` (one line, naming the file); a failed write
to standard output is an `OutputError`. Start-up matters (the CLI imports this module at
load), so only the light foundations are imported here; the parser, the readers, the formats
and PySpark are imported by the function that needs them.
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Mapping,
                    Optional, Sequence, TextIO, Tuple, Union)

from .errors import InspectError, OutputError, PlanSyntaxError, printable
from .formats import FORMAT_NAMES
from .signals import ENDING_SIGNALS
from .signals import hold as _hold_signals
from .signals import release as _release_signals
from .version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from .advice.changes import Advice
    from .compare.result import Comparison
    from .expectations.check import CheckResult
    from .formats import Format
    from .plan.model import Application, Document
    from .rewrites.detectors.base import Detector
    from .rewrites.findings import QueryReport, Report, ReportStream
    from .sources.eventlog import LogStream
    from .whynot.settings import Given
    from .whynot.verdicts import QueryWhy

def core() -> str:
    """Which route this process runs (`aqe-inspect --version`'s second line): the compiled
    core, or its pure-Python twin and why (`native.describe`)."""
    from . import native

    return native.describe()


#: What `read` gives: a Document, or an event log's executions as a stream.
Read = Union["Document", "LogStream"]
#: What `diff_input` gives: a Report, or an event log's report diffed as it is read.
AnyReport = Union["Report", "ReportStream"]
#: A size as `--max-size` takes it (`256M`, `2G`, `500k`) or a number of bytes.
Size = Union[int, str]
#: The most text held at once (one line, one plan) unless told.
DEFAULT_MAX_SIZE = "256M"
#: The names `write` takes for a Document (the `parse` command's formats).
DOCUMENT_FORMATS = ("tree", "json")
#: The names `write` takes for the `why` answers.
WHY_FORMATS = ("text", "json")
#: The formats of `advise` (`spark-submit`: one `--conf KEY=VALUE` line a change, nothing else).
ADVICE_FORMATS = ("text", "json", "markdown", "spark-submit")
#: The names `fleet` takes for the table and the summary.
FLEET_TABLE_FORMATS = ("parquet", "csv")
FLEET_SUMMARY_FORMATS = ("text", "markdown", "html")
#: The formats of a comparison (`compare`), in the order `--help` lists them.
COMPARE_FORMATS = ("text", "json", "junit", "github", "sarif", "markdown", "html")


# ---- plan texts a program holds -----------------------------------------------------------

def parse(text: str, source: str = "") -> Document:
    """Parse explain output of any mode into a Document."""
    from .parsing import parse_text

    return parse_text(text, source)


def diff(plan: Union[str, Document], final: Union[str, Document, None] = None,
         source: str = "") -> "Report":
    """What AQE changed: in one adaptive plan text (or Document), or between an initial and a
    final plan given apart."""
    from .parsing import parse_text
    from .rewrites.engine import diff_document

    document = parse_text(plan, source) if isinstance(plan, str) else plan
    if final is None:
        return diff_document(document)
    final_document = parse_text(final, source) if isinstance(final, str) else final
    return diff_pair(document, final_document)


def diff_pair(initial: Document, final: Document) -> "Report":
    """Pair the queries of two texts (the plan printed before the action and the one after)
    in order and diff each pair by structure. Given the wrong way round (the "final" text
    not yet final, the "initial" one final), they are put in order, with a note."""
    from .rewrites.engine import diff_initial_final
    from .rewrites.findings import Report

    notes = []
    if _looks_final(initial) and not _looks_final(final):
        notes.append(f"{initial.source} holds the final plan and {final.source} the plan "
                     f"before the action: read {final.source} as the initial plan")
        initial, final = final, initial
    if len(initial.queries) != len(final.queries):
        raise InspectError(
            f"the initial text holds {len(initial.queries)} plan(s) and the final text "
            f"{len(final.queries)}; they must pair one to one", source=final.source)
    reports = []
    for number, (before, after) in enumerate(zip(initial.queries, final.queries), 1):
        # The INITIAL file's plan before AQE: its initial tree, else the one it printed.
        initial_tree = before.initial if before.initial is not None else before.final
        reports.append(diff_initial_final(initial_tree, after, str(number), tuple(notes)))
    return Report(queries=tuple(reports), source=f"{initial.source} -> {final.source}",
                  notes=(*initial.notes, *final.notes))


def _looks_final(document: Document) -> bool:
    """Whether a text's plans are final: every adaptive plan says isFinalPlan=true."""
    flags = [query.is_final_plan for query in document.queries if query.adaptive]
    return bool(flags) and all(flags)


def check(plan: Union[str, Document, "Report"], expect: Iterable[str] = (),
          forbid: Iterable[str] = (), query: Optional[str] = None,
          each: bool = False, judge_unfinished: bool = False) -> "CheckResult":
    """Hold a plan text, Document or Report to expectations written as on the command line
    (`expect=["coalesced>=2"]`, `forbid=["skew-join"]`), over the queries `query` selects
    (an execution id or a regular expression; all when None). `result.passed` says whether
    every one holds; `result.failures` what did not, and why. An expectation over a query
    that had not finished is `unfinished` (not passed) unless `judge_unfinished`."""
    from .expectations.check import check as hold
    from .expectations.config import command_line_expectations
    from .expectations.selection import Selector
    from .rewrites.findings import Report

    expectations = command_line_expectations(
        expect, forbid, Selector.parse(query) if query is not None else None, each)
    if not expectations:
        raise InspectError("nothing to check: give expect=[...] or forbid=[...]")
    report = plan if isinstance(plan, Report) else diff(plan)
    return hold(report, expectations, judge_unfinished=judge_unfinished)


# ---- inputs: files, folders, standard input, URLs -----------------------------------------

def size(text: Size) -> int:
    """A size in bytes: `64M`, `2G`, `500k`, or a number of bytes (a positive int too)."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text <= 0:
            raise InspectError(f"--max-size: expected a size such as 256M, found {text!r}")
        return text
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    value = str(text).strip().lower().rstrip("b").rstrip("i")
    try:
        found = int(float(value[:-1]) * units[value[-1]]) if value and value[-1] in units \
            else int(value)
    except (ValueError, OverflowError):
        found = 0
    if found <= 0:
        raise InspectError(f"--max-size: expected a size such as 256M, found {text!r}")
    return found


def read(path: Optional[str] = None, *, url: Optional[str] = None,
         max_size: Size = DEFAULT_MAX_SIZE, query: Optional[str] = None,
         required: bool = True, task_metrics: bool = False) -> Read:
    """What one input holds: `path` (a file, a folder of event logs, `-` for standard input)
    or `url` (a History Server or Spark UI application URL, or its /sql URL), routed by its
    content to the reader it needs. A plan text, driver log or History Server JSON gives a
    Document; an event log a `LogStream`, its executions read as it is walked (`.queries`,
    once; `.document()` reads it whole).

    `query` keeps the executions it selects (see `expectations.selection`); none matching is
    an error once the input is read, unless `required` is false. `task_metrics` reads each
    task's shuffle reads too (per-task partition sizes, for the why-not answers)."""
    if (path is None) == (url is None):
        raise InspectError("give one input: a path (a file, a directory, or - for standard "
                           "input) or a url")
    limit = size(max_size)
    if url is not None:
        from .sources.routing import read_url

        found: Read = read_url(url, limit)
    else:
        from .sources.routing import read_input

        found = read_input(path, limit, task_metrics=task_metrics)
    return select(found, query, required=required)


def select(found: Read, query: Optional[str], required: bool = True) -> Read:
    """The queries `query` names (an execution id, or a regular expression over the
    executions' descriptions; see `expectations.selection`). An event log's stream stays a
    stream; none matching is an error once it is read (unless not `required`)."""
    if query is None:
        return found
    from .expectations.selection import Selector

    chosen = Selector.parse(query)

    def kept(queries):
        seen = matched = 0
        unit = "query"
        for seen, each in enumerate(queries, 1):
            unit = each.unit
            if chosen.selects(seen, each):
                matched += 1
                yield each
        if not matched and required:
            # The glossary's words (docs/inputs.md): an event log's executions by id, a plan
            # text's queries by position.
            what = "" if chosen.number is None else \
                "; a number is an execution's id" if unit == "execution" else \
                "; a number is a query's position in the file, from 1"
            from .plan.model import units

            raise InspectError(f"--query {query}: no {unit} matches (the input holds "
                               f"{units(seen, unit)}{what})", source=found.source)

    if _is_stream(found):
        found.select(kept)
        return found
    return dataclasses.replace(found, queries=tuple(kept(found.queries)))


def read_document(path: Optional[str] = None, *, url: Optional[str] = None,
                  max_size: Size = DEFAULT_MAX_SIZE, query: Optional[str] = None) -> Document:
    """`read`, whole: an event log's executions all read into one Document, each query naming
    the application it ran in (a folder may hold several). What `parse` prints."""
    found = read(path, url=url, max_size=max_size, query=query)
    if not _is_stream(found):
        return found
    found.select(lambda queries: (dataclasses.replace(each,
                                                      application=found.current_application)
                                  for each in queries))
    return found.document()


def _is_stream(found: Any) -> bool:
    """Whether `found` is an event log's stream (imported only if an event log was read)."""
    events = sys.modules.get(f"{__package__}.sources.eventlog")
    return events is not None and isinstance(found, events.LogStream)


def _one_input(paths: Sequence[str], url: Optional[str], command: str) -> Optional[str]:
    """The one path a command reads (None for a `url`), or the error that says what it takes."""
    if url is not None:
        if paths:
            raise InspectError(f"{command} takes a file or --url, not both")
        return None
    if len(paths) != 1:
        raise InspectError("diff takes one plan text, or an initial and a final plan"
                           if command == "diff" else f"{command} takes one input (a file, a "
                           "directory, or - for standard input) or --url")
    return paths[0]


def _paths(path: Union[str, Sequence[Optional[str]], None]) -> List[str]:
    if path is None:
        return []
    if isinstance(path, str):
        return [path]
    return [each for each in path if each is not None]


def refuse_output(output: Optional[str], *inputs: Optional[str]) -> None:
    """An error when `output` is one of `inputs` (the same file, through any link, or a file
    inside an input folder; `-` is standard input): the result would replace what it is of.
    Nothing to check when `output` is None (standard output)."""
    if output is not None:
        from .formats.outputs import refuse_inputs

        refuse_inputs(output, inputs)


# ---- diff, check, why, snapshot, rules ----------------------------------------------------

def report_format(name: str = "text", *, view: Optional[str] = None,
                  width: Optional[int] = None) -> "Format":
    """The report format called `name` (one of FORMAT_NAMES), for `diff_input`, `check_input`
    and `write`. `view` ("tree" or "side-by-side") and `width` (columns) are the text
    format's: another format with a view is an error."""
    from .formats import get_format

    if view not in (None, "tree", "side-by-side"):
        raise InspectError(f"view: expected tree or side-by-side, found {view!r}")
    chosen = get_format(name)
    if view is not None and not chosen.for_people:
        raise InspectError(f"--{view} is a view of the text format, not of --format "
                           f"{chosen.name}")
    return chosen.configured(view, _width(width))


def _width(width: Optional[int]) -> Optional[int]:
    if width is None:
        return None
    from .formats.terminal import SMALLEST_WIDTH

    if not SMALLEST_WIDTH <= width <= 10_000:
        raise InspectError(f"--width: expected a number of columns from {SMALLEST_WIDTH} to "
                           f"10000, found {width}")
    return width


def _chosen(for_format: Union[str, "Format", None]) -> "Format":
    if for_format is None or isinstance(for_format, str):
        return report_format(for_format or "text")
    return for_format


def diff_input(path: Union[str, Sequence[str], None] = None, *, url: Optional[str] = None,
               max_size: Size = DEFAULT_MAX_SIZE, query: Optional[str] = None,
               for_format: Union[str, "Format", None] = None,
               output: Optional[str] = None) -> AnyReport:
    """What AQE changed in an input (`read`'s path or url), or between two plan texts (a
    sequence of two paths: the initial and the final plan; `query` does not apply). An event
    log gives a `ReportStream`, each execution diffed as it is read, its first already read
    (so a `query` that matches nothing fails before any output).

    `for_format`: the format the report will be written in (`report_format`), so an event
    log's reader keeps what it needs (every AQE update, for the HTML timeline) and, for JSON,
    writes each execution where it is diffed. `output`: the file it will be written to,
    refused before anything is read if it is one of the inputs."""
    paths = _paths(path)
    refuse_output(output, *paths)
    chosen = _chosen(for_format)
    if len(paths) == 2 and url is None:
        limit = size(max_size)
        return diff_pair(read_document(paths[0], max_size=limit),
                         read_document(paths[1], max_size=limit))
    found = read(_one_input(paths, url, "diff"), url=url, max_size=max_size, query=query)
    return _report(found, json=chosen.name == "json", replans=chosen.keeps_replans)


def _report(found: Read, json: bool = False, replans: bool = False) -> AnyReport:
    """A Document's report; for an event log's stream, a report diffed as it is read, its
    first query already read (so a `--query` that matches nothing fails before any output,
    and the application, whose events Spark writes first, is known for the header). With
    `replans`, an event log's every AQE update is kept for a timeline."""
    if not _is_stream(found):
        return diff(found)
    from .formats.report_json import diff_built_json, with_application
    from .rewrites.engine import diff_built, diff_queries
    from .rewrites.findings import ReportStream

    if replans:
        found.keep_replans()
    # Unselected, each execution is diffed where it is built (in the pool for a long log).
    # For JSON, the process that diffs an execution writes it too (only text comes back).
    reports = diff_queries(found.queries) if found.selected \
        else found.built_into(diff_built_json if json else diff_built)
    # Each query names the application it ran in (a folder may hold several).
    reports = (with_application(item, found.current_application) for item in reports)
    first = next(reports, None)
    queries = iter(()) if first is None else itertools.chain((first,), reports)
    return ReportStream(queries, found.source, found.notes, lambda: found.application,
                        lambda: found.ended, lambda: tuple(found.unended))


def check_input(path: Optional[str] = None, *, url: Optional[str] = None,
                expect: Iterable[str] = (), forbid: Iterable[str] = (),
                config: Optional[str] = None, each: bool = False,
                snapshot: Optional[str] = None, conf: Iterable[str] = (),
                conf_file: Optional[str] = None, spark_version: Optional[str] = None,
                max_size: Size = DEFAULT_MAX_SIZE, query: Optional[str] = None,
                for_format: Union[str, "Format", None] = None,
                output: Optional[str] = None, config_folder: str = ".",
                judge_unfinished: bool = False) -> "CheckResult":
    """Hold an input to expectations: `expect`/`forbid` as on the command line (`KIND`,
    `KIND>=N`...; with `each`, every query on its own), an expectation file `config`
    (aqe-expect.toml, or a pyproject.toml's [tool.aqe-inspect]), and a `snapshot` file (the
    final plans and rewrites must be the same). With none of the three, `config_folder`'s
    aqe-expect.toml (else its pyproject.toml's table) is read. `conf`/`conf_file`/
    `spark_version` are the settings the why-not answers of failures take (see `why`).

    The expectations, the snapshot and the files are read first (a typo fails at once,
    before a long input is read); `result.passed` says whether all held. An expectation
    whose scope takes a query that had not finished (a cut or in-progress log, a plan with
    isFinalPlan=false) is `unfinished`, and fails, unless `judge_unfinished`."""
    from .expectations.check import check as hold
    from .expectations.config import command_line_expectations, find_config, load_config

    chosen = _chosen(for_format)
    expectations = command_line_expectations(expect, forbid, None, each)
    user = settings_given(conf, conf_file)
    expected_snapshot = None
    if snapshot is not None:
        from .expectations.snapshot import load as load_snapshot

        expected_snapshot = load_snapshot(snapshot)
    if config is None and not expectations and snapshot is None:
        config = find_config(config_folder)
        if config is None:
            raise InspectError("nothing to check: give --expect KIND or --forbid KIND, or "
                               "--config FILE, or put an aqe-expect.toml in the working "
                               "directory")
    refuse_output(output, path, config, snapshot, conf_file)
    if config is not None:
        expectations = load_config(config) + expectations
    found = read(_one_input(_paths(path), url, "check"), url=url, max_size=max_size,
                 query=query, required=False, task_metrics=True)
    report = _report(found, json=False, replans=chosen.keeps_replans)
    if expected_snapshot is None or snapshot is None:
        return hold(report, expectations, selected_by=query, settings=user,
                    spark_version=spark_version, judge_unfinished=judge_unfinished)
    # The expectations' outcomes, then the snapshot's: the report is read whole first (a
    # snapshot is of every query selected, in order).
    from .expectations.snapshot import outcome
    from .rewrites.findings import read_whole

    whole = read_whole(report)
    result = hold(whole, expectations, selected_by=query, settings=user,
                  spark_version=spark_version, judge_unfinished=judge_unfinished)
    return dataclasses.replace(result, outcomes=(*result.outcomes,
                                                 outcome(snapshot, whole, expected_snapshot)))


def settings_given(conf: Iterable[str] = (), conf_file: Optional[str] = None
                   ) -> Dict[str, "Given"]:
    """The settings a user gives for the why-not answers: a spark-defaults.conf `conf_file`
    (KEY VALUE lines), then each `conf` KEY=VALUE over it."""
    from .whynot.settings import Given, conf_option, read_conf_file

    found = read_conf_file(conf_file) if conf_file is not None else {}
    for item in conf:
        key, value = conf_option(item)
        found[key] = Given(value, "--conf")
    return found


def _kinds(kinds: Iterable[str]) -> Optional[Tuple[str, ...]]:
    from .rewrites.findings import kind_hint, rewrite_kinds

    kinds = tuple(kinds)
    for kind in kinds:
        if kind not in rewrite_kinds():
            raise InspectError(f"--kind {printable(kind)}: not a rewrite kind; "
                               f"{kind_hint(kind)}")
    return kinds or None


@dataclasses.dataclass(frozen=True)
class WhyAnswers:
    """Why AQE did not rewrite, query by query: `queries()` answers each query of `report` as
    it is read (an event log's stream is read once, by one walk), under the settings `user`
    gave over the input's own and Spark's defaults for `spark_version` (else the event log's
    version). `source`, `application` and `notes` are the report's (whole once walked)."""

    report: AnyReport
    user: Mapping[str, "Given"]
    spark_version: Optional[str] = None
    kinds: Optional[Tuple[str, ...]] = None

    def queries(self) -> Iterator[Tuple["QueryReport", "QueryWhy", Optional[str]]]:
        """(the query's report, its answer, the Spark version its defaults were taken at)."""
        from .whynot import explain_query, query_settings

        for query in self.report.queries:
            app = self.report.application
            found = self.spark_version or (app.spark_version if app is not None else None) \
                or None
            settings = query_settings(query, self.user, version=found)
            yield query, explain_query(query, settings, self.kinds), found

    @property
    def source(self) -> str:
        return self.report.source

    @property
    def application(self) -> Optional[Application]:
        return self.report.application

    @property
    def notes(self) -> Sequence[str]:
        return self.report.notes


def why(path: Optional[str] = None, *, url: Optional[str] = None,
        query: Optional[str] = None, kinds: Iterable[str] = (), conf: Iterable[str] = (),
        conf_file: Optional[str] = None, spark_version: Optional[str] = None,
        max_size: Size = DEFAULT_MAX_SIZE, for_format: str = "text",
        output: Optional[str] = None) -> WhyAnswers:
    """Why AQE did NOT rewrite: every join and shuffle AQE could have rewritten in an input,
    of `kinds` (all when empty; `rules()` lists them), each rule's conditions against the
    run-time sizes and the settings in force: the input's (an event log records them), the
    user's `conf` (KEY=VALUE) and `conf_file` over them, Spark's defaults for the rest.
    `for_format`: text or json, checked before anything is read."""
    if for_format not in WHY_FORMATS:
        raise InspectError(f"--format: expected text or json, found {for_format!r}")
    refuse_output(output, path, conf_file)
    user = settings_given(conf, conf_file)
    chosen = _kinds(kinds)
    found = read(_one_input(_paths(path), url, "why"), url=url, max_size=max_size,
                 query=query, task_metrics=True)
    return WhyAnswers(_report(found), user, spark_version, chosen)


def advise(path: Optional[str] = None, *, url: Optional[str] = None,
           query: Optional[str] = None, kinds: Iterable[str] = (), conf: Iterable[str] = (),
           conf_file: Optional[str] = None, spark_version: Optional[str] = None,
           max_size: Size = DEFAULT_MAX_SIZE, for_format: str = "text",
           output: Optional[str] = None) -> "Advice":
    """What to change so that AQE rewrites where it did not: for each decision of `kinds`
    (rewrite kinds, and `adaptive` for AQE itself; all when empty) that did not fire and a
    setting can make fire, a `Change` (the key, a value Spark accepts with headroom over the
    measured figure, the current value and where it came from, what else it does); where the
    query itself decides, a `Fixed` saying what can change it. Inputs and settings as `why`
    takes them. The queries are read whole: a threshold's effect on the application's other
    joins needs them all. `Advice.settings()` is the changes merged, one value a key."""
    if for_format not in ADVICE_FORMATS:
        raise InspectError(f"--format: expected {', '.join(ADVICE_FORMATS)}, found "
                           f"{printable(for_format)!r}")
    refuse_output(output, path, conf_file)
    user = settings_given(conf, conf_file)
    chosen = _kinds(tuple(k for k in kinds if k != "adaptive"))
    if chosen is not None or "adaptive" in tuple(kinds):
        chosen = (*(chosen or ()), *(("adaptive",) if "adaptive" in tuple(kinds) else ()))
    found = read(_one_input(_paths(path), url, "advise"), url=url, max_size=max_size,
                 query=query, task_metrics=True)
    report = _report(found)
    from .advice import advise_query, finish
    from .advice.changes import Advice
    from .whynot import query_settings

    answers = []
    for each in report.queries:
        app = report.application
        version = spark_version or (app.spark_version if app is not None else None) or None
        settings = query_settings(each, user, version=version)
        answers.append(advise_query(each, settings, chosen, version or ""))
    return finish(Advice(source=report.source, queries=tuple(answers),
                         application=report.application, notes=tuple(report.notes)))


def snapshot(path: Optional[str] = None, *, url: Optional[str] = None,
             max_size: Size = DEFAULT_MAX_SIZE, query: Optional[str] = None,
             output: Optional[str] = None) -> str:
    """The final plans of an input, normalised (ids renumbered; paths, sizes, partition
    counts masked), with AQE's rewrites: the text `check_input(snapshot=...)` compares with.
    Every query of the input, in order, unless `query` chooses."""
    from .expectations.snapshot import take_all
    from .rewrites.findings import read_whole

    refuse_output(output, path)
    return take_all(read_whole(_report(read(path, url=url, max_size=max_size, query=query))))


@dataclasses.dataclass(frozen=True)
class Rules:
    """The rewrite detectors (`detectors`, in the order they run): each one's `kind`, the
    Spark rule it mirrors and what it looks for."""

    detectors: Tuple["Detector", ...]

    @property
    def kinds(self) -> Tuple[str, ...]:
        return tuple(detector.kind for detector in self.detectors)


def rules(kind: Optional[str] = None) -> Rules:
    """Every rewrite detector, or only the one of `kind`."""
    from .rewrites.detectors import DETECTORS

    chosen = tuple(DETECTORS)
    if kind is not None:
        from .rewrites.findings import kind_hint

        chosen = tuple(detector for detector in DETECTORS if detector.kind == kind)
        if not chosen:
            raise InspectError(f"rules: unknown rewrite kind '{printable(kind)}'; "
                               f"{kind_hint(kind)}")
    return Rules(chosen)


# ---- fleet --------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class FleetResult:
    """A fleet scan's table, as rows (one per application and SQL execution; the columns of
    `fleet.table`), where it was written, and the files found in folders that were not event
    logs (skipped, as `diff` skips them)."""

    rows: Sequence[Mapping[str, Any]]
    output: str
    skipped: Tuple[str, ...] = ()
    summary_format: str = "text"


def fleet(paths: Sequence[str], output: str, *, table_format: str = "parquet",
          master: Optional[str] = None, summary_format: str = "text",
          summary: Optional[str] = None) -> FleetResult:
    """Scan many event logs on Spark (PySpark, the `spark` extra): files, folders, globs,
    local paths or URIs Spark reads. The table (parquet or csv) replaces the folder `output`
    whole; `summary_format` (text, markdown or html) is the summary's that `write` writes,
    and `summary` the file it will be written to (refused if it is one of the inputs)."""
    if table_format not in FLEET_TABLE_FORMATS:
        raise InspectError(f"--format: expected parquet or csv, found {table_format!r}")
    if summary_format not in FLEET_SUMMARY_FORMATS:
        raise InspectError(f"--summary-format: expected text, markdown or html, found "
                           f"{summary_format!r}")
    from .fleet.job import require_pyspark, run_fleet

    refuse_output(summary, *paths)
    require_pyspark()
    skipped: List[str] = []  # files found in folders that are not event logs, as diff skips
    rows = run_fleet(list(paths), output, table_format, master, skipped=skipped)
    return FleetResult(rows, output, tuple(skipped), summary_format)


# ---- two runs compared ------------------------------------------------------------------------

def compare(old: str, new: str, fail_on: Iterable[str] = ("lost",), *,
            max_size: Size = DEFAULT_MAX_SIZE, for_format: str = "text",
            output: Optional[str] = None, judge_unfinished: bool = False,
            allow_missing: bool = False) -> "Comparison":
    """Two runs of the same job compared (`compare.compare`): each side a path `diff` reads
    (or `-` on one side), or both fleet tables. `fail_on`: what fails the gate (`lost`,
    `gained`, `any`, `none`, or `KIND:` one of them for a kind; `Comparison.failed`). A pair
    whose execution had not finished on either side (a cut or in-progress log, an
    isFinalPlan=false plan) is `unfinished`: no verdict, and it fails, unless
    `judge_unfinished` (then judged on what it holds). An execution of the old run that the
    new run does not hold (it failed or stopped before it, or no longer runs it) is
    unfinished too, unless `allow_missing` (then only listed, `Comparison.unmatched_old`).

    `for_format`: the format it will be written in (one of COMPARE_FORMATS; `html` keeps each
    final plan's outline, for the page's side-by-side plans). `output`: the file it will be
    written to, refused before anything is read if it is one of the inputs. The format, the
    gate and the output are checked before a long input is read."""
    from .compare import compare as compare_runs, parse_gate

    if for_format not in COMPARE_FORMATS:
        raise InspectError(f"--format: expected {', '.join(COMPARE_FORMATS)}, found "
                           f"{printable(for_format)!r}")
    parse_gate(fail_on)
    refuse_output(output, old, new)
    return compare_runs(old, new, fail_on, max_size=size(max_size),
                        plans=for_format == "html", judge_unfinished=judge_unfinished,
                        allow_missing=allow_missing)


# ---- writing ------------------------------------------------------------------------------

Result = Union["Document", "Report", "ReportStream", "CheckResult", WhyAnswers, "Advice", Rules,
               FleetResult, "Comparison", str]


def write(result: Result, format: Union[str, "Format", None] = None,
          output: Optional[str] = None, *, summary: Optional[str] = None,
          width: Optional[int] = None) -> None:
    """Write what a function of this module gave, in `format`, to standard output or, with
    `output`, to that file, written whole or not at all (a file replaced atomically, a pipe or
    device written once the result is complete; nothing left behind on any failure).

    The formats: a Document `tree` or `json` (default tree); a comparison one of
    COMPARE_FORMATS (default text); a report or check result one of
    FORMAT_NAMES or a `report_format(...)` (default text); the why answers text or json; a
    fleet result its summary format; a snapshot (a str) and rules as they are. `summary`: a
    line printed on standard output once `output` is written. `width`: the columns text for
    people is wrapped to (the why answers, a comparison, a fleet summary, a report or check
    result in a format named here; a `report_format(...)` has its own), None for the
    terminal's (when not a terminal, COLUMNS, else 100)."""
    writer, json = _writer(result, format, _width(width))
    _emit(output, writer, json, summary)


def rendered(result: Result, format: Union[str, "Format", None] = None, *,
             width: Optional[int] = None) -> str:
    """What `write` would write of `result` in `format`, as a string (the MCP server's
    answers: the JSON contracts the command line prints, byte for byte)."""
    import io

    writer, _ = _writer(result, format, _width(width))
    buffer = io.StringIO()
    writer(buffer)
    return buffer.getvalue()


def _writer(result: Result, format: Union[str, "Format", None], width: Optional[int] = None
            ) -> Tuple[Callable[[TextIO], Any], bool]:
    """How to write `result` (a function of the stream), and whether as JSON (what the
    encoding cannot hold then written as JSON escapes)."""
    from .plan.model import Document

    if isinstance(result, str):
        return (lambda stream: stream.write(result)), False
    if isinstance(result, Document):
        if format in (None, "tree"):
            from .formats.terminal import print_document_tree

            return (lambda stream: print_document_tree(result, stream)), False
        if format != "json":
            raise InspectError(f"--format: expected tree or json, found {format!r}")
        from .formats.parse_json import write_document_json

        return (lambda stream: write_document_json(result, stream)), True
    if isinstance(result, Rules):
        from .formats.terminal import print_rules

        return (lambda stream: print_rules(result.detectors, stream)), False
    if isinstance(result, WhyAnswers):
        if format not in (None, *WHY_FORMATS):
            raise InspectError(f"--format: expected text or json, found {format!r}")
        from .formats.why import write_why

        as_json = format == "json"
        return (lambda stream: write_why(result, stream, as_json, width)), as_json
    advised = sys.modules.get(f"{__package__}.advice.changes")
    if advised is not None and isinstance(result, advised.Advice):
        chosen_advice = "text" if format is None else format
        if chosen_advice not in ADVICE_FORMATS:
            raise InspectError(f"--format: expected {', '.join(ADVICE_FORMATS)}, found "
                               f"{printable(str(chosen_advice))!r}")
        from .formats.advice import advice_writer

        write_advice = advice_writer(chosen_advice)
        return (lambda stream: write_advice(result, stream, width)), chosen_advice == "json"
    # A comparison can only exist once its module is imported (not loaded for other results).
    compared = sys.modules.get(f"{__package__}.compare.result")
    if compared is not None and isinstance(result, compared.Comparison):
        from .formats.compare import JSON_ESCAPED, compare_writer

        chosen_name = format if isinstance(format, str) else "text"
        write_comparison = compare_writer(chosen_name)
        if chosen_name == "text":
            from .formats.compare.text import write as write_text

            return (lambda stream: write_text(result, stream, width)), False
        return (lambda stream: write_comparison(result, stream)), chosen_name in JSON_ESCAPED
    if isinstance(result, FleetResult):
        from .fleet.summary_formats import write_summary

        chosen = result.summary_format if format is None else format
        return (lambda stream: write_summary(result.rows, stream, chosen, width,
                                             skipped=result.skipped)), False
    from .rewrites.findings import Report, ReportStream

    chosen = _chosen(format)
    if width is not None and isinstance(format, (str, type(None))):
        chosen = chosen.configured(None, width)
    if isinstance(result, (Report, ReportStream)):
        return (lambda stream: chosen.write_report(result, stream)), chosen.escapes_json
    from .expectations.check import CheckResult

    if isinstance(result, CheckResult):
        return (lambda stream: chosen.write_check(result, stream)), chosen.escapes_json
    raise TypeError(f"write: nothing to write of a {type(result).__name__}")


def _stdout(json: bool = False):
    from .formats.outputs import Output

    return Output(sys.stdout, json)


def _emit(output: Optional[str], write_to: Callable[[TextIO], Any], json: bool = False,
          summary: Optional[str] = None) -> None:
    """Write with `write_to(stream)`: to standard output, or whole to the file `output` (see
    `outputs.AtomicFile`). `json`: what the encoding cannot hold is written as JSON escapes."""
    if output is None:
        write_to(_stdout(json=json))
        return
    from .formats.outputs import AtomicFile

    # The temporary file is made and renamed (or removed) with the ending signals held, so that
    # one cannot fall between its making and the `try` that removes it, nor stop its removal:
    # a signal that comes meanwhile is raised when they are released, inside the `try`.
    target = AtomicFile(output, json=json)
    held = _hold_signals()
    try:
        stream = target.__enter__()
    except BaseException:
        _release_signals(held)
        raise
    try:
        _release_signals(held)
        write_to(stream)
    except BaseException:
        held = _hold_signals()
        try:
            target.__exit__(*sys.exc_info())
        finally:
            _release_signals(held)
        raise
    held = _hold_signals()
    try:
        target.__exit__(None, None, None)
    finally:
        _release_signals(held)
    if summary is not None:  # one line, whatever the file's name holds
        _stdout().write(printable(summary) + "\n")


def __getattr__(name: str) -> Any:
    """The plan model's names this module once imported at load (`api.Document`): imported
    when first asked for, as the model is not needed to start the CLI."""
    if name in ("Application", "Document", "units"):
        from .plan import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def stop_workers() -> None:
    """End the event-log reader's worker processes, if it started any (after Ctrl-C)."""
    events = sys.modules.get(f"{__package__}.sources.eventlog.events")
    if events is not None:
        try:
            events.stop_workers()
        except Exception:  # noqa: BLE001 - ending the run matters more
            pass


__all__ = [
    "AnyReport", "COMPARE_FORMATS", "DEFAULT_MAX_SIZE", "DOCUMENT_FORMATS", "ENDING_SIGNALS", "FLEET_SUMMARY_FORMATS",
    "FLEET_TABLE_FORMATS", "FORMAT_NAMES", "FleetResult", "InspectError", "OutputError",
    "ADVICE_FORMATS", "PlanSyntaxError", "Read", "Rules", "WHY_FORMATS", "WhyAnswers", "__version__", "advise", "check",
    "check_input", "compare", "diff", "diff_input", "diff_pair", "fleet", "parse", "printable", "read",
    "read_document", "refuse_output", "rendered", "report_format", "rules", "select",
    "settings_given",
    "size", "snapshot", "stop_workers", "why", "write",
]
