"""WARC/ARC records → documents, one streamed file at a time.

Every record ends in exactly one outcome: a kept document, a rejected response (with the reason,
e.g. ``revisit`` or ``non_html``), a skipped non-response record (counted per file and reason, not
written row by row), or an error. A corrupt file yields the records before the damage plus one
``corrupt_file`` error row naming the byte offset; the record the damage lies in is that error, never a
kept or rejected row (a record counts only once the reader has passed its end intact).

Untrusted input costs bounded memory: header lines and blocks are capped at ``max_header_bytes``
(warcio alone reads a line until its newline, however far: a gzip bomb of zeros grew a worker past 20
GB), a record declaring more than ``max_record_bytes`` ends the file as an ``oversized_record`` error
instead of being decompressed, each buffer warcio inflates is one 16 KiB block of input (at most ~16
MiB out, zlib's ratio being 1032:1), and payloads are inflated to ``max_payload_bytes`` at most.
Error messages hold no bytes of the file.
"""
from __future__ import annotations

import gzip
import hashlib
import re
import zlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import BinaryIO, Callable, Iterator, List, Optional
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import ChunkedDataReader, DecompressingBufferedReader
from warcio.exceptions import ArchiveLoadFailed
from warcio.limitreader import LimitReader
from warcio.utils import BUFF_SIZE

from udfs.config import ConfigError
from udfs.html import charset_from_content_type, decode_html, extract_main_text
from udfs.text import normalize_text
from udfs.url_filter import UrlFilter, UrlFilterConfig

EXTRACTORS = ("resiliparse", "trafilatura")


@dataclass(frozen=True)
class ExtractConfig:
    # resiliparse + boilerplate filter: ~5x less CPU than trafilatura, F1 0.898 vs 0.925 (bench/).
    extractor: str = "resiliparse"
    boilerplate_filter: bool = True
    html_mime_types: List[str] = field(default_factory=lambda: ["text/html", "application/xhtml+xml"])
    # Responses above this payload size are rejected as oversized (never read into memory).
    max_payload_bytes: int = 5_000_000
    # A record declaring a larger Content-Length ends its file as an oversized_record error: skipping
    # it would mean decompressing all of it, and a gzip bomb's declared size is whatever it likes.
    max_record_bytes: int = 1_000_000_000
    # Most bytes of header lines read back to back (WARC and HTTP headers of one record, blank lines
    # between records); more is a corrupt_file error. Real headers stay far below (tens of KB at most).
    max_header_bytes: int = 1_000_000
    # Documents with fewer characters after extraction and normalisation are rejected as no_text.
    min_text_chars: int = 1
    # Block-listed domains and banned URL words: rejected before the payload is read (udfs/url_filter.py).
    url_filter: UrlFilterConfig = field(default_factory=UrlFilterConfig)

    def validate(self, prefix: str) -> None:
        if self.extractor not in EXTRACTORS:
            raise ConfigError(f"{prefix}.extractor: must be one of {', '.join(EXTRACTORS)}, got {self.extractor!r}")
        for name in ("max_payload_bytes", "max_record_bytes", "max_header_bytes"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{prefix}.{name}: must be positive, got {getattr(self, name)}")
        if self.max_record_bytes < self.max_payload_bytes:
            raise ConfigError(f"{prefix}.max_record_bytes: must be at least max_payload_bytes "
                              f"({self.max_payload_bytes}), got {self.max_record_bytes}")
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


class _WholeFileGzip(Exception):
    """One gzip member holds many records: warcio gives up after the first."""


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


class WarcDocumentReader:
    """Turns the records of one WARC/ARC stream into outcome rows (dicts matching ``EXTRACT_SCHEMA``)."""

    def __init__(self, cfg: ExtractConfig, sample_fraction: Optional[float] = None):
        self.cfg = cfg
        self.sample_fraction = sample_fraction
        self.mime_types = tuple(m.lower() for m in cfg.html_mime_types)
        self.url_filter = UrlFilter(cfg.url_filter)

    def read(self, source: str, open_stream: Callable[[], BinaryIO]) -> Iterator[dict]:
        name = source.lower().rstrip("/")
        fmt = "arc" if name.endswith((".arc", ".arc.gz")) else "warc"
        skipped: Counter = Counter()
        emitted = 0
        try:
            with open_stream() as stream:
                for row in self._rows(source, stream, fmt, name.endswith(".gz"), skipped):
                    emitted += 1
                    yield row
        except _WholeFileGzip:
            # Whole-file gzip (not one member per record): stream it through one decompressor,
            # skipping the records already emitted before the reader gave up.
            skipped.clear()
            with open_stream() as raw, _CheckedGzipFile(fileobj=raw) as stream:
                for index, row in enumerate(self._rows(source, stream, fmt, False, skipped)):
                    if index >= emitted:
                        yield row
        except OSError as exc:  # the file cannot be opened
            yield self._corrupt(source, exc, 0)
        yield from self._skipped_rows(source, skipped)

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
        html, codec = decode_html(payload, charset_from_content_type(content_type))
        if html is None:
            return reject("undecodable")
        row["charset"] = codec
        try:
            text = normalize_text(extract_main_text(html, self.cfg.extractor, self.cfg.boilerplate_filter))
        except Exception as exc:  # a parser bug on one page must not stop the file
            row.update(_outcome="error", error="extract_failed", reject_value=type(exc).__name__)
            return
        if len(text) < self.cfg.min_text_chars:
            return reject("no_text", len(text))
        row.update(_outcome="kept", text=text)

