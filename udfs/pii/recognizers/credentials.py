"""High-risk secrets: vendor-prefixed API tokens, high-entropy values assigned to key-like names,
bearer tokens, and PEM/OpenSSH/PGP private-key blocks; ``looks_random`` tells a secret from a
placeholder or a code reference.
"""
from __future__ import annotations

import math
from collections import Counter

import regex

from udfs.pii.recognizers.rules import RegexRecognizer, Rule

# Placeholders are written in lower case ("your-api-key-here"); an upper-case run inside a random
# value (AWS's documented "…EXAMPLEKEY") does not make it one.
_PLACEHOLDER = regex.compile(r"your|example|sample|dummy|placeholder|changeme|redacted|insert|(?i:xxxx)|\*\*\*|"
                             r"<|>|\$\{|\{\{|here|test_?key|fake|abcdef|123456|0000")
_DOTTED_NAME = regex.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+|[A-Z][A-Z0-9_]*")


def shannon_entropy(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


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
