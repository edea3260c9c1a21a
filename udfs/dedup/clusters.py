"""The dedup stage's clustering on plain numpy arrays, for a corpus small enough to hold on the driver.

It decides what the stage's Spark steps decide (exact groups, LSH buckets, components, survivors),
over rows that are one per id and sorted in survivor order, so that a row's position is its rank and
"best-ranked" is "least position". Ids enter only through ``id_rank``, each row's place in id order:
buckets and components are led by their least id, as in Spark.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np


def first_of_groups(keys: np.ndarray) -> np.ndarray:
    """Each row's exact-group representative: the first position holding its key."""
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return first[inverse.reshape(-1)]


def bucket_stars(bands: np.ndarray, id_rank: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Distinct (src, dst) row indexes of ``bands`` (rows × LSH bands): every row of a bucket (a band
    and its hash) with two or more rows points at the bucket's row of least ``id_rank``."""
    src, dst = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
    positions = np.arange(len(bands))
    for band in bands.T:
        by_bucket = np.lexsort((id_rank, band))
        keys = band[by_bucket]
        starts = np.r_[True, keys[1:] != keys[:-1]] if len(keys) else np.empty(0, bool)
        heads = by_bucket[np.maximum.accumulate(np.where(starts, positions, 0))]
        star = by_bucket != heads
        src.append(by_bucket[star])
        dst.append(heads[star])
    pairs = np.unique(np.stack([np.concatenate(src), np.concatenate(dst)], axis=1), axis=0)
    return pairs[:, 0], pairs[:, 1]


def component_labels(src: np.ndarray, dst: np.ndarray, nodes: int) -> np.ndarray:
    """Each of ``nodes`` nodes' connected-component label, for the undirected edges (src, dst) between
    node indexes."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(len(src), np.int8), (src, dst)), shape=(nodes, nodes))
    return connected_components(graph, directed=False)[1]


def survivors(rep: np.ndarray, id_rank: np.ndarray, src: np.ndarray, dst: np.ndarray
              ) -> Tuple[np.ndarray, np.ndarray]:
    """Each row's cluster (the position of its component's least id) and survivor (its component's
    least position), given each row's representative ``rep`` and the verified edges between
    representatives (positions). A row joins its representative's component."""
    n = len(rep)
    label = component_labels(src, dst, n)
    by_id = np.argsort(id_rank)
    least_id = np.full(n, n, np.int64)
    np.minimum.at(least_id, label, id_rank)
    # Only representatives compete: a copy never ranks before its own representative.
    best = np.full(n, n, np.int64)
    reps = np.flatnonzero(rep == np.arange(n))
    np.minimum.at(best, label[reps], reps)
    component = label[rep]
    return by_id[least_id[component]], best[component]
