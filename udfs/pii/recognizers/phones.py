"""Phone numbers in running text: ``PhoneCandidates`` finds the runs that may be phone numbers and
splits a run that lists several, ``in_the_way`` vetoes runs glued to words, amounts or codes, and
``PhoneNumberRecognizer`` scores what is left by its shape (``phone_shapes``) and its context
(``phone_context``).
"""
from __future__ import annotations

from typing import Iterable, List, Sequence, Tuple

import phonenumbers
import regex
from presidio_analyzer import EntityRecognizer, LocalRecognizer, RecognizerResult

from udfs.pii.recognizers.checks import continues_a_code
from udfs.pii.recognizers.phone_shapes import DIGITS, ENDS_IN_EXTENSION, EXTENSION, FULLWIDTH, SEPARATORS, PhoneShape
from udfs.pii.recognizers.phone_context import PHONE_WORDS, PhoneContext
from udfs.pii.recognizers.rules import LANGUAGE, recognizer_result

# A country code ("+41", "(+41)", "0041"), then digit groups (one may be bracketed) joined by one
# separator each, a "(0)" trunk prefix being a bracketed group, then an optional extension.
_COUNTRY_CODE = r"(?:[(（]\+\d{1,3}[)）][ \xa0]?|\+[ \xa0]?|(?<!\d)00(?=[1-9]))"
_GROUP = r"(?:[(（]\d{1,6}[)）]|\d{1,15})"
_SEP = r"(?:[ \xa0]?[-–—－./][ \xa0]?|[ \xa0]|(?<=[)）])|(?=[(（]))"
_NUMBER = rf"{_COUNTRY_CODE}?{_GROUP}(?:{_SEP}{_GROUP})*{EXTENSION}?(?![\d(（]|[.,．]\d)"


def _digit_count(raw: str) -> int:
    return sum(c.isdigit() for c in raw)


class PhoneCandidates:
    """Spans of a text that may each hold one phone number: runs of digit groups found by a regex
    (leniency 0 and 1) or by libphonenumber's matcher (2 and 3); a run that lists several numbers is
    split into them."""

    _CANDIDATE = regex.compile(rf"(?<![A-Za-z0-9_@/.+]|[A-Za-z0-9][-–]|\d[.,．:]){_NUMBER}")
    _CANDIDATE_GLUED = regex.compile(rf"(?<![0-9+]|\d[.,．\-–]){_NUMBER}")
    _CHUNK = regex.compile(r"[^ \xa0]+")
    # Phone-like runs for libphonenumber's own matcher (leniency 2 and 3).
    _STRICT_RUN = regex.compile(r"(?<![A-Za-z/_@])(?:\+|\b00)?[(（]?\d[\d ().\-–/（）\xa0]{5,24}\d(?![A-Za-z@_/])")

    def __init__(self, shape: PhoneShape, leniency: int):
        self.shape = shape
        self.leniency = leniency

    def spans(self, text: str) -> List[Tuple[int, int]]:
        """Every candidate span once, in the order found."""
        return list(dict.fromkeys(piece for span in self.candidates(text) for piece in self.pieces(text, *span)))

    def candidates(self, text: str) -> Iterable[Tuple[int, int]]:
        if self.leniency >= 2:
            return self._strict_matches(text)
        pattern = self._CANDIDATE if self.leniency else self._CANDIDATE_GLUED
        return (m.span() for m in pattern.finditer(text) if _digit_count(m.group()) >= self.shape.MIN_DIGITS)

    def _strict_matches(self, text: str) -> List[Tuple[int, int]]:
        """libphonenumber's matcher at this leniency, on short windows around phone-like runs (most
        numbers on a page are dates, prices and counts, and parsing each once per region is slow);
        the first region with hits wins a window."""
        spans: List[Tuple[int, int]] = []
        for run in self._STRICT_RUN.finditer(text):
            lo, hi = max(0, run.start() - 2), min(len(text), run.end() + 12)
            chunk = text[lo:hi]
            for region in self.shape.regions:
                hits = [(lo + m.start, lo + m.end) for m in
                        phonenumbers.PhoneNumberMatcher(chunk, region, leniency=self.leniency)]
                if hits:
                    spans += hits
                    break
        return spans

    @staticmethod
    def _long_national_run(raw: str) -> bool:
        """More than 12 digits with no country code and no extension: maybe more than one number."""
        return not (raw.startswith(("+", "00", "(+", "（+")) or ENDS_IN_EXTENSION.search(raw) or _digit_count(raw) <= 12)

    def pieces(self, text: str, start: int, end: int) -> List[Tuple[int, int]]:
        """A national run of more than 12 digits joined by spaces holds more than one number.
        Listed numbers ("0579-85793260 85158840 15024544802") part where a group of seven digits or
        more follows seven digits; what is still too long loses its first or last group."""
        raw = text[start:end]
        if not self._long_national_run(raw):
            return [(start, end)]
        spans, lo, last_end, count = [], start, start, 0
        for chunk in self._CHUNK.finditer(raw):
            chunk_digits = _digit_count(chunk.group())
            if count >= 7 and chunk_digits >= 7:
                spans.append((lo, last_end))
                lo, count = start + chunk.start(), 0
            count += chunk_digits
            last_end = start + chunk.end()
        spans.append((lo, end))
        return [self.trimmed(text, lo, hi) for lo, hi in spans]

    def trimmed(self, text: str, start: int, end: int) -> Tuple[int, int]:
        """A national run of more than 12 digits joined by spaces may be a number beside another
        ("SD 20241 440-600-5124", "020 7946 0000 24 hours"): the run without its first or its last
        group when that is a valid number somewhere, preferring a trunk prefix, then one separator."""
        raw = text[start:end]
        if not self._long_national_run(raw) or " " not in raw:
            return start, end
        first, last = raw.index(" "), raw.rindex(" ")
        kept = []
        for lo, hi in ((start + first + 1, end), (start, start + last)):
            part = text[lo:hi].translate(FULLWIDTH)
            if self.shape.valid_region("".join(DIGITS.findall(part))):
                one_mark = len(set(SEPARATORS.findall(part))) == 1
                kept.append((part[0] in "0(", one_mark, lo, hi))
        return max(kept)[2:] if kept else (start, end)


_GLUED_BEFORE = regex.compile(r"[A-Za-z/_@.]$")
_GLUED_AFTER = regex.compile(r"[A-Za-z@_]|[.–-][A-Za-z]|:\d")
_AMOUNT_BEFORE = regex.compile(r"(?:[$€£¥₹]|\b(?:USD|EUR|GBP|CHF|CNY|RMB|SEK|NOK|DKK|Rs\.?))[ \xa0]?$")
_AMOUNT_AFTER = regex.compile(r"[ \xa0]?(?:[%‰°′€$£¥元円万亿]|m²|(?:kr|km|kg|mm|cm|ft|mi|lbs?|USD|EUR|GBP|SEK|"
                              r"dollars?|euros?|pounds?|yuan|people|inhabitants|residents|votes|tons?|tonnes?|"
                              r"bytes|views|copies|visitors|users|subscribers|members|employees|households|"
                              r"habitants|habitantes|abitanti|Einwohner|inwoners|invånare|mieszkańców)\b)")


def in_the_way(text: str, start: int, end: int, leniency: int) -> bool:
    """Context that makes a phone-shaped number something else: glued to a word, path or address
    (from leniency 1 on; a label such as "-Office" is no word), a time after it, an amount's currency
    or unit, part of an IBAN-like code."""
    glued_after = _GLUED_AFTER.match(text, end) and not PhoneContext.labelled_after(text, end)
    glued = leniency and (_GLUED_BEFORE.search(text, max(0, start - 1), start) or glued_after)
    return bool(glued or _AMOUNT_BEFORE.search(text, max(0, start - 5), start)
                or _AMOUNT_AFTER.match(text, end) or continues_a_code(text, start))


class PhoneNumberRecognizer(LocalRecognizer):
    """Phone numbers as people write them, checked with libphonenumber's *possible*-number rules.

    A candidate is a run of digit groups with one separator between groups (space, dash, dot, a
    slash after an area code, brackets around one), an optional ``+``/``00`` country code with a
    ``(0)`` trunk prefix, and an optional extension ("x204", "ext. 12"). With a country code it must
    be a possible number of that country (0.7); without one, a possible number in one of
    ``regions`` (0.6 when written in groups, nine digits or more). Validity is not asked for: many
    numbers people and generators write lie outside the ranges a region has assigned so far
    ("+1-917-104-2231": no NANP exchange starts with 1).

    Shapes that are as often something else are weak (0.3: they need a phone word before them):
    7-8 digit local numbers ("532 8841"), unseparated digit runs (Chinese mobiles aside: 0.5),
    thousands groupings ("1 234 567"), "1123-1145" ranges. Shapes that are not phone numbers are
    dropped: dates, times, decimals, dotted versions and addresses, the SSN's 3-2-4, year ranges,
    ISBNs, amounts with a currency or unit, the tail of an IBAN-like code. A word before the number
    raises it (phone, tel, fax, Handy, téléphone, 电话, call back, texted …) or vetoes it (order, ISBN,
    page, account number …); so does a label beside it ("Desk:", "-Office"), the end of a postal
    address right before it or a verb of reaching someone right after it (``phone_context``).

    ``leniency`` 0 also takes numbers glued to words; 2 and 3 take their candidates from
    libphonenumber's own matcher with its grouping checks (valid numbers only), scored the same way.
    """

    ENTITY = "PHONE"
    CONTEXT = PHONE_WORDS

    def __init__(self, regions: Sequence[str], leniency: int = 1, context_window: int = 64):
        self.regions = tuple(regions)
        self.leniency = leniency
        self._shape = PhoneShape(self.regions)
        self._candidates = PhoneCandidates(self._shape, leniency)
        self._context = PhoneContext(context_window)
        super().__init__(supported_entities=[self.ENTITY], supported_language=LANGUAGE, context=list(self.CONTEXT))

    def load(self) -> None:
        pass

    def analyze(self, text: str, entities: List[str], nlp_artifacts=None) -> List[RecognizerResult]:
        results = []
        for start, end in self._candidates.spans(text):
            score, region = self._shape.score(text[start:end])
            if score > 0 and not in_the_way(text, start, end, self.leniency):
                score = self._context.adjust(text, start, end, score)
            else:
                score = 0.0
            if score > 0:
                results.append(recognizer_result(self, self.ENTITY, start, end, score,
                                                 f"Recognized as {region} region phone number"))
        return EntityRecognizer.remove_duplicates(results)
