"""Readable labels for the SQL executions a Spark Connect server ran.

A Connect server describes each execution by the request that made it: `Spark Connect -
session_id: "..."` and the protobuf dump of the plan (`plan { root { common { plan_id: 6 } project
{ ...`), cut to a few hundred characters. The execution's start event (Spark 4) also carries
the tags of its jobs (`jobTags`):

    SparkConnect_SessionTag_User_<user>_Session_<session>_Tag_<tag>      spark.addTag(tag)
    SparkConnect_OperationTag_User_<user>_Session_<session>_Operation_<operation id>
    spark-session-<server session uuid>-execution-root-id-<N>           N: the SQL execution

`details` holds more of the same dump. `connect_description` turns that into `Spark Connect [tag, ...] project at file.py:12
(session <id>, operation <id>)`: the user's tags first (so `--query` and an expectation's
`match` select by tag), the root relation of the plan and the first call site the client
recorded, then the session and operation. Any other description is left as it is.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Optional, Tuple

PREFIX = "Spark Connect - session_id:"
SESSION_TAG = re.compile(r"^SparkConnect_SessionTag_User_.*?_Session_([0-9a-fA-F-]+)_Tag_(.+)$",
                         re.S)
OPERATION_TAG = re.compile(
    r"^SparkConnect_OperationTag_User_.*?_Session_([0-9a-fA-F-]+)_Operation_([0-9a-fA-F-]+)$",
    re.S)
ROOT_ID = re.compile(r"-execution-root-id-(\d{1,18})$")
SESSION_ID = re.compile(r'session_id:\s*"([^"]{1,100})"')
CALL_SITE = re.compile(r'call_site:\s*"([^"]{1,300})"')
#: `root {` then blocks: the first block name inside the root that is not `common`.
BLOCK = re.compile(r"\b([a-z_]{1,60})\s*\{")
LABEL_TAGS = re.compile(r"^Spark Connect \[([^\]]*)\]")
LABEL_OPERATION = re.compile(r"\boperation ([0-9a-fA-F-]{8,})\)")


def connect_description(start: Mapping[str, Any], description: Any) -> Any:
    """The readable description of a Connect execution (its start event `start`), or
    `description` unchanged when it is not one."""
    if not isinstance(description, str) or not description.startswith(PREFIX):
        return description
    tags = start.get("jobTags")
    tags = [str(tag) for tag in tags] if isinstance(tags, list) else []
    details = start.get("details")
    return readable(description, tags, details if isinstance(details, str) else "")


def readable(description: str, tags: Iterable[str], details: str = "") -> str:
    """`Spark Connect [tags] relation at call site (session ..., operation ...)`."""
    user_tags, operation, session = [], None, None
    for tag in tags:
        found = SESSION_TAG.match(tag)
        if found:
            session = session or found.group(1)
            if found.group(2) not in user_tags:
                user_tags.append(found.group(2))
            continue
        found = OPERATION_TAG.match(tag)
        if found:
            session, operation = session or found.group(1), found.group(2)
    if session is None:
        found = SESSION_ID.search(description[:400])
        session = found.group(1) if found else None
    parts = ["Spark Connect"]
    if user_tags:
        parts.append(f"[{', '.join(user_tags)}]")
    relation = root_relation(description)
    if relation:
        parts.append(relation)
    # The call site the client recorded: in the description, else in the longer details.
    site = CALL_SITE.search(description) or CALL_SITE.search(details[:100_000])
    if site:
        parts.append(f"at {site.group(1).rsplit('/', 1)[-1]}")
    where = [f"session {session}"] if session else []
    if operation:
        where.append(f"operation {operation}")
    if where:
        parts.append(f"({', '.join(where)})")
    return " ".join(parts)


def root_relation(description: str) -> Optional[str]:
    """The kind of the plan's root relation (`project`, `aggregate`, `sql`...), or of the
    command (`write_operation`), from the protobuf dump."""
    start = description.find("root {")
    if start < 0:
        start = description.find("command {")
        if start < 0:
            return None
        start += len("command {")
    else:
        start += len("root {")
    depth = 0
    for match in BLOCK.finditer(description, start):
        between = description[start:match.start()]
        depth += between.count("{") - between.count("}")
        start = match.end()
        if depth < 0:
            return None
        if depth == 0 and match.group(1) != "common":
            return match.group(1)
        depth += 1
    return None


# ---- reading the labels back (assert_aqe's event_log=, ui_url=) -------------------------------

def tags_in_label(label: str) -> Tuple[str, ...]:
    """The user tags and the operation (`operation:<id>`) a readable label names."""
    found = LABEL_TAGS.match(label or "")
    tags = tuple(t.strip() for t in found.group(1).split(",")) if found else ()
    operation = LABEL_OPERATION.search(label or "")
    return (*tags, f"operation:{operation.group(1)}") if operation else tags


def has_user_tag(tags: Iterable[str], tag: str) -> bool:
    """Whether raw job tags (or a label's tags) hold the user tag `tag`."""
    for item in tags:
        found = SESSION_TAG.match(item)
        if (found and found.group(2) == tag) or item == tag:
            return True
    return False


def has_operation(tags: Iterable[str], operation: str) -> bool:
    """Whether raw job tags (or a label's tags) are those of the Connect operation."""
    for item in tags:
        found = OPERATION_TAG.match(item)
        if (found and found.group(2) == operation) or item == f"operation:{operation}":
            return True
    return False


def execution_id_in_tags(tags: Iterable[str]) -> Optional[int]:
    """The SQL execution a job ran for, from its `...-execution-root-id-<N>` tag."""
    for item in tags:
        found = ROOT_ID.search(str(item))
        if found:
            return int(found.group(1))
    return None
