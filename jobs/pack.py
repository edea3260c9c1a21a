"""pack: the samples of ``mix`` → fixed-length token sequences (``udfs.packing``).

Every Spark task streams its rows in Arrow batches, tokenizes each batch at once and packs them with
one best-fit packer, whose bounded buffer is all the memory a task needs. Each sequence then goes to
bucket (= MindRecord shard) ``hash(sequence id) mod mix.buckets``: shards stay balanced, and packing
is not split by bucket, which would leave a partly filled tail per bucket and task.

Output rows are sequences, not documents, so this stage does not pass the document columns through:
``id`` (a hash of the pieces it holds), ``bucket``, ``input_ids``, ``segment_ids``, ``loss_mask``
(int32 arrays of ``seq_len``), ``n_tokens`` (non-padding) and ``segments`` (per piece: sample id,
domain, piece number, tokens, whether it ends its document, and what the document lost to truncation
and hard cuts) — the audit trail from every token back to its document.

Counts reconcile per document: each sequence counts the documents whose last piece (with EOS) it
holds, so ``records_in = documents packed + rejected (empty text) + errors``.
"""
from __future__ import annotations

from contextlib import ExitStack
from typing import Iterator, List

import numpy as np
import pyarrow as pa
import xxhash
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from jobs.stage import Stage, Transformed
from udfs.packing import PackedSequence, SequencePacker
from udfs.tokenizer import cached_tokenizer

SEGMENT = pa.struct([("sample_id", pa.string()), ("domain", pa.string()), ("piece", pa.int32()),
                     ("tokens", pa.int32()), ("last", pa.bool_()), ("truncated", pa.int32()),
                     ("hard_cuts", pa.int32())])
PACK_SCHEMA = pa.schema([
    ("id", pa.string()), ("bucket", pa.int32()),
    ("input_ids", pa.list_(pa.int32())), ("segment_ids", pa.list_(pa.int32())), ("loss_mask", pa.list_(pa.int32())),
    ("n_tokens", pa.int32()), ("segments", pa.list_(SEGMENT)),
    ("_count", pa.int64()), ("_outcome", pa.string()), ("reject_rule", pa.string()),
    ("reject_value", pa.string()), ("error", pa.string()),
])
EMPTY = "empty_text"
# Sequences per Arrow batch handed back to the JVM (a batch holds 3 × rows × seq_len int32).
OUT_ROWS = 256


def _int_lists(arrays: List[np.ndarray]) -> pa.Array:
    flat = np.concatenate(arrays) if arrays else np.zeros(0, np.int32)
    offsets = np.arange(len(arrays) + 1, dtype=np.int32) * (len(arrays[0]) if arrays else 0)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, type=pa.int32()))


def bucket_of_key(key: str, buckets: int) -> int:
    """The shard of a sequence: a hash of its id, so shards are balanced and reruns identical."""
    return xxhash.xxh64_intdigest(key.encode("utf-8")) % buckets


def sequences_batch(sequences: List[PackedSequence], buckets: int) -> pa.RecordBatch:
    n = len(sequences)
    ids = [s.sequence_id for s in sequences]
    segments = [[{"sample_id": p.sample_id, "domain": p.domain, "piece": p.index, "tokens": len(p.tokens),
                  "last": p.last, "truncated": p.truncated, "hard_cuts": p.hard_cuts} for p in s.pieces]
                for s in sequences]
    return pa.RecordBatch.from_arrays([
        pa.array(ids, pa.string()), pa.array([bucket_of_key(i, buckets) for i in ids], pa.int32()),
        _int_lists([s.input_ids for s in sequences]), _int_lists([s.segment_ids for s in sequences]),
        _int_lists([s.loss_mask for s in sequences]),
        pa.array([s.n_tokens for s in sequences], pa.int32()), pa.array(segments, pa.list_(SEGMENT)),
        pa.array([sum(p.last for p in s.pieces) for s in sequences], pa.int64()),
        pa.array(["kept"] * n), pa.nulls(n, pa.string()), pa.nulls(n, pa.string()), pa.nulls(n, pa.string()),
    ], schema=PACK_SCHEMA)


def dropped_row(sample_id: str, buckets: int, outcome: str, reason: str) -> dict:
    return {"id": sample_id, "bucket": bucket_of_key(sample_id, buckets), "_count": 1, "_outcome": outcome,
            **({"reject_rule": reason} if outcome == "rejected" else {"error": reason})}


class PackStage(Stage):
    name = "pack"
    reads = ("mix.buckets",)
    required_columns = ("text",)
    partition_columns = ("bucket",)

    def transform(self, docs: DataFrame, resources: ExitStack) -> Transformed:
        cfg, buckets = self.settings, self.cfg.mix.buckets
        sample_id = F.col("sample_id") if "sample_id" in docs.columns else F.col("id")
        domain = F.col("domain") if "domain" in docs.columns else F.lit("")
        rows = docs.select(sample_id.alias("sample_id"), F.coalesce(domain, F.lit("")).alias("domain"), F.col("text"))

        def pack_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            packer = SequencePacker(cfg, cached_tokenizer(cfg.tokenizer))
            done: List[PackedSequence] = []
            for batch in batches:
                data = batch.to_pydict()
                live = [i for i, text in enumerate(data["text"]) if text]
                dropped = [dropped_row(data["sample_id"][i], buckets, "rejected", EMPTY)
                           for i, text in enumerate(data["text"]) if not text]
                for i, ids in zip(live, packer.encode([data["text"][i] for i in live])):
                    try:
                        done += packer.add_document(ids, data["text"][i], data["sample_id"][i], data["domain"][i])
                    except Exception as exc:  # one bad document must not fail the task
                        dropped.append(dropped_row(data["sample_id"][i], buckets, "error",
                                                   f"{type(exc).__name__}: {exc}"))
                if dropped:
                    yield pa.RecordBatch.from_pylist(dropped, schema=PACK_SCHEMA)
                while len(done) >= OUT_ROWS:
                    yield sequences_batch(done[:OUT_ROWS], buckets)
                    done = done[OUT_ROWS:]
            done += packer.finish()
            for start in range(0, len(done), OUT_ROWS):
                yield sequences_batch(done[start:start + OUT_ROWS], buckets)

        return Transformed(rows.mapInArrow(pack_partition, from_arrow_schema(PACK_SCHEMA)))

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
