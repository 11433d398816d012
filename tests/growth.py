"""How the growth tests measure: the work at 4N against the work at N, never an absolute time.

The work is the CPU time of this process (steadier than wall time on a shared machine), the
best of a few runs, with the garbage collector waiting while each runs (its passes, started by
what earlier tests left, made the ratios noisy).
"""

from __future__ import annotations

import gc
import time
from typing import Callable

#: 4x the input may cost at most this many times the work (linear: 4; quadratic: 16).
LINEAR = 6.0


def cpu(work: Callable[[], object], runs: int = 3) -> float:
    """The least CPU time of `runs` runs of `work`."""
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        gc.disable()
        try:
            started = time.process_time()
            work()
            best = min(best, time.process_time() - started)
        finally:
            gc.enable()
    return best


def ratio(make: Callable[[int], object], measure: Callable[[object], object], n: int) -> float:
    """The work of `measure` on what `make` makes of 4n, against that of n."""
    small, large = make(n), make(4 * n)
    return cpu(lambda: measure(large)) / max(cpu(lambda: measure(small)), 1e-3)
