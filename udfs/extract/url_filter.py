"""URL filtering before any text work (RefinedWeb §G.1, FineWeb's first step, datatrove ``URLFilter``).

A response is rejected in ``extract`` before its payload is read or its HTML parsed:

* ``url_domain``: its host or any parent domain of it is on a block list (``reject_value``: the
  listed domain). Lists are files of one domain a line: UT1's ``adult/domains`` (FineWeb's list)
  or a company list works as it is.
* ``url_word``: the URL, split into words at every character that is not a letter or digit,
  contains a banned word or phrase (one is enough), at least
  ``soft_threshold`` distinct soft words (words with innocent uses: "sex", "nude", "escort"), or a
  banned subword anywhere in its letters and digits ("freepornvideos"). ``reject_value``: the
  word(s) found.

Both look at the URL as a reader sees it, not as it is spelled (``normalize_host``, ``url_words``):
percent-escapes decoded until nothing changes (``%2562`` is ``%62`` is ``b``), NFKC (full-width
letters are letters), the dots of other scripts (``。``) as dots, an ``xn--`` label as the Unicode it
encodes, lower case; and a word's letters that look like Latin ones (Cyrillic ``а``, Greek ``ο``) as
those, so a banned word spelled with them is found. A domain list's entries are read the same way.

The shipped lists (``udfs/common/blocklists/url_*.txt``) are built from LDNOOBW's English list (CC BY 4.0)
by ``tools/build_url_words.py``: an entry that clean English text (books, Wikipedia, speeches) uses
is soft, the others are banned, and banned words of five letters or more that are part of no clean
word are subwords too. No domain list ships (UT1 is CC BY-SA and millions of lines): bring your own.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import FrozenSet, List, Optional, Tuple
from urllib.parse import unquote, urlsplit

from corpusmill.config import ConfigError, defaults_from_yaml, require_file
from udfs.common.word_lists import WordSequenceMatcher, read_word_list, word_sequences
from udfs.common.worker import worker_resource

BLOCKLIST_DIR = Path(__file__).resolve().parents[1] / "common" / "blocklists"
SHIPPED = "shipped"  # a list setting's entry that stands for the shipped file of that kind
SHIPPED_FILES = {"word_lists": BLOCKLIST_DIR / "url_words.txt",
                 "soft_word_lists": BLOCKLIST_DIR / "url_soft_words.txt",
                 "subword_lists": BLOCKLIST_DIR / "url_subwords.txt"}
_URL_WORD_SPLIT = re.compile(r"[\W_]+")
# Percent-decoding rounds before a URL is taken as it is: real URLs need one or two.
MAX_DECODE_ROUNDS = 8
# What browsers read as a label separator (UTS 46): the ideographic full stop and its half-width
# form (NFKC turns full-width and other small dots into ".").
_DOTS = str.maketrans({"\u3002": ".", "\uff61": "."})
# Characters no host name holds (userinfo, port, spaces): a decoded authority is cut there, each
# piece looked up ("badsite.com%40example.org" names both hosts).
_NOT_IN_HOST = re.compile(r"[@:\s]+")
# Letters of other scripts drawn like a Latin letter (Unicode's confusables, the common lower-case
# ones): a word is compared by this skeleton. Letters that only look Latin in some fonts (Cyrillic
# п, Greek η) are left out, so a Russian or Greek word is not read as an English one.
_LATIN_SKELETON = str.maketrans({
    # Cyrillic
    "а": "a", "с": "c", "ԁ": "d", "е": "e", "һ": "h", "і": "i", "ј": "j", "ӏ": "l", "о": "o", "р": "p",
    "ԛ": "q", "ѕ": "s", "у": "y", "ԝ": "w", "х": "x", "ү": "y",
    # Greek
    "α": "a", "ϲ": "c", "ι": "i", "ϳ": "j", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x",
    # Latin letters of other alphabets
    "ɑ": "a", "ɡ": "g", "ı": "i", "ɩ": "i", "ȷ": "j",
})
_SCHEME_AND_SLASHES = re.compile(r"^(?:[a-z][a-z0-9+.\-]*:)?//")
_AUTHORITY_END = re.compile(r"[/?#\\]")
_PUNYCODE_LABEL = re.compile(r"xn--[a-z0-9\-]+")


@dataclass(frozen=True)
@defaults_from_yaml("extract", "url_filter")
class UrlFilterConfig:
    enabled: bool
    # Files of blocked domains, one a line ('#' comments); a domain blocks its subdomains too.
    domain_lists: List[str]
    # Files of banned words or phrases: one in the URL rejects it. ``shipped``: udfs/common/blocklists/url_words.txt.
    word_lists: List[str]
    # Files of soft words: the URL is rejected when it holds ``soft_threshold`` distinct ones.
    soft_word_lists: List[str]
    soft_threshold: int
    # Files of banned subwords, matched anywhere in the URL's letters and digits.
    subword_lists: List[str]

    def validate(self, prefix: str) -> None:
        for name in ("domain_lists", *SHIPPED_FILES):
            for i, path in enumerate(getattr(self, name)):
                if path == SHIPPED and name == "domain_lists":
                    raise ConfigError(f"{prefix}.domain_lists[{i}]: no domain list ships; name a file "
                                      f"(e.g. UT1's adult/domains)")
                if path != SHIPPED:
                    require_file(path, f"{prefix}.{name}[{i}]")
        if self.soft_threshold < 1:
            raise ConfigError(f"{prefix}.soft_threshold: must be at least 1, got {self.soft_threshold}")

    def files(self, kind: str) -> Tuple[str, ...]:
        return tuple(str(SHIPPED_FILES[kind]) if p == SHIPPED else p for p in getattr(self, kind))

    def lists_fingerprint(self) -> str:
        """Hash of every list file's content: a changed list must re-run the stage that applies it."""
        digest = hashlib.sha256()
        for kind in ("domain_lists", *SHIPPED_FILES):
            for path in (self.domain_lists if kind == "domain_lists" else self.files(kind)):
                digest.update(f"{kind}:{path}:".encode())
                digest.update(Path(path).read_bytes())
        return digest.hexdigest()[:16] if self.enabled else ""


def readable(url: str) -> str:
    """The URL as a reader sees it: percent-escapes decoded until nothing changes (at most
    ``MAX_DECODE_ROUNDS`` rounds; NFKC between rounds, since a full-width "％" is a "%"), NFKC, the
    ideographic full stops as dots, lower case."""
    for _ in range(MAX_DECODE_ROUNDS):
        once = unquote(url) if "%" in url else url
        if not once.isascii():
            once = unicodedata.normalize("NFKC", once).translate(_DOTS)
        if once == url:
            break
        url = once
    return url.lower()


def _unicode_label(label: str) -> str:
    """The Unicode an ``xn--`` label encodes (IDNA); any other label, or a broken one, as it is."""
    if not label.startswith("xn--"):
        return label
    try:
        return label[4:].encode("ascii").decode("punycode")
    except UnicodeError:
        return label


def normalize_host(host: str) -> str:
    """A host name as it is looked up: ``readable``, its ``xn--`` labels as their Unicode (read the
    same way), no leading or trailing dot."""
    labels = readable(host).strip(".").split(".")
    return ".".join(readable(_unicode_label(label)) for label in labels)


def url_hosts(url: str, readable_url: str) -> List[str]:
    """The host names a URL holds, normalised: its host as ``urlsplit`` reads it, and the pieces of
    its readable authority, which ends where a decoded or full-width "/", "?", "#" or "\\" ends it."""
    hosts = []
    try:
        hosts.append(urlsplit(url).hostname or "")
    except ValueError:  # a bad IPv6 literal; a netloc NFKC turns into another ("＠", "／")
        pass
    scheme = _SCHEME_AND_SLASHES.match(readable_url)
    if scheme:
        authority = _AUTHORITY_END.split(readable_url[scheme.end():], 1)[0]
        hosts.extend(_NOT_IN_HOST.split(authority))
    return list(dict.fromkeys(h for h in map(normalize_host, hosts) if h))


def url_words(readable_url: str) -> List[str]:
    """The words of a readable URL: its ``xn--`` labels as their Unicode, letters that look Latin as
    the Latin ones, split at every character that is not a letter or digit."""
    if "xn--" in readable_url:
        readable_url = _PUNYCODE_LABEL.sub(lambda label: readable(_unicode_label(label.group())), readable_url)
    return [w for w in _URL_WORD_SPLIT.split(latin_skeleton(readable_url)) if w]


def latin_skeleton(text: str) -> str:
    """``text`` with the letters of other scripts that are drawn like Latin ones as those."""
    return text if text.isascii() else text.translate(_LATIN_SKELETON)


def read_domains(path: str) -> FrozenSet[str]:
    """Domains of a list file, normalised as hosts are (``normalize_host``), without a leading '*.'
    or a port."""
    domains = set()
    for entry in read_word_list(Path(path)):
        entry = entry.split()[0].lstrip("*.")
        if "://" in entry:
            entry = urlsplit(entry).hostname or ""
        domains.add(normalize_host(entry.split(":")[0] if entry.count(":") == 1 else entry))
    domains.discard("")
    return frozenset(domains)


@dataclass(frozen=True)
class _Lists:
    domains: FrozenSet[str]
    words: WordSequenceMatcher
    soft_words: WordSequenceMatcher
    subwords: Optional["re.Pattern[str]"]  # any banned subword, None without any


def _lists(list_files: Tuple[Tuple[str, ...], ...]) -> _Lists:
    """The lists, read once per worker process (a UT1 domain list is millions of lines)."""
    return worker_resource("extract.url_lists", list_files, lambda: _read(*list_files))


def _read(domain_files: Tuple[str, ...], word_files: Tuple[str, ...], soft_files: Tuple[str, ...],
          subword_files: Tuple[str, ...]) -> _Lists:
    def entries(files):  # compared as the URL's words are: NFKC, and by their Latin skeleton
        return [latin_skeleton(unicodedata.normalize("NFKC", e)) for path in files for e in read_word_list(Path(path))]

    def matcher(files):
        listed = entries(files)
        # "blow job" is also banned written as one word, as URLs often do ("blowjob"); short joins
        # ("s&m" -> "sm") are common URL words of their own.
        joined = ["".join(s) for s in word_sequences(listed) if len(s) > 1 and len("".join(s)) >= 4]
        return WordSequenceMatcher(word_sequences(listed + joined))

    domains = frozenset().union(*(read_domains(p) for p in domain_files))
    subwords = sorted({re.sub(r"[\W_]+", "", e) for e in entries(subword_files)} - {""})
    return _Lists(domains, matcher(word_files), matcher(soft_files),
                  re.compile("|".join(map(re.escape, subwords))) if subwords else None)


class UrlFilter:
    """The verdict on one URL: None (keep) or (reason, value)."""

    def __init__(self, cfg: UrlFilterConfig):
        self.cfg = cfg
        self.list_files = (tuple(cfg.domain_lists), cfg.files("word_lists"), cfg.files("soft_word_lists"),
                           cfg.files("subword_lists"))

    def verdict(self, url: Optional[str]) -> Optional[Tuple[str, str]]:
        if not self.cfg.enabled or not url:
            return None
        lists = _lists(self.list_files)
        readable_url = readable(url)
        for host in url_hosts(url, readable_url):
            labels = host.split(".")
            for i in range(len(labels)):
                parent = ".".join(labels[i:])
                if parent in lists.domains:
                    return "url_domain", parent
        words = url_words(readable_url)
        banned = lists.words.found(words)
        if banned:
            return "url_word", " ".join(min(banned))
        soft = lists.soft_words.found(words)
        if len(soft) >= self.cfg.soft_threshold:
            return "url_word", "+".join(sorted(" ".join(s) for s in soft))
        subword = lists.subwords.search("".join(words)) if lists.subwords is not None else None
        return ("url_word", subword.group()) if subword else None
