"""``mindspore.dataset`` pipelines over corpusmill's MindRecord shards, for one rank of a training job.

Both modes yield the same columns, so one training step serves either:
``input_ids``, ``segment_ids`` (0 = padding), ``loss_mask`` (1 where the token is a next-token target
within its own segment) and ``position_ids`` (restarting at every segment).

* ``sequence_dataset``: the packed sequences (fixed ``seq_len``), shuffled, split across ranks and
  batched by a fixed number of sequences.
* ``document_dataset``: the documents (``mindrecord.mode: documents``), tokenized on the fly, long
  ones cut at paragraph/sentence boundaries into pieces of at most ``max_tokens`` (as ``pack`` does),
  then batched by length buckets with a token budget per batch (dynamic batching: a budget in tokens,
  not samples, and similar lengths together to cut padding).

Where the shards are: a local folder, a list of files, or the URI of a ``mindrecord`` stage on any
file system ``pyarrow.fs`` reaches (``s3://``, ``s3a://``, ``hdfs://``, ``gs://``, ``abfs://``). A remote
stage is downloaded once into a local cache (``cache_dir``; default ``$CORPUSMILL_SHARD_CACHE`` or
``~/.cache/corpusmill/shards``), in a folder named by the stage's completion marker, so a re-run stage
is fetched anew and an unfinished one is refused; every rank on a node reads the same copy. S3
endpoint and keys come from ``storage_options`` (``pyarrow.fs.S3FileSystem`` arguments) or the AWS
environment (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``).

Ranks: ``rank``/``world_size`` default to MindSpore's ``RANK_ID``/``RANK_SIZE`` environment (set by
``msrun``), else a single process. MindDataset gives every rank the same number of samples.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

import mindspore.dataset as ds
import numpy as np

from corpusmill.storage import file_system, is_remote
from loader.shards import stage_shard_files
from udfs.pack.packing import Document, PackConfig, loss_mask_from_segments, position_ids_from_segments, split_document
from udfs.pack.tokenizer import TokenizerConfig, cached_tokenizer

SEQUENCE_COLUMNS = ["input_ids", "segment_ids", "loss_mask"]
COLUMNS = ["input_ids", "segment_ids", "loss_mask", "position_ids"]


def shard_cache_dir() -> str:
    return os.environ.get("CORPUSMILL_SHARD_CACHE") or os.path.expanduser("~/.cache/corpusmill/shards")


def shard_files(path: Union[str, Sequence[str]], cache_dir: Optional[str] = None,
                storage_options: Optional[dict] = None) -> List[str]:
    """Local MindRecord files of a finished ``mindrecord`` stage (a folder or a remote URI), one file,
    or a list.

    A stage gives the shards its completion marker names (a stray file in its folder is not read);
    one whose ``manifest.json`` lists the stages of earlier runs (``mindrecord.earlier``) gives their
    shards too, earliest first, each stage's checked against its own marker: old and new are read as
    one dataset (``loader.shards.stage_shard_files``)."""
    if not isinstance(path, (str, Path)):
        return [str(p) for p in path]
    local = file_system(str(path))[1]  # a plain path, or the path of a file:// URI
    if is_remote(path) or Path(local).is_dir():
        return stage_shard_files(str(path), cache_dir or shard_cache_dir(), storage_options)
    return [str(local)]


def rank_and_world(rank: Optional[int], world_size: Optional[int]) -> Tuple[int, int]:
    world = world_size if world_size is not None else int(os.environ.get("RANK_SIZE", "1"))
    rank = rank if rank is not None else int(os.environ.get("RANK_ID", "0"))
    if not 0 <= rank < world:
        raise ValueError(f"rank {rank} is not within world size {world}")
    return rank, world


def _add_positions(segment_ids: np.ndarray):
    return segment_ids, position_ids_from_segments(segment_ids)


def sequence_dataset(path, batch_size: int, rank: Optional[int] = None, world_size: Optional[int] = None,
                     shuffle: bool = True, seed: int = 0, drop_remainder: bool = True,
                     num_parallel_workers: Optional[int] = None, cache_dir: Optional[str] = None,
                     storage_options: Optional[dict] = None) -> ds.Dataset:
    """Batches of packed sequences for this rank: each column ``(batch_size, seq_len)`` int32."""
    rank, world = rank_and_world(rank, world_size)
    ds.config.set_seed(seed)
    data = ds.MindDataset(shard_files(path, cache_dir, storage_options), columns_list=SEQUENCE_COLUMNS, shuffle=shuffle,
                          num_shards=world if world > 1 else None, shard_id=rank if world > 1 else None,
                          num_parallel_workers=num_parallel_workers)
    data = data.map(operations=_add_positions, input_columns=["segment_ids"],
                    output_columns=["segment_ids", "position_ids"]).project(COLUMNS)
    return data.batch(batch_size, drop_remainder=drop_remainder)


def token_budget_buckets(token_budget: int, max_tokens: int, smallest: int = 64) -> Tuple[List[int], List[int]]:
    """Length buckets (powers of two from ``smallest`` up to ``max_tokens``) and the batch size of each
    that keeps ``batch × longest length ≤ token_budget``; in MindSpore's ``bucket_batch_by_length`` form."""
    if token_budget < max_tokens:
        raise ValueError(f"token_budget {token_budget} must hold at least one piece of max_tokens {max_tokens}")
    uppers = []
    upper = smallest
    while upper < max_tokens:
        uppers.append(upper)
        upper *= 2
    uppers.append(max_tokens)
    boundaries = [u + 1 for u in uppers]  # bucket i holds lengths < boundaries[i]
    return boundaries, [token_budget // u for u in uppers] + [1]


class DocumentPieces:
    """This rank's documents, tokenized and cut into pieces of at most ``max_tokens`` (EOS on the last)."""

    def __init__(self, files: List[str], rank: int, world: int, tokenizer: TokenizerConfig, max_tokens: int,
                 shuffle: bool):
        self.files, self.rank, self.world, self.shuffle = files, rank, world, shuffle
        self.cut = PackConfig(seq_len=max_tokens, tokenizer=tokenizer)

    def __iter__(self):
        tokenizer = cached_tokenizer(self.cut.tokenizer)
        documents = ds.MindDataset(self.files, columns_list=["text"], shuffle=self.shuffle,
                                   num_shards=self.world if self.world > 1 else None,
                                   shard_id=self.rank if self.world > 1 else None)
        for (text,) in documents.create_tuple_iterator(output_numpy=True, num_epochs=1):
            text = str(text)
            if not text:
                continue
            ids = tokenizer.encode_batch([text])[0]
            for piece in split_document(Document(ids, text, "", "", tokenizer, self.cut), self.cut.seq_len):
                yield piece.tokens, np.ones(len(piece.tokens), dtype=np.int32)


def _add_masks(segment_ids: np.ndarray):
    return segment_ids, loss_mask_from_segments(segment_ids), position_ids_from_segments(segment_ids)


def document_dataset(path, token_budget: int, max_tokens: int = 2048, rank: Optional[int] = None,
                     world_size: Optional[int] = None, tokenizer: TokenizerConfig = TokenizerConfig(),
                     shuffle: bool = True, seed: int = 0, smallest_bucket: int = 64, cache_dir: Optional[str] = None,
                     storage_options: Optional[dict] = None) -> ds.Dataset:
    """Batches of whole documents (or boundary-cut pieces) of similar length, at most ``token_budget``
    tokens per batch including padding; columns ``(batch, longest in batch)`` int32."""
    rank, world = rank_and_world(rank, world_size)
    ds.config.set_seed(seed)
    pad_id = cached_tokenizer(tokenizer).eos_id
    source = DocumentPieces(shard_files(path, cache_dir, storage_options), rank, world, tokenizer, max_tokens, shuffle)
    data = ds.GeneratorDataset(source, column_names=["input_ids", "segment_ids"], shuffle=False,
                               python_multiprocessing=False)
    boundaries, batch_sizes = token_budget_buckets(token_budget, max_tokens, smallest_bucket)
    data = data.bucket_batch_by_length(["input_ids"], boundaries, batch_sizes,
                                       pad_info={"input_ids": (None, pad_id), "segment_ids": (None, 0)})
    return data.map(operations=_add_masks, input_columns=["segment_ids"],
                    output_columns=["segment_ids", "loss_mask", "position_ids"]).project(COLUMNS)
