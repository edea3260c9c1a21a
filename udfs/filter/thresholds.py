"""Per-language thresholds and stop words from a reference's statistics (``corpusmill derive-thresholds``,
whose Spark side is ``jobs/thresholds_command.py``): the per-record part and the arithmetic, on plain values.

FineWeb-2's method places each rule's threshold for a language at a quantile of that language's
reference distribution. Two kinds of signal are told apart (a rule's ``derive``):

- ``scale``, a length (mean word length): a language's typical value sets where its thresholds lie,
  so the anchor language's thresholds (English's 3..10 characters) are multiplied by the ratio of
  the language's median to the anchor's. Korean eojeol, Finnish compounds and Vai syllables each get
  a range around their own typical word. For documents without a confident tag, the rule's own
  thresholds become the loosest of every language's: they must hold whatever the language.
- ``quantile``, a share (alphabetic words, lines ending in punctuation, repeated n-grams): a
  language's threshold is its reference's ``quantile`` (``1 - quantile`` for a maximum), moved out
  by ``margin`` of its value, where that quantile is already past the rule's own threshold: clean text
  in a language that, e.g., ends no line in punctuation (Thai) or repeats character n-grams (scripts
  written without spaces) is not rejected for it, while every other language keeps the rule as it is.

Length rules (words, sentences) are not derived: a reference's documents say nothing of the length
of a web page. Stop words are the short words found in most of a language's reference documents.
"""
from __future__ import annotations

import math
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

import regex

from udfs.filter.quality import _UNSEGMENTED_CHAR
from udfs.filter.rules import DerivationConfig, RuleConfig, Thresholds
from udfs.filter.segmentation import segmented_words

_WORD = regex.compile(r"\w+")


def document_words(text: Optional[str], segmenter: Optional[str] = None) -> List[str]:
    """The distinct lowercased words of a document, as the stop-word signal matches them: by
    ``segmenter`` where its language has one, else none for text in a script written without spaces
    (a character is not a word)."""
    if not text:
        return []
    if segmenter:
        return sorted(set(segmented_words(text, segmenter)))
    if _UNSEGMENTED_CHAR.search(text):
        return []
    return sorted({word.lower() for word in _WORD.findall(text)})


def stop_words(candidates: Sequence[Tuple[str, int]], cfg: DerivationConfig,
               documents: Sequence[Tuple[FrozenSet[str], int]] = (), per_document: int = 0) -> List[str]:
    """The ``cfg.stop_words`` shortest of the ``cfg.stop_word_candidates`` words of highest document
    frequency; ``candidates`` are (word, documents), in any order.

    ``documents`` are the candidate words each reference document holds (with how many documents hold
    just those). Where some hold fewer than ``per_document`` of the list, a word of theirs replaces the
    longest word no document needs to keep ``per_document``: a tag
    given to several varieties (lid.176's ``qu`` to every Quechua, each spelt its own way) then gets a
    list its documents all pass, and a list every document passes already stays as it is."""
    by_frequency = sorted(candidates, key=lambda wc: (-wc[1], wc[0]))[:cfg.stop_word_candidates]
    preferred = [word for word, _ in sorted(by_frequency, key=lambda wc: (len(wc[0]), -wc[1], wc[0]))]
    chosen = preferred[:cfg.stop_words]
    added: List[str] = []  # words taken for the documents short of words stay
    for _ in range(len(preferred)):  # each round adds a word not chosen before: bounded by the candidates
        hits = [(len(words.intersection(chosen)), words, n) for words, n in documents]
        short = [(words, n) for held, words, n in hits if held < per_document]
        outside = [word for word in preferred if word not in chosen]
        if not short or not outside:
            break
        gain = {word: sum(n for words, n in short if word in words) for word in outside}
        best = max(outside, key=lambda word: (gain[word], -preferred.index(word)))
        removable = [word for word in reversed(chosen) if word not in added and not any(
                     word in words and held - 1 < per_document for held, words, _ in hits)]
        if gain[best] == 0 or not removable:
            break
        chosen = [word for word in chosen if word != removable[0]] + [best]
        added.append(best)
    return sorted(chosen)


def _rounded(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 4)


def scaled(rule: RuleConfig, medians: Dict[str, float], anchor: str) -> Tuple[Thresholds, Dict[str, Thresholds]]:
    """A ``scale`` rule: (thresholds without a confident tag, thresholds per language)."""
    base = rule.by_language.get(anchor) or Thresholds(rule.min, rule.max)
    if anchor not in medians:
        raise ValueError(f"the reference has no documents in the anchor language {anchor!r} with this signal")
    by_language = {lang: Thresholds(*(_rounded(None if t is None else t * median / medians[anchor])
                                      for t in (base.min, base.max)))
                   for lang, median in medians.items()}
    mins = [t.min for t in by_language.values() if t.min is not None]
    maxes = [t.max for t in by_language.values() if t.max is not None]
    loosest = Thresholds(min(mins) if mins else None, max(maxes) if maxes else None)
    return loosest, by_language


def loosened(rule: RuleConfig, low: Dict[str, float], high: Dict[str, float], cfg: DerivationConfig) -> Dict[str, Thresholds]:
    """A ``quantile`` rule: the languages whose clean text needs a looser threshold, with it. ``low``
    and ``high`` are each language's ``quantile`` and ``1 - quantile`` of the signal."""
    by_language = {}
    for lang in sorted(set(low) | set(high)):
        minimum, maximum = rule.min, rule.max
        if rule.min is not None and low.get(lang, rule.min) < rule.min:
            minimum = low[lang] * (1 - cfg.margin)
        if rule.max is not None and high.get(lang, rule.max) > rule.max:
            maximum = high[lang] * (1 + cfg.margin)
        if (minimum, maximum) != (rule.min, rule.max):
            by_language[lang] = Thresholds(_rounded(minimum), _rounded(maximum))
    return by_language


def following(rule: RuleConfig, by_language: Dict[str, Thresholds], leader: RuleConfig,
              leader_by_language: Dict[str, Thresholds]) -> Dict[str, Thresholds]:
    """A rule that ``follows`` ``leader``: its ``by_language``, each language loosened at least to the
    leader's threshold there less the gap between the two rules' own maxima."""
    gap = leader.max - rule.max
    result = dict(by_language)
    for lang, thresholds in leader_by_language.items():
        own = result.get(lang, Thresholds(rule.min, rule.max))
        if thresholds.max is not None and thresholds.max - gap > own.max:
            result[lang] = Thresholds(own.min, _rounded(thresholds.max - gap))
    return dict(sorted(result.items()))


def finite(value) -> Optional[float]:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
