"""extract: WARC/ARC files → documents (one Spark task per file, streamed, never whole in memory).

    spark-submit jobs/extract.py --input 'data/*.warc.gz' --output out --run demo

When ``filter`` runs right after it in the same invocation, extract is fused with it (``fuse``): the
one Python pass over each record batch also computes the filter's columns for the kept documents,
and the filter stage takes those rows from a cache instead of reading ``extract/kept`` back and
sending every text through a second Python worker. Each stage still writes, counts and commits its
own output, and the outputs are those of the two stages run one after the other.
"""
from __future__ import annotations

from contextlib import ExitStack
from typing import Iterator, List
from urllib.parse import unquote, urlsplit

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema

from pyspark import StorageLevel
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from jobs.filter import FILTER_FIELDS, FilterStage
from jobs.stage import BOOKKEEPING_COLUMNS, Stage, Transformed
from udfs.filter import DocumentFilter
from udfs.warc import WarcDocumentReader

EXTRACT_SCHEMA = pa.schema([
    ("id", pa.string()), ("url", pa.string()), ("host", pa.string()),
    ("crawl_date", pa.timestamp("us", tz="UTC")), ("source", pa.string()), ("text", pa.string()),
    ("content_length", pa.int64()), ("charset", pa.string()), ("record_offset", pa.int64()),
    ("_outcome", pa.string()), ("reject_rule", pa.string()), ("reject_value", pa.string()),
    ("error", pa.string()), ("_count", pa.int64()),
])
# Rows per Arrow batch handed back to the JVM: bounds Python worker memory independent of file size.
BATCH_ROWS = 256
# The filter's columns of a kept document, computed in extract's pass when the two are fused (null
# on every other row).
FUSED_FILTER = "_filter"


def open_uri(uri: str):
    """A streaming binary reader for a local path or any URI pyarrow's filesystems understand."""
    parts = urlsplit(uri)
    if parts.scheme in ("", "file"):
        return open(unquote(parts.path) if parts.scheme else uri, "rb")
    from pyarrow import fs

    filesystem, path = fs.FileSystem.from_uri(uri.replace("s3a://", "s3://", 1))
    return filesystem.open_input_stream(path)


class ExtractStage(Stage):
    name = "extract"
    chunked = True
    reason_columns = {"rejected": "reject_rule", "skipped": "reject_rule", "error": "error"}

    def __init__(self, spark, cfg, sample_fraction=None):
        super().__init__(spark, cfg)
        self.sample_fraction = sample_fraction
        self.fused_filter = None

    def fuse(self, follower: Stage) -> bool:
        """Compute ``follower``'s per-record work in this stage's pass when it is the filter stage
        (which then reads its input from that pass: ``FilterStage.fused_input``). The filter's
        settings stay on the filter stage's own config view, so each fingerprint covers what it did."""
        if not isinstance(follower, FilterStage):
            return False
        self.fused_filter = follower
        return True

    def artifact_fingerprint(self) -> str:
        """The URL block lists' contents: a changed list re-runs extract."""
        return self.settings.url_filter.lists_fingerprint()

    def load(self, paths: List[str]) -> DataFrame:
        """One partition per input file, so each file is one task."""
        rdd = self.spark.sparkContext.parallelize([(p,) for p in paths], max(len(paths), 1))
        return self.spark.createDataFrame(rdd, "path string")

    def transform(self, files: DataFrame, resources: ExitStack) -> Transformed:
        reader = WarcDocumentReader(self.settings, self.sample_fraction)
        filter_settings = self.fused_filter.settings if self.fused_filter else None

        def extract_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            to_batch = FusedBatches(filter_settings) if filter_settings else _extract_batch
            for batch in batches:
                for path in batch.column("path").to_pylist():
                    rows = []
                    for row in reader.read(path, lambda: open_uri(path)):
                        rows.append(row)
                        if len(rows) >= BATCH_ROWS:
                            yield to_batch(rows)
                            rows = []
                    if rows:
                        yield to_batch(rows)

        if self.fused_filter is None:
            return Transformed(files.mapInArrow(extract_files, from_arrow_schema(EXTRACT_SCHEMA)))
        schema = StructType(from_arrow_schema(EXTRACT_SCHEMA).fields
                            + [StructField(FUSED_FILTER, from_arrow_schema(FILTER_FIELDS), True)])
        # Persisted so that extract's write computes each record once for both stages; the filter
        # stage releases it (its input comes from here), so it outlives this stage's resources.
        fused = files.mapInArrow(extract_files, schema).persist(StorageLevel.MEMORY_AND_DISK)
        kept_columns = [c for c in EXTRACT_SCHEMA.names if c != "_outcome" and c not in BOOKKEEPING_COLUMNS]
        # The rows and columns filter would read back from extract/kept, plus its own columns.
        self.fused_filter.take_fused_input(fused, fused.where(F.col("_outcome") == "kept").select(
            *kept_columns, *[F.col(f"{FUSED_FILTER}.{name}").alias(name) for name in FILTER_FIELDS.names]))
        return Transformed(fused.drop(FUSED_FILTER))


def _extract_batch(rows: List[dict]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(rows, schema=EXTRACT_SCHEMA)


class FusedBatches:
    """Extract's rows plus, on the kept ones, the filter's columns (``FUSED_FILTER``), as one batch."""

    def __init__(self, filter_settings):
        self.doc_filter = DocumentFilter(filter_settings)  # the LID model itself is cached per worker

    def __call__(self, rows: List[dict]) -> pa.RecordBatch:
        kept = {i: k for k, i in enumerate(i for i, row in enumerate(rows) if row["_outcome"] == "kept")}
        computed = self.doc_filter.apply([rows[i]["text"] for i in kept])
        arrays = [pa.array([computed[f.name][kept[i]] if i in kept else None for i in range(len(rows))], type=f.type)
                  for f in FILTER_FIELDS]
        mask = pa.array([i not in kept for i in range(len(rows))], pa.bool_())
        filtered = pa.StructArray.from_arrays(arrays, fields=list(FILTER_FIELDS), mask=mask)
        return _extract_batch(rows).append_column(FUSED_FILTER, filtered)


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("extract"))
