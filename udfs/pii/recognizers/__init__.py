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

Modules: ``rules`` (``Rule``, context scoring, the ``RegexRecognizer`` base), ``checks`` (number
checks beyond stdnum's), ``network`` (e-mail, IP), ``phone_shapes``, ``phone_context`` and ``phones``
(phone numbers), ``identifiers`` (cards, IBAN, SSN, Chinese IDs), ``credentials`` (API keys, private
keys), ``ner`` (spaCy names, places, organisations). This package names what the scrubber, tests and benches use.
"""
from udfs.pii.recognizers.checks import CN_PROVINCES, cn_ric_valid, cn_uscc_valid
from udfs.pii.recognizers.credentials import ApiKeyRecognizer, PrivateKeyRecognizer
from udfs.pii.recognizers.identifiers import (CardNumberRecognizer, CnResidentIdRecognizer, CnUsccRecognizer,
                                              IbanCodeRecognizer, SocialSecurityNumberRecognizer)
from udfs.pii.recognizers.ner import SpacyNerRecognizer
from udfs.pii.recognizers.network import EmailAddressRecognizer, IpAddressRecognizer, plain_email
from udfs.pii.recognizers.phones import PhoneNumberRecognizer
from udfs.pii.recognizers.rules import LANGUAGE, RecognizersScoreContext

# The recognizers a config switches on by entity type, each built with (timeout_s, context_window).
PATTERN_RECOGNIZERS = {
    "EMAIL": EmailAddressRecognizer, "IP_ADDRESS": IpAddressRecognizer, "CREDIT_CARD": CardNumberRecognizer,
    "IBAN": IbanCodeRecognizer, "US_SSN": SocialSecurityNumberRecognizer, "CN_ID": CnResidentIdRecognizer,
    "CN_USCC": CnUsccRecognizer, "API_KEY": ApiKeyRecognizer, "PRIVATE_KEY": PrivateKeyRecognizer,
}

__all__ = ["CN_PROVINCES", "LANGUAGE", "PATTERN_RECOGNIZERS", "PhoneNumberRecognizer", "RecognizersScoreContext",
           "SpacyNerRecognizer", "cn_ric_valid", "cn_uscc_valid", "plain_email"]
