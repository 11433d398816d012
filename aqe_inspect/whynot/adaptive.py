"""Why AQE did not re-plan a query at all (`spark.sql.adaptive.enabled`, InsertAdaptiveSparkPlan).

AQE takes a query when `spark.sql.adaptive.enabled` (default true from Spark 3.2, false before)
and the plan has a shuffle or a subquery to re-plan around (or `spark.sql.adaptive.forceApply`).
"""

from __future__ import annotations

from typing import Iterator

from ..plan.model import Query
from ..plan.operators import family
from .base import candidate, needs_setting, setting_reason
from .settings import Settings
from .verdicts import BLOCKED, CANNOT_TELL, NOT_NEEDED, PLAN, Candidate, Reason

KIND = "adaptive"
ENABLED = "spark.sql.adaptive.enabled"
SHUFFLES = ("Exchange", "BroadcastExchange")


def static_plan(query: Query, settings: Settings) -> Iterator[Candidate]:
    """The one candidate of a plan AQE did not wrap."""
    root = query.root
    has_shuffle = any(family(n) in SHUFFLES for n in query.walk())
    enabled = settings.get(ENABLED)
    if enabled.known and enabled.flag() is False:
        yield candidate(KIND, root, BLOCKED, [setting_reason(
            enabled, f"adaptive execution is off: {ENABLED}={enabled.value}")])
    elif not has_shuffle and not query.subqueries:
        yield candidate(KIND, root, NOT_NEEDED, [Reason(
            "the plan has no shuffle and no subquery: AQE has nothing to re-plan", PLAN)])
    elif enabled.known:
        yield candidate(KIND, root, CANNOT_TELL, [Reason(
            f"{ENABLED}={enabled.value}, yet the plan is not adaptive", PLAN)], [
            "what kind of query this is: AQE leaves out streaming queries, some commands "
            "and plans it cannot re-plan"])
    else:
        yield candidate(KIND, root, CANNOT_TELL, [Reason(
            "the plan is not adaptive (no AdaptiveSparkPlan)", PLAN)], [needs_setting(enabled)])


def before_action(query: Query) -> Candidate:
    return candidate(KIND, query.root, CANNOT_TELL, [Reason(
        "the plan was printed before its action ran (isFinalPlan=false): AQE has not "
        "re-planned yet", PLAN)], ["the plan after the action (explain again after it ran, or "
                                   "read the event log)"])
