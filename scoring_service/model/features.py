"""Text → model inputs, vectorised with numpy; the one encoder shared by training and serving.

A batch of texts becomes the model's three bags (``Encoded``):

* ``content`` — hashed character n-grams of the normalised text (this is how CJK
  is covered: no word segmenter, and character n-grams also see punctuation and line breaks), word
  unigrams and word bigrams (fastText's features).
* ``lines`` — the shape of every line (length bucket × how it ends) and of every pair
  of adjacent lines: a menu is a run of short lines without sentence punctuation in any script.
* ``layout [batch, LAYOUT_FEATURES]`` — document statistics in buckets: length, line count, mean
  line length, the share of lines ending in sentence punctuation or in none, sentence and clause
  punctuation per 100 units, digit and symbol shares; and word-order statistics that mean the same
  in every language (``_features.order_stats``): how much more often the text repeats its own
  bigrams and trigrams than a shuffle of its words does, its rate of repeated bigrams and of words
  repeated within a few words, the spread and mean of its sentence lengths, and in scripts with
  letter case the share of its sentences that start with a capital and of its other words that do.
  Shuffled words, n-gram chains, templates and filler move these in a language the model never saw.
  A model with an n-gram memory (``NgramMemory``: the words, pairs and triples of its training text)
  adds what the memory knows of the text: of its pairs of known words, the share that are known
  pairs; of its triples of known pairs, the share that are known triples; and the pair share over
  the share of its pairs of words one apart, which reads word order where the memory knows little
  of the text's subject (a news crawl against a memory of books).

Lengths are counted in script-neutral units (a CJK character counts 3, about one word of Latin
text), and CJK and full-width punctuation is mapped to ASCII, so ``lines`` and ``layout`` mean the
same thing in Chinese as in English: the model can carry over what it learned about the layout of
prose and of boilerplate to scripts it has little training text for.

The content bag is hashed in compiled code (``_features.pyx``), in one pass over the batch's code
points, and counted there (each id once per set bit of its count in its text, ``COUNT_BITS``); the
line shapes and the layout with numpy. There is no Python loop over n-grams, only one normalisation
call per text.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import NamedTuple, Optional, Sequence, Tuple

import numpy as np

from scoring_service.model import _features

_BOS, _EOS = "\x02", "\x03"  # text boundaries: n-grams like "\x02ho" or ".\x03" say how a text starts/ends
# Digits → 0 (dates, prices and counts share their n-grams); full-width and CJK punctuation → ASCII,
# so that n-grams such as ".\n" or ", " learned on one script carry over to CJK text.
_FOLDS = {
    **{chr(c): "0" for c in range(0x31, 0x3A)},
    **{chr(c): chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)},
    **{chr(c): "0" for c in range(0xFF10, 0xFF1A)},
    "\u3002": ".", "\u3001": ",", "\uff61": ".", "\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'",
    "\u300c": '"', "\u300d": '"', "\u300e": '"', "\u300f": '"', "\u300a": '"', "\u300b": '"',
    "\u3010": "[", "\u3011": "]", "\u2026": "...",
}
_TRANSLATE = str.maketrans(_FOLDS)
# With ``HashingSpec.script_words``, the sentence and clause marks of other scripts read as ASCII too,
# so that their lines end like sentences and their sentences are counted: Devanagari and Bengali
# danda, Arabic, Ethiopic, Armenian, Myanmar, Khmer and Tibetan marks.
_SCRIPT_MARKS = {
    "\u0964": ".", "\u0965": ".", "\u061f": "?", "\u06d4": ".", "\u060c": ",", "\u061b": ";",
    "\u1362": ".", "\u1363": ",", "\u1364": ";", "\u1367": "?", "\u0589": ".", "\u104b": ".", "\u104a": ",",
    "\u17d4": ".", "\u17d5": ".", "\u0f0d": ".", "\u0f0e": ".",
}
_TRANSLATE_SCRIPTS = str.maketrans({**_FOLDS, **_SCRIPT_MARKS})
# Every character that ends a sentence once folded (a full stop, question or exclamation mark of any
# script): what the negatives split sentences at.
SENTENCE_END_MARKS = ".!?" + "".join(sorted(c for c, ascii_mark in {**_FOLDS, **_SCRIPT_MARKS}.items()
                                           if ascii_mark in (".", "!", "?")))


def _codes(chars: str) -> np.ndarray:
    return np.array([ord(c) for c in chars], dtype=np.uint64)


_SENTENCE_END = _codes(".!?")
_CLAUSE_END = _codes(",;:-\u2013\u2014")
_CLOSERS = _codes("\"')]")
_SYMBOLS = _codes("|/\\#@*=+_~^<>[]{}&%$\u00bb\u00ab\u203a\u2039\u2022\u00b7\u00a9\u00ae\u2122\u2192\u25b6\u25ba")
# Each code point's classes for the layout, looked up once per code point of a batch instead of a set
# or range test per class over all of them: the low two bits hold the punctuation class (1 sentence end,
# 2 clause end, 3 symbol), _CJK marks the scripts written without spaces between words (Han, kana,
# hangul, CJK punctuation). Code points from 0x40000 up are in no class.
_CJK = 4
_CJK_RANGES = ((0x2E80, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0xFF00, 0xFFEF), (0x20000, 0x3FFFF))
_CHAR_CLASS = np.zeros(0x40001, dtype=np.uint8)
for _low, _high in _CJK_RANGES:
    _CHAR_CLASS[_low:_high + 1] = _CJK
for _class, _members in enumerate((_SENTENCE_END, _CLAUSE_END, _SYMBOLS), start=1):
    assert not (_CHAR_CLASS[_members] & 3).any()  # each mark in one class
    _CHAR_CLASS[_members] |= _class


def _char_class(cp: np.ndarray) -> np.ndarray:
    return _CHAR_CLASS[np.minimum(cp, len(_CHAR_CLASS) - 1)]


# Line shapes: 11 log2 length buckets × 3 endings; ids 1..33 for a line, then pairs of lines.
_LENGTH_BUCKETS, _ENDINGS = 11, 3
_SHAPES = _LENGTH_BUCKETS * _ENDINGS
_PAIR_BASE = 1 + _SHAPES
# Layout: (name, bucket edges); each feature's bucket is one token of the layout bag.
_LAYOUT_EDGES = (
    ("log2_units", None),
    ("log2_lines", None),
    ("log2_mean_line_units", None),
    ("sentence_end_line_share", (0.1, 0.3, 0.5, 0.7, 0.9)),
    ("bare_line_share", (0.1, 0.3, 0.5, 0.7, 0.9)),
    ("sentence_punct_per_100", (0.05, 0.2, 0.4, 0.7, 1.0, 1.5, 2.5, 4.0)),
    ("clause_punct_per_100", (0.1, 0.4, 0.8, 1.5, 2.5, 4.0, 7.0)),
    ("digit_share", (0.005, 0.02, 0.05, 0.1, 0.2, 0.4)),
    ("symbol_share", (0.002, 0.01, 0.03, 0.06, 0.12, 0.25)),
    # Word order (HashingSpec.order_stats). Association: log2 of (repeated n-grams + 1) in the text over
    # the same in its shuffle, so 0 where word order carries nothing.
    ("bigram_association", (-0.3, 0.1, 0.3, 0.5, 0.75, 1.0, 1.4, 1.8, 2.4, 3.0)),
    ("trigram_association", (-0.3, 0.1, 0.3, 0.5, 0.75, 1.0, 1.4, 1.8, 2.4, 3.0)),
    ("repeated_bigram_rate", (0.005, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.7)),
    ("window_repeat_rate", (0.01, 0.03, 0.06, 0.1, 0.15, 0.25, 0.4)),
    ("sentence_length_spread", (0.15, 0.3, 0.45, 0.6, 0.8, 1.0, 1.3)),
    ("log2_sentence_words", None),
    # Letter case (-1: no cased letter, bucket 0): sentences that start with a capital, other words that do.
    ("sentence_capital_share", (-0.5, 0.2, 0.4, 0.6, 0.75, 0.85, 0.95)),
    ("word_capital_share", (-0.5, 0.02, 0.05, 0.1, 0.2, 0.35, 0.6)),
    # The model's n-gram memory (HashingSpec.memory_log2_bits): of the text's word pairs whose words its
    # training text holds, the share it holds as pairs; of its triples whose two pairs it holds, the
    # share it holds whole; both at once in four bands each (_MEMORY_JOINT_EDGES), since a chain is the
    # two together: known pairs in unknown triples.
    ("memory_pair_share", (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)),
    ("memory_triple_share", (0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)),
    ("memory_joint", None),
    # log2 of the pair share over the share of pairs of words one apart (HashingSpec.memory_skip_pairs):
    # about 0 for shuffled words, above it where the order is a person's, whether the memory knows the
    # text's subject well (both shares high) or little (both low).
    ("memory_pair_over_skip_pair", (-0.5, -0.25, 0.0, 0.15, 0.3, 0.45, 0.6, 0.8, 1.0, 1.3, 1.7, 2.2)),
)
_ORDER_FEATURES = 8  # the entries of _LAYOUT_EDGES before the memory's
_MEMORY_FEATURES = 4  # the last entries of _LAYOUT_EDGES
_MEMORY_JOINT_EDGES = ((0.5, 0.8, 0.95), (0.6, 0.75, 0.9))  # pair share, triple share
LAYOUT_FEATURES = len(_LAYOUT_EDGES)
_MEMORY_FIRST = LAYOUT_FEATURES - _MEMORY_FEATURES
_ORDER_FIRST = _MEMORY_FIRST - _ORDER_FEATURES
_LAYOUT_BASE = _PAIR_BASE + _SHAPES * _SHAPES
_LAYOUT_SLOTS = 16  # buckets per layout feature
LAYOUT_VOCAB = _LAYOUT_BASE + LAYOUT_FEATURES * _LAYOUT_SLOTS


@dataclass(frozen=True)
class HashingSpec:
    """Feature parameters; saved with a model so that serving hashes exactly as training did."""

    buckets: int = 1 << 15
    char_ngrams: Tuple[int, ...] = (2, 3, 4)
    word_ngrams: int = 3
    # Only the head of a document is read: enough to tell prose from boilerplate and word salad from
    # prose, at a bounded cost.
    max_chars: int = 2000
    # Thai, Lao, Myanmar and Khmer characters are words by themselves, as CJK ones always are.
    spaceless_scripts: bool = True
    # With spaceless_scripts, such a word is a character cluster: a letter with its vowel signs and tone
    # marks (and a stacked letter, a letter after a Thai or Lao leading vowel), not a code point.
    spaceless_clusters: bool = True
    # Words and sentences in scripts beyond Latin and CJK: the marks of ``_SCRIPT_MARKS`` end sentences
    # and clauses; Tibetan and Ethiopic words end at the tsheg and the wordspace; a Yi syllable is a
    # word; a Hangul word runs to a space.
    script_words: bool = True
    # The layout bag's word-order statistics (else those columns are padding).
    order_stats: bool = True
    # The n-gram memory (``NgramMemory``) of 2**memory_log2_bits bits, and its file's sha256; 0: none,
    # its layout columns are padding.
    memory_log2_bits: int = 0
    memory_sha256: str = ""
    # With a memory: its last layout column, the pair share against pairs of words one apart.
    memory_skip_pairs: bool = True

    @classmethod
    def from_dict(cls, data: dict) -> "HashingSpec":
        # A model.json written before spaceless_scripts, spaceless_clusters, order_stats, script_words or
        # memory_skip_pairs hashes without them.
        return cls(**{"spaceless_scripts": False, "spaceless_clusters": False, "order_stats": False,
                      "script_words": False, "memory_skip_pairs": False, **data,
                      "char_ngrams": tuple(data["char_ngrams"])})

    @property
    def word_rules(self) -> int:
        """The word notion as the compiled features take it (``_features.pyx``: SPACELESS_CHARS | SCRIPT_WORDS
        | SPACELESS_CLUSTERS)."""
        return int(self.spaceless_scripts) | int(self.script_words) << 1 | int(self.spaceless_clusters) << 2

    def to_dict(self) -> dict:
        data = {**asdict(self), "char_ngrams": list(self.char_ngrams)}
        if not self.memory_log2_bits:  # a model without memory keeps the spec (and digest) it had
            del data["memory_log2_bits"], data["memory_sha256"], data["memory_skip_pairs"]
        elif not self.memory_skip_pairs:  # nor does one whose memory has no skip pairs
            del data["memory_skip_pairs"]
        return data

    @property
    def digest(self) -> str:
        """Names the spec: encoded texts carry it, so that a service never scores ids hashed another way."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]

    @property
    def max_content_ids(self) -> int:
        """Most content ids one text can have: each n-gram order has at most one per character of the
        normalised text (``max_chars`` and its two boundary marks)."""
        return (len(self.char_ngrams) + self.word_ngrams) * (self.max_chars + 2)

    @property
    def layout_vocab(self) -> int:
        """Rows of the layout bag's table: a model hashed without the memory, or without the word-order
        statistics and the memory, has none for them; one with a memory but no skip pairs, none for those."""
        if self.memory_log2_bits:
            return LAYOUT_VOCAB - (0 if self.memory_skip_pairs else _LAYOUT_SLOTS)
        return LAYOUT_VOCAB - (_MEMORY_FEATURES + (0 if self.order_stats else _ORDER_FEATURES)) * _LAYOUT_SLOTS

    @property
    def max_line_ids(self) -> int:
        """Most line ids one text can have: a line and a pair of lines per character at most."""
        return 2 * (self.max_chars + 2)


# Classes of the content bag's counts: an id counted c times in a text is listed once per set bit of c
# (``_features.counted_bag``), so the network gathers about half the embeddings a list of every
# occurrence takes (n-grams repeat within a text) and weighs each class by its power of two, which is
# exact. 16 covers every count a text of up to ~13,000 characters can have; a larger count goes whole
# to the top class.
COUNT_BITS = 16


class Encoded(NamedTuple):
    """A batch as the network takes it, all ``int32``: each variable-length bag as the ids of all
    texts one after another with, per id, the segment it is summed in; no padding, so the network's
    cost follows the ids, not the longest text. The lines bag's segment is the row (text); the content
    bag's is ``row * COUNT_BITS + k`` for an id that stands for 2**k of its occurrences in the text.
    ``layout [batch, LAYOUT_FEATURES]`` is a matrix (0 = padding) and gives the batch size."""

    content: np.ndarray
    content_segments: np.ndarray
    lines: np.ndarray
    lines_rows: np.ndarray
    layout: np.ndarray


class Bags(NamedTuple):
    """A batch's bags unpadded (what travels between executors and the service): the ids of all
    texts one after another and, per bag, the offset where each text's ids start (``batch + 1``
    offsets), plus the ``[batch, LAYOUT_FEATURES]`` layout matrix. The content bag is counted: each
    id has its count class beside it (``COUNT_BITS``)."""

    content: np.ndarray
    content_classes: np.ndarray
    content_offsets: np.ndarray
    lines: np.ndarray
    lines_offsets: np.ndarray
    layout: np.ndarray

    @property
    def rows(self) -> int:
        return len(self.layout)

    def line_counts(self) -> np.ndarray:
        return np.diff(self.lines_offsets)

    def encoded(self, rows: np.ndarray) -> Encoded:
        """The network's input for ``rows`` (indices, in that order)."""
        content, classes, content_rows = _gather_rows(self.content_offsets, rows, self.content, self.content_classes)
        lines, lines_rows = _gather_rows(self.lines_offsets, rows, self.lines)
        return Encoded(content.astype(np.int32, copy=False), content_rows * COUNT_BITS + classes,
                       lines.astype(np.int32, copy=False), lines_rows, self.layout[rows])

    def take(self, start: int, stop: int) -> "Bags":
        """Rows ``start:stop``."""
        c, l = self.content_offsets, self.lines_offsets
        return Bags(self.content[c[start]:c[stop]], self.content_classes[c[start]:c[stop]],
                    c[start:stop + 1] - c[start], self.lines[l[start]:l[stop]], l[start:stop + 1] - l[start],
                    self.layout[start:stop])

    @staticmethod
    def concat(parts: Sequence["Bags"]) -> "Bags":
        def joined_offsets(offsets):
            shifts = np.cumsum([0] + [o[-1] for o in offsets[:-1]])
            return np.concatenate([[0]] + [o[1:] + shift for o, shift in zip(offsets, shifts)]).astype(np.int64)

        return Bags(np.concatenate([p.content for p in parts]), np.concatenate([p.content_classes for p in parts]),
                    joined_offsets([p.content_offsets for p in parts]),
                    np.concatenate([p.lines for p in parts]), joined_offsets([p.lines_offsets for p in parts]),
                    np.concatenate([p.layout for p in parts]))


def collapse(text: str, max_chars: int) -> str:
    """Runs of spaces → one space, line break runs → one newline, at most ``max_chars`` characters.

    Reads at most ``2 * max_chars`` characters of the input (clients may truncate there).
    """
    lines = (" ".join(line.split()) for line in text[: max_chars * 2].split("\n"))
    return "\n".join(line for line in lines if line)[:max_chars]


def normalize(text: str, max_chars: int, script_words: bool = False) -> str:
    """Lower case, digits → 0, ASCII punctuation (``script_words``: other scripts' marks too), runs of
    spaces → one space, line break runs → one newline."""
    return _lowered(collapse(text, max_chars), script_words)


def _lowered(collapsed: str, script_words: bool) -> str:
    return collapsed.lower().translate(_TRANSLATE_SCRIPTS if script_words else _TRANSLATE)


# Letter case of each code point of the Basic Multilingual Plane (every cased script is there): 1 lower,
# 2 upper or title case, 0 neither. Sentences start with a capital in every script with case; a shuffle
# moves that capital inside the sentence.
_CASE = np.array([2 if chr(c).isupper() or chr(c).istitle() else 1 if chr(c).islower() else 0
                  for c in range(0x10000)], dtype=np.uint8)
_OPENERS = _codes("\"'([\u201c\u2018\u00ab\u00bf\u00a1")


def case_features(collapsed: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """Per text: the share of its sentences that start with a capital (of those that start with a
    cased letter), and the share of its other words that do; -1 where a text has none of them."""
    joined = "\n".join(collapsed)
    cp = np.frombuffer(joined.encode("utf-32-le", "replace"), dtype=np.uint32).astype(np.int64)
    doc = np.repeat(np.arange(len(collapsed)), [len(t) + 1 for t in collapsed])[:len(cp)]
    case = _CASE[np.minimum(cp, len(_CASE) - 1)] * (cp < len(_CASE))
    padded = np.concatenate(([10, 10, 10], cp))  # a line break before the text

    def at(positions):
        return padded[positions + 3]

    # A word starts after a space or line break, or after an opening quote or bracket there. Only the
    # cased letters are looked at.
    letter = np.flatnonzero(case)
    prev = at(letter - 1)
    prev_opener = np.isin(prev, _OPENERS)
    first = np.where(prev_opener, letter - 1, letter)  # the word's first mark
    blank_before = at(first - 1)
    starts = (prev == 32) | (prev == 10) | (prev_opener & ((blank_before == 32) | (blank_before == 10)))
    letter, first, blank_before = letter[starts], first[starts], blank_before[starts]
    # A sentence starts a line, or follows a sentence mark (and closing quotes or brackets) and a space.
    mark = at(first - 2)
    mark = np.where(np.isin(mark, _CLOSERS), at(first - 3), mark)
    sentence = (blank_before == 10) | ((blank_before == 32) & np.isin(mark, _SENTENCE_END))
    upper = case[letter] == 2
    word_doc = doc[letter]

    def share(mask):
        total = np.bincount(word_doc[mask], minlength=len(collapsed)).astype(np.float64)
        capital = np.bincount(word_doc[mask & upper], minlength=len(collapsed))
        return np.where(total > 0, capital / np.maximum(total, 1.0), -1.0)

    return share(sentence), share(~sentence)


def _gather_rows(offsets: np.ndarray, rows: np.ndarray, *columns: np.ndarray) -> Tuple[np.ndarray, ...]:
    """Each of ``columns`` (aligned, split into texts by ``offsets``) for ``rows`` one after another,
    then the position in ``rows`` each entry came from. A batch without entries gets one padding entry
    (0, counted by no row), since the graph takes no empty tensor."""
    lengths = np.diff(offsets)[rows]
    total = int(lengths.sum())
    if total == 0:
        return (*(np.zeros(1, dtype=column.dtype) for column in columns), np.zeros(1, dtype=np.int32))
    row_of = np.repeat(np.arange(len(rows), dtype=np.int32), lengths)
    first = rows[0]
    if rows[-1] - first + 1 == len(rows) and np.array_equal(rows, np.arange(first, first + len(rows))):
        # Consecutive rows (the scorer's sub-batches): their entries are one slice, no gather.
        taken = slice(offsets[first], offsets[first + len(rows)])
    else:
        within = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        taken = np.repeat(offsets[:-1][rows], lengths) + within
    return (*(column[taken] for column in columns), row_of)


def _flat(docs: np.ndarray, ids: np.ndarray, batch: int) -> Tuple[np.ndarray, np.ndarray]:
    """Ids grouped by text (in their order within each text) and the offsets where each text starts."""
    order = np.argsort(docs, kind="stable")
    offsets = np.concatenate(([0], np.cumsum(np.bincount(docs, minlength=batch)))).astype(np.int64)
    return ids[order].astype(np.int32), offsets


class NgramMemory:
    """The words, word bigrams and trigrams of a model's training text, as a set of bits addressed by their
    hashes (a Bloom filter with one hash; ``_features.memory_add``). An n-gram it never held reads as
    held with the probability ``fill``.

    What it is for: a word-pair chain fitted on text of a language is made of pairs a person wrote, so
    a bag of words and pairs, or a perplexity of pairs, finds nothing wrong with it; its triples are
    what betray it, and only against text that holds its pairs (``_features.memory_stats``)."""

    MAX_LOG2_BITS = 33  # 1 GiB

    def __init__(self, bits: np.ndarray):
        words = len(bits)
        if bits.dtype != np.uint64 or bits.ndim != 1 or words < 1 or words & (words - 1):
            raise ValueError("an n-gram memory is a power of two of 64-bit words")
        self.bits = bits

    @classmethod
    def empty(cls, log2_bits: int) -> "NgramMemory":
        return cls(np.zeros(cls.bytes_of(log2_bits) // 8, dtype=np.uint64))

    @classmethod
    def bytes_of(cls, log2_bits: int) -> int:
        if not 6 <= log2_bits <= cls.MAX_LOG2_BITS:
            raise ValueError(f"memory bits: 2**6 to 2**{cls.MAX_LOG2_BITS}, not 2**{log2_bits}")
        return 1 << (log2_bits - 3)

    @property
    def log2_bits(self) -> int:
        return int(len(self.bits)).bit_length() - 1 + 6

    def add(self, texts: Sequence[str], spec: HashingSpec) -> None:
        cp, lengths, _ = _code_points(texts, spec)
        _features.memory_add(cp, lengths, self.bits, spec.word_rules)

    def __or__(self, other: "NgramMemory") -> "NgramMemory":
        return NgramMemory(self.bits | other.bits)

    def fill(self) -> float:
        """The share of bits set."""
        return float(np.unpackbits(self.bits.view(np.uint8)).mean())

    @property
    def sha256(self) -> str:
        """Of the file's bytes (``to_bytes``), whatever the machine's byte order."""
        return hashlib.sha256(self.to_bytes()).hexdigest()

    def to_bytes(self) -> bytes:
        return self.bits.astype("<u8", copy=False).tobytes()

    @classmethod
    def from_bytes(cls, data: bytes, spec: HashingSpec) -> "NgramMemory":
        """The memory ``spec`` names, checked: its size, then its sha256."""
        expected = cls.bytes_of(spec.memory_log2_bits)
        if len(data) != expected:
            raise ValueError(f"n-gram memory: {len(data)} bytes, the model's spec says {expected}")
        memory = cls(np.frombuffer(data, dtype="<u8").astype(np.uint64))
        if memory.sha256 != spec.memory_sha256:
            raise ValueError("n-gram memory: its sha256 is not the one the model's spec names")
        return memory


def _code_points(texts: Sequence[str], spec: HashingSpec) -> Tuple[np.ndarray, np.ndarray, list]:
    """The normalised texts' code points one after another, their lengths, and the collapsed texts."""
    collapsed = [collapse(t or "", spec.max_chars) for t in texts]
    normed = [_BOS + _lowered(t, spec.script_words) + _EOS for t in collapsed]
    cp = np.frombuffer("".join(normed).encode("utf-32-le", "replace"), dtype=np.uint32).astype(np.uint64)
    lengths = np.fromiter((len(t) for t in normed), dtype=np.int64, count=len(normed))
    return cp, lengths, collapsed


class FeatureHasher:
    """Texts → ``Encoded`` bags. Stateless; a spec with a memory needs that memory (``NgramMemory``)."""

    def __init__(self, spec: HashingSpec, memory: Optional[NgramMemory] = None):
        if bool(spec.memory_log2_bits) != (memory is not None) or (
                memory is not None and memory.log2_bits != spec.memory_log2_bits):
            raise ValueError(f"the hashing spec says memory_log2_bits={spec.memory_log2_bits}; "
                             f"the memory given has {memory.log2_bits if memory is not None else 'none'}")
        self.spec, self.memory = spec, memory
        self._char_orders = np.array(spec.char_ngrams, dtype=np.int64)

    def encode(self, texts: Sequence[str]) -> Encoded:
        """A batch as the network takes it."""
        return self.encode_bags(texts).encoded(np.arange(len(texts)))

    def encode_bags(self, texts: Sequence[str]) -> Bags:
        """The unpadded bags of a batch (what clients send the service)."""
        spec = self.spec
        cp, lengths, collapsed = _code_points(texts, spec)
        content = _features.counted_bag(*_features.content_bags(cp, lengths, self._char_orders, spec.word_ngrams,
                                                                spec.buckets, spec.word_rules), COUNT_BITS)
        line_doc, line_ids, layout = self._layout(cp, np.repeat(np.arange(len(texts)), lengths), len(texts))
        if spec.order_stats:
            order = order_features(_features.order_stats(cp, lengths, spec.word_rules)) + case_features(collapsed)
            layout[:, _ORDER_FIRST:_MEMORY_FIRST] = _layout_ids(order, _ORDER_FIRST)
        if self.memory is not None:
            values = memory_features(_features.memory_stats(cp, lengths, self.memory.bits, spec.word_rules))
            values = values if spec.memory_skip_pairs else values[:-1]
            layout[:, _MEMORY_FIRST:_MEMORY_FIRST + len(values)] = _layout_ids(values, _MEMORY_FIRST)
        return Bags(*content, *_flat(line_doc, line_ids, len(texts)), layout)

    # -- internals

    @staticmethod
    def _layout(cp: np.ndarray, doc: np.ndarray, batch: int):
        """Line-shape tokens (flat ``doc``, ``id``) and the ``[batch, LAYOUT_FEATURES]`` layout ids."""
        classes = _char_class(cp)
        weight = np.where(classes & _CJK, 3, 1)
        marker = (cp == 10) | (cp == 2) | (cp == 3)
        units = np.concatenate(([0], np.cumsum(np.where(marker, 0, weight))))

        sep = np.flatnonzero(marker)
        opens = cp[sep[:-1]] != 3  # a line runs from a BOS or newline to the next marker
        start, end = sep[:-1][opens] + 1, sep[1:][opens]
        length = units[end] - units[start]
        keep = length > 0
        start, end, length = start[keep], end[keep], length[keep]
        last = cp[end - 1]
        last = np.where(np.isin(last, _CLOSERS) & (end - 2 >= start), cp[np.maximum(end - 2, start)], last)
        ending = np.where(np.isin(last, _SENTENCE_END), 0, np.where(np.isin(last, _CLAUSE_END), 1, 2))
        shape = np.minimum(np.log2(length).astype(np.int64), _LENGTH_BUCKETS - 1) * _ENDINGS + ending
        line_doc = doc[start]
        same = line_doc[1:] == line_doc[:-1]
        pair = _PAIR_BASE + shape[:-1][same] * _SHAPES + shape[1:][same]
        lines_doc = np.concatenate((line_doc, line_doc[1:][same]))
        lines_ids = np.concatenate((1 + shape, pair)).astype(np.int32)

        def per_doc(values_doc, weights=None):
            return np.bincount(values_doc, weights=weights, minlength=batch).astype(np.float64)

        punctuation = classes & 3
        # The units of each text: differences of the running count at the texts' starts (doc is sorted).
        total_units = np.diff(units[np.searchsorted(doc, np.arange(batch + 1))]).astype(np.float64)
        n_lines = per_doc(line_doc)
        per_100 = 100.0 / np.maximum(total_units, 1.0)
        safe_lines = np.maximum(n_lines, 1.0)
        values = (
            np.log2(np.maximum(total_units, 1.0)),
            np.log2(np.maximum(n_lines, 1.0)),
            np.log2(np.maximum(total_units / safe_lines, 1.0)),
            per_doc(line_doc, ending == 0) / safe_lines,
            per_doc(line_doc, ending == 2) / safe_lines,
            per_doc(doc[punctuation == 1]) * per_100,
            per_doc(doc[punctuation == 2]) * per_100,
            per_doc(doc[cp == 0x30]) * per_100 / 100.0,
            per_doc(doc[punctuation == 3]) * per_100 / 100.0,
        )
        layout = np.zeros((batch, LAYOUT_FEATURES), dtype=np.int32)  # 0: padding, for the order columns
        layout[:, :len(values)] = _layout_ids(values, 0)
        return lines_doc, lines_ids, layout


def order_features(stats: np.ndarray) -> Tuple[np.ndarray, ...]:
    """The word-order layout values (the last ``_ORDER_FEATURES`` of ``_LAYOUT_EDGES``) from
    ``_features.order_stats`` rows."""
    words, bigrams, bigrams_shuffled, trigrams, trigrams_shuffled, window, sentences, squares = stats.T
    pairs = np.maximum(words - 1.0, 1.0)
    sentences = np.maximum(sentences, 1.0)
    mean_length = words / sentences
    spread = np.sqrt(np.maximum(squares / sentences - mean_length ** 2, 0.0)) / np.maximum(mean_length, 1.0)
    return (np.log2((bigrams + 1.0) / (bigrams_shuffled + 1.0)),
            np.log2((trigrams + 1.0) / (trigrams_shuffled + 1.0)),
            bigrams / pairs, window / pairs, spread, np.log2(np.maximum(mean_length, 1.0)))


def memory_features(stats: np.ndarray) -> Tuple[np.ndarray, ...]:
    """The memory's layout values (the last ``_MEMORY_FEATURES`` of ``_LAYOUT_EDGES``) from
    ``_features.memory_stats`` rows; shares of few n-grams are drawn towards one half."""
    pairs, known_pairs, triples, known_triples, skip_pairs, known_skip_pairs = stats.T
    pair_share = (known_pairs + 1.0) / (pairs + 2.0)
    triple_share = (known_triples + 1.0) / (triples + 2.0)
    joint = (np.searchsorted(_MEMORY_JOINT_EDGES[0], pair_share, side="right") * 4
             + np.searchsorted(_MEMORY_JOINT_EDGES[1], triple_share, side="right"))
    skip_share = (known_skip_pairs + 1.0) / (skip_pairs + 2.0)
    return pair_share, triple_share, joint.astype(np.float64), np.log2(pair_share / skip_share)


def _layout_ids(values: Sequence[np.ndarray], first: int) -> np.ndarray:
    """Layout ids ``[batch, len(values)]`` of the features ``first``, ``first + 1``, … of ``_LAYOUT_EDGES``."""
    ids = np.empty((len(values[0]), len(values)), dtype=np.int32)
    for j, value in enumerate(values):
        k = first + j
        edges = _LAYOUT_EDGES[k][1]
        bucket = np.maximum(value, 0).astype(np.int64) if edges is None else np.searchsorted(edges, value, side="right")
        ids[:, j] = _LAYOUT_BASE + k * _LAYOUT_SLOTS + np.minimum(bucket, _LAYOUT_SLOTS - 1)
    return ids
