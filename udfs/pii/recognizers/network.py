"""Medium-risk network identifiers: e-mail addresses (also those written to dodge harvesters,
"jane [at] example [dot] org") and IPv4/IPv6 addresses.
"""
from __future__ import annotations

import ipaddress

import regex
from presidio_analyzer.predefined_recognizers import IpRecognizer as PresidioIpRecognizer

from udfs.pii.recognizers.rules import RegexRecognizer, Rule

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
