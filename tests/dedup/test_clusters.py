"""The dedup stage's driver-side clustering on plain numpy arrays (no Spark), against brute force."""
import itertools
import random

import numpy as np
import pytest

from udfs.dedup.clusters import bucket_stars, first_of_groups, survivors


def test_first_of_groups_is_the_first_position_of_each_key():
    keys = np.array(["b", "a", "b", "c", "a", "b"], dtype=object)
    assert first_of_groups(keys).tolist() == [0, 1, 0, 3, 1, 0]
    assert first_of_groups(np.array([], dtype=object)).tolist() == []


def brute_force_stars(bands, id_rank):
    pairs = set()
    for band in range(bands.shape[1]):
        buckets = {}
        for row, key in enumerate(bands[:, band]):
            buckets.setdefault(key, []).append(row)
        for rows in buckets.values():
            head = min(rows, key=lambda r: id_rank[r])
            pairs |= {(r, head) for r in rows if r != head}
    return sorted(pairs)


@pytest.mark.parametrize("seed", range(20))
def test_bucket_stars_point_every_member_at_the_least_id_of_its_bucket(seed):
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(0, 40))
    bands = rng.integers(-3, 4, size=(rows, int(rng.integers(1, 5))))  # few keys: many shared buckets
    id_rank = rng.permutation(rows)
    src, dst = bucket_stars(bands, id_rank)
    assert sorted(zip(src.tolist(), dst.tolist())) == brute_force_stars(bands, id_rank)


def brute_force_survivors(rep, id_rank, edges):
    n = len(rep)
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in itertools.chain(edges, ((i, rep[i]) for i in range(n))):
        parent[find(a)] = find(b)
    members = {}
    for i in range(n):
        members.setdefault(find(i), []).append(i)
    cluster, survivor = [0] * n, [0] * n
    for rows in members.values():
        reps = [r for r in rows if rep[r] == r]
        for r in rows:
            # The cluster is named by the least id among its representatives; survivors come from them.
            cluster[r] = min(reps, key=lambda x: id_rank[x])
            survivor[r] = min(reps)
    return cluster, survivor


@pytest.mark.parametrize("seed", range(30))
def test_survivors_match_brute_force_on_random_groups_and_edges(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 30)
    rep = [0] * n
    for i in range(n):
        # A row's representative is the first row of its exact group: itself or an earlier representative.
        earlier = [r for r in range(i) if rep[r] == r]
        rep[i] = rng.choice(earlier) if earlier and rng.random() < 0.3 else i
    reps = [i for i in range(n) if rep[i] == i]
    edges = [tuple(rng.sample(reps, 2)) for _ in range(rng.randint(0, len(reps)))] if len(reps) > 1 else []
    edges += [(r, r) for r in rng.sample(reps, min(2, len(reps)))]  # self-loops change nothing
    id_rank = list(range(n))
    rng.shuffle(id_rank)
    src = np.array([a for a, _ in edges], np.int64)
    dst = np.array([b for _, b in edges], np.int64)
    cluster, survivor = survivors(np.array(rep), np.array(id_rank), src, dst)
    assert (cluster.tolist(), survivor.tolist()) == brute_force_survivors(rep, id_rank, edges)


def test_a_copy_ranked_before_every_representative_of_another_group_still_goes_to_the_best_representative():
    # Rows 0 and 2 share a text (2 is a copy of 0); 1 and 3 likewise; 0 ~ 1 verified.
    cluster, survivor = survivors(np.array([0, 1, 0, 1]), np.array([3, 2, 1, 0]), np.array([1]), np.array([0]))
    assert survivor.tolist() == [0, 0, 0, 0]
    assert cluster.tolist() == [1, 1, 1, 1]  # the representative of least id, not the copy 3 of least id


def test_no_rows():
    empty = np.empty(0, np.int64)
    assert [a.tolist() for a in survivors(empty, empty, empty, empty)] == [[], []]
    assert [a.tolist() for a in bucket_stars(np.empty((0, 4), np.int64), empty)] == [[], []]
