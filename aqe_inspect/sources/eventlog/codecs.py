"""The bytes of an event log file, decompressed the way Spark wrote them, streamed in chunks.

Spark compresses an event log with one of its `CompressionCodec`s, each in its Java library's
own stream framing (not the command-line formats of the same names), and Databricks gzips its
rolled files:

    zstd    zstd-jni's ZstdOutputStream: zstd frames back to back (Spark's flushes end frames)
    lz4     lz4-java's LZ4BlockOutputStream: blocks of "LZ4Block", a token (method | level), the
            compressed and decompressed lengths and an XXH32 checksum (seed 0x9747b28c, the low
            28 bits kept), all little-endian; method RAW (0x10) or LZ4 (0x20); an empty block
            ends the stream (an `.inprogress` file has none)
    snappy  snappy-java's SnappyOutputStream: a 16-byte header (b"\\x82SNAPPY\\x00", version and
            compatible version, big-endian), then blocks of a 4-byte big-endian length and a
            raw snappy block; a new header may start a concatenated stream
    lzf     ning compress-lzf's LZFOutputStream: "ZV" chunks, type 0 (stored: 2-byte length) or
            1 (compressed: 2-byte compressed and 2-byte original length, big-endian)
    gzip    gzip members (Databricks' rolled `eventlog-*.gz`)
    plain   JSON lines as they are

The codec is told by the first bytes (`detect_codec`; `magic_codec` for the compressed ones); a
file name's suffix is only a hint, used when a file is too short to hold its magic. Each block
is decoded by a maintained library: `zstandard`, `lz4` (`lz4.block`), `cramjam` (raw snappy),
`python-neo-lzf` (module `lzf`, the liblzf binding with wheels: ning's chunk payloads are
liblzf's format), `xxhash` (the lz4 checksums, checked when it can be imported) and `zlib`.
They are dependencies of aqe-inspect, imported only when a log needs one; one that cannot be
imported (a broken environment) is an error naming the package and the pip command. Only the
Java framings around the blocks are walked here, block by block in large reads (no per-line
Python work).

Damage: a file cut short (a log still being written, or copied half-way) is read up to the
last complete block, and a note names where it was cut; the consumer sees the bytes that block
held, which may end inside a line. A block that cannot be decoded, or whose checksum does not
match, is an error naming the file and the byte offset.

Size: whatever a file holds or claims, one decompress call gives a bounded output. zstd and
gzip are streams, read `chunk_size` bytes of output at a time (zstandard's stream reader,
`max_length` of zlib's decompressobj): a small file that inflates to gigabytes (a "bomb")
passes through in chunks, and it is the line reader (events.py) that refuses a line longer
than --max-size. lz4, snappy and lzf blocks are decoded whole: their decoded length is read
from their header (lz4's, lzf's) or from the raw block's preamble (snappy's) before decoding,
and a block longer than `max_size` is an error saying so (lz4-java's blocks are at most 32 MiB,
ning's lzf chunks 64 KiB); lengths that no compressor could write (a compressed length past
the codec's bound for the decoded length) are damage.
"""

from __future__ import annotations

import importlib
import io
import struct
import zlib
from typing import BinaryIO, Callable, Dict, Iterator, List, Optional

from ...errors import InspectError
from ..magic import GZIP_MAGIC, LZ4_MAGIC, SNAPPY_MAGIC, magic_codec, suffix_codec
from ..reading import DEFAULT_MAX_SIZE

__all__ = ["CODECS", "DEFAULT_CHUNK_SIZE", "decode", "detect_codec", "magic_codec",
           "require_library"]

CODECS = ("plain", "zstd", "lz4", "snappy", "lzf", "gzip")
DEFAULT_CHUNK_SIZE = 8 << 20
#: How much of a compressed file is read at once.
READ_SIZE = 4 << 20

_LIBRARY = {"zstd": ("zstandard", "zstandard"), "lz4": ("lz4.block", "lz4"),
            "snappy": ("cramjam", "cramjam"), "lzf": ("lzf", "python-neo-lzf")}


def detect_codec(head: bytes, name: str = "") -> Optional[str]:
    """The codec of a file that starts with `head` (a few dozen bytes are enough), or None when
    it is neither JSON text nor a stream Spark writes. A file too short for its magic is told
    as `magic_codec` tells it, or by its name when empty."""
    codec = magic_codec(head, name)
    if codec is not None:
        return codec
    if not head:
        return suffix_codec(name) or "plain"
    if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"["):
        return "plain"
    return None


def require_library(codec: str, source: str):
    """The module that decodes `codec`'s blocks (None for plain and gzip: the standard
    library's); an InspectError naming `source`, the package and the pip command when it
    cannot be imported."""
    if codec not in _LIBRARY:
        return None
    module, package = _LIBRARY[codec]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise InspectError(f"reading a {codec}-compressed event log needs the '{package}' "
                           f"package, which cannot be imported here: pip install {package}",
                           source=source) from None


def _optional(module: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


class _Input:
    """A file read in large pieces and walked block by block, with each block's file offset."""

    def __init__(self, handle: BinaryIO, read_size: int = READ_SIZE):
        self._handle = handle
        self._read_size = read_size
        self._buffer = b""
        self._view = memoryview(self._buffer)
        self._pos = 0
        self._base = 0  # the file offset of _buffer[0]
        self._ended = False

    @property
    def offset(self) -> int:
        return self._base + self._pos

    def available(self) -> int:
        return len(self._buffer) - self._pos

    def fill(self, size: int) -> bool:
        """Whether `size` bytes follow (reading more as needed); False when the file ends first."""
        while len(self._buffer) - self._pos < size and not self._ended:
            more = self._handle.read(max(self._read_size, size))
            if not more:
                self._ended = True
                break
            rest = self._buffer[self._pos:]
            self._base += self._pos
            self._buffer = rest + more if rest else more
            self._view = memoryview(self._buffer)
            self._pos = 0
        return len(self._buffer) - self._pos >= size

    def peek(self, size: int) -> memoryview:
        return self._view[self._pos:self._pos + size]

    def take(self, size: int) -> memoryview:
        view = self._view[self._pos:self._pos + size]
        self._pos += size
        return view


def _gathered(pieces: Iterator, chunk_size: int) -> Iterator[bytes]:
    """Decoded blocks joined into chunks of about `chunk_size` bytes (one copy)."""
    held: List = []
    size = 0
    for piece in pieces:
        held.append(piece)
        size += len(piece)
        if size >= chunk_size:
            yield b"".join(held)
            held = []
            size = 0
    if held:
        yield b"".join(held)


def _cut(notes: List[str], source: str, what: str, offset: int) -> None:
    notes.append(f"{source}: {what} (byte offset {offset}) is cut short; read up to it")


def _corrupt(source: str, what: str, offset: int, why: str = "") -> InspectError:
    return InspectError(f"byte offset {offset}: {what} is damaged{': ' + why if why else ''}",
                        source=source)


def _too_large(source: str, what: str, offset: int, size: int, max_size: int) -> InspectError:
    """A block that would decompress to more than --max-size: refused before it is decoded."""
    return InspectError(f"byte offset {offset}: {what} decompresses to {size:,} bytes, more than "
                        f"--max-size ({max_size:,} bytes); raise --max-size to read it",
                        source=source)


# -- plain -----------------------------------------------------------------------------------

def _plain(handle: BinaryIO, source: str, notes: List[str], chunk_size: int,
           max_size: int) -> Iterator[bytes]:
    read = handle.read
    while True:
        chunk = read(chunk_size)
        if not chunk:
            return
        yield chunk


# -- gzip ------------------------------------------------------------------------------------

def _gzip(handle: BinaryIO, source: str, notes: List[str], chunk_size: int,
          max_size: int) -> Iterator[bytes]:
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    member = consumed = 0  # the file offsets of the current member and of `pending`
    pending = b""
    fed = False  # whether the current member has begun
    while True:
        if not pending:
            pending = handle.read(READ_SIZE)
            if not pending:
                break
        try:
            out = inflater.decompress(pending, chunk_size)
        except zlib.error as error:
            raise _corrupt(source, "the gzip member", member, str(error)) from None
        fed = True
        if out:
            yield out
        if not inflater.eof:
            consumed += len(pending) - len(inflater.unconsumed_tail)
            pending = inflater.unconsumed_tail
            continue
        rest = inflater.unused_data
        consumed += len(pending) - len(rest)
        member = consumed
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        fed = False
        pending = rest or handle.read(READ_SIZE)
        if not pending or pending.startswith(GZIP_MAGIC[: len(pending)]):
            continue  # the next member, or the end
        if pending.strip(b"\0"):
            notes.append(f"{source}: the bytes after the gzip data (byte offset {member}) are "
                         f"not gzip; they were ignored")
        return  # else zero padding
    if fed:
        try:
            out = inflater.flush()
        except zlib.error:
            out = b""
        if out:
            yield out
        _cut(notes, source, "the last gzip member", member)


# -- zstd ------------------------------------------------------------------------------------

_ZSTD_FRAME = 0xFD2FB528
_DID_SIZE = (0, 1, 2, 4)
_FCS_SIZE = (0, 2, 4, 8)


class _ZstdFrames:
    """Walks the frame and block headers of the zstd bytes passing through (block bodies are
    skipped by their lengths), to know whether the data stops at the end of a frame and where
    the last frame started: what tells a cut stream from a whole one, which the decompressor
    itself does not say when it reads across frames."""

    def __init__(self, source: str, record: bool = False):
        self.source = source
        self.seen = 0  # bytes walked through
        self.next = 0  # file offset of the next header to read
        self.in_frame = False
        self.checksum = False
        self.frame_start = 0
        self._tail = b""  # bytes of a header split between two reads
        self.ends: List[int] = []  # where frames ended (kept only when asked: `record`)
        self.record = record

    def feed(self, data) -> None:
        base = self.seen - len(self._tail)
        buffer = self._tail + bytes(data) if self._tail else data
        self.seen += len(data)
        end = self.seen
        unpack = struct.unpack_from
        while True:
            at = self.next - base
            if self.in_frame:
                if self.next + 3 > end:
                    break
                header = buffer[at] | buffer[at + 1] << 8 | buffer[at + 2] << 16
                kind = (header >> 1) & 3
                if kind == 3:
                    raise _corrupt(self.source, "the zstd data", self.next,
                                   "a block of the reserved type")
                self.next += 3 + (1 if kind == 1 else header >> 3)
                if header & 1:
                    self.in_frame = False
                    self.next += 4 if self.checksum else 0
                    if self.record:
                        self.ends.append(self.next)
            else:
                if self.next + 5 > end:
                    break
                magic = unpack("<I", buffer, at)[0]
                if magic == _ZSTD_FRAME:
                    descriptor = buffer[at + 4]
                    single = (descriptor >> 5) & 1
                    fcs = descriptor >> 6
                    self.frame_start = self.next
                    self.checksum = bool(descriptor & 4)
                    self.in_frame = True
                    self.next += (5 + (0 if single else 1) + _DID_SIZE[descriptor & 3]
                                  + (1 if single and fcs == 0 else _FCS_SIZE[fcs]))
                elif magic & 0xFFFFFFF0 == 0x184D2A50:  # a skippable frame
                    if self.next + 8 > end:
                        break
                    self.frame_start = self.next
                    self.next += 8 + unpack("<I", buffer, at + 4)[0]
                    if self.record:
                        self.ends.append(self.next)
                else:
                    raise _corrupt(self.source, "the zstd data", self.next,
                                   "no zstd frame starts there")
        self._tail = bytes(buffer[self.next - base:]) if self.next < end else b""

    @property
    def whole(self) -> bool:
        """Whether the bytes walked so far end where a frame ends."""
        return not self.in_frame and self.next == self.seen


class _WalkedFile(io.RawIOBase):
    """The raw file as the zstd decompressor reads it, walked by `_ZstdFrames` on the way."""

    def __init__(self, handle: BinaryIO, frames: _ZstdFrames):
        super().__init__()
        self._handle = handle
        self._frames = frames

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(size)
        if data:
            self._frames.feed(data)
        return data


def _zstd(handle: BinaryIO, source: str, notes: List[str], chunk_size: int,
          max_size: int) -> Iterator[bytes]:
    zstandard = require_library("zstd", source)
    frames = _ZstdFrames(source)
    reader = zstandard.ZstdDecompressor().stream_reader(
        _WalkedFile(handle, frames), read_size=1 << 20, read_across_frames=True, closefd=False)
    while True:
        try:
            out = reader.read(chunk_size)
        except zstandard.ZstdError as error:
            where = _damaged_zstd_frame(handle, source, zstandard)
            raise _corrupt(source, "the zstd frame", where, str(error)) from None
        if not out:
            break
        yield out
    if not frames.whole:
        _cut(notes, source, "the last zstd frame", frames.frame_start)


def _damaged_zstd_frame(handle: BinaryIO, source: str, zstandard) -> int:
    """The offset of the first zstd frame that does not decode (an error's slow path: frames
    are read again one at a time), or 0 when the file cannot be read again."""
    try:
        handle.seek(0)
    except OSError:
        return 0
    frames = _ZstdFrames(source, record=True)
    start = 0
    while True:
        data = handle.read(1 << 20)
        if not data:
            return start
        frames.feed(data)
        for end in frames.ends:
            handle_at = handle.tell()
            handle.seek(start)
            try:
                zstandard.ZstdDecompressor().decompressobj().decompress(handle.read(end - start))
            except zstandard.ZstdError:
                return start
            handle.seek(handle_at)
            start = end
        frames.ends.clear()


# -- lz4 -------------------------------------------------------------------------------------

_LZ4_HEADER = 21
_LZ4_RAW, _LZ4_COMPRESSED = 0x10, 0x20
_LZ4_SEED = 0x9747B28C


def _lz4(handle: BinaryIO, source: str, notes: List[str], chunk_size: int,
         max_size: int) -> Iterator[bytes]:
    return _gathered(_lz4_blocks(handle, source, notes, max_size), chunk_size)


def _lz4_bound(size: int) -> int:
    """The most bytes LZ4 compresses `size` bytes to (LZ4_compressBound)."""
    return size + size // 255 + 16


def _lz4_blocks(handle: BinaryIO, source: str, notes: List[str], max_size: int) -> Iterator:
    block = require_library("lz4", source)
    xxhash = _optional("xxhash")
    xxh32 = xxhash.xxh32_intdigest if xxhash is not None else None
    data = _Input(handle)
    unpack = struct.unpack_from
    blocks = 0
    while True:
        start = data.offset
        if not data.fill(_LZ4_HEADER):
            if data.available():
                _cut(notes, source, "the last lz4 block", start)
            elif blocks:
                notes.append(f"{source}: the lz4 stream has no end mark (a log still being "
                             f"written: what Spark had not yet compressed is not in the file)")
            return
        header = data.peek(_LZ4_HEADER)
        if header[:8] != LZ4_MAGIC:
            raise _corrupt(source, "the lz4 stream", start, "no LZ4Block header there")
        token = header[8]
        method = token & 0xF0
        compressed, original, check = unpack("<iii", header, 9)
        if (method not in (_LZ4_RAW, _LZ4_COMPRESSED) or original > 1 << (10 + (token & 0x0F))
                or original < 0 or compressed < 0 or (original == 0) != (compressed == 0)
                or (method == _LZ4_RAW and original != compressed)
                or compressed > _lz4_bound(original)):
            raise _corrupt(source, "the lz4 block header", start, "impossible lengths")
        if original > max_size:
            raise _too_large(source, "the lz4 block", start, original, max_size)
        if original == 0:  # the end mark; another stream may follow
            data.take(_LZ4_HEADER)
            blocks = 0
            if not data.fill(1):
                return
            continue
        if not data.fill(_LZ4_HEADER + compressed):
            _cut(notes, source, "the last lz4 block", start)
            return
        data.take(_LZ4_HEADER)
        payload = data.take(compressed)
        if method == _LZ4_RAW:
            out = payload
        else:
            try:
                out = block.decompress(payload, uncompressed_size=original)
            except Exception as error:  # lz4.block.LZ4BlockError
                raise _corrupt(source, "the lz4 block", start, str(error)) from None
            if len(out) != original:
                raise _corrupt(source, "the lz4 block", start,
                               f"{len(out)} bytes where the header says {original}")
        if xxh32 is not None and xxh32(out, _LZ4_SEED) & 0xFFFFFFF != check & 0xFFFFFFF:
            raise _corrupt(source, "the lz4 block", start, "its checksum does not match")
        blocks += 1
        yield out


# -- snappy ----------------------------------------------------------------------------------

_SNAPPY_HEADER = 16


def _snappy(handle: BinaryIO, source: str, notes: List[str], chunk_size: int,
            max_size: int) -> Iterator[bytes]:
    return _gathered(_snappy_blocks(handle, source, notes, max_size), chunk_size)


def _snappy_length(block) -> Optional[int]:
    """The decoded length a raw snappy block starts with (a little-endian base-128 varint of
    at most 5 bytes), or None when its first bytes are not one."""
    length = 0
    for index in range(min(5, len(block))):
        byte = block[index]
        length |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            return length
    return None


def _snappy_bound(size: int) -> int:
    """The most bytes snappy compresses `size` bytes to (MaxCompressedLength)."""
    return 32 + size + size // 6


def _snappy_blocks(handle: BinaryIO, source: str, notes: List[str], max_size: int) -> Iterator:
    cramjam = require_library("snappy", source)
    decompress = cramjam.snappy.decompress_raw
    data = _Input(handle)
    while True:
        start = data.offset
        if not data.fill(4):
            if data.available():
                _cut(notes, source, "the last snappy block", start)
            return
        if data.peek(4) == SNAPPY_MAGIC[:4]:  # a stream's header (the first, or concatenated)
            if not data.fill(_SNAPPY_HEADER):
                _cut(notes, source, "the snappy header", start)
                return
            header = data.take(_SNAPPY_HEADER)
            if header[:8] != SNAPPY_MAGIC:
                raise _corrupt(source, "the snappy header", start)
            continue
        size = struct.unpack_from(">i", data.peek(4))[0]
        if size < 0:
            raise _corrupt(source, "the snappy block", start, "a negative length")
        if not data.fill(4 + min(size, 5)):
            _cut(notes, source, "the last snappy block", start)
            return
        length = _snappy_length(data.peek(4 + min(size, 5))[4:])
        if length is None:
            raise _corrupt(source, "the snappy block", start, "no decoded length at its start")
        if size > _snappy_bound(length):
            raise _corrupt(source, "the snappy block", start, "impossible lengths")
        if length > max_size:
            raise _too_large(source, "the snappy block", start, length, max_size)
        if not data.fill(4 + size):
            _cut(notes, source, "the last snappy block", start)
            return
        data.take(4)
        try:
            out = decompress(data.take(size))
        except Exception as error:  # cramjam.DecompressionError
            raise _corrupt(source, "the snappy block", start, str(error)) from None
        if len(out):
            yield out


# -- lzf -------------------------------------------------------------------------------------

def _lzf(handle: BinaryIO, source: str, notes: List[str], chunk_size: int,
         max_size: int) -> Iterator[bytes]:
    return _gathered(_lzf_chunks(handle, source, notes), chunk_size)


def _lzf_chunks(handle: BinaryIO, source: str, notes: List[str]) -> Iterator:
    """ning's chunks, each at most 64 KiB decoded (2-byte lengths): never refused by size."""
    lzf = require_library("lzf", source)
    data = _Input(handle)
    while True:
        start = data.offset
        if not data.fill(5):
            if data.available():
                _cut(notes, source, "the last lzf chunk", start)
            return
        header = data.peek(7)
        if header[:2] != b"ZV" or header[2] > 1:
            raise _corrupt(source, "the lzf stream", start, "no ZV chunk header there")
        if header[2] == 0:
            size = header[3] << 8 | header[4]
            if not data.fill(5 + size):
                _cut(notes, source, "the last lzf chunk", start)
                return
            data.take(5)
            yield data.take(size)
            continue
        if not data.fill(7):
            _cut(notes, source, "the last lzf chunk", start)
            return
        size = header[3] << 8 | header[4]
        original = header[5] << 8 | header[6]
        if not data.fill(7 + size):
            _cut(notes, source, "the last lzf chunk", start)
            return
        data.take(7)
        try:
            out = lzf.decompress(bytes(data.take(size)), original)
        except ValueError as error:
            raise _corrupt(source, "the lzf chunk", start, str(error)) from None
        if out is None or len(out) != original:
            raise _corrupt(source, "the lzf chunk", start,
                           f"it does not hold the {original} bytes its header says")
        yield out


_DECODERS: Dict[str, Callable[[BinaryIO, str, List[str], int, int], Iterator[bytes]]] = {
    "plain": _plain, "gzip": _gzip, "zstd": _zstd, "lz4": _lz4, "snappy": _snappy, "lzf": _lzf}


def decode(handle: BinaryIO, codec: str, source: str, notes: List[str],
           chunk_size: int = DEFAULT_CHUNK_SIZE, max_size: int = DEFAULT_MAX_SIZE
           ) -> Iterator[bytes]:
    """The decompressed bytes of an open file holding one `codec` stream, in chunks of about
    `chunk_size` bytes (not aligned to lines; a block decoded whole may make one longer). Notes
    about a cut stream go to `notes`, prefixed by `source`; damage is an InspectError naming
    `source` and the byte offset, and so is a block that would decode to more than
    `max_size` bytes."""
    return _DECODERS[codec](handle, source, notes, chunk_size, max_size)
