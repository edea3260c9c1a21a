"""The stages in pipeline order, and the root config schema built from their sections."""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from jobs.config import ConfigError, IOConfig, SparkConfig
from udfs.warc import ExtractConfig
from udfs.filter import FilterConfig
from udfs.pii import PiiConfig
from udfs.minhash import DedupConfig
from udfs.score import ScoreConfig
from udfs.mixture import MixConfig
from udfs.packing import PackConfig
from jobs.mindrecord import MindRecordConfig

# Every stage name the CLI accepts, in the order the pipeline runs them (cheap before expensive,
# dedup after filtering). A stage whose module is not listed in STAGE_CLASSES is not built yet.
STAGE_ORDER = ["extract", "filter", "pii", "dedup", "score", "mix", "pack", "mindrecord"]

STAGE_CLASSES = {
    "extract": "jobs.extract:ExtractStage",
    "filter": "jobs.filter:FilterStage",
    "pii": "jobs.pii:PiiStage",
    "dedup": "jobs.dedup:DedupStage",
    "score": "jobs.score:ScoreStage",
    "mix": "jobs.mix:MixStage",
    "pack": "jobs.pack:PackStage",
    "mindrecord": "jobs.mindrecord:MindRecordStage",
}


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
    score: ScoreConfig = field(default_factory=ScoreConfig)
    mix: MixConfig = field(default_factory=MixConfig)
    pack: PackConfig = field(default_factory=PackConfig)
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
