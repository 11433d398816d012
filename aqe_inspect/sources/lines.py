"""The lines of any text, with what carries a plan taken off: log prefixes, JSON log records,
quote and comment markers, notebook prompts, numbered tree strings.

Each `Line` keeps its line and column in the original text, so errors and notes point there.
A line that began a log message says so (`message_start`), with the AQE message heading it
carried (`Plan changed:`, `Final plan:`): a plan in a log never runs across the next message.

Everything here runs line by line over a stream: a 100 MB log is never held whole.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator, List, NamedTuple, Optional, Tuple

from . import deepjson

#: A log4j / logback / Python logging prefix: a time stamp (with or without a date), an
#: optional thread, a level, a logger name and `: ` or ` - `. Every repetition is bounded.
LOG_PREFIX = re.compile(
    r"\[?(?:\d{2,4}[-/.]\d{1,2}[-/.]\d{1,4}[ T])?\d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,9})?"
    r"(?:Z|[+-]\d{2}:?\d{2})?\]?\s{1,4}"
    r"(?:\[[^\]]{0,200}\]\s{1,4})?"
    r"(?P<level>TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\s{1,4}"
    r"(?:\[[^\]]{0,200}\]\s{1,4})?"
    r"(?:[\w.$/:-]{1,300}(?::|\s-)\s)?"
)
#: Spark's AQE and plan-change messages: what follows them is a plan (or two).
AQE_HEADER = re.compile(
    r"(?P<header>Plan changed from|Plan changed:|Final plan:|Transformed Plan:|"
    r"=== Applying Rule [^=]{1,300} ===|=== Result of Batch [^=]{1,300} ===|"
    r"=== Metrics of Executed Rules ===)\s?"
)
#: The headings of spark.sql.planChangeLog blocks.
RULE_BLOCK = re.compile(r"=== (?:Applying Rule|Result of Batch|Metrics of Executed Rules)\b")
#: Markers a person or a notebook export puts before every line of a block.
BLOCK_PREFIXES = ("-- MAGIC ", "# MAGIC ", "// MAGIC ", "> > ", "> ", "# ")
#: Notebook prompts: `In [3]: `, `Out[3]: `, IPython's continuation `   ...: `, `>>> `.
PROMPT = re.compile(r"(?:In|Out)\s?\[\d{1,6}\]:\s?|\s{0,8}\.\.\.:\s|>>> |scala> ")
#: What a PROMPT starts with, unless with blank space.
PROMPT_STARTS = "IO>s."
#: `00 AdaptiveSparkPlan`, `01 +- ...`: Spark's numberedTreeString.
NUMBERED = re.compile(r"(?P<number>\d{2,6}) (?P<rest>.*)")
#: The first characters of a line that `logical_lines` may do more with than strip its end:
#: what a log prefix, a JSON record, a rule heading, a block marker, a prompt or a numbered
#: line starts with, and every blank character but the space.
SLOW_FIRST = frozenset("0123456789[{=-#/>IO.s\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\xa0")
#: SLOW_FIRST but `I` and `O`, which begin only a PROMPT (`In [3]: `, `Out[3]: `) of what
#: `logical_lines` does more with: a line beginning so but with none of PROMPT_START (a
#: formatted plan's `Input [2]: ...`, `Output [3]: ...`) takes the fast path too.
SLOW_FIRST_BUT_PROMPTS = SLOW_FIRST - {"I", "O"}
#: How every PROMPT starting with `I` or `O` starts.
PROMPT_START = re.compile(r"(?:In|Out)\s?\[")
#: Whether `logical_lines` takes its fast path for plain lines (tests compare it with the
#: steps it stands for).
FAST_PATH = True
#: Characters Spark never prints, that hide inside pasted text: zero-width and bidi controls.
INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


class Line(NamedTuple):
    """One cleaned line. (A NamedTuple: one is made for every line of a log, and a frozen
    dataclass takes three times as long to build.)"""

    text: str
    number: int
    column: int = 0
    #: This line began a log message (its prefix was taken off, or it is a JSON record).
    message_start: bool = False
    #: The AQE message heading the line carried, e.g. `Final plan:`.
    header: str = ""
    #: What was wrong with the line itself (invisible characters, bytes replaced).
    damage: str = ""


def raw_lines(text: str, first: int = 1) -> Iterator[Tuple[int, str]]:
    for number, line in enumerate(text.split("\n"), first):
        yield number, line


def logical_lines(raw: Iterable[Tuple[int, str]], damaged: Optional[List[str]] = None,
                  runs: Optional[List[int]] = None, rule_headings: Optional[List[int]] = None,
                  stops: Optional[List[int]] = None) -> Iterator[Line]:
    """The lines of a text, cleaned; JSON log records become the lines of their message.
    `damaged`, when given, gets a note `line N: ...` for each line with `damage` (once for
    the lines of one JSON record); `runs`, the number of each line starting a log message
    `Submitted application: ...` (APPLICATION_START); `rule_headings`, that of the first
    line holding a plan-change rule block's heading (`is_rule_heading`); `stops`, that of each line
    starting a log message `Successfully stopped SparkContext` (APPLICATION_STOP)."""
    watched = runs is not None or rule_headings is not None or stops is not None
    prefix: Optional[str] = None
    numbered: Optional[int] = None
    from_message = False  # inside a `Plan changed from` message, where ` to ` starts a plan
    new_line = tuple.__new__
    fast = FAST_PATH
    for number, text in raw:
        # Most lines of a plan need none of what follows: nothing begins there (a log prefix,
        # a JSON record, a rule heading, a block marker, a prompt, a numbered line: each
        # starts with a character of SLOW_FIRST, or with blanks before `{"` or `...:`; of
        # those starting with `I` or `O`, only a PROMPT_START begins something), and
        # there is nothing to clean (plain ASCII, no carriage return, no tab). Such a line is
        # what the steps below would make of it, with no state left behind.
        first = text[:1]
        if fast and prefix is None and not from_message and \
                first not in SLOW_FIRST_BUT_PROMPTS and \
                (first != "I" and first != "O" or not PROMPT_START.match(text)) and \
                text.isascii() and "\r" not in text and "\t" not in text and \
                (first != " " or ("...:" not in text[:12] and
                                   ('{"' not in text or text.lstrip()[:2] != '{"'))):
            numbered = None
            yield new_line(Line, (text.rstrip(), number, 0, False, "", ""))
            continue
        damage = ""
        if text.endswith("\r"):
            text = text[:-1]
        if "\r" in text:  # a console progress bar redrawn over itself: keep what shows last
            text = text.rsplit("\r", 1)[1]
        if not text.isascii() and INVISIBLE.search(text):  # INVISIBLE holds no ASCII
            text = INVISIBLE.sub("", text)
            damage = "characters Spark never prints (zero-width or bidi controls) were removed"
        if "\ufffd" in text:
            damage = "bytes that are not UTF-8 were replaced"
        if damage and damaged is not None:
            damaged.append(f"line {number}: {damage}")
        stripped = text.lstrip()
        if stripped.startswith('{"') and stripped.rstrip().endswith("}"):
            record = _json_record(stripped)
            if record is not None:
                for index, message_line in enumerate(record.split("\n")):
                    if index == 0:
                        line = _message(message_line, number, 0, damage)
                    else:
                        line = Line(message_line.rstrip(), number, 0, damage=damage)
                    if watched:
                        _watch(line, runs, rule_headings, stops)
                    yield line
                prefix, numbered, from_message = None, None, False
                continue
        column = 0
        if text.startswith("=== ") and RULE_BLOCK.match(text):
            # spark.sql.planChangeLog.level: a rule's plans side by side, on the lines after
            # an empty log message. A block of its own, ended by the next log message.
            prefix, numbered, from_message = None, None, False
            line = Line("", number, 0, True, text.strip(), damage)
            if watched:
                _watch(line, runs, rule_headings, stops)
            yield line
            continue
        log = LOG_PREFIX.match(text) if text[:1].isdigit() or text[:1] == "[" else None
        if log and log.end() > 0:
            prefix, numbered = None, None
            line = _message(text[log.end():], number, log.end(), damage)
            from_message = line.header == "Plan changed from"
            if watched:
                _watch(line, runs, rule_headings, stops)
            yield line
            continue
        # Block markers: once a block's first line shows one, the block's lines carry it.
        if prefix is not None and not text.startswith(prefix.rstrip()):
            prefix = None
        if prefix is None and text.startswith(BLOCK_PREFIXES):
            for candidate in BLOCK_PREFIXES:
                if text.startswith(candidate) and _plan_like(text[len(candidate):]):
                    prefix = candidate
                    break
        if prefix is not None:
            cut = len(prefix) if text.startswith(prefix) else len(prefix.rstrip())
            text, column = text[cut:], column + cut
        first = text[:1]
        # PROMPT's only pattern that starts with blank space is `   ...: ` (at most 8 blanks).
        prompt = PROMPT.match(text) if first and first in PROMPT_STARTS or \
            (first.isspace() and "...:" in text[:12]) else None
        if prompt and _plan_like(text[prompt.end():]):
            column += prompt.end()
            text = text[prompt.end():]
        counted = NUMBERED.match(text) if text[:1].isdecimal() else None  # what \d matches
        if counted and int(counted["number"]) == (0 if numbered is None else numbered + 1) and \
                _plan_like(counted["rest"]):
            numbered = int(counted["number"])
            column += counted.start("rest")
            text = counted["rest"]
        else:
            numbered = None
        if "\t" in text:
            body = text.lstrip(" \t")
            text = text[: len(text) - len(body)].expandtabs(4) + body
        if from_message and text.startswith(" to ") and len(text) > 4:
            line = Line(text[4:].rstrip(), number, column + 4, True, "to", damage)
            from_message = False
        else:
            line = Line(text.rstrip(), number, column, damage=damage)
        if watched:
            _watch(line, runs, rule_headings, stops)
        yield line


#: The message SparkContext logs as an application starts: plans on either side of it are
#: never one execution (two runs' driver logs joined number their plans alike).
APPLICATION_START = "Submitted application: "
#: The message SparkContext logs as its application stops (at the end of `stop()`, which the
#: driver's shutdown hook calls too): a driver log whose last application started but did not
#: stop ends before that application does (cut short, still being written, or its driver was
#: killed), and the queries it ran after the log's end could not be read.
APPLICATION_STOP = "Successfully stopped SparkContext"
RULE_HEADING = "=== Applying Rule"


def is_rule_heading(line: Line) -> bool:
    """A plan-change rule block's heading (a JSON record's message holds it as its text)."""
    return line.header.startswith(RULE_HEADING) or line.text.startswith(RULE_HEADING)


def _watch(line: Line, runs: Optional[List[int]], rule_headings: Optional[List[int]],
           stops: Optional[List[int]]) -> None:
    """What `logical_lines` notes of a line of its slow path (a line of its fast path starts
    no message and holds no rule heading: its first character is none of SLOW_FIRST's, or
    an `I` or `O` beginning no prompt)."""
    if runs is not None and line.message_start and line.text.startswith(APPLICATION_START):
        runs.append(line.number)
    if stops is not None and line.message_start and line.text.startswith(APPLICATION_STOP):
        stops.append(line.number)
    if rule_headings is not None and not rule_headings and is_rule_heading(line):
        rule_headings.append(line.number)  # (the first only: whether there is one is asked)


def message_header(text: str) -> Optional[str]:
    """The AQE or plan-change heading ("" for none) of a line that starts a log message
    whatever came before it (a log prefix, a JSON log record, a plan-change rule heading);
    None for any other line. `logical_lines` starts every state again at such a line, and
    `extract.find_plans` ends any plan there (skim.py cuts a log at them)."""
    first = text[:1]
    if first not in SLOW_FIRST and first != " " and text.isascii() and "\r" not in text:
        return None  # what logical_lines' fast path takes: no message starts there
    # The steps of logical_lines' slow path that can make a text's first line start a
    # message (with no state before it: no block marker, no numbered line, no `Plan changed
    # from` message; what follows them starts none).
    if text.endswith("\r"):
        text = text[:-1]
    if "\r" in text:
        text = text.rsplit("\r", 1)[1]
    if not text.isascii() and INVISIBLE.search(text):
        text = INVISIBLE.sub("", text)
    stripped = text.lstrip()
    if stripped.startswith('{"') and stripped.rstrip().endswith("}"):
        record = _json_record(stripped)
        if record is not None:
            return _message(record.split("\n", 1)[0], 0, 0, "").header
    if text.startswith("=== ") and RULE_BLOCK.match(text):
        return text.strip()
    log = LOG_PREFIX.match(text) if text[:1].isdigit() or text[:1] == "[" else None
    if log and log.end() > 0:
        return _message(text[log.end():], 0, 0, "").header
    return None


def _message(text: str, number: int, column: int, damage: str) -> Line:
    header = AQE_HEADER.match(text)
    if header:
        rest = text[header.end():]
        return Line(rest.rstrip(), number, column + header.end(), True,
                    header["header"].rstrip(":") + (":" if header["header"].endswith(":")
                                                    else ""), damage)
    return Line(text.rstrip(), number, column, True, "", damage)


def _json_record(text: str) -> Optional[str]:
    """The message of a JSON log record (Spark 4's structured logging), with its exception."""
    try:
        record = deepjson.loads(text)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("msg"), str):
        return None
    message = record["msg"]
    exception = record.get("exception")
    if isinstance(exception, dict) and isinstance(exception.get("stacktrace"), list):
        message += "\n" + deepjson.text(exception.get("class", "")) + ": " + \
            deepjson.text(exception.get("msg", ""))
    return message


def _plan_like(text: str) -> bool:
    """Whether a line, once its marker is off, reads as a line of a plan."""
    text = text.lstrip(" ")
    return text.startswith(("==", "+-", ":-", ":  ", "*", "(", "AdaptiveSparkPlan", "Found ",
                            "Subquery:", "Output", "Input", "Arguments")) or \
        bool(re.match(r"[A-Z][\w$]{1,80}(?: |\(|$)", text))
