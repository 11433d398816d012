"""What to change so that an AQE optimizer rule runs that the job excluded
(`spark.sql.adaptive.optimizer.excludedRules`, 3.1+: empty-relation, one-row, limit-removed),
and switches a rewrite's own rule turns off (local-read, dpp, rebalance-skew)."""

from __future__ import annotations

from typing import Iterator

from ..whynot.verdicts import CONFIG
from .base import Advised, Adviser, Seen, change
from .changes import SET, without

EXCLUDED = "spark.sql.adaptive.optimizer.excludedRules"
#: The rule each kind's rewrite needs, as excludedRules names it (its class name, or the name's
#: end as the why-not answer holds it).
RULES = {"empty-relation": "AQEPropagateEmptyRelation", "one-row": "OptimizeOneRowPlan",
         "limit-removed": "EliminateLimits"}


class ExcludedRuleAdviser(Adviser):
    def __init__(self, kind: str):
        self.kind = kind

    def advise(self, seen: Seen) -> Iterator[Advised]:
        rule = RULES[self.kind]
        setting = seen.ctx.settings.get(EXCLUDED)
        if not setting.known or rule not in (setting.value or ""):
            return
        value = without(setting.value or "", [rule])
        yield change(
            seen, EXCLUDED, value, setting, direction=SET, removes=rule,
            figure=f"{rule} would rewrite {seen.name}: "
                   + "; ".join(r.text for r in seen.candidate.reasons if r.config is None)[:300],
            threshold=f"{EXCLUDED}={setting.value}",
            headroom=f"{rule} taken out of the list" + ("" if value else " (left empty)"),
            effects=(f"{rule} runs in every query of the application again",))


#: Rewrite kinds whose rule a boolean setting turns off, by the setting's key.
SWITCHES = {
    "local-read": "spark.sql.adaptive.localShuffleReader.enabled",
    "dpp": "spark.sql.optimizer.dynamicPartitionPruning.enabled",
    "rebalance-skew": "spark.sql.adaptive.optimizeSkewsInRebalancePartitions.enabled",
}
SWITCH_EFFECTS = {
    "local-read": "every shuffle read after a join AQE broadcast can be read map-locally, "
                  "its tasks placed by the map outputs' locations",
    "dpp": "scans of partitioned tables joined to a filtered side are pruned at run time in "
           "every query, planning a subquery or reusing a broadcast for it",
    "rebalance-skew": "skewed partitions of every REBALANCE in the application are split "
                      "towards the advisory size (and small ones merged)",
}


class SwitchAdviser(Adviser):
    """A rewrite whose own switch was off (the why-not answer's deciding setting, `false`)."""

    def __init__(self, kind: str):
        self.kind = kind

    def advise(self, seen: Seen) -> Iterator[Advised]:
        key = SWITCHES[self.kind]
        deciding = seen.candidate.deciding
        if deciding is None or deciding.config != key or deciding.source != CONFIG and \
                (deciding.value or "").lower() != "false":
            return
        setting = seen.ctx.settings.get(key)
        if not setting.known or setting.flag() is not False:
            return
        yield change(seen, key, "true", setting, direction=SET,
                     figure=f"{seen.name} is where the rule would apply",
                     threshold=f"{key}={setting.value}", headroom="a switch",
                     effects=(SWITCH_EFFECTS[self.kind],))
