"""The compiled MinHash (udfs/dedup/_minhash.pyx) against its definition: for every document and
permutation k, min over the document's shingle hashes h of (a[k]·h + b[k]) mod p, computed here with
numpy's exact uint64 remainder, one document at a time."""
import numpy as np
import pytest

from udfs.dedup.minhash import EMPTY, PRIME, DedupConfig, Permutations, Shingles, minhash, shingles
from udfs.dedup._minhash import minhash_into


def definition(hashes, offsets, perms):
    out = np.full((len(offsets) - 1, len(perms.a)), EMPTY, dtype=np.uint64)
    for d in range(len(offsets) - 1):
        h = hashes[offsets[d]:offsets[d + 1]] % PRIME
        if len(h):
            out[d] = ((perms.a[None, :] * h[:, None] + perms.b[None, :]) % PRIME).min(axis=0)
    return out.astype(np.uint32)


def test_random_and_extreme_values_match_the_definition():
    rng = np.random.default_rng(7)
    edge = np.array([0, 1, 2, int(PRIME) - 2, int(PRIME) - 1], dtype=np.uint64)
    for _ in range(20):
        # Full 64-bit shingle hashes (reduced mod p inside), the extremes of every operand included.
        hashes = np.concatenate([rng.integers(0, 1 << 63, size=3000, dtype=np.uint64) * np.uint64(2),
                                 edge, edge + PRIME])
        perms = Permutations(np.concatenate([rng.integers(1, int(PRIME), size=27, dtype=np.uint64), edge[1:]]),
                             np.concatenate([rng.integers(0, int(PRIME), size=27, dtype=np.uint64), edge[:4]]))
        cuts = np.sort(rng.integers(0, len(hashes), size=12))
        offsets = np.concatenate([[0], cuts, cuts[-1:], [len(hashes)]]).astype(np.int64)  # an empty document too
        assert np.array_equal(minhash(Shingles(hashes, offsets), perms), definition(hashes, offsets, perms))


def test_real_texts_match_the_definition():
    cfg = DedupConfig()
    perms = Permutations.make(cfg.num_perm, cfg.seed)
    texts = ["The quick brown fox jumps over the lazy dog. " * 20, "", "短文本去重测试，中文字符的三元组。" * 5,
             "one two", "Ein kurzer deutscher Satz mit mehr als fünf Wörtern."]
    sh = shingles(texts, cfg)
    sig = minhash(sh, perms)
    assert np.array_equal(sig, definition(sh.hashes, sh.offsets, perms))
    assert (sig[1] == EMPTY).all() and (sig[0] < EMPTY).all()


def test_mismatched_shapes_are_refused():
    a = np.ones(4, dtype=np.uint32)
    with pytest.raises(ValueError, match="documents, permutations"):
        minhash_into(np.zeros(3, np.uint32), np.array([0, 3], np.int64), a, a, np.zeros((2, 4), np.uint32))
    with pytest.raises(ValueError, match="past the hashes"):
        minhash_into(np.zeros(3, np.uint32), np.array([0, 5], np.int64), a, a, np.zeros((1, 4), np.uint32))
    with pytest.raises(ValueError, match="past the hashes"):
        minhash_into(np.zeros(3, np.uint32), np.array([-2, 3], np.int64), a, a, np.zeros((1, 4), np.uint32))
    with pytest.raises(ValueError, match="must not decrease"):
        minhash_into(np.zeros(3, np.uint32), np.array([0, 3, 1, 3], np.int64), a, a, np.zeros((3, 4), np.uint32))
