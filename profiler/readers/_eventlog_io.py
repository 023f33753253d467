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

Both readers use this module: the batch reader (``read_eventlog``) opens each
part as one stream (:func:`open_part`), the live tail
(``jobgauge.profiler.readers.live.EventLogTail``) reads a part that is still growing,
a few appended bytes at a time (:class:`GrowingPart`).  Each codec is one
incremental decoder (``feed(bytes) -> bytes``) that both share.
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
    marked: bool = True              # False: no file name says whether it still runs
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
        raise ParseError("folder holds no Spark event log files: the rolling log folder "
                         "holds no events_<n>_<app> files", path=path,
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
        layout.marked = False
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
#
# Each codec is an incremental decoder: ``feed(compressed bytes) -> text bytes``, in pieces
# of any size, as they are read from a finished file or as a growing file gets them.  The
# batch reader wraps one in a stream (``open_part``); the live tail (``GrowingPart``) feeds
# it what was appended since its last read.

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


class PlainDecoder:
    """Uncompressed text: bytes pass through."""

    truncated = False

    def feed(self, data: bytes) -> bytes:
        return data


class _BlockDecoder:
    """Streams of length-prefixed blocks: gathers bytes until a block is whole.

    ``offset`` counts the compressed bytes of the blocks decoded so far, so an
    error names the byte its block starts at; ``truncated`` is true while the
    bytes fed end inside a block.
    """

    def __init__(self):
        self.offset = 0
        self._pending = b""

    @property
    def truncated(self) -> bool:
        return bool(self._pending)

    def feed(self, data: bytes) -> bytes:
        buffer = self._pending + data if self._pending else data
        view, at, out = memoryview(buffer), 0, []
        while True:
            block, used = self._next_block(view[at:], self.offset)
            if not used:
                break
            at += used
            self.offset += used
            if block:
                out.append(block)
        self._pending = bytes(view[at:])
        return b"".join(out)

    def _next_block(self, buf, start: int) -> tuple[bytes, int]:  # pragma: no cover
        """(text of the first block of ``buf``, bytes it used); (b"", 0) if it is not whole."""
        raise NotImplementedError


class Lz4Decoder(_BlockDecoder):
    """lz4-java's ``LZ4BlockOutputStream`` framing, as Spark's LZ4 codec writes it.

    Each block: ``LZ4Block`` magic, a token byte (method in the high nibble:
    0x10 raw, 0x20 LZ4; level in the low nibble), compressed length,
    decompressed length and an xxhash32 checksum, all 32-bit little-endian,
    then the data.  A block with both lengths 0 ends one stream; another may
    follow.  The checksum is not verified (no xxhash in our dependencies); a
    corrupt block still fails LZ4 decoding or the length check.
    """

    _HEADER = struct.Struct("<8sBiii")

    def _next_block(self, buf, start):
        if len(buf) < self._HEADER.size:
            if not _LZ4_MAGIC.startswith(bytes(buf[:8])):
                raise CodecError(f"bad LZ4 block header at byte {start}")
            return b"", 0
        magic, token, clen, dlen, _checksum = self._HEADER.unpack_from(buf)
        method = token & 0xF0
        if magic != _LZ4_MAGIC or method not in (0x10, 0x20) or not (
                0 <= clen <= (1 << 27) and 0 <= dlen <= (1 << 26)):
            raise CodecError(f"bad LZ4 block header at byte {start}")
        end = self._HEADER.size + clen
        if dlen == 0 and clen == 0:
            return b"", end                   # end of one stream; maybe another follows
        if len(buf) < end:
            return b"", 0
        data = bytes(buf[self._HEADER.size:end])
        if method == 0x10:
            if clen != dlen:
                raise CodecError(f"bad raw LZ4 block at byte {start}")
            return data, end
        import lz4.block

        try:
            block = lz4.block.decompress(data, uncompressed_size=dlen)
        except Exception as exc:  # lz4.block.LZ4BlockError
            raise CodecError(f"corrupt LZ4 block at byte {start}: {exc}") from exc
        if len(block) != dlen:
            raise CodecError(f"corrupt LZ4 block at byte {start}: "
                             f"{len(block)} bytes, header says {dlen}")
        return block, end


class XerialSnappyDecoder(_BlockDecoder):
    """snappy-java's ``SnappyOutputStream`` framing, as Spark's snappy codec writes it.

    A 16-byte header (``\\x82SNAPPY\\x00``, version and compatible version as
    32-bit big-endian ints), then blocks of a 32-bit big-endian length and a
    raw snappy block.  Concatenated streams (the header again) are accepted.
    """

    def _next_block(self, buf, start):
        if len(buf) < 4:
            return b"", 0
        if bytes(buf[:4]) == _XERIAL_SNAPPY_MAGIC[:4]:
            if len(buf) < 16:
                return b"", 0
            if bytes(buf[:8]) != _XERIAL_SNAPPY_MAGIC:
                raise CodecError(f"bad snappy stream header at byte {start}")
            return b"", 16
        (clen,) = struct.unpack_from(">i", buf)
        if not 0 <= clen <= (1 << 27):
            raise CodecError(f"bad snappy block length {clen} at byte {start}")
        if len(buf) < 4 + clen:
            return b"", 0
        import snappy

        try:
            return snappy.uncompress(bytes(buf[4:4 + clen])), 4 + clen
        except Exception as exc:  # snappy.UncompressError
            raise CodecError(f"corrupt snappy block at byte {start}: {exc}") from exc


class FramedSnappyDecoder:
    """The snappy framing format (``\\xff\\x06\\x00\\x00sNaPpY`` chunks)."""

    truncated = False

    def __init__(self):
        import snappy

        self._decompressor = snappy.StreamDecompressor()
        self.offset = 0

    def feed(self, data: bytes) -> bytes:
        try:
            out = self._decompressor.decompress(data)
        except Exception as exc:
            raise CodecError(f"corrupt snappy frame near byte {self.offset}: {exc}") from exc
        self.offset += len(data)
        return out


class ZstdDecoder:
    """zstd frames, one after another, as Spark's zstd codec writes them.

    A frame cut short (a log still being written) yields what it holds so far;
    the rest comes with the next bytes fed.
    """

    truncated = False

    def __init__(self):
        import zstandard

        self._factory = zstandard.ZstdDecompressor()
        self._error = zstandard.ZstdError
        self._frame = self._factory.decompressobj()

    def feed(self, data: bytes) -> bytes:
        out = []
        while data:
            try:
                out.append(self._frame.decompress(data))
            except self._error as exc:
                raise CodecError(f"corrupt zstd data: {exc}") from exc
            if not self._frame.eof:
                break
            data = self._frame.unused_data
            self._frame = self._factory.decompressobj()
        return b"".join(out)


HEAD_BYTES = 16          # enough to sniff every codec's magic


def new_decoder(part: LogPart, head: bytes):
    """The decoder for a part whose data starts with ``head``, and its codec name.

    The data decides (a name without a codec may hold compressed data); a name
    that promises a codec the data lacks, or LZF, is a :class:`ParseError`.
    """
    sniffed = sniff_codec(head)
    if part.codec == "lzf" or (sniffed is None and head.startswith(_LZF_MAGIC) and part.codec):
        raise ParseError("LZF-compressed event logs are not supported", path=part.path,
                         expected="plain, lz4, snappy or zstd (spark.eventLog.compression.codec)")
    if part.codec and sniffed is None and head:
        raise ParseError(f"bad {part.codec} data: the file name says {part.codec} but the "
                         f"data is not {part.codec}-compressed", path=part.path, line=1,
                         expected=f"a {part.codec} stream", snippet=_text(head))
    if sniffed == "lz4":
        return Lz4Decoder(), sniffed
    if sniffed == "snappy":
        if head.startswith(_FRAMED_SNAPPY_MAGIC):
            return FramedSnappyDecoder(), sniffed
        return XerialSnappyDecoder(), sniffed
    if sniffed == "zstd":
        return ZstdDecoder(), sniffed
    return PlainDecoder(), None


class DecodedStream(io.RawIOBase):
    """A readable stream of a decoder's output over a raw compressed stream."""

    def __init__(self, raw, decoder):
        self._raw = raw
        self._decoder = decoder
        self._pending = memoryview(b"")
        self._done = False

    @property
    def truncated(self) -> bool:
        """The stream ended inside a block."""
        return self._done and self._decoder.truncated

    def readable(self):
        return True

    def readinto(self, buffer):
        while not self._pending and not self._done:
            data = self._raw.read(CHUNK_BYTES)
            if not data:
                self._done = True
            else:
                self._pending = memoryview(self._decoder.feed(data))
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self):
        self._raw.close()
        super().close()


def open_part(part: LogPart, on_read=None):
    """A binary stream of the part's decompressed text, and the codec it used."""
    handle = open(part.path, "rb")  # noqa: SIM115 - closed by the caller
    try:
        head = handle.peek(HEAD_BYTES)[:HEAD_BYTES] if hasattr(handle, "peek") else b""
        decoder, codec = new_decoder(part, head)
        raw = _CountingFile(handle, on_read)
        return (raw if codec is None else DecodedStream(raw, decoder)), codec
    except BaseException:
        handle.close()
        raise


class GrowingPart:
    """One part of an event log that may still grow, read a bit at a time.

    Each :meth:`read_lines` reads the bytes appended since the last call,
    decodes them with the part's codec (chosen from its first bytes, as
    :func:`open_part` does) and returns the lines now complete, numbered from
    1; an unfinished last line waits for the next call, or for :meth:`rest`
    once the log is finished.  Spark renames ``<part>.inprogress`` to
    ``<part>`` when the application ends: the part follows the rename.
    """

    def __init__(self, part: LogPart):
        self.part = part
        self.offset = 0               # file bytes read
        self.line_no = 0              # lines returned
        self._decoder = None
        self._head = b""              # first bytes, until there are enough to sniff the codec
        self._partial = b""

    @property
    def path(self) -> Path:
        return self.part.path

    def _read_appended(self) -> bytes:
        for attempt in (0, 1):
            try:
                with open(self.part.path, "rb") as handle:
                    handle.seek(self.offset)
                    data = handle.read()
                break
            except FileNotFoundError:
                name, in_progress = _strip_inprogress(self.part.path.name)
                final = self.part.path.with_name(name)
                if attempt or not in_progress or not final.exists():
                    raise
                self.part = LogPart(final, self.part.codec)
        self.offset += len(data)
        return data

    def _decode(self, data: bytes, *, final: bool) -> bytes:
        if self._decoder is None:
            self._head += data
            if len(self._head) < HEAD_BYTES and not final:
                return b""
            data, self._head = self._head, b""
            self._decoder, _codec = new_decoder(self.part, data[:HEAD_BYTES])
        try:
            return self._decoder.feed(data)
        except CodecError as exc:
            raise ParseError(str(exc), path=self.part.path, line=self.line_no + 1,
                             expected="an intact compressed stream") from exc

    def read_lines(self, *, final: bool = False) -> list[tuple[int, bytes]]:
        """The lines completed since the last call, as ``(line number, bytes)``.

        ``final``: the file will not grow any more (decide its codec even
        from fewer bytes than a codec's magic).
        """
        text = self._decode(self._read_appended(), final=final)
        if not text:
            return []
        lines = (self._partial + text).split(b"\n")
        self._partial = lines.pop()
        if len(self._partial) > MAX_LINE_BYTES:
            raise ParseError(f"line longer than {MAX_LINE_BYTES} bytes", path=self.part.path,
                             line=self.line_no + 1, expected="one JSON event per line",
                             snippet=_text(self._partial))
        out = []
        for line in lines:
            self.line_no += 1
            out.append((self.line_no, line))
        return out

    def rest(self) -> tuple[int, bytes] | None:
        """The unfinished last line, once the log is finished (None if there is none)."""
        if not self._partial.strip():
            return None
        self.line_no += 1
        line, self._partial = self._partial, b""
        return self.line_no, line


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
