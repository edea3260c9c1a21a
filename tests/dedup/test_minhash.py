"""Shingles, MinHash and banding of the dedup stage on plain strings (no Spark)."""
import random

import numpy as np
import pytest

from conftest import shared
from corpusmill.config import ConfigError, build
from tools.fixtures.dedup_corpus import edit_words, jaccard as set_jaccard, shingle_set
from udfs.dedup.minhash import (DedupConfig, choose_bands, describe_bands, estimated_jaccard, exact_hash, jaccard,
                                minhash, normalize, permutations, s_curve, shingles, signature_batch)

CFG = DedupConfig()


def test_normalize_folds_width_case_and_whitespace_but_keeps_punctuation_and_digits():
    assert normalize("  Ｈｅｌｌｏ,\u3000World!\n\t2024 ", CFG) == "hello, world! 2024"
    assert normalize("Price: 12 USD", build(DedupConfig, {"strip_punctuation": True, "fold_digits": True})) \
        == "price 00 usd"


def test_exact_hash_ignores_case_and_spacing_only():
    assert exact_hash("The  cat\nsat.", CFG) == exact_hash("the cat sat.", CFG)
    assert exact_hash("the cat sat.", CFG) != exact_hash("the cat sat!", CFG)
    assert len(exact_hash("x", CFG)) == 32  # 128 bits


def test_english_is_shingled_by_word_5grams():
    text = "the quick brown fox jumps over the lazy dog"
    assert shingles([text], CFG).counts().tolist() == [9 - 5 + 1]
    # Same words, different order of two words: the shingles touching them change.
    both = shingles([text, "the quick brown fox jumps over the dog lazy"], CFG)
    assert len(set(both.hashes[:5].tolist()) & set(both.hashes[5:].tolist())) == 3


def test_chinese_is_shingled_by_character_3grams():
    text = "中华人民共和国成立了"  # 10 characters, no spaces
    assert shingles([text], CFG).counts().tolist() == [10 - 3 + 1]


def test_mixed_text_uses_the_majority_script():
    # Mostly Chinese: characters, spaces ignored, Latin letters included: 11 - 3 + 1.
    assert shingles(["使用 Spark 处理数据"], CFG).counts().tolist() == [9]
    # Mostly English with a Chinese name: word 5-grams, each CJK character a word of its own.
    english = "we visited 北京 last year with the whole family"  # 10 tokens
    assert shingles([english], CFG).counts().tolist() == [10 - 5 + 1]


def test_short_and_empty_documents():
    counts = shingles(["two words", "", "   ", "一"], CFG).counts().tolist()
    assert counts == [1, 0, 0, 1]


def test_ngram_sizes_are_configurable():
    cfg = build(DedupConfig, {"word_ngram": 3, "cjk_ngram": 2})
    assert shingles(["a b c d e f", "中华人民共和"], cfg).counts().tolist() == [4, 5]


def test_vectorised_jaccard_equals_python_sets_on_real_text():
    words = shared("corpora/en/gutenberg/austen-emma.txt").read_text(encoding="latin-1").split()
    rng = random.Random(3)
    a = [" ".join(words[i * 400:i * 400 + rng.randint(20, 300)]) for i in range(60)]
    b = [edit_words(t, rng.random() * 0.2, rng, words[:2000]) for t in a]
    expected = [set_jaccard(shingle_set(x), shingle_set(y)) for x, y in zip(a, b)]
    assert np.allclose(jaccard(shingles(a, CFG), shingles(b, CFG)), expected)


def test_minhash_estimates_jaccard_within_sampling_error():
    words = shared("corpora/en/gutenberg/melville-moby_dick.txt").read_text(encoding="latin-1").split()
    rng = random.Random(5)
    a = [" ".join(words[i * 300:i * 300 + 200]) for i in range(200)]
    b = [edit_words(t, rng.random() * 0.25, rng, words[:5000]) for t in a]
    exact = jaccard(shingles(a, CFG), shingles(b, CFG))
    perms = permutations(CFG)
    estimate = estimated_jaccard(minhash(shingles(a, CFG), perms), minhash(shingles(b, CFG), perms))
    error = estimate - exact
    # Standard error with 128 permutations is at most sqrt(0.25 / 128) = 0.044.
    assert abs(error.mean()) < 0.01
    assert np.abs(error).max() < 5 * 0.044
    assert np.corrcoef(estimate, exact)[0, 1] > 0.95


def test_minhash_matches_the_definition():
    sh = shingles(["one two three four five six seven", "a b c d e f g h i j k l"], CFG)
    perms = permutations(CFG)
    sig = minhash(sh, perms)
    p = np.uint64(4294967291)
    for d in range(2):
        h = sh.hashes[sh.offsets[d]:sh.offsets[d + 1]] % p
        expected = ((h[:, None] * perms.a[None, :] + perms.b[None, :]) % p).min(axis=0)
        assert (sig[d] == expected).all()


def test_identical_texts_share_every_band_and_different_ones_none():
    batch = signature_batch(["Exactly the same words in this text here.",
                             "exactly the same words in this text here.",
                             "Something else entirely, written by someone else today."], CFG)
    assert (batch.bands[0] == batch.bands[1]).all()
    assert not (batch.bands[0] == batch.bands[2]).any()
    assert batch.exact_hashes[0] == batch.exact_hashes[1] != batch.exact_hashes[2]


def test_s_curve():
    assert s_curve(0.8, 16, 8) == pytest.approx(1 - (1 - 0.8 ** 8) ** 16)
    assert s_curve(0.0, 16, 8) == 0.0 and s_curve(1.0, 16, 8) == 1.0


def test_choose_bands_minimises_weighted_error_area():
    grid = np.linspace(0, 1, 2001)

    def cost(b, r, wfp, wfn, t=0.8):
        p = s_curve(grid, b, r)
        return wfp * np.trapezoid(p[grid <= t], grid[grid <= t]) + \
            wfn * np.trapezoid(1 - p[grid >= t], grid[grid >= t])

    for weights in [(0.5, 0.5), (0.01, 0.99)]:
        b, r = choose_bands(0.8, 128, *weights)
        assert b * r <= 128
        best = cost(b, r, *weights)
        assert all(best <= cost(bb, rr, *weights) + 1e-12
                   for rr in range(1, 129) for bb in range(1, 128 // rr + 1))
    # Equal weights put the S-curve's steep part on the threshold (the classic 9 x 13 for 0.8);
    # the default weights, for verified candidates, move it left to catch pairs at the threshold.
    assert choose_bands(0.8, 128, 0.5, 0.5) == (9, 13)
    assert CFG.banding() == (18, 7) and s_curve(0.8, 18, 7) > 0.98


def test_describe_bands_prints_b_r_and_curve():
    line = describe_bands(18, 7)
    assert "b=18" in line and "r=7" in line and "P(0.8)=0.986" in line


def test_config_validation_names_the_key():
    with pytest.raises(ConfigError, match="dedup.verify"):
        build(DedupConfig, {"verify": "maybe"}, "dedup")
    with pytest.raises(ConfigError, match="dedup.bands"):
        build(DedupConfig, {"bands": 20, "rows": 8}, "dedup")
    with pytest.raises(ConfigError, match="dedup.threshold"):
        build(DedupConfig, {"threshold": 1.5}, "dedup")
    with pytest.raises(ConfigError, match="dedup.against"):
        build(DedupConfig, {"against": ["out/a", "out/a"]}, "dedup")


def test_index_settings_resolve_the_banding_and_name_the_first_mismatch():
    built = DedupConfig().index_settings()
    assert (built["bands"], built["rows"], built["num_perm"], built["seed"]) == (18, 7, 128, 1)
    assert DedupConfig().index_mismatch(built) is None
    # Settings the keys do not depend on may differ: verification, survivor order, hot keys.
    assert DedupConfig(verify="signature", hot_key_cap=10, survivor_order=["-q"]).index_mismatch(built) is None
    # The threshold derives the banding: the band keys would differ.
    assert DedupConfig(threshold=0.7).index_mismatch(built).startswith("bands=18 (this run: ")
    assert DedupConfig(seed=2).index_mismatch(built) == "seed=1 (this run: 2)"
    assert DedupConfig(fold_digits=True).index_mismatch(built) == "fold_digits=False (this run: True)"
    # An exact-only index serves an exact-only run whatever its MinHash settings, never a fuzzy one.
    exact_only = DedupConfig(fuzzy=False, num_perm=64).index_settings()
    assert DedupConfig(fuzzy=False).index_mismatch(exact_only) is None
    assert DedupConfig().index_mismatch(exact_only) == "fuzzy=False (this run: True)"
