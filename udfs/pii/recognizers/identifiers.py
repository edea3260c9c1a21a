"""High-risk financial and national identifiers: card numbers, IBANs, US social security numbers,
Chinese resident IDs and unified social credit codes, each kept only when its checksum or issuing
rules hold (``checks``).
"""
from __future__ import annotations

from typing import List

import regex
from presidio_analyzer import RecognizerResult
from presidio_analyzer.predefined_recognizers import UsSsnRecognizer as PresidioUsSsnRecognizer
from presidio_analyzer.predefined_recognizers.generic.iban_patterns import regex_per_country
from stdnum import luhn

from udfs.pii.recognizers.checks import (card_brand_ok, cn_ric_valid, cn_uscc_valid, continues_a_code, iban_valid,
                                         isbn13_valid)
from udfs.pii.recognizers.rules import RegexRecognizer, Rule


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
