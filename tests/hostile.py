"""Hostile inputs built from the real sample logs: a sample event log (or History Server JSON)
of sample_plans/eventlogs.json with its application name or its job description replaced,
every other byte of every event as Spark wrote it."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from aqe_inspect.cli import main

from .conftest import SAMPLE_PLANS


@lru_cache(maxsize=None)
def sample(scenario: str, spark_version: str = "3.5.9", layout: str = "single") -> Dict[str, Any]:
    """The index entry of a sample: its path, application name, description."""
    index = json.loads((SAMPLE_PLANS / "eventlogs.json").read_text("utf-8"))
    for entry in index["logs"]:
        if (entry["scenario"], entry["spark_version"], entry["layout"], entry["variant"]) == (
                scenario, spark_version, layout, "plain"):
            return entry
    raise LookupError(f"no plain {layout} sample {scenario} of Spark {spark_version}")


def _replace(value: Any, replacements: Dict[str, str], counts: Dict[str, int]) -> Any:
    if isinstance(value, dict):
        return {key: _replace(item, replacements, counts) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace(item, replacements, counts) for item in value]
    if isinstance(value, str) and value in replacements:
        counts[value] += 1
        return replacements[value]
    return value


def hostile_log(target: Path, scenario: str = "skew_join", *, app_name: Optional[str] = None,
                description: Optional[str] = None, spark_version: str = "3.5.9",
                layout: str = "single", ascii_only: bool = False) -> Path:
    """The sample's log written to `target` with every field holding its application name
    (`App Name`, `spark.app.name`) or its description (the SQL execution's, `spark.job.
    description`) replaced. `ascii_only`: non-ASCII written as JSON escapes (how a lone
    surrogate can be written at all)."""
    entry = sample(scenario, spark_version, layout)
    replacements = {}
    if app_name is not None:
        replacements[entry["app_name"]] = app_name
    if description is not None:
        replacements[entry["description"]] = description
    counts = {key: 0 for key in replacements}
    source = SAMPLE_PLANS / entry["path"]
    text = source.read_text("utf-8")
    if layout == "history-sql":
        out = json.dumps(_replace(json.loads(text), replacements, counts), indent=2,
                         ensure_ascii=ascii_only)
    else:
        out = "".join(json.dumps(_replace(json.loads(line), replacements, counts),
                                 separators=(",", ":"), ensure_ascii=ascii_only) + "\n"
                      for line in text.splitlines() if line.strip())
    missing = [key for key, count in counts.items() if not count]
    assert not missing, f"{source}: nothing held {missing}"
    target.write_text(out, "utf-8")
    return target


def run(*args: str) -> Tuple[int, str, str]:
    """The CLI in this process: exit code, standard output, standard error."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


#: Where a sample's plans hold text a user wrote: the string literal of a filter (`tier = 'hot'`
#: in the dynamic partition pruning scenario, printed bare by Spark: `(tier#20 = hot)`) and the
#: folder of a table's files (`.../dpp_fact`), each as a pattern matching only it.
PLAN_FIELDS = {"literal": r"(?<=[ ,(])hot(?=[ )])", "table": r"(?<=/)dpp_(?:fact|dim)\b"}


def _substituted(value: Any, pattern: "re.Pattern[str]", new: str, counts: List[int]) -> Any:
    if isinstance(value, dict):
        return {key: _substituted(item, pattern, new, counts) for key, item in value.items()}
    if isinstance(value, list):
        return [_substituted(item, pattern, new, counts) for item in value]
    if isinstance(value, str):
        value, count = pattern.subn(lambda _: new, value)
        counts[0] += count
    return value


def hostile_plan(target: Path, field: str, text: str, *, name: str = "eventlog.json",
                 scenario: str = "dynamic_partition_pruning",
                 spark_version: str = "3.5.9") -> Path:
    """The sample file `name` (an event log, History Server JSON, a plan text, a driver log)
    of `scenario` written to `target` with the plan text of `field` (see PLAN_FIELDS) replaced
    by `text` wherever a plan holds it; JSON stays JSON (the text escaped as JSON strings
    are), the rest as Spark wrote it."""
    source = SAMPLE_PLANS / f"spark-{spark_version}" / scenario / name
    pattern = re.compile(PLAN_FIELDS[field])
    counts = [0]
    if name.endswith(".json"):
        raw = source.read_text("utf-8")
        if raw.lstrip().startswith("[") or name == "history_sql.json":
            out = json.dumps(_substituted(json.loads(raw), pattern, text, counts), indent=2)
        else:
            out = "".join(json.dumps(_substituted(json.loads(line), pattern, text, counts),
                                     separators=(",", ":")) + "\n"
                          for line in raw.splitlines() if line.strip())
    else:
        out, counts[0] = pattern.subn(lambda _: text, source.read_text("utf-8"))
    assert counts[0], f"{source}: no {field} to replace"
    target.write_text(out, "utf-8")
    return target
