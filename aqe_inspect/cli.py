"""The `aqe-inspect` command: a thin layer over the library API.

Start-up matters (it runs in CI loops and pipes), so this module imports only typer at load
time; the parser, Lark and rich are imported by the command that needs them.

The promise to a user: any input gives a result, or one line `aqe-inspect: error: ...` on
standard error and exit code 2; Ctrl-C is one line `aqe-inspect: interrupted` and exit 130,
SIGTERM and SIGHUP the same line naming the signal and exit 143 and 129 (128 + the signal's
number), within a second, the pool's worker processes ended and no temporary file left; a
reader that leaves early (`| head`) is no error (exit 0). Never a traceback, from any process.
"""

from __future__ import annotations

import gc
import itertools
import os
import signal
import sys
from enum import Enum
from typing import List, Optional

# The signals that end a run (signals.ENDING_SIGNALS) are each raised where the main thread is,
# as Ctrl-C is, so that everything unwinds the same way (a temporary output file removed, the
# pool's workers ended).
from .signals import ENDING_SIGNALS
from .signals import hold as _hold_signals
from .signals import release as _release_signals


def _ending_while_loading(signum: int, frame) -> None:
    raise KeyboardInterrupt(signum)


# Ctrl-C, SIGTERM or SIGHUP while typer and the commands load (most of the start-up) is an
# interruption like any other: one line, 128 + the signal. The handlers are this import's only.
_loading_handlers = {}
for _each in ENDING_SIGNALS:
    try:
        _loading_handlers[_each] = signal.signal(_each, _ending_while_loading)
    except (ValueError, OSError):  # imported from another thread than the main one
        break
try:
    import typer

    try:  # typer 0.2x vendors click; earlier releases use click itself
        from typer._click import exceptions as usage_errors
    except ImportError:  # pragma: no cover - depends on the installed typer
        from click import exceptions as usage_errors  # type: ignore[no-redef]

    from .version import __version__
    from .errors import InspectError, OutputError, printable
    from .formats import FORMAT_NAMES
    from .formats.outputs import Output
except KeyboardInterrupt as _interruption:  # pragma: no cover - timing
    _number = _interruption.args[0] if _interruption.args and \
        isinstance(_interruption.args[0], int) else signal.SIGINT
    _named = "" if _number == signal.SIGINT else f" ({signal.Signals(_number).name})"
    sys.stderr.write(f"aqe-inspect: interrupted{_named}\n")
    raise SystemExit(128 + _number) from None
finally:
    for _each, _handler in _loading_handlers.items():
        signal.signal(_each, _handler if _handler is not None else signal.SIG_DFL)

app = typer.Typer(
    name="aqe-inspect",
    help="Read Apache Spark AQE plans: parse explain output and name every adaptive rewrite.",
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)

STDIN = "-"
MAX_SIZE_HELP = "The most text held at once (one line, one plan), e.g. 512M."
QUERY_HELP = ("Only this SQL execution (its id, e.g. 3) or the executions whose description "
              "matches this regular expression; for a plan text, the query's number.")


class ParseFormat(str, Enum):
    tree = "tree"
    json = "json"


# The output formats as typer takes choices (an Enum).
ReportFormat = Enum("ReportFormat", {name: name for name in FORMAT_NAMES}, type=str)
FORMAT_HELP = ("text (for people), json, junit, github (Actions annotations), sarif or html "
               "(one self-contained page).")
OUTPUT_HELP = ("Write the report to this file instead of standard output (written whole, or not "
               "at all).")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"aqe-inspect {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Read Apache Spark AQE plans: parse explain output and name every adaptive rewrite."""


@app.command("parse")
def parse_command(
    path: str = typer.Argument(..., help="A file holding explain output, or - for stdin."),
    output_format: ParseFormat = typer.Option(ParseFormat.tree, "--format", "-f",
                                              help="tree (for people) or json."),
    max_size: str = typer.Option("256M", "--max-size", help=MAX_SIZE_HELP),
    query: Optional[str] = typer.Option(None, "--query", "-q", help=QUERY_HELP),
) -> None:
    """Parse the plans in a text (explain output, a log, a pasted plan, a Spark event log,
    History Server JSON) into trees."""
    document = _document(_select(_read(path, max_size), query))
    if output_format is ParseFormat.json:
        from .formats.parse_json import write_document_json

        write_document_json(document, _output(json=True))
    else:
        from .formats.terminal import print_document_tree

        print_document_tree(document, _output())


# Options `diff` and `check` share (typer takes one declaration in several commands).
FORMAT_OPTION = typer.Option("text", "--format", "-f", help=FORMAT_HELP)
OUTPUT_OPTION = typer.Option(None, "--output", "-o", help=OUTPUT_HELP)
MAX_SIZE_OPTION = typer.Option("256M", "--max-size", help=MAX_SIZE_HELP)
QUERY_OPTION = typer.Option(None, "--query", "-q", help=QUERY_HELP)
WIDTH_OPTION = typer.Option(
    None, "--width", help="Print text this many columns wide (default: the terminal's; when "
    "not a terminal, COLUMNS, else 100).")
URL_OPTION = typer.Option(
    None, "--url", help="Read the SQL executions from a running History Server or Spark UI: "
    "the application's URL (http://host:18080/api/v1/applications/APP) or its /sql URL.")


# The settings why-not answers take (`why`, and `check` for its failures).
CONF_OPTION = typer.Option(
    [], "--conf", help="A setting the job ran with, KEY=VALUE (repeat for more), for the why-not "
    "answers; it overrides what the input recorded. Settings not given are taken at Spark's "
    "defaults.")
CONF_FILE_OPTION = typer.Option(
    None, "--conf-file", help="The job's spark-defaults.conf (KEY VALUE lines), for the why-not "
    "answers.")
SPARK_VERSION_OPTION = typer.Option(
    None, "--spark-version", help="The Spark version that ran the plan, for its defaults (an "
    "event log says it itself), e.g. 3.5.1.")


@app.command("diff")
def diff_command(
    paths: Optional[List[str]] = typer.Argument(
        None, help="One plan text, event log or History Server JSON (- for stdin), or two: "
        "the INITIAL and the FINAL plan."),
    output_format: ReportFormat = FORMAT_OPTION,
    output: Optional[str] = OUTPUT_OPTION,
    max_size: str = MAX_SIZE_OPTION,
    query: Optional[str] = QUERY_OPTION,
    url: Optional[str] = URL_OPTION,
    tree: bool = typer.Option(False, "--tree", help="Text: each query's final plan as a tree, "
                              "the rewritten operators marked."),
    side_by_side: bool = typer.Option(
        False, "--side-by-side", help="Text: each query's initial and final plans in two "
        "columns, aligned, the rewritten operators marked in both."),
    width: Optional[int] = WIDTH_OPTION,
) -> None:
    """Say what AQE changed between the initial and the final plan, with the evidence."""
    from .api import diff_pair
    from .formats import get_format

    _refuse_inputs(output, *(paths or []))
    if tree and side_by_side:
        raise InspectError("--tree and --side-by-side are two views; choose one")
    chosen = get_format(output_format.value)
    if (tree or side_by_side) and not chosen.for_people:
        raise InspectError(f"--{'tree' if tree else 'side-by-side'} is a view of the text "
                           f"format, not of --format {chosen.name}")
    chosen = chosen.configured("tree" if tree else "side-by-side" if side_by_side else None,
                               _width(width))
    paths = paths or []
    if len(paths) == 2 and url is None:
        report = diff_pair(_document(_read(paths[0], max_size)),
                           _document(_read(paths[1], max_size)))
    else:
        report = _diff(_select(_read_input(paths, url, max_size, "diff"), query),
                       json=chosen.name == "json", replans=chosen.keeps_replans)
    _emit(output, lambda stream: chosen.write_report(report, stream), chosen.escapes_json)


@app.command("check")
def check_command(
    path: Optional[str] = typer.Argument(
        None, help="A plan text, log, event log (file or directory) or History Server JSON; "
        "- for stdin."),
    expect: List[str] = typer.Option(
        [], "--expect", "-e", help="A rewrite AQE must do: KIND (at least once), or KIND>=N, "
        "KIND=N, KIND<=N, KIND>N, KIND<N. Repeat for more."),
    forbid: List[str] = typer.Option([], "--forbid", help="A rewrite AQE must not do."),
    config: Optional[str] = typer.Option(
        None, "--config", "-c", help="An expectation file (aqe-expect.toml format, or a "
        "pyproject.toml with [tool.aqe-inspect]). Without --expect/--forbid, "
        "./aqe-expect.toml (else ./pyproject.toml's [tool.aqe-inspect]) is read."),
    each: bool = typer.Option(False, "--each", help="Hold every query on its own to the "
                              "command line's expectations, rather than their sum."),
    output_format: ReportFormat = FORMAT_OPTION,
    output: Optional[str] = OUTPUT_OPTION,
    max_size: str = MAX_SIZE_OPTION,
    query: Optional[str] = QUERY_OPTION,
    url: Optional[str] = URL_OPTION,
    width: Optional[int] = WIDTH_OPTION,
    snapshot: Optional[str] = typer.Option(
        None, "--snapshot", "-s", help="A snapshot file (from `aqe-inspect snapshot`): fail "
        "when the final plan's structure or AQE's rewrites differ from it, with the diff. "
        "With --snapshot alone, no expectation file is looked for."),
    conf: List[str] = CONF_OPTION,
    conf_file: Optional[str] = CONF_FILE_OPTION,
    spark_version: Optional[str] = SPARK_VERSION_OPTION,
) -> None:
    """Fail (exit 1) when AQE did not rewrite as expected (or the plan differs from --snapshot);
    exit 0 when every expectation holds."""
    from .expectations.check import check
    from .expectations.config import command_line_expectations, find_config, load_config
    from .formats import get_format

    chosen = get_format(output_format.value).configured(None, _width(width))
    # Expectations and the snapshot first: a typo fails at once, before a long input is read.
    expectations = command_line_expectations(expect, forbid, None, each)
    user = _user_settings(conf, conf_file)
    expected_snapshot = None
    if snapshot is not None:
        from .expectations.snapshot import load as load_snapshot

        expected_snapshot = load_snapshot(snapshot)
    if config is None and not expectations and snapshot is None:
        config = find_config(".")
        if config is None:
            raise InspectError("nothing to check: give --expect KIND or --forbid KIND, or "
                               "--config FILE, or put an aqe-expect.toml in the working "
                               "directory")
    _refuse_inputs(output, path, config, snapshot, conf_file)
    if config is not None:
        expectations = load_config(config) + expectations
    read = _read_input([path] if path is not None else [], url, max_size, "check",
                       task_metrics=True)
    report = _diff(_select(read, query, required=False), json=False,
                   replans=chosen.keeps_replans)
    if expected_snapshot is not None:
        result = _check_with_snapshot(report, expectations, query, snapshot, expected_snapshot,
                                      user, spark_version)
    else:
        result = check(report, expectations, selected_by=query, settings=user,
                       spark_version=spark_version)
    _emit(output, lambda stream: chosen.write_check(result, stream), chosen.escapes_json,
          summary=f"aqe-inspect check: {result.verdict}" if output is not None else None)
    if not result.passed:
        raise typer.Exit(1)


def _check_with_snapshot(report, expectations, query: Optional[str], path: str, expected: str,
                         user, spark_version: Optional[str]):
    """The expectations' outcomes, then the snapshot's: the report is read whole first (a
    snapshot is of every query selected, in order)."""
    import dataclasses

    from .expectations.check import check
    from .rewrites.findings import read_whole
    from .expectations.snapshot import outcome

    whole = read_whole(report)
    result = check(whole, expectations, selected_by=query, settings=user,
                   spark_version=spark_version)
    return dataclasses.replace(result, outcomes=(*result.outcomes,
                                                 outcome(path, whole, expected)))


def _width(width: Optional[int]) -> Optional[int]:
    from .formats.terminal import SMALLEST_WIDTH

    if width is not None and not SMALLEST_WIDTH <= width <= 10_000:
        raise InspectError(f"--width: expected a number of columns from {SMALLEST_WIDTH} to "
                           f"10000, found {width}")
    return width


def _read_input(paths: List[str], url: Optional[str], max_size: str, command: str,
                task_metrics: bool = False):
    """What one input names: a file, a directory, - (stdin), or a History Server URL."""
    if url is not None:
        if paths:
            raise InspectError(f"{command} takes a file or --url, not both")
        return _read_url(url, max_size)
    if len(paths) != 1:
        raise InspectError("diff takes one plan text, or an initial and a final plan"
                           if command == "diff" else f"{command} takes one input (a file, a "
                           "directory, or - for standard input) or --url")
    return _read(paths[0], max_size, task_metrics)


def _refuse_inputs(output: Optional[str], *inputs: Optional[str]) -> None:
    """`--output` naming one of the command's inputs (or a file in an input folder) is an
    error before anything is read: the report would replace what it reports on."""
    if output is not None:
        from .formats.outputs import refuse_inputs

        refuse_inputs(output, inputs)


def _emit(output: Optional[str], write, json: bool = False,
          summary: Optional[str] = None) -> None:
    """Write with `write(stream)`: to standard output, or whole to the file `output` (see
    `outputs.AtomicFile`: a file replaced atomically, a pipe or device written into once the
    report is complete; nothing left behind on any failure). `json`: what the encoding cannot
    hold is written as JSON escapes."""
    if output is None:
        write(_output(json=json))
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
        write(stream)
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
        _output().write(printable(summary) + "\n")


def _diff(read, json: bool = False, replans: bool = False):
    """A Document's report; for an event log's stream, a report diffed as it is read, its
    first query already read (so a `--query` that matches nothing fails before any output,
    and the application, whose events Spark writes first, is known for the header). With
    `replans`, an event log's every AQE update is kept for a timeline."""
    from .api import diff
    from .rewrites.engine import diff_built, diff_queries
    from .rewrites.findings import ReportStream
    from .formats.report_json import diff_built_json, with_application

    if not isinstance(read, _stream_type()):
        return diff(read)
    if replans:
        read.keep_replans()
    # Unselected, each execution is diffed where it is built (in the pool for a long log).
    # For JSON, the process that diffs an execution writes it too (only text comes back).
    reports = diff_queries(read.queries) if read.selected \
        else read.built_into(diff_built_json if json else diff_built)
    # Each query names the application it ran in (a folder may hold several).
    reports = (with_application(item, read.current_application) for item in reports)
    first = next(reports, None)
    queries = iter(()) if first is None else itertools.chain((first,), reports)
    return ReportStream(queries, read.source, read.notes, lambda: read.application)


def _stream_type():
    from .sources.eventlog import LogStream

    return LogStream


def _document(read):
    """A Document, whatever was read: an event log's stream read whole, each query naming
    the application it ran in (a folder may hold several)."""
    if not isinstance(read, _stream_type()):
        return read
    import dataclasses

    read.select(lambda queries: (dataclasses.replace(query, application=read.current_application)
                                 for query in queries))
    return read.document()


@app.command("why")
def why_command(
    path: Optional[str] = typer.Argument(
        None, help="A plan text, log, event log (file or directory) or History Server JSON; "
        "- for stdin."),
    query: Optional[str] = QUERY_OPTION,
    kind: List[str] = typer.Option(
        [], "--kind", "-k", help="Only this rewrite kind (repeat for more); `aqe-inspect "
        "rules` lists them."),
    conf: List[str] = CONF_OPTION,
    conf_file: Optional[str] = CONF_FILE_OPTION,
    spark_version: Optional[str] = SPARK_VERSION_OPTION,
    output_format: str = typer.Option("text", "--format", "-f", help="text or json."),
    output: Optional[str] = OUTPUT_OPTION,
    max_size: str = MAX_SIZE_OPTION,
    url: Optional[str] = URL_OPTION,
) -> None:
    """Say why AQE did NOT rewrite: every join and shuffle AQE could have rewritten, each
    rule's conditions against the run-time sizes and the settings in force."""
    from .whynot.cli import run_why

    if output_format not in ("text", "json"):
        raise InspectError(f"--format: expected text or json, found {output_format!r}")
    _refuse_inputs(output, path, conf_file)
    user = _user_settings(conf, conf_file)
    kinds = _kinds(kind)
    read = _read_input([path] if path is not None else [], url, max_size, "why",
                       task_metrics=True)
    report = _diff(_select(read, query))
    _emit(output, lambda stream: run_why(report, stream, user, spark_version, kinds,
                                         output_format == "json"), output_format == "json")


def _user_settings(conf: List[str], conf_file: Optional[str]):
    from .whynot.settings import Given, conf_option, read_conf_file

    found = read_conf_file(conf_file) if conf_file is not None else {}
    for item in conf:
        key, value = conf_option(item)
        found[key] = Given(value, "--conf")
    return found


def _kinds(kinds: List[str]):
    from .rewrites.findings import kind_hint, rewrite_kinds

    for kind in kinds:
        if kind not in rewrite_kinds():
            raise InspectError(f"--kind {printable(kind)}: not a rewrite kind; "
                               f"{kind_hint(kind)}")
    return tuple(kinds) or None


@app.command("snapshot")
def snapshot_command(
    path: str = typer.Argument(..., help="A plan text, log, event log or History Server JSON; "
                               "- for stdin."),
    output: Optional[str] = typer.Option(
        None, "--output", "-o", help="Write the snapshot to this file instead of standard "
        "output (written whole, or not at all)."),
    max_size: str = MAX_SIZE_OPTION,
    query: Optional[str] = QUERY_OPTION,
) -> None:
    """Write the final plan, normalised (ids renumbered; paths, sizes, partition counts
    masked), with AQE's rewrites: a snapshot for `check --snapshot`. Every query of the input,
    in order, unless --query chooses."""
    from .rewrites.findings import read_whole
    from .expectations.snapshot import take_all

    _refuse_inputs(output, path)
    text = take_all(read_whole(_diff(_select(_read(path, max_size), query))))
    _emit(output, lambda stream: stream.write(text))


@app.command("fleet")
def fleet_command(
    paths: List[str] = typer.Argument(
        ..., help="Event logs: files, folders (of applications, or a rolling log), globs; local "
        "paths or URIs Spark reads (s3a://, hdfs://)."),
    output: str = typer.Option(..., "--output", "-o", help="The folder the table is written "
                               "to, replaced whole (a re-run over it gives the same table)."),
    table_format: str = typer.Option("parquet", "--format", "-f", help="parquet or csv."),
    master: Optional[str] = typer.Option(
        None, "--master", help="Spark's master (default local[*]; under spark-submit, its own)."),
    summary_format: str = typer.Option("text", "--summary-format",
                                       help="text, markdown or html."),
    summary: Optional[str] = typer.Option(
        None, "--summary", help="Write the summary to this file instead of standard output."),
) -> None:
    """Scan many Spark event logs on Spark: one table row per application and SQL execution
    (what AQE rewrote, its figures and settings), then a summary."""
    from .fleet.job import FORMATS, require_pyspark, run_fleet

    if table_format not in FORMATS:
        raise InspectError(f"--format: expected parquet or csv, found {table_format!r}")
    if summary_format not in ("text", "markdown", "html"):
        raise InspectError(f"--summary-format: expected text, markdown or html, found "
                           f"{summary_format!r}")
    from .fleet.summary_formats import write_summary

    _refuse_inputs(summary, *paths)
    require_pyspark()
    skipped: List[str] = []  # files found in folders that are not event logs, as diff skips
    rows = run_fleet(paths, output, table_format, master, skipped=skipped)
    written = f"aqe-inspect fleet: {len(rows)} rows written to {output}"
    if skipped:
        written += f"; {len(skipped)} file(s) skipped, not event logs"
    _emit(summary, lambda stream: write_summary(rows, stream, summary_format,
                                                skipped=skipped),
          summary=written if summary is not None else None)


@app.command("rules")
def rules_command(
    kind: Optional[str] = typer.Argument(None, help="One rewrite kind (e.g. skew-join): print "
                                         "only its detector."),
) -> None:
    """List the rewrite detectors: what Spark rule each mirrors and what it looks for."""
    from .rewrites.detectors import DETECTORS
    from .formats.terminal import print_rules

    chosen = DETECTORS
    if kind is not None:
        from .rewrites.findings import kind_hint

        chosen = tuple(detector for detector in DETECTORS if detector.kind == kind)
        if not chosen:
            raise InspectError(f"rules: unknown rewrite kind '{printable(kind)}'; "
                               f"{kind_hint(kind)}")
    print_rules(chosen, _output())


@app.command("compare")
def compare_command(
    old: str = typer.Argument(..., help="The old run: an event log (file or folder), driver "
                              "log, plan text or History Server JSON (- for stdin), or a "
                              "fleet table (CSV or Parquet)."),
    new: str = typer.Argument(..., help="The new run, read the same way."),
    fail_on: List[str] = typer.Option(
        [], "--fail-on", help="What fails the comparison (exit 1): lost (default), gained, "
        "any, or none; KIND after a colon for one rewrite kind (lost:skew-join). Repeat or "
        "separate with commas."),
    output_format: str = typer.Option(
        "text", "--format", "-f", help="text, json, junit, github, sarif, markdown (a CI "
        "job summary) or html (the two runs' plans side by side)."),
    output: Optional[str] = OUTPUT_OPTION,
    max_size: str = MAX_SIZE_OPTION,
) -> None:
    """Compare two runs of the same job (a Spark upgrade, a config change): which executions
    lost or gained an adaptive rewrite, and why. Exit 1 when --fail-on holds, 0 when not."""
    from .compare import compare, parse_gate
    from .formats.compare import COMPARE_FORMAT_NAMES, JSON_ESCAPED, compare_writer

    if output_format not in COMPARE_FORMAT_NAMES:
        raise InspectError(f"--format: expected {', '.join(COMPARE_FORMAT_NAMES)}, found "
                           f"{printable(output_format)!r}")
    parse_gate(fail_on)  # a typo fails before a long input is read
    _refuse_inputs(output, old, new)
    write = compare_writer(output_format)
    result = compare(old, new, fail_on, max_size=_size(max_size),
                     plans=output_format == "html")
    json_escaped = output_format in JSON_ESCAPED
    if output is None:
        write(result, _output(json=json_escaped))
    else:
        _emit(output, lambda stream: write(result, stream), json_escaped,
              summary=f"aqe-inspect compare: {result.verdict}")
    if result.failed:
        raise typer.Exit(1)


def _read(path: str, max_size: str, task_metrics: bool = False):
    from .sources.routing import read_input

    # task_metrics: the tasks' shuffle reads, partition sizes for why-not answers.
    return read_input(path, _size(max_size), task_metrics=task_metrics)


def _read_url(url: str, max_size: str):
    from .sources.routing import read_url

    return read_url(url, _size(max_size))


def _select(read, selector: Optional[str], required: bool = True):
    """The queries `--query` names (see `selection`). An event log's stream stays a stream;
    none matching is an error once it is read."""
    import dataclasses

    from .expectations.selection import Selector

    if selector is None:
        return read
    chosen = Selector.parse(selector)

    def kept(queries):
        seen = matched = 0
        for seen, query in enumerate(queries, 1):
            if chosen.selects(seen, query):
                matched += 1
                yield query
        if not matched and required:
            raise InspectError(f"--query {selector}: no execution matches (the input holds "
                               f"{seen})", source=read.source)

    if isinstance(read, _stream_type()):
        read.select(kept)
        return read
    return dataclasses.replace(read, queries=tuple(kept(read.queries)))


def _size(text: str) -> int:
    """`64M`, `2G`, `500k` or a number of bytes."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    value = text.strip().lower().rstrip("b").rstrip("i")
    try:
        size = int(float(value[:-1]) * units[value[-1]]) if value and value[-1] in units \
            else int(value)
    except (ValueError, OverflowError):
        size = 0
    if size <= 0:
        raise InspectError(f"--max-size: expected a size such as 256M, found {text!r}")
    return size



# ---- standard output ----------------------------------------------------------------------

def _output(json: bool = False) -> Output:
    return Output(sys.stdout, json)


def _flush(stream) -> None:
    try:
        stream.flush()
    except OSError as error:
        raise OutputError(error) from None


def _abandon_stdout() -> None:
    """After a failed write, point standard output at /dev/null: what is still buffered goes
    there when Python exits, instead of failing again with a traceback and exit code 120."""
    try:
        fd = sys.stdout.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except (AttributeError, OSError, ValueError):  # not a real file (tests), or already gone
        pass


# ---- running ------------------------------------------------------------------------------

def _say(line: str) -> None:
    """One line on standard error, whatever it holds; nothing if standard error is gone."""
    try:
        sys.stderr.write(printable(line) + "\n")
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):
        pass


def _fail(message: str) -> int:
    _say(f"aqe-inspect: error: {message}")
    return 2


def _invoke(argv: Optional[List[str]]) -> int:
    """Parse the arguments and run the command; errors are raised to `main`, not printed.
    (The click main loop is not used: it prints a newline on Ctrl-C, and exits 1 on EPIPE.)"""
    command = typer.main.get_command(app)
    args = sys.argv[1:] if argv is None else list(argv)
    with command.make_context("aqe-inspect", args) as context:
        command.invoke(context)
    return 0


# ---- signals ------------------------------------------------------------------------------

_signalled: Optional[int] = None  # the signal that ended this run, if one did


class Interrupted(KeyboardInterrupt):
    """A signal (SIGINT, SIGTERM, SIGHUP) ended the run."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum: int, frame) -> None:
    """The first ending signal: later ones are ignored while the run unwinds (it takes well
    under a second), so that none can stop a temporary file's removal half-way."""
    global _signalled
    for each in ENDING_SIGNALS:
        signal.signal(each, signal.SIG_IGN)
    if _signalled is None:
        _signalled = signum
        raise Interrupted(signum)


def _catch_signals():
    """Install `_on_signal` for the ending signals (from the main thread only: a library
    caller's thread keeps its process's handlers); the handlers replaced, to restore."""
    previous = {}
    for each in ENDING_SIGNALS:
        try:
            previous[each] = signal.signal(each, _on_signal)
        except (ValueError, OSError):  # not the main thread; or a signal not to be caught
            break
    return previous


def _restore_signals(previous) -> None:
    for each, handler in previous.items():
        try:
            signal.signal(each, handler if handler is not None else signal.SIG_DFL)
        except (ValueError, OSError, TypeError):
            pass


def _stop_workers() -> None:
    """End the event-log reader's worker processes, if it started any."""
    events = sys.modules.get("aqe_inspect.sources.eventlog.events")
    if events is not None:
        try:
            events.stop_workers()
        except Exception:  # noqa: BLE001 - ending the run matters more
            pass


def _interrupted() -> int:
    """Ctrl-C or another ending signal: the workers ended, one line, 128 + the signal."""
    _stop_workers()
    signum = _signalled if _signalled is not None else signal.SIGINT
    name = "" if signum == signal.SIGINT else f" ({signal.Signals(signum).name})"
    _say(f"aqe-inspect: interrupted{name}")
    return 128 + signum


def _leave(code: int) -> None:
    """End the process now, its output flushed: after a signal, nothing is left to clean (the
    temporary file is gone, the workers are dead), and the interpreter's own exit would wait on
    the pool's threads, which may wait on a pipe no one reads any more."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed or broken stream: nothing to keep
            pass
    os._exit(code)


def main(argv: Optional[List[str]] = None) -> int:
    """Run the CLI: the exit code, and at most one line on standard error. Run as the command
    (no `argv`), a signal that ended the run ends the process at once with that code."""
    global _signalled
    _signalled = None
    previous = _catch_signals()
    try:
        try:
            code = _main(argv)
        except KeyboardInterrupt:  # Ctrl-C or a signal, wherever it falls, even while
            code = _interrupted()  # reporting an error
    finally:
        _restore_signals(previous)
    if _signalled is not None and argv is None:
        _leave(code)
    return code


def _main(argv: Optional[List[str]]) -> int:
    # Plan trees are built by the ten thousand objects and hold no cycles: a cyclic collection
    # every 700 allocations (the default) costs about a tenth of a parse, and frees nothing.
    gc.set_threshold(50_000, 50, 100)
    if sys.stdout is None:  # started with standard output closed (`>&-`)
        return _fail("cannot write the output: standard output is closed")
    reconfigure = getattr(sys.stderr, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")
    try:
        try:
            code = _invoke(argv)
        except typer.Exit as done:  # --version, --help
            code = done.exit_code
        _flush(sys.stdout)
        return code
    except OutputError as error:
        return _output_failed(error)
    except OSError as error:
        if error.filename is not None:  # not a write to standard output
            return _internal_error(error)
        # click writes --help and --version itself, straight to standard output.
        return _output_failed(OutputError(error))
    except InspectError as error:
        return _fail(str(error))
    except getattr(usage_errors, "NoArgsIsHelpError", ()) as error:
        # `aqe-inspect` alone: the help, on stderr, and exit 2 as for any call without a command.
        try:
            sys.stderr.write(error.format_message())
        except (AttributeError, OSError, ValueError):
            pass
        return 2
    except usage_errors.UsageError as error:
        return _fail(" ".join(error.format_message().split()))
    except usage_errors.ClickException as error:
        return _fail(" ".join(error.format_message().split()))
    except typer.Abort:
        _say("aqe-inspect: interrupted")
        return 130
    except MemoryError:
        return _fail("not enough memory to read this plan")
    except Exception as error:  # noqa: BLE001 - the promise is one line, never a traceback
        return _internal_error(error)


def _output_failed(error: OutputError) -> int:
    _abandon_stdout()
    if error.reader_left:
        return 0
    return _fail(f"cannot write the output: {error}")


def _internal_error(error: Exception) -> int:
    """A bug: no input should lead here. Still one line, with what to report."""
    detail = " ".join(str(error).split())[:300]
    return _fail(f"internal error ({type(error).__name__}: {detail}); please report it with "
                 "the input that caused it")


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    run()
