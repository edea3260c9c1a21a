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
from contextlib import ExitStack
from typing import Dict, Iterator
from urllib.parse import unquote, urlsplit

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.stage import Stage, Transformed
from udfs.config import ConfigError
from udfs.mindrecord import (DOCUMENT_SCHEMA, MISSING_SCORE, SEQUENCE_FIELDS, mindrecord_rows, sequence_schema,
                             shard_name)

SHARDS_SCHEMA = "bucket int, file string, rows long, _outcome string"


def local_path(uri: str) -> str:
    parts = urlsplit(uri)
    if parts.scheme not in ("", "file"):
        raise ConfigError(f"output: the mindrecord stage writes with FileWriter and needs a local or "
                          f"mounted path, got {uri}")
    return unquote(parts.path) if parts.scheme else uri


class MindRecordStage(Stage):
    name = "mindrecord"
    reads = ("mix.buckets", "pack.seq_len")
    required_columns = ("bucket",)  # from the mix stage

    def transform(self, docs: DataFrame, resources: ExitStack) -> Transformed:
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
            return Transformed(docs.select("bucket", "id", *SEQUENCE_FIELDS),
                               {"schema": sequence_schema(seq_len), "mode": "sequences"})
        columns = {c: (F.col(c) if c in docs.columns else F.lit(None)) for c in DOCUMENT_SCHEMA}
        rows = docs.select(F.col("bucket"), *[
            F.coalesce(columns["id"].cast("string"), F.lit("")).alias("id"),
            F.coalesce(columns["url"].cast("string"), F.lit("")).alias("url"),
            F.coalesce(columns["text"].cast("string"), F.lit("")).alias("text"),
            F.coalesce(columns["domain"].cast("string"), F.lit("")).alias("domain"),
            F.coalesce(columns["quality_score"].cast("float"), F.lit(MISSING_SCORE)).alias("quality_score"),
        ])
        return Transformed(rows, {"schema": DOCUMENT_SCHEMA, "mode": "documents"})

    def write(self, out: Transformed, tmp_dir: str) -> None:
        shard_dir = local_path(tmp_dir)
        header_size = self.settings.header_size_kb * 1024
        page_size = self.settings.page_size_kb * 1024
        schema, schema_name = out.facts["schema"], f"corpusmill_{out.facts['mode']}"

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

        shards = out.rows.repartition(self.cfg.mix.buckets, "bucket").mapInArrow(write_shards, SHARDS_SCHEMA)
        shards.coalesce(1).write.mode("overwrite").parquet(f"{tmp_dir}/shards")

    def count_outcomes(self, tmp_dir: str, schema) -> Dict[str, Dict[str, int]]:
        total = self.spark.read.parquet(f"{tmp_dir}/shards").agg(F.sum("rows")).first()[0]
        return {"kept": {"-": int(total or 0)}}

    def extra_stats(self, stage_dir: str, facts: dict) -> dict:
        shards = self.spark.read.parquet(f"{stage_dir}/shards").orderBy("bucket").collect()
        return {"mode": facts["mode"],
                "shards": [{"file": r["file"], "rows": r["rows"]} for r in shards]}

    def finalize(self, tmp_dir: str, schema) -> None:
        """Shards are written in place; nothing to rename."""


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("mindrecord"))
