"""A trained model on disk, readable without MindSpore (clients, the driver and the CLI use this).

A model directory holds::

    model.json      name, version, hashing spec, network shape, threshold (and per language), metrics
    model.ckpt      MindSpore checkpoint (for fine-tuning, or loading without MindIR)
    model.counted.mindir  the exported inference graph; its inputs are ``features.Encoded``: content,
                    content_segments, lines, lines_rows (int32 [None]) and layout (int32 [None, None])
    MODEL_CARD.md   data sources and licences, counts, held-out metrics, P-R curve
    ngram_memory.bin  the n-gram memory (``features.NgramMemory``), for a spec with ``memory_log2_bits``
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Dict, Optional

from scoring_service.model.features import FeatureHasher, HashingSpec, NgramMemory

MODEL_JSON, CHECKPOINT, MINDIR, CARD = "model.json", "model.ckpt", "model.counted.mindir", "MODEL_CARD.md"
MEMORY = "ngram_memory.bin"
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # scoring_service/
SHIPPED_MODELS_DIR = os.path.join(_PACKAGE_DIR, "models")
DEFAULT_MODEL_DIR = os.path.join(SHIPPED_MODELS_DIR, "default")  # the shipped model


def model_dir_of(model: str) -> str:
    """A model folder, or the name of a model shipped in ``scoring_service/models/`` (``default``,
    ``fluency``): the name is what a config or a command line written for any install can say."""
    shipped = os.path.join(SHIPPED_MODELS_DIR, model)
    if os.sep not in model and model not in (".", "..") and os.path.isfile(os.path.join(shipped, MODEL_JSON)):
        return shipped
    return model


MAX_MEMBERS = 9  # a member validates on one of the nine tenths of the groups the test split leaves


@dataclass(frozen=True)
class NetShape:
    dim: int = 16
    hidden: int = 32
    dropout: float = 0.1
    # Share of training examples whose content bag is hidden, so that the layout bags must carry
    # the decision on their own (what the model falls back on for scripts it has seen little of).
    content_dropout: float = 0.25
    # Networks trained each with another tenth of the groups held out for validation, their scores
    # averaged: one split decides which languages a single network never trains on, and which
    # languages one global threshold fails moves with it.
    members: int = 3

    def __post_init__(self):
        if not 1 <= self.members <= MAX_MEMBERS:
            raise ValueError(f"members: 1 to {MAX_MEMBERS}, not {self.members}")


@dataclass
class ModelInfo:
    """``model.json``: everything needed to hash text and read the network back."""

    name: str
    version: str
    hashing: HashingSpec
    shape: NetShape
    threshold: float = 0.5
    metrics: dict = field(default_factory=dict)
    # Language code (as the filter stage's ``lang``) -> its own threshold, from that language's
    # validation P-R curve; a language not listed uses ``threshold``.
    threshold_by_language: Dict[str, float] = field(default_factory=dict)

    def threshold_for(self, lang: Optional[str]) -> float:
        return self.threshold_by_language.get(lang or "", self.threshold)

    def to_dict(self) -> dict:
        return {"name": self.name, "version": self.version, "hashing": self.hashing.to_dict(),
                "shape": asdict(self.shape), "threshold": self.threshold,
                "threshold_by_language": self.threshold_by_language, "metrics": self.metrics}

    @classmethod
    def from_dict(cls, data: dict) -> "ModelInfo":
        shape = NetShape(**{"members": 1, **data["shape"]})  # a model.json from before members: one network
        return cls(name=data["name"], version=str(data["version"]),
                   hashing=HashingSpec.from_dict(data["hashing"]), shape=shape,
                   threshold=float(data["threshold"]), metrics=data.get("metrics", {}),
                   threshold_by_language={str(lang): float(t) for lang, t in
                                          data.get("threshold_by_language", {}).items()})


def served_file(model_dir: str) -> str:
    """The file the service loads the network from: the MindIR graph, or the checkpoint in a folder
    without one (trained before the graph took the counted content bag of ``features.Encoded``: the
    same parameters; its older graph would read the count classes as rows)."""
    return MINDIR if os.path.exists(os.path.join(model_dir, MINDIR)) else CHECKPOINT


def read_info(model_dir: str) -> ModelInfo:
    path = os.path.join(model_dir, MODEL_JSON)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{model_dir}: not a model directory (no {MODEL_JSON})")
    with open(path, encoding="utf-8") as fh:
        return ModelInfo.from_dict(json.load(fh))


def write_info(model_dir: str, info: ModelInfo) -> None:
    with open(os.path.join(model_dir, MODEL_JSON), "w", encoding="utf-8") as fh:
        json.dump(info.to_dict(), fh, indent=2)


def read_memory(model_dir: str, spec: HashingSpec) -> Optional[NgramMemory]:
    """The model's n-gram memory, checked against its spec (size, then sha256); None for a spec without."""
    if not spec.memory_log2_bits:
        return None
    path = os.path.join(model_dir, MEMORY)
    expected = NgramMemory.bytes_of(spec.memory_log2_bits)
    size = os.path.getsize(path)
    if size != expected:
        raise ValueError(f"{path}: {size} bytes, the model's spec says {expected}")
    with open(path, "rb") as fh:
        return NgramMemory.from_bytes(fh.read(expected), spec)


def model_hasher(model_dir: str, info: ModelInfo) -> FeatureHasher:
    """The hasher a model's texts are encoded with: its spec, and its memory where it has one."""
    return FeatureHasher(info.hashing, read_memory(model_dir, info.hashing))


def write_memory(model_dir: str, memory: NgramMemory) -> None:
    with open(os.path.join(model_dir, MEMORY), "wb") as fh:
        fh.write(memory.to_bytes())
