"""Verifying candidate pairs: the similarity of two documents named by id, from their texts (exact
Jaccard of the shingle sets) or their MinHash signatures (the estimate).

Candidates come from this run's LSH buckets (``clustering.py``) and from earlier runs' indexes
(``earlier_runs.py``, signatures only: the earlier text is not read); both are verified here.
"""
from __future__ import annotations

from typing import Iterator, List, Optional

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.stage import OVER_LIMIT
from jobs.stages.dedup.components import Checkpointer, join_hot_safe, small
from jobs.stages.dedup.signatures import TEXT_KEY
from udfs.dedup.minhash import DedupConfig, estimated_jaccard, jaccard, shingles


def verify(pairs: DataFrame, src_values: DataFrame, dst_values: DataFrame, mode: str,
           settings: DedupConfig) -> DataFrame:
    """The candidate pairs whose similarity reaches the threshold. ``src_values`` and
    ``dst_values`` hold (id, value) of each side: the text under mode jaccard (Jaccard of the
    shingle sets), the signature under mode signature (the MinHash estimate); none keeps every pair."""
    if mode == "none":
        return pairs
    left = pairs.join(src_values.select(F.col("id").alias("src"), F.col("value").alias("src_value")), "src")
    fan_in = pairs.groupBy("dst").agg(F.count(F.lit(1)).alias("_n"))
    right = fan_in.join(dst_values.select(F.col("id").alias("dst"), F.col("value").alias("dst_value")), "dst")
    joined = join_hot_safe(left, right, ["dst"], spread_by="src", cap=settings.hot_key_cap)

    def similarity(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            a = batch.column("src_value").to_pylist()
            b = batch.column("dst_value").to_pylist()
            if mode == "jaccard":
                sim = jaccard(shingles(a, settings), shingles(b, settings))
            else:
                sim = estimated_jaccard(_unpack(a, settings.num_perm), _unpack(b, settings.num_perm))
            yield pa.RecordBatch.from_arrays(
                [batch.column("src"), batch.column("dst"), pa.array(sim, pa.float64())],
                names=["src", "dst", "similarity"])

    schema = T.StructType([pairs.schema["src"], pairs.schema["dst"], T.StructField("similarity", T.DoubleType())])
    scored = joined.select("src", "dst", "src_value", "dst_value").mapInArrow(similarity, schema)
    # A tiny tolerance so that, e.g., 4/5 counts as reaching 0.8 despite float rounding.
    return scored.where(F.col("similarity") >= settings.threshold - 1e-9).select("src", "dst")


def texts_named(docs: DataFrame, sigs: DataFrame, pairs: DataFrame, checkpoint: Checkpointer, ids_repeat: bool,
                broadcast_rows: int) -> DataFrame:
    """``texts_of`` the ids ``pairs`` names."""
    named = pairs.select(F.col("src").alias("id")).union(pairs.select(F.col("dst").alias("id")))
    keys = checkpoint(sigs.select("id", TEXT_KEY).join(named, "id", "left_semi"))
    return texts_of(docs, small(keys, broadcast_rows), ids_repeat)


def texts_of(docs: DataFrame, keys: DataFrame, ids_repeat: bool) -> DataFrame:
    """(id, value = text) of the documents ``keys`` lists by (id, text key): the text of the copy
    whose signature stands for the id (copies of one text: any one). Only those texts leave the scan
    of the documents."""
    texts = docs.where(F.col(OVER_LIMIT).isNull()).select("id", F.xxhash64("text").alias(TEXT_KEY),
                                                        F.col("text").alias("value"))
    texts = texts.join(keys, ["id", TEXT_KEY], "left_semi")
    # Only rows sharing an id can match one key twice; deduplicating sorts every text it passes.
    return (texts.dropDuplicates(["id"]) if ids_repeat else texts).drop(TEXT_KEY)


def _unpack(values: List[Optional[bytes]], num_perm: int) -> np.ndarray:
    return np.frombuffer(b"".join(values), dtype=np.uint32).reshape(-1, num_perm)
