"""The pipeline's config: the root schema built from every stage's section, loaded from YAML.

Each stage's config class lives beside its per-record logic in ``udfs/`` (``udfs/common/config.py`` holds
the plumbing); this module adds the sections that belong to the driver (Spark, I/O) and loads a
file. The YAML in ``conf/`` names every setting with its default: scalar defaults are the classes'
and restated there, tables (filter rules, mix domains) are read from there; ``tests/test_config.py``
checks that both agree, so ``PipelineConfig()`` in a notebook behaves as ``conf/local.yaml``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from udfs.common.config import CONF_DIR, ConfigError, build, deep_merge, read_yaml
from udfs.decontam.ngram_index import DecontamConfig
from udfs.filter.rules import FilterConfig
from udfs.dedup.minhash import DedupConfig
from udfs.mindrecord.records import MindRecordConfig
from udfs.mix.mixture import MixConfig
from udfs.pack.packing import PackConfig
from udfs.pii.scrub import PiiConfig
from udfs.score.scoring import ScoreConfig
from udfs.extract.warc import ExtractConfig

DEFAULT_CONFIG = CONF_DIR / "local.yaml"


@dataclass(frozen=True)
class SparkConfig:
    master: str = "local[*]"
    app_name: str = "corpusmill"
    # Extra Spark properties (spark.sql.shuffle.partitions, memory settings, …).
    conf: dict = field(default_factory=lambda: {
        "spark.driver.memory": "4g",
        "spark.sql.shuffle.partitions": 8,
        # Python workers hold one Arrow batch at a time; keep batches small for large documents.
        "spark.sql.execution.arrow.maxRecordsPerBatch": 2000,
        # Local mode: the client compiler only (see conf/local.yaml).
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
        # No web UI in local runs (see conf/local.yaml).
        "spark.ui.enabled": False,
        # Python workers run the installed pyspark, not Spark's zip copies of it (jobs/python_daemon.py).
        "spark.python.daemon.module": "jobs.python_daemon",
    })
    # Where a JVM that corpusmill starts itself keeps its loaded classes between runs (see
    # jobs/spark.py, ClassArchive); "" = not kept. spark-submit and notebooks start their own JVM.
    class_archive_dir: str = "~/.cache/corpusmill/jvm"

    def validate(self, prefix: str) -> None:
        for key, value in self.conf.items():
            if not isinstance(value, (str, int, float, bool)):
                raise ConfigError(f"{prefix}.conf.{key}: expected a string, number or boolean, "
                                  f"got {type(value).__name__} {value!r}")


@dataclass(frozen=True)
class IOConfig:
    parquet_compression: str = "zstd"
    # Input files per chunk of a stage that can commit its progress chunk by chunk (WARC files for
    # extract, Parquet files for pii, score and dedup's signatures); a killed run redoes only unfinished chunks.
    # 0 = the whole input in one go.
    chunk_files: int = 0

    def validate(self, prefix: str) -> None:
        if self.chunk_files < 0:
            raise ConfigError(f"{prefix}.chunk_files: must be 0 (no chunks) or a positive file count")


@dataclass(frozen=True)
class PipelineConfig:
    output: str = "out"
    run: str = "default"
    spark: SparkConfig = field(default_factory=SparkConfig)
    io: IOConfig = field(default_factory=IOConfig)
    extract: ExtractConfig = field(default_factory=ExtractConfig)
    filter: FilterConfig = field(default_factory=FilterConfig)
    pii: PiiConfig = field(default_factory=PiiConfig)
    dedup: DedupConfig = field(default_factory=DedupConfig)
    decontam: DecontamConfig = field(default_factory=DecontamConfig)
    score: ScoreConfig = field(default_factory=ScoreConfig)
    mix: MixConfig = field(default_factory=MixConfig)
    pack: PackConfig = field(default_factory=PackConfig)
    mindrecord: MindRecordConfig = field(default_factory=MindRecordConfig)


def load(path: Optional[os.PathLike] = None, overrides: Optional[dict] = None) -> PipelineConfig:
    """Load and validate a pipeline config; ``overrides`` is merged over the file."""
    data = read_yaml(Path(path) if path else DEFAULT_CONFIG)
    if overrides:
        data = deep_merge(data, overrides)
    return build(PipelineConfig, data)
