"""CPU of the diff alone (`rewrites.engine.diff_query`) per execution or plan, best of 5.

The inputs are read first (`aqe_inspect.api.read`) and kept; only the diff of each of their
queries is timed, in this process (`time.process_time`):

- five_way_join: the one execution of sample_plans/spark-4.3.0/five_way_join/eventlog.json;
- the plain 4.3 sample event logs (sample_plans/spark-4.3.0/*/eventlog.json);
- every sample plan text, event log and driver log (formatted_after.txt, eventlog.json,
  driver.log of each scenario of each Spark line);
- any further files given on the command line (a driver log built by driverlog_build.py).

    python bench/diff_detectors.py [FILE ...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import List, Sequence, Tuple

from aqe_inspect import api
from aqe_inspect.plan.model import Query
from aqe_inspect.rewrites.engine import diff_query

SAMPLES = Path(__file__).resolve().parent.parent / "sample_plans"


def queries(paths: Sequence[Path]) -> List[Query]:
    found: List[Query] = []
    for path in paths:
        found.extend(api.read(str(path)).queries)
    return found


def best_cpu(found: Sequence[Query], repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for number, query in enumerate(found, 1):
            diff_query(query, str(number))
        best = min(best, time.process_time() - start)
    return best


def main(argv: Sequence[str]) -> None:
    sets: List[Tuple[str, List[Path]]] = [
        ("five_way_join (4.3 event log)", [SAMPLES / "spark-4.3.0/five_way_join/eventlog.json"]),
        ("plain 4.3 sample event logs", sorted(SAMPLES.glob("spark-4.3.0/*/eventlog.json"))),
        ("every sample plan text, event log, driver log",
         sorted(path for name in ("formatted_after.txt", "eventlog.json", "driver.log")
                for path in SAMPLES.glob(f"spark-*/*/{name}"))),
    ]
    sets.extend((arg, [Path(arg)]) for arg in argv)
    for label, paths in sets:
        found = queries(paths)
        cpu = best_cpu(found)
        print(f"{label}: {len(paths)} file(s), {len(found)} queries, diff CPU {cpu * 1e3:.1f} ms, "
              f"{cpu / max(1, len(found)) * 1e3:.3f} ms per query")


if __name__ == "__main__":
    main(sys.argv[1:])
