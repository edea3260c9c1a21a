"""Bad-word lists and the C4 bad-words signal (Raffel et al. 2020; datatrove ``C4BadWordsFilter``).

The lists shipped in ``udfs/common/blocklists/ldnoobw/`` are LDNOOBW's (CC BY 4.0, see NOTICE), one file per
language, one entry per line. C4 drops a page that contains any listed word: in languages written
with spaces an entry matches as whole words (``g-spot`` matches "g spot" and "g-spot", never
"g-spotted"), in Japanese, Thai and Chinese anywhere in the text. ``bad_words`` counts the distinct
entries a text contains; which languages the rule acts on is the rule's setting (``conf/filter.yaml``).

In spaced languages the text is scanned by compiled code (``udfs/filter/_badwords.pyx``) with the same result
as ``WordSequenceMatcher`` on the text's ``\\w+`` tokens, the definition, at a fraction of the cost: it
makes no Python string per token.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, Optional

from udfs.common.word_lists import read_word_list, word_sequences
from udfs.common.worker import worker_resource

try:
    from udfs.filter._badwords import TextMatcher
except ImportError as exc:  # pragma: no cover - a source checkout that was never pip-installed
    raise ImportError("corpusmill's compiled bad-words scan (udfs/filter/_badwords.pyx) is not built: "
                      "run `pip install -e .` in the repository") from exc

LDNOOBW_DIR = Path(__file__).resolve().parents[1] / "common" / "blocklists" / "ldnoobw"
# Written without spaces between words: an entry matches anywhere, as C4 and datatrove do.
UNSPACED_LANGUAGES = frozenset({"ja", "th", "zh"})
# Entries mostly innocent in running text, dropped as datatrove does (性 is in 可能性, 女の子 is "girl").
ALLOWLIST = {"ja": {"sm", "グロ", "女の子"}, "zh": {"性"}}
# LDNOOBW file names that differ from fastText lid.176's language codes.
LID_CODES = {"fil": "tl"}


def shipped_lists() -> Dict[str, Path]:
    """Language (lid.176 code) -> the shipped LDNOOBW file."""
    return {LID_CODES.get(p.name, p.name): p for p in sorted(LDNOOBW_DIR.iterdir())
            if p.is_file() and p.name != "LICENSE"}


class BadWords:
    """The C4 bad-words signal of a text in a language: distinct listed entries found, None without a list."""

    def __init__(self, lists: Dict[str, str]):
        """``lists``: language -> list file; languages not given use the shipped list."""
        self.files = {**{lang: str(p) for lang, p in shipped_lists().items()}, **lists}

    def count(self, text: str, lang: Optional[str]) -> Optional[int]:
        if lang not in self.files:
            return None
        unspaced, pattern, matcher = _compiled(self.files[lang], lang)
        lowered = text.lower()
        if unspaced:
            return len(set(pattern.findall(lowered))) if pattern is not None else 0
        return len(matcher.found(lowered))


def _compiled(path: str, lang: str):
    """A list compiled once per worker: (unspaced, substring pattern, text matcher)."""
    return worker_resource("filter.bad_words", (path, lang), lambda: _compile(path, lang))


def _compile(path: str, lang: str):
    entries = [e for e in read_word_list(Path(path)) if e not in ALLOWLIST.get(lang, ())]
    if lang in UNSPACED_LANGUAGES:
        # Longest first, so that overlapping entries count as the longest one found.
        alternatives = sorted(set(entries), key=len, reverse=True)
        pattern = re.compile("|".join(map(re.escape, alternatives))) if alternatives else None
        return True, pattern, None
    return False, None, TextMatcher(word_sequences(entries))
