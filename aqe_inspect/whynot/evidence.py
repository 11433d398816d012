"""Run-time facts about the operators a rewrite needs, each with where it came from.

A fact is a `Size` (an interval: Spark prints sizes rounded, `9.4 KiB`, so a printed size
stands for every byte count that prints that way; exact figures have low == high) with its
source: `plan` (a query stage's `Statistics(...)` printed in formatted or cost mode) or
`metric` (the SQL metrics of an event log or a History Server answer), and what it measures:

- `data size` (`DATA_SIZE`): the rows' bytes as Spark holds them (UnsafeRow), uncompressed:
  the exchange's `data size` metric, which is the query stage's run-time
  `Statistics(sizeInBytes)` (`ShuffleExchangeExec.runtimeStatistics`). AQE's re-planning reads
  it: a join side against `autoBroadcastJoinThreshold`.
- `shuffle bytes` (`SHUFFLE_BYTES`): the serialized, compressed bytes the shuffle wrote to disk,
  per partition the map output statistics (`MapOutputStatistics.bytesByPartitionId`), in the
  metrics `shuffle bytes written`, the readers' bytes read and the AQE shuffle read's
  `partition data size`. Coalescing, skew handling and DynamicJoinSelection read these.

Partition sizes are what AQE's rules compare (`MapOutputStatistics.bytesByPartitionId`). They
are exact where the tasks of the stage reading a shuffle each read one of its partitions (an
event log's per-task `bytes read per task`, with no AQE shuffle read above the exchange) or
where an AQE shuffle read kept the partitions as they were; a coalesced read only bounds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from ..plan.model import HISTORY_SERVER_ORIGIN, Node, Spread
from ..plan.operators import (family, is_join, is_query_stage, is_shuffle_read, partition_count,
                         partitioning, shuffle_read_modes)
from ..rewrites.findings import describe
from ..plan.units import Size, parse_statistics, show_bytes
from .verdicts import METRIC, PLAN

#: Operators between a join and the shuffle it reads that leave the data as it is.
PASS_THROUGH = frozenset(("Sort", "InputAdapter", "ColumnarToRow", "RowToColumnar",
                          "WholeStageCodegen"))
#: The shuffle origin of a user's `repartition(n)` / `repartition(n, cols)` (Spark 3.1+).
USER_REPARTITION = "REPARTITION_BY_NUM"
SHUFFLE_ORIGINS = ("ENSURE_REQUIREMENTS", "REPARTITION_BY_COL", "REPARTITION_BY_NUM",
                   "REBALANCE_PARTITIONS_BY_NONE", "REBALANCE_PARTITIONS_BY_COL")
#: Event logs hold metric figures as numbers; the History Server prints them rounded.
ROUNDED_ORIGINS = (HISTORY_SERVER_ORIGIN,)


def exact(value: int) -> Size:
    return Size(value, value)


#: What a size figure measures; the words the text puts before it and the why JSON's `measure`.
DATA_SIZE = "data size"
SHUFFLE_BYTES = "shuffle bytes"
MEASURES = (DATA_SIZE, SHUFFLE_BYTES)


@dataclass(frozen=True)
class Fact:
    """A figure, its source (`plan` or `metric`), where exactly it was read and, for a size,
    what it measures (`DATA_SIZE` or `SHUFFLE_BYTES`; "" for a count)."""

    value: Size
    source: str
    where: str
    measure: str = ""

    def show(self) -> str:
        return show_size(self.value)

    def labelled(self) -> str:
        """`data size 468.8 KiB`, `shuffle bytes at most 185.6 KiB`: the figure after what it
        measures."""
        return f"{self.measure} {self.show()}" if self.measure else self.show()


def show_size(size: Size) -> str:
    """`9.4 KiB`; a bound known only from above as `at most 126.0 KiB`."""
    if size.text:
        return size.text
    if size.low == size.high:
        return show_bytes(size.low)
    if size.low == 0:
        return f"at most {show_bytes(size.high)}"
    return show_bytes((size.low + size.high) // 2)


@dataclass(frozen=True)
class Side:
    """One input of an operator as AQE sees it: the nodes from the operator down to its shuffle."""

    top: Node
    read: Optional[Node]
    stage: Optional[Node]
    exchange: Optional[Node]

    @property
    def shuffle(self) -> bool:
        return self.stage is not None and family(self.stage) == "ShuffleQueryStage" or (
            self.stage is None and self.exchange is not None
            and family(self.exchange) == "Exchange")

    def name(self) -> str:
        return describe(self.stage or self.exchange or self.top) or "?"


def side_of(top: Node) -> Side:
    """Follow `top` down through sorts and a shuffle read to the query stage and its exchange."""
    node, read = top, None
    while True:
        if is_shuffle_read(node):
            read = node
        elif is_query_stage(node):
            return Side(top, read, node, _exchange_under(node))
        elif family(node) in ("Exchange", "BroadcastExchange"):
            return Side(top, read, None, node)
        elif family(node) not in PASS_THROUGH or len(node.children) != 1:
            return Side(top, read, None, None)
        if len(node.children) != 1:
            return Side(top, read, None, None)
        node = node.children[0]


def _exchange_under(stage: Node) -> Optional[Node]:
    for node in stage.children:
        if family(node) in ("Exchange", "BroadcastExchange", "ReusedExchange"):
            return node
    return None


def join_sides(join: Node) -> Tuple[Side, ...]:
    return tuple(side_of(child) for child in join.children[:2])


def shuffle_origin(exchange: Optional[Node]) -> Optional[str]:
    """ENSURE_REQUIREMENTS, REPARTITION_BY_NUM, ... as printed after the partitioning; Spark
    3.0 printed `noUserSpecifiedNumPartition` instead: `false` is a user's repartition(n)."""
    if exchange is None:
        return None
    for text in (exchange.args, exchange.details.get("Arguments", "")):
        for origin in SHUFFLE_ORIGINS:
            if origin in text:
                return origin
        spec = partitioning(exchange)
        if spec and text.startswith(spec):
            rest = text[len(spec):].lstrip(", ").split(",")[0].strip()
            if rest == "false":
                return USER_REPARTITION
            if rest == "true":
                return "ENSURE_REQUIREMENTS"
    return None


# ---- sizes and rows ---------------------------------------------------------------------------


def rounded(value: int) -> Size:
    """The byte counts a size the Spark UI printed with one decimal can stand for."""
    unit = 1
    while value >= unit * 1024 and unit < 1024 ** 6:
        unit *= 1024
    if unit == 1:
        return exact(value)
    half = unit // 20
    return Size(max(0, value - half), value + half)


def metric_size(node: Optional[Node], name: str, origin: str) -> Optional[Size]:
    if node is None or name not in node.metrics:
        return None
    value = node.metrics[name]
    return rounded(value) if origin in ROUNDED_ORIGINS else exact(value)


def side_size(side: Side, origin: str) -> Optional[Fact]:
    """The side's run-time size as AQE's planner sees it: the stage's statistics (the
    exchange's `data size`)."""
    stats = _statistics(side.stage)
    if stats is not None and stats.size is not None:
        return Fact(stats.size, PLAN, f"Statistics of {describe(side.stage)}", DATA_SIZE)
    for node in (side.exchange, side.stage):
        size = metric_size(node, "data size", origin)
        if size is not None:
            return Fact(size, METRIC, f"'data size' of {describe(node)}", DATA_SIZE)
    return None


def measured_side_size(side: Side, origin: str) -> Optional[Fact]:
    """`side_size`, the exact figure first: the exchange's `data size` metric where an event
    log holds it (the very `Statistics(sizeInBytes)` AQE compared), else the printed one."""
    for node in (side.exchange, side.stage):
        size = metric_size(node, "data size", origin)
        if size is not None and size.low == size.high:
            return Fact(size, METRIC, f"'data size' of {describe(node)}", DATA_SIZE)
    return side_size(side, origin)


def side_rows(side: Side, origin: str) -> Optional[Fact]:
    stats = _statistics(side.stage)
    if stats is not None and stats.rows is not None:
        return Fact(stats.rows, PLAN, f"Statistics of {describe(side.stage)}")
    for node in (side.exchange, side.stage):
        if node is not None and "shuffle records written" in node.metrics:
            value = node.metrics["shuffle records written"]
            return Fact(exact(value), METRIC, f"'shuffle records written' of {describe(node)}")
    return None


def _statistics(stage: Optional[Node]):
    if stage is None or not stage.statistics:
        return None
    try:
        return parse_statistics(stage.statistics)
    except ValueError:
        return None


# ---- partitions -------------------------------------------------------------------------------


def spark_median(values: Sequence[int]) -> int:
    """The median AQE's skew rule takes (Utils.median): the mean of the two middle values of an
    even count, and at least 1."""
    ordered = sorted(values)
    count = len(ordered)
    if not count:
        return 1
    if count % 2 == 0:
        return max((ordered[count // 2] + ordered[count // 2 - 1]) // 2, 1)
    return max(ordered[count // 2], 1)


@dataclass(frozen=True)
class Partitions:
    """What the input says about the sizes of a shuffle's partitions (before AQE's read): shuffle
    bytes (`SHUFFLE_BYTES`), what the map output statistics hold for AQE's rules."""

    count: Optional[int]
    maximum: Optional[Size]
    median: Optional[Size]
    #: How many partitions hold data.
    nonempty: Optional[Size]
    #: Every partition's size, when known exactly.
    sizes: Tuple[int, ...]
    source: str
    where: str
    #: Where the count of partitions holding data came from, when not from `where`.
    counted: str = ""

    def largest(self) -> Optional[Fact]:
        """The largest partition as a fact (shuffle bytes), when known."""
        if self.maximum is None:
            return None
        return Fact(self.maximum, self.source, self.where, SHUFFLE_BYTES)


def partitions(side: Side, origin: str) -> Optional[Partitions]:
    """The partition sizes of the shuffle `side` reads, as far as the input tells them."""
    exchange = side.exchange
    count = partition_count(exchange) if exchange is not None else None
    if count is None and exchange is not None:
        count = exchange.metrics.get("number of partitions")
    modes = shuffle_read_modes(side.read) if side.read is not None else ()
    one_per_task = side.read is None or not modes
    per_task = _spread(exchange, "bytes read per task")
    if per_task is not None and per_task.values and one_per_task and \
            (count is None or len(per_task.values) == count):
        return _exact(per_task.values, f"per-task bytes read of {describe(exchange)}")
    read_sizes = _spread(side.read, "partition data size")
    if read_sizes is not None and read_sizes.values and count is not None and \
            len(read_sizes.values) == count and "skewed" not in modes:
        return _exact(read_sizes.values, f"'partition data size' of {describe(side.read)}")
    upper = _nonempty_bound(side, count, origin)
    largest = _largest_bound(side, read_sizes)
    tasks = _one_sided_read_spread(exchange)
    if tasks is not None and one_per_task:
        name, spread = tasks
        # The UI's figures are over the tasks that read something: the maximum is the
        # largest partition, the median an upper bound of the median over all partitions.
        return Partitions(count=count, maximum=rounded(spread.maximum),
                          median=Size(0, rounded(spread.median).high), nonempty=upper,
                          sizes=(), source=METRIC,
                          where=f"'{name}' of {describe(exchange)} (min, med, max)")
    if upper is not None or largest is not None:
        where = largest[1] if largest is not None else f"blocks and rows of {side.name()}"
        return Partitions(count=count, maximum=largest[0] if largest is not None else None,
                          median=None, nonempty=upper, sizes=(), source=_bound_source(side),
                          where=where, counted=_counted_where(side))
    if count is not None:
        return Partitions(count=count, maximum=None, median=None, nonempty=None, sizes=(),
                          source=PLAN, where=f"partitioning of {describe(exchange)}")
    return None


def _counted_where(side: Side) -> str:
    read = side.read
    if read is not None and "number of empty partitions" in read.metrics:
        return f"'number of empty partitions' of {describe(read)}"
    return f"blocks fetched and rows of {side.name()}"


def _largest_bound(side: Side, read_sizes: Optional[Spread]) -> Optional[Tuple[Size, str]]:
    """An upper bound of the largest partition: a coalesced read's largest partition holds
    it whole; all the shuffle wrote holds it (map statuses round block sizes up to 10%)."""
    if read_sizes is not None and read_sizes.values and side.read is not None and \
            "skewed" not in shuffle_read_modes(side.read):
        return (Size(0, max(read_sizes.values)),
                f"'partition data size' of {describe(side.read)} (coalesced)")
    exchange = side.exchange
    if exchange is not None and "shuffle bytes written" in exchange.metrics:
        total = exchange.metrics["shuffle bytes written"]
        return (Size(0, total + total // 10),
                f"'shuffle bytes written' of {describe(exchange)} (all partitions together)")
    return None


def _bound_source(side: Side) -> str:
    return METRIC if side.exchange is not None and side.exchange.metrics else PLAN


def _exact(values: Sequence[int], where: str) -> Partitions:
    values = tuple(values)
    nonzero = sum(1 for v in values if v > 0)
    return Partitions(count=len(values), maximum=exact(max(values)) if values else None,
                      median=exact(spark_median(values)), nonempty=exact(nonzero),
                      sizes=values, source=METRIC, where=where)


def _spread(node: Optional[Node], name: str) -> Optional[Spread]:
    if node is None:
        return None
    return node.spreads.get(name)


def _one_sided_read_spread(exchange: Optional[Node]) -> Optional[Tuple[str, Spread]]:
    """The (min, med, max) of the bytes the reading tasks fetched, where all of it was either
    local or remote (the two are printed apart and their medians do not add up)."""
    if exchange is None:
        return None
    local, remote = exchange.spreads.get("local bytes read"), exchange.spreads.get(
        "remote bytes read")
    local_total = exchange.metrics.get("local bytes read")
    remote_total = exchange.metrics.get("remote bytes read")
    if local is not None and remote_total == 0:
        return "local bytes read", local
    if remote is not None and local_total == 0:
        return "remote bytes read", remote
    return None


def _nonempty_bound(side: Side, count: Optional[int], origin: str) -> Optional[Size]:
    """How many partitions hold data: exactly, where the AQE shuffle read counts the empty
    ones (`number of empty partitions`, Spark 4); else at most the rows written, at least one
    if any was, and at most the shuffle blocks the readers fetched (Spark fetches no empty
    block) where each reading task read one partition: a coalesced or local read fetches a
    map's blocks of a range of partitions as one batch block
    (`spark.sql.adaptive.fetchShuffleBlocksInBatch`), so its block count says nothing of how
    many partitions hold data."""
    read = side.read
    modes = shuffle_read_modes(read) if read is not None else ()
    if read is not None and count and "number of empty partitions" in read.metrics and \
            "skewed" not in modes:
        empty = read.metrics["number of empty partitions"]
        if 0 <= empty <= count:
            return exact(count - empty)
    bounds: List[int] = []
    exchange = side.exchange
    if exchange is not None and "coalesced" not in modes and "local" not in modes:
        local, remote = (exchange.metrics.get(n) for n in ("local blocks read",
                                                           "remote blocks read"))
        if local is not None or remote is not None:  # a metric no task updated is absent
            bounds.append((local or 0) + (remote or 0))
    rows = side_rows(side, origin)
    if rows is not None:
        bounds.append(rows.value.high)
    if count is not None:
        bounds.append(count)
    if not bounds or (len(bounds) == 1 and count is not None):
        return None
    high = min(bounds)
    low = 1 if rows is not None and rows.value.low > 0 else 0
    return Size(min(low, high), high)


# ---- the plan around an operator --------------------------------------------------------------


#: Operators that start a stage of their own: what is above them ran after another shuffle.
STAGE_BOUNDARIES = frozenset(("Exchange", "BroadcastExchange", "ShuffleQueryStage",
                              "BroadcastQueryStage", "ResultQueryStage", "AdaptiveSparkPlan",
                              "TableCacheQueryStage"))
#: Operators that need their input partitioned by their keys.
DISTRIBUTION_USERS = frozenset(("SortMergeJoin", "ShuffledHashJoin", "HashAggregate",
                                "SortAggregate", "ObjectHashAggregate", "Window",
                                "FlatMapGroupsInPandas", "CoGroup"))


def partitioning_user_above(node: Node, up: Dict[int, Node]) -> Optional[Node]:
    """The first operator above `node` in the same stage that relies on its output
    partitioning (a join on its keys, a keyed aggregation, a partitioned window)."""
    current = up.get(id(node))
    while current is not None and family(current) not in STAGE_BOUNDARIES:
        name = family(current)
        if name in DISTRIBUTION_USERS and _has_keys(current):
            return current
        current = up.get(id(current))
    return None


def _has_keys(node: Node) -> bool:
    if is_join(node):
        return True
    keys = node.details.get("Keys")
    if keys is not None:
        return keys.strip() not in ("", "[]")
    args = node.args
    if family(node) == "Window":
        return "partitionBy" in args or bool(node.details.get("Arguments"))
    return "keys=[" in args and "keys=[]" not in args


# ---- skew evidence ----------------------------------------------------------------------------


def nearest_rank(ordered: Sequence[int], percent: int) -> int:
    """The `percent`th percentile of sorted values by nearest rank: the value at rank
    ceil(percent/100 x n) (the smallest value at least `percent`% of the values are at or
    under); 0 for no values."""
    if not ordered:
        return 0
    rank = -(-percent * len(ordered) // 100)  # ceil, in integers
    return ordered[max(rank, 1) - 1]


def skew_bar(median: int, factor: float, threshold: int) -> int:
    """The size a partition must exceed to be skewed (OptimizeSkewedJoin.getSkewThreshold,
    Spark 3.3 to 4.x): the larger of `skewedPartitionThresholdInBytes` and `factor` x the
    median, that product cut to a whole byte count."""
    return max(threshold, int(median * factor))


@dataclass(frozen=True)
class SkewFigures:
    """One shuffle's partition sizes (shuffle bytes) as OptimizeSkewedJoin weighs them: how
    many partitions, the smallest, Spark's median (`Utils.median`), the 95th percentile
    (nearest rank), the largest; and, where the settings are known, the bar a partition must
    exceed (both `threshold` and `factor` x the median: `skew_bar`) and how many do (`over`).
    `sizes` holds every partition's size, in partition order."""

    count: int
    minimum: int
    median: int
    p95: int
    maximum: int
    sizes: Tuple[int, ...]
    source: str
    where: str
    #: `skewedPartitionThresholdInBytes` in bytes; None when unknown.
    threshold: Optional[int] = None
    #: `skewedPartitionFactor`; None when unknown.
    factor: Optional[float] = None

    @property
    def bar(self) -> Optional[int]:
        if self.threshold is None or self.factor is None:
            return None
        return skew_bar(self.median, self.factor, self.threshold)

    @property
    def over(self) -> Optional[int]:
        """How many partitions exceed both the threshold and factor x the median."""
        bar = self.bar
        return None if bar is None else sum(1 for size in self.sizes if size > bar)

    def show(self) -> str:
        """`20 partition(s), shuffle bytes: min 191 B, median 387 B, p95 3.3 KiB, max 3.3 KiB; 1 over both
        spark...ThresholdInBytes (1.0 KiB) and 2 x the median (774 B)`."""
        text = (f"{self.count} partition(s), shuffle bytes: min {show_bytes(self.minimum)}, median "
                f"{show_bytes(self.median)}, p95 {show_bytes(self.p95)}, max "
                f"{show_bytes(self.maximum)}")
        if self.bar is not None:
            assert self.threshold is not None and self.factor is not None
            text += (f"; {self.over} over both the threshold ({show_bytes(self.threshold)}) "
                     f"and {self.factor:g} x the median "
                     f"({show_bytes(int(self.median * self.factor))})")
        return f"{text} ({self.source}: {self.where})"


def skew_figures(sizes: Sequence[int], source: str, where: str,
                 factor: Optional[float] = None, threshold: Optional[int] = None
                 ) -> Optional[SkewFigures]:
    """The figures of every partition's size (`sizes`, in partition order); None for none."""
    kept = tuple(sizes)
    if not kept:
        return None
    ordered = sorted(kept)
    return SkewFigures(count=len(kept), minimum=ordered[0], median=spark_median(kept),
                       p95=nearest_rank(ordered, 95), maximum=ordered[-1], sizes=kept,
                       source=source, where=where, threshold=threshold, factor=factor)


@dataclass(frozen=True)
class SkewEvidence:
    """What the input says of the partition sizes of one side of a skew decision: `figures`
    where it holds every partition's size, else `missing`, what is missing and which input
    would give it."""

    side: str
    figures: Optional[SkewFigures]
    missing: str = ""

    def show(self) -> str:
        if self.figures is not None:
            return f"{self.side}: {self.figures.show()}"
        return f"{self.side}: {self.missing}"


def skew_evidence(side: Side, label: str, origin: str, factor: Optional[float] = None,
                  threshold: Optional[int] = None) -> SkewEvidence:
    """The partition sizes of the shuffle `side` reads (`partitions`), as skew figures, or
    what is missing: a plan text holds none (an event log's task metrics do); a History
    Server answer only their (min, med, max); a log whose reading tasks each read several
    partitions (a coalesced or skew-split read) only their sums."""
    found = partitions(side, origin)
    if found is not None and found.sizes:
        figures = skew_figures(found.sizes, found.source, found.where, factor, threshold)
        if figures is not None:
            return SkewEvidence(label, figures)
    modes = shuffle_read_modes(side.read) if side.read is not None else ()
    if "coalesced" in modes or "skewed" in modes:
        what = " or ".join(text for mode, text in (
            ("coalesced", "several partitions"), ("skewed", "a part of one"))
            if mode in modes)
        missing = (f"every partition's size is not in this input, nor in the run's event "
                   f"log: its {' and '.join(modes)} read's tasks each read {what}, and "
                   f"only their sums are recorded")
    elif not _has_metrics(side):
        missing = ("every partition's size is not in this input: an event log of the run "
                   "holds them (its task metrics)")
    elif origin in ROUNDED_ORIGINS:
        missing = ("every partition's size is not in this input (the History Server prints "
                   "only min, med, max): the application's event log holds them")
    else:
        missing = ("every partition's size is not in what was read: the event log's task "
                   "metrics hold them (`why --kind skew-join` reads them; `diff` does not)")
    return SkewEvidence(label, None, missing)


def _has_metrics(side: Side) -> bool:
    return any(node is not None and (node.metrics or node.spreads)
               for node in (side.read, side.stage, side.exchange))
