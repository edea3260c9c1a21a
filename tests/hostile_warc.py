"""Hostile WARC files, made at test time: gzip bombs, records that lie about their length, endless
lines. Used by tests/extract/test_hostile_warc.py and bench/hostile_extract.py.

A gigabyte of zeros takes a second to build, not a minute of gzip: a deflate segment that ends in a
full flush refers to nothing before it, so the segment of one MiB is repeated.
"""
from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Dict

MiB = 1 << 20
GiB = 1 << 30


def gzip_member(prefix: bytes, fill_mib: int, fill: bytes = b"\0") -> bytes:
    """One gzip member holding ``prefix`` then ``fill_mib`` MiB of the byte ``fill``."""
    def segment(data: bytes, mode: int = zlib.Z_FULL_FLUSH) -> bytes:
        deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
        return deflate.compress(data) + deflate.flush(mode)

    block = fill * MiB
    crc = zlib.crc32(prefix)
    for _ in range(fill_mib):
        crc = zlib.crc32(block, crc)
    deflated = segment(prefix) + segment(block) * fill_mib + segment(b"", zlib.Z_FINISH)
    size = len(prefix) + fill_mib * MiB
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + deflated + struct.pack("<II", crc, size & 0xFFFFFFFF)


HTML_HTTP_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"


def response_head(content_length: int, http_head: bytes = HTML_HTTP_HEAD) -> bytes:
    """A well-formed WARC response header declaring ``content_length``, then ``http_head``."""
    return (b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000001>\r\n"
            b"WARC-Target-URI: http://bomb.example/\r\nWARC-Date: 2024-01-01T00:00:00Z\r\n"
            b"Content-Type: application/http; msgtype=response\r\n"
            b"Content-Length: %d\r\n\r\n" % content_length) + http_head


def chunked_gzip_response() -> bytes:
    """A complete, honest record whose HTTP payload is one chunk of 1 MB that inflates to 1 GiB
    (warcio inflates a chunk whole)."""
    payload = gzip_member(b"", 1024)
    http_head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n"
    body = b"%x\r\n" % len(payload) + payload + b"\r\n0\r\n\r\n"
    return gzip_member(response_head(len(http_head) + len(body), http_head) + body + b"\r\n\r\n", 0)


# name -> (how it is hostile, the one row the reader must give at record offset 0: outcome and reason)
HOSTILE = {
    "zeros.warc.gz": ("1 GiB of zeros, gzipped (1 MB on disk): no line ends", ("error", "corrupt_file")),
    "claims-1tb.warc.gz": ("a valid response declaring 1 TB, then 1 GiB of zeros", ("error", "oversized_record")),
    "claims-less.warc.gz": ("a valid response declaring 100 MiB, then 1 GiB of zeros", ("error", "corrupt_file")),
    "claims-more.warc.gz": ("a valid response declaring 999 MB, holding 512 MiB of zeros", ("error", "corrupt_file")),
    "line.warc": ("a 200 MiB line without a newline, uncompressed", ("error", "corrupt_file")),
    "line.warc.gz": ("a 200 MiB line without a newline, gzipped", ("error", "corrupt_file")),
    "chunked-gzip-payload.warc.gz": ("an HTTP payload of one gzip chunk inflating to 1 GiB", ("rejected", "oversized")),
}


def write_hostile(folder: Path, name: str) -> Path:
    """Write the file ``name`` of ``HOSTILE`` into ``folder``."""
    path = folder / name
    if name == "zeros.warc.gz":
        path.write_bytes(gzip_member(b"", 1024))
    elif name == "claims-1tb.warc.gz":
        path.write_bytes(gzip_member(response_head(10 ** 12), 1024))
    elif name == "claims-less.warc.gz":
        path.write_bytes(gzip_member(response_head(100 * MiB), 1024))
    elif name == "claims-more.warc.gz":
        path.write_bytes(gzip_member(response_head(999_000_000), 512))
    elif name == "line.warc":
        with open(path, "wb") as out:
            for _ in range(200):
                out.write(b"x" * MiB)
    elif name == "line.warc.gz":
        path.write_bytes(gzip_member(b"", 200, b"x"))
    elif name == "chunked-gzip-payload.warc.gz":
        path.write_bytes(chunked_gzip_response())
    else:
        raise KeyError(name)
    return path


def write_all_hostile(folder: Path) -> Dict[str, Path]:
    return {name: write_hostile(folder, name) for name in HOSTILE}
