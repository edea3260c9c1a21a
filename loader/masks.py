"""Attention masks from ``segment_ids``, built inside the network (an L×L mask per sample would be
too large to ship through the data pipeline).
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import Iterator

import mindspore as ms
from mindspore import Tensor, ops


@contextlib.contextmanager
def _stderr_swallowed() -> Iterator[None]:
    """Everything written to stderr meanwhile, by Python (``sys.stderr``) or by C++ (file descriptor 2),
    is dropped."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null, contextlib.redirect_stderr(io.StringIO()):
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _init_numpy_bridge() -> None:
    """MindSpore 2.10's wheel is built against NumPy 1. Under NumPy 2 the first PyNative op that takes
    a shape or scalar argument fails once (``SystemError``) while MindSpore's NumPy bridge fails to
    initialise; every later op works. Take that one failure here, at import, rather than in the first
    training step, and without its output: NumPy's 30-line "compiled using NumPy 1.x" notice with a
    traceback and MindSpore's "Numpy init failed" say nothing a user can act on, since every later op
    works. With ``numpy<2`` this does nothing."""
    with _stderr_swallowed():
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
