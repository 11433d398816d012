"""Spark event logs: every SQL execution's plans, read from the JSON lines Spark writes.

    files.py     a path -> each application's log and its parts (file, rolling, Databricks)
    codecs.py    a part -> its decompressed bytes in chunks (zstd, lz4, snappy, lzf, gzip, plain)
"""

from __future__ import annotations

from .codecs import DEFAULT_CHUNK_SIZE, read_chunks
from .files import EventLog, Part, find_event_logs, looks_like_event_log

__all__ = ["DEFAULT_CHUNK_SIZE", "EventLog", "Part", "find_event_logs", "looks_like_event_log",
           "read_chunks"]
