"""Words of languages written without spaces between them, for the signals that need words (stop
words, mean word length) in a document confidently tagged in such a language.

The quality signals count one word per character in those scripts (``udfs/filter/quality.py``), which
keeps length and repetition rules meaningful; stop words and word length need real words. Segmenters
(``filter.word_segmentation``: language -> segmenter), each a PyPI package shipping its dictionary:

- ``jieba``: jieba's dictionary and HMM in Rust (``rjieba``), about 1.7 M characters/s;
- ``newmm``: PyThaiNLP's dictionary maximal matching over Thai character clusters, about 110 k
  characters/s, so only Thai-tagged documents pay for it.
"""
from __future__ import annotations

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


SEGMENTERS: Dict[str, Callable[[], Callable[[str], List[str]]]] = {"jieba": _jieba, "newmm": _newmm}


def segmenter(name: str) -> Callable[[str], List[str]]:
    """The segmenter called ``name``, made once per worker."""
    return worker_resource("filter.segmenter", name, SEGMENTERS[name])


def segmented_words(text: str, name: str) -> List[str]:
    """The lowercased words (tokens with a letter) of ``text`` by segmenter ``name``."""
    return [word.lower() for word in segmenter(name)(text) if _LETTER.search(word)]


def word_signals(words: List[str], stop_words: Optional[frozenset]) -> dict:
    """``mean_word_length`` and ``stop_words`` from segmented words, replacing the per-character ones."""
    return {"mean_word_length": sum(map(len, words)) / len(words) if words else None,
            "stop_words": len(stop_words.intersection(words)) if stop_words is not None else None}
