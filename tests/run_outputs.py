"""Builders and checks shared by the tests of whole runs: the sample WARCs split into many small
files (so that a stage runs in several chunks), and a digest of what a committed stage holds."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Dict, Tuple

from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from conftest import ROOT


def split_sample_warcs(folder: Path, files: int) -> Path:
    """The bundled sample's records dealt round-robin into ``files`` gzipped WARC files in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    writers = []
    for i in range(files):
        stream = open(folder / f"part-{i:02d}.warc.gz", "wb")
        writers.append((stream, WARCWriter(stream, gzip=True)))
    n = 0
    for source in sorted((ROOT / "data" / "sample").glob("*.warc.gz")):
        with open(source, "rb") as stream:
            for record in ArchiveIterator(stream):
                writers[n % files][1].write_record(record)
                n += 1
    for stream, _ in writers:
        stream.close()
    assert n >= files
    return folder


def fingerprint_of_output(spark, stage_dir: Path) -> Dict[str, Tuple[int, str]]:
    """Row count and a checksum of the ids and texts of every outcome folder of a stage."""
    result = {}
    for folder in ("kept", "rejected", "errors", "skipped"):
        if (stage_dir / folder).exists():
            rows = spark.read.parquet(str(stage_dir / folder)).select("id", "text").collect()
            digest = hashlib.sha256()
            for row in sorted(rows, key=lambda r: (r["id"], r["text"] or "")):
                digest.update(f"{row['id']}\0{row['text'] or ''}\n".encode())
            result[folder] = (len(rows), digest.hexdigest())
    return result
