"""The `aqe-inspect` command: a thin layer over the library API (`api`).

Each command turns its options into one call of `api` and hands the result to `api.write`
(standard output, or `--output FILE` written whole); reading, routing, selecting, streaming,
diffing, checking and writing are the library's. This module imports nothing below `api`;
the commands' declarations for typer (arguments, options, help) are `cli.commands`, and what
the commands with a quick route do, `cli.work`.

May import: `api`, `version`, and `mcp_server` (the `mcp` command starts the server).

Start-up matters (it runs in CI loops and pipes), so this module imports only `api` (whose
own imports are the light foundations) at load time; typer and the commands are imported by a
run that needs them (all but the commonest command lines, `parse PATH` and `diff PATH`: see
`_quick_route`), and the parser, Lark and rich by the function that needs them.

The promise to a user: any input gives a result, or one line `aqe-inspect: error: ...` on
standard error and exit code 2; Ctrl-C is one line `aqe-inspect: interrupted` and exit 130,
SIGTERM and SIGHUP the same line naming the signal and exit 143 and 129 (128 + the signal's
number), within a second, the pool's worker processes ended and no temporary file left (a
signal the process was started with ignored, as under `nohup`, stays ignored); a reader that
leaves early (`| head`) is no error: exit 0, or 1 for a `check` or `compare` whose verdict
failed (FAIL or UNFINISHED), which stands whether or not the reader stayed. Never a traceback,
from any process.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from typing import List, Optional


def _ending_while_loading(signum: int, frame) -> None:
    raise KeyboardInterrupt(signum)


# Ctrl-C, SIGTERM or SIGHUP while this module's imports load is an interruption like any
# other: one line, 128 + the signal. The handlers are this import's only; typer and the
# commands load later, in `main`, under its own handlers. (The signals named here are
# api.ENDING_SIGNALS, before the library is imported.)
_loading_handlers = {}
for _each in tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                   if hasattr(signal, name)):
    try:
        if signal.getsignal(_each) == signal.SIG_IGN:  # nohup, a shell's background job
            continue
        _loading_handlers[_each] = signal.signal(_each, _ending_while_loading)
    except (ValueError, OSError):  # imported from another thread than the main one
        break
try:
    from .. import api
    from ..api import ENDING_SIGNALS, FORMAT_NAMES, InspectError, OutputError, printable
    from .work import run_diff, run_parse
except KeyboardInterrupt as _interruption:  # pragma: no cover - timing
    _number = _interruption.args[0] if _interruption.args and \
        isinstance(_interruption.args[0], int) else signal.SIGINT
    _named = "" if _number == signal.SIGINT else f" ({signal.Signals(_number).name})"
    sys.stderr.write(f"aqe-inspect: interrupted{_named}\n")
    raise SystemExit(128 + _number) from None
finally:
    for _each, _handler in _loading_handlers.items():
        signal.signal(_each, _handler if _handler is not None else signal.SIG_DFL)


# ---- standard output ----------------------------------------------------------------------

def _flush(stream, code: int = 0) -> None:
    """Standard output's last flush; `code` is the exit code the run has earned so far, which
    a reader that left early does not change (`OutputError.exit_code`)."""
    try:
        stream.flush()
    except OSError as error:
        raise OutputError(error, code) from None


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
    args = sys.argv[1:] if argv is None else list(argv)
    if _quick_route(args):
        return 0
    from .commands import command_group

    command = command_group()
    with command.make_context("aqe-inspect", args) as context:
        command.invoke(context)
    return 0


#: `--format` as the quick route takes it (typer's own spellings, apart: `-f NAME`).
_FORMAT_FLAGS = ("--format", "-f")


def _quick_route(args: List[str]) -> bool:
    """Run the commonest command lines without typer (its import is most of a small run's
    start-up): `parse PATH` and `diff PATH`, each with `--format NAME` (or `-f NAME`) before or
    after PATH, NAME one the command takes, PATH one input (`-` for standard input, else not
    an option). They run the commands' own code (`run_parse`, `run_diff`) with typer's
    defaults for the rest. Any other command line, a mistaken one too, goes to typer (False):
    it alone says what is wrong, in its words."""
    if len(args) not in (2, 4) or args[0] not in ("parse", "diff"):
        return False
    command, rest = args[0], args[1:]
    chosen = "tree" if command == "parse" else "text"
    if len(rest) == 3:
        if rest[0] in _FORMAT_FLAGS:
            chosen, rest = rest[1], rest[2:]
        elif rest[1] in _FORMAT_FLAGS:
            chosen, rest = rest[2], rest[:1]
        else:
            return False
    path = rest[0]
    if path.startswith("-") and path != "-":
        return False
    if command == "parse":
        if chosen not in api.DOCUMENT_FORMATS:
            return False
        run_parse(path, chosen)
    else:
        if chosen not in FORMAT_NAMES:
            return False
        run_diff([path], chosen)
    return True


def _typer_error(name: str):
    """The exception class `name` of typer (`Exit`, `Abort`) or of the click it uses
    (`UsageError`...), to catch; when this run did not load typer (the quick route), none of
    them can be raised: `()`, which catches nothing."""
    commands = sys.modules.get(f"{__name__}.commands")
    if commands is None:
        return ()
    return getattr(commands.typer if name in ("Exit", "Abort") else commands.usage_errors, name, ())


def __getattr__(name: str):
    """The typer app and its commands (`app`, `parse_command`, ...), from `commands`: imported
    when asked for, as only a run through typer needs them."""
    if name.startswith("__") or name in ("commands", "work"):  # dunders; the submodules
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import commands

    try:
        return getattr(commands, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


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
    caller's thread keeps its process's handlers); the handlers replaced, to restore. A
    signal the process was started with ignored stays ignored, as the one who started it
    asked: `nohup aqe-inspect ...` outlives its terminal's hangup, and a job a shell starts in
    the background (`&`, where Ctrl-C is ignored) is not ended by Ctrl-C (as Python itself
    leaves SIGINT ignored then)."""
    previous = {}
    for each in ENDING_SIGNALS:
        try:
            if signal.getsignal(each) == signal.SIG_IGN:
                continue
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


def _interrupted() -> int:
    """Ctrl-C or another ending signal: the workers ended, one line, 128 + the signal."""
    api.stop_workers()
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
        except _typer_error("Exit") as done:  # --version, --help; a verdict that failed
            code = done.exit_code
        _flush(sys.stdout, code)
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
    except _typer_error("NoArgsIsHelpError") as error:
        # `aqe-inspect` alone: the help, on stderr, and exit 2 as for any call without a command.
        try:
            sys.stderr.write(error.format_message())
        except (AttributeError, OSError, ValueError):
            pass
        return 2
    except _typer_error("UsageError") as error:
        return _fail(" ".join(error.format_message().split()))
    except _typer_error("ClickException") as error:
        return _fail(" ".join(error.format_message().split()))
    except _typer_error("Abort"):
        _say("aqe-inspect: interrupted")
        return 130
    except MemoryError:
        return _fail("not enough memory to read this plan")
    except Exception as error:  # noqa: BLE001 - the promise is one line, never a traceback
        return _internal_error(error)


def _output_failed(error: OutputError) -> int:
    _abandon_stdout()
    if error.reader_left:  # no error: the verdict's exit code stands (1 for a failed check)
        return error.exit_code
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
