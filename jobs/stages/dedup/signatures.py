"""The dedup stage's per-document pass, and the orders that pick one row among several.

``signatures`` is the one pass that reads the texts (the costly part, run chunk by chunk when the
stage runs by chunks); every later step reads its rows. ``rank`` (the survivor order) and
``copy_order`` (which copy of an id stands for it) are defined here beside ``one_per_id``, which
applies both to the signature rows.
"""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.stage import OVER_LIMIT
from udfs.dedup.minhash import DedupConfig, signature_batch

# xxhash64 of the text, computed in the JVM: ranks the copies of an id the same way in the signature
# rows (``one_per_id``) and in the documents (``copy_order``).
TEXT_KEY = "text_key"


def signatures(docs: DataFrame, settings: DedupConfig) -> DataFrame:
    """(id, text_hash, bands[, signature when fuzzy], survivor-order columns): one Arrow pass over
    id + text."""
    order = [c.lstrip("-") for c in settings.survivor_order]
    # Signatures verify candidates (verify: signature) and go into the index for later runs.
    with_signature = settings.fuzzy
    fields = [docs.schema["id"], T.StructField(TEXT_KEY, T.LongType()), T.StructField("text_hash", T.StringType()),
              T.StructField("bands", T.ArrayType(T.LongType()))]
    if with_signature:
        fields.append(T.StructField("signature", T.BinaryType()))
    fields += [docs.schema[c] for c in order]

    def compute(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            texts = [t or "" for t in batch.column("text").to_pylist()]
            out = signature_batch(texts, settings)
            has = out.shingle_counts > 0
            # Documents without shingles (empty text) take part in exact dedup only.
            bands = pa.array([row if ok else None for row, ok in zip(out.bands.tolist(), has)],
                             type=pa.list_(pa.int64()))
            columns = [batch.column("id"), batch.column(TEXT_KEY), pa.array(out.exact_hashes, pa.string()), bands]
            names = ["id", TEXT_KEY, "text_hash", "bands"]
            if with_signature:
                columns.append(pa.array([row.tobytes() for row in out.signatures], pa.binary()))
                names.append("signature")
            columns += [batch.column(c) for c in order]
            yield pa.RecordBatch.from_arrays(columns, names=names + order)

    return (docs.select("id", F.xxhash64("text").alias(TEXT_KEY), "text", *order)
            .mapInArrow(compute, T.StructType(fields)))


def one_per_id(sigs: DataFrame, settings: DedupConfig) -> DataFrame:
    """One signature row per id: of several sharing it, the first copy (``copy_order``'s, among
    the texts within the limit: the only ones with signatures). An aggregation, so an id with a
    million copies is combined map-side, not gathered in one task."""
    fields = [c for c in sigs.columns if c != "id"]
    first = F.min(F.struct(rank(settings).alias("_rank"), F.col(TEXT_KEY).alias("_key"),
                           F.struct(*fields).alias("_row")))
    return sigs.groupBy("id").agg(first.alias("_first")).select("id", "_first._row.*")


def copy_order(docs: DataFrame, settings: DedupConfig) -> Window:
    """The order of the rows sharing an id: texts within the limit first, then the survivor order,
    the text, and the whole row, so the copy kept is the same on every run."""
    hashable = [c for c in docs.columns if not isinstance(docs.schema[c].dataType, T.MapType)]
    return Window.partitionBy("id").orderBy(F.col(OVER_LIMIT).isNotNull(), rank(settings), F.xxhash64("text"),
                                            F.xxhash64(*hashable))


def rank(settings: DedupConfig) -> Column:
    """Survivor order as a struct: min() picks the survivor (survivor_order, then lowest id)."""
    keys = []
    for spec in settings.survivor_order:
        column = F.col(spec.lstrip("-"))
        # Nulls rank last; "-" orders a numeric column descending.
        keys += [column.isNull(), -column if spec.startswith("-") else column]
    return F.struct(*[k.alias(f"k{i}") for i, k in enumerate(keys)], F.col("id").alias("id"))
