"""Long answers in pages: an execution list of 10,000 rows, a plan of 5,000 operators, a diff
of every execution of a log. A page is the whole JSON contract with its list cut to `limit`
items and a `page` object saying where it stands and the cursor of the next page; an answer
that fits in one page is the contract as the command line prints it, untouched. A cursor is
opaque to the client, names the call it continues (a cursor given to another call, or
altered, is an error) and is served from the answers kept (`Kept`), read again when gone.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import threading
from collections import OrderedDict
from typing import Any, Dict, Hashable, Optional, Tuple

from ..errors import InspectError

#: Items a page holds when the call does not say, per list.
DEFAULT_LIMITS = {"executions": 500, "nodes": 500, "queries": 20}
MOST_LIMIT = 5_000
#: Whole answers kept for their next pages.
KEPT_ANSWERS = 4


def call_key(tool: str, arguments: Dict[str, Any]) -> str:
    """What a cursor names: the tool and its arguments (but the cursor and the limit)."""
    chosen = {key: value for key, value in arguments.items() if key not in ("cursor", "limit")}
    text = json.dumps([tool, chosen], sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def cursor_at(key: str, offset: int) -> str:
    raw = json.dumps({"k": key, "o": offset}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def offset_of(cursor: str, key: str) -> int:
    """The offset a cursor of this call holds; an InspectError for any other string."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        found = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        offset = found["o"]
        owner = found["k"]
    except (ValueError, TypeError, KeyError, UnicodeError):
        raise InspectError("cursor: not a cursor this server gave") from None
    if owner != key:
        raise InspectError("cursor: it continues another call (the same tool with the same "
                           "arguments gives the next page)")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise InspectError("cursor: not a cursor this server gave")
    return offset


def limit_of(limit: Optional[int], listed: str) -> int:
    if limit is None:
        return DEFAULT_LIMITS.get(listed, 100)
    if not 1 <= limit <= MOST_LIMIT:
        raise InspectError(f"limit: expected 1 to {MOST_LIMIT}, found {limit}")
    return limit


def paged(data: Dict[str, Any], listed: Optional[str], key: str, cursor: Optional[str],
          limit: Optional[int]) -> Dict[str, Any]:
    """`data` as the page the cursor asks for (the first without one)."""
    if listed is None or not isinstance(data.get(listed), list):
        if cursor is not None:
            raise InspectError("cursor: this answer has no pages")
        return data
    items = data[listed]
    size = limit_of(limit, listed)
    start = offset_of(cursor, key) if cursor is not None else 0
    if start > len(items):
        raise InspectError("cursor: past the end of the answer (the input changed?)")
    if cursor is None and len(items) <= size:
        return data
    end = min(start + size, len(items))
    page = dict(data)
    page[listed] = items[start:end]
    page["page"] = {"list": listed, "start": start, "count": end - start, "total": len(items),
                    "next_cursor": cursor_at(key, end) if end < len(items) else None}
    return page


def identity(path: Optional[str]) -> Hashable:
    """What changes when the input at `path` does (its size and time; a folder's files')."""
    if path is None:
        return None
    try:
        if not os.path.isdir(path):
            info = os.stat(path)
            return (info.st_ino, info.st_size, info.st_mtime_ns)
        found = []
        for top, _, files in os.walk(path):
            for name in files:
                info = os.stat(os.path.join(top, name))
                found.append((top, name, info.st_size, info.st_mtime_ns))
        return tuple(sorted(found))
    except OSError:
        return ("unreadable", os.urandom(8))  # never equal: read it again


class Kept:
    """The last few whole answers, by call and by the identity of their inputs, so that the
    pages after the first do not read a long log again (thread-safe)."""

    def __init__(self, most: int = KEPT_ANSWERS):
        self.most = most
        self._answers: "OrderedDict[Tuple[str, Hashable], Any]" = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, inputs: Hashable) -> Any:
        with self._lock:
            found = self._answers.get((key, inputs))
            if found is not None:
                self._answers.move_to_end((key, inputs))
            return found

    def put(self, key: str, inputs: Hashable, answer: Any) -> None:
        with self._lock:
            self._answers[key, inputs] = answer
            self._answers.move_to_end((key, inputs))
            while len(self._answers) > self.most:
                self._answers.popitem(last=False)
