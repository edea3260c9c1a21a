"""mindrecord: bucketed Parquet → one MindRecord file per bucket (= shard), written in parallel.

Two modes: ``sequences`` writes the packed sequences of ``pack`` (``input_ids``, ``segment_ids``,
``loss_mask`` as fixed-shape int32 arrays of ``seq_len``, plus the sequence ``id``); ``documents``
writes the documents of ``mix`` (id, url, text, domain, quality_score) for users who tokenize at
training time. ``auto`` picks ``sequences`` when the input has ``input_ids``. The shard count is the
bucket count of ``mix`` (set it to the training device count or a multiple of it); ``loader`` reads
the shards for a rank.

Each Spark task writes its bucket(s) as its own MindRecord file with
``mindspore.mindrecord.FileWriter``; ``mindspore.dataset.MindDataset`` reads the list of files as
one dataset. FileWriter writes to a local file system, so on a cluster ``--output`` must be a path
every executor sees (a shared mount such as NFS or DBFS FUSE).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, Iterator, List
from urllib.parse import unquote, urlsplit

import numpy as np
import pyarrow as pa
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
SEQUENCE_FIELDS = ("input_ids", "segment_ids", "loss_mask")
MODES = ("auto", "sequences", "documents")
# MindRecord fields cannot be null: a document not scored yet gets this score, no domain gets "".
MISSING_SCORE = -1.0
SHARDS_SCHEMA = "bucket int, file string, rows long, _outcome string"


@dataclass(frozen=True)
class MindRecordConfig:
    # FileWriter pads each file to header + pages; the defaults (64 MB pages) waste space on small data.
    header_size_kb: int = 256
    page_size_kb: int = 4096
    # sequences (packed, from pack), documents (from mix) or auto (sequences when the input has them).
    mode: str = "auto"

    def validate(self, prefix: str) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"{prefix}.mode: must be one of {', '.join(MODES)}, got {self.mode!r}")
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


def sequence_schema(seq_len: int) -> dict:
    return {"id": {"type": "string"},
            **{name: {"type": "int32", "shape": [seq_len]} for name in SEQUENCE_FIELDS}}


def mindrecord_rows(batch: pa.RecordBatch, schema: dict) -> List[dict]:
    """The rows of an Arrow batch as FileWriter records: fixed-shape fields as int32 numpy arrays."""
    columns = []
    for name, spec in schema.items():
        column = batch.column(name)
        if "shape" in spec:  # one flat buffer reshaped, instead of a Python list per row
            values = column.flatten().to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
            columns.append(list(values.reshape(len(batch), *spec["shape"])))
        else:
            columns.append(column.to_pylist())
    return [dict(zip(schema, values)) for values in zip(*columns)]


class MindRecordStage(Stage):
    name = "mindrecord"

    def transform(self, docs: DataFrame) -> DataFrame:
        if "bucket" not in docs.columns:
            raise ConfigError("mindrecord: input has no 'bucket' column; run the mix stage first")
        mode = self.settings.mode
        if mode == "auto":
            mode = "sequences" if "input_ids" in docs.columns else "documents"
        if mode == "sequences":
            if "input_ids" not in docs.columns:
                raise ConfigError("mindrecord.mode: sequences needs packed input (input_ids); run the pack stage "
                                  "first or set mode: documents")
            # The window length of the data itself (pack's seq_len unless the input came from elsewhere).
            first = docs.select(F.size("input_ids").alias("n")).first()
            seq_len = first["n"] if first else self.cfg.pack.seq_len
            self.schema, self.schema_name = sequence_schema(seq_len), "corpusmill_sequences"
            return docs.select("bucket", "id", *SEQUENCE_FIELDS)
        self.schema, self.schema_name = DOCUMENT_SCHEMA, "corpusmill_documents"
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
        schema, schema_name = self.schema, self.schema_name

        def write_shards(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            from mindspore.mindrecord import FileWriter

            os.makedirs(shard_dir, exist_ok=True)
            writers: Dict[int, FileWriter] = {}
            rows: Dict[int, int] = {}
            for batch in batches:
                buckets = batch.column("bucket").to_numpy(zero_copy_only=False)
                for bucket in np.unique(buckets).tolist():
                    if bucket not in writers:
                        writer = FileWriter(os.path.join(shard_dir, shard_name(bucket)), shard_num=1, overwrite=True)
                        writer.set_header_size(header_size)
                        writer.set_page_size(page_size)
                        writer.add_schema(schema, schema_name)
                        writers[bucket], rows[bucket] = writer, 0
                    records = mindrecord_rows(batch.filter(pa.array(buckets == bucket)), schema)
                    writers[bucket].write_raw_data(records)
                    rows[bucket] += len(records)
            for writer in writers.values():
                writer.commit()
            if rows:
                yield pa.RecordBatch.from_pydict({"bucket": pa.array(list(rows), pa.int32()),
                                                  "file": [shard_name(b) for b in rows],
                                                  "rows": pa.array(list(rows.values()), pa.int64()),
                                                  "_outcome": ["kept"] * len(rows)})

        shards = out.repartition(self.cfg.mix.buckets, "bucket").mapInArrow(write_shards, SHARDS_SCHEMA)
        shards.coalesce(1).write.mode("overwrite").parquet(f"{tmp_dir}/shards")

    def count_outcomes(self, tmp_dir: str) -> Dict[str, Dict[str, int]]:
        total = self.spark.read.parquet(f"{tmp_dir}/shards").agg(F.sum("rows")).first()[0]
        return {"kept": {"-": int(total or 0)}}

    def extra_stats(self, stage_dir: str) -> dict:
        shards = self.spark.read.parquet(f"{stage_dir}/shards").orderBy("bucket").collect()
        return {"mode": self.schema_name.rsplit("_", 1)[-1],
                "shards": [{"file": r["file"], "rows": r["rows"]} for r in shards]}

    def finalize(self, tmp_dir: str, schema) -> None:
        """Shards are written in place; nothing to rename."""


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("mindrecord"))
