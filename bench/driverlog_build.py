"""Build a large driver log from the real ones of sample_plans/: every log, each copy with its
own ids.

    python bench/driverlog_build.py OUT [--size-mb 100]

Every real driver log of `sample_plans/spark-*/*/driver*.log` (INFO logs of spark-submit runs
with AQE's plan logging, log4j text and JSON layouts, explain outputs printed among them) is
written in turn, and the whole set repeated until the file reaches the size asked for. Each
copy renumbers the ids a plan carries (expression ids `#123`, `plan_id=12`, query stage and
subquery ids are left as Spark prints them per query), so that no two copies print the same
plan and no reader can take one copy's query for another's. Everything else is byte for byte
the real logs.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import List, Tuple

ROOT = Path(__file__).resolve().parent.parent
#: Expression ids (`k#12L`, `[id=#28]`) and exchange plan ids (`[plan_id=30]`).
_IDS = re.compile(rb"(?P<lead>#|plan_id=)(?P<n>\d+)")


def sample_logs() -> List[Path]:
    return sorted(ROOT.glob("sample_plans/spark-*/*/driver*.log"))


def template(data: bytes) -> Tuple[List[bytes], List[int], int]:
    """The text as literal pieces around the ids, the ids, and the largest id."""
    pieces: List[bytes] = []
    ids: List[int] = []
    at = 0
    for match in _IDS.finditer(data):
        pieces.append(data[at:match.start("n")])
        ids.append(int(match.group("n")))
        at = match.end("n")
    pieces.append(data[at:])
    return pieces, ids, max(ids, default=0)


def build(out: Path, size: int, logs: List[Path] = None) -> Tuple[int, int]:
    """Write the big log; returns (copies, bytes)."""
    logs = logs or sample_logs()
    data = b"".join(path.read_bytes() if path.read_bytes().endswith(b"\n")
                    else path.read_bytes() + b"\n" for path in logs)
    pieces, ids, largest = template(data)
    stride = largest + 1
    copies = written = 0
    tmp = out.with_name(out.name + ".part")
    with tmp.open("wb") as handle:
        while written < size or copies == 0:
            offset = copies * stride
            parts = [pieces[0]]
            for value, literal in zip(ids, pieces[1:]):
                parts.append(str(value + offset).encode())
                parts.append(literal)
            chunk = b"".join(parts)
            handle.write(chunk)
            written += len(chunk)
            copies += 1
    tmp.replace(out)
    return copies, written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--size-mb", type=float, default=100)
    args = parser.parse_args(argv)
    copies, written = build(args.out, int(args.size_mb * 1024 * 1024))
    print(f"{args.out}: {written / 1e6:.0f} MB, {copies} copies of {len(sample_logs())} "
          "driver logs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
