"""mindrecord: the bucketed Parquet of ``mix`` → one MindRecord file per bucket, written in parallel.

Each Spark task writes its bucket(s) as its own MindRecord file with
``mindspore.mindrecord.FileWriter``; ``mindspore.dataset.MindDataset`` reads the list of files as
one dataset. FileWriter writes to a local file system, so on a cluster ``--output`` must be a path
every executor sees (a shared mount such as NFS or DBFS FUSE).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, Iterator
from urllib.parse import unquote, urlsplit

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.config import ConfigError
from jobs.stage import Stage

DOCUMENT_SCHEMA = {
    "id": {"type": "string"},
    "url": {"type": "string"},
    "text": {"type": "string"},
    "domain": {"type": "string"},
    "quality_score": {"type": "float32"},
}
# MindRecord fields cannot be null: a document not scored yet gets this score, no domain gets "".
MISSING_SCORE = -1.0
SHARDS_SCHEMA = "bucket int, file string, rows long, _outcome string"


@dataclass(frozen=True)
class MindRecordConfig:
    # FileWriter pads each file to header + pages; the defaults (64 MB pages) waste space on small data.
    header_size_kb: int = 256
    page_size_kb: int = 4096

    def validate(self, prefix: str) -> None:
        if not 16 <= self.header_size_kb <= 131072:
            raise ConfigError(f"{prefix}.header_size_kb: must be within 16..131072")
        if not 32 <= self.page_size_kb <= 262144:
            raise ConfigError(f"{prefix}.page_size_kb: must be within 32..262144")


def local_path(uri: str) -> str:
    parts = urlsplit(uri)
    if parts.scheme not in ("", "file"):
        raise ConfigError(f"output: the mindrecord stage writes with FileWriter and needs a local or "
                          f"mounted path, got {uri}")
    return unquote(parts.path) if parts.scheme else uri


def shard_name(bucket: int) -> str:
    return f"shard-{bucket:05d}.mindrecord"


class MindRecordStage(Stage):
    name = "mindrecord"

    def transform(self, docs: DataFrame) -> DataFrame:
        if "bucket" not in docs.columns:
            raise ConfigError("mindrecord: input has no 'bucket' column; run the mix stage first")
        columns = {c: (F.col(c) if c in docs.columns else F.lit(None)) for c in DOCUMENT_SCHEMA}
        return docs.select(F.col("bucket"), *[
            F.coalesce(columns["id"].cast("string"), F.lit("")).alias("id"),
            F.coalesce(columns["url"].cast("string"), F.lit("")).alias("url"),
            F.coalesce(columns["text"].cast("string"), F.lit("")).alias("text"),
            F.coalesce(columns["domain"].cast("string"), F.lit("")).alias("domain"),
            F.coalesce(columns["quality_score"].cast("float"), F.lit(MISSING_SCORE)).alias("quality_score"),
        ])

    def write(self, out: DataFrame, tmp_dir: str) -> None:
        shard_dir = local_path(tmp_dir)
        header_size = self.settings.header_size_kb * 1024
        page_size = self.settings.page_size_kb * 1024

        def write_shards(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            from mindspore.mindrecord import FileWriter

            os.makedirs(shard_dir, exist_ok=True)
            writers: Dict[int, FileWriter] = {}
            rows: Dict[int, int] = {}
            for batch in batches:
                for bucket, part in batch.groupby("bucket"):
                    bucket = int(bucket)
                    if bucket not in writers:
                        writer = FileWriter(os.path.join(shard_dir, shard_name(bucket)), shard_num=1, overwrite=True)
                        writer.set_header_size(header_size)
                        writer.set_page_size(page_size)
                        writer.add_schema(DOCUMENT_SCHEMA, "corpusmill_documents")
                        writers[bucket], rows[bucket] = writer, 0
                    records = part.drop(columns="bucket").to_dict("records")
                    writers[bucket].write_raw_data(records)
                    rows[bucket] += len(records)
            for writer in writers.values():
                writer.commit()
            if rows:
                yield pd.DataFrame({"bucket": pd.Series(list(rows), dtype="int32"),
                                    "file": [shard_name(b) for b in rows],
                                    "rows": pd.Series(list(rows.values()), dtype="int64"),
                                    "_outcome": ["kept"] * len(rows)})

        shards = out.repartition(self.cfg.mix.buckets, "bucket").mapInPandas(write_shards, SHARDS_SCHEMA)
        shards.coalesce(1).write.mode("overwrite").parquet(f"{tmp_dir}/_shards")

    def count_outcomes(self, tmp_dir: str) -> Dict[str, Dict[str, int]]:
        total = self.spark.read.parquet(f"{tmp_dir}/_shards").agg(F.sum("rows")).first()[0]
        return {"kept": {"-": int(total or 0)}}

    def extra_stats(self, stage_dir: str) -> dict:
        shards = self.spark.read.parquet(f"{stage_dir}/_shards").orderBy("bucket").collect()
        return {"shards": [{"file": r["file"], "rows": r["rows"]} for r in shards]}

    def finalize(self, tmp_dir: str) -> None:
        """Shards are written in place; nothing to rename."""


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("mindrecord"))
