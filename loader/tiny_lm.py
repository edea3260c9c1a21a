"""A tiny causal language model that trains on the loader's batches: the reference for how a trainer
uses ``segment_ids`` (block-diagonal attention), ``position_ids`` (reset per document) and ``loss_mask``.

    python -m loader.tiny_lm out/demo/mindrecord --steps 2     # smoke-test shards with a few steps
"""
from __future__ import annotations

import argparse
import math
import sys

import mindspore as ms
from mindspore import Tensor, nn, ops

from loader.masks import block_causal_mask

MASKED = -1e9


class TinyCausalLM(nn.Cell):
    """Embeddings, one single-head self-attention layer with the block-diagonal causal mask, LM head."""

    def __init__(self, vocab_size: int, max_len: int, dim: int = 32):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, dim)
        self.positions = nn.Embedding(max_len, dim)
        self.query, self.key, self.value = nn.Dense(dim, dim), nn.Dense(dim, dim), nn.Dense(dim, dim)
        self.head = nn.Dense(dim, vocab_size)
        self.scale = 1.0 / math.sqrt(dim)

    def construct(self, input_ids: Tensor, segment_ids: Tensor, position_ids: Tensor) -> Tensor:
        x = self.tokens(input_ids) + self.positions(position_ids)
        scores = ops.matmul(self.query(x), self.key(x).swapaxes(1, 2)) * self.scale
        scores = ops.masked_fill(scores, ops.logical_not(block_causal_mask(segment_ids)), MASKED)
        x = x + ops.matmul(ops.softmax(scores, -1), self.value(x))
        return self.head(x)


def masked_lm_loss(logits: Tensor, input_ids: Tensor, loss_mask: Tensor) -> Tensor:
    """Mean next-token cross-entropy over the targets ``loss_mask`` marks (position t predicts t+1)."""
    vocab = logits.shape[-1]
    labels = input_ids[:, 1:].reshape(-1)
    weights = loss_mask[:, 1:].reshape(-1).astype(ms.float32)
    losses = ops.cross_entropy(logits[:, :-1].reshape(-1, vocab), labels, reduction="none")
    return (losses * weights).sum() / ops.maximum(weights.sum(), ops.ones_like(weights.sum()))


def make_train_step(model: TinyCausalLM, learning_rate: float = 1e-2):
    """A function that runs one optimiser step on a batch dict and returns the loss."""
    optimizer = nn.Adam(model.trainable_params(), learning_rate=learning_rate)

    def forward(input_ids, segment_ids, loss_mask, position_ids):
        return masked_lm_loss(model(input_ids, segment_ids, position_ids), input_ids, loss_mask)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)

    def step(batch: dict) -> float:
        loss, grads = grad_fn(batch["input_ids"], batch["segment_ids"], batch["loss_mask"], batch["position_ids"])
        optimizer(grads)
        return float(loss.asnumpy())

    return step


def main(argv=None) -> int:
    from loader.dataset import sequence_dataset

    parser = argparse.ArgumentParser(prog="python -m loader.tiny_lm", description=__doc__.splitlines()[0])
    parser.add_argument("shards", help="a mindrecord stage folder (sequence mode) or shard files")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--vocab-size", type=int, default=100277, help="default: cl100k_base")
    args = parser.parse_args(argv)
    data = sequence_dataset(args.shards, batch_size=args.batch_size)
    model, step = None, None
    for i, batch in enumerate(data.create_dict_iterator(num_epochs=1)):
        if model is None:
            model = TinyCausalLM(args.vocab_size, batch["input_ids"].shape[1], dim=16)
            step = make_train_step(model)
        print(f"step {i}: loss {step(batch):.4f}")
        if i + 1 >= args.steps:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
