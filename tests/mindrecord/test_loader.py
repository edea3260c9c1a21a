"""The MindSpore loader over real pipeline output, and one training step of a tiny model on it."""
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT
from tools.fixtures.corpus_docs import book_parts, forum_threads, news_articles, web_pages
from jobs import config
from jobs.pipeline import run_pipeline
from jobs.config import PipelineConfig
from loader import block_causal_mask, document_dataset, sequence_dataset, shard_files, token_budget_buckets
from loader.tiny_lm import TinyCausalLM, make_train_step
from udfs.pack.packing import position_ids_from_segments
from udfs.pack.tokenizer import TokenizerConfig, cached_tokenizer

SEQ_LEN = 128


@pytest.fixture(scope="module")
def shards(spark, tmp_path_factory):
    """mix -> pack -> mindrecord (sequences), and mindrecord in document mode on the same mix output."""
    tmp = tmp_path_factory.mktemp("loader")
    docs = book_parts(limit=12) + news_articles(limit=12) + forum_threads(limit=30) + web_pages(limit=30)
    spark.createDataFrame(pd.DataFrame(docs).drop(columns="expected")).write.parquet(str(tmp / "docs"))
    cfg = config.build(PipelineConfig, {"mix": {"buckets": 4}, "pack": {"seq_len": SEQ_LEN}})
    run_pipeline(spark, cfg, [str(tmp / "docs")], ["mix", "pack", "mindrecord"], str(tmp), "seq", echo=lambda _: None)
    documents = config.build(PipelineConfig, {"mix": {"buckets": 4}, "mindrecord": {"mode": "documents"}})
    run_pipeline(spark, documents, [str(tmp / "seq" / "mix" / "kept")], ["mindrecord"], str(tmp), "doc",
                 echo=lambda _: None)
    texts = [r["text"] for r in spark.read.parquet(str(tmp / "seq" / "mix" / "kept")).select("text").collect()]
    return tmp / "seq" / "mindrecord", tmp / "doc" / "mindrecord", texts


def rows_of(data):
    return [{k: v for k, v in batch.items()} for batch in data.create_dict_iterator(output_numpy=True, num_epochs=1)]


def test_sequence_batches_for_each_rank_cover_the_shards(shards):
    sequences, _, _ = shards
    assert len(shard_files(sequences)) == 4
    everything = rows_of(sequence_dataset(sequences, batch_size=1, shuffle=False, drop_remainder=False))
    total = len(everything)
    seen = []
    for rank in range(2):
        batches = rows_of(sequence_dataset(sequences, batch_size=2, rank=rank, world_size=2, shuffle=True, seed=1))
        assert len(batches) == (total + 1) // 2 // 2  # MindDataset gives each rank ceil(n / world) samples
        for batch in batches:
            assert set(batch) == {"input_ids", "segment_ids", "loss_mask", "position_ids"}
            assert all(batch[c].shape == (2, SEQ_LEN) and batch[c].dtype == np.int32 for c in batch)
            np.testing.assert_array_equal(batch["position_ids"], position_ids_from_segments(batch["segment_ids"]))
            seen += [tuple(row) for row in batch["input_ids"]]
    # Both ranks together: every sequence but the dropped remainders. The mixture repeats documents,
    # so a short document packed alone gives identical sequences: compare distinct ones.
    distinct = {tuple(b["input_ids"][0]) for b in everything}
    assert len(set(seen)) >= len(distinct) - 3
    assert set(seen) <= distinct


def test_shuffle_is_reproducible_by_seed(shards):
    sequences, _, _ = shards
    order = lambda seed: [tuple(b["input_ids"][0][:8]) for b in rows_of(sequence_dataset(sequences, 1, seed=seed))]
    assert order(3) == order(3)
    assert order(3) != order(4) and sorted(order(3)) == sorted(order(4))


def test_token_budget_buckets():
    boundaries, sizes = token_budget_buckets(4096, 1024, smallest=128)
    assert boundaries == [129, 257, 513, 1025] and sizes == [32, 16, 8, 4, 1]


def test_document_batches_respect_the_token_budget_and_keep_every_token(shards):
    _, documents, texts = shards
    tokenizer = cached_tokenizer(TokenizerConfig())
    batches = rows_of(document_dataset(documents, token_budget=1024, max_tokens=256, smallest_bucket=32, seed=0))
    real = 0
    for batch in batches:
        rows, longest = batch["input_ids"].shape
        assert rows * longest <= 1024 and longest <= 256
        lengths = (batch["segment_ids"] > 0).sum(axis=1)
        assert lengths.max() == longest
        # length bucketing: a batch holds pieces of similar length (one power-of-two bucket)
        assert lengths.min() > longest // 2 or longest <= 32
        np.testing.assert_array_equal(batch["loss_mask"][:, 0], 0)
        real += int(lengths.sum())
    assert real == sum(len(ids) + 1 for ids in tokenizer.encode_batch(texts))  # every token and one EOS per doc


def test_block_diagonal_mask_isolates_documents_in_the_model(shards):
    import mindspore as ms

    sequences, _, _ = shards
    batch = next(b for b in sequence_dataset(sequences, batch_size=2, shuffle=False).create_dict_iterator(num_epochs=1)
                 if b["segment_ids"].asnumpy().max() >= 2)  # a sequence packing two documents or more
    segments = batch["segment_ids"].asnumpy()
    row = int(np.argmax(segments.max(axis=1)))
    mask = block_causal_mask(batch["segment_ids"]).asnumpy()[row]
    first, second = segments[row] == 1, segments[row] == 2
    assert not mask[np.ix_(second, first)].any() and not mask[np.ix_(first, second)].any()
    assert mask[np.ix_(first, first)].sum() == first.sum() * (first.sum() + 1) // 2  # causal within a document

    ms.set_seed(0)
    model = TinyCausalLM(vocab_size=100277, max_len=SEQ_LEN, dim=8)

    def logits(ids):
        return model(ms.Tensor(ids), batch["segment_ids"], batch["position_ids"]).asnumpy()[row]

    ids = batch["input_ids"].asnumpy().copy()
    before = logits(ids)
    changed = ids.copy()
    changed[row, first] = (changed[row, first] + 1) % 1000  # rewrite document 1 entirely
    after = logits(changed)
    np.testing.assert_allclose(after[second], before[second], rtol=1e-5, atol=1e-5)  # document 2 never sees it
    assert not np.allclose(after[first], before[first])


def test_one_training_step_on_loader_batches(shards):
    import mindspore as ms

    sequences, _, _ = shards
    ms.set_seed(0)
    model = TinyCausalLM(vocab_size=100277, max_len=SEQ_LEN, dim=8)
    step = make_train_step(model, learning_rate=0.05)
    batch = next(sequence_dataset(sequences, batch_size=2, seed=0).create_dict_iterator(num_epochs=1))
    weights = model.head.weight.asnumpy().copy()
    losses = [step(batch) for _ in range(3)]
    assert np.isfinite(losses).all() and losses[0] > 0
    assert losses[2] < losses[0]
    assert not np.allclose(model.head.weight.asnumpy(), weights)


@pytest.mark.slow  # a fresh interpreter imports MindSpore, which takes long
def test_importing_the_loader_prints_nothing():
    """MindSpore's wheel is built against NumPy 1: its first op under NumPy 2 fails once with a long
    notice and a traceback, which the loader takes at import without showing it."""
    result = subprocess.run([sys.executable, "-c", "from loader import sequence_dataset, block_causal_mask"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout == "" and result.stderr == "", result.stderr[-3000:]
