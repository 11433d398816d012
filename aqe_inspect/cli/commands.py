"""The `aqe-inspect` commands as typer declares them: each one's arguments, options and help.

`cli` runs them (`cli.main`); this module is imported by the run that needs typer (every run
but the quick route of `cli`: `parse PATH` and `diff PATH`, each with at most `--format`), and
by whoever asks `cli` for `app`.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping
from enum import Enum
from typing import List, Optional

import typer

try:  # typer 0.2x vendors click; earlier releases use click itself
    from typer._click import exceptions as usage_errors
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as usage_errors  # type: ignore[no-redef]

from .. import api
from ..api import FORMAT_NAMES
from ..version import __version__
from .work import run_diff, run_parse


class _Commands(Mapping):
    """The commands of a Typer app, for its click group, each built when first asked for.

    Typer builds a command's options from its function's signature (`typing.get_type_hints`,
    `inspect.signature`): about a millisecond a command, more than reading a small plan. A run
    needs one command; `--help` needs only each one's name and short help, which `summaries`
    gives from the command's docstring alone."""

    def __init__(self, typer_app: "typer.Typer"):
        self._app = typer_app
        self._infos = {info.name or typer.main.get_command_name(info.callback.__name__): info
                       for info in typer_app.registered_commands}
        self._built: dict = {}

    def __getitem__(self, name: str):
        command = self._built.get(name)
        if command is None:
            command = self._built[name] = typer.main.get_command_from_info(
                self._infos[name], pretty_exceptions_short=self._app.pretty_exceptions_short,
                rich_markup_mode=self._app.rich_markup_mode)
        return command

    def __iter__(self):
        return iter(self._infos)

    def __len__(self) -> int:
        return len(self._infos)

    def summaries(self) -> dict:
        """Each command as its group's help lists it (name, help, short help, hidden,
        deprecated, as typer gives them), without its options; a command built is itself."""
        return {name: self._built.get(name) or self._summary(name, info)
                for name, info in self._infos.items()}

    @staticmethod
    def _summary(name: str, info):
        text = inspect.getdoc(info.callback) if info.help is None else inspect.cleandoc(info.help)
        return (info.cls or typer.core.TyperCommand)(
            name=name, help=text, short_help=info.short_help, hidden=info.hidden,
            deprecated=info.deprecated)


class _Group(typer.core.TyperGroup):
    """The command group, its commands (`_Commands`) built when asked for: its help lists them
    from their summaries."""

    def format_commands(self, ctx, formatter) -> None:
        commands = self.commands
        if isinstance(commands, _Commands):
            self.commands = commands.summaries()
        try:
            super().format_commands(ctx, formatter)
        finally:
            self.commands = commands


app = typer.Typer(
    name="aqe-inspect",
    help="Read Apache Spark AQE plans: parse explain output and name every adaptive rewrite.",
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    cls=_Group,
)

MAX_SIZE_HELP = "The most text held at once (one line, one plan), e.g. 512M."
#: What every command reading one input takes.
INPUT_HELP = ("A plan text, a driver log, an event log (file or folder, any codec) or History "
              "Server JSON; - for stdin.")
QUERY_HELP = ("Only this SQL execution of an event log (its execution id, e.g. 3) or the "
              "executions whose description matches this regular expression; of a plan text "
              "or driver log, query N is the Nth in the file (from 1).")


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
        typer.echo(api.core())
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Read Apache Spark AQE plans: parse explain output and name every adaptive rewrite."""


@app.command("parse")
def parse_command(
    path: str = typer.Argument(..., help=INPUT_HELP),
    output_format: ParseFormat = typer.Option(ParseFormat.tree, "--format", "-f",
                                              help="tree (for people) or json."),
    max_size: str = typer.Option(api.DEFAULT_MAX_SIZE, "--max-size", help=MAX_SIZE_HELP),
    query: Optional[str] = typer.Option(None, "--query", "-q", help=QUERY_HELP),
) -> None:
    """Parse the plans in a text (explain output, a log, a pasted plan, a Spark event log,
    History Server JSON) into trees."""
    run_parse(path, output_format.value, max_size=max_size, query=query)


# Options `diff` and `check` share (typer takes one declaration in several commands).
FORMAT_OPTION = typer.Option("text", "--format", "-f", help=FORMAT_HELP)
OUTPUT_OPTION = typer.Option(None, "--output", "-o", help=OUTPUT_HELP)
MAX_SIZE_OPTION = typer.Option(api.DEFAULT_MAX_SIZE, "--max-size", help=MAX_SIZE_HELP)
QUERY_OPTION = typer.Option(None, "--query", "-q", help=QUERY_HELP)
WIDTH_OPTION = typer.Option(
    None, "--width", help="Print text this many columns wide (default: the terminal's; when "
    "not a terminal, COLUMNS, else 100).")
URL_OPTION = typer.Option(
    None, "--url", help="Read the SQL executions from a running Spark UI or History Server: "
    "its address (http://127.0.0.1:4040, a page of its UI, .../api/v1/applications), the "
    "application's URL (http://host:18080/api/v1/applications/APP) or its /sql URL.")


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
        None, help=INPUT_HELP[:-1] + ", or two plan texts: the INITIAL and the FINAL plan."),
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
    run_diff(paths or [], output_format.value, output=output, max_size=max_size, query=query,
             url=url, tree=tree, side_by_side=side_by_side, width=width)


@app.command("check")
def check_command(
    path: Optional[str] = typer.Argument(
        None, help=INPUT_HELP),
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
    judge_unfinished: bool = typer.Option(
        False, "--judge-unfinished", help="Judge queries that had not finished (a cut or "
        "in-progress log, isFinalPlan=false) on what they hold. Without it their "
        "expectations are `unfinished` and fail."),
) -> None:
    """Fail (exit 1) when AQE did not rewrite as expected (or the plan differs from --snapshot),
    or when a query an expectation is about had not finished; exit 0 when every expectation
    holds."""
    chosen = api.report_format(output_format.value, width=width)
    result = api.check_input(path, url=url, expect=expect, forbid=forbid, config=config,
                             each=each, snapshot=snapshot, conf=conf, conf_file=conf_file,
                             spark_version=spark_version, max_size=max_size, query=query,
                             for_format=chosen, output=output,
                             judge_unfinished=judge_unfinished)
    _write_verdict(not result.passed, result, chosen, output,
                   summary=f"aqe-inspect check: {result.verdict}" if output is not None
                   else None)


def _write_verdict(failed: bool, *args, **kwargs) -> None:
    """`api.write(*args, **kwargs)` of a check or comparison, then exit 1 when its verdict
    `failed` (FAIL or UNFINISHED), whether or not the reader stayed: a failure to write to a
    reader that left early (`check ... | head -1` under `set -o pipefail`) keeps the code."""
    try:
        api.write(*args, **kwargs)
    except api.OutputError as error:
        error.exit_code = max(error.exit_code, 1 if failed else 0)
        raise
    if failed:
        raise typer.Exit(1)


@app.command("why")
def why_command(
    path: Optional[str] = typer.Argument(
        None, help=INPUT_HELP),
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
    width: Optional[int] = WIDTH_OPTION,
) -> None:
    """Say why AQE did NOT rewrite: every join and shuffle AQE could have rewritten, each
    rule's conditions against the run-time sizes and the settings in force."""
    api.report_format(width=width)  # --width refused before a long input is read
    answers = api.why(path, url=url, query=query, kinds=kind, conf=conf, conf_file=conf_file,
                      spark_version=spark_version, max_size=max_size,
                      for_format=output_format, output=output)
    api.write(answers, output_format, output, width=width)


@app.command("advise")
def advise_command(
    path: Optional[str] = typer.Argument(
        None, help=INPUT_HELP),
    query: Optional[str] = QUERY_OPTION,
    kind: List[str] = typer.Option(
        [], "--kind", "-k", help="Only this rewrite kind, or `adaptive` for AQE itself (repeat "
        "for more); `aqe-inspect rules` lists them."),
    conf: List[str] = CONF_OPTION,
    conf_file: Optional[str] = CONF_FILE_OPTION,
    spark_version: Optional[str] = SPARK_VERSION_OPTION,
    output_format: str = typer.Option(
        "text", "--format", "-f", help="text, json, markdown or spark-submit (one --conf "
        "KEY=VALUE line a setting, nothing else)."),
    output: Optional[str] = OUTPUT_OPTION,
    max_size: str = MAX_SIZE_OPTION,
    url: Optional[str] = URL_OPTION,
    width: Optional[int] = WIDTH_OPTION,
) -> None:
    """Say what to change so that AQE rewrites where it did not: for each decision that did
    not fire and could, the setting, a value with headroom over the run's measured figure,
    where the current value came from, and what else the change does."""
    api.report_format(width=width)  # --width refused before a long input is read
    advice = api.advise(path, url=url, query=query, kinds=kind, conf=conf, conf_file=conf_file,
                        spark_version=spark_version, max_size=max_size,
                        for_format=output_format, output=output)
    api.write(advice, output_format, output, width=width)


@app.command("snapshot")
def snapshot_command(
    path: str = typer.Argument(..., help=INPUT_HELP),
    output: Optional[str] = typer.Option(
        None, "--output", "-o", help="Write the snapshot to this file instead of standard "
        "output (written whole, or not at all)."),
    max_size: str = MAX_SIZE_OPTION,
    query: Optional[str] = QUERY_OPTION,
) -> None:
    """Write the final plan, normalised (ids renumbered; paths, sizes, partition counts
    masked), with AQE's rewrites: a snapshot for `check --snapshot`. Every query of the input,
    in order, unless --query chooses."""
    api.write(api.snapshot(path, max_size=max_size, query=query, output=output), output=output)


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
    width: Optional[int] = WIDTH_OPTION,
) -> None:
    """Scan many Spark event logs on Spark: one table row per application and SQL execution
    (what AQE rewrote, its figures and settings), then a summary."""
    api.report_format(width=width)  # --width refused before the scan
    result = api.fleet(paths, output, table_format=table_format, master=master,
                       summary_format=summary_format, summary=summary)
    written = f"aqe-inspect fleet: {len(result.rows)} rows written to {output}"
    if result.skipped:
        written += f"; {len(result.skipped)} file(s) skipped, not event logs"
    api.write(result, output=summary, summary=written if summary is not None else None,
              width=width)


@app.command("rules")
def rules_command(
    kind: Optional[str] = typer.Argument(None, help="One rewrite kind (e.g. skew-join): print "
                                         "only its detector."),
) -> None:
    """List the rewrite detectors: what Spark rule each mirrors and what it looks for."""
    api.write(api.rules(kind))


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
    judge_unfinished: bool = typer.Option(
        False, "--judge-unfinished", help="Judge executions that had not finished (a cut or "
        "in-progress log, isFinalPlan=false) on what they hold, instead of failing them as "
        "unfinished (no verdict)."),
    allow_missing: bool = typer.Option(
        False, "--allow-missing", help="Leave executions of the old run that the new run "
        "does not hold (it failed or stopped early, or no longer runs them) out of the "
        "verdict, instead of failing them as unfinished (no verdict)."),
    width: Optional[int] = WIDTH_OPTION,
) -> None:
    """Compare two runs of the same job (a Spark upgrade, a config change): which executions
    lost or gained an adaptive rewrite, and why. Exit 1 when --fail-on holds or an execution
    had not finished or is missing from the new run (unfinished: no verdict), 0 when not."""
    api.report_format(width=width)  # --width refused before a long input is read
    result = api.compare(old, new, fail_on, for_format=output_format, output=output,
                         max_size=api.size(max_size), judge_unfinished=judge_unfinished,
                         allow_missing=allow_missing)
    _write_verdict(result.failed, result, output_format, output,
                   summary=f"aqe-inspect compare: {result.verdict}", width=width)


@app.command("mcp")
def mcp_command(
    http: Optional[int] = typer.Option(
        None, "--http", metavar="PORT", help="Serve streamable HTTP on this port, at /mcp "
        "(0: a free port, said on standard error), instead of stdio."),
    host: str = typer.Option("127.0.0.1", "--host", help="The address the HTTP server binds "
                             "(loopback unless you name another)."),
    allow: List[str] = typer.Option(
        [], "--allow", metavar="DIR", help="A folder the agent may read (repeat for more). "
        "A client's roots only narrow these (over stdio without --allow, its roots are the "
        "folders)."),
    allow_url: List[str] = typer.Option(
        [], "--allow-url", metavar="HOST", help="A History Server or Spark UI host the agent "
        "may read (host, host:port or a URL; repeat for more)."),
    max_size: str = MAX_SIZE_OPTION,
    allow_host: List[str] = typer.Option(
        [], "--allow-host", metavar="NAME", help="With --http: a name (or NAME:PORT) requests "
        "may give as their Host besides the loopback names and the address bound, for the "
        "rare remote use (repeat for more)."),
    max_connections: int = typer.Option(
        256, "--max-connections", metavar="N", help="With --http: the most connections at "
        "once (fewer under a low descriptor limit); past it a new one takes the place of "
        "the oldest idle one, or is refused."),
    max_sessions: int = typer.Option(
        100, "--max-sessions", metavar="N", help="With --http: the most sessions at once; "
        "past it a new one takes the place of the one idle the longest, or is refused."),
    session_idle: str = typer.Option(
        "5m", "--session-idle", metavar="DURATION", help="With --http: a session with no "
        "request for this long ends (seconds, or 90s, 5m, 1h)."),
) -> None:
    """Serve aqe-inspect to AI agents: a Model Context Protocol server (stdio, or HTTP with
    --http) whose tools list an event log's executions, diff, plans, why, check, compare and
    rules; read-only, and only inside the folders and hosts allowed. Needs the mcp extra."""
    from ..mcp_server import serve

    serve(http, host, allow, allow_url, max_size, allow_host, max_connections, max_sessions,
          session_idle)


def command_group():
    """`app`'s click group, as `typer.main.get_command(app)` makes it, but each command built
    only when the run asks for it (`_Commands`)."""
    shell = copy.copy(app)
    shell.registered_commands = []
    group = typer.main.get_command(shell)
    group.commands = _Commands(app)
    return group
