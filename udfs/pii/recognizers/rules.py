"""The machinery every pattern recognizer shares: the one language code, ``Rule`` (a pattern with
its score and the cheap anchor it runs around), ``ContextScorer`` (words before a match raise or
veto it) and ``RegexRecognizer``, the base that runs rules and asks ``validate`` about each match.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

import regex
from presidio_analyzer import AnalysisExplanation, EntityRecognizer, LocalRecognizer, RecognizerResult
from presidio_analyzer.context_aware_enhancers import ContextAwareEnhancer

from udfs.pii.errors import AnalysisTimeout

LANGUAGE = "xx"


class RecognizersScoreContext(ContextAwareEnhancer):
    """Context words are scored by each recognizer on the raw text (the no-op engine has no tokens)."""


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: str
    score: float
    # Something cheap to find that every match contains ("@" in an e-mail), and how far a match can
    # reach before and after it: the full pattern then only runs around these anchors. Most pages
    # have no "@", no "::", no "ghp_", and scanning them with a cheap regex is most of the saving.
    anchor: str = ""
    reach: Tuple[int, int] = (0, 0)


# ---------------------------------------------------------------------------------------------
# Context: words just before a match raise its score, or veto it

def _word_alternation(words: Iterable[str], suffixes: Sequence[str] = ()) -> Optional[regex.Pattern]:
    words = sorted({w.lower() for w in words}, key=len, reverse=True)
    if not words:
        return None
    # ASCII words need a boundary ("ssn" but not "lessn"); CJK words match as substrings. A suffix
    # ("order number") lets a negative word end where a positive one ("number") would.
    ascii_words = [regex.escape(w) for w in words if w.isascii()]
    other_words = [regex.escape(w) for w in words if not w.isascii()]
    tail = "(?:" + "|".join(suffixes) + ")?" if suffixes else ""
    parts = []
    if ascii_words:
        parts.append(r"(?<![a-z0-9])(?:" + "|".join(ascii_words) + r")(?![a-z])" + tail)
    if other_words:
        parts.append("(?:" + "|".join(other_words) + ")" + tail)
    return regex.compile("|".join(parts))


def _is_latin_alnum(ch: str) -> bool:
    return ch.isalnum() and ch < "\u0250"


class ContextScorer:
    """Adjust a score from the words in a window before the match, on the same line (or the line
    before, when the value starts its own line: "电话：\n0755-…" in an extracted table).

    The nearest word wins, and a negative phrase beats a positive word ending in the same place: in
    "order placed, call 415-555-0132" the phone keeps its boost, while "call about order
    4155550132" and "order number 4155550132" are order numbers.
    """

    NEGATIVE_SUFFIXES = (r"\s*(?:number|numbers|num|no\.?|nr\.?|id|#|:)",)

    def __init__(self, positive: Sequence[str], negative: Sequence[str], window: int, boost: float = 0.35):
        self.positive = _word_alternation(positive)
        self.negative = _word_alternation(negative, self.NEGATIVE_SUFFIXES)
        self.window = window
        self.boost = boost

    @staticmethod
    def _last(pattern: Optional[regex.Pattern], text: str) -> int:
        if pattern is None:
            return -1
        last = -1
        for m in pattern.finditer(text):
            last = m.end()
        return last

    def before(self, text: str, start: int) -> str:
        lo = max(0, start - self.window)
        # A word the window cuts is not read ("Flat" is not "lat"); CJK text has no spaces to wait for.
        while 0 < lo < start and _is_latin_alnum(text[lo - 1]) and _is_latin_alnum(text[lo]):
            lo += 1
        window = text[lo:start]
        line_start = window.rfind("\n")
        if line_start >= 0 and not window[line_start + 1:].strip():
            line_start = window.rfind("\n", 0, line_start)
        return window[line_start + 1:].lower()

    def verdict(self, text: str, start: int) -> int:
        """1: the nearest context word before ``start`` is positive, -1: negative, 0: none."""
        before = self.before(text, start)
        pos, neg = self._last(self.positive, before), self._last(self.negative, before)
        if neg >= 0 and neg >= pos:
            return -1
        return 1 if pos >= 0 else 0

    def boosted(self, score: float) -> float:
        return round(min(1.0, score + self.boost), 6)

    def adjust(self, text: str, start: int, score: float) -> float:
        verdict = self.verdict(text, start)
        if verdict < 0:
            return 0.0
        return self.boosted(score) if verdict > 0 else score

    def has_negative(self, segment: str) -> bool:
        """Does ``segment`` (e.g. the words after a match) hold a negative word?"""
        return self.negative is not None and self.negative.search(segment.lower()) is not None


# An anchor that is plain text (letters, digits, spaces, escaped punctuation): found with str.find.
_LITERAL = regex.compile(r"(?:[^\\.^$*+?{}\[\]|()]|\\[^A-Za-z0-9])+")


class AnchorFinder:
    """Where an anchor matches in a text, left to right and not overlapping, as ``finditer`` gives
    them. A plain-text anchor is found with ``str.find``: most of a page's anchors are literals
    ("@", "ghp_", "PRIVATE KEY") and one regex scan each costs several times a find."""

    def __init__(self, pattern: str, timeout_s: float):
        self.literal = regex.sub(r"\\(.)", r"\1", pattern) if _LITERAL.fullmatch(pattern) else None
        self.compiled = None if self.literal else regex.compile(pattern)
        self.timeout_s = timeout_s

    def spans(self, text: str) -> Iterable[Tuple[int, int]]:
        if self.literal is None:
            return (m.span() for m in self.compiled.finditer(text, timeout=self.timeout_s))
        return self._found(text, self.literal)

    @staticmethod
    def _found(text: str, literal: str) -> Iterator[Tuple[int, int]]:
        size = len(literal)
        start = text.find(literal)
        while start >= 0:
            yield start, start + size
            start = text.find(literal, start + size)


# ---------------------------------------------------------------------------------------------
# The regex recognizer base

def recognizer_result(recognizer: EntityRecognizer, entity: str, start: int, end: int, score: float,
                      why: str) -> RecognizerResult:
    """A finding that names the recognizer behind it, as Presidio's explanations and metadata expect."""
    return RecognizerResult(
        entity_type=entity, start=start, end=end, score=score,
        analysis_explanation=AnalysisExplanation(recognizer=recognizer.name, original_score=score,
                                                 textual_explanation=why),
        recognition_metadata={RecognizerResult.RECOGNIZER_NAME_KEY: recognizer.name,
                              RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: recognizer.id})


class RegexRecognizer(LocalRecognizer):
    """Candidates from ``RULES``; ``validate`` decides each one's score (0 drops it) from its context."""

    ENTITY: str = ""
    RULES: Sequence[Rule] = ()
    CONTEXT: Sequence[str] = ()
    NEGATIVE_CONTEXT: Sequence[str] = ()

    def __init__(self, timeout_s: float = 5.0, context_window: int = 64):
        self.timeout_s = timeout_s
        self._compiled = [(rule, regex.compile(rule.pattern)) for rule in self.RULES]
        # One finder per anchor; rules that share an anchor and reach (the SSN and IP variants) share
        # its windows too (``analyze``).
        self._anchors = {rule.anchor: AnchorFinder(rule.anchor, timeout_s) for rule in self.RULES if rule.anchor}
        self._context = ContextScorer(self.CONTEXT, self.NEGATIVE_CONTEXT, context_window)
        super().__init__(supported_entities=[self.ENTITY], supported_language=LANGUAGE, context=list(self.CONTEXT))

    def load(self) -> None:
        pass

    def validate(self, text: str, match: regex.Match, rule: Rule) -> Tuple[int, int, float]:
        """(start, end, score) of the entity this candidate holds; score 0 rejects it."""
        return match.start(), match.end(), rule.score

    def _windows(self, text: str, rule: Rule) -> List[Tuple[int, int]]:
        if not rule.anchor:
            return [(0, len(text))]
        windows: List[Tuple[int, int]] = []
        before, after = rule.reach
        for start, end in self._anchors[rule.anchor].spans(text):
            lo, hi = max(0, start - before), min(len(text), end + after)
            if windows and lo <= windows[-1][1]:
                windows[-1] = (windows[-1][0], hi)
            else:
                windows.append((lo, hi))
        return windows

    def analyze(self, text: str, entities: List[str], nlp_artifacts=None) -> List[RecognizerResult]:
        results = []
        windows_of: dict = {}
        for rule, compiled in self._compiled:
            try:
                key = (rule.anchor, rule.reach)
                windows = windows_of.get(key)
                if windows is None:
                    windows = windows_of[key] = self._windows(text, rule)
                for lo, hi in windows:
                    for match in compiled.finditer(text, lo, hi, timeout=self.timeout_s):
                        start, end, score = self.validate(text, match, rule)
                        if score > 0:
                            score = self._context.adjust(text, start, score)
                        if score > 0:
                            results.append(recognizer_result(self, self.ENTITY, start, end, score, rule.name))
            except TimeoutError:
                raise AnalysisTimeout(f"{self.name} ran past {self.timeout_s:g} s") from None
        return EntityRecognizer.remove_duplicates(results)
