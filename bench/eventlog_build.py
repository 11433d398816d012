"""Build a large event log from a real one: the application's events repeated with distinct ids.

    python bench/eventlog_build.py SOURCE OUT [--size-mb 1024]

The header of the real log (everything before its first job or SQL execution: log start,
environment, application start, executors) is written once; its body (jobs, stages, tasks,
SQL executions, AQE updates, accumulator updates) is repeated until the file reaches the
size asked for, each copy with its own ids, so that no two executions, jobs, stages, tasks,
accumulators or plan expression ids (`#123`) are the same and no reader can take one
copy's work for another's; the application's end comes last. Everything else is byte for
byte the real log.

The body is cut once into literal bytes and numbered slots, so a copy is one join.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import List, Tuple

# Ids that must differ between copies, by the JSON key (or plan syntax) that carries them.
_IDS = re.compile(
    rb'(?P<key>"(?:executionId|Job ID|Stage ID|Task ID|accumulatorId|ID|RDD ID)":)(?P<n>\d+)'
    rb'|(?P<list>"(?:Stage IDs|Parent IDs|Parent Stage IDs|Job IDs)":\[)(?P<items>[\d,]*)\]'
    rb'|(?P<hash>#)(?P<expr>\d+)'
    rb'|(?P<pair>\[)(?P<acc>\d+),(?=-?\d+\])'
)
_KIND = {
    b'"executionId":': "execution", b'"Job ID":': "job", b'"Stage ID":': "stage",
    b'"Task ID":': "task", b'"accumulatorId":': "accumulator", b'"ID":': "accumulator",
    b'"RDD ID":': "rdd", b'"Stage IDs":[': "stage", b'"Parent IDs":[': "rdd",
    b'"Parent Stage IDs":[': "stage", b'"Job IDs":[': "job",
}
_BODY_START = (b'"Event":"SparkListenerJobStart"',
               b'"Event":"org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"')
_END = b'"Event":"SparkListenerApplicationEnd"'


def split(log: bytes) -> Tuple[bytes, bytes, bytes]:
    """Header, body and footer of one application's log."""
    lines = log.splitlines(keepends=True)
    first = next((i for i, line in enumerate(lines) if any(m in line for m in _BODY_START)), None)
    if first is None:
        raise SystemExit("the source log has no job and no SQL execution to repeat")
    last = len(lines)
    while last > first and _END in lines[last - 1]:
        last -= 1
    return b"".join(lines[:first]), b"".join(lines[first:last]), b"".join(lines[last:])


def template(body: bytes):
    """The body as literal pieces and (kind, id) slots, with the largest id of each kind."""
    pieces: List[bytes] = []
    slots: List[Tuple[str, int]] = []
    largest = {}
    at = 0

    def slot(kind: str, value: int, literal: bytes) -> None:
        pieces.append(literal)
        slots.append((kind, value))
        largest[kind] = max(largest.get(kind, 0), value)

    for match in _IDS.finditer(body):
        if match.group("key"):
            kind, numbers, prefix = _KIND[match.group("key")], [match.group("n")], "key"
        elif match.group("list"):
            kind, prefix = _KIND[match.group("list")], "list"
            numbers = [n for n in match.group("items").split(b",") if n]
        elif match.group("hash"):
            kind, numbers, prefix = "expression", [match.group("expr")], "hash"
        else:
            kind, numbers, prefix = "accumulator", [match.group("acc")], "pair"
        start = match.start("n" if prefix == "key" else "items" if prefix == "list"
                            else "expr" if prefix == "hash" else "acc")
        literal = body[at:start]
        if not numbers:
            continue
        for index, number in enumerate(numbers):
            slot(kind, int(number), literal if index == 0 else b",")
        at = match.end("n" if prefix == "key" else "items" if prefix == "list"
                       else "expr" if prefix == "hash" else "acc")
    pieces.append(body[at:])
    return pieces, slots, largest


def build(source: Path, out: Path, size: int) -> Tuple[int, int]:
    """Write the big log; returns (copies, SQL executions)."""
    header, body, footer = split(source.read_bytes())
    pieces, slots, largest = template(body)
    executions = body.count(b"SparkListenerSQLExecutionStart")
    stride = {kind: value + 1 for kind, value in largest.items()}
    copies = 0
    written = len(header) + len(footer)
    tmp = out.with_name(out.name + ".part")
    with tmp.open("wb") as handle:
        handle.write(header)
        while written < size or copies == 0:
            offsets = {kind: copies * step for kind, step in stride.items()}
            parts = [pieces[0]]
            for (kind, value), literal in zip(slots, pieces[1:]):
                parts.append(str(value + offsets[kind]).encode())
                parts.append(literal)
            chunk = b"".join(parts)
            handle.write(chunk)
            written += len(chunk)
            copies += 1
        handle.write(footer)
    tmp.replace(out)
    return copies, copies * executions


def build_mixed(sources: List[Path], out: Path, size: int) -> Tuple[int, int]:
    """Write a big log of the SQL executions of many applications: the first one's header,
    then each one's body in turn, over and over, every copy with ids above all those written
    before it (so every plan text is distinct: its expression ids differ); returns (bodies
    written, SQL executions)."""
    bodies = []
    header = footer = b""
    for index, source in enumerate(sources):
        head, body, foot = split(source.read_bytes())
        if index == 0:
            header, footer = head, foot
        pieces, slots, largest = template(body)
        bodies.append((pieces, slots, {kind: value + 1 for kind, value in largest.items()},
                       body.count(b"SparkListenerSQLExecutionStart")))
    offsets: dict = {}
    written = len(header) + len(footer)
    count = executions = 0
    tmp = out.with_name(out.name + ".part")
    with tmp.open("wb") as handle:
        handle.write(header)
        while written < size or count == 0:
            pieces, slots, stride, found = bodies[count % len(bodies)]
            parts = [pieces[0]]
            for (kind, value), literal in zip(slots, pieces[1:]):
                parts.append(str(value + offsets.get(kind, 0)).encode())
                parts.append(literal)
            chunk = b"".join(parts)
            handle.write(chunk)
            written += len(chunk)
            for kind, step in stride.items():
                offsets[kind] = offsets.get(kind, 0) + step
            count += 1
            executions += found
        handle.write(footer)
    tmp.replace(out)
    return count, executions


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--size-mb", type=float, default=1024)
    args = parser.parse_args(argv)
    copies, executions = build(args.source, args.out, int(args.size_mb * 1024 * 1024))
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.0f} MB, {copies} copies, "
          f"{executions} SQL executions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
