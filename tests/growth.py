"""How the growth tests measure: the work at 4N against the work at N, never an absolute time.

The work is the CPU time of this process (steadier than wall time on a shared machine), the
best of a few runs, with the garbage collector waiting while each runs (its passes, started by
what earlier tests left, made the ratios noisy).
"""

from __future__ import annotations

import gc
import time
from typing import Any, Callable, Optional, Tuple

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


def paired(small: Any, large: Any, runs: int = 3,
           measure: Optional[Callable[[Any], float]] = None) -> Tuple[float, float]:
    """The least CPU time of `small` and of `large`, their runs taken in turn: a spell of
    load from outside (another process's burst on a 2-core machine slows this one's memory
    too) then falls on both, not on all the runs of one. `measure` times one run of either
    (by default `cpu` of it, a callable, once)."""
    if measure is None:
        measure = lambda work: cpu(work, runs=1)  # noqa: E731
    best_small = best_large = float("inf")
    for _ in range(runs):
        best_large = min(best_large, measure(large))
        best_small = min(best_small, measure(small))
    return best_small, best_large


def ratio(make: Callable[[int], object], measure: Callable[[object], object], n: int,
          runs: int = 3) -> float:
    """The work of `measure` on what `make` makes of 4n, against that of n (`paired`)."""
    small, large = make(n), make(4 * n)
    best_small, best_large = paired(lambda: measure(small), lambda: measure(large), runs)
    return best_large / max(best_small, 1e-3)
