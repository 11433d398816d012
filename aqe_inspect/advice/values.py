"""Values Spark accepts, chosen from measured figures with headroom: a byte size rounded to a
whole number of KB, MB or GB (Spark's `JavaUtils.byteStringAs`: binary units, whole numbers,
so `12KB` is 12,288 bytes), a ratio or factor rounded to two significant digits."""

from __future__ import annotations

import math
from typing import Tuple

from ..plan.units import conf_bytes, show_bytes

#: How far above (or under) the measured figure a value is put, so that tomorrow's data, a
#: little larger, still passes: 20%.
HEADROOM = 0.2
_UNITS = (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10), ("b", 1))


def _two_digits_up(count: float) -> int:
    whole = math.ceil(count)
    if whole < 100:
        return whole
    scale = 10 ** (len(str(whole)) - 2)
    return -(-whole // scale) * scale


def _two_digits_down(count: float) -> int:
    whole = math.floor(count)
    if whole < 100:
        return whole
    scale = 10 ** (len(str(whole)) - 2)
    return whole // scale * scale


def size_above(measured: int, headroom: float = HEADROOM) -> Tuple[str, int]:
    """The round byte size at least `headroom` above `measured`: (as Spark reads it, bytes)."""
    target = max(measured * (1 + headroom), measured + 1)
    for suffix, unit in _UNITS:
        if target >= unit or unit == 1:
            count = _two_digits_up(target / unit)
            text = f"{count}{suffix}"
            return text, conf_bytes(text)
    raise AssertionError("unreachable")  # pragma: no cover


def size_under(measured: int, headroom: float = HEADROOM) -> Tuple[str, int]:
    """The round byte size at least `headroom` under `measured` (at least 1 byte)."""
    target = max(1.0, min(measured * (1 - headroom), measured - 1))
    for suffix, unit in _UNITS:
        if target >= unit:
            count = max(1, _two_digits_down(target / unit))
            text = f"{count}{suffix}"
            return text, conf_bytes(text)
    return "1b", 1


def number_under(measured: float, whole: bool = False, headroom: float = HEADROOM) -> str:
    """A factor or ratio at least `headroom` under `measured`: two significant digits (a
    whole number where Spark takes an int)."""
    target = measured * (1 - headroom)
    if whole:
        return str(max(0, math.floor(target)))
    if target <= 0:
        return "0"
    digits = 1 - math.floor(math.log10(target))
    scale = 10 ** digits
    value = math.floor(target * scale) / scale
    text = f"{value:.{max(digits, 0)}f}" if digits > 0 else str(int(value))
    return text.rstrip("0").rstrip(".") if "." in text else text


def above(value: float, measured: float) -> str:
    """`28% above`"""
    return f"{_percent(value, measured)}% above"


def under(value: float, measured: float) -> str:
    return f"{_percent(measured, value, of=measured)}% under"


def _percent(high: float, low: float, of: float = 0) -> int:
    base = of or low
    if base <= 0:
        return 100
    return int(round((high - low) * 100 / base))


def bytes_text(count: int) -> str:
    """`9.4 KiB (9,600 B)`: as Spark prints it, and exactly."""
    shown = show_bytes(count)
    exact = f"{count:,} B"
    return shown if shown == exact or shown.endswith(" B") else f"{shown} ({exact})"
