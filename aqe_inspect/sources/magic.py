"""The compressed streams Spark writes event logs in, told by their first bytes (magic) or
by a file's name: light enough to ask of every input before anything heavier is imported
(`routing.py` tells a plan text from an event log with it).

May import: nothing of the package.
"""

from __future__ import annotations

from typing import Optional, Tuple

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
LZ4_MAGIC = b"LZ4Block"
SNAPPY_MAGIC = b"\x82SNAPPY\x00"
GZIP_MAGIC = b"\x1f\x8b"
LZF_MAGICS = (b"ZV\x00", b"ZV\x01")
_MAGICS: Tuple[Tuple[bytes, str], ...] = (
    (ZSTD_MAGIC, "zstd"), (LZ4_MAGIC, "lz4"), (SNAPPY_MAGIC, "snappy"), (GZIP_MAGIC, "gzip"),
    *((magic, "lzf") for magic in LZF_MAGICS))
#: The first bytes read to tell a file's codec and whether it holds events.
SNIFF_SIZE = 64 << 10
#: What may stand before the first byte of JSON text (a byte order mark, white space).
_BLANK = b"\xef\xbb\xbf \t\n\r\f\v"
#: File-name suffixes Spark (and Databricks) give each codec.
SUFFIXES = {".zstd": "zstd", ".zst": "zstd", ".lz4": "lz4", ".snappy": "snappy", ".lzf": "lzf",
            ".gz": "gzip"}


def suffix_codec(name: str) -> Optional[str]:
    """The codec a file's name suggests (`.inprogress` aside), or None."""
    if name.endswith(".inprogress"):
        name = name[: -len(".inprogress")]
    dot = name.rfind(".")
    return SUFFIXES.get(name[dot:].lower()) if dot >= 0 else None


def magic_codec(head: bytes, name: str = "") -> Optional[str]:
    """The compressed codec whose magic `head` starts with, or None. A file too short for its
    magic (cut in its header) is told by a magic it begins when its name says that codec or
    its bytes cannot be text; a short text that merely begins one ("ZV", "LZ4") is not."""
    for magic, codec in _MAGICS:
        if head.startswith(magic):
            return codec
    if not head or len(head) >= len(LZ4_MAGIC):
        return None
    begun = [codec for magic, codec in _MAGICS if magic.startswith(head)]
    hinted = suffix_codec(name)
    if hinted in begun:
        return hinted
    if begun and not all(32 <= byte < 127 for byte in head):
        return begun[0]
    return None


def file_head(path: str, size: int = SNIFF_SIZE) -> bytes:
    """The first `size` bytes of the file at `path` (all of a shorter one)."""
    with open(path, "rb") as handle:
        return handle.read(size)


def may_be_json_or_compressed(head: bytes, name: str = "") -> bool:
    """Whether an input that starts with `head` may be an event log or History Server JSON:
    JSON text (its first byte past a byte order mark and white space opens an object or a
    list) or a compressed stream (`magic_codec`). False tells a plan text or a log without
    importing the event-log reader."""
    return head.lstrip(_BLANK)[:1] in (b"{", b"[") or magic_codec(head, name) is not None
