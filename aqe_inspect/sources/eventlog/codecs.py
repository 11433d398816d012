"""STAND-IN (the byte-layer helper's codecs.py replaces this at merge): plain bytes only."""

from __future__ import annotations

from typing import Iterator, List, Tuple

from .files import EventLog, Part


def read_chunks(log: EventLog, notes: List[str], chunk_size: int = 8 << 20
                ) -> Iterator[Tuple[Part, bytes]]:
    for part in log.parts:
        with open(part.path, "rb") as handle:
            while True:
                chunk = handle.read(chunk_size)
                if not chunk:
                    break
                yield part, chunk
