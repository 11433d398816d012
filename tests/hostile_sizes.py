"""Hostile inputs of size built from the real sample logs, streamed to disk (a 4 GiB line is never held):
an event enlarged past --max-size, written in each of Spark's codec framings (a small file that
decompresses to gigabytes is a zstd or gzip "bomb"); executions that never end; a History
Server answer enlarged; a long log of a real application's executions, renumbered.

The framings are those codecs.py reads (Spark's Java libraries' own): zstd frames back to back
(zstd-jni), lz4-java's LZ4Block blocks with their XXH32 check, snappy-java's header and
length-prefixed raw blocks, ning's "ZV" lzf chunks, gzip members back to back (Databricks).
A block that repeats (the filler of an enlarged field) is compressed once and its bytes
written again: that is what makes a bomb cheap to build.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

SAMPLE_PLANS = Path(__file__).resolve().parent.parent / "sample_plans"
MANIFEST = json.loads((SAMPLE_PLANS / "eventlogs.json").read_text("utf-8"))["logs"]
PIECE = 1 << 20


def sample(scenario: str = "skew_join", version: str = "3.5.9", layout: str = "single",
           codec: Optional[str] = None) -> Path:
    """A real log (or History Server answer: layout "history-sql") of sample_plans/."""
    entry = next(e for e in MANIFEST if e["scenario"] == scenario and e["spark_version"] ==
                 version and e["layout"] == layout and e["codec"] == codec)
    return SAMPLE_PLANS / entry["path"]


def line_of(lines: Sequence[bytes], marker: bytes) -> int:
    """The index of the first line holding `marker` (its line number is one more)."""
    return next(i for i, line in enumerate(lines) if marker in line)


def enlarged(lines: Sequence[bytes], index: int, key: bytes, size: int,
             filler: bytes = b"x") -> Iterator[bytes]:
    """The log's lines (joined by newlines), line `index`'s JSON string `key` grown by `size`
    bytes of `filler`, in pieces of at most PIECE bytes (the filler's pieces are the same
    object, so a codec compresses them once)."""
    head = b"\n".join(lines[:index])
    if head:
        yield head + b"\n"
    line = lines[index]
    at = line.index(key) + len(key)
    yield line[:at]
    piece = filler * (PIECE // len(filler))
    left = size
    while left >= len(piece):
        yield piece
        left -= len(piece)
    if left:
        yield piece[:left]
    rest = lines[index][at:] + b"\n" + b"\n".join(lines[index + 1:])
    yield rest


# ---- Spark's codec framings, streamed --------------------------------------------------------

def _memo(compress: Callable[[bytes], bytes]) -> Callable[[bytes], bytes]:
    made: Dict[int, Tuple[bytes, bytes]] = {}

    def once(block: bytes) -> bytes:
        held = made.get(id(block))
        if held is not None and held[0] is block:
            return held[1]
        out = compress(block)
        if len(block) >= 4096:
            made[id(block)] = (block, out)
        return out
    return once


def _blocks(pieces: Iterable[bytes], size: int) -> Iterator[bytes]:
    """The pieces cut into blocks of at most `size` bytes; a piece of a multiple of `size`
    gives the same block objects each time it repeats (so they are compressed once)."""
    cut: Dict[int, Tuple[bytes, List[bytes]]] = {}
    for piece in pieces:
        held = cut.get(id(piece))
        if held is not None and held[0] is piece:
            yield from held[1]
            continue
        blocks = [piece[at:at + size] for at in range(0, len(piece), size)]
        if len(piece) >= PIECE:
            cut[id(piece)] = (piece, blocks)
        yield from blocks


def write_zstd(pieces: Iterable[bytes], path: Path) -> None:
    import zstandard

    frame = _memo(zstandard.ZstdCompressor(level=1).compress)
    with open(path, "wb") as out:
        for piece in pieces:
            out.write(frame(piece))


def write_gzip(pieces: Iterable[bytes], path: Path) -> None:
    member = _memo(lambda data: gzip.compress(data, 6, mtime=0))
    with open(path, "wb") as out:
        for piece in pieces:
            out.write(member(piece))


LZ4_BLOCK = 1 << 16  # level 6 of lz4-java's LZ4BlockOutputStream


def write_lz4(pieces: Iterable[bytes], path: Path) -> None:
    import lz4.block
    import xxhash

    def block(data: bytes) -> bytes:
        packed = lz4.block.compress(data, store_size=False)
        check = xxhash.xxh32_intdigest(data, 0x9747B28C) & 0xFFFFFFF
        return (b"LZ4Block" + bytes([0x20 | 6]) + struct.pack("<iii", len(packed), len(data),
                                                               check) + packed)

    once = _memo(block)
    with open(path, "wb") as out:
        for data in _blocks(pieces, LZ4_BLOCK):
            out.write(once(data))
        out.write(b"LZ4Block" + bytes([0x10 | 6]) + struct.pack("<iii", 0, 0, 0))


SNAPPY_BLOCK = 32 << 10  # spark.io.compression.snappy.blockSize


def write_snappy(pieces: Iterable[bytes], path: Path, block_size: int = SNAPPY_BLOCK) -> None:
    import cramjam

    def block(data: bytes) -> bytes:
        packed = bytes(cramjam.snappy.compress_raw(data))
        return struct.pack(">i", len(packed)) + packed

    once = _memo(block)
    with open(path, "wb") as out:
        out.write(b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1))
        for data in _blocks(pieces, block_size):
            out.write(once(data))


LZF_CHUNK = 0xFFFF


def write_lzf(pieces: Iterable[bytes], path: Path) -> None:
    import lzf

    def chunk(data: bytes) -> bytes:
        packed = lzf.compress(data, len(data) - 1) if len(data) > 16 else None
        if packed is None:
            return b"ZV\x00" + struct.pack(">H", len(data)) + data
        return b"ZV\x01" + struct.pack(">HH", len(packed), len(data)) + packed

    once = _memo(chunk)
    with open(path, "wb") as out:
        for data in _blocks(pieces, LZF_CHUNK):
            out.write(once(data))


def write_plain(pieces: Iterable[bytes], path: Path) -> None:
    with open(path, "wb") as out:
        for piece in pieces:
            out.write(piece)


WRITERS = {"plain": write_plain, "zstd": write_zstd, "gzip": write_gzip, "lz4": write_lz4,
           "snappy": write_snappy, "lzf": write_lzf}
SUFFIX = {"plain": "", "zstd": ".zstd", "gzip": ".gz", "lz4": ".lz4", "snappy": ".snappy",
          "lzf": ".lzf"}


# ---- many executions -------------------------------------------------------------------------

_EXECUTION_ID = re.compile(rb'"executionId":\d+')
_SQL = b"org.apache.spark.sql.execution.ui.SparkListenerSQL"


def never_ending(lines: Sequence[bytes], count: int, pad: int = 0) -> Iterator[bytes]:
    """The log with its SQL execution's start repeated `count` times under new ids (from
    1000), none of them ever ended, each start's `details` (the call site, never printed)
    grown by `pad` bytes; the real execution's own events stay as they were."""
    start = lines[line_of(lines, _SQL + b"ExecutionStart")]
    if pad:
        at = start.index(b'"details":"') + len(b'"details":"')
        start = start[:at] + b"x" * pad + start[at:]
    yield b"\n".join(lines[:line_of(lines, _SQL)]) + b"\n"
    batch: List[bytes] = []
    for number in range(1000, 1000 + count):
        batch.append(_EXECUTION_ID.sub(b'"executionId":%d' % number, start, count=1))
        if sum(map(len, batch)) >= PIECE:
            yield b"\n".join(batch) + b"\n"
            batch = []
    if batch:
        yield b"\n".join(batch) + b"\n"
    yield b"\n".join(lines[line_of(lines, _SQL):])


def renumbered(lines: Sequence[bytes], copies: int) -> Iterator[bytes]:
    """The application's SQL events repeated `copies` times, each copy under new execution
    ids (its other events are left out: they carry nothing the reader needs): many
    executions, a long log."""
    first = line_of(lines, _SQL)
    sql = [line for line in lines[first:] if _SQL in line]
    yield b"\n".join(lines[:first]) + b"\n"
    for copy in range(copies):
        yield b"\n".join(_EXECUTION_ID.sub(b'"executionId":%d' % (copy + 1), line, count=1)
                         for line in sql) + b"\n"


# ---- measuring a run -------------------------------------------------------------------------

def run_measured(command: Sequence[str], timeout: float = 600, **kwargs):
    """(CompletedProcess, the peak resident memory in bytes of the largest process it started,
    its own included): getrusage(RUSAGE_CHILDREN) of a fresh helper process that runs it, so
    that nothing else this test process waited for is counted."""
    probe = ("import resource, subprocess, sys\n"
             "code = subprocess.call(sys.argv[1:])\n"
             "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
             "sys.stderr.write('\\n@peak %d\\n' % peak)\n"
             "sys.exit(code)\n")
    result = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True,
                            timeout=timeout, **kwargs)
    err, _, tail = result.stderr.rpartition(b"\n@peak ")
    peak = int(tail.split()[0]) * 1024 if sys.platform != "darwin" else int(tail.split()[0])
    result.stderr = err.rstrip(b"\n") + (b"\n" if err.strip() else b"")
    return result, peak


def children_of(pid: int) -> List[Tuple[int, str]]:
    """(pid, start time) of each live process whose parent is `pid`, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != b"Z":
            found.append((int(entry), fields[19].decode()))
    return found


def alive(process: Tuple[int, str]) -> bool:
    """Whether the process (pid, start time) still runs (not a zombie, not another process
    that took its pid)."""
    pid, started = process
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except OSError:
        return False
    return fields[19].decode() == started and fields[0] != b"Z"


def wait_for(condition: Callable[[], bool], timeout: float, step: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()
