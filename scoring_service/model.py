"""The quality classifier: fastText's idea in MindSpore, and its export to MindIR.

``QualityNet`` maps the three padded id matrices of ``features.py`` (0 is padding) to P(high
quality). Each is an embedding bag (``nn.Embedding`` + masked mean, which is what ``EmbeddingBag``
does); the three pooled vectors feed a small MLP. Everything is elementwise or a gather, so it runs
on CPU, GPU and Ascend alike and exports to MindIR with every dimension dynamic.
The files a trained model is saved as are described in ``artifacts.py``.
"""
from __future__ import annotations

import os
from typing import Optional

import mindspore as ms
from mindspore import nn, ops

from scoring_service.artifacts import DEFAULT_MODEL_DIR, MINDIR, ModelInfo, NetShape
from scoring_service.features import LAYOUT_VOCAB

# DEFAULT_MODEL_DIR is re-exported for callers that already import MindSpore.
__all__ = ["DEFAULT_MODEL_DIR", "QualityNet", "build_net", "dynamic_inputs", "export_mindir"]


def _masked_mean(table: nn.Embedding, ids):
    # Tensor ops only (no Python scalars): scalar operands take a NumPy-1 code path in PyNative.
    mask = ops.cast(ops.cast(ids, ms.bool_), ms.float32)
    summed = (table(ids) * ops.expand_dims(mask, -1)).sum(axis=1)
    count = mask.sum(axis=1, keepdims=True)
    return summed / ops.maximum(count, ops.ones_like(count))


class QualityNet(nn.Cell):
    """Three embedding bags (content n-grams, line shapes, layout) → MLP → P(high quality)."""

    def __init__(self, buckets: int, shape: NetShape = NetShape()):
        super().__init__()
        self.content = nn.Embedding(buckets, shape.dim, padding_idx=0)
        self.layout = nn.Embedding(LAYOUT_VOCAB, shape.dim, padding_idx=0)
        self.content_dropout = nn.Dropout(p=shape.content_dropout)
        self.hidden = nn.Dense(3 * shape.dim, shape.hidden, activation="relu")
        self.dropout = nn.Dropout(p=shape.dropout)
        self.output = nn.Dense(shape.hidden, 1)

    def logits(self, content, lines, layout):
        pooled = _masked_mean(self.content, content)
        keep = self.content_dropout(ops.ones_like(pooled[:, :1]))  # whole-bag dropout, training only
        features = ops.concat((pooled * keep, _masked_mean(self.layout, lines),
                               _masked_mean(self.layout, layout)), axis=1)
        return self.output(self.dropout(self.hidden(features))).squeeze(-1)

    def construct(self, content, lines, layout):
        return ops.sigmoid(self.logits(content, lines, layout))


def dynamic_inputs():
    """Input signature of the exported graph: every dimension dynamic."""
    return tuple(ms.Tensor(shape=[None, None], dtype=ms.int32) for _ in range(3))


def build_net(info: ModelInfo, checkpoint: Optional[str] = None) -> QualityNet:
    net = QualityNet(info.hashing.buckets, info.shape)
    if checkpoint:
        ms.load_param_into_net(net, ms.load_checkpoint(checkpoint))
    net.set_train(False)
    return net


def export_mindir(net: QualityNet, model_dir: str) -> str:
    """Export with both dimensions dynamic, so one graph serves any batch size and text length."""
    net.set_train(False)
    base = os.path.join(model_dir, MINDIR[: -len(".mindir")])
    ms.export(net, *dynamic_inputs(), file_name=base, file_format="MINDIR")
    return base + ".mindir"
