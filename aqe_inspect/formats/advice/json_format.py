"""json: `aqe-inspect/advice/v1` (the schema: aqe_inspect/advice/schema.json). Keys are only
ever added; every string from an input is escaped by the JSON encoder (ASCII only)."""

from __future__ import annotations

import json
from typing import Any, Dict

SCHEMA = "aqe-inspect/advice/v1"


def change_json(change) -> Dict[str, Any]:
    current = change.current
    return {
        "kind": change.kind, "node": change.node, "line": change.line or None,
        "key": change.key, "value": change.value,
        "current": {"key": current.key, "value": current.value,
                    "origin": current.origin or None, "default": current.default},
        "figure": change.figure, "threshold": change.threshold, "headroom": change.headroom,
        "effects": list(change.effects), "alternatives": list(change.alternatives),
        "spark_lines": change.lines or None, "direction": change.direction,
    }


def advice_json(advice) -> Dict[str, Any]:
    app = advice.application
    return {
        "schema": SCHEMA,
        "source": advice.source,
        "incomplete": advice.incomplete,
        "settings": [{"key": k, "value": v} for k, v in advice.settings()],
        "queries": [{
            "id": q.id, "title": q.title, "label": q.label or None,
            "spark_version": q.spark_version or None,
            "changes": [change_json(c) for c in q.changes],
            "instead": [change_json(c) for c in q.instead],
            "fixed": [{"kind": f.kind, "node": f.node, "line": f.line or None,
                       "text": f.text, "instead": list(f.instead)} for f in q.fixed],
            "incomplete": list(q.incomplete),
            "nothing": q.nothing or None,
        } for q in advice.queries],
        "application": None if app is None else {
            "id": app.app_id, "name": app.name, "spark_version": app.spark_version},
        "notes": list(advice.notes),
    }


def write(advice, stream, width=None) -> None:
    stream.write(json.dumps(advice_json(advice), indent=2) + "\n")
