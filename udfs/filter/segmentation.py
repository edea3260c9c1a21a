"""Words of languages written without spaces between them, for the signals that need words (stop
words, mean word length) in a document confidently tagged in such a language.

The quality signals count one word per character in those scripts (``udfs/filter/quality.py``), which
keeps length and repetition rules meaningful; stop words and word length need real words. Segmenters
(``filter.word_segmentation``: language -> segmenter), each a PyPI package shipping its dictionary (their
cost: ``python -m bench.speed.segmentation_bench``):

- ``jieba``: jieba's dictionary and HMM in Rust (``rjieba``);
- ``mecab``: MeCab (``fugashi``) with UniDic's short units (``unidic-lite``);
- ``newmm``: PyThaiNLP's dictionary maximal matching over Thai character clusters, the costliest per
  character, so only Thai-tagged documents pay for it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, List, Optional

import regex

from udfs.common.worker import worker_resource

_LETTER = regex.compile(r"\p{L}")


def _jieba() -> Callable[[str], List[str]]:
    import rjieba

    return rjieba.cut


def _newmm() -> Callable[[str], List[str]]:
    from pythainlp.tokenize import word_tokenize

    return lambda text: word_tokenize(text, engine="newmm", keep_whitespace=False)


def _mecab() -> Callable[[str], List[str]]:
    import fugashi
    import unidic_lite

    # unidic-lite's dictionary named outright (the shipped ja stop words are its words): fugashi's Tagger
    # would take the full `unidic` package wherever that is installed.
    dictionary = Path(unidic_lite.DICDIR)
    tagger = fugashi.GenericTagger(f'-r "{dictionary / "mecabrc"}" -d "{dictionary}" -Owakati')
    return lambda text: tagger.parse(text).split()


SEGMENTERS: Dict[str, Callable[[], Callable[[str], List[str]]]] = {"jieba": _jieba, "newmm": _newmm,
                                                                   "mecab": _mecab}


def segmenter(name: str) -> Callable[[str], List[str]]:
    """The segmenter called ``name``, made once per worker."""
    return worker_resource("filter.segmenter", name, SEGMENTERS[name])


# The words are read from a document's first SEGMENTED_CHARS characters (a few hundred words in these
# scripts, where a count of distinct stop words and a mean length have long settled): the segmenters
# cost more per character than all the other signals together, and a sample bounds that per document,
# as language ID reads a prefix.
SEGMENTED_CHARS = 500


def segmented_words(text: str, name: str) -> List[str]:
    """The lowercased words (tokens with a letter) of the first ``SEGMENTED_CHARS`` characters of
    ``text`` by segmenter ``name``."""
    # isalpha first: most tokens are letters only; the rest are mostly single marks, which isalpha has
    # answered, and the regex is only asked about longer ones
    return [word for word in segmenter(name)(text[:SEGMENTED_CHARS].lower())
            if word.isalpha() or (len(word) > 1 and _LETTER.search(word))]


def word_signals(words: List[str], stop_words: Optional[frozenset]) -> dict:
    """``mean_word_length`` and ``stop_words`` from segmented words, replacing the per-character ones."""
    return {"mean_word_length": sum(map(len, words)) / len(words) if words else None,
            "stop_words": len(stop_words.intersection(words)) if stop_words is not None else None}
