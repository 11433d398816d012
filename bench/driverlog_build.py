"""Build a large driver log from the real ones of sample_plans/: every log, each copy with its
own ids.

    python bench/driverlog_build.py OUT [--size-mb 100] [--production [--plan-share 0.02]]

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



def renumbered(pieces, ids, offset: int) -> bytes:
    """One copy of a template: its literal pieces with each id moved up by `offset`."""
    parts = [pieces[0]]
    for value, literal in zip(ids, pieces[1:]):
        parts.append(str(value + offset).encode())
        parts.append(literal)
    return b"".join(parts)

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
            chunk = renumbered(pieces, ids, copies * stride)
            handle.write(chunk)
            written += len(chunk)
            copies += 1
    tmp.replace(out)
    return copies, written


#: A record's first line in log4j's default text layout (`26/11/23 12:44:21 INFO Logger: ...`).
_TEXT_RECORD = re.compile(rb"\d\d/\d\d/\d\d \d\d:\d\d:\d\d (?:INFO|WARN) ")
#: A JSON-layout record of one level the filler takes.
_JSON_RECORD = re.compile(rb'\{"ts":"[^"]*","level":"(?:INFO|WARN)"')
#: Loggers whose records are about plans (printed with them, or naming them): never filler.
_PLAN_LOGGERS = re.compile(rb"AdaptiveSparkPlanExec|AQEOptimizer|PlanChangeLogger|"
                           rb"QueryExecution|ExplainUtils|SparkOptimizer|SparkPlanner")


def _starts_record(line: bytes) -> bool:
    return bool(_TEXT_RECORD.match(line) or line.startswith(b'{"ts":'))


def ordinary_lines(data: bytes) -> List[bytes]:
    """The log's ordinary lines: records of one line (the next line begins a record of its own;
    a JSON record holds no escaped newline), INFO or WARN, that neither come from a logger of
    plans nor mention a plan. What a production driver log is mostly made of."""
    lines = data.splitlines(keepends=True)
    kept = []
    for index, line in enumerate(lines):
        following = lines[index + 1] if index + 1 < len(lines) else b""
        if _TEXT_RECORD.match(line):
            if following and not _starts_record(following):
                continue  # a record of several lines: a plan, a stack trace
        elif _JSON_RECORD.match(line):
            if b"\\n" in line:
                continue
        else:
            continue
        if _PLAN_LOGGERS.search(line) or b"plan" in line.lower():
            continue
        kept.append(line if line.endswith(b"\n") else line + b"\n")
    return kept


def build_production(out: Path, size: int, plan_share: float = 0.02,
                     logs: List[Path] = None) -> Tuple[int, int, int]:
    """Write a production-shaped driver log; returns (logs written, bytes, plan-bearing bytes:
    the bytes of the sample logs written that are not ordinary lines)."""
    logs = logs or sample_logs()
    texts = []
    for path in logs:
        data = path.read_bytes()
        texts.append(data if data.endswith(b"\n") else data + b"\n")
    filler = [line for data in texts for line in ordinary_lines(data)]
    if not filler:
        raise SystemExit("the sample driver logs hold no ordinary line to put between plans")
    templates = [template(data) for data in texts]
    stride = max(largest for _, _, largest in templates) + 1
    plan_bytes = [len(data) - sum(map(len, ordinary_lines(data))) for data in texts]
    written = planned = count = cursor = 0
    tmp = out.with_name(out.name + ".part")
    with tmp.open("wb") as handle:
        while written < size or count == 0:
            index = count % len(texts)
            pieces, ids, _ = templates[index]
            chunk = renumbered(pieces, ids, (count // len(texts)) * stride)
            handle.write(chunk)
            written += len(chunk)
            planned += plan_bytes[index]
            count += 1
            # Ordinary lines until this log's plans are plan_share of everything so far.
            want = int(planned / plan_share) - written
            batch, held = [], 0
            while held < want:
                line = filler[cursor % len(filler)]
                cursor += 1
                batch.append(line)
                held += len(line)
            handle.write(b"".join(batch))
            written += held
    tmp.replace(out)
    return count, written, planned


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--size-mb", type=float, default=100)
    parser.add_argument("--production", action="store_true",
                        help="plans a small share of the bytes, ordinary lines the rest")
    parser.add_argument("--plan-share", type=float, default=0.02)
    args = parser.parse_args(argv)
    if args.production:
        count, written, planned = build_production(args.out, int(args.size_mb * 1024 * 1024),
                                                   args.plan_share)
        print(f"{args.out}: {written / 1e6:.0f} MB, {count} sample driver logs written whole "
              f"({planned / written:.1%} of the bytes plan-bearing records), ordinary lines "
              "between them", file=sys.stderr)
        return 0
    copies, written = build(args.out, int(args.size_mb * 1024 * 1024))
    print(f"{args.out}: {written / 1e6:.0f} MB, {copies} copies of {len(sample_logs())} "
          "driver logs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
