"""Read corpusmill's MindRecord shards in a MindSpore training job.

    from loader import sequence_dataset, block_causal_mask
    data = sequence_dataset("out/demo/mindrecord", batch_size=8, rank=rank, world_size=world_size)
"""
from loader.dataset import document_dataset, sequence_dataset, shard_files, token_budget_buckets
from loader.masks import block_causal_mask

__all__ = ["sequence_dataset", "document_dataset", "shard_files", "token_budget_buckets", "block_causal_mask"]
