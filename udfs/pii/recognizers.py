"""The recognizers behind the pii stage: regex candidates, then checksums, formats and context.

Every recognizer is a Presidio ``LocalRecognizer`` registered under one language code, ``xx``: the
patterns are script-agnostic, so an English page and a Chinese page run the same set. Unlike
Presidio's ``PatternRecognizer`` these see the whole text around a match (to reject ``v1.2.3.4`` or
a number right after "order"), compile case-sensitively, and raise ``AnalysisTimeout`` instead of
silently skipping a pattern that ran out of time: a document that could not be fully analysed must
not be passed on as scrubbed.

Scores follow one scale: 1.0 checksum-validated, 0.5–0.7 well-formed, below 0.4 weak shapes that
need a context word ("SSN", "电话", …) to count. ``ContextScorer`` adds the boost, and a nearer
negative word ("order", "订单", "ISBN", "version", …) vetoes the match.
"""
from __future__ import annotations

import datetime
import ipaddress
import math
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import phonenumbers
import regex
from presidio_analyzer import AnalysisExplanation, EntityRecognizer, LocalRecognizer, RecognizerResult
from presidio_analyzer.context_aware_enhancers import ContextAwareEnhancer
from presidio_analyzer.predefined_recognizers import IpRecognizer as PresidioIpRecognizer
from presidio_analyzer.predefined_recognizers import UsSsnRecognizer as PresidioUsSsnRecognizer
from presidio_analyzer.predefined_recognizers.generic.iban_patterns import regex_per_country
from stdnum import iban, isbn, luhn
from stdnum.cn import ric, uscc
from stdnum.exceptions import InvalidComponent, ValidationError

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
# Number checks beyond python-stdnum's checksums

def iban_valid(number: str) -> bool:
    """stdnum's IBAN checks: the country's length and BBAN layout, mod-97, and national check digits
    where a country has them. stdnum reads the number in upper case, so the number as written must
    also fit Presidio's pattern for its country, which says where lower case may appear ("LV80 bANK…"
    is no IBAN), unless it is written in lower case throughout ("de89 3704 …", as typed in a chat).
    A Belgian bank code missing from stdnum's bank list (InvalidComponent, raised after every
    checksum passed) still counts: a snapshot of banks lags behind the banks."""
    written = regex.sub(r"[ .-]", "", number)
    if written.islower():
        written = written.upper()
    if not regex.match(regex_per_country.get(written[:2], "$^"), written):
        return False
    try:
        iban.validate(number)
    except InvalidComponent:
        return iban.is_valid(number, check_country=False)
    except ValidationError:
        return False
    return True


# First two digits of a Chinese administrative division code (provinces, HK/MO/TW).
CN_PROVINCES = frozenset({
    "11", "12", "13", "14", "15", "21", "22", "23", "31", "32", "33", "34", "35", "36", "37",
    "41", "42", "43", "44", "45", "46", "50", "51", "52", "53", "54", "61", "62", "63", "64",
    "65", "71", "81", "82", "83", "91",
})


def cn_ric_valid(number: str) -> bool:
    """GB 11643 resident ID: province code, a real birth date not in the future, ISO 7064 MOD 11-2.

    Not ``stdnum.cn.ric.is_valid``: it also wants the county code to have existed in the birth
    year, but an ID carries the code of the county that issued it, which may be younger than its
    holder (it rejects 1,880 of 3,000 Faker IDs, all with real county codes)."""
    number = ric.compact(number)
    if len(number) != 18 or not number[:17].isdigit() or number[:2] not in CN_PROVINCES:
        return False
    try:
        born = ric.get_birth_date(number)
    except ValidationError:
        return False
    return datetime.date(1900, 1, 1) <= born <= datetime.date.today() and number[17] == ric.calc_check_digit(number)


def cn_uscc_valid(number: str) -> bool:
    """GB 32100 unified social credit code (8 digits, 10 code chars, mod-31 check: stdnum) whose
    division code names a province."""
    return number[2:4] in CN_PROVINCES and uscc.is_valid(number)


def isbn13_valid(digits: str) -> bool:
    return isbn.isbn_type(digits) == "ISBN13"


def isbn10_valid(digits: str) -> bool:
    return isbn.isbn_type(digits) == "ISBN10"


def card_brand_ok(digits: str) -> bool:
    """Does this length fit a card scheme whose IIN starts the number? (Luhn is checked separately.)"""
    n = len(digits)
    two, four = int(digits[:2]), int(digits[:4])
    if digits[0] == "4":
        return n in (13, 16, 19)                                   # Visa
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return n == 16                                             # Mastercard
    if two in (34, 37):
        return n == 15                                             # Amex
    if digits[0] == "1" or four in (1800, 2131):
        return n == 15                                             # UATP, JCB 15
    if two == 35:
        return 16 <= n <= 19                                       # JCB (3528-3589; generators use all of 35)
    if 300 <= int(digits[:3]) <= 305 or two in (36, 38, 39):
        return 14 <= n <= 19                                       # Diners
    if 2200 <= four <= 2204:
        return 16 <= n <= 19                                       # Mir
    if digits[0] == "6" or two == 50 or 56 <= two <= 58:
        return 12 <= n <= 19                                       # Discover, UnionPay, Maestro, RuPay
    return False


def shannon_entropy(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


_CODE_RUN = regex.compile(r"[A-Z]{2} ?\d{2}(?:[ -][A-Za-z0-9]{1,4}){0,8}[ -]$")


def continues_a_code(text: str, start: int) -> bool:
    """Is the number at ``start`` the tail of an IBAN-like run ("NL91 ABNA 0417 1643 00")? Then it is
    no phone or card number of its own, whether or not the run passes the IBAN checks."""
    return _CODE_RUN.search(text, max(0, start - 50), start) is not None


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
        window = text[max(0, start - self.window):start]
        line_start = window.rfind("\n")
        if line_start >= 0 and not window[line_start + 1:].strip():
            line_start = window.rfind("\n", 0, line_start)
        return window[line_start + 1:].lower()

    def adjust(self, text: str, start: int, score: float) -> float:
        before = self.before(text, start)
        pos, neg = self._last(self.positive, before), self._last(self.negative, before)
        if neg >= 0 and neg >= pos:
            return 0.0
        if pos >= 0:
            return round(min(1.0, score + self.boost), 6)
        return score


# ---------------------------------------------------------------------------------------------
# The regex recognizer base

class RegexRecognizer(LocalRecognizer):
    """Candidates from ``RULES``; ``validate`` decides each one's score (0 drops it) from its context."""

    ENTITY: str = ""
    RULES: Sequence[Rule] = ()
    CONTEXT: Sequence[str] = ()
    NEGATIVE_CONTEXT: Sequence[str] = ()

    def __init__(self, timeout_s: float = 5.0, context_window: int = 64):
        self.timeout_s = timeout_s
        self._compiled = [(rule, regex.compile(rule.pattern),
                           regex.compile(rule.anchor) if rule.anchor else None) for rule in self.RULES]
        self._context = ContextScorer(self.CONTEXT, self.NEGATIVE_CONTEXT, context_window)
        super().__init__(supported_entities=[self.ENTITY], supported_language=LANGUAGE, context=list(self.CONTEXT))

    def load(self) -> None:
        pass

    def validate(self, text: str, match: regex.Match, rule: Rule) -> Tuple[int, int, float]:
        """(start, end, score) of the entity this candidate holds; score 0 rejects it."""
        return match.start(), match.end(), rule.score

    def _windows(self, text: str, rule: Rule, anchor: Optional[regex.Pattern]) -> List[Tuple[int, int]]:
        if anchor is None:
            return [(0, len(text))]
        windows: List[Tuple[int, int]] = []
        before, after = rule.reach
        for m in anchor.finditer(text, timeout=self.timeout_s):
            lo, hi = max(0, m.start() - before), min(len(text), m.end() + after)
            if windows and lo <= windows[-1][1]:
                windows[-1] = (windows[-1][0], hi)
            else:
                windows.append((lo, hi))
        return windows

    def result(self, start: int, end: int, score: float, why: str) -> RecognizerResult:
        return RecognizerResult(
            entity_type=self.ENTITY, start=start, end=end, score=score,
            analysis_explanation=AnalysisExplanation(recognizer=self.name, original_score=score,
                                                     textual_explanation=why),
            recognition_metadata={RecognizerResult.RECOGNIZER_NAME_KEY: self.name,
                                  RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id})

    def analyze(self, text: str, entities: List[str], nlp_artifacts=None) -> List[RecognizerResult]:
        results = []
        for rule, compiled, anchor in self._compiled:
            try:
                for lo, hi in self._windows(text, rule, anchor):
                    for match in compiled.finditer(text, lo, hi, timeout=self.timeout_s):
                        start, end, score = self.validate(text, match, rule)
                        if score > 0:
                            score = self._context.adjust(text, start, score)
                        if score > 0:
                            results.append(self.result(start, end, score, rule.name))
            except TimeoutError:
                raise AnalysisTimeout(f"{self.name} ran past {self.timeout_s:g} s") from None
        return EntityRecognizer.remove_duplicates(results)


# ---------------------------------------------------------------------------------------------
# Medium risk: e-mail, phone, IP

_AT = r"[ \t]*[\[({<][ \t]*(?i:at)[ \t]*[\])}>][ \t]*"
_DOT = r"[ \t]*[\[({<][ \t]*(?i:dot)[ \t]*[\])}>][ \t]*"
_AT_WORD, _DOT_WORD = r"[ \t]+(?i:at)[ \t]+", r"[ \t]+(?i:dot)[ \t]+"
_OBFUSCATED = regex.compile(rf"{_AT}|{_AT_WORD}|(?P<dot>{_DOT}|{_DOT_WORD})")


def plain_email(value: str) -> str:
    """An address as a mail client reads it: "jane [at] example (dot) org" → "jane@example.org"."""
    return _OBFUSCATED.sub(lambda m: "." if m.group("dot") else "@", value)


class EmailAddressRecognizer(RegexRecognizer):
    """RFC 5322 dot-atom local part (ASCII, so it never swallows adjacent CJK text) and a domain
    whose suffix is on the public-suffix list (tldextract's bundled snapshot: no download).

    Addresses written to dodge harvesters count too: "jane [at] example [dot] org", "jane(at)
    example.org", and "jane at example dot org" (a plain " at " only with a spelled-out "dot": "meet
    at noon.com" is no address)."""

    ENTITY = "EMAIL"
    _ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
    _LOCAL = r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}"
    _LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    _END = r"(?![A-Za-z0-9-]|\.[A-Za-z0-9])"
    RULES = (Rule("email", rf"(?<![A-Za-z0-9._%+-]){_ATOM}(?:\.{_ATOM})*@"
                           r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z][A-Za-z0-9-]{0,61}[A-Za-z0-9]"
                           + _END, 1.0, anchor="@", reach=(70, 260)),
             Rule("email_at_bracketed", rf"{_LOCAL}{_AT}{_LABEL}(?:(?:\.|{_DOT}|{_DOT_WORD}){_LABEL})+{_END}", 0.9,
                  anchor=r"[\[({<](?=[ \t]*(?i:at)[ \t]*[\])}>])", reach=(70, 260)),
             Rule("email_at_word", rf"{_LOCAL}{_AT_WORD}{_LABEL}(?:(?:{_DOT}|{_DOT_WORD}){_LABEL})+{_END}", 0.7,
                  anchor=r"(?:dot|DOT|Dot)(?=[ \t\])}>])", reach=(140, 130)))

    def __init__(self, **kwargs):
        import tldextract

        self._suffixes = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
        super().__init__(**kwargs)

    def validate(self, text, match, rule):
        local, _, domain = plain_email(match.group()).rpartition("@")
        parts = self._suffixes(domain)
        ok = len(local) <= 64 and parts.suffix and parts.domain
        return match.start(), match.end(), rule.score if ok else 0.0


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
    raises it (phone, tel, fax, Handy, téléphone, 电话 …) or vetoes it (order, ISBN, page, lat …).

    ``leniency`` 0 also takes numbers glued to words; 2 and 3 take their candidates from
    libphonenumber's own matcher with its grouping checks (valid numbers only), scored the same way.
    """

    ENTITY = "PHONE"
    CONTEXT = (
        "phone", "phones", "telephone", "tel", "mobile", "cell", "cellphone", "call", "fax", "contact",
        "reach", "dial", "ring", "text", "sms", "whatsapp", "number", "ph", "mob", "hotline", "helpline",
        "landline", "switchboard", "reached", "calling", "called", "phoned", "texting", "ringing", "contacted",
        "telefon", "telefonisch", "telefonnummer", "rufnummer", "handy", "mobil", "mobilnummer", "anrufen",
        "rufen", "anruf", "durchwahl", "téléphone", "tél", "portable", "appelez", "appeler", "appelle",
        "joindre", "numéro", "telefono", "cellulare", "chiamare", "chiamaci", "chiamate", "numero", "teléfono",
        "móvil", "llame", "llámenos", "llamar", "telefone", "celular", "ligue", "ligar", "tfn", "ringa",
        "telefoon", "bel", "mobiel", "tlf", "telefonu", "numer", "dzwonić", "zadzwoń", "komórka",
        "电话", "電話", "手机", "手機", "联系", "聯繫", "致电", "热线", "座机", "传真", "微信", "拨打", "携帯")
    NEGATIVE_CONTEXT = (
        "order", "invoice", "tracking", "ref", "reference", "isbn", "issn", "sku", "serial", "patent", "doi",
        "pmid", "imei", "qq", "icp", "article", "art", "item", "model", "batch", "receipt", "transaction",
        "confirmation", "registration", "reg", "vat", "tax", "company number", "company no", "parcel", "shipment", "barcode", "ean",
        "upc", "page", "pages", "pp", "pg", "vol", "volume", "version", "ver", "build", "release", "coordinates",
        "coords", "lat", "latitude", "lon", "lng", "longitude", "gps", "score", "scores", "scored", "price",
        "prices", "population", "zip", "postcode", "pmc", "identification", "bestellnummer", "rechnung", "seite", "seiten", "commande",
        "facture",
        "订单", "单号", "编号", "账号", "帐号", "流水", "快递", "运单", "工号", "学号", "序列", "型号", "货号", "批号",
        "专利", "卡号", "页", "价格", "坐标", "比分", "版本")
    # Digit groups (one may be bracketed) joined by one separator each, a "(0)" trunk prefix being
    # a bracketed group, then an optional extension.
    _GROUP = r"(?:[(（]\d{1,6}[)）]|\d{1,15})"
    _SEP = r"(?:[ \xa0]?[-–—－./][ \xa0]?|[ \xa0]|(?<=[)）])|(?=[(（]))"
    _EXT = r"(?:[ \xa0]?(?:x|ext\.?|extn\.?|extension|#)[ \xa0]?\d{1,6})"
    _NUMBER = rf"(?:\+[ \xa0]?|(?<!\d)00(?=[1-9]))?{_GROUP}(?:{_SEP}{_GROUP})*{_EXT}?(?![\d(（]|[.,．]\d)"
    _CANDIDATE = regex.compile(rf"(?<![A-Za-z0-9_@/.+]|[A-Za-z0-9][-–]|\d[.,．:]){_NUMBER}")
    _CANDIDATE_GLUED = regex.compile(rf"(?<![0-9+]|\d[.,．\-–]){_NUMBER}")
    _EXTENSION = regex.compile(rf"{_EXT}$")
    _TRUNK = regex.compile(r"[ \xa0]?[(（]0[)）]")
    _DIGITS = regex.compile(r"\d+")
    _SEPARATORS = regex.compile(r"(?<=\d)[^\d]+(?=\d)")
    # Dates (05.10.2016, 09/18/2005, 08-10-12, 2008-12-25) but not a phone in pairs (01-23-45-67-89).
    _DATE = regex.compile(r"(?<![\d./-])(?:(?:0?[1-9]|[12]\d|3[01])([./-])(?:0?[1-9]|1[0-2])\1(?:\d{4}|\d{2})"
                          r"|(?:0?[1-9]|1[0-2])([./-])(?:0?[1-9]|[12]\d|3[01])\2(?:\d{4}|\d{2})"
                          r"|(?:1[89]|20)\d{2}([./-])(?:0?[1-9]|1[0-2])\3(?:0?[1-9]|[12]\d|3[01]))(?![\d./-]\d)")
    # An SSN's 3-2-4 and an IMEI's 2-6-6: other recognizers' business, or nobody's.
    _NOT_PHONE_SHAPES = regex.compile(r"\d{3}([- .])\d{2}\1\d{4}|\d{2}([- ])\d{6}\2\d{6}")
    _YEAR_RANGE = regex.compile(r"(?:1[5-9]|20)\d\d ?[-–—/] ?(?:1[5-9]|20)\d\d")
    # Shapes as often something else: thousands ("1 234 567"), "1123-1145" ranges, ZIP+4, EIN.
    _WEAK_SHAPES = regex.compile(r"[1-9]\d{0,2}([ \xa0.])\d{3}(?:\1\d{3})*|\d{1,4} ?[-–—] ?\d{1,4}|\d{5}-\d{4}|\d{2}-\d{7}")
    _FULLWIDTH = str.maketrans("０１２３４５６７８９（）－", "0123456789()-")
    _DASH_EXTENSION = regex.compile(r"(.*\d)[ \xa0]?[-–][ \xa0]?\d{1,4}")
    _AREA_SLASH = regex.compile(r"(?:\+\d{1,3} ?(?:\(0\))?|\(?0)[\d ]{1,6}\)? ?/")
    _CN_MOBILE = regex.compile(r"(?:(?:\+|00)86)?1[3-9]\d{9}")
    _GLUED_BEFORE = regex.compile(r"[A-Za-z/_@.]$")
    _GLUED_AFTER = regex.compile(r"[A-Za-z@_]|[.–-][A-Za-z]|:\d")
    _AMOUNT_BEFORE = regex.compile(r"(?:[$€£¥₹]|\b(?:USD|EUR|GBP|CHF|CNY|RMB|SEK|NOK|DKK|Rs\.?))[ \xa0]?$")
    _AMOUNT_AFTER = regex.compile(r"[ \xa0]?(?:[%‰°′€$£¥元円万亿]|m²|(?:kr|km|kg|mm|cm|ft|mi|lbs?|USD|EUR|GBP|SEK|"
                                  r"dollars?|euros?|pounds?|yuan|people|inhabitants|residents|votes|tons?|tonnes?|"
                                  r"bytes|views|copies)\b)")
    _CHUNK = regex.compile(r"[^ \xa0]+")
    # Phone-like runs for libphonenumber's own matcher (leniency 2 and 3).
    _STRICT_RUN = regex.compile(r"(?<![A-Za-z/_@])(?:\+|\b00)?[(（]?\d[\d ().\-–/（）\xa0]{5,24}\d(?![A-Za-z@_/])")
    # A solid run with a trunk prefix that is valid somewhere (0.45) passes the default threshold
    # (0.4) on its own, a weak shape (0.3) only with a phone word (+0.35).
    SCORE_INTERNATIONAL, SCORE_FORMATTED, SCORE_CN_MOBILE, SCORE_TRUNK_SOLID, SCORE_WEAK = 0.7, 0.6, 0.5, 0.45, 0.3
    # Local numbers this short are as often counts, codes and amounts: they need a phone word.
    MIN_DIGITS, MIN_DIGITS_ALONE, MAX_DIGITS = 7, 9, 15

    def __init__(self, regions: Sequence[str], leniency: int = 1, context_window: int = 64):
        self.regions = tuple(regions)
        self.leniency = leniency
        self._context = ContextScorer(self.CONTEXT, self.NEGATIVE_CONTEXT, context_window)
        super().__init__(supported_entities=[self.ENTITY], supported_language=LANGUAGE, context=list(self.CONTEXT))

    def load(self) -> None:
        pass

    # -- what a candidate is -----------------------------------------------------------------
    def shape_score(self, raw: str) -> Tuple[float, str]:
        """(score, region) of a number as written, before context; score 0: not a phone number."""
        raw = raw.translate(self._FULLWIDTH)
        ext = self._EXTENSION.search(raw)
        number = raw[:ext.start()] if ext else raw
        groups = self._DIGITS.findall(number)
        digits = "".join(groups)
        marks = {c for sep in self._SEPARATORS.findall(number) for c in sep if c in ".-–—/"}
        if (not self.MIN_DIGITS <= len(digits) <= self.MAX_DIGITS + 2 or len(set(digits)) == 1
                or self._DATE.search(number) or isbn13_valid(digits)
                or (len(groups[-1]) == 1 and isbn10_valid(digits))):  # "0-8346-5787-2"
            return 0.0, ""
        # A slash only follows an area code with its trunk prefix ("030/227-555"), never "17-24 160/ 450".
        if "/" in marks and not self._AREA_SLASH.match(number):
            return 0.0, ""
        if number.startswith(("+", "00")):
            found = self.international(number, marks)
            # "00" may also begin a national number ("0002 176808").
            if found[0] or number.startswith("+"):
                return found
        found = self.national(number)
        stem = self._DASH_EXTENSION.fullmatch(number)
        if not found[0] and stem and len(groups) >= 3 and number.startswith(("0", "(0")):
            # An extension after a dash and an area code ("0731 / 153 87-0", "0755-33902122-8480").
            return self.national(stem.group(1))
        return found

    def international(self, number: str, marks: set) -> Tuple[float, str]:
        groups = self._DIGITS.findall(self._TRUNK.sub("", number))
        digits = "".join(groups)
        # Dots join groups of 2-4 digits after the country code and the first group ("+61.2.1603.4774").
        if (sum(len(g) == 1 for g in groups) >= 3 or len(digits) > self.MAX_DIGITS + 2 * number.startswith("00")
                or ("." in marks and (len(marks) > 1 or any(not 2 <= len(g) <= 4 for g in groups[2:])))):
            return 0.0, ""
        try:
            parsed = phonenumbers.parse("+" + (digits[2:] if number.startswith("00") else digits))
        except phonenumbers.NumberParseException:
            return 0.0, ""
        if not phonenumbers.is_possible_number(parsed):
            return 0.0, ""
        return self.SCORE_INTERNATIONAL, phonenumbers.region_code_for_country_code(parsed.country_code)

    def national(self, number: str) -> Tuple[float, str]:
        groups = self._DIGITS.findall(number)
        digits = "".join(groups)
        marks = {c for sep in self._SEPARATORS.findall(number) for c in sep if c in ".-–—/"}
        # Dots join groups of 2-4 digits ("04.72.18.33.60"), beside other marks only groups of 3-4
        # ("010-6480.1817"): not a version, an address, a decimal or "9.00-17.30". One-digit groups
        # only lead ("1 800 …", "0 800 …").
        if ("." in marks and (any(not 2 <= len(g) <= 4 for g in groups)
                              or len(marks) > 1 and any(len(g) < 3 for g in groups[1:]))
                or len(digits) > self.MAX_DIGITS or any(len(g) == 1 for g in groups[1:])
                or self._NOT_PHONE_SHAPES.fullmatch(number) or self._YEAR_RANGE.fullmatch(number)):
            return 0.0, ""
        region = self.possible_region(digits)
        if not region:
            return 0.0, ""
        if len(groups) == 1:
            if self._CN_MOBILE.fullmatch(digits):
                return self.SCORE_CN_MOBILE, region
            # Written solid with its trunk prefix ("01614960351") and valid where it is dialled.
            trunk_dialled = digits[0] == "0" and 10 <= len(digits) <= 11 and self.valid_region(digits)
            return (self.SCORE_TRUNK_SOLID if trunk_dialled else self.SCORE_WEAK), region
        # An area code with its trunk prefix ("08-41 64 43", "(0161) 496 0066") makes eight digits
        # more than a bare local number.
        with_area_code = number[0] == "0" or number.startswith("(0")
        if (len(digits) < self.MIN_DIGITS_ALONE - with_area_code or self._WEAK_SHAPES.fullmatch(number)):
            return self.SCORE_WEAK, region
        return self.SCORE_FORMATTED, region

    def possible_region(self, digits: str) -> str:
        return self._first_region(digits, phonenumbers.is_possible_number)

    def valid_region(self, digits: str) -> str:
        return self._first_region(digits, phonenumbers.is_valid_number)

    def _first_region(self, digits: str, check: Callable) -> str:
        for region in self.regions:
            try:
                if check(phonenumbers.parse(digits, region)):
                    return region
            except phonenumbers.NumberParseException:
                continue
        return ""

    def pieces(self, text: str, start: int, end: int) -> List[Tuple[int, int]]:
        """A national run of more than 12 digits joined by spaces holds more than one number.
        Listed numbers ("0579-85793260 85158840 15024544802") part where a group of seven digits or
        more follows seven digits; what is still too long loses its first or last group."""
        raw = text[start:end]
        if raw.startswith(("+", "00")) or self._EXTENSION.search(raw) or sum(c.isdigit() for c in raw) <= 12:
            return [(start, end)]
        spans, lo, last_end, count = [], start, start, 0
        for chunk in self._CHUNK.finditer(raw):
            chunk_digits = sum(c.isdigit() for c in chunk.group())
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
        if (raw.startswith(("+", "00")) or sum(c.isdigit() for c in raw) <= 12 or " " not in raw
                or self._EXTENSION.search(raw)):
            return start, end
        first, last = raw.index(" "), raw.rindex(" ")
        kept = []
        for lo, hi in ((start + first + 1, end), (start, start + last)):
            part = text[lo:hi].translate(self._FULLWIDTH)
            if self.valid_region("".join(self._DIGITS.findall(part))):
                one_mark = len(set(self._SEPARATORS.findall(part))) == 1
                kept.append((part[0] in "0(", one_mark, lo, hi))
        return max(kept)[2:] if kept else (start, end)

    def in_the_way(self, text: str, start: int, end: int) -> bool:
        """Context that makes a phone-shaped number something else: glued to a word, path or
        address, a time after it, an amount's currency or unit, part of an IBAN-like code."""
        glued = self.leniency and (self._GLUED_BEFORE.search(text, max(0, start - 1), start)
                                   or self._GLUED_AFTER.match(text, end))
        return bool(glued or self._AMOUNT_BEFORE.search(text, max(0, start - 5), start)
                    or self._AMOUNT_AFTER.match(text, end) or continues_a_code(text, start))

    # -- where candidates come from ----------------------------------------------------------
    def candidates(self, text: str) -> Iterable[Tuple[int, int]]:
        if self.leniency >= 2:
            return self._strict_matches(text)
        pattern = self._CANDIDATE if self.leniency else self._CANDIDATE_GLUED
        return (m.span() for m in pattern.finditer(text) if sum(c.isdigit() for c in m.group()) >= self.MIN_DIGITS)

    def _strict_matches(self, text: str) -> List[Tuple[int, int]]:
        """libphonenumber's matcher at this leniency, on short windows around phone-like runs (most
        numbers on a page are dates, prices and counts, and parsing each once per region is slow);
        the first region with hits wins a window."""
        spans: List[Tuple[int, int]] = []
        for run in self._STRICT_RUN.finditer(text):
            lo, hi = max(0, run.start() - 2), min(len(text), run.end() + 12)
            chunk = text[lo:hi]
            for region in self.regions:
                hits = [(lo + m.start, lo + m.end) for m in
                        phonenumbers.PhoneNumberMatcher(chunk, region, leniency=self.leniency)]
                if hits:
                    spans += hits
                    break
        return spans

    def analyze(self, text: str, entities: List[str], nlp_artifacts=None) -> List[RecognizerResult]:
        results = []
        for start, end in dict.fromkeys(piece for span in self.candidates(text) for piece in self.pieces(text, *span)):
            score, region = self.shape_score(text[start:end])
            if score > 0 and not self.in_the_way(text, start, end):
                score = self._context.adjust(text, start, score)
            else:
                score = 0.0
            if score > 0:
                results.append(RecognizerResult(
                    entity_type=self.ENTITY, start=start, end=end, score=score,
                    analysis_explanation=AnalysisExplanation(
                        recognizer=self.name, original_score=score,
                        textual_explanation=f"Recognized as {region} region phone number"),
                    recognition_metadata={RecognizerResult.RECOGNIZER_NAME_KEY: self.name,
                                          RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id}))
        return EntityRecognizer.remove_duplicates(results)


class IpAddressRecognizer(RegexRecognizer):
    """IPv4 (each octet ≤ 255) and IPv6 incl. compressed, mapped and embedded forms (Presidio's
    patterns), validated by ``ipaddress``; version strings and section numbers are vetoed."""

    ENTITY = "IP_ADDRESS"
    RULES = tuple(Rule(p.name, p.regex, p.score) if p.name == "IPv4" else
                  Rule(p.name, p.regex, p.score, anchor=r"[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}:", reach=(50, 70))
                  for p in PresidioIpRecognizer.PATTERNS)
    CONTEXT = ("ip", "ipv4", "ipv6", "address", "host", "server", "gateway", "dns", "client", "地址")
    NEGATIVE_CONTEXT = ("version", "ver", "release", "build", "rev", "revision", "firmware", "driver",
                        "patch", "section", "sect", "chapter", "clause", "article", "art", "§", "figure",
                        "fig", "table", "step", "rule", "oid", "snmp", "mib", "版本", "第", "章节", "条款")
    _TITLE_AFTER = regex.compile(r"[ \t]+\p{Lu}")

    def is_heading_number(self, text: str, start: int, end: int) -> bool:
        """"1.2.3.4 Scope" at the start of a line is a numbered heading, not an address."""
        line_start = text.rfind("\n", 0, start) + 1
        octets = text[start:end].split(".")
        return (not text[line_start:start].strip() and len(octets) == 4
                and all(o.isdigit() and int(o) <= 20 for o in octets)
                and self._TITLE_AFTER.match(text, end) is not None)

    def validate(self, text, match, rule):
        start, end = match.span()
        try:
            ipaddress.ip_interface(match.group())
        except ValueError:
            return start, end, 0.0
        # "v1.2.3.4", "foo==1.2.3.4", "1.2.3.4-beta" are versions.
        glued = (text[start - 1:start] in ("v", "V") or text[end:end + 1] in ("-", "_")
                 or text[max(0, start - 2):start] in ("==", ">=", "<=", "~=", "!="))
        if glued or self.is_heading_number(text, start, end):
            return start, end, 0.0
        return start, end, rule.score


# ---------------------------------------------------------------------------------------------
# High risk: financial and national identifiers

class CardNumberRecognizer(RegexRecognizer):
    """13–19 digits, written solid or in the groupings cards are printed with (4-4-4-4[-3],
    4-6-5, 4-6-4), whose prefix and length fit a card scheme and whose Luhn digit is right.

    The grouping rule is what keeps IMEIs (written 2-6-6-1) and most order numbers out; a 15-digit
    IMEI starting "35" fits no scheme's length.
    """

    ENTITY = "CREDIT_CARD"
    RULES = (Rule("card", r"(?<![\w-])\d(?:[ -]?\d){11,18}(?![\w-])", 1.0),)
    CONTEXT = ("credit", "card", "visa", "mastercard", "amex", "discover", "jcb", "diners", "maestro",
               "unionpay", "cc", "信用卡", "银行卡", "卡号")
    NEGATIVE_CONTEXT = ("imei", "imeisv", "meid", "isbn", "order", "tracking", "invoice", "serial",
                        "订单", "单号", "快递", "运单")
    GROUPINGS = {(4, 4, 4, 4), (4, 4, 4, 4, 3), (4, 6, 5), (4, 6, 4), (4, 4, 4, 1), (4, 4, 4, 2), (4, 4, 4, 3)}

    def validate(self, text, match, rule):
        raw = match.group()
        groups = regex.split(r"[ -]", raw)
        if len(set(regex.findall(r"[ -]", raw))) > 1:
            return match.start(), match.end(), 0.0
        # A longer run may end in a number that is not part of the card: retry at group boundaries.
        for n in range(len(groups), 0, -1):
            head = groups[:n]
            digits = "".join(head)
            if not 12 <= len(digits) <= 19 or (n > 1 and tuple(map(len, head)) not in self.GROUPINGS):
                continue
            if card_brand_ok(digits) and luhn.is_valid(digits) and not isbn13_valid(digits):
                return match.start(), match.start() + len(digits) + n - 1, rule.score
        return match.start(), match.end(), 0.0

    def analyze(self, text: str, entities: List[str], nlp_artifacts=None) -> List[RecognizerResult]:
        return [r for r in super().analyze(text, entities, nlp_artifacts) if not continues_a_code(text, r.start)]


class IbanCodeRecognizer(RegexRecognizer):
    """IBAN: country code, check digits and alphanumeric groups however spaced or cased. It ends at
    the first group boundary where stdnum finds a valid IBAN (the country's length and BBAN layout,
    the mod-97 check digits and any national ones), so "DE89… 2 days" loses the " 2"."""

    ENTITY = "IBAN"
    # Upper case, or lower case glued to the check digits ("de89…"): "at 10", "be 20", "no 12" are words.
    _COUNTRY = "(?:(?:" + "|".join(sorted(regex_per_country)) + ") ?|(?:" + "|".join(
        sorted(c.lower() for c in regex_per_country)) + "))"
    # The anchor starts at the check digits: a look-behind tried at every position is slow.
    RULES = (Rule("iban", rf"(?<![A-Za-z0-9]){_COUNTRY}[0-9]{{2}}(?:[ .-]?[A-Za-z0-9]{{1,4}}){{2,12}}(?![A-Za-z0-9])",
                  1.0, anchor=r"\d\d(?<=(?<![A-Za-z0-9])(?:[A-Z]{2} ?|[a-z]{2})\d\d)", reach=(3, 60)),)
    CONTEXT = ("iban", "bank", "account", "transfer", "银行", "账户", "帐户")

    _GROUP_END = regex.compile(r"[A-Za-z0-9](?![A-Za-z0-9])")

    def validate(self, text, match, rule):
        raw = match.group()
        for group in self._GROUP_END.finditer(raw):
            if iban_valid(raw[:group.end()]):
                return match.start(), match.start() + group.end(), rule.score
        return match.start(), match.end(), 0.0


class SocialSecurityNumberRecognizer(RegexRecognizer):
    """US SSN: Presidio's patterns (weak undelimited shapes need an "SSN" word) and its rules for
    numbers never issued (area 000/666, zero groups, published samples)."""

    ENTITY = "US_SSN"
    RULES = tuple(Rule(p.name, p.regex, p.score, anchor=r"(?<!\d)\d{3}[- .]?\d{2}[- .]?\d{4}(?!\d)|"
                       r"(?<!\d)\d{5}-\d{4}(?!\d)|(?<!\d)\d{3}-\d{6}(?!\d)", reach=(1, 1))
                  for p in PresidioUsSsnRecognizer.PATTERNS)
    CONTEXT = ("ssn", "ssns", "ss#", "social security", "social-security", "社会安全号")
    NEGATIVE_CONTEXT = ("order", "invoice", "phone", "tel", "fax", "zip", "routing", "isbn", "case",
                        "tracking", "account")

    def __init__(self, **kwargs):
        self._rules = PresidioUsSsnRecognizer()
        super().__init__(**kwargs)

    _DIAL_PREFIX = regex.compile(r"\+\d{1,4}[ -]*$")

    def validate(self, text, match, rule):
        invalid = self._rules.invalidate_result(match.group())
        # "+81 158-23-2012" is a phone number in SSN shape.
        dialled = self._DIAL_PREFIX.search(text, max(0, match.start() - 8), match.start())
        return match.start(), match.end(), 0.0 if invalid or dialled else rule.score


class CnResidentIdRecognizer(RegexRecognizer):
    """Chinese resident identity card number (18 digits, last may be X), optionally grouped 6-8-4."""

    ENTITY = "CN_ID"
    RULES = (Rule("cn_ric", r"(?<![0-9A-Za-z])[1-9]\d{5}([ -]?)(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])"
                            r"(?:0[1-9]|[12]\d|3[01])\1\d{3}[0-9Xx](?![0-9A-Za-z])", 1.0),)
    CONTEXT = ("身份证", "身份证号", "证件号", "公民身份", "id card", "resident id")
    NEGATIVE_CONTEXT = ("订单", "单号", "运单", "流水", "order", "tracking", "invoice")

    def validate(self, text, match, rule):
        compact = match.group().replace(" ", "").replace("-", "")
        return match.start(), match.end(), rule.score if cn_ric_valid(compact) else 0.0


class CnUsccRecognizer(RegexRecognizer):
    """Chinese unified social credit code (统一社会信用代码). Scored below CN_ID so that an
    all-digit number valid as both reads as the far more common resident ID."""

    ENTITY = "CN_USCC"
    RULES = (Rule("cn_uscc", r"(?<![0-9A-Za-z])[1-9][1-9] ?\d{6} ?[0-9A-HJ-NPQRTUWXY]{10}(?![0-9A-Za-z])", 0.9),)
    CONTEXT = ("统一社会信用代码", "信用代码", "社会信用", "税号", "纳税人识别号", "uscc")

    def validate(self, text, match, rule):
        compact = match.group().replace(" ", "")
        return match.start(), match.end(), rule.score if cn_uscc_valid(compact) else 0.0


# ---------------------------------------------------------------------------------------------
# High risk: secrets

# Placeholders are written in lower case ("your-api-key-here"); an upper-case run inside a random
# value (AWS's documented "…EXAMPLEKEY") does not make it one.
_PLACEHOLDER = regex.compile(r"your|example|sample|dummy|placeholder|changeme|redacted|insert|(?i:xxxx)|\*\*\*|"
                             r"<|>|\$\{|\{\{|here|test_?key|fake|abcdef|123456|0000")
_DOTTED_NAME = regex.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+|[A-Z][A-Z0-9_]*")


# Identifiers made of words: camelCase, PascalCase, snake_case, kebab-case.
_WORD = r"(?:[A-Z]?[a-z]{2,}|[A-Z]{2,5}|\d{1,2})"
_WORDS = regex.compile(rf"{_WORD}(?:[_-]?{_WORD})*")


def looks_random(value: str, min_entropy: float) -> bool:
    """A secret is long, mixes character classes, is not a code reference (``process.env.API_KEY``,
    ``MY_SECRET_NAME``, ``clientSecretValue``) and not a placeholder."""
    digits = sum(c.isdigit() for c in value)
    code_reference = (_DOTTED_NAME.fullmatch(value) and digits < len(value) / 5) or _WORDS.fullmatch(value)
    classes = (digits > 0) + any(c.islower() for c in value) + any(c.isupper() for c in value)
    return (len(value) >= 16 and classes >= 2 and any(c.isalpha() for c in value) and not code_reference
            and shannon_entropy(value) >= min_entropy and not _PLACEHOLDER.search(value))


class ApiKeyRecognizer(RegexRecognizer):
    """Credentials with a vendor prefix (AWS, GitHub, Slack, Google, Stripe, OpenAI-style, Hugging
    Face, GitLab, npm, PyPI, SendGrid, JWTs, Telegram bots), and generic high-entropy values assigned
    to a key-like name (``api_key = "…"``, ``"client_secret": "…"``, ``Authorization: Bearer …``).
    Only the value is replaced, so ``api_key = "<API_KEY>"`` keeps its shape."""

    ENTITY = "API_KEY"
    _B, _E = r"(?<![A-Za-z0-9_-])", r"(?![A-Za-z0-9_-])"
    RULES = (
        Rule("aws_access_key",
             rf"{_B}(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{{16}}{_E}", 1.0,
             anchor=r"A[A-Z]{3}[A-Z0-9]{16}", reach=(1, 1)),
        Rule("github_token", rf"{_B}gh[pousr]_[A-Za-z0-9]{{36,251}}{_E}", 1.0, anchor=r"gh[pousr]_", reach=(1, 260)),
        Rule("github_pat", rf"{_B}github_pat_[A-Za-z0-9_]{{22,255}}{_E}", 1.0, anchor=r"github_pat_", reach=(1, 300)),
        Rule("slack_token", rf"{_B}xox[abposre]-[A-Za-z0-9-]{{10,250}}{_E}", 1.0, anchor=r"xox", reach=(1, 300)),
        Rule("slack_webhook", r"https://hooks\.slack\.com/services/T[A-Z0-9]{6,12}/B[A-Z0-9]{6,12}/[A-Za-z0-9]{20,32}",
             1.0, anchor=r"hooks\.slack\.com", reach=(1, 300)),
        Rule("google_api_key", rf"{_B}AIza[0-9A-Za-z_-]{{35}}{_E}", 1.0, anchor=r"AIza", reach=(1, 300)),
        Rule("stripe_secret", rf"{_B}(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{{24,99}}{_E}", 1.0, anchor=r"k_(?:live|test)_",
             reach=(2, 110)),
        Rule("sk_token", rf"{_B}sk-(?:[A-Za-z]+-)?[A-Za-z0-9_-]{{32,200}}{_E}", 0.8, anchor=r"sk\-", reach=(1, 300)),
        Rule("huggingface_token", rf"{_B}hf_[A-Za-z]{{34}}{_E}", 1.0, anchor=r"hf_", reach=(1, 300)),
        Rule("gitlab_token", rf"{_B}glpat-[A-Za-z0-9_-]{{20}}{_E}", 1.0, anchor=r"glpat\-", reach=(1, 300)),
        Rule("npm_token", rf"{_B}npm_[A-Za-z0-9]{{36}}{_E}", 1.0, anchor=r"npm_", reach=(1, 300)),
        Rule("pypi_token", rf"{_B}pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{{50,300}}{_E}", 1.0,
             anchor=r"pypi\-", reach=(1, 330)),
        Rule("sendgrid_key", rf"{_B}SG\.[A-Za-z0-9_-]{{22}}\.[A-Za-z0-9_-]{{43}}{_E}", 1.0,
             anchor=r"SG\.", reach=(1, 300)),
        Rule("jwt", rf"{_B}eyJ[A-Za-z0-9_-]{{8,4000}}\.eyJ[A-Za-z0-9_-]{{8,4000}}\.[A-Za-z0-9_-]{{8,4000}}{_E}", 1.0,
             anchor=r"eyJ[A-Za-z0-9_-]{8}", reach=(1, 12100)),
        Rule("telegram_bot_token", r"(?<!\d)\d{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])", 1.0, anchor=r":AA",
             reach=(11, 40)),
        # The key name is matched from its keyword on (a leading "[\w.-]*" would rescan every word).
        Rule("assigned_secret",
             r"(?i)(?:api[_-]?key|apikey|api[_-]?secret|secret|access[_-]?key|private[_-]?key|client[_-]?secret"
             r"|auth[_-]?token|access[_-]?token|refresh[_-]?token|token|password|passwd|account[_-]?key"
             r"|credentials?)[A-Za-z0-9_.-]{0,40}[\"']?\s*(?:=|:|=>|:=)\s*[\"']?"
             r"(?P<value>[A-Za-z0-9_\-+/=.~]{16,512})", 0.6,
             anchor=r"(?i)key|secret|token|passw|credential", reach=(20, 600)),
        Rule("bearer_token", r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9\-._~+/]{16,512}=*)", 0.6,
             anchor=r"(?i)bearer", reach=(1, 560)),
    )
    MIN_ENTROPY = 3.0
    _PREFIX = regex.compile(r"^(?:(?:[A-Za-z]+[_-])+|A[A-Z]{3}|eyJ)")
    _TOKEN_PLACEHOLDER = regex.compile(r"(?i)your|xxxx|redacted|placeholder|<|>|\$\{|\{\{|\*\*\*")

    def validate(self, text, match, rule):
        if "value" in match.groupdict():
            start, end = match.span("value")
            value = match.group("value")
            if text[end:end + 1] in ("(", "[") or not looks_random(value, self.MIN_ENTROPY):
                return start, end, 0.0
            return start, end, rule.score
        # Prefixed tokens: the prefix is fixed, so judge the random part alone.
        tail = self._PREFIX.sub("", match.group())
        if len(set(tail)) < 8 or self._TOKEN_PLACEHOLDER.search(tail):
            return match.start(), match.end(), 0.0
        return match.start(), match.end(), rule.score


class PrivateKeyRecognizer(RegexRecognizer):
    """PEM/OpenSSH/PGP private-key blocks, whole (or to where a truncated block's base64 ends)."""

    ENTITY = "PRIVATE_KEY"
    RULES = (Rule("pem_private_key",
                  r"-----BEGIN[A-Z ]{0,20} PRIVATE KEY(?: BLOCK)?-----"
                  r"(?:(?!-----)[\sA-Za-z0-9+/=:,._-]){0,65536}"
                  r"(?:-----END[A-Z ]{0,20} PRIVATE KEY(?: BLOCK)?-----)?", 1.0,
                  anchor="PRIVATE KEY", reach=(30, 70000)),)


# ---------------------------------------------------------------------------------------------
# Low risk: names, places, organisations from a spaCy pipeline

class SpacyNerRecognizer(LocalRecognizer):
    """PERSON / LOCATION / ORGANIZATION from a spaCy pipeline loaded by package name or path.

    ``spacy.load`` never downloads: a model that is not installed is a configuration error. spaCy's
    NER gives no per-entity confidence, so entities get ``score``; a single character (a common
    word as often as a name, 小明 vs 明) gets half of it.
    """

    LABELS = {"PERSON": "PERSON", "PER": "PERSON", "GPE": "LOCATION", "LOC": "LOCATION",
              "FAC": "LOCATION", "ORG": "ORGANIZATION"}

    def __init__(self, model: str, score: float = 0.85, max_length: int = 2_000_000):
        import spacy

        self.nlp = spacy.load(model)
        keep = {"tok2vec", "transformer", "ner", "entity_ruler", "span_ruler"}
        self.nlp.select_pipes(enable=[p for p in self.nlp.pipe_names if p in keep])
        self.nlp.max_length = max_length + 1
        self.score = score
        super().__init__(supported_entities=sorted(set(self.LABELS.values())), supported_language=LANGUAGE,
                         name=f"SpacyNerRecognizer[{model}]")

    def load(self) -> None:
        pass

    def analyze(self, text: str, entities: List[str], nlp_artifacts=None) -> List[RecognizerResult]:
        results = []
        for ent in self.nlp(text).ents:
            entity = self.LABELS.get(ent.label_)
            if entity is None or not ent.text.strip():
                continue
            score = self.score if len(ent.text.strip()) > 1 else self.score / 2
            results.append(RecognizerResult(
                entity_type=entity, start=ent.start_char, end=ent.end_char, score=score,
                analysis_explanation=AnalysisExplanation(recognizer=self.name, original_score=score,
                                                         textual_explanation=f"spaCy {ent.label_}"),
                recognition_metadata={RecognizerResult.RECOGNIZER_NAME_KEY: self.name,
                                      RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id}))
        return results


PATTERN_RECOGNIZERS = {
    "EMAIL": EmailAddressRecognizer, "IP_ADDRESS": IpAddressRecognizer, "CREDIT_CARD": CardNumberRecognizer,
    "IBAN": IbanCodeRecognizer, "US_SSN": SocialSecurityNumberRecognizer, "CN_ID": CnResidentIdRecognizer,
    "CN_USCC": CnUsccRecognizer, "API_KEY": ApiKeyRecognizer, "PRIVATE_KEY": PrivateKeyRecognizer,
}
