"""PII scrubbing per document: find with Presidio, decide by risk tier, replace (never delete).

``PiiScrubber`` wraps an offline Presidio ``AnalyzerEngine`` (``NoOpNlpEngine``: nothing is
downloaded; names and places only come from a spaCy pipeline the config names) whose recognizers
live in ``udfs.pii.recognizers``. Its raw findings then pass the policy of the config:

* a per-type switch, and per-tier score thresholds — high risk (keys, IDs, cards) is replaced at
  the lowest score, low risk (names, places: NER only) needs the highest;
* allow-lists for documentation values (``example.com`` mail, ``127.0.0.1``, the RFC 5737 ranges);
* overlapping findings resolve to the highest tier, then the longer span, then the higher score.

What is left is replaced by a typed placeholder (``<EMAIL>``) or, as an option, by a fake value of
the same type (Faker; the same value gets the same stand-in throughout a document). Only types and
counts leave this module: no original value is logged, counted or put in an error message.

A document's URL goes through the same recognizers piece by piece (``PiiScrubber.scrub_url``): each
path segment, each ``name=value`` pair of the query and the fragment, percent-decoded, so
``?email=jane%40mail.com`` becomes ``?email=<EMAIL>``; scheme, host and the untouched pieces stay
as they were written, so domain rules and dedup still read the URL.
"""
from __future__ import annotations

import bisect
import dataclasses
import gc
import ipaddress
import json
import random
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple
from urllib.parse import quote, unquote, unquote_plus, urlsplit, urlunsplit

from stdnum import luhn
from stdnum.cn import uscc

from corpusmill.config import ConfigError, defaults_from_yaml
from udfs.common.worker import worker_resource
from udfs.pii.errors import DocumentTooLong, PiiError

NER_ENTITIES = ("PERSON", "LOCATION", "ORGANIZATION")
HIGH = ["PRIVATE_KEY", "API_KEY", "CN_ID", "CN_USCC", "CREDIT_CARD", "IBAN", "US_SSN"]
MEDIUM = ["EMAIL", "PHONE", "IP_ADDRESS"]
LOW = list(NER_ENTITIES)
ALL_TYPES = HIGH + MEDIUM + LOW


@dataclass(frozen=True)
class RiskTier:
    """One tier of ``RiskTiers``; each tier's values are its own entry of conf/pii.yaml's ``tiers``."""

    threshold: float
    types: List[str]

    def validate(self, prefix: str) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ConfigError(f"{prefix}.threshold: must be within [0, 1], got {self.threshold}")
        for name in self.types:
            if name not in ALL_TYPES:
                raise ConfigError(f"{prefix}.types: unknown PII type {name!r} (types: {', '.join(ALL_TYPES)})")


@dataclass(frozen=True)
@defaults_from_yaml("pii", "tiers")
class RiskTiers:
    """Tiers in falling risk: an overlap between two findings goes to the riskier type."""

    high: RiskTier
    medium: RiskTier
    low: RiskTier

    def ordered(self) -> List[RiskTier]:
        return [self.high, self.medium, self.low]

    def validate(self, prefix: str) -> None:
        seen: Dict[str, int] = {}
        for tier in self.ordered():
            for name in tier.types:
                seen[name] = seen.get(name, 0) + 1
        for name in ALL_TYPES:
            if seen.get(name, 0) != 1:
                raise ConfigError(f"{prefix}: PII type {name} must be in exactly one tier (found in {seen.get(name, 0)})")


REPLACEMENTS = ("placeholder", "fake")


@dataclass(frozen=True)
@defaults_from_yaml("pii")
class PiiConfig:
    tiers: RiskTiers
    # Per-type switch; a type not listed is on.
    enabled: Dict[str, bool]
    # "placeholder" writes <TYPE>; "fake" writes a Faker value of the same type.
    replacement: str
    # Placeholder text per type; types not listed get "<TYPE>".
    placeholders: Dict[str, str]
    # Documentation values left alone: mail domains (and their subdomains), IP networks, exact values.
    allow_email_domains: List[str]
    allow_ip_networks: List[str]
    allow_values: List[str]
    phone_regions: List[str]
    # 0 possible numbers, also glued to words; 1 possible numbers standing alone (the default);
    # 2 and 3 libphonenumber's valid numbers with strict / exact grouping.
    phone_leniency: int
    # Characters before a match searched for context words ("SSN", "电话", "order", …).
    context_window: int
    # Optional NER: document language (the filter stage's `lang`) → installed spaCy package or path;
    # "*" serves every other language (and documents without a `lang` column).
    ner_models: Dict[str, str]
    ner_score: float
    # A document the analyzer cannot finish within these bounds goes to errors/, not to kept/.
    regex_timeout_s: float
    max_doc_chars: int

    def validate(self, prefix: str) -> None:
        for key in list(self.enabled) + list(self.placeholders):
            if key not in ALL_TYPES:
                raise ConfigError(f"{prefix}: unknown PII type {key!r} (types: {', '.join(ALL_TYPES)})")
        if self.replacement not in REPLACEMENTS:
            raise ConfigError(f"{prefix}.replacement: must be one of {', '.join(REPLACEMENTS)}, got {self.replacement!r}")
        for net in self.allow_ip_networks:
            try:
                ipaddress.ip_network(net, strict=False)
            except ValueError:
                raise ConfigError(f"{prefix}.allow_ip_networks: not an IP network: {net!r}") from None
        if self.phone_leniency not in (0, 1, 2, 3):
            raise ConfigError(f"{prefix}.phone_leniency: must be 0, 1, 2 or 3, got {self.phone_leniency}")
        if self.regex_timeout_s <= 0 or self.max_doc_chars <= 0 or self.context_window < 0:
            raise ConfigError(f"{prefix}: regex_timeout_s and max_doc_chars must be > 0, context_window >= 0")
        for lang, model in self.ner_models.items():
            if not _spacy_model_available(model):
                raise ConfigError(f"{prefix}.ner_models.{lang}: spaCy pipeline {model!r} is neither an installed "
                                  f"package nor a folder (models are never downloaded at run time)")

    def is_enabled(self, entity: str) -> bool:
        return self.enabled.get(entity, True)

    def placeholder(self, entity: str) -> str:
        return self.placeholders.get(entity, f"<{entity}>")


def _spacy_model_available(model: str) -> bool:
    import spacy.util

    return Path(model).is_dir() or spacy.util.is_package(model)


class Finding(NamedTuple):
    entity: str
    start: int
    end: int
    score: float


class Scrubbed(NamedTuple):
    """A document after scrubbing. On an error ``text`` is None (the raw text is never passed on)."""
    text: Optional[str]
    counts: Dict[str, int]
    error: Optional[str]
    url: Optional[str] = None
    url_counts: Dict[str, int] = {}



def _quote_url_piece(text: str) -> str:
    """Percent-encoding of the decoded text around replacements in a rewritten URL piece."""
    return quote(text, safe="@:+,;=!$'()*~")


class PiiScrubber:
    """Analyzer + policy + replacement for one config; build once per worker (``scrubber_for``)."""

    def __init__(self, cfg: PiiConfig):
        # Presidio (and the spaCy it imports) takes seconds to import: only a scrubber pulls them in,
        # so the config classes, the CLI and the driver, which import this module, stay light.
        from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
        from presidio_analyzer.nlp_engine import NoOpNlpEngine

        from udfs.pii import recognizers as rec

        self.cfg = cfg
        kwargs = {"timeout_s": cfg.regex_timeout_s, "context_window": cfg.context_window}
        recognizers = [cls(**kwargs) for entity, cls in rec.PATTERN_RECOGNIZERS.items() if cfg.is_enabled(entity)]
        if cfg.is_enabled("PHONE"):
            recognizers.append(rec.PhoneNumberRecognizer(cfg.phone_regions, cfg.phone_leniency, cfg.context_window))
        nlp_engine = NoOpNlpEngine(models=[{"lang_code": rec.LANGUAGE, "model_name": "none"}])
        nlp_engine.load()
        self.language = rec.LANGUAGE
        self.engine = AnalyzerEngine(
            registry=RecognizerRegistry(recognizers=recognizers, supported_languages=[rec.LANGUAGE]),
            nlp_engine=nlp_engine, supported_languages=[rec.LANGUAGE],
            context_aware_enhancer=rec.RecognizersScoreContext(0, 0, 0, 0))
        wants_ner = any(cfg.is_enabled(e) for e in NER_ENTITIES)
        self.ner = {lang: rec.SpacyNerRecognizer(model, cfg.ner_score, cfg.max_doc_chars)
                    for lang, model in cfg.ner_models.items()} if wants_ner else {}
        tiers = cfg.tiers.ordered()
        self.rank = {t: rank for rank, tier in enumerate(tiers) for t in tier.types}
        self.threshold = {t: tier.threshold for tier in tiers for t in tier.types}
        self.allow_nets = [ipaddress.ip_network(n, strict=False) for n in cfg.allow_ip_networks]
        self.allow_domains = tuple(d.lower().lstrip(".") for d in cfg.allow_email_domains)
        self.allow_values = frozenset(cfg.allow_values)
        self.fakes = FakeValues() if cfg.replacement == "fake" else None
        self.plain_email = rec.plain_email

    # -- finding ------------------------------------------------------------------------------
    def analyze(self, text: str, lang: Optional[str] = None):
        """Every raw finding with a score above zero, before the policy (Presidio results)."""
        if len(text) > self.cfg.max_doc_chars:
            raise DocumentTooLong(f"document longer than max_doc_chars={self.cfg.max_doc_chars}")
        ner = self.ner.get(lang) or self.ner.get("*")
        return self.engine.analyze(text=text, language=self.language, score_threshold=0.0,
                                   ad_hoc_recognizers=[ner] if ner else None)

    def allowed(self, entity: str, value: str) -> bool:
        if value in self.allow_values:
            return True
        if entity == "EMAIL":
            domain = self.plain_email(value).rpartition("@")[2].lower()
            return any(domain == d or domain.endswith("." + d) for d in self.allow_domains)
        if entity == "IP_ADDRESS":
            try:
                address = ipaddress.ip_interface(value.split("%")[0]).ip
            except ValueError:
                return False
            return any(address in net for net in self.allow_nets)
        return False

    def findings(self, text: str, lang: Optional[str] = None) -> List[Finding]:
        """The findings to replace: enabled, above their tier's threshold, not allowed, not overlapping."""
        candidates = [Finding(r.entity_type, r.start, r.end, r.score) for r in self.analyze(text, lang)
                      if self.cfg.is_enabled(r.entity_type) and r.score >= self.threshold[r.entity_type]
                      and not self.allowed(r.entity_type, text[r.start:r.end])]
        candidates.sort(key=lambda f: (self.rank[f.entity], f.start - f.end, -f.score, f.start))
        chosen: List[Finding] = []
        starts: List[int] = []
        for f in candidates:
            i = bisect.bisect_left(starts, f.start)
            if (i > 0 and chosen[i - 1].end > f.start) or (i < len(chosen) and chosen[i].start < f.end):
                continue
            chosen.insert(i, f)
            starts.insert(i, f.start)
        return chosen

    # -- replacing ----------------------------------------------------------------------------
    def scrub(self, text: str, lang: Optional[str] = None, context: str = "",
              between: Callable[[str], str] = str) -> Tuple[str, Dict[str, int]]:
        """``text`` with its findings replaced, and the replacements per type. ``context`` is read
        before ``text`` (for context words, e.g. a query parameter's name) but never rewritten: a
        finding that begins in it is cut to its part in ``text``. ``between`` maps the text between
        replacements (a URL piece re-encodes it; the replacements stay as configured)."""
        found = self.findings(context + text, lang)
        fake = self.fakes.for_document(text) if self.fakes else None
        parts, counts, pos = [], {}, 0
        for f in found:
            if f.end <= len(context):
                continue
            start, end = max(f.start - len(context), 0), f.end - len(context)
            parts.append(between(text[pos:start]))
            if fake and f.entity != "PRIVATE_KEY":  # a fake key block would still read as a leaked key
                parts.append(fake(f.entity, text[start:end]))
            else:
                parts.append(self.cfg.placeholder(f.entity))
            counts[f.entity] = counts.get(f.entity, 0) + 1
            pos = end
        parts.append(between(text[pos:]))
        return "".join(parts), counts

    def scrub_url(self, url: str) -> Tuple[str, Dict[str, int]]:
        """``url`` with every finding in its path segments, query and fragment pairs (the value read
        after its name, so ``token=…`` has its context word) replaced, and a password in the user
        info always replaced (a credential by definition). Scheme, host and port are kept: a host
        names a server, and mix's domain rules, dedup and the report read it. Pieces without
        findings keep their original encoding."""
        counts: Dict[str, int] = {}
        parts = urlsplit(url)
        userinfo, at, hostport = parts.netloc.rpartition("@")
        if not at and not self.findings(unquote_plus(url)):  # most URLs: one analysis, nothing to rewrite
            return url, counts

        def scrub_piece(piece: str, decode: Callable[[str], str] = unquote, context: str = "") -> str:
            scrubbed, found = self.scrub(decode(piece), context=context, between=_quote_url_piece)
            for entity, n in found.items():
                counts[entity] = counts.get(entity, 0) + n
            return scrubbed if found else piece

        def scrub_pairs(pairs: str) -> str:
            scrubbed = []
            for pair in pairs.split("&"):
                name, eq, value = pair.partition("=")
                value = scrub_piece(value, unquote_plus, context=unquote_plus(name) + eq)
                scrubbed.append(scrub_piece(name, unquote_plus) + eq + value)
            return "&".join(scrubbed)

        if at:
            user, colon, password = userinfo.partition(":")
            if colon and password:
                password = self.cfg.placeholder("API_KEY")
                counts["API_KEY"] = counts.get("API_KEY", 0) + 1
            netloc = scrub_piece(user) + colon + password + at + hostport
        else:
            netloc = parts.netloc
        path = "/".join(scrub_piece(segment) for segment in parts.path.split("/"))
        return urlunsplit((parts.scheme, netloc, path, scrub_pairs(parts.query), scrub_pairs(parts.fragment))), counts

    def scrub_or_error(self, text: Optional[str], lang: Optional[str] = None, url: Optional[str] = None) -> Scrubbed:
        """Never raises for a bad document: the failure comes back as a countable reason, with the
        URL scrubbed where it could be and no text (errors/ must hold nothing raw)."""
        url_out, url_counts, error = self._scrub_url_or_error(url)
        if text is None:
            return Scrubbed(None, {}, error or "text is null", url_out, url_counts)
        try:
            scrubbed, counts = self.scrub(text, lang)
        except Exception as exc:  # noqa: BLE001 - one document must not stop the job
            return Scrubbed(None, {}, _error_reason(exc), url_out, url_counts)
        if error:
            return Scrubbed(None, {}, error, url_out, url_counts)
        return Scrubbed(scrubbed, counts, None, url_out, url_counts)

    def _scrub_url_or_error(self, url: Optional[str]) -> Tuple[Optional[str], Dict[str, int], Optional[str]]:
        if url is None:
            return None, {}, None
        try:
            return (*self.scrub_url(url), None)
        except Exception as exc:  # noqa: BLE001 - a malformed URL is the document's error, not the job's
            return None, {}, f"url: {_error_reason(exc)}"


def _error_reason(exc: Exception) -> str:
    if isinstance(exc, PiiError):
        return f"{type(exc).__name__}: {exc}"
    # Foreign messages may quote the text (ipaddress does, urlsplit quotes the URL), so only the type is kept.
    return f"{type(exc).__name__} during PII analysis"


def scrubber_for(cfg: PiiConfig) -> PiiScrubber:
    """One scrubber per config per process (Presidio and spaCy take a while to build)."""
    def build() -> PiiScrubber:
        # The build is imports: long-lived objects only, which the garbage collector would traverse
        # again and again for nothing.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return PiiScrubber(cfg)
        finally:
            if collecting:
                gc.enable()
    return worker_resource("pii.scrubber", json.dumps(dataclasses.asdict(cfg), sort_keys=True), build)


def build_scrubber_in_background(cfg: PiiConfig) -> None:
    """Start building ``scrubber_for(cfg)`` in a thread, for a process that will need it later. A
    build that fails here is tried again by the first caller, whose error then says what needed it."""
    def build() -> None:
        try:
            scrubber_for(cfg)
        except Exception:  # noqa: BLE001 - raised again, in context, by the caller that needs the scrubber
            pass
    threading.Thread(target=build, name="scrubber-build", daemon=True).start()


# ---------------------------------------------------------------------------------------------
# Fake values of the same type

_CJK = re.compile(r"[\u3400-\u9fff]")


class FakeValues:
    """Stand-ins of the same type and shape. Seeded by the document, so a re-run writes the same
    text and one value keeps one stand-in within a document, while across documents stand-ins are
    unrelated (a global value→fake map would let anyone link documents by it)."""

    def __init__(self):
        from faker import Faker

        self.en, self.zh = Faker("en_US"), Faker("zh_CN")

    def for_document(self, text: str) -> Callable[[str, str], str]:
        import xxhash

        seed = xxhash.xxh64_intdigest(text.encode("utf-8"))
        rng = random.Random(seed)
        self.en.seed_instance(seed)
        self.zh.seed_instance(seed ^ 1)
        memo: Dict[Tuple[str, str], str] = {}

        def fake(entity: str, value: str) -> str:
            if (entity, value) not in memo:
                memo[(entity, value)] = self.make(entity, value, rng)
            return memo[(entity, value)]

        return fake

    @staticmethod
    def reshape(value: str, rng: random.Random, keep: int) -> str:
        """Random characters of the same class after the first ``keep`` alphanumerics."""
        out, seen = [], 0
        for ch in value:
            if ch.isascii() and ch.isalnum():
                seen += 1
                if seen > keep:
                    ch = (rng.choice("0123456789") if ch.isdigit() else
                          rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") if ch.isupper() else
                          rng.choice("abcdefghijklmnopqrstuvwxyz"))
            out.append(ch)
        return "".join(out)

    def make(self, entity: str, value: str, rng: random.Random) -> str:
        local = self.zh if _CJK.search(value) else self.en
        if entity == "EMAIL":
            return self.en.email()  # example.* domains: never someone's real mailbox
        if entity == "PHONE":
            return self.reshape(value, rng, keep=3)
        if entity == "IP_ADDRESS":
            return self.en.ipv6() if ":" in value else self.en.ipv4()
        if entity == "CREDIT_CARD":
            card = self.reshape(value, rng, keep=4)
            body = "".join(c for c in card[:-1] if c.isdigit())
            return card[:-1] + luhn.calc_check_digit(body)
        if entity == "IBAN":
            return self.en.iban()
        if entity == "US_SSN":
            return self.en.ssn()
        if entity == "CN_ID":
            return self.zh.ssn()
        if entity == "CN_USCC":
            body = "91" + rng.choice(["11", "31", "44", "51"]) + "".join(rng.choice("0123456789") for _ in range(4)) \
                + "".join(rng.choice("0123456789ABCDEFGHJKLMNPQRTUWXY") for _ in range(9))
            return body + uscc.calc_check_digit(body)
        if entity == "API_KEY":
            return self.reshape(value, rng, keep=4)
        if entity == "PERSON":
            return local.name()
        if entity == "LOCATION":
            return local.city()
        if entity == "ORGANIZATION":
            return local.company()
        raise ValueError(f"no fake values for {entity}")
