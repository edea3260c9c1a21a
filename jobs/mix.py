"""mix: assign every document to a bucket by a hash of its id; buckets become MindRecord shards.

Output: ``<run>/mix/kept/bucket=<k>/`` — one Parquet file per bucket, rows sorted by id.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.config import ConfigError
from jobs.stage import Stage


@dataclass(frozen=True)
class MixConfig:
    # Number of buckets = MindRecord shards; match (a multiple of) the training device count.
    buckets: int = 8

    def validate(self, prefix: str) -> None:
        if self.buckets < 1:
            raise ConfigError(f"{prefix}.buckets: must be at least 1, got {self.buckets}")


def bucket_of(id_column: str, buckets: int):
    """Deterministic bucket of a document: xxhash64 of its id modulo the bucket count."""
    return F.pmod(F.xxhash64(F.col(id_column)), F.lit(buckets)).cast("int")


class MixStage(Stage):
    name = "mix"

    def transform(self, docs: DataFrame) -> DataFrame:
        return (docs.withColumn("bucket", bucket_of("id", self.settings.buckets))
                .withColumn("_outcome", F.lit("kept")))

    def write(self, out: DataFrame, tmp_dir: str) -> None:
        (out.repartition(self.settings.buckets, "bucket").sortWithinPartitions("bucket", "id")
            .write.mode("overwrite").partitionBy("_outcome", "bucket")
            .option("compression", self.cfg.io.parquet_compression)
            .parquet(tmp_dir))


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("mix"))
