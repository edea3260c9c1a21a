"""The pipeline's config: the root schema built from every stage's declared section, loaded from YAML.

Each stage declares its config class (``Stage.config``), which lives beside its per-record logic in
``udfs/<stage>/`` (``corpusmill/config.py`` holds the plumbing); this module adds the sections that
belong to the driver (Spark, I/O) and loads a file over the stages' own ``conf/<stage>.yaml``. The
YAML in ``conf/`` names every setting with its default, and is the only place a default is written:
the config classes read theirs from it (``defaults_from_yaml``; the driver's sections from
``conf/local.yaml``), so ``PipelineConfig()`` in a notebook behaves as ``conf/local.yaml``.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence, Type

from corpusmill.config import CONF_DIR, LOCAL_CONFIG, ConfigError, build, deep_merge, defaults_from_yaml, read_yaml
from jobs import registry
from jobs.lease import LeaseConfig
from jobs.stage import Stage


@dataclass(frozen=True)
@defaults_from_yaml("spark")
class SparkConfig:
    master: str
    app_name: str
    # Extra Spark properties (spark.sql.shuffle.partitions, memory settings, …).
    conf: dict
    # Where a JVM that corpusmill starts itself keeps its loaded classes between runs (see
    # jobs/spark.py, ClassArchive); "" = not kept. spark-submit and notebooks start their own JVM.
    class_archive_dir: str

    def validate(self, prefix: str) -> None:
        for key, value in self.conf.items():
            if not isinstance(value, (str, int, float, bool)):
                raise ConfigError(f"{prefix}.conf.{key}: expected a string, number or boolean, "
                                  f"got {type(value).__name__} {value!r}")


@dataclass(frozen=True)
@defaults_from_yaml("io")
class IOConfig:
    parquet_compression: str
    # Input files per chunk of a stage that can commit its progress chunk by chunk (WARC files for
    # extract, Parquet files for pii, score and dedup's signatures); a killed run redoes only unfinished chunks.
    # 0 = the whole input in one go.
    chunk_files: int
    # The longest text (characters) any stage takes in: a longer document is an errors/ row
    # (error = text_too_long, reject_value = its length), measured in the JVM before a Python worker
    # holds it. Gopher's rules keep documents of up to 100,000 words (about 600,000 characters).
    max_text_chars: int

    def validate(self, prefix: str) -> None:
        if self.chunk_files < 0:
            raise ConfigError(f"{prefix}.chunk_files: must be 0 (no chunks) or a positive file count")
        if self.max_text_chars <= 0:
            raise ConfigError(f"{prefix}.max_text_chars: must be a positive number of characters")


# The sections that are not a stage's: where the run goes, and the driver's own settings. Their
# defaults are conf/local.yaml's.
DRIVER_SECTIONS = {"output": str, "run": str, "spark": SparkConfig, "io": IOConfig, "lease": LeaseConfig}


def pipeline_config_class(stages: Optional[Sequence[Type[Stage]]] = None) -> type:
    """The root config class: the run's name and output, the driver's sections, and one section per
    stage (``stages``: the registry's by default), each defaulting to its config class."""
    stages = registry.stages() if stages is None else stages
    local = read_yaml(LOCAL_CONFIG)
    fields = [(name, kind, field(default_factory=kind) if dataclasses.is_dataclass(kind)
               else field(default=local[name])) for name, kind in DRIVER_SECTIONS.items()]
    fields += [(cls.name, cls.config, field(default_factory=cls.config)) for cls in stages]
    root = dataclasses.make_dataclass("PipelineConfig", fields, frozen=True)
    root.__module__ = __name__  # pickled by reference, as a class written here would be
    return root


PipelineConfig = pipeline_config_class()


def load(path: Optional[os.PathLike] = None, overrides: Optional[dict] = None) -> PipelineConfig:
    """Load and validate a pipeline config: each stage's ``conf/<stage>.yaml``, the file over them
    and ``overrides`` over the file."""
    stages = registry.stages()
    data: dict = {}
    for cls in stages:
        shipped = CONF_DIR / f"{cls.name}.yaml"
        if shipped.exists():
            data = deep_merge(data, read_yaml(shipped))
    data = deep_merge(data, read_yaml(Path(path) if path else LOCAL_CONFIG))
    if overrides:
        data = deep_merge(data, overrides)
    # The module's class unless a stage was registered since it was built (a notebook's own stage).
    same = [f.name for f in dataclasses.fields(PipelineConfig)] == [*DRIVER_SECTIONS, *(c.name for c in stages)]
    return build(PipelineConfig if same else pipeline_config_class(stages), data)
