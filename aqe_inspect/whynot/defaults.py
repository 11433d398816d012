"""Spark's SQL config defaults per Spark line, for the settings AQE's rules read.

`default(key, version)` says, for a Spark version, what a setting is when nobody set it: its
default as Spark prints it (`"10MB"`, `"true"`, `"5.0"`), or that it has none and another key
stands in for it (`advisoryPartitionSizeInBytes` -> `shuffle.targetPostShuffleInputSize`;
`adaptive.autoBroadcastJoinThreshold` -> `autoBroadcastJoinThreshold`), or that the key does not
exist on that line. `effective_default` follows those stand-ins to the value in force.

Every figure was read from Spark itself: the `SQLConf` entries (`sqlConfEntries`, each entry's
`defaultValueString`, its `FallbackConfigEntry` key and the constant that holds it) of the
release named in `MEASURED`, by `tools/spark_defaults.py` on that release's jars (3.0-3.2 from
the PyPI sdists' jars, 3.3-4.3 from the wheels); `tests/test_whynot_defaults.py` checks the
table against the installed PySpark's JVM. The stand-ins that Spark applies in a rule's code
rather than in `SQLConf` (an unset `adaptive.autoBroadcastJoinThreshold`,
`coalescePartitions.initialPartitionNum`) name that code in `note`.

Between lines: `spark.sql.adaptive.enabled` is false on 3.0-3.1 and true from 3.2;
`skewJoin.skewedPartitionFactor` prints `5` up to 3.3 and `5.0` from 3.4 (it became a double);
`adaptive.autoBroadcastJoinThreshold`, `maxShuffledHashJoinLocalMapThreshold`,
`coalescePartitions.minPartitionSize` and `.parallelismFirst` appear in 3.2,
`forceOptimizeSkewedJoin` in 3.3, `convertSortMergeJoinToShuffledHashJoin.enabled` in 4.3.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Optional, Tuple

#: The Spark lines the table holds, oldest first.
LINES: Tuple[str, ...] = ("3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "4.0", "4.1", "4.2", "4.3")
#: The release each line's defaults were read from.
MEASURED: Mapping[str, str] = {
    "3.0": "3.0.3", "3.1": "3.1.3", "3.2": "3.2.4", "3.3": "3.3.4", "3.4": "3.4.4",
    "3.5": "3.5.9", "4.0": "4.0.5", "4.1": "4.1.4", "4.2": "4.2.1", "4.3": "4.3.0"}

_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+.~_][0-9A-Za-z.+_~-]*)?")
#: Spark's major versions; a larger "major" is some vendor's own numbering (Databricks 13.3).
_APACHE_MAJORS = range(3, 6)


@dataclass(frozen=True)
class Default:
    """What a setting is on one Spark line when nobody set it."""

    key: str
    line: str                        # "3.5"
    value: Optional[str]             # as Spark prints it ("10MB", "true", "0.2"); None: none
    fallback: Optional[str] = None   # the key that stands in when it has no value of its own
    exists: bool = True              # False: the key does not exist on that line
    cite: str = ""                   # "SQLConf.ADAPTIVE_EXECUTION_ENABLED, Spark 3.5.9"
    note: str = ""                   # what Spark's code does when it is unset, where it says


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


#: In a setting's history: the key does not exist from that line on.
ABSENT = _Absent()
_LOOK_THROUGH = ("spark.sql.adaptive.convertSortMergeJoinToShuffledHashJoin"
                 ".lookThroughOperators.enabled")


@dataclass(frozen=True)
class _Setting:
    constant: str                     # the SQLConf constant
    history: Mapping[str, object]     # first line -> default from then on (None, a str, ABSENT)
    fallback: Optional[str] = None
    note: str = ""


#: Each key's default from the line where it changed on; absent before its first line.
_SETTINGS: Mapping[str, _Setting] = {
    "spark.sql.adaptive.advisoryPartitionSizeInBytes":
        _Setting("ADVISORY_PARTITION_SIZE_IN_BYTES", {"3.0": None},
                 fallback="spark.sql.adaptive.shuffle.targetPostShuffleInputSize"),
    "spark.sql.adaptive.applyFinalStageShuffleOptimizations":
        _Setting("ADAPTIVE_EXECUTION_APPLY_FINAL_STAGE_SHUFFLE_OPTIMIZATIONS",
                 {"3.0": ABSENT, "3.4": "true"}),
    "spark.sql.adaptive.autoBroadcastJoinThreshold":
        _Setting("ADAPTIVE_AUTO_BROADCASTJOIN_THRESHOLD", {"3.0": ABSENT, "3.2": None},
                 fallback="spark.sql.autoBroadcastJoinThreshold",
                 note=("unset: run-time sizes are held against "
                       "spark.sql.autoBroadcastJoinThreshold "
                       "(JoinSelectionHelper.canBroadcastBySize)")),
    "spark.sql.adaptive.coalescePartitions.enabled":
        _Setting("COALESCE_PARTITIONS_ENABLED", {"3.0": "true"}),
    "spark.sql.adaptive.coalescePartitions.initialPartitionNum":
        _Setting("COALESCE_PARTITIONS_INITIAL_PARTITION_NUM", {"3.0": None},
                 fallback="spark.sql.shuffle.partitions",
                 note=("unset: shuffles start from spark.sql.shuffle.partitions "
                       "(SQLConf.numShufflePartitions)")),
    "spark.sql.adaptive.coalescePartitions.maxReducerPartitionsPerTask":
        _Setting("COALESCE_PARTITIONS_MAX_REDUCER_PARTITIONS_PER_TASK",
                 {"3.0": ABSENT, "4.3": "2147483647"}),
    "spark.sql.adaptive.coalescePartitions.minPartitionNum":
        _Setting("COALESCE_PARTITIONS_MIN_PARTITION_NUM", {"3.0": None},
                 note=("unset: Spark's default parallelism bounds coalescing when "
                       "parallelismFirst is true (3.0-3.1: always), else 1 "
                       "(CoalesceShufflePartitions)")),
    "spark.sql.adaptive.coalescePartitions.minPartitionSize":
        _Setting("COALESCE_PARTITIONS_MIN_PARTITION_SIZE", {"3.0": ABSENT, "3.2": "1MB"}),
    "spark.sql.adaptive.coalescePartitions.parallelismFirst":
        _Setting("COALESCE_PARTITIONS_PARALLELISM_FIRST", {"3.0": ABSENT, "3.2": "true"}),
    "spark.sql.adaptive.convertSortMergeJoinToShuffledHashJoin.enabled":
        _Setting("ADAPTIVE_CONVERT_SORT_MERGE_JOIN_TO_SHUFFLED_HASH_JOIN_ENABLED",
                 {"3.0": ABSENT, "4.3": "true"}),
    _LOOK_THROUGH:
        _Setting("ADAPTIVE_CONVERT_SORT_MERGE_JOIN_TO_SHUFFLED_HASH_JOIN_LOOK_THROUGH_"
                 "OPERATORS_ENABLED",
                 {"3.0": ABSENT, "4.3": "false"}),
    "spark.sql.adaptive.convertSortMergeJoinToShuffledHashJoin.minWideningFactor":
        _Setting("ADAPTIVE_CONVERT_SORT_MERGE_JOIN_TO_SHUFFLED_HASH_JOIN_MIN_WIDENING_FACTOR",
                 {"3.0": ABSENT, "4.3": "1.0"}),
    "spark.sql.adaptive.costEvaluator.countLocalSort.enabled":
        _Setting("ADAPTIVE_COST_EVALUATOR_COUNT_LOCAL_SORT_ENABLED", {"3.0": ABSENT, "4.3": None},
                 fallback=_LOOK_THROUGH),
    "spark.sql.adaptive.customCostEvaluatorClass":
        _Setting("ADAPTIVE_CUSTOM_COST_EVALUATOR_CLASS", {"3.0": ABSENT, "3.2": None},
                 note="unset: Spark's SimpleCostEvaluator"),
    "spark.sql.adaptive.enabled":
        _Setting("ADAPTIVE_EXECUTION_ENABLED", {"3.0": "false", "3.2": "true"}),
    "spark.sql.adaptive.fetchShuffleBlocksInBatch":
        _Setting("FETCH_SHUFFLE_BLOCKS_IN_BATCH", {"3.0": "true"}),
    "spark.sql.adaptive.forceApply":
        _Setting("ADAPTIVE_EXECUTION_FORCE_APPLY", {"3.0": "false"}),
    "spark.sql.adaptive.forceOptimizeSkewedJoin":
        _Setting("ADAPTIVE_FORCE_OPTIMIZE_SKEWED_JOIN", {"3.0": ABSENT, "3.3": "false"}),
    "spark.sql.adaptive.localShuffleReader.enabled":
        _Setting("LOCAL_SHUFFLE_READER_ENABLED", {"3.0": "true"}),
    "spark.sql.adaptive.logLevel":
        _Setting("ADAPTIVE_EXECUTION_LOG_LEVEL", {"3.0": "debug", "4.1": "DEBUG"}),
    "spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold":
        _Setting("ADAPTIVE_MAX_SHUFFLE_HASH_JOIN_LOCAL_MAP_THRESHOLD",
                 {"3.0": ABSENT, "3.2": "0b"}),
    "spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin":
        _Setting("NON_EMPTY_PARTITION_RATIO_FOR_BROADCAST_JOIN", {"3.0": "0.2"}),
    "spark.sql.adaptive.optimizeSkewsInRebalancePartitions.enabled":
        _Setting("ADAPTIVE_OPTIMIZE_SKEWS_IN_REBALANCE_PARTITIONS_ENABLED",
                 {"3.0": ABSENT, "3.2": "true"}),
    "spark.sql.adaptive.optimizer.excludedRules":
        _Setting("ADAPTIVE_OPTIMIZER_EXCLUDED_RULES", {"3.0": ABSENT, "3.1": None},
                 note="unset: no AQE optimizer rule is excluded"),
    "spark.sql.adaptive.rebalancePartitionsSmallPartitionFactor":
        _Setting("ADAPTIVE_REBALANCE_PARTITIONS_SMALL_PARTITION_FACTOR",
                 {"3.0": ABSENT, "3.3": "0.2"}),
    "spark.sql.adaptive.shuffle.targetPostShuffleInputSize":
        _Setting("SHUFFLE_TARGET_POSTSHUFFLE_INPUT_SIZE", {"3.0": "64MB"}),
    "spark.sql.adaptive.skewJoin.enabled":
        _Setting("SKEW_JOIN_ENABLED", {"3.0": "true"}),
    "spark.sql.adaptive.skewJoin.skewedPartitionFactor":
        _Setting("SKEW_JOIN_SKEWED_PARTITION_FACTOR", {"3.0": "5", "3.4": "5.0"}),
    "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes":
        _Setting("SKEW_JOIN_SKEWED_PARTITION_THRESHOLD", {"3.0": "256MB"}),
    "spark.sql.adaptive.streaming.stateless.enabled":
        _Setting("ADAPTIVE_EXECUTION_ENABLED_IN_STATELESS_STREAMING",
                 {"3.0": ABSENT, "4.1": "true"}),
    "spark.sql.autoBroadcastJoinThreshold":
        _Setting("AUTO_BROADCASTJOIN_THRESHOLD", {"3.0": "10MB"}),
    "spark.sql.optimizer.dynamicPartitionPruning.enabled":
        _Setting("DYNAMIC_PARTITION_PRUNING_ENABLED", {"3.0": "true"}),
    "spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly":
        _Setting("DYNAMIC_PARTITION_PRUNING_REUSE_BROADCAST_ONLY", {"3.0": "true"}),
    "spark.sql.execution.broadcastHashJoin.outputPartitioningExpandLimit":
        _Setting("BROADCAST_HASH_JOIN_OUTPUT_PARTITIONING_EXPAND_LIMIT",
                 {"3.0": ABSENT, "3.1": "8"}),
    "spark.sql.join.preferSortMergeJoin":
        _Setting("PREFER_SORTMERGEJOIN", {"3.0": "true"}),
    "spark.sql.shuffle.partitions":
        _Setting("SHUFFLE_PARTITIONS", {"3.0": "200"}),
}

#: Every key the table holds.
KEYS: Tuple[str, ...] = tuple(_SETTINGS)


def spark_line(version: Optional[str]) -> Optional[str]:
    """The table's line for an Apache Spark version: `3.5.9` -> `3.5`, `4.3.0-SNAPSHOT` -> `4.3`;
    a line newer than the table -> the newest one (`5.0.0` -> `4.3`); anything else (2.4,
    vendor numbering such as Databricks' `13.3.x-scala2.12`, junk, None) -> None."""
    if not version:
        return None
    match = _VERSION.fullmatch(version.strip())
    if match is None:
        return None
    major, minor = int(match.group(1)), int(match.group(2))
    if major not in _APACHE_MAJORS:
        return None
    line = f"{major}.{minor}"
    if line in LINES:
        return line
    newest = LINES[-1]
    return newest if (major, minor) > _line_tuple(newest) else None


def default(key: str, version: Optional[str]) -> Optional[Default]:
    """`key`'s default on `version`'s line; None when the version is unknown or the table does
    not hold the key. A key that line does not have comes back with `exists=False`."""
    line = spark_line(version)
    setting = _SETTINGS.get(key)
    if line is None or setting is None:
        return None
    value: object = ABSENT
    for first, then in setting.history.items():
        if _line_tuple(first) <= _line_tuple(line):
            value = then
    if value is ABSENT:
        return Default(key, line, None, exists=False,
                       cite=f"not in SQLConf of Spark {MEASURED[line]}")
    cite = f"SQLConf.{setting.constant}, Spark {MEASURED[line]}"
    return Default(key, line, value if isinstance(value, str) else None,
                   fallback=setting.fallback, cite=cite, note=setting.note)


def effective_default(key: str, version: Optional[str]) -> Optional[Default]:
    """The default in force for `key`: its own, or the one its stand-ins lead to
    (`advisoryPartitionSizeInBytes` on 3.5 -> `targetPostShuffleInputSize` = `64MB`). A key the
    line lacks, or one with neither a value nor a stand-in, comes back as it is."""
    found = default(key, version)
    seen = {key}
    while found is not None and found.exists and found.value is None and found.fallback:
        if found.fallback in seen:  # pragma: no cover - the table has no cycle
            break
        seen.add(found.fallback)
        nxt = default(found.fallback, version)
        if nxt is None or not nxt.exists:
            break
        found = nxt
    return found


def _line_tuple(line: str) -> Tuple[int, int]:
    major, minor = line.split(".")
    return int(major), int(minor)
