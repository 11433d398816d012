"""The `aqe-inspect` command: a thin layer over the library API.

Start-up matters (it runs in CI loops and pipes), so this module imports only typer at load
time; the parser, Lark and rich are imported by the command that needs them.

The promise to a user: any input gives a result, or one line `aqe-inspect: error: ...` on
standard error and exit code 2; Ctrl-C is one line `aqe-inspect: interrupted` and exit 130;
a reader that leaves early (`| head`) is no error (exit 0). Never a traceback.
"""

from __future__ import annotations

import codecs
import os
import sys
from enum import Enum
from typing import List, Optional

try:  # Ctrl-C while typer loads (most of the start-up) is an interruption like any other
    import typer

    try:  # typer 0.2x vendors click; earlier releases use click itself
        from typer._click import exceptions as usage_errors
    except ImportError:  # pragma: no cover - depends on the installed typer
        from click import exceptions as usage_errors  # type: ignore[no-redef]
except KeyboardInterrupt:  # pragma: no cover - timing
    sys.stderr.write("aqe-inspect: interrupted\n")
    raise SystemExit(130) from None

from . import __version__
from .errors import InspectError, OutputError, printable

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


class ParseFormat(str, Enum):
    tree = "tree"
    json = "json"


class ReportFormat(str, Enum):
    text = "text"
    json = "json"


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
) -> None:
    """Parse the plans in a text (explain output, a log, a pasted plan) into trees."""
    document = _read(path, max_size)
    if output_format is ParseFormat.json:
        from .serialize import write_document_json

        write_document_json(document, _output(json=True))
    else:
        from .render import print_document_tree

        print_document_tree(document, _output())


@app.command("diff")
def diff_command(
    paths: List[str] = typer.Argument(
        ..., help="One plan text (- for stdin), or two: the INITIAL and the FINAL plan."),
    output_format: ReportFormat = typer.Option(ReportFormat.text, "--format", "-f",
                                               help="text (for people) or json."),
    max_size: str = typer.Option("256M", "--max-size", help=MAX_SIZE_HELP),
) -> None:
    """Say what AQE changed between the initial and the final plan, with the evidence."""
    from .api import diff, diff_pair

    if len(paths) > 2:
        raise InspectError("diff takes one plan text, or an initial and a final plan")
    if len(paths) == 2:
        report = diff_pair(_read(paths[0], max_size), _read(paths[1], max_size))
    else:
        report = diff(_read(paths[0], max_size))
    if output_format is ReportFormat.json:
        from .serialize import write_json
        from .serialize_report import report_to_json

        write_json(report_to_json(report), _output(json=True))
    else:
        from .render import print_report

        print_report(report, _output())


@app.command("rules")
def rules_command() -> None:
    """List the rewrite detectors: what Spark rule each mirrors and what it looks for."""
    from .detectors import DETECTORS
    from .render import print_rules

    print_rules(DETECTORS, _output())


def _read(path: str, max_size: str):
    from .sources import read_document

    if path == STDIN and sys.stdin is None:  # started with standard input closed (`<&-`)
        raise InspectError("cannot read: standard input is closed", source="<stdin>")
    return read_document(path, _size(max_size))


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

def _json_escape(error: UnicodeError):
    """An encoding error handler for JSON: what the stream's encoding cannot hold is written
    as a `\\uXXXX` escape, which means the same character to any JSON reader."""
    escaped = []
    for char in error.object[error.start:error.end]:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            escaped.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            escaped.append(f"\\u{code:04x}")
    return "".join(escaped), error.end


JSON_ESCAPE = "aqe-inspect-json-escape"
codecs.register_error(JSON_ESCAPE, _json_escape)


class _Output:
    """Standard output as the commands write to it: what its encoding cannot hold is escaped
    (a plan or a file name may hold anything), and a failure to write is an OutputError."""

    def __init__(self, stream, json: bool):
        self.stream = stream
        self.encoding = getattr(stream, "encoding", None)
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=JSON_ESCAPE if json else "backslashreplace")

    def write(self, text: str) -> None:
        try:
            self.stream.write(text)
        except OSError as error:
            raise OutputError(error) from None

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()


def _output(json: bool = False) -> _Output:
    return _Output(sys.stdout, json)


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


def main(argv: Optional[List[str]] = None) -> int:
    """Run the CLI: the exit code, and at most one line on standard error."""
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C, wherever it falls, even while reporting an error
        _say("aqe-inspect: interrupted")
        return 130


def _main(argv: Optional[List[str]]) -> int:
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
