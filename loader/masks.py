"""Attention masks from ``segment_ids``, built inside the network (an L×L mask per sample would be
too large to ship through the data pipeline).
"""
from __future__ import annotations

import mindspore as ms
from mindspore import Tensor, ops


def _init_numpy_bridge() -> None:
    """MindSpore 2.10's wheel is built against NumPy 1. Under NumPy 2 the first PyNative op that takes
    a shape or scalar argument fails once (``SystemError``) while MindSpore's NumPy bridge fails to
    initialise; every later op works. Take that one failure here, at import, rather than in the first
    training step. With ``numpy<2`` this does nothing."""
    try:
        ops.reshape(ops.zeros((1,), ms.int32), (1,))
    except SystemError:
        pass


_init_numpy_bridge()


def block_causal_mask(segment_ids: Tensor) -> Tensor:
    """``(B, L)`` segment ids → ``(B, L, L)`` bool: token i may attend to token j.

    True when j <= i and both belong to the same document piece (segment id > 0): the
    block-diagonal causal mask of packed sequences. A padding token attends to itself only, so its
    softmax row stays finite; its output is masked out of the loss.
    """
    length = segment_ids.shape[-1]
    query = segment_ids.expand_dims(2)
    key = segment_ids.expand_dims(1)
    same_segment = ops.logical_and(ops.equal(query, key), ops.greater(query, ops.zeros_like(query)))
    causal = ops.tril(ops.ones((length, length), ms.int32)).astype(ms.bool_)
    diagonal = ops.eye(length, length, ms.bool_)
    return ops.logical_or(ops.logical_and(same_segment, causal), diagonal)
