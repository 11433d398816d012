"""The `aqe-inspect` command: a thin layer over the library API.

Start-up matters (it runs in CI loops and pipes), so this module imports only typer at load
time; the parser, Lark and rich are imported by the command that needs them.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import List, Optional

import typer

try:  # typer 0.2x vendors click; earlier releases use click itself
    from typer._click import exceptions as usage_errors
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as usage_errors  # type: ignore[no-redef]

from . import __version__
from .errors import InspectError

app = typer.Typer(
    name="aqe-inspect",
    help="Read Apache Spark AQE plans: parse explain output and name every adaptive rewrite.",
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


def _size(text: str) -> int:
    """`64M`, `2G`, `500k` or a number of bytes."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower().rstrip("b").rstrip("i")
    try:
        if text and text[-1] in units:
            return int(float(text[:-1]) * units[text[-1]])
        return int(text)
    except ValueError:
        raise typer.BadParameter(f"expected a size such as 256M, found {text!r}") from None


MAX_SIZE_HELP = "The most text held at once (one line, one plan), e.g. 512M; default 256M."


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
    from .sources import read_document

    document = read_document(path, _size(max_size))
    if output_format is ParseFormat.json:
        from .serialize import document_to_json

        _print_json(document_to_json(document))
    else:
        from .render import print_document_tree

        print_document_tree(document)


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
    from .sources import read_document

    if len(paths) > 2:
        raise InspectError("diff takes one plan text, or an initial and a final plan")
    limit = _size(max_size)
    if len(paths) == 2:
        report = diff_pair(read_document(paths[0], limit), read_document(paths[1], limit))
    else:
        report = diff(read_document(paths[0], limit))
    if output_format is ReportFormat.json:
        from .serialize_report import report_to_json

        _print_json(report_to_json(report))
    else:
        from .render import print_report

        print_report(report)


@app.command("rules")
def rules_command() -> None:
    """List the rewrite detectors: what Spark rule each mirrors and what it looks for."""
    from .detectors import DETECTORS
    from .render import print_rules

    print_rules(DETECTORS)


def _print_json(data: object) -> None:
    import json

    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False))
    sys.stdout.write("\n")


def _fail(message: str) -> int:
    sys.stderr.write(f"aqe-inspect: error: {message}\n")
    return 2


def main(argv: Optional[List[str]] = None) -> int:
    """Run the CLI; every user error is one line on stderr and exit code 2, never a traceback."""
    try:
        app(args=argv, prog_name="aqe-inspect", standalone_mode=False)
    except InspectError as error:
        return _fail(str(error))
    except getattr(usage_errors, "NoArgsIsHelpError", ()) as error:
        # `aqe-inspect` alone: the help, on stderr, and exit 2 as for any call without a command.
        sys.stderr.write(error.format_message())
        return 2
    except usage_errors.UsageError as error:
        return _fail(" ".join(error.format_message().split()))
    except usage_errors.ClickException as error:
        return _fail(" ".join(error.format_message().split()))
    except typer.Exit as done:
        return done.exit_code
    except typer.Abort:
        return _fail("interrupted")
    except BrokenPipeError:
        # `aqe-inspect parse big.txt | head`: the reader left; that is not our error.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return _fail("interrupted")
    except Exception as error:  # noqa: BLE001 - the promise is one line, never a traceback
        return _fail(f"internal error ({type(error).__name__}: {error}); please report it "
                     "with the input that caused it")
    return 0


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    run()
