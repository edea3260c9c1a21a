"""The mindrecord stage's per-record logic: its config, the MindRecord schemas, Arrow → records, and
the plan that evens out rows per shard.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

import numpy as np
import pyarrow as pa

from corpusmill.config import ConfigError, defaults_from_yaml

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
# mix names the copies of a document (its repeats) ``<id>#<epoch>``; pack keeps the name per piece.
COPY_SUFFIX = "#[0-9]+$"


@dataclass(frozen=True)
@defaults_from_yaml("mindrecord")
class MindRecordConfig:
    # FileWriter pads each file to header + pages; the defaults (64 MB pages) waste space on small data.
    header_size_kb: int
    page_size_kb: int
    # sequences (packed, from pack), documents (from mix) or auto (sequences when the input has them).
    mode: str
    # Local folder on each executor where FileWriter writes a shard before it is uploaded to --output;
    # "" = Spark's local dirs (SPARK_LOCAL_DIRS, YARN's container dirs on a cluster), else the temp dir.
    scratch_dir: str
    # Finished mindrecord stages of earlier runs (URIs) that this run's manifest.json lists with its own
    # shards, so training reads old and new together; each one's own earlier stages come along.
    earlier: List[str]

    def validate(self, prefix: str) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"{prefix}.mode: must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not 16 <= self.header_size_kb <= 131072:
            raise ConfigError(f"{prefix}.header_size_kb: must be within 16..131072")
        if not 32 <= self.page_size_kb <= 262144:
            raise ConfigError(f"{prefix}.page_size_kb: must be within 32..262144")


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


def balance_plan(rows_per_bucket: Dict[int, int], buckets: int) -> List[Tuple[int, int, int, int]]:
    """Moves that leave every shard with ``total // buckets`` or one more rows.

    Returns ``(bucket, start, stop, shard)``: the rows of ``bucket`` numbered ``start..stop-1`` (in
    any fixed order within the bucket) go to ``shard``; every other row stays in its bucket's shard.
    The larger buckets keep the one extra row, so as few rows as possible move.
    """
    counts = [rows_per_bucket.get(b, 0) for b in range(buckets)]
    base, extra = divmod(sum(counts), buckets)
    fullest = sorted(range(buckets), key=lambda b: (-counts[b], b))
    target = [base] * buckets
    for b in fullest[:extra]:
        target[b] += 1
    surplus = [(b, target[b], counts[b]) for b in range(buckets) if counts[b] > target[b]]
    deficits = [(b, target[b] - counts[b]) for b in range(buckets) if counts[b] < target[b]]
    moves = []
    for shard, need in deficits:
        while need:
            bucket, start, stop = surplus[0]
            take = min(need, stop - start)
            moves.append((bucket, start, start + take, shard))
            need -= take
            surplus[0] = (bucket, start + take, stop)
            if start + take == stop:
                surplus.pop(0)
    return moves
