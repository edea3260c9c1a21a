"""The n-gram memory (scoring_service/model/features.py ``NgramMemory``, _features.pyx ``memory_add`` /
``memory_stats``), on plain strings: which words, pairs and triples of a text its training text holds."""
from dataclasses import replace

import numpy as np
import pytest

from scoring_service.model import _features
from scoring_service.model.features import (_LAYOUT_BASE, _LAYOUT_SLOTS, _MEMORY_FIRST, FeatureHasher, HashingSpec,
                                            NgramMemory, _code_points)

SPEC = HashingSpec(memory_log2_bits=20)  # a million bits: no false hit among these few n-grams
MEMORY_TEXT = "The cat sat on a mat. The dog lay on the rug."


def memory_of(*texts):
    memory = NgramMemory.empty(SPEC.memory_log2_bits)
    memory.add(list(texts), SPEC)
    return memory


def stats(memory, text):
    cp, lengths, _ = _code_points([text], SPEC)
    return dict(zip(_features.MEMORY_STATS, _features.memory_stats(cp, lengths, memory.bits, SPEC.word_rules)[0]))


def test_text_the_memory_holds_has_every_pair_and_triple_known():
    memory = memory_of(MEMORY_TEXT)
    got = stats(memory, MEMORY_TEXT)
    assert got["pairs_of_known_words"] == got["known_pairs"] == 14  # 6 + 1 words a sentence, with its bounds
    assert got["triples_of_known_pairs"] == got["known_triples"] == 12


def test_a_chain_of_known_pairs_has_a_triple_the_memory_never_held():
    # Every pair of "the cat sat on the rug." is in the memory; "sat on the" is not (only "sat on a"
    # and "lay on the").
    got = stats(memory_of(MEMORY_TEXT), "The cat sat on the rug.")
    assert (got["pairs_of_known_words"], got["known_pairs"]) == (7, 7)
    assert (got["triples_of_known_pairs"], got["known_triples"]) == (6, 5)


def test_shuffled_known_words_are_unknown_pairs():
    got = stats(memory_of(MEMORY_TEXT), "sat the on cat a")
    assert got["pairs_of_known_words"] == 6 and got["known_pairs"] == 0 and got["triples_of_known_pairs"] == 0


def test_pairs_with_an_unknown_word_are_not_asked_and_sentences_do_not_join():
    memory = memory_of(MEMORY_TEXT)
    got = stats(memory, "The zebra sat.")  # "zebra" and "sat." are not words of the memory
    assert (got["pairs_of_known_words"], got["known_pairs"]) == (1, 1)  # only the start and "the"
    # Two sentences are two runs between bounds: no pair "rug." "the" joins them.
    got = stats(memory, "on the rug. The dog")
    assert (got["pairs_of_known_words"], got["known_pairs"]) == (7, 5)


def test_words_are_the_scorer_s_words_lower_cased_and_characters_in_chinese():
    assert stats(memory_of(MEMORY_TEXT), MEMORY_TEXT.upper())["known_triples"] == 12
    chinese = "人人生而自由。"
    got = stats(memory_of(chinese), "人人生而自由。")
    assert got["known_pairs"] == got["pairs_of_known_words"] == 8  # 6 characters and the mark, with the bounds


def test_the_memory_is_checked_against_the_spec_that_names_it():
    memory = memory_of(MEMORY_TEXT)
    spec = replace(SPEC, memory_sha256=memory.sha256)
    again = NgramMemory.from_bytes(memory.to_bytes(), spec)
    assert np.array_equal(again.bits, memory.bits) and again.log2_bits == 20
    with pytest.raises(ValueError, match="sha256"):
        NgramMemory.from_bytes(memory_of("Another text.").to_bytes(), spec)
    with pytest.raises(ValueError, match="bytes"):
        NgramMemory.from_bytes(memory.to_bytes()[:-8], spec)
    with pytest.raises(ValueError, match="memory_log2_bits"):
        FeatureHasher(spec)  # a spec with a memory hashes with it or not at all
    with pytest.raises(ValueError, match="memory_log2_bits"):
        FeatureHasher(HashingSpec(), memory)
    with pytest.raises(ValueError):
        NgramMemory.empty(5)
    assert (memory | memory_of("Another text.")).fill() > memory.fill() > 0


def test_a_spec_without_memory_keeps_its_digest_and_pads_the_memory_columns():
    assert "memory_log2_bits" not in HashingSpec().to_dict()  # models trained before the memory hash as they did
    plain = FeatureHasher(HashingSpec()).encode_bags([MEMORY_TEXT]).layout
    assert (plain[:, _MEMORY_FIRST:] == 0).all()
    memory = memory_of(MEMORY_TEXT)
    with_memory = FeatureHasher(replace(SPEC, memory_sha256=memory.sha256), memory).encode_bags(
        [MEMORY_TEXT, "sat the on cat a"]).layout
    assert np.array_equal(with_memory[:, :_MEMORY_FIRST], np.vstack([plain, FeatureHasher(HashingSpec()).encode_bags(
        ["sat the on cat a"]).layout])[:, :_MEMORY_FIRST])
    pair_bucket = with_memory[:, _MEMORY_FIRST] - _LAYOUT_BASE - _MEMORY_FIRST * _LAYOUT_SLOTS
    assert pair_bucket[0] > pair_bucket[1]  # the text it holds against its words shuffled


def test_pairs_of_words_one_apart_are_asked_as_pairs_within_a_sentence():
    memory = memory_of(MEMORY_TEXT)
    # Each sentence of the memory's text: 6 words, 4 pairs one apart ("the sat", "cat on", ...), none a pair.
    got = stats(memory, MEMORY_TEXT)
    assert (got["skip_pairs_of_known_words"], got["known_skip_pairs"]) == (8, 0)
    # Words one apart: "the cat" and "sat on", pairs of the memory; of its pairs only the start ("the").
    got = stats(memory, "The sat cat on")
    assert (got["skip_pairs_of_known_words"], got["known_skip_pairs"]) == (2, 2)
    assert (got["pairs_of_known_words"], got["known_pairs"]) == (5, 1)
    # An unknown word ("zebra") is not asked, and no pair one apart crosses a sentence's end.
    got = stats(memory, "The zebra sat on. The dog lay")
    assert (got["skip_pairs_of_known_words"], got["known_skip_pairs"]) == (2, 0)
