"""Checks on numbers as written, beyond python-stdnum's checksums: an IBAN's layout per country, the
Chinese resident ID and unified social credit code, ISBNs, card schemes by prefix and length, and
whether a number is the tail of an IBAN-like run. Plain functions, shared by the identifier and
phone recognizers.
"""
from __future__ import annotations

import datetime

import regex
from presidio_analyzer.predefined_recognizers.generic.iban_patterns import regex_per_country
from stdnum import iban, isbn
from stdnum.cn import ric, uscc
from stdnum.exceptions import InvalidComponent, ValidationError


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


_CODE_RUN = regex.compile(r"[A-Z]{2} ?\d{2}(?:[ -][A-Za-z0-9]{1,4}){0,8}[ -]$")


def continues_a_code(text: str, start: int) -> bool:
    """Is the number at ``start`` the tail of an IBAN-like run ("NL91 ABNA 0417 1643 00")? Then it is
    no phone or card number of its own, whether or not the run passes the IBAN checks."""
    return _CODE_RUN.search(text, max(0, start - 50), start) is not None
