"""Finding, decompressing and splitting Spark event logs into lines.

An event log reaches us in one of these shapes, all written by real Spark:

* one plain file, one JSON event per line (``local-1642039451826``,
  ``application_..._1``), maybe ending in ``.inprogress`` while it runs;
* one compressed file, codec named by its extension and recognised by its
  first bytes: ``.lz4`` (lz4-java's ``LZ4BlockOutputStream`` framing, *not*
  the lz4 frame format), ``.snappy`` (snappy-java's ``SnappyOutputStream``
  framing, magic ``\\x82SNAPPY\\x00``; the snappy *framing* format is read
  too), ``.zstd`` / ``.zst`` (zstd frames);
* a rolling directory ``eventlog_v2_<app>/`` with ``events_<n>_<app>[.codec]``
  parts read in index order (``.compact`` parts written by the History
  Server's compactor replace the parts before them) and an
  ``appstatus_<app>[.inprogress]`` marker;
* the Spark 1.0-1.2 directory ``<app>/`` holding ``EVENT_LOG_<n>`` plus
  empty marker files ``SPARK_VERSION_<v>``, ``COMPRESSION_CODEC_<codec>``
  and ``APPLICATION_COMPLETE``.

Everything is streamed in 1 MiB chunks, so memory does not grow with the
size of the log; a single line longer than ``MAX_LINE_BYTES`` is an error.
"""

from __future__ import annotations

import io
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from jobgauge.errors import ParseError

CHUNK_BYTES = 1 << 20
MAX_LINE_BYTES = 256 << 20

_LZ4_MAGIC = b"LZ4Block"
_XERIAL_SNAPPY_MAGIC = b"\x82SNAPPY\x00"
_FRAMED_SNAPPY_MAGIC = b"\xff\x06\x00\x00sNaPpY"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_LZF_MAGIC = b"ZV"

CODEC_SUFFIXES = {".lz4": "lz4", ".snappy": "snappy", ".zstd": "zstd", ".zst": "zstd",
                  ".lzf": "lzf"}
# Spark 1.x wrote the codec's class name into the COMPRESSION_CODEC_ marker.
_CODEC_CLASSES = {"org.apache.spark.io.lz4compressioncodec": "lz4",
                  "org.apache.spark.io.snappycompressioncodec": "snappy",
                  "org.apache.spark.io.zstdcompressioncodec": "zstd",
                  "org.apache.spark.io.lzfcompressioncodec": "lzf"}

_PART_TAIL = r"(?P<codec>\.(?:lz4|lzf|snappy|zstd|zst))?(?P<compact>\.compact)?$"
_ROLLING_PART = re.compile(r"^events_(?P<index>\d+)_(?P<app>[^./]+)" + _PART_TAIL)
_ROLLING_PREFIX = "eventlog_v2_"
_LEGACY_PART = re.compile(r"^EVENT_LOG_(?P<index>\d+)$")


@dataclass
class LogPart:
    """One file of an event log, with the codec it was written with."""

    path: Path
    codec: str | None          # None: plain text; else lz4 / snappy / zstd / lzf


@dataclass
class LogLayout:
    """Where an application's events are and what the file names say."""

    source: Path
    parts: list[LogPart]
    layout: str                      # "file", "rolling", "legacy-dir"
    in_progress: bool = False
    app_id_hint: str | None = None   # from the file or folder name
    version_hint: str | None = None  # from a SPARK_VERSION_ marker
    notes: list[str] = field(default_factory=list)


def _strip_inprogress(name: str) -> tuple[str, bool]:
    if name.endswith(".inprogress"):
        return name[: -len(".inprogress")], True
    return name, False


def codec_from_name(name: str) -> str | None:
    base, _ = _strip_inprogress(name)
    base = base.removesuffix(".compact")
    return CODEC_SUFFIXES.get(os.path.splitext(base)[1].lower())


def sniff_codec(head: bytes) -> str | None:
    """The codec a stream's first bytes announce, or None for plain text."""
    if head.startswith(_LZ4_MAGIC):
        return "lz4"
    if head.startswith((_XERIAL_SNAPPY_MAGIC, _FRAMED_SNAPPY_MAGIC)):
        return "snappy"
    if head.startswith(_ZSTD_MAGIC):
        return "zstd"
    return None


def _rolling_pattern(folder: Path):
    """Part names of a rolling folder: ``events_<n>_<app>[.codec][.compact]``.

    In an ``eventlog_v2_<app>`` folder ``<app>`` is exactly the folder's
    suffix (it may hold dots); elsewhere an app id without dots is assumed.
    """
    if folder.name.startswith(_ROLLING_PREFIX):
        app = re.escape(folder.name[len(_ROLLING_PREFIX):])
        return re.compile(rf"^events_(?P<index>\d+)_(?P<app>{app})" + _PART_TAIL)
    return _ROLLING_PART


def is_rolling_dir(path: Path) -> bool:
    if not path.is_dir():
        return False
    pattern = _rolling_pattern(path)
    return path.name.startswith(_ROLLING_PREFIX) or any(
        pattern.match(p.name) for p in path.iterdir())


def is_legacy_dir(path: Path) -> bool:
    return path.is_dir() and any(_LEGACY_PART.match(p.name) for p in path.iterdir())


def resolve_layout(path) -> LogLayout:
    """Find the part files of the event log at ``path`` (a file or a folder)."""
    path = Path(path)
    if not path.exists():
        raise ParseError("no such file or directory", path=path)
    if path.is_file():
        name, in_progress = _strip_inprogress(path.name)
        app = name
        codec = codec_from_name(path.name)
        if codec:
            app = os.path.splitext(name)[0]
        return LogLayout(path, [LogPart(path, codec)], "file", in_progress, app_id_hint=app)
    if not path.is_dir():
        raise ParseError("not a regular file or directory", path=path)
    entries = sorted(p for p in path.iterdir() if not p.name.startswith("."))
    pattern = _rolling_pattern(path)
    rolling = [(m, p) for p in entries if (m := pattern.match(p.name))]
    if rolling:
        return _rolling_layout(path, entries, rolling)
    legacy = [(int(m.group("index")), p) for p in entries if (m := _LEGACY_PART.match(p.name))]
    if legacy:
        return _legacy_layout(path, entries, legacy)
    if path.name.startswith(_ROLLING_PREFIX):
        raise ParseError("rolling event log folder holds no events_<n>_<app> files", path=path,
                         expected="events_1_<app id>[.lz4|.snappy|.zstd]")
    raise ParseError("folder is not a Spark event log", path=path,
                     expected="an eventlog_v2_<app> folder with events_<n>_<app> files, "
                              "or a Spark 1.x folder with EVENT_LOG_1")


def _rolling_layout(path, entries, rolling) -> LogLayout:
    parts = sorted(((int(m.group("index")), bool(m.group("compact")), m, p)
                    for m, p in rolling), key=lambda t: (t[0], t[1]))
    # A compacted part replaces itself and every part before it.
    last_compact = max((i for i, compact, _, _ in parts if compact), default=None)
    if last_compact is not None:
        parts = [t for t in parts if (t[0] == last_compact and t[1]) or t[0] > last_compact]
    indices = [t[0] for t in parts]
    layout = LogLayout(path, [], "rolling")
    for i in range(1, len(indices)):
        if indices[i] == indices[i - 1]:
            raise ParseError(f"two parts with index {indices[i]}", path=path,
                             expected="one events_<n>_<app> file per index")
        if indices[i] != indices[i - 1] + 1:
            layout.notes.append(f"rolling parts {indices[i - 1]} and {indices[i]} are not "
                                "consecutive: events in between are missing")
    for _, _, m, p in parts:
        layout.parts.append(LogPart(p, CODEC_SUFFIXES.get(m.group("codec") or "")))
        layout.app_id_hint = m.group("app")
    status = [p.name for p in entries if p.name.startswith("appstatus_")]
    layout.in_progress = any(n.endswith(".inprogress") for n in status) or not status
    if not status:
        layout.notes.append("no appstatus_ marker file in the rolling log folder")
    return layout


def _legacy_layout(path, entries, legacy) -> LogLayout:
    codec = None
    layout = LogLayout(path, [], "legacy-dir", app_id_hint=path.name)
    for p in entries:
        if p.name.startswith("SPARK_VERSION_"):
            layout.version_hint = p.name[len("SPARK_VERSION_"):]
        elif p.name.startswith("COMPRESSION_CODEC_"):
            named = p.name[len("COMPRESSION_CODEC_"):]
            codec = _CODEC_CLASSES.get(named.lower(), named.lower())
            if codec not in ("lz4", "snappy", "zstd", "lzf"):
                raise ParseError(f"unknown compression codec {named!r}", path=p,
                                 expected="lz4, snappy, zstd or lzf")
    layout.in_progress = not (path / "APPLICATION_COMPLETE").exists()
    layout.parts = [LogPart(p, codec) for _, p in sorted(legacy)]
    return layout


# --- decompression -------------------------------------------------------------------------

class CodecError(Exception):
    """A compressed stream is corrupt (raised inside read, turned into ParseError)."""


class _CountingFile(io.RawIOBase):
    """The raw file, counting bytes read (for the progress bar)."""

    def __init__(self, handle, on_read=None):
        self._handle = handle
        self._on_read = on_read

    def readable(self):
        return True

    def readinto(self, buffer):
        n = self._handle.readinto(buffer)
        if n and self._on_read:
            self._on_read(n)
        return n

    def close(self):
        self._handle.close()
        super().close()


class _BlockStream(io.RawIOBase):
    """A raw stream built from a sequence of decompressed blocks."""

    def __init__(self, raw):
        self._raw = raw
        self._pending = memoryview(b"")
        self._done = False
        self.truncated = False      # the stream ended inside a block
        self.offset = 0             # compressed bytes consumed

    def readable(self):
        return True

    def _read_exact(self, n: int) -> bytes:
        chunks, need = [], n
        while need:
            chunk = self._raw.read(need)
            if not chunk:
                break
            chunks.append(chunk)
            need -= len(chunk)
        data = b"".join(chunks)
        self.offset += len(data)
        return data

    def _next_block(self) -> bytes | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def readinto(self, buffer):
        while not self._pending and not self._done:
            block = self._next_block()
            if block is None:
                self._done = True
            else:
                self._pending = memoryview(block)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self):
        self._raw.close()
        super().close()


class Lz4BlockStream(_BlockStream):
    """lz4-java's ``LZ4BlockOutputStream`` framing, as Spark's LZ4 codec writes it.

    Each block: ``LZ4Block`` magic, a token byte (method in the high nibble:
    0x10 raw, 0x20 LZ4; level in the low nibble), compressed length,
    decompressed length and an xxhash32 checksum, all 32-bit little-endian,
    then the data.  A block with both lengths 0 ends one stream; another may
    follow.  The checksum is not verified (no xxhash in our dependencies); a
    corrupt block still fails LZ4 decoding or the length check.
    """

    _HEADER = struct.Struct("<8sBiii")

    def _next_block(self):
        import lz4.block

        while True:
            start = self.offset
            header = self._read_exact(self._HEADER.size)
            if not header:
                return None
            if len(header) < self._HEADER.size:
                if not _LZ4_MAGIC.startswith(header[:8]):
                    raise CodecError(f"bad LZ4 block header at byte {start}")
                self.truncated = True
                return None
            magic, token, clen, dlen, _checksum = self._HEADER.unpack(header)
            method = token & 0xF0
            if magic != _LZ4_MAGIC or method not in (0x10, 0x20) or not (
                    0 <= clen <= (1 << 27) and 0 <= dlen <= (1 << 26)):
                raise CodecError(f"bad LZ4 block header at byte {start}")
            if dlen == 0 and clen == 0:
                continue                      # end of one stream; maybe another follows
            data = self._read_exact(clen)
            if len(data) < clen:
                self.truncated = True
                return None
            if method == 0x10:
                if clen != dlen:
                    raise CodecError(f"bad raw LZ4 block at byte {start}")
                return data
            try:
                block = lz4.block.decompress(data, uncompressed_size=dlen)
            except Exception as exc:  # lz4.block.LZ4BlockError
                raise CodecError(f"corrupt LZ4 block at byte {start}: {exc}") from exc
            if len(block) != dlen:
                raise CodecError(f"corrupt LZ4 block at byte {start}: "
                                 f"{len(block)} bytes, header says {dlen}")
            return block


class XerialSnappyStream(_BlockStream):
    """snappy-java's ``SnappyOutputStream`` framing, as Spark's snappy codec writes it.

    A 16-byte header (``\\x82SNAPPY\\x00``, version and compatible version as
    32-bit big-endian ints), then blocks of a 32-bit big-endian length and a
    raw snappy block.  Concatenated streams (the header again) are accepted.
    """

    def _next_block(self):
        import snappy

        while True:
            start = self.offset
            size = self._read_exact(4)
            if not size:
                return None
            if len(size) < 4:
                self.truncated = True
                return None
            if size == _XERIAL_SNAPPY_MAGIC[:4]:
                rest = self._read_exact(12)
                if len(rest) < 12:
                    self.truncated = True
                    return None
                if size + rest[:4] != _XERIAL_SNAPPY_MAGIC:
                    raise CodecError(f"bad snappy stream header at byte {start}")
                continue
            (clen,) = struct.unpack(">i", size)
            if not 0 <= clen <= (1 << 27):
                raise CodecError(f"bad snappy block length {clen} at byte {start}")
            data = self._read_exact(clen)
            if len(data) < clen:
                self.truncated = True
                return None
            try:
                return snappy.uncompress(data)
            except Exception as exc:  # snappy.UncompressError
                raise CodecError(f"corrupt snappy block at byte {start}: {exc}") from exc


class FramedSnappyStream(_BlockStream):
    """The snappy framing format (``\\xff\\x06\\x00\\x00sNaPpY`` chunks)."""

    def __init__(self, raw):
        super().__init__(raw)
        import snappy

        self._decompressor = snappy.StreamDecompressor()

    def _next_block(self):
        while True:
            data = self._read_exact(CHUNK_BYTES)
            if not data:
                return None
            try:
                out = self._decompressor.decompress(data)
            except Exception as exc:
                raise CodecError(f"corrupt snappy frame near byte {self.offset}: {exc}") from exc
            if out:
                return out


class ZstdStream(_BlockStream):
    """zstd frames (one or more).  A frame cut short yields what it holds."""

    def __init__(self, raw):
        super().__init__(raw)
        import zstandard

        self._error = zstandard.ZstdError
        self._reader = zstandard.ZstdDecompressor().stream_reader(
            raw, read_across_frames=True, closefd=False)

    def _next_block(self):
        try:
            data = self._reader.read(CHUNK_BYTES)
        except self._error as exc:
            raise CodecError(f"corrupt zstd data: {exc}") from exc
        return data or None


def open_part(part: LogPart, on_read=None):
    """A binary stream of the part's decompressed text, and the codec it used."""
    handle = open(part.path, "rb")  # noqa: SIM115 - closed by the caller
    try:
        head = handle.peek(16)[:16] if hasattr(handle, "peek") else b""
        sniffed = sniff_codec(head)
        if part.codec == "lzf" or (sniffed is None and head.startswith(_LZF_MAGIC)
                                   and part.codec):
            raise ParseError("LZF-compressed event logs are not supported", path=part.path,
                             expected="plain, lz4, snappy or zstd")
        if part.codec and sniffed is None and head:
            raise ParseError(f"file name says {part.codec} but the data is not "
                             f"{part.codec}-compressed", path=part.path, line=1,
                             expected=f"a {part.codec} stream", snippet=_text(head))
        raw = _CountingFile(handle, on_read)
        if sniffed == "lz4":
            return Lz4BlockStream(raw), sniffed
        if sniffed == "snappy":
            if head.startswith(_FRAMED_SNAPPY_MAGIC):
                return FramedSnappyStream(raw), sniffed
            return XerialSnappyStream(raw), sniffed
        if sniffed == "zstd":
            return ZstdStream(raw), sniffed
        return raw, None
    except BaseException:
        handle.close()
        raise


def _text(data: bytes) -> str:
    return data[:80].decode("utf-8", errors="replace")


def iter_lines(stream, path, *, max_line_bytes: int = MAX_LINE_BYTES, expect: bytes = b"",
               expected: str | None = None):
    """Yield ``(line_number, line_bytes, ended_with_newline)`` from a binary stream.

    With ``expect``, the first non-blank byte of the stream (after a UTF-8 BOM)
    must be one of those bytes, checked before any long line is gathered, so a
    binary file fails at once.
    """
    lineno = 0
    rest = b""
    checking = bool(expect)
    while True:
        try:
            chunk = stream.read(CHUNK_BYTES)
        except CodecError as exc:
            raise ParseError(str(exc), path=path, line=lineno + 1,
                             expected="an intact compressed stream") from exc
        if not chunk:
            break
        data = rest + chunk if rest else chunk
        if checking:
            if lineno == 0 and data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
            body = data.lstrip(b" \t\r\n")
            if body:
                checking = False
                if body[:1] not in expect:
                    skipped = data[: len(data) - len(body)]
                    raise ParseError("not a Spark event log", path=path,
                                     line=lineno + skipped.count(b"\n") + 1,
                                     expected=expected, snippet=_text(body.split(b"\n")[0]))
        lines = data.split(b"\n")
        rest = lines.pop()
        for line in lines:
            lineno += 1
            yield lineno, line, True
        if len(rest) > max_line_bytes:
            raise ParseError(f"line longer than {max_line_bytes} bytes", path=path,
                             line=lineno + 1, expected="one JSON event per line",
                             snippet=_text(rest))
    if rest:
        yield lineno + 1, rest, False
