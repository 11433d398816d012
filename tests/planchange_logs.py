"""Hostile plan-change logs built from the real ones of sample_plans/ (driver_planchange.log,
spark.sql.planChangeLog.level=INFO): markers inside a block, a line full of markers, bare rule
headings, many queries one after the other, two queries' messages interleaved as concurrent
queries print them (their planning too, or their runs only). A query copied is given its own expression ids (`#n` moved by an
offset), as Spark's global counter would give another query's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Tuple

SAMPLE_PLANS = Path(__file__).resolve().parent.parent / "sample_plans"
#: A line that starts a log4j message of the samples (`26/11/26 08:27:35 INFO ...`).
_MESSAGE = re.compile(rb"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d ")
_ID = re.compile(rb"#(\d+)")


def planchange_log(scenario: str = "skew_join", version: str = "3.5.9") -> Path:
    return SAMPLE_PLANS / f"spark-{version}" / scenario / "driver_planchange.log"


def messages(data: bytes) -> List[bytes]:
    """The log's messages, each its lines up to the next message start, newlines kept."""
    out: List[bytes] = []
    for line in data.splitlines(keepends=True):
        if _MESSAGE.match(line) or not out:
            out.append(line)
        else:
            out[-1] += line
    return out


def renumbered(data: bytes, offset: int) -> bytes:
    """`data` with every expression id `#n` made `#(n + offset)`."""
    return _ID.sub(lambda m: b"#%d" % (int(m.group(1)) + offset), data)


def split_at_query(data: bytes) -> Tuple[List[bytes], List[bytes]]:
    """The messages before the query's first plan-change message (the application starting)
    and those from it on."""
    found = messages(data)
    first = next(i for i, m in enumerate(found) if b"PlanChangeLogger" in m)
    return found[:first], found[first:]


def many_queries(data: bytes, count: int, offset: int = 100_000) -> bytes:
    """The application of `data` running its query `count` times, one after the other, each
    with its own expression ids."""
    head, body = split_at_query(data)
    text = b"".join(body)
    return b"".join(head) + b"".join(renumbered(text, offset * k) for k in range(count))


def interleaved(first: bytes, second: bytes, offset: int = 100_000) -> bytes:
    """`first`'s application with `second`'s query run at the same time: their plan-change
    messages alternate (the second's expression ids moved by `offset`)."""
    head, one = split_at_query(first)
    _, two = split_at_query(renumbered(second, offset))
    merged: List[bytes] = []
    for index in range(max(len(one), len(two))):
        merged.extend(part[index] for part in (one, two) if index < len(part))
    return b"".join(head + merged)


def interleaved_runs(first: bytes, second: bytes, offset: int = 100_000) -> bytes:
    """`interleaved`, the two queries' runs at once: each query's messages up to its plan
    printed before the action (its planning), the first's then the second's, then the
    messages of both runs alternating, as two queries whose actions run at once print them."""
    head, one = split_at_query(first)
    _, two = split_at_query(renumbered(second, offset))

    def at_action(found: List[bytes]) -> int:
        return next(i for i, m in enumerate(found) if b"isFinalPlan=false" in m) + 1

    cut_one, cut_two = at_action(one), at_action(two)
    merged: List[bytes] = one[:cut_one] + two[:cut_two]
    rest_one, rest_two = one[cut_one:], two[cut_two:]
    for index in range(max(len(rest_one), len(rest_two))):
        merged.extend(part[index] for part in (rest_one, rest_two) if index < len(part))
    return b"".join(head + merged)


def inside_block(data: bytes, count: int) -> bytes:
    """`data` with `count` plan lines holding `Plan changed:` inside its first rule block
    (a literal in a plan: each is text of the block, not AQE's message)."""
    lines = data.split(b"\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(b"=== Applying Rule")) + 1
    extra = [b"!  +- Filter (note#5 = 'Plan changed: %d Final plan:')      +- Filter (note#5 = "
             b"Plan changed:" % i for i in range(count)]
    return b"\n".join(lines[:at] + extra + lines[at:])


def markers_line(data: bytes, count: int) -> bytes:
    """`data` with one log message of `count` times each AQE marker on its one line."""
    lines = data.split(b"\n")
    at = next(i for i, line in enumerate(lines) if b"PlanChangeLogger" in line)
    line = b"26/11/26 08:27:35 INFO Noise: " + \
        b" Plan changed x Final plan: Batch B has no effect. " * count
    return b"\n".join(lines[:at] + [line] + lines[at:])


def bare_headings(data: bytes, count: int) -> bytes:
    """`data` with `count` rule headings with no plans under them (a log cut or damaged)
    before its first plan-change message."""
    head, body = split_at_query(data)
    heading = b"=== Applying Rule org.example.R ===\n"
    return b"".join(head) + heading * count + b"".join(body)
