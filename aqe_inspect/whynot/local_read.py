"""Why a shuffle under a run-time broadcast join was not read locally
(OptimizeShuffleWithLocalRead).

After AQE turns a sort-merge join into a broadcast hash join, the shuffles below it no longer
need their partitioning: with `spark.sql.adaptive.localShuffleReader.enabled` each task reads
the output of whole map tasks on its own node. Not when the shuffle's origin does not allow it
(a user's repartition), nor when an operator above relies on its partitioning (the local read
would need a new shuffle).
"""

from __future__ import annotations

from typing import Iterator

from ..plan.operators import family, shuffle_read_modes
from .base import Context, Explainer, candidate, needs_setting, setting_reason
from .evidence import Side, join_sides, partitioning_user_above, shuffle_origin
from .verdicts import BLOCKED, CANNOT_TELL, PLAN, Candidate, Reason

ENABLED = "spark.sql.adaptive.localShuffleReader.enabled"
LOCAL_ORIGINS = ("ENSURE_REQUIREMENTS", "REBALANCE_PARTITIONS_BY_NONE")


class LocalReadWhyNot(Explainer):
    kind = "local-read"

    def explain(self, ctx: Context) -> Iterator[Candidate]:
        yield from self.happened(ctx)
        for rewrite in ctx.rewrites("smj-to-bhj"):
            join = rewrite.final_node
            if join is None or family(join) != "BroadcastHashJoin":
                continue
            for side in join_sides(join):
                if not side.shuffle:
                    continue
                if side.read is not None and "local" in shuffle_read_modes(side.read):
                    continue
                yield self.verdict(side, join, ctx)

    def verdict(self, side: Side, join, ctx: Context) -> Candidate:
        node = side.stage or side.exchange
        enabled = ctx.settings.get(ENABLED)
        if enabled.known and enabled.flag() is False:
            return candidate(self.kind, node, BLOCKED, [setting_reason(
                enabled, f"local shuffle reads are off: {ENABLED}={enabled.value}")])
        origin = shuffle_origin(side.exchange)
        if origin is not None and origin not in LOCAL_ORIGINS:
            return candidate(self.kind, node, BLOCKED, [Reason(
                f"its shuffle origin {origin} does not allow a local read", PLAN)])
        user = partitioning_user_above(join, ctx.up)
        if user is not None:
            return candidate(self.kind, node, BLOCKED, [Reason(
                f"{user.label} above the join relies on its partitioning: a local read would "
                "add a shuffle", PLAN)])
        if not enabled.known:
            return candidate(self.kind, node, CANNOT_TELL, [], [needs_setting(enabled)])
        return candidate(self.kind, node, CANNOT_TELL, [], [
            "the stage's plan before AQE's last re-plan: nothing here explains it"])
