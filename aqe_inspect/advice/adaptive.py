"""What to change so that AQE takes part in a query at all (`spark.sql.adaptive.enabled`,
InsertAdaptiveSparkPlan): a plan with a shuffle or a subquery, AQE off."""

from __future__ import annotations

from typing import Iterator

from ..plan.operators import family
from ..whynot.adaptive import ENABLED, SHUFFLES
from .base import Advised, Adviser, Seen, change
from .changes import SET


class AdaptiveAdviser(Adviser):
    kind = "adaptive"

    def advise(self, seen: Seen) -> Iterator[Advised]:
        enabled = seen.ctx.settings.get(ENABLED)
        if not (enabled.known and enabled.flag() is False):
            return
        shuffles = sum(1 for n in seen.ctx.query.walk() if family(n) in SHUFFLES)
        yield change(
            seen, ENABLED, "true", enabled, direction=SET,
            figure=f"the plan has {shuffles} exchange{'s' if shuffles != 1 else ''} AQE could "
                   "re-plan around",
            threshold=f"{ENABLED}={enabled.value}", headroom="a switch",
            effects=("every query of the application is re-planned at run time: shuffle "
                     "partitions coalesced (partition and output file counts change), joins "
                     "switched on measured sizes, skewed partitions split, empty relations "
                     "propagated",
                     "Spark 3.2 and later have it on by default"))
