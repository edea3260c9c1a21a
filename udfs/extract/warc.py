"""WARC/ARC records → documents, one streamed file at a time.

Every record ends in exactly one outcome: a kept document, a rejected response (with the reason,
e.g. ``revisit`` or ``non_html``), a skipped non-response record (counted per file and reason, not
written row by row), or an error. A corrupt file yields the records before the damage plus one
``corrupt_file`` error row naming the byte offset; the record the damage lies in is that error, never a
kept or rejected row (a record counts only once the reader has passed its end intact). A file that
cannot be read at all (``UnreadableInput`` from ``corpusmill.storage.open_uri``, which retries
transient failures, or an ``OSError`` opening it) is no corrupt file: it stops the reader, and the stage.

Untrusted input costs bounded memory: header lines and blocks are capped at ``max_header_bytes``
(warcio alone reads a line until its newline, however far: a gzip bomb of zeros grew a worker past 20
GB), a record declaring more than ``max_record_bytes`` ends the file as an ``oversized_record`` error
instead of being decompressed, each buffer warcio inflates is one 16 KiB block of input (at most ~16
MiB out, zlib's ratio being 1032:1), and payloads are inflated to ``max_payload_bytes`` at most.
Error messages hold no bytes of the file.

``.warc``/``.warc.gz`` files are read first with FastWARC (Rust; less than half warcio's CPU per
record), which the reader checks as it goes: every record's payload is read to its Content-Length,
each record lies in one gzip member of its own, the last member is whole and nothing follows it.
FastWARC itself takes a record cut short, a member cut inside its deflate end or trailer, or a record
spilling into the next member for good records, and does not undo chunking or Content-Encoding (that
stays ``read_payload``'s, bounded, on FastWARC's raw payload). At the first thing it cannot vouch for
(or any error), the file is read again from its start by the checked warcio path below, which gives
the rows, offsets and error of the bounded reader; rows given already are not given twice. ARC files
(which FastWARC does not read) always take the warcio path.
"""
from __future__ import annotations

import gzip
import hashlib
import re
import zlib
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import BinaryIO, Callable, Iterator, List, Optional
from urllib.parse import urlsplit

from fastwarc.stream_io import GzipReader
from fastwarc.warc import ArchiveIterator as FastArchiveIterator
from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import ChunkedDataReader, DecompressingBufferedReader
from warcio.exceptions import ArchiveLoadFailed
from warcio.limitreader import LimitReader
from warcio.utils import BUFF_SIZE

from corpusmill.config import ConfigError, defaults_from_yaml
from corpusmill.storage import Retry, UnreadableInput
from udfs.extract._page_walk import TooDeep
from udfs.extract.html import CharsetMismatch, charset_from_content_type, decode_html, extract_main_text
from udfs.extract.text import normalize_text
from udfs.extract.url_filter import UrlFilter, UrlFilterConfig

EXTRACTORS = ("resiliparse", "trafilatura")


@dataclass(frozen=True)
@defaults_from_yaml("extract")
class ExtractConfig:
    # resiliparse's main-content rules in one compiled walk over lexbor's DOM (udfs/extract/_page_walk.pyx) with the
    # boilerplate passes; "trafilatura" for comparison (bench/quality/extraction_quality.py scores both).
    extractor: str
    boilerplate_filter: bool
    html_mime_types: List[str]
    # Responses above this payload size are rejected as oversized (never read into memory).
    max_payload_bytes: int
    # A record declaring a larger Content-Length ends its file as an oversized_record error: skipping
    # it would mean decompressing all of it, and a gzip bomb's declared size is whatever it likes.
    max_record_bytes: int
    # Most bytes of header lines read back to back (WARC and HTTP headers of one record, blank lines
    # between records); more is a corrupt_file error. Real headers stay far below (tens of KB at most).
    max_header_bytes: int
    # Documents with fewer characters after extraction and normalisation are rejected as no_text.
    min_text_chars: int
    # Block-listed domains and banned URL words: rejected before the payload is read (udfs/extract/url_filter.py).
    url_filter: UrlFilterConfig
    # A read that fails for a transient reason (network, throttling) is tried again this many times,
    # waiting read_backoff_s, then twice as long each time; then the stage stops naming the file.
    read_retries: int
    read_backoff_s: float

    def validate(self, prefix: str) -> None:
        if self.extractor not in EXTRACTORS:
            raise ConfigError(f"{prefix}.extractor: must be one of {', '.join(EXTRACTORS)}, got {self.extractor!r}")
        for name in ("max_payload_bytes", "max_record_bytes", "max_header_bytes"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{prefix}.{name}: must be positive, got {getattr(self, name)}")
        if self.max_record_bytes < self.max_payload_bytes:
            raise ConfigError(f"{prefix}.max_record_bytes: must be at least max_payload_bytes "
                              f"({self.max_payload_bytes}), got {self.max_record_bytes}")
        if self.read_retries < 0 or self.read_backoff_s < 0:
            raise ConfigError(f"{prefix}.read_retries, read_backoff_s: must be >= 0, got "
                              f"{self.read_retries}, {self.read_backoff_s}")
        if self.max_header_bytes < 1024:
            raise ConfigError(f"{prefix}.max_header_bytes: must be at least 1024, got {self.max_header_bytes}")


def document_id(source: str, record_id: Optional[str], offset: int, url: str) -> str:
    """Deterministic id: from the WARC-Record-ID, or for ARC (which has none) from file, offset, URL."""
    key = record_id if record_id else f"{source.rsplit('/', 1)[-1]}:{offset}:{url}"
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:32]


def in_sample(doc_id: str, fraction: Optional[float]) -> bool:
    """Deterministic sample by id hash: the same records are chosen on every run."""
    return fraction is None or int(doc_id[:8], 16) < fraction * 0x1_0000_0000


def _parse_date(value: Optional[str]) -> Optional[datetime]:
    if not value:
        return None
    for fmt in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ", "%Y%m%d%H%M%S"):
        try:
            return datetime.strptime(value.strip(), fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    return None


def _base_row(source: str) -> dict:
    return {"id": None, "url": None, "host": None, "crawl_date": None, "source": source, "text": None,
            "content_length": None, "charset": None, "record_offset": None, "_outcome": None,
            "reject_rule": None, "reject_value": None, "error": None, "_count": 1}


class DamagedArchive(Exception):
    """The file cannot be read past this point. The message is ours: it never quotes the file."""

    reason = "corrupt_file"


class RecordTooLarge(DamagedArchive):
    """A record declares more than ``max_record_bytes``: reading past it would cost all of it."""

    reason = "oversized_record"


class _BoundedReader(DecompressingBufferedReader):
    """warcio's buffered reader with limits. Lines read back to back may total ``max_header_bytes``
    (``read`` and each new record start a new allowance): warcio reads a line until its newline,
    however far. Undecodable gzip raises instead of being dropped (warcio writes the zlib error to
    stderr and carries on as if the member had ended), and ``input_ended`` tells a member cut short
    from one still being read."""

    def __init__(self, stream, max_header_bytes: int, require_gzip: bool):
        super().__init__(stream)
        self.max_header_bytes = max_header_bytes
        self.header_bytes_left = max_header_bytes
        self.require_gzip = require_gzip
        self.input_ended = False

    def read(self, length=None):
        self.header_bytes_left = self.max_header_bytes
        return super().read(length)

    def readline(self, length=None):
        wanted = float("inf") if length is None else length
        allowed = min(wanted, self.header_bytes_left)
        parts, size = [], 0
        # warcio's readline(n) may stop short of n without a newline (it subtracts the running total
        # at each block), so ask again until the line ends, the allowance is spent or the data is.
        while size < allowed:
            part = super().readline(allowed - size)
            if not part:
                break
            parts.append(part)
            size += len(part)
            if part.endswith(b"\n"):
                break
        line = b"".join(parts)
        self.header_bytes_left -= size
        if not line.endswith(b"\n"):
            if size == allowed < wanted:
                raise DamagedArchive(f"header lines longer than max_header_bytes ({self.max_header_bytes})")
            if self.input_ended and line.strip():
                raise DamagedArchive("file ends inside a header line")
        return line

    def _process_read(self, data):
        if not data:
            self.input_ended = True
        super()._process_read(data)

    def _decompress(self, data):
        if self.decompressor is None or not data:
            return data
        try:
            return self.decompressor.decompress(data)
        except zlib.error:
            if self.num_read == 0 and not self.require_gzip:  # first bytes of the file: a plain WARC/ARC
                self.decompressor = None
                return data
            raise DamagedArchive("not gzip data" if self.num_read == 0 else "invalid gzip data") from None


class _BoundedArchiveIterator(ArchiveIterator):
    """warcio's iterator over a ``_BoundedReader``, parsing only the format the file name says, and
    checking each record as it moves past it: a record shorter than its Content-Length or a gzip
    member the file cuts short raises ``DamagedArchive`` with ``offset`` still at that record."""

    # warcio's warning quotes the unexpected line; ours gives only where it is.
    INC_RECORD = "WARNING: record not followed by a blank line (wrong Content-Length?) at offset {0}\n"

    def __init__(self, stream, fmt: str, cfg: ExtractConfig, require_gzip: bool):
        super().__init__(stream, arc2warc=True)
        self.reader = _BoundedReader(self.fh, cfg.max_header_bytes, require_gzip)
        self.known_format = fmt  # never guess ARC inside a WARC: any line with four spaces parses as one
        self.max_record_bytes = cfg.max_record_bytes

    def _next_record(self, next_line):
        self.reader.header_bytes_left = self.reader.max_header_bytes
        record = super()._next_record(next_line)
        if record.length is None:
            raise DamagedArchive("file ends inside a record header" if self.reader.input_ended
                                 else "record without Content-Length")
        if record.length > self.max_record_bytes:
            raise RecordTooLarge(f"record declares {record.length} bytes, above max_record_bytes "
                                 f"({self.max_record_bytes}); the rest of the file is not read")
        return record

    def read_to_end(self, record=None):
        finishing = self.record is not None and self.member_info is None
        start = self.offset
        super().read_to_end(record)
        if not finishing:
            return
        decompressor = self.reader.decompressor
        if isinstance(self.record.raw_stream, LimitReader) and self.record.raw_stream.limit > 0:
            problem = ("file ends inside a record" if self.reader.input_ended
                       else "record shorter than its Content-Length: its gzip member ends first")
        elif decompressor is not None and not decompressor.eof and self.reader.input_ended:
            problem = "file ends inside a gzip member"
        else:
            return
        self.offset = start
        raise DamagedArchive(problem)


class _CheckedGzipFile(gzip.GzipFile):
    """gzip.GzipFile for warcio at a cut-off end. ``read`` is ``read1``: GzipFile.read(n) drops the bytes
    it had inflated when it meets the cut. And the cut raises DamagedArchive: warcio takes an EOFError
    raised while it parses a record's headers for the end of the records, and would stop silently."""

    def read(self, size=-1):
        try:
            return super().read1(size)
        except EOFError:
            raise DamagedArchive("file ends inside a gzip member") from None


class _ReadAgain(Exception):
    """This way of reading the file gives up: the next one reads it from the start."""


class _WholeFileGzip(_ReadAgain):
    """One gzip member holds many records: warcio gives up after the first."""


class _NotVouched(_ReadAgain):
    """The FastWARC pass met something its checks do not cover; the checked warcio path decides."""


# What reading a damaged file raises: ours, warcio's, and the decoders' (gzip module, zlib).
READ_ERRORS = (DamagedArchive, ArchiveLoadFailed, OSError, EOFError, ValueError, zlib.error)


def _describe(exc: BaseException) -> str:
    """Type and a message that holds no bytes of the file: ours, or the library's own wording up to
    the first comma or colon (after it warcio quotes the offending line)."""
    if isinstance(exc, DamagedArchive):
        return f"{type(exc).__name__}: {exc}"
    if isinstance(exc, (ArchiveLoadFailed, EOFError, zlib.error)):
        return f"{type(exc).__name__}: {re.split('[,:]', str(exc).strip(), 1)[0][:120]}"
    return type(exc).__name__


def _inflate(stream, wbits_to_try, limit: int) -> bytes:
    """A gzip/deflate payload inflated to ``limit`` bytes at most. Like warcio: data that does not
    inflate from its first block is passed through as it is, damage later keeps what came before."""
    head = stream.read(BUFF_SIZE)
    for wbits in wbits_to_try:
        inflater = zlib.decompressobj(wbits)
        try:
            parts = [inflater.decompress(head, limit)]
            break
        except zlib.error:
            continue
    else:
        return head[:limit] + stream.read(max(limit - len(head), 0))
    size, data = len(parts[0]), inflater.unconsumed_tail
    while size < limit and not inflater.eof:
        data = data or stream.read(BUFF_SIZE)
        if not data:
            break
        try:
            parts.append(inflater.decompress(data, limit - size))
        except zlib.error:
            break
        size, data = size + len(parts[-1]), inflater.unconsumed_tail
    return b"".join(parts)


# Content-Encodings decoded, as warcio's content_stream() does (brotli only if installed: not here).
_INFLATE_WBITS = {"gzip": (16 + zlib.MAX_WBITS,), "deflate": (zlib.MAX_WBITS, -zlib.MAX_WBITS)}


def read_payload(record, limit: int) -> bytes:
    """The HTTP payload as warcio's ``content_stream()`` gives it (de-chunked, gzip/deflate decoded),
    but at most ``limit`` bytes: warcio inflates each chunk whole, whatever it expands to."""
    stream = record.raw_stream
    if record.http_headers.get_header("transfer-encoding") == "chunked":
        stream = ChunkedDataReader(stream)
    wbits = _INFLATE_WBITS.get((record.http_headers.get_header("content-encoding") or "").lower())
    return _inflate(stream, wbits, limit) if wbits else stream.read(limit)


class _FastHeaders:
    """FastWARC's header map with the two calls of warcio's that ``_outcome``/``_judge`` make, and
    the WARC-Target-URI as warcio gives it (``<…>`` unwrapped, spaces as %20)."""

    __slots__ = ("headers",)

    def __init__(self, headers):
        self.headers = headers

    def get_header(self, name: str) -> Optional[str]:
        value = self.headers.get(name)
        if value is not None and name == "WARC-Target-URI":
            if value.startswith("<") and value.endswith(">"):
                value = value[1:-1]
            value = value.replace(" ", "%20")
        return value

    def get_statuscode(self) -> Optional[str]:
        code = self.headers.status_code
        return None if code is None else str(code)


class _CountingPayload:
    """A FastWARC payload reader that counts what is read, so the reader can check it got all of it."""

    __slots__ = ("reader", "count")

    def __init__(self, reader):
        self.reader, self.count = reader, 0

    def read(self, size: int = -1) -> bytes:
        data = self.reader.read(size)
        self.count += len(data)
        return data

    def readline(self, size: int = -1) -> bytes:  # chunk-size lines: ChunkedDataReader asks for 64 bytes
        line = self.reader.readline(size if size > 0 else BUFF_SIZE)
        self.count += len(line)
        return line

    def finish(self) -> int:
        """Skip the rest; the payload bytes the record had."""
        self.count += self.reader.consume()
        return self.count


class _FastRecord:
    """A FastWARC record with the attributes of a warcio record that ``_outcome``/``_judge`` read."""

    __slots__ = ("rec_type", "rec_headers", "http_headers", "payload_length", "raw_stream")

    def __init__(self, record):
        self.rec_headers = _FastHeaders(record.headers)
        self.rec_type = record.headers.get("WARC-Type")
        self.http_headers = _FastHeaders(record.http_headers) if record.is_http else None
        self.payload_length = record.content_length
        self.raw_stream = _CountingPayload(record.reader)


class _TailKeepingStream:
    """The input as FastWARC reads it, keeping its last ``TAIL_BYTES``: FastWARC takes a last gzip
    member cut inside its deflate end or its trailer for a whole one, so the reader inflates that
    member again from here (a last member larger than the tail is not vouched for)."""

    TAIL_BYTES = 1 << 20

    def __init__(self, stream):
        self.stream = stream
        self.size = 0
        self.chunks: List[bytes] = []
        self.kept = 0

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.size += len(data)
        self.chunks.append(data)
        self.kept += len(data)
        while self.kept - len(self.chunks[0]) >= self.TAIL_BYTES:
            self.kept -= len(self.chunks.pop(0))
        return data

    def tell(self) -> int:
        return self.size

    def ends_with_whole_member(self, start: int) -> bool:
        """Whether the bytes from ``start`` to the end are exactly one whole gzip member."""
        first = self.size - self.kept
        if start < first:
            return False
        data = b"".join(self.chunks)[start - first:]
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            while data and not inflater.eof:
                inflater.decompress(data, BUFF_SIZE)
                data = inflater.unconsumed_tail
        except zlib.error:
            return False
        return inflater.eof and not inflater.unused_data


class WarcDocumentReader:
    """Turns the records of one WARC/ARC stream into outcome rows (dicts matching ``EXTRACT_SCHEMA``)."""

    def __init__(self, cfg: ExtractConfig, sample_fraction: Optional[float] = None):
        self.cfg = cfg
        self.retry = Retry(cfg.read_retries, cfg.read_backoff_s)
        self.sample_fraction = sample_fraction
        self.max_record_bytes = cfg.max_record_bytes
        self.mime_types = tuple(m.lower() for m in cfg.html_mime_types)
        self.url_filter = UrlFilter(cfg.url_filter)

    def read(self, source: str, open_stream: Callable[[], BinaryIO]) -> Iterator[dict]:
        name = source.lower().rstrip("/")
        fmt = "arc" if name.endswith((".arc", ".arc.gz")) else "warc"
        gzipped = name.endswith(".gz")
        passes = [self._warcio_pass, self._whole_file_gzip_pass]
        if fmt == "warc":
            passes.insert(0, self._fastwarc_pass)
        skipped: Counter = Counter()
        given = 0  # rows given by an earlier pass: each pass gives the same rows up to where it gave up
        for read_pass in passes:
            skipped.clear()
            try:
                for index, row in enumerate(read_pass(source, open_stream, fmt, gzipped, skipped)):
                    if index >= given:
                        given += 1
                        yield row
                break
            except _ReadAgain:
                continue
        yield from self._skipped_rows(source, skipped)

    def _fastwarc_pass(self, source, open_stream, fmt, gzipped, skipped: Counter) -> Iterator[dict]:
        try:
            with open_stream() as stream:
                yield from self._fast_rows(source, stream, gzipped, skipped)
        except READ_ERRORS:  # FastWARC's errors are OSErrors; the warcio path words and places them
            raise _NotVouched() from None

    def _warcio_pass(self, source, open_stream, fmt, gzipped, skipped: Counter) -> Iterator[dict]:
        try:
            stream = open_stream()
        except OSError as exc:  # a file that cannot be opened is not a corrupt one: the stage stops
            raise UnreadableInput(f"{source}: cannot be opened: {_describe(exc)}") from None
        with stream:
            yield from self._rows(source, stream, fmt, gzipped, skipped)

    def _whole_file_gzip_pass(self, source, open_stream, fmt, gzipped, skipped: Counter) -> Iterator[dict]:
        """Whole-file gzip (not one member per record): the file through one decompressor."""
        with open_stream() as raw, _CheckedGzipFile(fileobj=raw) as stream:
            yield from self._rows(source, stream, fmt, False, skipped)

    def _fast_rows(self, source: str, stream: BinaryIO, gzipped: bool, skipped: Counter) -> Iterator[dict]:
        """Outcome rows read with FastWARC, each given once the next record has started cleanly (or the
        file ended cleanly); raises ``_NotVouched`` where the checks in the module docstring fail."""
        raw = _TailKeepingStream(stream)
        source_stream = GzipReader(raw) if gzipped else raw
        records = FastArchiveIterator(source_stream, parse_http=True, max_header_len=self.cfg.max_header_bytes,
                                      stream_detect=False, strict_mode=True)
        pending = None  # (offset, row or skip reason) of the record read last
        for record in records:
            offset = source_stream.frame_start_position() if gzipped else record.stream_pos
            if pending is not None:
                if offset == pending[0]:  # two records in one gzip member
                    raise _NotVouched()
                yield from self._settle(pending[1], skipped)
            declared = record.headers.get("Content-Length") or ""
            if not declared.isdigit() or int(declared) > self.max_record_bytes:
                raise _NotVouched()
            view = _FastRecord(record)
            outcome = self._outcome(source, view, "warc", offset)
            if view.raw_stream.finish() != record.content_length:  # the file ends inside the record
                raise _NotVouched()
            if gzipped and source_stream.frame_start_position() != offset:  # it spills into the next member
                raise _NotVouched()
            pending = (offset, outcome)
        if raw.read(1) or (gzipped and pending is not None and not raw.ends_with_whole_member(pending[0])):
            raise _NotVouched()
        if pending is not None:
            yield from self._settle(pending[1], skipped)

    def _rows(self, source: str, stream: BinaryIO, fmt: str, require_gzip: bool, skipped: Counter) -> Iterator[dict]:
        """Outcome rows, each given once the reader has moved past its record intact; the record the
        damage is found in becomes the error row instead."""
        records = _BoundedArchiveIterator(stream, fmt, self.cfg, require_gzip)
        pending = None  # (offset, row or skip reason) of the record read last
        try:
            for record in records:
                if pending is not None:
                    yield from self._settle(pending[1], skipped)
                pending = (records.offset, self._outcome(source, record, fmt, records.offset))
        except READ_ERRORS as exc:
            if pending is not None and records.offset != pending[0]:  # the damage lies after that record
                yield from self._settle(pending[1], skipped)
            if isinstance(exc, ArchiveLoadFailed) and "non-chunked gzip" in str(exc):
                raise _WholeFileGzip() from None
            yield self._corrupt(source, exc, records.offset)
            return
        if pending is not None:
            yield from self._settle(pending[1], skipped)

    @staticmethod
    def _settle(outcome, skipped: Counter) -> Iterator[dict]:
        if isinstance(outcome, str):
            skipped[outcome] += 1
        else:
            yield outcome

    def _corrupt(self, source: str, exc: BaseException, offset: int) -> dict:
        row = _base_row(source)
        row.update(id=document_id(source, None, -1, "corrupt"), _outcome="error",
                   error=getattr(exc, "reason", "corrupt_file"), record_offset=offset, reject_value=_describe(exc))
        return row

    def _skipped_rows(self, source: str, skipped: Counter) -> Iterator[dict]:
        for reason, count in sorted(skipped.items()):
            row = _base_row(source)
            row.update(id=document_id(source, None, -1, reason), _outcome="skipped", reject_rule=reason,
                       _count=count)
            yield row

    def _outcome(self, source: str, record, fmt: str, offset: int):
        """The row for one record, or the reason it is skipped (counted, not written)."""
        if record.rec_type not in ("response", "revisit"):
            return f"record_type:{record.rec_type}"
        url = record.rec_headers.get_header("WARC-Target-URI") or ""
        record_id = None if fmt == "arc" else record.rec_headers.get_header("WARC-Record-ID")
        doc_id = document_id(source, record_id, offset, url)
        if not in_sample(doc_id, self.sample_fraction):
            return "not_sampled"
        row = _base_row(source)
        row.update(id=doc_id, url=url, host=(urlsplit(url).hostname or "") if url else None,
                   crawl_date=_parse_date(record.rec_headers.get_header("WARC-Date")), record_offset=offset)
        self._judge(record, row)
        return row

    def _judge(self, record, row: dict) -> None:
        """Fill ``row`` with the document, or with the reason this response is not one."""
        def reject(reason: str, value=None) -> None:
            row.update(_outcome="rejected", reject_rule=reason, reject_value=None if value is None else str(value))

        if record.rec_type == "revisit":
            return reject("revisit")
        http = record.http_headers
        if http is None:
            return reject("no_http_headers")
        status = http.get_statuscode()
        if status != "200":
            return reject("http_status", status)
        content_type = (http.get_header("Content-Type") or "").lower()
        if not content_type.split(";")[0].strip().startswith(self.mime_types):
            return reject("non_html", content_type.split(";")[0].strip() or "missing")
        blocked = self.url_filter.verdict(row["url"])
        if blocked:  # before any text work: the payload is not even read
            return reject(*blocked)
        if record.payload_length > self.cfg.max_payload_bytes:  # known before reading: see read_payload
            row["content_length"] = record.payload_length
            return reject("oversized", f">{self.cfg.max_payload_bytes}")
        payload = read_payload(record, self.cfg.max_payload_bytes + 1)
        row["content_length"] = len(payload)
        if len(payload) > self.cfg.max_payload_bytes:
            return reject("oversized", f">{self.cfg.max_payload_bytes}")
        if not payload.strip():
            return reject("empty_payload")
        try:
            html, codec = decode_html(payload, charset_from_content_type(content_type))
        except CharsetMismatch as exc:  # never kept as mojibake
            return reject("charset_mismatch", exc)
        if html is None:
            return reject("undecodable")
        row["charset"] = codec
        try:
            text = normalize_text(extract_main_text(html, self.cfg.extractor, self.cfg.boilerplate_filter))
        except TooDeep as exc:  # turned down before parsing: a hostile page's parse costs seconds to hours
            return reject("too_deep", exc.depth)
        except Exception as exc:  # a parser bug on one page must not stop the file
            row.update(_outcome="error", error="extract_failed", reject_value=type(exc).__name__)
            return
        if len(text) < self.cfg.min_text_chars:
            return reject("no_text", len(text))
        row.update(_outcome="kept", text=text)

