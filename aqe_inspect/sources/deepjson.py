"""JSON of any reasonable depth, decoded without recursion.

`json.loads` recurses in C and raises RecursionError once a value nests about as deep as
Python's recursion limit (1,000): a `sparkPlanInfo` tree about 490 operators deep (an object
and a `children` list per level) is already too much for it, and real plans can be that deep
(a long chain of unions or projections). Jackson, which writes Spark's event logs and the
History Server's answers, refuses to write more than 1,000 levels (its `maxNestingDepth`), so
nothing Spark wrote is deeper.

`loads` first tries msgspec's decoder (C, about 3x `json` on an event log's SQL events); what
it refuses (JSON it finds malformed or too deep, a lone surrogate, a number past a double,
NaN, a BOM, text that is not UTF-8) is decoded again as below, so results and errors are
`json`'s. `loads` and `raw_decode` take `json`'s fast path first; only a value too deep for it is decoded
again here, with an explicit stack (the strings by `json`'s own C `scanstring`), up to
`MAX_DEPTH` levels. A deeper value is refused as `TooDeep`, a `JSONDecodeError` (so a
`ValueError`) pointing at the bracket that went too deep: a caller that skips malformed JSON
skips it too, and says why.
"""

from __future__ import annotations

import json
import re
import sys
from json.decoder import JSONDecodeError, scanstring
from typing import Any, Iterator, List, Optional, Tuple, Union

#: The deepest nesting decoded: ten times what Jackson writes.
MAX_DEPTH = 10_000

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?")
_CONSTANTS = (("null", None), ("true", True), ("false", False), ("NaN", float("nan")),
              ("Infinity", float("inf")), ("-Infinity", float("-inf")))


class TooDeep(JSONDecodeError):
    """A value nested deeper than the limit."""


class NotAnArray(JSONDecodeError):
    """`array_items` of a text that is not an array."""


_FAST: Any = None


def _fast_decoder() -> Any:
    """msgspec's JSON decode, or False when it cannot be imported."""
    global _FAST
    if _FAST is None:
        try:
            import msgspec

            _FAST = msgspec.json.Decoder().decode
        except ImportError:  # pragma: no cover - a dependency, but the reader works without
            _FAST = False
    return _FAST


def loads(data: Union[str, bytes, bytearray], max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads(data)`, for values up to `max_depth` levels deep."""
    fast = _FAST if _FAST is not None else _fast_decoder()
    if fast and max_depth >= sys.getrecursionlimit():
        # msgspec stops at Python's recursion limit (1,000 levels by default), short of
        # max_depth: anything it gives is what json gives; the rest is decoded again below.
        try:
            return fast(data)
        except Exception:  # noqa: BLE001 - DecodeError (a ValueError), RecursionError
            pass
    text = data.decode(json.detect_encoding(data), "surrogatepass") \
        if isinstance(data, (bytes, bytearray)) else data
    try:
        return json.loads(text)
    except RecursionError:
        # json.loads got past its checks of the text's start (a BOM) to recurse.
        return loads_iteratively(text, max_depth)


def loads_iteratively(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads(text)` without recursion (and slower): what `loads` falls back to."""
    value, end = _decode(text, _WHITESPACE.match(text, 0).end(), max_depth)  # type: ignore
    end = _WHITESPACE.match(text, end).end()  # type: ignore[union-attr]
    if end != len(text):
        raise JSONDecodeError("Extra data", text, end)
    return value


def raw_decode(text: str, index: int = 0, max_depth: int = MAX_DEPTH, inside: int = 0
               ) -> Tuple[Any, int]:
    """`json.JSONDecoder().raw_decode(text, index)`: the value starting at `index` (no leading
    white space) and where it ends, for values up to `max_depth` levels deep (counting the
    `inside` levels around it)."""
    try:
        return json.JSONDecoder().raw_decode(text, index)
    except RecursionError:
        return _decode(text, index, max_depth, inside)



def array_items(data: Union[str, bytes, bytearray], max_depth: int = MAX_DEPTH
                ) -> Iterator[Tuple[Any, Optional[JSONDecodeError]]]:
    """The items of a JSON array, each as (value, None), or (None, error) for one nested
    deeper than `max_depth`, which is passed over: the others are still read. Raises
    NotAnArray when the text is not an array, JSONDecodeError when it is malformed."""
    text = data.decode(json.detect_encoding(data), "surrogatepass") \
        if isinstance(data, (bytes, bytearray)) else data
    skip = _WHITESPACE.match
    index = skip(text, 0).end()  # type: ignore[union-attr]
    if text[index:index + 1] != "[":
        raise NotAnArray("Expecting '['", text, index)
    index = skip(text, index + 1).end()  # type: ignore[union-attr]
    if text[index:index + 1] == "]":
        index += 1
    else:
        while True:
            try:
                value, index = raw_decode(text, index, max_depth, inside=1)
                yield value, None
            except TooDeep as error:
                index = _value_end(text, index)
                yield None, error
            index = skip(text, index).end()  # type: ignore[union-attr]
            char = text[index:index + 1]
            if char == "]":
                index += 1
                break
            if char != ",":
                raise JSONDecodeError("Expecting ',' delimiter", text, index)
            index = skip(text, index + 1).end()  # type: ignore[union-attr]
    end = skip(text, index).end()  # type: ignore[union-attr]
    if end != len(text):
        raise JSONDecodeError("Extra data", text, end)


#: What `_value_end` steps over: strings whole, and brackets.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def _value_end(text: str, index: int) -> int:
    """Where the array or object opening at `index` ends, its brackets counted (not
    checked: it is being passed over); the end of the text when it does not end."""
    depth = 0
    for token in _TOKEN.finditer(text, index):
        char = token.group()
        if char == "[" or char == "{":
            depth += 1
        elif char == "]" or char == "}":
            depth -= 1
            if depth == 0:
                return token.end()
    return len(text)


def _decode(text: str, index: int, max_depth: int, inside: int = 0) -> Tuple[Any, int]:
    """The value at `index` and the index after it, `inside` levels deep; containers are kept
    on a stack."""
    skip = _WHITESPACE.match
    # The open containers, outermost first, each with the key its next value goes under.
    stack: List[List[Any]] = []
    while True:
        char = text[index:index + 1]
        value: Any
        if char == "{" or char == "[":
            if len(stack) + inside >= max_depth:
                raise TooDeep(f"nested deeper than {max_depth:,} levels", text, index)
            index = skip(text, index + 1).end()  # type: ignore[union-attr]
            if char == "{":
                if text[index:index + 1] == "}":
                    value, index = {}, index + 1
                else:
                    key, index = _key(text, index)
                    stack.append([{}, key])
                    continue
            elif text[index:index + 1] == "]":
                value, index = [], index + 1
            else:
                stack.append([[], None])
                continue
        elif char == '"':
            value, index = scanstring(text, index + 1, True)
        else:
            number = _NUMBER.match(text, index)
            if number is not None:
                whole, fraction, exponent = number.groups()
                value = float(whole + (fraction or "") + (exponent or "")) \
                    if fraction or exponent else int(whole)
                index = number.end()
            else:
                for word, constant in _CONSTANTS:
                    if text.startswith(word, index):
                        value, index = constant, index + len(word)
                        break
                else:
                    raise JSONDecodeError("Expecting value", text, index)
        # Put the value in its container; close every container that ends after it.
        while True:
            if not stack:
                return value, index
            frame = stack[-1]
            container = frame[0]
            index = skip(text, index).end()  # type: ignore[union-attr]
            char = text[index:index + 1]
            if container.__class__ is dict:
                container[frame[1]] = value
                if char == ",":
                    frame[1], index = _key(text, skip(text, index + 1).end())  # type: ignore
                    break
                if char != "}":
                    raise JSONDecodeError("Expecting ',' delimiter", text, index)
            else:
                container.append(value)
                if char == ",":
                    index = skip(text, index + 1).end()  # type: ignore[union-attr]
                    break
                if char != "]":
                    raise JSONDecodeError("Expecting ',' delimiter", text, index)
            stack.pop()
            value, index = container, index + 1


def _key(text: str, index: int) -> Tuple[str, int]:
    """An object's key at `index`, and the index of its value (past the `:`)."""
    if text[index:index + 1] != '"':
        raise JSONDecodeError("Expecting property name enclosed in double quotes", text, index)
    key, index = scanstring(text, index + 1, True)
    index = _WHITESPACE.match(text, index).end()  # type: ignore[union-attr]
    if text[index:index + 1] != ":":
        raise JSONDecodeError("Expecting ':' delimiter", text, index)
    return key, _WHITESPACE.match(text, index + 1).end()  # type: ignore[union-attr]


#: The largest id Spark writes (an execution's, a stage's, a plan node's): a Java long's.
MAX_ID = (1 << 63) - 1


def json_id(value: Any) -> Optional[int]:
    """`value` as an id Spark writes: a JSON integer from 0 to a Java long's largest; None for
    anything else (a list, an object, a string, a fraction, true or false, null, a negative
    or larger number), which the caller skips and says so (`id_problem`)."""
    if value.__class__ is int and 0 <= value <= MAX_ID:
        return value
    return None


def id_problem(field: str, value: Any) -> str:
    """What is wrong with `value` as the id `field` (`json_id` refused it), as a note says
    it: `executionId is a list`, `fromId is 1.5, not a whole number`."""
    if value is None:
        return f"{field} is missing or null"
    if isinstance(value, bool):
        return f"{field} is {'true' if value else 'false'}, not a number"
    if isinstance(value, list):
        return f"{field} is a list"
    if isinstance(value, dict):
        return f"{field} is an object"
    if isinstance(value, str):
        return f"{field} is a string ({value[:40]!r}), not a number"
    if isinstance(value, float):
        return f"{field} is {value!r}, not a whole number"
    if isinstance(value, int):
        shown = str(value) if -10 ** 30 < value < 10 ** 30 else "a number of 30 digits or more"
        return f"{field} is {shown}, out of range (0 to {MAX_ID})"
    return f"{field} is not a number"


def text(value: Any, limit: int = 200) -> str:
    """`str(value)` for a decoded JSON value where a string belongs, without recursion (`str`
    of a deeply nested list recurses): a list or object is written as compact JSON, cut after
    `limit` characters with `...`."""
    if isinstance(value, str):
        return value
    if not isinstance(value, (list, dict)):
        return str(value)
    out: List[str] = []
    size = 0
    # Iterators over the pieces of the containers open: punctuation (str) and values.
    stack: List[Iterator[Any]] = [_pieces(value)]
    while stack and size <= limit:
        piece = next(stack[-1], None)
        if piece is None:
            stack.pop()
        elif piece.__class__ is str:
            out.append(piece)
            size += len(piece)
        elif isinstance(piece.value, (list, dict)):
            stack.append(_pieces(piece.value))
        else:
            inner = piece.value
            out.append(json.dumps(inner, ensure_ascii=False) if inner is None or
                       isinstance(inner, (str, int, float)) else repr(inner))
            size += len(out[-1])
    joined = "".join(out)
    return joined if len(joined) <= limit else joined[:limit] + "..."


class _Value:
    """A value inside a container, as `_pieces` yields it (a bare str is punctuation)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


def _pieces(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        yield "{"
        for index, (key, item) in enumerate(value.items()):
            yield ("," if index else "") + json.dumps(str(key), ensure_ascii=False) + ":"
            yield _Value(item)
        yield "}"
    else:
        yield "["
        for index, item in enumerate(value):
            if index:
                yield ","
            yield _Value(item)
        yield "]"
