"""The stages in pipeline order, and the root config schema built from their sections."""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from jobs.config import ConfigError, IOConfig, SparkConfig
from udfs.warc import ExtractConfig
from jobs.mix import MixConfig
from jobs.mindrecord import MindRecordConfig

# Every stage name the CLI accepts, in the order the pipeline runs them (cheap before expensive,
# dedup after filtering). A stage whose module is not listed in STAGE_CLASSES is not built yet.
STAGE_ORDER = ["extract", "filter", "pii", "dedup", "score", "mix", "pack", "mindrecord"]

STAGE_CLASSES = {
    "extract": "jobs.extract:ExtractStage",
    "mix": "jobs.mix:MixStage",
    "mindrecord": "jobs.mindrecord:MindRecordStage",
}


@dataclass(frozen=True)
class PipelineConfig:
    output: str = "out"
    run: str = "default"
    spark: SparkConfig = field(default_factory=SparkConfig)
    io: IOConfig = field(default_factory=IOConfig)
    extract: ExtractConfig = field(default_factory=ExtractConfig)
    mix: MixConfig = field(default_factory=MixConfig)
    mindrecord: MindRecordConfig = field(default_factory=MindRecordConfig)


def built_stages() -> list:
    return [name for name in STAGE_ORDER if name in STAGE_CLASSES]


def stage_class(name: str):
    if name not in STAGE_ORDER:
        raise ConfigError(f"--stages: unknown stage {name!r} (stages: {', '.join(STAGE_ORDER)})")
    if name not in STAGE_CLASSES:
        raise ConfigError(f"--stages: stage {name!r} is not built yet (built: {', '.join(built_stages())})")
    module, cls = STAGE_CLASSES[name].split(":")
    return getattr(importlib.import_module(module), cls)
