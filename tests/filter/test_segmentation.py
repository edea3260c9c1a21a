"""Words of languages written without spaces (udfs/filter/segmentation.py), and the stop words and word
length of a confidently tagged document that come from them, on plain strings."""
import dataclasses

import pytest

from corpusmill.config import ConfigError, build
from udfs.filter.rules import DocumentFilter, FilterConfig, language_signals
from udfs.filter.segmentation import SEGMENTED_CHARS, segmented_words, segmenter

JAPANESE = "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。"


def test_japanese_is_cut_into_unidic_short_units_without_punctuation():
    assert segmented_words(JAPANESE, "mecab") == [
        "すべて", "の", "人間", "は", "生まれ", "ながら", "に", "し", "て", "自由", "で", "あり", "かつ",
        "尊厳", "と", "権利", "と", "に", "つい", "て", "平等", "で", "ある"]
    assert segmented_words("東京タワーに行った。\nTokyo Tower", "mecab") == [
        "東京", "タワー", "に", "行っ", "た", "tokyo", "tower"]


def test_words_are_read_from_the_first_segmented_chars_of_a_document():
    head = "中文" * (SEGMENTED_CHARS // 2)
    assert segmented_words(head + "我们", "jieba") == segmented_words(head, "jieba")
    assert "我们" in segmented_words("我们" + head, "jieba")
    assert segmented_words("2024年，ABC 5G网络。", "jieba") == ["年", "abc", "5g", "网络"]  # tokens with a letter


def test_the_segmenter_is_made_once_per_worker():
    assert segmenter("mecab") is segmenter("mecab")


def test_a_japanese_document_s_stop_words_and_word_length_come_from_its_words():
    stop_words = {"ja": frozenset({"人間", "の", "は"})}
    words = segmented_words(JAPANESE, "mecab")
    segmented = language_signals(JAPANESE, "ja", stop_words, {"ja": "mecab"})
    assert segmented["stop_words"] == 3
    assert segmented["mean_word_length"] == sum(map(len, words)) / len(words)
    per_character = language_signals(JAPANESE, "ja", stop_words, {})
    assert per_character["stop_words"] == 2  # 人間 is two one-character "words"
    assert per_character["mean_word_length"] is None


def test_a_confidently_japanese_document_counts_stop_words_among_its_segmented_words():
    shipped = FilterConfig()
    assert shipped.word_segmentation["ja"] == "mecab" and len(shipped.stop_words["ja"]) == 16
    page = "\n".join([JAPANESE, "人間は、理性と良心とを授けられており、互いに同胞の精神をもって行動しなければならない。"] * 3)
    cfg = dataclasses.replace(shipped, stop_words={"ja": ["人間", "精神", "自由"]})
    columns = DocumentFilter(cfg).apply([page])
    assert columns["lang"] == ["ja"] and columns["lang_confident"] == [True]
    assert columns["stop_words"] == [3]  # none of them is a single character
    unsegmented = DocumentFilter(dataclasses.replace(cfg, word_segmentation={})).apply([page])
    assert unsegmented["stop_words"] == [0]


def test_an_unknown_segmenter_is_a_config_error():
    with pytest.raises(ConfigError, match=r"filter.word_segmentation.ja: unknown segmenter 'kuromoji'.*mecab"):
        build(FilterConfig, {"word_segmentation": {"ja": "kuromoji"}}, "filter")
