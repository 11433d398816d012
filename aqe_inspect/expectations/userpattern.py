"""The regular expressions users write (`--query REGEX`, a `match` in aqe-expect.toml), run in
linear time.

Python's `re` backtracks: `^(a+)+$` on 30 characters takes a minute, and each character more
doubles it. So a user's pattern is read as Python reads it (the same syntax and meaning, a
search anywhere in the text) and run by RE2 (google-re2), whose time grows with the text and
the pattern, never exponentially.

`compile_user_pattern` first has Python's `re` check the pattern (its own error messages for
what Python refuses; compiling never backtracks), after bounding how deep groups nest (Python's
parser recurses: 500 nested groups exhaust its stack). It then writes the pattern in RE2's
syntax, with Python's meaning:

- `\\d`, `\\w`, `\\s` and their negations are Unicode classes, as in Python (RE2's are ASCII):
  `\\p{Nd}`; letters, numbers and `_`; Python's white space. Under `(?a)` they are ASCII.
- `$` (without `(?m)`) matches at the end or before a final newline; `\\Z` is RE2's `\\z`.
- `^`, `$` and `.` follow the `m` and `s` flags where they are in force; `(?x)` verbose
  patterns have their white space and comments taken out; `(?u)` is the default.
- `{m,n}` braces Python reads as literal text (`{`, `x{a}`) are literal; `{,n}` is `{0,n}`.
- groups become non-capturing (a search needs no groups); `(?#...)` comments go.

What RE2 cannot run is refused in one line naming it: backreferences, look-arounds,
conditionals, atomic groups and possessive quantifiers, `\\W` and `\\S` inside `[...]`, a
repetition count above 1,000, lone surrogates, and a pattern too large for RE2's memory bound.
Two approximations remain: `\\b` and `\\B` know ASCII word characters only (outside `(?a)`,
Python also counts other letters and digits), and a `$` that matches before a final newline
is taken to end the match there.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple

#: How deep groups may nest (Python's parser recurses, RE2 stops at 1,000).
MAX_GROUP_DEPTH = 100
#: RE2's largest repetition count.
MAX_REPEAT = 1000

#: Python's white space (`str.isspace`) as an RE2 class body: the ASCII controls, the
#: separators U+001C-U+001F and U+0085, and the Unicode separators (Zs, Zl, Zp).
_SPACE = r"\t\n\x{b}\x{c}\r\x{1c}-\x{1f}\x{85}\p{Z}"
#: Python's word characters: letters, numbers, `_`.
_WORD = r"\p{L}\p{N}_"
#: Class bodies of `\d`, `\w`, `\s`: Unicode (Python's default) and ASCII (`(?a)`).
_CLASSES = {False: {"d": r"\p{Nd}", "w": _WORD, "s": _SPACE},
            True: {"d": "0-9", "w": "0-9A-Za-z_", "s": r"\t\n\x{b}\x{c}\r "}}
_SIMPLE_ESCAPES = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
_OCTAL = "01234567"
_DIGITS = "0123456789"
_FLAGS = "aiLmsux"
_VERBOSE_SPACE = " \t\n\r\x0b\x0c"


class Unsupported(ValueError):
    """Valid Python, but not something a linear-time engine runs."""


@dataclass(frozen=True)
class UserPattern:
    """A user's regular expression: `pattern` as written, `translated` as RE2 runs it."""

    pattern: str
    translated: str
    compiled: Any = field(repr=False, compare=False)

    def search(self, text: str) -> Optional[Any]:
        """Where the pattern first matches in `text` (a match object), or None."""
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: RE2 reads UTF-8, so they read as U+FFFD
            data = text.encode("utf-16-le", "surrogatepass").decode(
                "utf-16-le", "replace").encode("utf-8")
        return self.compiled.search(data)


def compile_user_pattern(text: str) -> UserPattern:
    """The pattern, checked by Python and compiled by RE2. Raises `re.error` for what Python
    refuses, `Unsupported` for what RE2 cannot run."""
    import warnings

    _check_nesting(text)
    with warnings.catch_warnings():  # "possible nested set" and such: Python still reads it
        warnings.simplefilter("ignore")
        try:
            re.compile(text)
        except RecursionError:
            raise Unsupported(f"groups nested too deep (at most {MAX_GROUP_DEPTH})") from None
    translated = translate(text)
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 would print its own message to standard error
    try:
        compiled = re2.compile(translated, options)
    except re2.error as error:
        reason = error.args[0] if error.args else error
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise Unsupported(f"the linear-time engine cannot run it ({reason})") from None
    return UserPattern(text, translated, compiled)


def _check_nesting(text: str) -> None:
    """Refuse groups nested deeper than MAX_GROUP_DEPTH (a rough count: escaped parentheses
    do not count, those in brackets do, so a real pattern is never refused wrongly below the
    bound's tenth)."""
    depth = deepest = 0
    index = 0
    while True:
        found = _PAREN.search(text, index)
        if found is None:
            break
        index = found.end()
        if found.group() == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif found.group() == ")":
            depth = max(0, depth - 1)
    if deepest > MAX_GROUP_DEPTH:
        raise Unsupported(f"groups nested {deepest} deep (at most {MAX_GROUP_DEPTH})")


_PAREN = re.compile(r"\\.|[()]", re.DOTALL)


class _Scope:
    """The flags in force in one group: `ascii`, `multiline`, `dotall`, `verbose`."""

    __slots__ = ("ascii", "multiline", "dotall", "verbose")

    def __init__(self, ascii: bool = False, multiline: bool = False, dotall: bool = False,
                 verbose: bool = False):
        self.ascii, self.multiline, self.dotall, self.verbose = \
            ascii, multiline, dotall, verbose

    def but(self, on: str, off: str) -> "_Scope":
        values = {"a": self.ascii, "m": self.multiline, "s": self.dotall, "x": self.verbose}
        for flag in on:
            if flag in values:
                values[flag] = True
        for flag in off:
            if flag in values:
                values[flag] = False
        if "u" in on:
            values["a"] = False
        return _Scope(values["a"], values["m"], values["s"], values["x"])


def translate(text: str) -> str:
    """A pattern Python accepts, in RE2's syntax with Python's meaning (see the module's doc).
    Raises Unsupported. Global flags (`(?i)`, `(?x)`...) apply to the whole pattern wherever
    written, as Python 3.9 and 3.10 apply them."""
    found: Tuple[str, ...] = ()
    while True:
        translated, global_flags = _translate(text, found)
        if set(global_flags) <= set(found):
            return translated
        found = tuple(sorted(set(found) | set(global_flags)))


def _translate(text: str, global_flags: Tuple[str, ...]) -> Tuple[str, Tuple[str, ...]]:
    """One pass with `global_flags` in force from the start; returns the translation and the
    global flags met."""
    scope = _Scope().but("".join(global_flags), "")
    out: List[str] = ["(?i)"] if "i" in global_flags else []
    met: List[str] = []
    scopes: List[_Scope] = []
    index, end = 0, len(text)
    while index < end:
        char = text[index]
        if scope.verbose and char in _VERBOSE_SPACE:
            index += 1
            continue
        if scope.verbose and char == "#":
            newline = text.find("\n", index)
            index = end if newline < 0 else newline + 1
            continue
        if char == "[":
            piece, index = _class(text, index, scope)
            out.append(piece)
        elif char == "(":
            piece, index, inner = _group(text, index, scope, met)
            if piece is None:  # a comment, or global flags
                continue
            out.append(piece)
            scopes.append(scope)
            scope = inner
        elif char == ")":
            out.append(")")
            scope = scopes.pop() if scopes else scope
            index += 1
        elif char == "|":
            out.append("|")
            index += 1
        elif char in "*+?{":
            piece, index = _quantifier(text, index)
            out.append(piece)
        elif char == "^":
            out.append("(?m:^)" if scope.multiline else r"\A")
            index += 1
        elif char == "$":
            out.append("(?m:$)" if scope.multiline else r"(?:\n?\z)")
            index += 1
        elif char == ".":
            out.append("(?s:.)" if scope.dotall else r"[^\n]")
            index += 1
        elif char == "\\":
            piece, index = _escape(text, index, scope)
            out.append(piece)
        else:
            out.append(_literal(ord(char)))
            index += 1
    return "".join(out), tuple(met)


def _group(text: str, index: int, scope: _Scope, met: List[str]
           ) -> Tuple[Optional[str], int, _Scope]:
    """A group's opening at text[index] (`(`): the RE2 opening (None for what opens nothing),
    where the group's body starts, and the flags in force in it."""
    if not text.startswith("(?", index):
        return "(?:", index + 1, scope
    after = text[index + 2:index + 3]
    if after == ":":
        return "(?:", index + 3, scope
    if after == "P":
        if text.startswith("(?P<", index):
            close = text.index(">", index)
            return "(?:", close + 1, scope
        raise Unsupported("a backreference (?P=name) needs backtracking")
    if after == "#":
        close = text.index(")", index)
        return None, close + 1, scope
    if after in ("=", "!") or text.startswith(("(?<=", "(?<!"), index):
        raise Unsupported("look-arounds ((?=...), (?!...), (?<=...), (?<!...)) need "
                          "backtracking")
    if after == "(":
        raise Unsupported("a conditional group (?(...)...) needs backtracking")
    if after == ">":
        raise Unsupported("an atomic group (?>...) is not supported")
    # Flags: (?aiLmsux) for the whole pattern, (?aiLmsux-imsx:...) for a group.
    at = index + 2
    on = off = ""
    while text[at] in _FLAGS:
        on += text[at]
        at += 1
    if text[at] == "-":
        at += 1
        while text[at] in _FLAGS:
            off += text[at]
            at += 1
    if text[at] == ")":
        met.extend(on)
        return None, at + 1, scope
    # A scoped group (`:`): RE2 takes its case flag; the others are translated here.
    case = ("i" if "i" in on else "") + ("-i" if "i" in off else "")
    return (f"(?{case}:" if case else "(?:"), at + 1, scope.but(on, off)


def _quantifier(text: str, index: int) -> Tuple[str, int]:
    """A quantifier (`*`, `+?`, `{2,5}`) at text[index], or a literal `{` where Python reads
    one; refuses possessive quantifiers and counts above MAX_REPEAT."""
    char = text[index]
    if char == "{":
        found = _BRACES.match(text, index)
        if found is None or found.group() == "{}":
            return _literal(ord("{")), index + 1
        low, comma, high = found.groups()
        low_n = int(low) if low else 0
        high_n = None if comma and not high else int(high) if high else low_n
        if low_n > MAX_REPEAT or (high_n is not None and high_n > MAX_REPEAT):
            raise Unsupported(f"a repetition count above {MAX_REPEAT:,}")
        piece = f"{{{low_n},{'' if high_n is None else high_n}}}" if comma else f"{{{low_n}}}"
        index = found.end()
    else:
        piece = char
        index += 1
    follower = text[index:index + 1]
    if follower == "?":
        return piece + "?", index + 1
    if follower == "+":
        raise Unsupported("a possessive quantifier (*+, ++, ?+, {m,n}+) is not supported")
    return piece, index


_BRACES = re.compile(r"\{([0-9]*)(?:(,)([0-9]*))?\}")


def _escape(text: str, index: int, scope: _Scope) -> Tuple[str, int]:
    """An escape outside brackets at text[index] (`\\`)."""
    letter = text[index + 1]
    if letter in "dws":
        return f"[{_CLASSES[scope.ascii][letter]}]", index + 2
    if letter in "DWS":
        return f"[^{_CLASSES[scope.ascii][letter.lower()]}]", index + 2
    if letter == "b":
        return r"\b", index + 2
    if letter == "B":
        return r"\B", index + 2
    if letter == "A":
        return r"\A", index + 2
    if letter == "Z":
        return r"\z", index + 2
    code, index = _code_escape(text, index)
    return _literal(code), index


def _code_escape(text: str, index: int, in_class: bool = False) -> Tuple[int, int]:
    """The code point of a character escape at text[index] (`\\n`, `\\x41`, `\\u00e9`,
    `\\N{...}`, octal, `\\.`), and the index after it. Refuses backreferences (in brackets,
    `\\1` is octal)."""
    letter = text[index + 1]
    if letter in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[letter], index + 2
    if letter in "xuU":
        size = {"x": 2, "u": 4, "U": 8}[letter]
        return int(text[index + 2:index + 2 + size], 16), index + 2 + size
    if letter == "N":
        close = text.index("}", index)
        return ord(unicodedata.lookup(text[index + 3:close])), close + 1
    if letter == "0" or (in_class and letter in _OCTAL):
        digits = letter
        while len(digits) < 3 and text[index + 1 + len(digits):index + 2 + len(digits)] \
                and text[index + 1 + len(digits)] in _OCTAL:
            digits += text[index + 1 + len(digits)]
        return int(digits, 8), index + 1 + len(digits)
    if letter in _DIGITS:
        three = text[index + 1:index + 4]
        if len(three) == 3 and all(c in _OCTAL for c in three):
            return int(three, 8), index + 4
        raise Unsupported(f"a backreference (\\{letter}) needs backtracking")
    return ord(letter), index + 2


def _class(text: str, index: int, scope: _Scope) -> Tuple[str, int]:
    """A bracketed class at text[index] (`[`), as Python reads it: `]` first is literal, a
    `[` inside is literal, escapes as in Python."""
    index += 1
    negate = text[index:index + 1] == "^"
    if negate:
        index += 1
    items: List[str] = []
    first = True
    while True:
        char = text[index]
        if char == "]" and not first:
            index += 1
            break
        first = False
        low, index = _class_item(text, index, scope)
        if text[index:index + 1] == "-" and text[index + 1:index + 2] not in ("", "]"):
            high, index = _class_item(text, index + 1, scope)
            items.append(f"{low}-{high}")
        else:
            items.append(low)
    return f"[{'^' if negate else ''}{''.join(items)}]", index


def _class_item(text: str, index: int, scope: _Scope) -> Tuple[str, int]:
    """One member of a class: a character (as RE2 writes it) or a class escape's body."""
    char = text[index]
    if char != "\\":
        return _class_literal(ord(char)), index + 1
    letter = text[index + 1]
    if letter in "dws":
        return _CLASSES[scope.ascii][letter], index + 2
    if letter == "D":
        return (r"\D" if scope.ascii else r"\P{Nd}"), index + 2
    if letter in "WS" and not (letter == "W" and scope.ascii):
        raise Unsupported(f"\\{letter} inside [...] is not supported; write it outside the "
                          f"brackets, as in (?:\\{letter}|[...])")
    if letter == "W":
        return r"\W", index + 2
    if letter == "b":
        return _class_literal(8), index + 2
    code, index = _code_escape(text, index, in_class=True)
    return _class_literal(code), index


def _literal(code: int) -> str:
    """One character as RE2 reads it literally, outside brackets."""
    if 0xD800 <= code <= 0xDFFF:
        raise Unsupported("a lone surrogate (\\ud800-\\udfff) cannot be matched in UTF-8 text")
    char = chr(code)
    if char.isascii() and (char.isalnum() or char == "_"):
        return char
    if char.isascii() and char.isprintable() and char != " ":
        return "\\" + char
    return f"\\x{{{code:x}}}"


def _class_literal(code: int) -> str:
    return _literal(code)
