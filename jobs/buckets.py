"""Buckets: the shards of the training data. mix assigns each copy of a document its bucket; pack and
mindrecord keep them, one Spark task per bucket, so that a bucket becomes exactly one output file."""
from __future__ import annotations

from typing import Dict

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def copy_bucket(doc_id, epoch, buckets: int):
    """The shard of a copy of a document: its document's hash plus its epoch, so the copies of one
    document take consecutive, distinct shards (while copies <= buckets)."""
    return F.pmod(F.pmod(F.xxhash64(doc_id), F.lit(buckets)) + epoch, F.lit(buckets)).cast("int")


def _spark_hash_int(value: int) -> int:
    """``F.hash`` of an int column (Murmur3 x86 32-bit, seed 42), the hash Spark's hash partitioning
    takes the partition from; computed here so that no job is run to learn it."""
    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    k = rotl((value * 0xCC9E2D51) & 0xFFFFFFFF, 15) * 0x1B873593 & 0xFFFFFFFF
    h = (rotl(42 ^ k, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= 4
    h = ((h ^ (h >> 16)) * 0x85EBCA6B) & 0xFFFFFFFF
    h = ((h ^ (h >> 13)) * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def one_task_per_bucket(rows: DataFrame, column: str, buckets: int) -> DataFrame:
    """``rows`` in ``buckets`` partitions, partition ``k`` holding exactly the rows whose ``column`` is
    ``k`` (0 <= k < buckets). ``repartition(buckets, column)`` spreads small integers by their Murmur3
    hash, which leaves some partitions empty and gives others two or three buckets, done one after
    another by one task; here each bucket is replaced by a key that Spark's hash puts in its partition."""
    key_of: Dict[int, int] = {}
    candidate = 0
    while len(key_of) < buckets:
        key_of.setdefault(_spark_hash_int(candidate) % buckets, candidate)
        candidate += 1
    keys = F.array(*[F.lit(key_of[k]) for k in range(buckets)])
    return rows.repartition(buckets, F.element_at(keys, (F.col(column) + 1).cast("int")))
