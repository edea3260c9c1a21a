"""Real passages, planted near-duplicates and exhaustive-Jaccard ground truth for the dedup tests and
benchmarks (``bench/dedup_*.py`` put ``tests/`` on their path to import it).

Passages come from ``../shared/data/corpora``: Project Gutenberg books and ABC news transcripts
(English, word passages), Wikipedia article paragraphs, People's Daily paragraphs (Chinese). The
ground truth is computed independently of ``udfs/dedup/minhash.py``: plain Python sets of word 5-grams of
``text.lower().split()`` (characters 3-grams without whitespace for Chinese) and every pair with a
shingle in common (pairs sharing none have Jaccard 0), so it is exhaustive.
"""
from __future__ import annotations

import random
import re
import zipfile
from collections import defaultdict
from itertools import combinations
from pathlib import Path
from typing import Dict, Iterable, List, Sequence, Set, Tuple

from conftest import SHARED_DATA

CORPORA = SHARED_DATA / "corpora"

BOILERPLATE = [
    "Share this article on Facebook and Twitter.",
    "Subscribe to our newsletter for the latest updates.",
    "All rights reserved. Terms of use and privacy policy apply.",
    "Click here to read more stories like this one.",
]


# ---------------------------------------------------------------- real text

def wiki_paragraphs(path: Path, min_words: int = 40) -> List[str]:
    """Prose paragraphs of the MediaWiki XML dump, with templates, links and tags stripped."""
    xml = path.read_text(encoding="utf-8")
    paragraphs = []
    for body in re.findall(r"<text[^>]*>(.*?)</text>", xml, flags=re.S):
        body = re.sub(r"&lt;ref[^&]*?/&gt;|&lt;ref.*?&lt;/ref&gt;", "", body, flags=re.S)
        for _ in range(3):  # nested templates
            body = re.sub(r"\{\{[^{}]*\}\}", "", body)
        body = re.sub(r"\[\[(?:[^\]|]*\|)?([^\]]*)\]\]", r"\1", body)
        body = re.sub(r"&lt;.*?&gt;|'''?|&quot;|&amp;\w*;?", "", body)
        for para in body.split("\n"):
            para = " ".join(para.split())
            if para and para[0] not in "{|!*#=:;" and len(para.split()) >= min_words:
                paragraphs.append(para)
    return paragraphs


def peoples_daily_paragraphs(path: Path, min_chars: int = 80) -> List[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
            if len(line.strip()) >= min_chars]


def english_words() -> List[str]:
    """All words of the Gutenberg books and the ABC news transcripts, in order."""
    words: List[str] = []
    for book in sorted((CORPORA / "en" / "gutenberg").glob("*.txt")):
        words += book.read_text(encoding="latin-1").split()
    with zipfile.ZipFile(CORPORA / "en" / "abc.zip") as archive:
        for name in sorted(archive.namelist()):
            if name.endswith(".txt"):
                words += archive.read(name).decode("latin-1").split()
    return words


def passages(words: Sequence[str], count: int, rng: random.Random, lengths=(60, 300)) -> List[str]:
    """Disjoint consecutive passages of random length."""
    out, pos = [], 0
    while len(out) < count and pos < len(words):
        size = rng.randint(*lengths)
        out.append(" ".join(words[pos:pos + size]))
        pos += size
    return out


# ---------------------------------------------------------------- planted near-duplicates

def edit_words(text: str, rate: float, rng: random.Random, vocabulary: Sequence[str]) -> str:
    """Substitute, insert or delete about ``rate`` of the words (at least one edit)."""
    words = text.split()
    for _ in range(max(1, round(rate * len(words)))):
        i = rng.randrange(len(words))
        kind = rng.random()
        if kind < 0.5:
            words[i] = rng.choice(vocabulary)
        elif kind < 0.8 or len(words) < 3:
            words.insert(i, rng.choice(vocabulary))
        else:
            del words[i]
    return " ".join(words)


def edit_chars(text: str, rate: float, rng: random.Random) -> str:
    """Chinese: substitute or insert about ``rate`` of the characters."""
    chars = list(text)
    for _ in range(max(1, round(rate * len(chars)))):
        i = rng.randrange(len(chars))
        filler = chr(rng.randint(0x4E00, 0x9FA5))
        if rng.random() < 0.6:
            chars[i] = filler
        else:
            chars.insert(i, filler)
    return "".join(chars)


def with_boilerplate(text: str, rng: random.Random) -> str:
    line = rng.choice(BOILERPLATE)
    return f"{line} {text}" if rng.random() < 0.5 else f"{text} {line}"


# ---------------------------------------------------------------- ground truth

def shingle_set(text: str, n_words: int = 5, n_chars: int = 3) -> Set:
    """Word n-grams of text.lower().split(), or character n-grams when the text is mostly CJK."""
    compact = "".join(text.split())
    cjk = sum(1 for c in compact if "\u4e00" <= c <= "\u9fff")
    if compact and cjk >= 0.5 * len(compact):
        return {compact[i:i + n_chars] for i in range(max(1, len(compact) - n_chars + 1))}
    words = text.lower().split()
    return {tuple(words[i:i + n_words]) for i in range(max(1, len(words) - n_words + 1))}


def jaccard(a: Set, b: Set) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def similar_pairs(ids: Sequence[str], texts: Sequence[str], threshold: float) -> List[Tuple[str, str, float]]:
    """Every pair with Jaccard >= threshold, found exhaustively through an inverted shingle index."""
    sets = [shingle_set(t) for t in texts]
    postings: Dict = defaultdict(list)
    for i, s in enumerate(sets):
        for sh in s:
            postings[sh].append(i)
    shared: Dict[Tuple[int, int], int] = defaultdict(int)
    for docs in postings.values():
        if len(docs) > 1:
            for i, j in combinations(docs, 2):
                shared[(i, j)] += 1
    out = []
    for (i, j), inter in shared.items():
        sim = inter / (len(sets[i]) + len(sets[j]) - inter)
        if sim >= threshold:
            out.append((ids[i], ids[j], sim))
    return out


def clusters(ids: Iterable[str], pairs: Iterable[Tuple[str, str, float]]) -> Dict[str, str]:
    """Union-find over the ground-truth pairs (a test oracle, not pipeline code): id → least id."""
    parent = {i: i for i in ids}

    def root(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b, _ in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {i: root(i) for i in parent}


def expected_removed(ids: Sequence[str], texts: Sequence[str], threshold: float) -> Set[str]:
    """Documents a perfect deduplicator removes: all but the least id of each ground-truth cluster."""
    roots = clusters(ids, similar_pairs(ids, texts, threshold))
    return {i for i, r in roots.items() if i != r}
