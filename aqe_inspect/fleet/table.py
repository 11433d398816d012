"""The fleet table: one row per application and SQL execution, the same for every writer.

`COLUMNS` is the only list of columns (name, Spark SQL type). A row is a plain dict keyed by
column name; `row_from_report` builds one from a diffed execution with the library code `diff`
uses, `error_row` stands for a file that could not be read (its `error` set, the rest null).
Nested values (the AQE settings, the sort-merge joins that stayed) are JSON text, so CSV and
Parquet hold the same thing.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

from ..rewrites.engine import report_pairs
from ..plan.model import Application
from ..plan.operators import family, is_shuffle_read
from ..rewrites.findings import REWRITE_KINDS, QueryReport, describe

#: The rewrite kinds as column names, in DETECTORS' order (`smj-to-bhj` -> `smj_to_bhj`), read
#: from the one list of kinds.
KIND_COLUMNS = tuple(kind.replace("-", "_") for kind in REWRITE_KINDS)
#: The table's first kind columns, where they have always stood; a kind added later is a new
#: column after all the others, so a reader of the table by position keeps working.
FIRST_KIND_COLUMNS = ("coalesced", "skew_join", "smj_to_bhj", "smj_to_shj", "empty_relation",
                      "local_read")
ADDED_KIND_COLUMNS = tuple(kind for kind in KIND_COLUMNS if kind not in FIRST_KIND_COLUMNS)

COLUMNS: Tuple[Tuple[str, str], ...] = (
    ("source", "string"),             # the event log as given (a rolling log: its folder)
    ("app_id", "string"),
    ("app_name", "string"),
    ("spark_version", "string"),
    ("execution_id", "bigint"),
    ("description", "string"),
    *((kind, "int") for kind in FIRST_KIND_COLUMNS),
    ("is_final_plan", "boolean"),
    ("adaptive", "boolean"),          # AQE took the plan (an AdaptiveSparkPlan, main or nested)
    ("duration_ms", "bigint"),
    ("partitions_before", "bigint"),  # shuffle partitions under coalesced reads, summed
    ("partitions_after", "bigint"),   # what the coalesced reads left of them
    ("skewed_partitions", "bigint"),  # AQE shuffle reads' `number of skewed partitions`
    ("skew_splits", "bigint"),        # ... and `number of skewed partition splits`
    ("aqe_enabled", "boolean"),       # spark.sql.adaptive.enabled in force (null: unknown)
    ("aqe_configs", "string"),        # JSON object: the AQE settings the log recorded
    ("stayed_sort_merge_joins", "string"),  # JSON list: each sort-merge join that stayed
    ("error", "string"),              # empty when the execution was read
    *((kind, "int") for kind in ADDED_KIND_COLUMNS),
)
COLUMN_NAMES = tuple(name for name, _ in COLUMNS)


#: What a spreadsheet reads as the start of a formula in a cell (OWASP's CSV injection list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def csv_cell(value: Any) -> Any:
    """A value as the CSV table holds it: text a spreadsheet would run as a formula (an app
    name or description `=HYPERLINK(...)`, `@SUM(...)`, `-2+3`) starts with `'`, which shows it
    as text; other values as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def kind_column(kind: str) -> str:
    return kind.replace("-", "_")


def spark_schema() -> str:
    """The table's schema as Spark's DDL string."""
    return ", ".join(f"`{name}` {kind}" for name, kind in COLUMNS)


def error_row(source: str, message: str, application: Optional[Application] = None
              ) -> Dict[str, Any]:
    row: Dict[str, Any] = dict.fromkeys(COLUMN_NAMES)
    row["source"] = source
    row["error"] = message or "unreadable"
    row.update(_application_fields(application))
    return row


def _application_fields(application: Optional[Application]) -> Dict[str, Any]:
    """app_id, app_name and spark_version (null where the log did not say)."""
    if application is None:
        return {}
    return {"app_id": application.app_id or None, "app_name": application.name or None,
            "spark_version": application.spark_version or None}


def row_from_report(report: QueryReport, source: str,
                    application: Optional[Application]) -> Dict[str, Any]:
    """One execution's row: rewrite counts, figures, settings and the why-not of each
    sort-merge join that stayed."""
    from ..whynot import query_settings

    query = report.query
    execution = query.execution
    row: Dict[str, Any] = dict.fromkeys(COLUMN_NAMES)
    row.update(source=source, error="", is_final_plan=query.is_final_plan,
               **_application_fields(application))
    pairs = report_pairs(report)
    if execution is not None:
        row.update(execution_id=execution.execution_id, description=execution.description,
                   duration_ms=execution.duration_ms,
                   aqe_configs=json.dumps(dict(sorted(execution.configs.items()))))
    for kind, count in report.counts.items():
        row[kind_column(kind)] = count
    before = after = None
    for rewrite in report.rewrites:
        if rewrite.kind != "coalesced":
            continue
        if isinstance(rewrite.numbers.get("partitions_before"), int):
            before = (before or 0) + rewrite.numbers["partitions_before"]
        if isinstance(rewrite.numbers.get("partitions_after"), int):
            after = (after or 0) + rewrite.numbers["partitions_after"]
    row.update(partitions_before=before, partitions_after=after, adaptive=bool(pairs))
    skewed = splits = None
    for pair in pairs:
        for node in pair.final_nodes():
            if is_shuffle_read(node):
                if "number of skewed partitions" in node.metrics:
                    skewed = (skewed or 0) + node.metrics["number of skewed partitions"]
                if "number of skewed partition splits" in node.metrics:
                    splits = (splits or 0) + node.metrics["number of skewed partition splits"]
    row.update(skewed_partitions=skewed, skew_splits=splits)
    settings = query_settings(report, {}, version=row["spark_version"])
    enabled = settings.get("spark.sql.adaptive.enabled")
    row["aqe_enabled"] = enabled.flag() if enabled.known else None
    row["stayed_sort_merge_joins"] = json.dumps(_stayed(report, pairs, settings))
    return row


def _stayed(report: QueryReport, pairs, settings) -> List[Dict[str, Any]]:
    """Each sort-merge join of the final plan, its smallest side's run-time size and why it
    was not broadcast."""
    from ..whynot import explain_query
    from ..whynot.evidence import join_sides, side_size
    from ..whynot.verdicts import HAPPENED

    answer = explain_query(report, settings, ("smj-to-bhj",))
    by_node = {c.node: c for c in answer.candidates if c.verdict != HAPPENED}
    found = []
    for pair in pairs:
        for join in pair.final_nodes():
            if family(join) != "SortMergeJoin":
                continue
            sizes = [side_size(side, report.query.origin) for side in join_sides(join)]
            known = [s.value.high for s in sizes if s is not None]
            candidate = by_node.get(describe(join) or "")
            deciding = candidate.deciding if candidate is not None else None
            found.append({
                "node": describe(join),
                "smallest_side_bytes": min(known) if known else None,
                "verdict": candidate.verdict if candidate is not None else None,
                "reason": deciding.text if deciding is not None else None,
                "config": deciding.config if deciding is not None else None,
            })
    return found
