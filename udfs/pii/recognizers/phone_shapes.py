"""What a phone number looks like as written: ``PhoneShape`` scores one run of digit groups and
separators, with libphonenumber's possible-number rules for the configured regions, before the
text around it is looked at. Also the digit, separator and extension patterns the candidate
finder in ``phones`` reads numbers with.
"""
from __future__ import annotations

from typing import Callable, Sequence, Set, Tuple

import phonenumbers
import regex

from udfs.pii.recognizers.checks import isbn10_valid, isbn13_valid

# An extension after the number ("x204", "ext. 12", "#3").
EXTENSION = r"(?:[ \xa0]?(?:x|ext\.?|extn\.?|extension|#)[ \xa0]?\d{1,6})"
ENDS_IN_EXTENSION = regex.compile(rf"{EXTENSION}$")
FULLWIDTH = str.maketrans("０１２３４５６７８９（）－", "0123456789()-")
DIGITS = regex.compile(r"\d+")
SEPARATORS = regex.compile(r"(?<=\d)[^\d]+(?=\d)")


def separator_marks(number: str) -> Set[str]:
    """The punctuation between digit groups ("." "-" "–" "—" "/"); spaces and brackets aside."""
    return {c for sep in SEPARATORS.findall(number) for c in sep if c in ".-–—/"}


class PhoneShape:
    """Judges a number as written: with a country code it must be possible in that country, without
    one in one of ``regions``; dates, ISBNs, versions, year ranges and other shapes that are not
    phone numbers score 0, shapes as often something else score ``SCORE_WEAK``.
    """

    _TRUNK = regex.compile(r"[ \xa0]?[(（]0[)）]")
    # Dates (05.10.2016, 09/18/2005, 08-10-12, 2008-12-25) but not a phone in pairs (01-23-45-67-89).
    _DATE = regex.compile(r"(?<![\d./-])(?:(?:0?[1-9]|[12]\d|3[01])([./-])(?:0?[1-9]|1[0-2])\1(?:\d{4}|\d{2})"
                          r"|(?:0?[1-9]|1[0-2])([./-])(?:0?[1-9]|[12]\d|3[01])\2(?:\d{4}|\d{2})"
                          r"|(?:1[89]|20)\d{2}([./-])(?:0?[1-9]|1[0-2])\3(?:0?[1-9]|[12]\d|3[01]))(?![\d./-]\d)")
    # An SSN's 3-2-4 and an IMEI's 2-6-6: other recognizers' business, or nobody's; a Brazilian
    # postcode's 5-3.
    _NOT_PHONE_SHAPES = regex.compile(r"\d{3}([- .])\d{2}\1\d{4}|\d{2}([- ])\d{6}\2\d{6}|\d{5}-\d{3}")
    _YEAR_RANGE = regex.compile(r"(?:1[5-9]|20)\d\d ?[-–—/] ?(?:1[5-9]|20)\d\d")
    # Round counts in thousands groupings ("20 000 000", "1.500.000"), never dialled.
    _ROUND = regex.compile(r"\d{1,3}(?:[ \xa0.]\d{3})*[ \xa0.]000[ \xa0.]000")
    # Shapes as often something else: thousands ("1 234 567"), "1123-1145" ranges, ZIP+4, EIN.
    _WEAK_SHAPES = regex.compile(r"[1-9]\d{0,2}([ \xa0.])\d{3}(?:\1\d{3})*|\d{1,4} ?[-–—] ?\d{1,4}|\d{5}-\d{4}|\d{2}-\d{7}")
    _DASH_EXTENSION = regex.compile(r"(.*\d)[ \xa0]?[-–][ \xa0]?\d{1,4}")
    _AREA_SLASH = regex.compile(r"(?:\+\d{1,3} ?(?:\(0\))?|\(?0)[\d ]{1,6}\)? ?/")
    _CN_MOBILE = regex.compile(r"(?:(?:\+|00)86)?1[3-9]\d{9}")
    # A solid run with a trunk prefix that is valid somewhere (0.45) passes the default threshold
    # (0.4) on its own, a weak shape (0.3) only with a phone word (+0.35).
    SCORE_INTERNATIONAL, SCORE_FORMATTED, SCORE_CN_MOBILE, SCORE_TRUNK_SOLID, SCORE_WEAK = 0.7, 0.6, 0.5, 0.45, 0.3
    # Local numbers this short are as often counts, codes and amounts: they need a phone word.
    MIN_DIGITS, MIN_DIGITS_ALONE, MAX_DIGITS = 7, 9, 15

    def __init__(self, regions: Sequence[str]):
        self.regions = tuple(regions)

    def score(self, raw: str) -> Tuple[float, str]:
        """(score, region) of a number as written, before context; score 0: not a phone number."""
        raw = raw.translate(FULLWIDTH)
        ext = ENDS_IN_EXTENSION.search(raw)
        number = raw[:ext.start()] if ext else raw
        groups = DIGITS.findall(number)
        digits = "".join(groups)
        marks = separator_marks(number)
        if (not self.MIN_DIGITS <= len(digits) <= self.MAX_DIGITS + 2 or len(set(digits)) == 1
                or self._DATE.search(number) or isbn13_valid(digits)
                or (len(groups[-1]) == 1 and isbn10_valid(digits))):  # "0-8346-5787-2"
            return 0.0, ""
        # A slash only follows an area code with its trunk prefix ("030/227-555"), never "17-24 160/ 450".
        if "/" in marks and not self._AREA_SLASH.match(number):
            return 0.0, ""
        if number.startswith(("+", "00", "(+")):
            found = self.international(number, marks)
            # "00" may also begin a national number ("0002 176808").
            if found[0] or not number.startswith("00"):
                return found
        found = self.national(number)
        stem = self._DASH_EXTENSION.fullmatch(number)
        if not found[0] and stem and len(groups) >= 3 and number.startswith(("0", "(0")):
            # An extension after a dash and an area code ("0731 / 153 87-0", "0755-33902122-8480").
            return self.national(stem.group(1))
        return found

    def international(self, number: str, marks: Set[str]) -> Tuple[float, str]:
        groups = DIGITS.findall(self._TRUNK.sub("", number))
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
        groups = DIGITS.findall(number)
        digits = "".join(groups)
        marks = separator_marks(number)
        # Dots join groups of 2-4 digits ("04.72.18.33.60"), beside other marks only groups of 3-4
        # ("010-6480.1817"): not a version, an address, a decimal or "9.00-17.30". One-digit groups
        # only lead ("1 800 …", "0 800 …").
        if ("." in marks and (any(not 2 <= len(g) <= 4 for g in groups)
                              or len(marks) > 1 and any(len(g) < 3 for g in groups[1:]))
                or len(digits) > self.MAX_DIGITS or any(len(g) == 1 for g in groups[1:])
                or self._NOT_PHONE_SHAPES.fullmatch(number) or self._YEAR_RANGE.fullmatch(number)
                or self._ROUND.fullmatch(number)):
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
