"""Spark's size figures in one place: byte sizes and row counts as Spark reads and prints them.

- `conf_bytes`: a byte-size config value (`10MB`, `64k`, `-1`) as `SQLConf` reads it
  (`ConfigHelpers.byteFromString` over `JavaUtils.byteStringAs(_, BYTE)`).
- `printed_bytes`, `printed_count`: a size or a row count as Spark prints it
  (`Utils.bytesToString`, `Statistics.simpleString`), as the interval of exact figures it can
  stand for (`Size`): `9.4 KiB` is any of 9,575..9,676 bytes, `1152.0 B` is 1,152 exactly.
- `show_bytes`: how Spark prints a number of bytes, for messages.
- `parse_statistics`: the inside of the `Statistics(...)` Spark prints after a query stage.
- `is_unknown_size`: whether a printed size is Spark's figure for "no estimate" (Long.MaxValue
  bytes, printed `8.0 EiB`), and `UNKNOWN_SIZE_WORDS`, how reports say it.

How Spark prints sizes (`Utils.bytesToString`; `core/.../util/Utils.scala`, from 4.0
`common/utils`): the largest of EiB, PiB, TiB, GiB, MiB, KiB that the size is at least twice
(so 1 MiB prints as `1024.0 KiB`), else B, always with one decimal (`"%.1f"`, which rounds half
up); sizes of 2^11 EiB and more in scientific notation to three digits (`2.36E+21 B`). Spark
2.x printed the same figures as KB, MB, GB, TB, PB, EB (changed in 3.0, SPARK-25696); those
are read too. From 3.5 (SPARK-42685) sizes under 2^63 go through a double first, so figures
over 2^53 bytes (8 PiB) may stand one double's spacing (under one part in 10^15) beyond the
bounds given here.

A stage's `Statistics(...)` are run-time figures: Spark prints them after a query stage only
once the stage has run (`QueryStageExec.simpleStringWithNodeId` over `computeStats()`, which is
empty before). `Statistics.simpleString` prints `sizeInBytes` and, when known, `rowCount`
(`BigDecimal` to three digits, half up: `2.00E+4`); no line up to 4.3 prints `isRuntime`, so it
is read only when some text carries it.

A size Spark has no estimate of is Long.MaxValue bytes (`SQLConf.defaultSizeInBytes`, whose
default is Long.MaxValue; `ResultQueryStageExec` reports it when its plan has no logical link),
printed `8.0 EiB`. It is no size anything measured: `parse_statistics` gives no size for it and
reports say `unknown (Spark's 8.0 EiB: no estimate)`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from math import ceil, floor
from typing import Mapping, Optional, Tuple

#: The units Spark prints sizes in, largest first, with what one of each is in bytes.
PRINTED_UNITS: Tuple[Tuple[str, int], ...] = (
    ("EiB", 1 << 60), ("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20),
    ("KiB", 1 << 10), ("B", 1))
#: Spark 2.x's names for the same binary units.
_OLD_NAMES = {"EB": "EiB", "PB": "PiB", "TB": "TiB", "GB": "GiB", "MB": "MiB", "KB": "KiB"}
UNIT_BYTES: Mapping[str, int] = {**dict(PRINTED_UNITS),
                                 **{old: dict(PRINTED_UNITS)[new] for old, new in _OLD_NAMES.items()}}

#: The suffixes a byte-size config takes (`JavaUtils.byteSuffixes`), binary multiples. The
#: `ki`/`kib` forms are read by Spark 4.2 and later only (SPARK-55051); older lines reject them.
CONF_SUFFIXES: Mapping[str, int] = {
    "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30,
    "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50,
    "ki": 1 << 10, "kib": 1 << 10, "mi": 1 << 20, "mib": 1 << 20, "gi": 1 << 30,
    "gib": 1 << 30, "ti": 1 << 40, "tib": 1 << 40, "pi": 1 << 50, "pib": 1 << 50}

LONG_MAX = (1 << 63) - 1
#: How reports show Spark's "no estimate" size (Long.MaxValue bytes, printed `8.0 EiB`).
UNKNOWN_SIZE_WORDS = "unknown (Spark's 8.0 EiB: no estimate)"
#: From this size on Spark prints bytes in scientific notation (`2.36E+21 B`).
SCIENTIFIC_FROM = (1 << 11) << 60

_CONF = re.compile(r"([0-9]+)([a-z]+)?")
_CONF_FRACTION = re.compile(r"[0-9]+\.[0-9]+[a-z]*")
_NUMBER = r"(\d+(?:\.\d+)?)(?:E([+-]?\d+))?"
_PRINTED = re.compile(_NUMBER + r"\s*(" + "|".join(UNIT_BYTES) + r")", re.IGNORECASE)
_COUNT = re.compile(_NUMBER)
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+")
_STAT = re.compile(r"\s*(\w+)=([^,]*)(?:,|$)")


@dataclass(frozen=True)
class Size:
    """The exact figures a printed size or count can stand for: `low` to `high`, both included.

    `text` is the figure as printed (`9.4 KiB`, `2.00E+4`); it takes no part in equality.
    The comparisons answer None when the figure cannot tell (the limit falls inside it).
    """

    low: int
    high: int
    text: str = field(default="", compare=False)

    @classmethod
    def of_bytes(cls, count: int) -> "Size":
        """An exact number of bytes, shown as Spark would print it."""
        return cls(count, count, show_bytes(count))

    @property
    def exact(self) -> bool:
        return self.low == self.high

    def at_most(self, limit: int) -> Optional[bool]:
        """Whether the figure is <= `limit` (Spark's `sizeInBytes <= threshold`)."""
        return _decide(self.high <= limit, self.low > limit)

    def below(self, limit: int) -> Optional[bool]:
        """Whether the figure is < `limit`."""
        return _decide(self.high < limit, self.low >= limit)

    def above(self, limit: int) -> Optional[bool]:
        """Whether the figure is > `limit`."""
        return _decide(self.low > limit, self.high <= limit)

    def at_least(self, limit: int) -> Optional[bool]:
        """Whether the figure is >= `limit`."""
        return _decide(self.low >= limit, self.high < limit)

    def __str__(self) -> str:
        if self.text:
            return self.text
        return str(self.low) if self.exact else f"{self.low}..{self.high}"


@dataclass(frozen=True)
class Statistics:
    """What a printed `Statistics(...)` says: size in bytes, row count, whether run-time."""

    size: Optional[Size] = None
    rows: Optional[Size] = None
    is_runtime: Optional[bool] = None


def _decide(yes: bool, no: bool) -> Optional[bool]:
    return True if yes else False if no else None


def conf_bytes(text: str) -> int:
    """A byte-size config value as Spark reads it: `10MB`, `10m`, `64KB`, `1g`, `10485760`, `-1`.

    Case does not matter and surrounding blanks are dropped; a suffix is a binary multiple
    (`1k` is 1024) and no suffix means bytes. A leading `-` negates the rest (that is how `-1`,
    "never broadcast", reads; `-10m` is read too, as Spark does). Raises ValueError, naming
    what is wrong, for anything Spark rejects: fractions (`1.5MB`), blanks inside (`10 MB`),
    unknown suffixes (`10x`), values beyond a Java long.
    """
    if not isinstance(text, str):
        raise ValueError(f"a byte size must be text, not {type(text).__name__}")
    body, sign = (text[1:], -1) if text.startswith("-") else (text, 1)
    lower = body.lower().strip()
    match = _CONF.fullmatch(lower)
    if match is None:
        if _CONF_FRACTION.fullmatch(lower):
            raise ValueError(f"byte size {text!r}: Spark takes whole numbers only "
                             f"(write 1536k, not 1.5m)")
        raise ValueError(f"byte size {text!r} is not a number of bytes with an optional unit "
                         f"b, k, m, g, t, p (e.g. 50b, 100k, 10MB, -1)")
    number, suffix = match.groups()
    if suffix is not None and suffix not in CONF_SUFFIXES:
        raise ValueError(f"byte size {text!r}: unknown unit {suffix!r} "
                         f"(Spark takes b, k, kb, m, mb, g, gb, t, tb, p, pb)")
    value = int(number) * CONF_SUFFIXES[suffix or "b"]
    if value > LONG_MAX:
        raise ValueError(f"byte size {text!r} is beyond what Spark holds (a Java long)")
    return sign * value


def printed_bytes(text: str) -> Size:
    """A size as Spark prints it (`468.8 KiB`, `1152.0 B`, `2.36E+21 B`, Spark 2's `4.0 MB`),
    as every number of bytes that prints so.

    One decimal rounded half up: `9.4 KiB` is [9.35, 9.45) KiB, i.e. 9,575..9,676 bytes; a
    unit is only used for sizes at least twice it, so `2.0 KiB` starts at 2,048. Raises
    ValueError when the text is not a size.
    """
    match = _PRINTED.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a size as Spark prints it (e.g. 468.8 KiB, 1152.0 B)")
    digits, exponent, unit_text = match.groups()
    unit = _unit_name(unit_text)
    scale = UNIT_BYTES[unit]
    if exponent is not None:
        low, high = _rounded_interval(digits, int(exponent))
        low = max(low, SCIENTIFIC_FROM) if high >= SCIENTIFIC_FROM else low
        return Size(low * scale, (high + 1) * scale - 1, _normal_text(text))
    value = Fraction(digits)
    if unit == "B":
        if value.denominator != 1:
            raise ValueError(f"{text!r}: a size in bytes has no fraction of a byte")
        return Size(int(value), int(value), _normal_text(text))
    half = Fraction(1, 2 * 10 ** _decimals(digits))
    low, high = ceil((value - half) * scale), ceil((value + half) * scale) - 1
    # Spark uses a unit only from twice it up to twice the next one (EiB: up to 2^11 EiB).
    floor, roof = 2 * scale, _next_unit(unit) * 2 - 1
    if max(low, floor) <= min(high, roof):
        low, high = max(low, floor), min(high, roof)
    return Size(max(low, 0), high, _normal_text(text))


def printed_count(text: str) -> Size:
    """A row count as printed: `2.00E+4` (`Statistics` rowCount, three digits rounded half up,
    so 19,950..20,049), `400` (exact), `20,000` (the Spark UI's grouping, exact).

    Raises ValueError when the text is not a count.
    """
    body = text.strip()
    if _GROUPED.fullmatch(body):
        value = int(body.replace(",", ""))
        return Size(value, value, body)
    match = _COUNT.fullmatch(body)
    if match is None:
        raise ValueError(f"{text!r} is not a row count as Spark prints it (e.g. 400, 2.00E+4)")
    digits, exponent = match.groups()
    if exponent is None:
        if "." in digits:
            raise ValueError(f"{text!r}: a row count is a whole number")
        return Size(int(digits), int(digits), body)
    low, high = _rounded_interval(digits, int(exponent))
    return Size(low, high, body)


def show_bytes(count: int) -> str:
    """`count` bytes as Spark prints them (`Utils.bytesToString`): `9.4 KiB`, `1152.0 B`."""
    if count >= SCIENTIFIC_FROM:
        return _scientific(count) + " B"
    for unit, scale in PRINTED_UNITS:
        if count >= 2 * scale or unit == "B":
            return f"{_half_up(Fraction(count, scale))} {unit}"
    raise AssertionError("unreachable: B ends the units")  # pragma: no cover


def is_unknown_size(text: str) -> bool:
    """Whether a size as printed (`8.0 EiB`, Spark 2's `8.0 EB`, or the bare figure
    9223372036854775807) is Long.MaxValue bytes, Spark's size for "no estimate"."""
    body = text.strip()
    if body.isdigit():
        return int(body) == LONG_MAX
    try:
        size = printed_bytes(body)
    except ValueError:
        return False
    return size.low <= LONG_MAX <= size.high and size.high - size.low < (1 << 60)


def parse_statistics(text: str) -> Statistics:
    """The inside of `Statistics(...)`: `sizeInBytes=468.8 KiB, rowCount=2.00E+4` (and an
    `isRuntime=true` if some text carries one). Other fields are passed over; a field whose
    figure cannot be read raises ValueError naming it.
    """
    body = text.strip()
    if body.startswith("Statistics(") and body.endswith(")"):
        body = body[len("Statistics("):-1]
    size = rows = runtime = None
    position = 0
    while position < len(body):
        match = _STAT.match(body, position)
        if match is None:
            raise ValueError(f"Statistics({text}): cannot read the field at {body[position:]!r}")
        position = match.end()
        name, value = match.group(1), match.group(2).strip()
        if name == "sizeInBytes":
            size = None if is_unknown_size(value) else printed_bytes(value)
        elif name == "rowCount":
            rows = printed_count(value)
        elif name == "isRuntime":
            if value not in ("true", "false"):
                raise ValueError(f"Statistics({text}): isRuntime={value!r} is not true or false")
            runtime = value == "true"
    return Statistics(size, rows, runtime)


def _unit_name(text: str) -> str:
    for name in UNIT_BYTES:
        if name.lower() == text.lower():
            return _OLD_NAMES.get(name, name)
    raise ValueError(f"unknown unit {text!r}")  # pragma: no cover - the pattern lists them


def _next_unit(unit: str) -> int:
    """What one of the next larger printed unit is in bytes (EiB: 2^10 EiB, the scientific cut)."""
    scales = [scale for _, scale in PRINTED_UNITS]
    index = scales.index(UNIT_BYTES[unit])
    return scales[index - 1] if index else SCIENTIFIC_FROM // 2


def _decimals(digits: str) -> int:
    return len(digits.split(".", 1)[1]) if "." in digits else 0


def _rounded_interval(digits: str, exponent: int) -> Tuple[int, int]:
    """The whole numbers that `BigDecimal(n, MathContext(len(digits), HALF_UP))` prints as
    `digits`E`exponent`: [v - ulp/2, v + ulp/2), where just below a power of ten the grid is ten
    times finer (9,995 prints as 1.00E+4)."""
    value = Fraction(digits) * Fraction(10) ** exponent
    ulp = Fraction(10) ** (exponent - _decimals(digits))
    below = ulp / 20 if digits.replace(".", "").lstrip("0").rstrip("0") == "1" else ulp / 2
    return max(ceil(value - below), 0), ceil(value + ulp / 2) - 1


def _half_up(value: Fraction) -> str:
    """`"%.1f"` of Java's Formatter: one decimal, half up."""
    tenths = floor(value * 10 + Fraction(1, 2))
    return f"{tenths // 10}.{tenths % 10}"


def _scientific(count: int) -> str:
    """`BigDecimal(count, MathContext(3, HALF_UP)).toString()` for count >= 1000."""
    exponent = len(str(count)) - 1
    mantissa = floor(Fraction(count, 10 ** (exponent - 2)) + Fraction(1, 2))
    if mantissa >= 1000:  # 9995 -> 1.00E+4
        mantissa, exponent = mantissa // 10, exponent + 1
    text = str(mantissa)
    return f"{text[0]}.{text[1:]}E+{exponent}"


def _normal_text(text: str) -> str:
    return " ".join(text.split())
