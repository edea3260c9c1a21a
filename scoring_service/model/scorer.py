"""Inference: text → score, with a seam between the hashing/batching and the runtime that runs the net.

``TextScorer`` hashes texts (``features.py``) and runs them through a ``Backend`` in sub-batches
whose content ids stay under a budget, which bounds the memory of one forward pass. A backend only
maps the encoded batch (``features.Encoded``) to ``float32 [batch]`` probabilities.
``MindSporeBackend`` is the one shipped: it loads the MindIR graph (or, failing that, the checkpoint
into ``QualityNet``) on ``CPU``, ``GPU`` or ``Ascend``. Another runtime (MindSpore Lite, ONNX…)
plugs in by adding a class with ``predict`` to ``BACKENDS``.
"""
from __future__ import annotations

import os
import threading
from typing import Dict, Sequence, Type

import numpy as np

from scoring_service.model.artifacts import CHECKPOINT, MINDIR, ModelInfo, model_hasher, read_info, served_file
from scoring_service.model.features import Bags, Encoded

# Upper bound of content ids per forward pass: ~70 MB of float32 embeddings (and their count column)
# at dim 16. A pass has a fixed cost of its own, so fewer and larger passes score faster.
MAX_BATCH_IDS = 1 << 20


# MindSpore's CPU kernel threads per process. Its pool's idle threads wait by spinning, so threads
# beyond the free cores cost CPU the Spark workers beside the service need; the net is small enough
# that one thread scores as fast. A service scales with replicas (``serve --workers``) instead.
CPU_THREADS = 1


def limit_cpu_threads(threads: int) -> None:
    """MindSpore's CPU kernel thread count, once per process: MindSpore refuses a second setting, so
    the first backend of a process (or the user's own ``threads_num`` call) decides."""
    from mindspore.device_context.cpu import op_tuning

    try:
        op_tuning.threads_num(threads)
    except RuntimeError:  # set already in this process
        pass


class Backend:
    """Runs the network: ``predict(Encoded) -> float32 [B]``."""

    def __init__(self, model_dir: str, info: ModelInfo, device: str, device_id: int = 0):
        self.model_dir, self.info, self.device, self.device_id = model_dir, info, device, device_id

    def predict(self, batch: Encoded) -> np.ndarray:
        raise NotImplementedError


class MindSporeBackend(Backend):
    """MindSpore graph mode; MindIR with dynamic shapes (one compiled graph for every batch shape)."""

    def __init__(self, model_dir: str, info: ModelInfo, device: str = "CPU", device_id: int = 0,
                 fmt: str = "mindir", cpu_threads: int = CPU_THREADS):
        super().__init__(model_dir, info, device, device_id)
        import mindspore as ms

        from scoring_service.model.network import build_net, dynamic_inputs

        self._ms = ms
        if device == "CPU":
            limit_cpu_threads(cpu_threads)
        # set_context, not set_device: set_device refuses to run once a kernel ran in this process
        # (a model trained or loaded before).
        ms.set_context(mode=ms.GRAPH_MODE, device_target=device, device_id=device_id)
        self.loaded_from = served_file(model_dir) if fmt == "mindir" else CHECKPOINT
        if self.loaded_from == MINDIR:
            self.cell = ms.nn.GraphCell(ms.load(os.path.join(model_dir, MINDIR)))
        else:
            self.cell = build_net(info, os.path.join(model_dir, CHECKPOINT))
        self.cell.set_inputs(*dynamic_inputs())
        # One forward pass at a time: the graph executor is not re-entrant.
        self._lock = threading.Lock()

    def predict(self, batch: Encoded) -> np.ndarray:
        tensors = [self._ms.Tensor(np.ascontiguousarray(part, dtype=np.int32)) for part in batch]
        with self._lock:
            out = self.cell(*tensors)
        return out.asnumpy().astype(np.float32).reshape(-1)


BACKENDS: Dict[str, Type[Backend]] = {"mindspore": MindSporeBackend}


class TextScorer:
    """Texts → P(high quality), in sub-batches under a budget of content ids.

    An empty or whitespace-only text scores 0.
    """

    def __init__(self, backend: Backend, max_batch_ids: int = MAX_BATCH_IDS):
        self.backend = backend
        self.info = backend.info
        self.hasher = model_hasher(backend.model_dir, backend.info)
        self.max_batch_ids = max_batch_ids

    @property
    def loaded_from(self):
        return getattr(self.backend, "loaded_from", None)

    @classmethod
    def load(cls, model_dir: str, backend: str = "mindspore", device: str = "CPU", device_id: int = 0,
             **kwargs) -> "TextScorer":
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r} (available: {', '.join(BACKENDS)})")
        return cls(BACKENDS[backend](model_dir, read_info(model_dir), device, device_id, **kwargs))

    def score(self, texts: Sequence[str]) -> np.ndarray:
        return self.score_bags(self.hasher.encode_bags(texts))

    def score_bags(self, bags: Bags) -> np.ndarray:
        """Scores of encoded texts (the service's batches, hashed by its clients or by ``score``)."""
        if not bags.rows:
            return np.zeros(0, dtype=np.float32)
        offsets = bags.content_offsets
        out = np.empty(bags.rows, dtype=np.float32)
        start = 0
        while start < bags.rows:
            # The rows from start whose ids fit the budget together, at least one.
            fit = int(np.searchsorted(offsets, offsets[start] + self.max_batch_ids, side="right")) - 1
            stop = max(fit, start + 1)
            out[start:stop] = self.backend.predict(bags.encoded(np.arange(start, stop)))
            start = stop
        out[bags.line_counts() == 0] = 0.0  # no text (empty or whitespace only): no quality
        return out
