"""The quality classifier: fastText's idea in MindSpore, and its export to MindIR.

``QualityNet`` maps the bags of ``features.Encoded`` to P(high quality). Each bag is an embedding
bag (``nn.Embedding`` + mean, which is what ``EmbeddingBag`` does): the variable-length bags are
summed per text with a segment sum over their unpadded ids, so a batch costs what its ids cost,
whatever the spread of its lengths; the content bag lists each id once per count class and sums
the classes' powers of two after. The three pooled vectors feed a small MLP. Every row is computed
on its own (no matrix product across rows), so a text scores the same alone as in any batch.
Everything is a gather, a segment sum, a reduction or elementwise, so it runs on CPU, GPU and
Ascend alike and exports to MindIR with every dimension dynamic. A model of several members
(``NetShape.members``) is a ``MemberMean`` of such networks, exported as one graph.
The files a trained model is saved as are described in ``artifacts.py``.
"""
from __future__ import annotations

import os
from typing import Optional

import mindspore as ms
import numpy as np
from mindspore import nn, ops

from scoring_service.model.artifacts import MINDIR, ModelInfo, NetShape
from scoring_service.model.features import COUNT_BITS, LAYOUT_VOCAB


def _present_column(vocab: int) -> ms.Tensor:
    """1 per id, 0 for id 0 (padding): gathered beside an id's embedding, its segment sum counts the
    ids of a bag in the same pass as the embeddings' sum."""
    column = np.ones((vocab, 1), dtype=np.float32)
    column[0] = 0
    return ms.Tensor(column)


def _bag_sums(table: nn.Embedding, present: ms.Tensor, ids, segments, n_segments):
    # One gather and one segment sum for both the sum and the count: the segment sum's cost is
    # mostly per id, not per column. Id 0 is padding (a batch without ids holds one): it is not
    # counted.
    return ops.unsorted_segment_sum(ops.gather(ops.concat((table.embedding_table, present), axis=1), ids, 0),
                                    segments, n_segments)


def _bag_mean(summed_count):
    # A row without counted ids pools to zero, whatever the table's row 0 holds.
    summed, count = summed_count[:, :-1], summed_count[:, -1:]
    one = ops.ones_like(count)
    return summed / ops.maximum(count, one) * ops.minimum(count, one)


def _masked_mean(table: nn.Embedding, ids):
    # Tensor ops only (no Python scalars): scalar operands take a NumPy-1 code path in PyNative.
    mask = ops.cast(ops.cast(ids, ms.bool_), ms.float32)
    summed = (table(ids) * ops.expand_dims(mask, -1)).sum(axis=1)
    count = mask.sum(axis=1, keepdims=True)
    return summed / ops.maximum(count, ops.ones_like(count))


def _rowwise_dense(layer: nn.Dense, x):
    # x @ W.T + b as a product and a sum per row: a matrix product's rounding depends on how many rows
    # it is given (its kernel is chosen by shape), which would make a text's score depend on its batch.
    return (ops.expand_dims(x, 1) * layer.weight).sum(axis=-1) + layer.bias


class QualityNet(nn.Cell):
    """Three embedding bags (content n-grams, line shapes, layout) → MLP → P(high quality)."""

    def __init__(self, buckets: int, shape: NetShape = NetShape(), layout_vocab: int = LAYOUT_VOCAB):
        super().__init__()
        self.content = nn.Embedding(buckets, shape.dim, padding_idx=0)
        self.layout = nn.Embedding(layout_vocab, shape.dim, padding_idx=0)
        self.content_present, self.layout_present = _present_column(buckets), _present_column(layout_vocab)
        self.class_weights = ms.Tensor((2.0 ** np.arange(COUNT_BITS)).reshape(1, COUNT_BITS, 1), ms.float32)
        self.content_dropout = nn.Dropout(p=shape.content_dropout)
        self.hidden = nn.Dense(3 * shape.dim, shape.hidden)
        self.dropout = nn.Dropout(p=shape.dropout)
        self.output = nn.Dense(shape.hidden, 1)

    def logits(self, content, content_segments, lines, lines_rows, layout):
        batch = ops.shape(layout)[0]
        # Each row's count classes (features.COUNT_BITS), weighed by their powers of two and added up.
        # The segment count as a tensor: the exported graph on CPU refuses a scalar product there.
        classes = _bag_sums(self.content, self.content_present, content, content_segments,
                           ops.scalar_to_tensor(batch * COUNT_BITS, ms.int32))
        pooled = _bag_mean((ops.reshape(classes, (batch, COUNT_BITS, -1)) * self.class_weights).sum(axis=1))
        keep = self.content_dropout(ops.ones_like(pooled[:, :1]))  # whole-bag dropout, training only
        lines_pooled = _bag_mean(_bag_sums(self.layout, self.layout_present, lines, lines_rows, batch))
        features = ops.concat((pooled * keep, lines_pooled, _masked_mean(self.layout, layout)), axis=1)
        hidden = self.dropout(ops.relu(_rowwise_dense(self.hidden, features)))
        return _rowwise_dense(self.output, hidden).squeeze(-1)

    def construct(self, content, content_segments, lines, lines_rows, layout):
        return ops.sigmoid(self.logits(content, content_segments, lines, lines_rows, layout))


class MemberMean(nn.Cell):
    """``NetShape.members`` networks of one shape, each trained with its own validation split; the
    mean of their probabilities. Its checkpoint names member k's parameters ``members.k.…``."""

    def __init__(self, buckets: int, shape: NetShape, layout_vocab: int = LAYOUT_VOCAB):
        super().__init__()
        self.members = nn.CellList([QualityNet(buckets, shape, layout_vocab) for _ in range(shape.members)])

    def construct(self, content, content_segments, lines, lines_rows, layout):
        total = self.members[0](content, content_segments, lines, lines_rows, layout)
        for member in self.members[1:]:
            total = total + member(content, content_segments, lines, lines_rows, layout)
        return total / len(self.members)


def dynamic_inputs():
    """Input signature of the exported graph (``features.Encoded``): every dimension dynamic."""
    ids = ms.Tensor(shape=[None], dtype=ms.int32)
    return ids, ids, ids, ids, ms.Tensor(shape=[None, None], dtype=ms.int32)


def build_net(info: ModelInfo, checkpoint: Optional[str] = None) -> nn.Cell:
    """The model's network (a ``MemberMean`` for a shape of several members), with the checkpoint's weights."""
    net_class = MemberMean if info.shape.members > 1 else QualityNet
    net = net_class(info.hashing.buckets, info.shape, info.hashing.layout_vocab)
    if checkpoint:
        ms.load_param_into_net(net, ms.load_checkpoint(checkpoint))
    net.set_train(False)
    return net


def export_mindir(net: nn.Cell, model_dir: str) -> str:
    """Export with every dimension dynamic, so one graph serves any batch size and text length."""
    net.set_train(False)
    base = os.path.join(model_dir, MINDIR[: -len(".mindir")])
    ms.export(net, *dynamic_inputs(), file_name=base, file_format="MINDIR")
    return base + ".mindir"
