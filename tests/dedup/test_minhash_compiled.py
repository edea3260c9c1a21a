"""The compiled dedup kernels (udfs/dedup/_minhash.pyx) against their definitions in numpy or Python:
the shingle hashes, step by step over the whole batch; MinHash, for every document and permutation k
min over the document's shingle hashes h of (a[k]·h + b[k]) mod p, computed with numpy's exact uint64
remainder, one document at a time; and the normalisation's punctuation, digit and space folding, with
``re`` and ``str.split``."""
import random
import re
import sys

import numpy as np
import pytest

from conftest import shared
from udfs.dedup import minhash as M
from udfs.dedup.minhash import EMPTY, PRIME, DedupConfig, Permutations, Shingles, minhash, normalize, shingles
from udfs.dedup._minhash import fold_text, minhash_into, shingle_hashes

def unsegmented(cps):
    out = np.zeros(len(cps), dtype=bool)
    high = np.flatnonzero(cps >= M._UNSEG_EDGES[0])
    out[high] = np.searchsorted(M._UNSEG_EDGES, cps[high], side="right") & 1
    return out


def numpy_shingles(norm, cfg):
    """The shingles' definition in numpy, one vectorised step after the other."""
    n_docs = len(norm)
    lengths = np.fromiter((len(t) for t in norm), dtype=np.int64, count=n_docs)
    # One space between documents: no token crosses a document boundary.
    cps = np.frombuffer(" ".join(norm).encode("utf-32-le"), dtype=np.uint32)
    doc_of_char = np.repeat(np.arange(n_docs), lengths + 1)[:len(cps)]
    space = cps == 32
    unseg = unsegmented(cps)
    chars = np.flatnonzero(~space)
    if not len(chars):
        return np.zeros(0, np.uint64), np.zeros(n_docs + 1, np.int64)
    # Character mode for documents written mostly in unsegmented scripts: every non-space
    # character is a token. Otherwise a token is a run of non-space characters, except that a
    # character of an unsegmented script is a token of its own.
    unseg_chars = np.bincount(doc_of_char[unseg], minlength=n_docs)
    nonspace_chars = np.bincount(doc_of_char[chars], minlength=n_docs)
    char_mode = (unseg_chars > 0) & (unseg_chars >= cfg.cjk_char_ratio * nonspace_chars)
    before_space = np.concatenate([[True], space[:-1]])
    before_unseg = np.concatenate([[False], unseg[:-1]])
    starts_token = ~space & (before_space | unseg | before_unseg | char_mode[doc_of_char])

    # Token hash: sum of mixed (code point, position in token) keys, mixed again.
    first = starts_token[chars]
    token_first = np.flatnonzero(first)            # index into `chars` of each token's first char
    token_pos = chars[token_first]                 # position in `cps` of each token's first char
    in_token = np.arange(len(chars)) - token_first[np.cumsum(first) - 1]
    keys = cps[chars].astype(np.uint64) | (in_token.astype(np.uint64) << np.uint64(21))
    tokens = M._mix(np.add.reduceat(M._mix(keys), token_first))

    n_tok = len(tokens)
    token_doc = doc_of_char[token_pos]
    per_doc = np.bincount(token_doc, minlength=n_docs)
    doc_n = np.where(char_mode, cfg.cjk_ngram, cfg.word_ngram)
    doc_first_tok = np.concatenate([[0], np.cumsum(per_doc)[:-1]])
    doc_end_tok = doc_first_tok + per_doc

    idx = np.arange(n_tok)
    n = doc_n[token_doc]
    end = doc_end_tok[token_doc]
    # An n-gram starts at every token with n tokens left in its document; a document shorter than
    # n tokens is one shingle made of all its tokens.
    valid = (idx + n <= end) | ((idx == doc_first_tok[token_doc]) & (per_doc[token_doc] < n))
    acc = np.zeros(n_tok, dtype=np.uint64)
    for i in range(int(doc_n.max())):
        shifted = np.zeros(n_tok, dtype=np.uint64)
        shifted[:max(n_tok - i, 0)] = tokens[i:]
        use = (i < n) & (idx + i < end)
        acc += np.where(use, M._mix(shifted ^ M._salt(i)), np.uint64(0))
    hashes = M._mix(acc[valid])
    offsets = np.concatenate([[0], np.cumsum(np.bincount(token_doc[valid], minlength=n_docs))])
    return hashes, offsets.astype(np.int64)


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
        minhash_into(np.zeros(3, np.uint64), np.array([0, 3], np.int64), a, a, np.zeros((2, 4), np.uint32))
    with pytest.raises(ValueError, match="past the hashes"):
        minhash_into(np.zeros(3, np.uint64), np.array([0, 5], np.int64), a, a, np.zeros((1, 4), np.uint32))
    with pytest.raises(ValueError, match="past the hashes"):
        minhash_into(np.zeros(3, np.uint64), np.array([-2, 3], np.int64), a, a, np.zeros((1, 4), np.uint32))
    with pytest.raises(ValueError, match="must not decrease"):
        minhash_into(np.zeros(3, np.uint64), np.array([0, 3, 1, 3], np.int64), a, a, np.zeros((3, 4), np.uint32))


def test_shingle_hashes_match_their_definition():
    cfg = DedupConfig()
    rng = random.Random(3)
    # Latin, CJK, Thai, kana and digits in every mix and length: documents in and out of character mode,
    # unsegmented characters inside words, empty documents, documents shorter than an n-gram.
    pieces = ["a", "bc", " ", "中", "文", "ก", "1", "é", "\u3042", "x", "。", "word", " the "]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randrange(0, 60))) for _ in range(2000)]
    texts += ["", " ", "中", "one two", "短文本去重测试，中文字符的三元组。" * 3, "The quick brown fox. " * 30]
    texts += [p.read_text(encoding="utf-8", errors="replace")[:20000]
              for p in sorted(shared("corpora").rglob("*.txt"))[:40]]
    norm = [normalize(t, cfg) for t in texts]
    for size in (1, 7, 500):
        for start in range(0, len(norm), size if size > 1 else 97):
            batch = norm[start:start + size]
            expected_hashes, expected_offsets = numpy_shingles(batch, cfg)
            got = M._shingles_of_normalised(batch, cfg)
            assert np.array_equal(got.hashes, expected_hashes) and np.array_equal(got.offsets, expected_offsets)


def test_shingle_hashes_refuse_lengths_that_do_not_add_up():
    salts = np.ones(5, dtype=np.uint64)
    cps = np.frombuffer("ab cd".encode("utf-32-le"), dtype=np.uint32)
    with pytest.raises(ValueError, match="add up"):
        shingle_hashes(cps, np.array([2, 3], np.int64), M._UNSEG_EDGES, salts, 5, 3, 0.5)
    with pytest.raises(ValueError, match="negative"):
        shingle_hashes(cps, np.array([-1, 5], np.int64), M._UNSEG_EDGES, salts, 5, 3, 0.5)
    with pytest.raises(ValueError, match="salt"):
        shingle_hashes(cps, np.array([2, 2], np.int64), M._UNSEG_EDGES, salts, 6, 3, 0.5)


def folded(text, strip_punctuation, fold_digits):
    """``fold_text``'s definition."""
    if strip_punctuation:
        text = re.sub(r"[^\w\s]+", " ", text)
    if fold_digits:
        text = re.sub(r"\d", "0", text)
    return " ".join(text.split())


@pytest.mark.parametrize("strip_punctuation, fold_digits", [(True, True), (True, False), (False, True), (False, False)])
def test_fold_text_matches_its_definition(strip_punctuation, fold_digits):
    # Every code point alone and between letters (its class: space, word, digit or other) ...
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        text = f"a{chr(cp)}b {chr(cp)}"
        assert fold_text(text, strip_punctuation, fold_digits) == folded(text, strip_punctuation, fold_digits), hex(cp)
    # ... and in runs: spaces of every kind, punctuation, digits of several scripts, _, marks, emoji.
    rng = random.Random(11)
    pieces = [" ", "\t", "\n", "\u00a0", "\u3000", "\u2028", "\x1c", "\x85", ",", "...", "—", "«", "_", "a", "Z",
              "é", "中", "ก", "\u0301", "7", "\u0663", "\uff11", "\u00b2", "\U0001f600", "\U0001d7ce", "x_y"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randrange(0, 40))) for _ in range(3000)]
    texts += [p.read_text(encoding="utf-8", errors="replace")[:20000]
              for p in sorted(shared("corpora").rglob("*.txt"))[:40]]
    for text in texts:
        assert fold_text(text, strip_punctuation, fold_digits) == folded(text, strip_punctuation, fold_digits)
    with pytest.raises(TypeError):
        fold_text(None, strip_punctuation, fold_digits)
