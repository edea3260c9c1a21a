"""The stages in pipeline order, each with the job module that runs it.

Which ``udfs/`` module holds each stage's per-record logic (and its config class) is listed in
``udfs/__init__.py``.
"""
from __future__ import annotations

import importlib

from udfs.common.config import ConfigError

# Every stage, in the order the pipeline runs them: cheap before expensive, dedup after filtering,
# decontamination after dedup (fewest documents left) and before the stages that spend work on them.
STAGE_CLASSES = {
    "extract": "jobs.stages.extract:ExtractStage",
    "filter": "jobs.stages.filter:FilterStage",
    "pii": "jobs.stages.pii:PiiStage",
    "dedup": "jobs.stages.dedup:DedupStage",
    "decontam": "jobs.stages.decontam:DecontamStage",
    "score": "jobs.stages.score:ScoreStage",
    "mix": "jobs.stages.mix:MixStage",
    "pack": "jobs.stages.pack:PackStage",
    "mindrecord": "jobs.stages.mindrecord:MindRecordStage",
}
STAGE_ORDER = list(STAGE_CLASSES)


def stage_class(name: str):
    """The Stage class of ``name`` (importing its job module, and with it pyspark, only now)."""
    if name not in STAGE_CLASSES:
        raise ConfigError(f"--stages: unknown stage {name!r} (stages: {', '.join(STAGE_ORDER)})")
    module, cls = STAGE_CLASSES[name].split(":")
    return getattr(importlib.import_module(module), cls)
