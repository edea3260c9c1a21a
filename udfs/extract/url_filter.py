"""URL filtering before any text work (RefinedWeb §G.1, FineWeb's first step, datatrove ``URLFilter``).

A response is rejected in ``extract`` before its payload is read or its HTML parsed:

* ``url_domain``: its host or any parent domain of it is on a block list (``reject_value``: the
  listed domain). Lists are files of one domain a line: UT1's ``adult/domains`` (FineWeb's list)
  or a company list works as it is.
* ``url_word``: the URL, split into words at every character that is not a letter or digit
  (percent-escapes decoded), contains a banned word or phrase (one is enough), at least
  ``soft_threshold`` distinct soft words (words with innocent uses: "sex", "nude", "escort"), or a
  banned subword anywhere in its letters and digits ("freepornvideos"). ``reject_value``: the
  word(s) found.

The shipped lists (``udfs/common/blocklists/url_*.txt``) are built from LDNOOBW's English list (CC BY 4.0)
by ``tools/build_url_words.py``: an entry that clean English text (books, Wikipedia, speeches) uses
is soft, the others are banned, and banned words of five letters or more that are part of no clean
word are subwords too. No domain list ships (UT1 is CC BY-SA and millions of lines): bring your own.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import FrozenSet, List, Optional, Tuple
from urllib.parse import unquote, urlsplit

from udfs.common.word_lists import WordSequenceMatcher, read_word_list, word_sequences
from udfs.common.config import ConfigError, require_file

BLOCKLIST_DIR = Path(__file__).resolve().parents[1] / "common" / "blocklists"
SHIPPED = "shipped"  # a list setting's entry that stands for the shipped file of that kind
SHIPPED_FILES = {"word_lists": BLOCKLIST_DIR / "url_words.txt",
                 "soft_word_lists": BLOCKLIST_DIR / "url_soft_words.txt",
                 "subword_lists": BLOCKLIST_DIR / "url_subwords.txt"}
_URL_WORD_SPLIT = re.compile(r"[\W_]+")


@dataclass(frozen=True)
class UrlFilterConfig:
    enabled: bool = True
    # Files of blocked domains, one a line ('#' comments); a domain blocks its subdomains too.
    domain_lists: List[str] = field(default_factory=list)
    # Files of banned words or phrases: one in the URL rejects it. ``shipped``: udfs/common/blocklists/url_words.txt.
    word_lists: List[str] = field(default_factory=lambda: [SHIPPED])
    # Files of soft words: the URL is rejected when it holds ``soft_threshold`` distinct ones.
    soft_word_lists: List[str] = field(default_factory=lambda: [SHIPPED])
    soft_threshold: int = 2
    # Files of banned subwords, matched anywhere in the URL's letters and digits.
    subword_lists: List[str] = field(default_factory=lambda: [SHIPPED])

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


def read_domains(path: str) -> FrozenSet[str]:
    """Domains of a list file, normalised as hosts are: lower case, no leading '*.' or '.', no port."""
    domains = set()
    for entry in read_word_list(Path(path)):
        entry = entry.split()[0].lstrip("*.").rstrip(".")
        if "://" in entry:
            entry = urlsplit(entry).hostname or ""
        domains.add(entry.split(":")[0] if entry.count(":") == 1 else entry)
    domains.discard("")
    return frozenset(domains)


@dataclass(frozen=True)
class _Lists:
    domains: FrozenSet[str]
    words: WordSequenceMatcher
    soft_words: WordSequenceMatcher
    subwords: Optional["re.Pattern[str]"]  # any banned subword, None without any


@lru_cache(maxsize=4)
def _load(domain_files: Tuple[str, ...], word_files: Tuple[str, ...], soft_files: Tuple[str, ...],
          subword_files: Tuple[str, ...]) -> _Lists:
    """The lists, read once per worker process (a UT1 domain list is millions of lines)."""
    def entries(files):
        return [e for path in files for e in read_word_list(Path(path))]

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
        lists = _load(*self.list_files)
        try:
            host = (urlsplit(url).hostname or "").rstrip(".")
        except ValueError:  # an unparsable URL (bad IPv6 literal) has no host to look up
            host = ""
        labels = host.split(".")
        for i in range(len(labels)):
            parent = ".".join(labels[i:])
            if parent in lists.domains:
                return "url_domain", parent
        words = [w for w in _URL_WORD_SPLIT.split(unquote(url).lower()) if w]
        banned = lists.words.found(words)
        if banned:
            return "url_word", " ".join(min(banned))
        soft = lists.soft_words.found(words)
        if len(soft) >= self.cfg.soft_threshold:
            return "url_word", "+".join(sorted(" ".join(s) for s in soft))
        subword = lists.subwords.search("".join(words)) if lists.subwords is not None else None
        return ("url_word", subword.group()) if subword else None
