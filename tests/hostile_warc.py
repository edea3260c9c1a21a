"""Hostile WARC files, made at test time: gzip bombs, records that lie about their length, endless
lines. Used by tests/test_hostile_warc.py and bench/hostile_extract.py.

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


def response_head(content_length: int) -> bytes:
    """A well-formed WARC response header and HTTP header; the body is the caller's."""
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
    return (b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000001>\r\n"
            b"WARC-Target-URI: http://bomb.example/\r\nWARC-Date: 2024-01-01T00:00:00Z\r\n"
            b"Content-Type: application/http; msgtype=response\r\n"
            b"Content-Length: %d\r\n\r\n" % content_length) + http


# name -> (how it is hostile, the outcome the reader must give: error reason at record offset 0)
HOSTILE = {
    "zeros.warc.gz": ("1 GiB of zeros, gzipped (1 MB on disk): no line ends", "corrupt_file"),
    "claims-1tb.warc.gz": ("a valid response declaring 1 TB, then 1 GiB of zeros", "oversized_record"),
    "claims-less.warc.gz": ("a valid response declaring 100 MiB, then 1 GiB of zeros", "corrupt_file"),
    "claims-more.warc.gz": ("a valid response declaring 999 MB, holding 512 MiB of zeros", "corrupt_file"),
    "line.warc": ("a 200 MiB line without a newline, uncompressed", "corrupt_file"),
    "line.warc.gz": ("a 200 MiB line without a newline, gzipped", "corrupt_file"),
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
    else:
        raise KeyError(name)
    return path


def write_all_hostile(folder: Path) -> Dict[str, Path]:
    return {name: write_hostile(folder, name) for name in HOSTILE}
