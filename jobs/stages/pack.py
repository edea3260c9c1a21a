"""pack: the samples of ``mix`` → fixed-length token sequences (``udfs.pack.packing``).

Each document copy (a row of ``mix``) goes to bucket (= MindRecord shard) ``(hash(id) + epoch) mod
mix.buckets``: the copies of a document land in different shards as long as there are at least as
many shards as copies. Each bucket is packed by one best-fit packer in one Spark task, its rows
shuffled by a hash of ``sample_id`` (deterministic), so neighbours in a window are unrelated
documents, and the packer never puts two pieces of one document (copies included) in one sequence.
The packer's bounded buffer is all the memory a task needs; each bucket ends with at most one
partly filled sequence.

Output rows are sequences, not documents, so this stage does not pass the document columns through:
``id`` (a hash of the pieces it holds), ``bucket``, ``input_ids``, ``segment_ids``, ``loss_mask``
(int32 arrays of ``seq_len``), ``n_tokens`` (non-padding) and ``segments`` (per piece: sample id,
domain, piece number, tokens, whether it ends its document, and what the document lost to truncation
and hard cuts) — the audit trail from every token back to its document. ``kept/`` holds only these
columns: the task that packs a bucket writes its sequences itself, with pyarrow, into
``kept/bucket=<b>/part-<b>.parquet`` (``BucketFiles``), so the token arrays never cross into the JVM;
the dropped rows are written by Spark, as every stage's are.

Counts reconcile per document: each sequence counts the documents whose last piece (with EOS) it
holds, so ``records_in = documents packed + rejected (empty text) + errors`` (a text over
``io.max_text_chars`` is an error, ``text_too_long``, and never tokenized).
"""
from __future__ import annotations

import os
import tempfile
from contextlib import ExitStack
from typing import Iterator, List, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import TaskContext
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from corpusmill.config import ConfigError
from corpusmill.storage import check_reachable, scratch_root, upload_files
from jobs.buckets import copy_bucket, one_task_per_bucket
from jobs.fs import HadoopFS
from jobs.stage import BOOKKEEPING_COLUMNS, OVER_LIMIT, TEXT_TOO_LONG, Stage, Transformed, bookkeeping_fields
from udfs.pack.packing import PackConfig, PackedSequence, SequencePacker
from udfs.pack.tokenizer import cached_tokenizer

SEGMENT = pa.struct([("sample_id", pa.string()), ("domain", pa.string()), ("piece", pa.int32()),
                     ("tokens", pa.int32()), ("last", pa.bool_()), ("truncated", pa.int32()),
                     ("hard_cuts", pa.int32())])
PACK_SCHEMA = pa.schema([
    ("id", pa.string()), ("bucket", pa.int32()),
    ("input_ids", pa.list_(pa.int32())), ("segment_ids", pa.list_(pa.int32())), ("loss_mask", pa.list_(pa.int32())),
    ("n_tokens", pa.int32()), ("segments", pa.list_(SEGMENT)),
    *bookkeeping_fields("_count", "_outcome", "reject_rule", "reject_value", "error"),
])
# kept/: the sequence columns alone; the bucket is the folder (``bucket=<b>/``), as a Spark write makes it.
KEPT_SCHEMA = pa.schema([f for f in PACK_SCHEMA if f.name != "bucket" and f.name not in BOOKKEEPING_COLUMNS])
EMPTY = "empty_text"
# The Spark job property that names the folder the packing tasks write kept sequences into.
KEPT_FOLDER_PROPERTY = "corpusmill.pack.kept_folder"
# Sequences per Parquet row group of kept/: 3 × rows × seq_len int32 of about this many bytes.
ROW_GROUP_BYTES = 16 << 20


def _int_lists(arrays: List[np.ndarray]) -> pa.Array:
    flat = np.concatenate(arrays) if arrays else np.zeros(0, np.int32)
    offsets = np.arange(len(arrays) + 1, dtype=np.int32) * (len(arrays[0]) if arrays else 0)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, type=pa.int32()))


def pyarrow_codec(spark_codec: str) -> str:
    """pyarrow's name for the Parquet codec ``io.parquet_compression`` names (Spark's names)."""
    codec = {"uncompressed": "none", "lz4_raw": "lz4"}.get(spark_codec.lower(), spark_codec.lower())
    try:
        if codec == "none" or pa.Codec.is_available(codec):
            return codec
    except ValueError:
        pass
    raise ConfigError(f"io.parquet_compression: pack writes its sequences with pyarrow, which has no "
                      f"{spark_codec!r} codec; use zstd, snappy, gzip, lz4, brotli or none")


def sequences_batch(sequences: Sequence[PackedSequence]) -> pa.RecordBatch:
    segments = [[{"sample_id": p.sample_id, "domain": p.domain, "piece": p.index, "tokens": len(p.tokens),
                  "last": p.last, "truncated": p.truncated, "hard_cuts": p.hard_cuts} for p in s.pieces]
                for s in sequences]
    return pa.RecordBatch.from_arrays([
        pa.array([s.sequence_id for s in sequences], pa.string()),
        _int_lists([s.input_ids for s in sequences]), _int_lists([s.segment_ids for s in sequences]),
        _int_lists([s.loss_mask for s in sequences]),
        pa.array([s.n_tokens for s in sequences], pa.int32()), pa.array(segments, pa.list_(SEGMENT)),
    ], schema=KEPT_SCHEMA)


class BucketFiles:
    """A packing task's kept sequences, one Parquet file per bucket (``bucket=<b>/part-<b>.parquet``
    under ``folder``), written on local disk and uploaded when the bucket is done. Named by the
    bucket, so a retried task replaces its failed attempt's file instead of adding a second one."""

    def __init__(self, folder: str, compression: str, s3_options: dict):
        self.folder, self.compression, self.s3_options = folder, compression, s3_options
        self.local = tempfile.TemporaryDirectory(prefix="corpusmill-pack-", dir=scratch_root())
        self.writer: Optional[pq.ParquetWriter] = None

    def path(self, bucket: int) -> str:
        return os.path.join(self.local.name, f"part-{bucket:05d}.parquet")

    def write(self, bucket: int, sequences: Sequence[PackedSequence]) -> None:
        if not sequences:
            return
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.path(bucket), KEPT_SCHEMA, compression=self.compression)
        self.writer.write_batch(sequences_batch(sequences))

    def finish(self, bucket: int, sequences: Sequence[PackedSequence]) -> None:
        """Write the bucket's last sequences and upload its file."""
        self.write(bucket, sequences)
        if self.writer is not None:
            self.writer.close()
            upload_files([self.path(bucket)], f"{self.folder}/bucket={bucket}", self.s3_options)
            os.remove(self.path(bucket))
            self.writer = None

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.local.cleanup()


def dropped_row(sample_id: str, bucket: int, outcome: str, reason: str, value: Optional[str] = None) -> dict:
    return {"id": sample_id, "bucket": bucket, "_count": 1, "_outcome": outcome, "reject_value": value,
            **({"reject_rule": reason} if outcome == "rejected" else {"error": reason})}


class PackStage(Stage):
    name = "pack"
    config = PackConfig
    order = 80
    units = ("document copies", "document copies")
    kept_documents = False
    reads = ("mix.buckets",)
    required_columns = ("text",)
    partition_columns = ("bucket",)
    makes_over_limit_errors = True  # in the packing tasks, which write kept/ themselves

    @staticmethod
    def report_cards(stats: dict) -> list:
        return [(label, stats[key]) for key, label in (("tokens", "packed tokens"), ("sequences", "packed sequences"),
                                                       ("packing_efficiency", "packing efficiency"))
                if isinstance(stats.get(key), (int, float))]

    @staticmethod
    def output_note(stats: dict) -> str:
        if not (isinstance(stats.get("sequences"), int) and stats.get("seq_len")):
            return ""
        full = stats.get("packing_efficiency")
        return (f"packed into {stats['sequences']:,} sequences of {stats['seq_len']:,} tokens"
                + (f" ({full:.1%} full)" if isinstance(full, float) else ""))

    def transform(self, docs: DataFrame, resources: ExitStack) -> Transformed:
        cfg, buckets = self.settings, self.cfg.mix.buckets
        sample_id = F.col("sample_id") if "sample_id" in docs.columns else F.col("id")
        domain = F.col("domain") if "domain" in docs.columns else F.lit("")
        epoch = F.coalesce(F.col("epoch"), F.lit(0)) if "epoch" in docs.columns else F.lit(0)
        rows = docs.select(
            F.col("id").alias("doc_id"), sample_id.alias("sample_id"), F.coalesce(domain, F.lit("")).alias("domain"),
            epoch.cast("int").alias("epoch"), F.col("text"), F.col(OVER_LIMIT))
        # One task per bucket; within it the rows in an order fixed by a hash of the sample id.
        rows = rows.withColumn("bucket", copy_bucket(F.col("doc_id"), F.col("epoch"), buckets))
        rows = one_task_per_bucket(rows, "bucket", buckets).sortWithinPartitions("bucket", F.xxhash64("sample_id"))

        s3_options = HadoopFS(self.spark).s3_options()
        compression = pyarrow_codec(self.cfg.io.parquet_compression)
        group_rows = max(1, ROW_GROUP_BYTES // (3 * 4 * cfg.seq_len))

        def pack_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            folder = TaskContext.get().getLocalProperty(KEPT_FOLDER_PROPERTY)
            if not folder:
                raise RuntimeError(f"pack writes its sequences where PackStage.write says ({KEPT_FOLDER_PROPERTY})")
            kept = BucketFiles(folder, compression, s3_options)
            packer, bucket = None, None
            done: List[PackedSequence] = []
            try:
                for batch in batches:
                    data = batch.to_pydict()
                    texts, over_limit = data["text"], data[OVER_LIMIT]
                    dropped = [dropped_row(data["sample_id"][i], data["bucket"][i], "error", TEXT_TOO_LONG, str(chars))
                               for i, chars in enumerate(over_limit) if chars is not None]
                    dropped += [dropped_row(data["sample_id"][i], data["bucket"][i], "rejected", EMPTY)
                                for i, text in enumerate(texts) if not text and over_limit[i] is None]
                    live = [i for i, text in enumerate(texts) if text]
                    tokenizer = cached_tokenizer(cfg.tokenizer)
                    for i, ids in zip(live, tokenizer.encode_batch([texts[i] for i in live])):
                        if data["bucket"][i] != bucket:  # a task may hold several buckets, one after another
                            if packer:
                                kept.finish(bucket, done + packer.finish())
                                done = []
                            packer, bucket = SequencePacker(cfg, tokenizer), data["bucket"][i]
                        try:
                            done += packer.add_document(ids, texts[i], data["sample_id"][i], data["domain"][i],
                                                        data["doc_id"][i])
                        except Exception as exc:  # one bad document must not fail the task
                            dropped.append(dropped_row(data["sample_id"][i], bucket, "error",
                                                       f"{type(exc).__name__}: {exc}"))
                    if dropped:
                        yield pa.RecordBatch.from_pylist(dropped, schema=PACK_SCHEMA)
                    if len(done) >= group_rows:
                        kept.write(bucket, done)
                        done = []
                if packer:
                    kept.finish(bucket, done + packer.finish())
            finally:
                kept.close()

        return Transformed(rows.mapInArrow(pack_partition, from_arrow_schema(PACK_SCHEMA)))

    def write(self, out: Transformed, tmp_dir: str) -> None:
        """The packing tasks write the sequences into ``_outcome=kept/`` themselves (``BucketFiles``),
        with the sequence columns alone, so that the training data holds only what a trainer or a
        person reads, and the packed rows never cross into the JVM; Spark writes the dropped rows as
        every stage writes them."""
        kept = f"{tmp_dir}/_outcome=kept"
        check_reachable(kept, HadoopFS(self.spark).s3_options(), "the pack stage writes its sequences")
        context = self.spark.sparkContext
        context.setLocalProperty(KEPT_FOLDER_PROPERTY, kept)
        try:
            super().write(out, tmp_dir)
        finally:
            context.setLocalProperty(KEPT_FOLDER_PROPERTY, None)

    @staticmethod
    def records_of(written: DataFrame) -> Column:
        # A sequence stands for the documents whose last piece it holds; a dropped row for its ``_count``.
        return F.coalesce(F.col("_count"), F.size(F.filter("segments", lambda piece: piece["last"])))

    def finalize(self, tmp_dir: str, schema) -> None:
        """The run layout; where no sequence was packed, ``kept/`` is an empty file with the sequence
        columns."""
        fs = HadoopFS(self.spark)
        if not any(name.endswith(".parquet") for name in fs.list_files(f"{tmp_dir}/_outcome=kept")):
            fs.delete(f"{tmp_dir}/_outcome=kept")
        sequence_fields = [f for f in schema.fields if f.name == "_outcome" or f.name not in BOOKKEEPING_COLUMNS]
        super().finalize(tmp_dir, StructType(sequence_fields))

    def extra_stats(self, stage_dir: str, facts: dict) -> dict:
        seq_len = self.settings.seq_len
        kept = self.spark.read.parquet(f"{stage_dir}/kept")
        totals = kept.agg(F.count("*").alias("sequences"), F.sum("n_tokens").alias("tokens")).first()
        pieces = kept.select(F.explode("segments").alias("s")).select("s.*")
        last = F.col("last")
        docs = pieces.agg(
            F.count("*").alias("pieces"),
            F.sum(last.cast("long")).alias("docs"),
            F.sum((last & (F.col("piece") > 0)).cast("long")).alias("split"),
            F.sum((last & (F.col("truncated") > 0)).cast("long")).alias("truncated_docs"),
            F.sum("truncated").alias("truncated_tokens"),
            F.sum((last & (F.col("hard_cuts") > 0)).cast("long")).alias("hard_cut_docs"),
            F.sum("hard_cuts").alias("hard_cuts"),
        ).first()
        by_domain = pieces.groupBy("domain").agg(
            (F.sum("tokens") - F.sum(last.cast("long"))).alias("tokens")).collect()  # without EOS
        sequences, tokens = int(totals["sequences"]), int(totals["tokens"] or 0)
        n_docs = int(docs["docs"] or 0)
        domain_tokens = {r["domain"]: int(r["tokens"]) for r in by_domain}
        text_tokens = sum(domain_tokens.values()) or 1
        return {
            "seq_len": seq_len,
            "tokenizer": self.settings.tokenizer.path or self.settings.tokenizer.name,
            "sequences": sequences,
            "tokens": tokens,
            "padding_tokens": sequences * seq_len - tokens,
            "packing_efficiency": round(tokens / (sequences * seq_len), 6) if sequences else None,
            "documents": n_docs,
            "pieces": int(docs["pieces"] or 0),
            "eos_tokens": n_docs,
            "input_tokens": tokens - n_docs + int(docs["truncated_tokens"] or 0),
            "split_fraction": round(int(docs["split"] or 0) / n_docs, 6) if n_docs else 0.0,
            "truncated_fraction": round(int(docs["truncated_docs"] or 0) / n_docs, 6) if n_docs else 0.0,
            "truncated_tokens": int(docs["truncated_tokens"] or 0),
            "hard_cut_fraction": round(int(docs["hard_cut_docs"] or 0) / n_docs, 6) if n_docs else 0.0,
            "hard_cuts": int(docs["hard_cuts"] or 0),
            "domain_tokens": domain_tokens,
            "mixture_exact": {d: round(t / text_tokens, 6) for d, t in sorted(domain_tokens.items())},
        }


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("pack"))
