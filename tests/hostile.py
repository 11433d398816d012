"""Hostile inputs built from the real sample logs: a sample event log (or History Server JSON)
of sample_plans/eventlogs.json with its application name or its job description replaced,
every other byte of every event as Spark wrote it."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

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
