"""extract: WARC/ARC files → documents (one Spark task per file, streamed, never whole in memory).

    spark-submit jobs/stages/extract.py --input 'data/*.warc.gz' --output out --run demo
"""
from __future__ import annotations

from contextlib import ExitStack
from typing import Iterator, List

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from corpusmill.storage import open_uri
from jobs.fs import HadoopFS
from jobs.stage import Stage, Transformed, bookkeeping_fields
from udfs.extract.warc import ExtractConfig, WarcDocumentReader

EXTRACT_SCHEMA = pa.schema([
    ("id", pa.string()), ("url", pa.string()), ("host", pa.string()),
    ("crawl_date", pa.timestamp("us", tz="UTC")), ("source", pa.string()), ("text", pa.string()),
    ("content_length", pa.int64()), ("charset", pa.string()), ("record_offset", pa.int64()),
    *bookkeeping_fields("_outcome", "reject_rule", "reject_value", "error", "_count"),
])
# Rows per Arrow batch handed back to the JVM: bounds Python worker memory independent of file size.
BATCH_ROWS = 256


class ExtractStage(Stage):
    name = "extract"
    config = ExtractConfig
    order = 10
    input = "files"
    units = ("WARC records", "documents")
    chunked = True
    reason_columns = {"rejected": "reject_rule", "skipped": "reject_rule", "error": "error"}

    @staticmethod
    def report_cards(stats: dict) -> list:
        return [("WARC records read", stats.get("records_in")), ("documents extracted", stats.get("kept"))]

    def artifact_fingerprint(self) -> str:
        """The URL block lists' contents: a changed list re-runs extract."""
        return self.settings.url_filter.lists_fingerprint()

    def load(self, paths: List[str]) -> DataFrame:
        """One partition per input file, so each file is one task: partition i of a range holds the
        number i, joined to its path. The paths go to the JVM as one Arrow table: a Python list would
        become a Python RDD, whose job starts a Python daemon and workers only to hand them over."""
        numbered = self.spark.createDataFrame(pa.table({"id": pa.array(range(len(paths)), pa.int64()),
                                                        "path": pa.array(paths, pa.string())}))
        one_per_partition = self.spark.range(len(paths), numPartitions=max(len(paths), 1))
        return one_per_partition.join(F.broadcast(numbered), "id").select("path")

    def transform(self, files: DataFrame, resources: ExitStack) -> Transformed:
        reader = WarcDocumentReader(self.settings, self.sample_fraction)
        s3_options = HadoopFS(self.spark).s3_options()  # the store settings Spark's writes use

        def extract_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                for path in batch.column("path").to_pylist():
                    rows = []
                    for row in reader.read(path, lambda: open_uri(path, s3_options, reader.retry)):
                        rows.append(row)
                        if len(rows) >= BATCH_ROWS:
                            yield pa.RecordBatch.from_pylist(rows, schema=EXTRACT_SCHEMA)
                            rows = []
                    if rows:
                        yield pa.RecordBatch.from_pylist(rows, schema=EXTRACT_SCHEMA)

        return Transformed(files.mapInArrow(extract_files, from_arrow_schema(EXTRACT_SCHEMA)))


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("extract"))
