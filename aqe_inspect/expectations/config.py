"""What a pipeline expects AQE to do: `--expect coalesced>=2`, `--forbid skew-join`, and the
same under version control in `aqe-expect.toml` (or `[tool.aqe-inspect]` in `pyproject.toml`).

An expectation is a rewrite kind, a bound on how many times it happens, and the queries it is
about (all of them, or those a `match` regex or an execution id selects). Counts are summed over
the queries in scope; with `each = true` every query in scope must meet the bound on its own.

The file format::

    # aqe-expect.toml
    expect = ["coalesced"]            # over every query of the input (optional)

    [[query]]
    name = "daily join"               # how reports call this table (optional)
    match = "daily_.*join"            # regex on the execution's description (optional)
    # id = 3                          # or: this SQL execution id / query number (optional)
    each = false                      # true: every matched query on its own (optional)
    expect = ["smj-to-bhj>=1", "local-read"]
    forbid = ["skew-join"]
    margin = 10                       # percent: fail what held by less (optional; also at
                                      # the top, for every table without its own)

`margin` (`check --margin PCT` on the command line, which a file's own value overrides) holds
the expectations of the kinds that compare a run-time size with a setting (smj-to-bhj,
smj-to-shj, skew-join, coalesced) to the margin of the decisions behind them: one that held by
less than PCT percent of its threshold fails, as a plan tomorrow's data may flip.

Anything else (an unknown key or kind, a wrong type, a bad regex, TOML that does not parse) is
an error naming the file and line: a typo must never turn into a passing build.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ..errors import InspectError
from ..plan.model import plural
from ..rewrites.findings import kind_hint, rewrite_kinds
from .selection import Selector, compile_pattern

#: The file `check` reads from the working directory when no expectation is given.
CONFIG_NAME = "aqe-expect.toml"
PYPROJECT = "pyproject.toml"
#: Where expectations live inside pyproject.toml.
PYPROJECT_TABLE = ("tool", "aqe-inspect")

#: Comparisons, as written after a kind, and what they mean.
OPERATORS = {
    ">=": ("at least", lambda actual, n: actual >= n),
    "<=": ("at most", lambda actual, n: actual <= n),
    "==": ("exactly", lambda actual, n: actual == n),
    "=": ("exactly", lambda actual, n: actual == n),
    ">": ("more than", lambda actual, n: actual > n),
    "<": ("fewer than", lambda actual, n: actual < n),
}
_EXPECTATION = re.compile(r"\s*([A-Za-z][\w-]*)\s*(?:(>=|<=|==|=|>|<)\s*(\S*)\s*)?$")

_QUERY_KEYS = {"name": str, "match": str, "id": int, "each": bool, "expect": list,
               "forbid": list, "margin": (int, float)}
_TOP_KEYS = {"expect": list, "forbid": list, "each": bool, "query": list,
             "margin": (int, float)}



@dataclass(frozen=True)
class Origin:
    """Where an expectation was written: a file and line, or the command line."""

    file: str = ""
    line: int = 0

    def __str__(self) -> str:
        if not self.file:
            return "command line"
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class Expectation:
    """One bound on one rewrite kind over the queries a selector names (all when None)."""

    kind: str
    operator: str
    count: int
    #: As written: `coalesced>=2`, `forbid skew-join`.
    text: str
    scope: Optional[Selector] = None
    #: Every query in scope on its own, rather than their sum.
    each: bool = False
    #: The `name` of the `[[query]]` table it came from.
    name: str = ""
    origin: Origin = Origin()
    #: The margin, in percent, the decisions behind it must have held by (`margin` in the
    #: file); None: `check --margin`'s, if any.
    margin: Optional[float] = None

    @property
    def forbids(self) -> bool:
        return self.operator in ("==", "=") and self.count == 0

    def holds(self, actual: int) -> bool:
        return OPERATORS[self.operator][1](actual, self.count)

    @property
    def wants(self) -> str:
        """`at least 1 coalesced`, `no skew-join`."""
        if self.forbids:
            return f"no {self.kind}"
        return f"{OPERATORS[self.operator][0]} {self.count} {self.kind}"

    @property
    def scope_text(self) -> str:
        return self.scope_words()

    def scope_words(self, unit: str = "query", selected_by: Optional[str] = None) -> str:
        """What the expectation is held against, in the input's words (`unit`: `query` of a
        plan text, `execution` of an event log; see the glossary, docs/inputs.md): `all
        queries`, `execution 3`, `queries matching /daily/`, or, when `--query` chose the
        queries before (`selected_by`), `the executions --query 3 matched`."""
        if self.scope is not None:
            where = self.scope.words(unit)
        elif selected_by is not None:
            where = f"the {plural(unit)} --query {selected_by} matched"
        else:
            where = f"all {plural(unit)}"
        return f"each of {where}" if self.each else where

    @property
    def id(self) -> str:
        """A stable name for reports (a JUnit test case, a SARIF result): what and where."""
        if self.scope is None:
            return self.text
        scope = self.scope
        # `id N`: the table's own word (`[[query]] id = N`): an execution id or a query's
        # position, whichever the input has (the name is the same whatever it is held to).
        label = self.name or (f"id {scope.number}" if scope.number is not None
                              else f"/{scope.text}/")
        return f"{self.text} [{label}]"


def parse_expectation(text: str, *, forbid: bool = False, scope: Optional[Selector] = None,
                      each: bool = False, name: str = "", origin: Origin = Origin(),
                      where: Optional[Tuple[str, int, Optional[int]]] = None) -> Expectation:
    """`coalesced`, `coalesced>=2`, `smj-to-bhj=1`; for `forbid`, a kind alone. `where`
    (file, line, column) locates an error; without it the error names the option."""
    option = "--forbid" if forbid else "--expect"

    def fail(message: str) -> InspectError:
        if where is None:
            return InspectError(f"{option} {text!r}: {message}")
        return InspectError(f"{'forbid' if forbid else 'expect'} {text!r}: {message}",
                            source=where[0], line=where[1], column=where[2])

    found = _EXPECTATION.match(text)
    if not found:
        raise fail("expected a rewrite kind, optionally with a count: coalesced, "
                   "coalesced>=2, smj-to-bhj=1")
    kind, operator, number = found.groups()
    if kind not in rewrite_kinds():
        raise fail(f"unknown rewrite kind; {kind_hint(kind)}")
    if forbid:
        if operator is not None:
            raise fail(f"forbid takes a kind alone (no {kind} at all); for a bound write "
                       f"expect \"{kind}<=N\"")
        return Expectation(kind, "==", 0, f"forbid {kind}", scope, each, name, origin)
    if operator is None:
        return Expectation(kind, ">=", 1, kind, scope, each, name, origin)
    if not number.isdigit():
        raise fail(f"expected a whole number after {operator!r}, found {number!r}")
    count = int(number)
    if operator == "<" and count == 0:
        raise fail("no count is below 0")
    return Expectation(kind, operator, count, f"{kind}{operator}{count}", scope, each, name,
                       origin)


# ---- files -------------------------------------------------------------------------------

def find_config(directory: str = ".") -> Optional[str]:
    """`aqe-expect.toml` in `directory`, else its `pyproject.toml` when that has a
    `[tool.aqe-inspect]` table; None when neither."""
    place = (lambda name: name) if directory == "." else \
        (lambda name: os.path.join(directory, name))
    candidate = place(CONFIG_NAME)
    if os.path.isfile(candidate):
        return candidate
    candidate = place(PYPROJECT)
    if os.path.isfile(candidate):
        text = _read_text(candidate)
        if re.search(r"(?m)^\s*\[\[?\s*tool\s*\.\s*[\"']?aqe-inspect", text):
            return candidate
    return None


def load_config(path: str) -> List[Expectation]:
    """Every expectation of an expectation file (or a pyproject.toml's `[tool.aqe-inspect]`)."""
    text = _read_text(path)
    data = _parse_toml(text, path)
    prefix: Tuple[str, ...] = ()
    if os.path.basename(path) == PYPROJECT:
        prefix = PYPROJECT_TABLE
        for key in prefix:
            data = data.get(key) if isinstance(data, dict) else None
        if data is None:
            raise InspectError("has no [tool.aqe-inspect] table", source=path)
    locator = _Locator(path, text, prefix)
    expectations = _read_table(data, locator)
    if not expectations:
        raise InspectError("holds no expectation: give expect = [...] or forbid = [...], at "
                           "the top or in a [[query]] table", source=path,
                           line=locator.table_line(None))
    return expectations


def _read_text(path: str) -> str:
    from ..sources.opening import open_file

    try:
        with open_file(path) as handle:
            data = handle.read()
    except OSError as error:
        raise InspectError(f"cannot read: {error.strerror or error}", source=path) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise InspectError("not UTF-8 text, so not TOML", source=path, line=line) from None


def _parse_toml(text: str, path: str) -> Dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.9 and 3.10
        import tomli as tomllib
    _check_nesting(text, path)
    try:
        return tomllib.loads(text)
    except RecursionError:  # past _check_nesting's bound, the reader's own recursion
        raise InspectError(f"not read: arrays and tables nested too deep (at most "
                           f"{MAX_NESTING} levels)", source=path) from None
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        line = getattr(error, "lineno", None)
        column = getattr(error, "colno", None)
        found = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
        if found:
            line, column = int(found.group(1)), int(found.group(2))
            message = message[:found.start()]
        elif message.endswith("(at end of document)"):
            line = text.count("\n") + 1
            message = message[:-len("(at end of document)")].rstrip()
        elif line is not None:
            message = getattr(error, "msg", message)
        raise InspectError(f"not valid TOML: {message}", source=path, line=line,
                           column=column) from None


#: How deep arrays and inline tables may nest in an expectation file (it needs 2): the TOML
#: reader recurses, and about 300 levels exhaust its stack.
MAX_NESTING = 64
#: What `_check_nesting` steps over (strings and comments, whole) and counts (brackets).
_TOML_TOKEN = re.compile(r'''
    "{3}(?:[^"\\]|\\[\s\S]|"(?!""))*"{3,5}   # multi-line basic string
  | '{3}[\s\S]*?'{3,5}                       # multi-line literal string
  | "(?:[^"\\\n]|\\.)*"?                      # basic string (to the line's end if open)
  | '[^'\n]*'?                                 # literal string
  | \#[^\n]*                                   # comment
  | [\[\]{}]
''', re.VERBOSE)


def _check_nesting(text: str, path: str) -> None:
    """Refuse, in one line naming where, arrays and inline tables nested deeper than
    MAX_NESTING (before the TOML reader recurses into them)."""
    depth = 0
    for token in _TOML_TOKEN.finditer(text):
        char = token.group()
        if char == "[" or char == "{":
            depth += 1
            if depth > MAX_NESTING:
                line = text.count("\n", 0, token.start()) + 1
                column = token.start() - (text.rfind("\n", 0, token.start()) + 1) + 1
                raise InspectError(f"not read: arrays and tables nested deeper than "
                                   f"{MAX_NESTING} levels", source=path, line=line,
                                   column=column)
        elif char == "]" or char == "}":
            depth = max(0, depth - 1)


def _read_table(data: Dict[str, Any], locator: "_Locator") -> List[Expectation]:
    _check_keys(data, _TOP_KEYS, locator, None)
    each = data.get("each", False)
    margin = data.get("margin")
    expectations = _read_lists(data, locator, None, scope=None, each=each, name="",
                               margin=margin)
    for index, table in enumerate(data.get("query", [])):
        if not isinstance(table, dict):
            raise InspectError("query must be an array of tables ([[query]]), found "
                               f"{_type_name(table)}", source=locator.path,
                               line=locator.key_line(None, "query"))
        _check_keys(table, _QUERY_KEYS, locator, index)
        scope = None
        if "match" in table and "id" in table:
            raise InspectError("a [[query]] table takes match or id, not both",
                               source=locator.path, line=locator.key_line(index, "id"))
        if "match" in table:
            try:
                pattern = compile_pattern(table["match"], "match")
            except InspectError as error:
                raise InspectError(error.message, source=locator.path,
                                   line=locator.key_line(index, "match")) from None
            scope = Selector(table["match"], pattern=pattern)
        elif "id" in table:
            if table["id"] < 0:
                raise InspectError(f"id must be an execution id (0 or more), found "
                                   f"{table['id']}", source=locator.path,
                                   line=locator.key_line(index, "id"))
            scope = Selector.of_number(table["id"])
        found = _read_lists(table, locator, index, scope=scope,
                            each=table.get("each", False), name=table.get("name", ""),
                            margin=table.get("margin", margin))
        if not found:
            raise InspectError("this [[query]] table expects nothing: give it expect = [...] "
                               "or forbid = [...]", source=locator.path,
                               line=locator.table_line(index))
        expectations.extend(found)
    return expectations


def _read_lists(table: Dict[str, Any], locator: "_Locator", index: Optional[int], *,
                scope: Optional[Selector], each: bool, name: str,
                margin: Optional[float] = None) -> List[Expectation]:
    found = []
    for key in ("expect", "forbid"):
        for item in table.get(key, []):
            line, column = locator.item_position(index, key, item)
            if not isinstance(item, str):
                raise InspectError(f"{key} items must be strings such as \"coalesced>=2\", "
                                   f"found {_type_name(item)} {_shown(item)}",
                                   source=locator.path,
                                   line=line, column=column)
            found.append(parse_expectation(
                item, forbid=key == "forbid", scope=scope, each=each, name=name,
                origin=Origin(locator.path, line), where=(locator.path, line, column)))
    if margin is not None:
        import dataclasses

        found = [dataclasses.replace(e, margin=float(margin)) for e in found]
    return found


def _check_keys(table: Dict[str, Any], allowed: Dict[str, type], locator: "_Locator",
                index: Optional[int]) -> None:
    where = "a [[query]] table" if index is not None else "the top level"
    for key, value in table.items():
        line = locator.key_line(index, key)
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise InspectError(f"unknown key {key!r} in {where} (known: "
                               f"{', '.join(allowed)}){hint}", source=locator.path, line=line)
        want = allowed[key]
        # TOML booleans are not integers here, though Python's bool is an int.
        if not isinstance(value, want) or (want in (int, (int, float)) and
                                           isinstance(value, bool)):
            name = "a number" if isinstance(want, tuple) else _type_name(want())
            raise InspectError(f"{key} must be {name}, found "
                               f"{_type_name(value)} {_shown(value)}", source=locator.path,
                               line=line)
        if key == "margin" and not 0 <= value < 1e9:
            raise InspectError(f"margin must be a percent of 0 or more, found {_shown(value)}",
                               source=locator.path, line=line)


def _shown(value: Any) -> str:
    """A value in an error: repr of a scalar; an array or table (which dotted keys nest as deep
    as a line is long) cut short, without recursion."""
    if isinstance(value, (list, dict)):
        from ..sources.deepjson import text

        return text(value, 80)
    return repr(value)


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", str: "a string", list: "an array",
            dict: "a table", float: "a number"}.get(type(value), type(value).__name__)


class _Locator:
    """Lines of keys and values in the TOML text, for errors: TOML readers give values, not
    where they were. Tables are found by their `[[query]]` headers (or an inline `query = `),
    keys by `key =` at the start of a line within their table, array items by their quoted
    text within the key's lines. Anything not found falls back to its table's line."""

    def __init__(self, path: str, text: str, prefix: Tuple[str, ...]):
        self.path = path
        self.lines = text.splitlines()
        dotted = r"\s*\.\s*".join(f"[\"']?{re.escape(part)}[\"']?" for part in
                                  (*prefix, "query"))
        table = r"\s*\.\s*".join(f"[\"']?{re.escape(part)}[\"']?" for part in prefix)
        self._query_header = re.compile(rf"^\s*\[\[\s*{dotted}\s*\]\]")
        self._top_header = re.compile(rf"^\s*\[\s*{table}\s*\]") if prefix else None
        self._any_header = re.compile(r"^\s*\[")
        self._query_starts = [n for n, line in enumerate(self.lines, 1)
                              if self._query_header.match(line)]

    def table_line(self, index: Optional[int]) -> int:
        if index is not None and index < len(self._query_starts):
            return self._query_starts[index]
        if index is None and self._top_header is not None:
            for number, line in enumerate(self.lines, 1):
                if self._top_header.match(line):
                    return number
        return 1 if index is None else self.key_line(None, "query")

    def _range(self, index: Optional[int]) -> Tuple[int, int]:
        """The lines (from 1, end excluded) the table's own keys are on."""
        start = self.table_line(index)
        if index is None and self._top_header is None:
            start = 1
        end = len(self.lines) + 1
        for number in range(start + 1, len(self.lines) + 1):
            if self._any_header.match(self.lines[number - 1]):
                end = number
                break
        if index is None and self._top_header is None and self._query_starts:
            end = min(end, self._query_starts[0])
        return start, end

    def key_line(self, index: Optional[int], key: str) -> int:
        start, end = self._range(index)
        pattern = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
        for number in range(start, end):
            if pattern.match(self.lines[number - 1]):
                return number
        # A sub-table (`[query.x]`) is a header of its own after the table's.
        header = re.compile(rf"^\s*\[\[?[^\]]*\.\s*[\"']?{re.escape(key)}[\"']?\s*\]")
        for number in range(start + 1, len(self.lines) + 1):
            if header.match(self.lines[number - 1]):
                return number
        return start

    def item_position(self, index: Optional[int], key: str, item: Any) -> Tuple[int, int]:
        """Line and column of an array item: its text, from the key's line on."""
        start = self.key_line(index, key)
        _, end = self._range(index)
        if isinstance(item, (list, dict)):  # no text to look for (and str() would recurse)
            needles: List[str] = []
        else:
            needles = ([f'"{item}"', f"'{item}'"] if isinstance(item, str)
                       else [str(item).lower() if isinstance(item, bool) else str(item)])
        for number in range(start, max(end, start + 1)):
            line = self.lines[number - 1] if number <= len(self.lines) else ""
            for needle in needles:
                column = line.find(needle, line.find("=") + 1 if number == start else 0)
                if column >= 0:
                    return number, column + 1
        return start, None


def command_line_expectations(expect: Iterable[str], forbid: Iterable[str],
                              scope: Optional[Selector], each: bool) -> List[Expectation]:
    return ([parse_expectation(t, scope=scope, each=each) for t in expect]
            + [parse_expectation(t, forbid=True, scope=scope, each=each) for t in forbid])
