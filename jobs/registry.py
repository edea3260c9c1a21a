"""The stages in pipeline order, each with the job module that runs it.

Which ``udfs/`` module holds each stage's per-record logic (and its config class) is listed in
``udfs/__init__.py``.
"""
from __future__ import annotations

import importlib

from udfs.config import ConfigError

# Every stage, in the order the pipeline runs them: cheap before expensive, dedup after filtering,
# decontamination after dedup (fewest documents left) and before the stages that spend work on them.
STAGE_CLASSES = {
    "extract": "jobs.extract:ExtractStage",
    "filter": "jobs.filter:FilterStage",
    "pii": "jobs.pii:PiiStage",
    "dedup": "jobs.dedup:DedupStage",
    "decontam": "jobs.decontam:DecontamStage",
    "score": "jobs.score:ScoreStage",
    "mix": "jobs.mix:MixStage",
    "pack": "jobs.pack:PackStage",
    "mindrecord": "jobs.mindrecord:MindRecordStage",
}
STAGE_ORDER = list(STAGE_CLASSES)


def stage_class(name: str):
    """The Stage class of ``name`` (importing its job module, and with it pyspark, only now)."""
    if name not in STAGE_CLASSES:
        raise ConfigError(f"--stages: unknown stage {name!r} (stages: {', '.join(STAGE_ORDER)})")
    module, cls = STAGE_CLASSES[name].split(":")
    return getattr(importlib.import_module(module), cls)
