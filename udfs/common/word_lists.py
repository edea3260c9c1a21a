"""Word lists (one entry per line) and the matcher that finds their entries, single words or phrases,
in a sequence of word tokens: the URL block lists of extract and the bad-words lists of filter."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, Tuple

_WORD = re.compile(r"\w+")


def read_word_list(path: Path) -> List[str]:
    """Entries of a list file: one per line, lower-cased; blank lines and ``#`` comments skipped."""
    entries = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip().lower()
        if line and not line.startswith("#"):
            entries.append(line)
    return entries


def word_sequences(entries: Iterable[str]) -> FrozenSet[Tuple[str, ...]]:
    """Each entry as its sequence of word tokens (punctuation and spacing inside an entry ignored)."""
    return frozenset(tuple(_WORD.findall(e)) for e in entries if _WORD.search(e))


class WordSequenceMatcher:
    """Finds listed entries in a token sequence: single words by one set intersection, phrases only
    where a token starts one."""

    def __init__(self, sequences: FrozenSet[Tuple[str, ...]]):
        self.words = frozenset(s[0] for s in sequences if len(s) == 1)
        self.phrases: Dict[str, List[Tuple[str, ...]]] = {}  # first word -> the phrases it starts
        for sequence in sorted(s for s in sequences if len(s) > 1):
            self.phrases.setdefault(sequence[0], []).append(sequence)

    def found(self, tokens: List[str]) -> set:
        hits = {(word,) for word in self.words.intersection(tokens)}
        if not self.phrases.keys().isdisjoint(tokens):
            for i, token in enumerate(tokens):
                for phrase in self.phrases.get(token, ()):
                    if tuple(tokens[i:i + len(phrase)]) == phrase:
                        hits.add(phrase)
        return hits
