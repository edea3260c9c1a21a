"""The mindrecord stage's per-record logic: its config, the MindRecord schemas and Arrow → records."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List

import numpy as np
import pyarrow as pa

from udfs.config import ConfigError

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
