"""The settings in force for one query, and where each value came from.

In order: `--conf key=value` on the command line, then `--conf-file spark-defaults.conf`, then
what the event log recorded (the application's properties and the execution's
`modifiedConfigs`), then Spark's default for the query's Spark line (`defaults.py`).

A default is only taken as fact when the input says the settings it holds are complete: an
event log of Spark 3.4+ (which records the session's own settings), or settings the user gave.
A plan text alone says nothing about settings, so a key it needs is unknown there, and the
answer says "cannot tell" instead of blaming a value the job may never have had.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Tuple

from ..errors import InspectError
from . import defaults
from .verdicts import CONFIG, DEFAULT

UNKNOWN = "unknown"

#: Settings whose values are byte sizes: a value given for them is checked when read.
SIZE_KEYS = frozenset((
    "spark.sql.autoBroadcastJoinThreshold",
    "spark.sql.adaptive.autoBroadcastJoinThreshold",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes",
    "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes",
    "spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold",
    "spark.sql.adaptive.coalescePartitions.minPartitionSize",
    "spark.sql.adaptive.shuffle.targetPostShuffleInputSize",
))
BOOLEAN_KEYS = frozenset((
    "spark.sql.adaptive.enabled", "spark.sql.adaptive.coalescePartitions.enabled",
    "spark.sql.adaptive.localShuffleReader.enabled", "spark.sql.adaptive.skewJoin.enabled",
    "spark.sql.adaptive.forceOptimizeSkewedJoin", "spark.sql.join.preferSortMergeJoin",
    "spark.sql.adaptive.coalescePartitions.parallelismFirst",
))
NUMBER_KEYS = frozenset((
    "spark.sql.adaptive.skewJoin.skewedPartitionFactor",
    "spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin",
))


@dataclass(frozen=True)
class Setting:
    """One setting as the answer uses it: `key` is the key that decided (the fallback's when
    the asked key has no value of its own), `source` is config, default or unknown."""

    key: str
    value: Optional[str]
    source: str
    #: Where the value came from, for people: `event log`, `--conf`, `spark-defaults.conf:3`,
    #: `Spark 3.5 default`.
    origin: str
    #: For an unknown setting: Spark's default on the line, when the line is known (said, not used).
    default: Optional[str] = None

    @property
    def known(self) -> bool:
        return self.source != UNKNOWN

    def describe(self) -> str:
        if not self.known:
            hint = f"; Spark's default is {self.default}" if self.default is not None else ""
            return f"{self.key} is not known{hint}"
        return f"{self.key}={self.value} ({self.origin})"

    def flag(self) -> Optional[bool]:
        if self.value is None:
            return None
        return self.value.strip().lower() == "true"


@dataclass(frozen=True)
class Given:
    """A value the input or the user supplied, with where it came from."""

    value: str
    origin: str


@dataclass(frozen=True)
class Settings:
    """The settings of one query. `complete`: absent keys were at their defaults."""

    given: Mapping[str, Given] = field(default_factory=dict)
    complete: bool = False
    version: Optional[str] = None

    @property
    def line(self) -> Optional[str]:
        return defaults.spark_line(self.version)

    def get(self, key: str) -> Setting:
        """The setting `key` stands for, following Spark's fallbacks (the adaptive broadcast
        threshold falls back to `spark.sql.autoBroadcastJoinThreshold`). Unknown, it is named
        by the key asked, with the default it would fall back to."""
        asked, seen, path = key, set(), []
        while key not in seen:
            seen.add(key)
            if key in self.given:
                found = self.given[key]
                return Setting(key, found.value, CONFIG, found.origin)
            known = self._default(key)
            if known is not None and known.value is None and known.fallback:
                path.append(key)
                key = known.fallback
                continue
            if known is None or not known.exists:
                return Setting(asked, None, UNKNOWN, "")
            if self.complete:
                where = f"Spark {known.line} default" if known.line else "Spark's default"
                return Setting(key, known.value, DEFAULT, where)
            hint = known.value if not path else f"unset, so {key}={known.value}"
            return Setting(asked, None, UNKNOWN, "", default=hint)
        return Setting(asked, None, UNKNOWN, "")

    def exists(self, key: str) -> Optional[bool]:
        """Whether the key exists on the query's Spark line (None when the line is unknown)."""
        if self.line is None:
            return None
        known = defaults.default(key, self.version)
        return None if known is None else known.exists

    def _default(self, key: str) -> Optional["defaults.Default"]:
        if self.version is not None:
            return defaults.default(key, self.version)
        # No Spark line known: a default is only a fact when every line agrees on it.
        found = [defaults.default(key, line) for line in defaults.LINES]
        values = {(d.value, d.fallback, d.exists) for d in found if d is not None}
        if len(values) == 1 and found[-1] is not None:
            same = found[-1]
            return defaults.Default(key=key, line="", value=same.value, fallback=same.fallback,
                                    exists=same.exists, cite=same.cite)
        return None


def settings_for(configs: Mapping[str, str], complete: bool, version: Optional[str],
                 user: Mapping[str, Given], origin: str = "event log") -> Settings:
    """The settings of one query: what its input recorded, overlaid by what the user gave.
    Settings the user gave make the set complete: they say what the job ran with."""
    given: Dict[str, Given] = {key: Given(value, origin) for key, value in configs.items()}
    given.update(user)
    return Settings(given=given, complete=complete or bool(user), version=version)


# ---- what the user gives ----------------------------------------------------------------------

def conf_option(text: str) -> Tuple[str, str]:
    """`key=value` of a `--conf` option; raises InspectError naming the option."""
    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key:
        raise InspectError(f"{text!r}: expected KEY=VALUE, e.g. "
                           "spark.sql.adaptive.enabled=true", source="--conf")
    check_value(key, value)
    return key, value


def read_conf_file(path: str) -> Dict[str, Given]:
    """The settings of a `spark-defaults.conf`, read as Spark reads it: a Java properties file
    (`java.util.Properties.load`, see `java_properties`) in UTF-8, each value trimmed of the
    white space and control characters at its ends (Spark's `trimExceptCRLF`)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(4 * 1024 * 1024 + 1)
    except OSError as error:
        raise InspectError(f"cannot read: {error.strerror or error}", source=path) from None
    if len(raw) > 4 * 1024 * 1024:
        raise InspectError("not a spark-defaults.conf: larger than 4 MiB", source=path)
    if b"\0" in raw:
        raise InspectError("not a spark-defaults.conf: binary data", source=path,
                           line=raw[:raw.index(b"\0")].count(b"\n") + 1)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[:error.start].count(b"\n") + 1
        raise InspectError("not a spark-defaults.conf: not UTF-8 text", source=path,
                           line=line) from None
    found: Dict[str, Given] = {}
    name = path.rsplit("/", 1)[-1]
    try:
        for line_no, key, value in java_properties(text):
            value = _trim_except_crlf(value)
            check_value(key, value, source=path, line=line_no)
            found[key] = Given(value, f"{name}:{line_no}")
    except PropertiesError as error:
        raise InspectError(error.message, source=path, line=error.line,
                           column=error.column) from None
    return found


class PropertiesError(ValueError):
    """What `java.util.Properties.load` throws on (a malformed `\\uXXXX`), and where."""

    def __init__(self, message: str, line: int, column: int):
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


#: White space in a properties file (line terminators apart).
_BLANK = " \t\f"
#: A natural line's terminator: `\n`, `\r` or `\r\n`, nothing else.
_TERMINATOR = re.compile(r"\r\n|\r|\n")
#: What ends a key (unless escaped), or escapes the character after it.
_KEY_STOP = re.compile(r"[\\=: \t\f]")
#: The separator after a key: `=` or `:` with white space around it, or white space alone
#: (then an `=` or `:` after it is part of the separator).
_SEPARATOR = re.compile(r"[ \t\f]*[=:][ \t\f]*|[ \t\f]+(?:[=:][ \t\f]*)?")
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_HEX = frozenset("0123456789abcdefABCDEF")
_ESCAPED = {"t": "\t", "r": "\r", "n": "\n", "f": "\f"}


def java_properties(text: str) -> List[Tuple[int, str, str]]:
    """(line, key, value) of each property of a Java properties file, in order, as
    `java.util.Properties.load(Reader)` reads them: natural lines end at `\\n`, `\\r` or
    `\\r\\n`; blank lines and those starting (after white space: space, tab, form feed) with
    `#` or `!` are skipped; an odd number of backslashes at a line's end continues it on the
    next, whose leading white space is dropped; the key ends at the first unescaped `=`, `:` or
    white space; escapes `\\t \\n \\f \\r \\uXXXX`, and `\\` before anything else is
    that character. Values keep their trailing white space. Raises PropertiesError for a
    malformed `\\uXXXX`, as Java does."""
    found: List[Tuple[int, str, str]] = []
    # The logical line being gathered: its pieces (line number, column of the piece's first
    # character, text), each natural line's with its continuation backslash taken off.
    pieces: List[Tuple[int, int, str]] = []
    length = 0
    position = 0
    number = 0
    while position <= len(text):
        ending = _TERMINATOR.search(text, position)
        stop = ending.start() if ending else len(text)
        line = text[position:stop]
        number += 1
        position = ending.end() if ending else len(text) + 1
        body = line.lstrip(_BLANK)
        column = len(line) - len(body) + 1
        if length == 0:
            # A new logical line (or a continuation that has nothing yet, which Java reads
            # as a new line too): blank and comment lines are skipped.
            pieces = []
            if not body or body[0] in "#!":
                continue
        elif not body:  # an empty continuation line ends the logical line
            found.append(_property(pieces))
            pieces, length = [], 0
            continue
        backslashes = len(body) - len(body.rstrip("\\"))
        if backslashes % 2:
            if len(body) > 1 or not pieces:  # an empty piece locates nothing: not kept
                pieces.append((number, column, body[:-1]))
            length += len(body) - 1
            if ending is None or (ending.end() == len(text) and ending.group() != "\r\n"):
                # The file ends on a continuation: Java returns the line it has, even an
                # empty one (a property "" = ""), except after a last CR LF.
                found.append(_property(pieces))
                pieces, length = [], 0
            continue
        pieces.append((number, column, body))
        found.append(_property(pieces))
        pieces, length = [], 0
    if length:
        found.append(_property(pieces))
    return found


def _property(pieces: List[Tuple[int, int, str]]) -> Tuple[int, str, str]:
    """(line, key, value) of one logical line (its pieces as `java_properties` gathers them)."""
    logical = "".join(text for _, _, text in pieces)
    end = 0
    while True:  # the key ends at the first unescaped separator (a loop: keys can be long)
        stop = _KEY_STOP.search(logical, end)
        if stop is None:
            end = len(logical)
            break
        if stop.group() != "\\":
            end = stop.start()
            break
        end = stop.end() + 1
    separator = _SEPARATOR.match(logical, end)
    start = separator.end() if separator else end
    key = _unescape(logical[:end], 0, pieces)
    value = _unescape(logical[start:], start, pieces)
    return pieces[0][0], key, value


def _unescape(text: str, offset: int, pieces: List[Tuple[int, int, str]]) -> str:
    """`loadConvert`: escapes replaced; a malformed `\\uXXXX` (`offset`: where `text` starts
    in the logical line) is a PropertiesError naming its line and column."""
    if "\\" not in text:
        return text
    out: List[str] = []
    last = 0
    for escape in _ESCAPE.finditer(text):
        if escape.start() < last:
            continue
        out.append(text[last:escape.start()])
        char = escape.group(1)
        last = escape.end()
        if char == "u":
            digits = text[last:last + 4]
            if len(digits) < 4 or not _HEX.issuperset(digits):
                line, column = _locate(offset + escape.start(), pieces)
                raise PropertiesError(f"malformed \\uxxxx escape {text[escape.start():last + 4]!r}"
                                      " (Java refuses the file)", line, column)
            out.append(chr(int(digits, 16)))
            last += 4
        else:
            out.append(_ESCAPED.get(char, char))
    out.append(text[last:])
    joined = "".join(out)
    # Java's strings are UTF-16: `\\ud83d\\ude00` is one character.
    return joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _locate(offset: int, pieces: List[Tuple[int, int, str]]) -> Tuple[int, int]:
    """The line and column of a logical line's `offset`."""
    for line, column, text in pieces:
        if offset < len(text):
            return line, column + offset
        offset -= len(text)
    line, column, text = pieces[-1]
    return line, column + len(text)


def _trim_except_crlf(value: str) -> str:
    """Spark's `Utils.trimExceptCRLF`: characters up to U+0020 off both ends, except CR and LF."""
    return value.strip(_TRIMMED)


_TRIMMED = "".join(chr(code) for code in range(0x21) if code not in (0x0A, 0x0D))


def check_value(key: str, value: str, source: str = "--conf",
                line: Optional[int] = None) -> None:
    """A value the answer will compare must read as Spark would read it."""
    from ..plan.units import conf_bytes

    problem = None
    if key in SIZE_KEYS:
        try:
            conf_bytes(value)
        except ValueError as error:
            problem = str(error)
    elif key in BOOLEAN_KEYS and value.strip().lower() not in ("true", "false"):
        problem = f"expected true or false, got {value!r}"
    elif key in NUMBER_KEYS:
        try:
            float(value)
        except ValueError:
            problem = f"expected a number, got {value!r}"
    if problem:
        raise InspectError(f"{key}: {problem}", source=source, line=line)
