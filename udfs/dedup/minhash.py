"""Per-record logic of the dedup stage: normalisation, shingles, MinHash signatures, LSH banding.

Everything here works on plain Python strings and numpy arrays (no Spark), over a batch of documents
at a time: a batch's text is turned into one array of code points, whose tokens and n-gram shingles
are hashed (a splitmix64 finaliser, 64-bit) in compiled code (``_minhash.pyx``), as are the MinHash
permutations ``(a·h + b) mod p``, all of them in one pass over the shingles. No Python loop runs per
token or per shingle.

Shingles are word n-grams for space-delimited scripts and character n-grams for scripts written
without spaces (Chinese, Japanese, Thai…). A document at least half written in such scripts is
shingled by characters (``cjk_ngram``, 3), spaces ignored; any other by words
(``word_ngram``, 5), where a character of an unsegmented script still counts as a word of its own, so
a Chinese name inside English text does not glue its neighbours into one token. A document shorter
than n tokens is one shingle.
"""
from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import xxhash

from corpusmill.config import ConfigError, defaults_from_yaml
from udfs.common.scripts import UNSEGMENTED_RANGES
from udfs.common.worker import worker_resource

try:
    from udfs.dedup import _minhash
except ImportError as exc:  # a checkout that pip has not built, or a shipped udfs/ without the .so
    raise ImportError("corpusmill's compiled MinHash (udfs/dedup/_minhash.pyx) is not built: "
                      "install the project with pip (pip install -e .)") from exc

VERIFY_MODES = ("jaccard", "signature", "none")


@dataclass(frozen=True)
@defaults_from_yaml("dedup")
class DedupConfig:
    # Exact pass: one survivor per group of identical normalised texts.
    exact: bool
    # Fuzzy pass: MinHash LSH candidates, verified, merged by connected components.
    fuzzy: bool
    # Documents whose shingle sets have Jaccard similarity >= threshold are duplicates.
    threshold: float
    word_ngram: int
    cjk_ngram: int
    # A document is shingled by characters when at least this fraction of its non-space
    # characters belong to a script written without spaces (CJK, Thai…).
    cjk_char_ratio: float
    lowercase: bool
    # Off by default: punctuation and digits are part of the words the threshold is defined on
    # (stripping them merges templated pages that differ only in numbers).
    strip_punctuation: bool
    fold_digits: bool
    num_perm: int
    # Bands b and rows per band r; 0 derives them from threshold and the weights below by minimising
    # fp_weight * (false-positive area) + fn_weight * (false-negative area) of 1 - (1 - s^r)^b.
    # Candidates are verified, so a false positive costs one comparison while a false negative is a
    # duplicate kept: the default weights buy recall at the threshold (b=18, r=7: P(0.8) = 0.986;
    # equal weights give b=9, r=13 with P(0.8) = 0.40).
    bands: int
    rows: int
    fp_weight: float
    fn_weight: float
    seed: int
    # How a candidate pair becomes an edge: exact Jaccard of the shingle sets ("jaccard"), the
    # signature estimate ("signature"), or every candidate ("none").
    verify: str
    # A join key (exact-hash group, LSH bucket, candidate fan-in, cluster) with more rows than this
    # is spread over ceil(rows / cap) tasks.
    hot_key_cap: int
    # A table of at most this many rows that is joined to the documents (the ids the candidate pairs
    # name, the decisions) is sent to every task instead of shuffling the documents to it, and
    # verified pairs up to this many are clustered on the driver; 0 = never.
    broadcast_rows: int
    # Connected components: large-star/small-star rounds before giving up.
    max_rounds: int
    # Where component rounds are checkpointed to cut lineage; empty = Spark local checkpoints.
    checkpoint_dir: str
    # Survivor rule: columns to order a cluster by (prefix "-" for descending, numeric columns);
    # the lowest id breaks ties, so [] keeps the lowest id.
    survivor_order: List[str]
    # Earlier runs to deduplicate against (run folders, their dedup folders or dedup/_index/
    # folders): a document duplicating one they kept is dropped. [] = this run on its own (per-crawl
    # dedup). Indexes do not chain: list every earlier run, not just the latest.
    against: List[str]

    def validate(self, prefix: str) -> None:
        def fail(key, why):
            raise ConfigError(f"{prefix}.{key}: {why}")
        if not 0.0 < self.threshold <= 1.0:
            fail("threshold", f"must be in (0, 1], got {self.threshold}")
        for key in ("word_ngram", "cjk_ngram", "num_perm", "hot_key_cap", "max_rounds"):
            if getattr(self, key) < 1:
                fail(key, f"must be >= 1, got {getattr(self, key)}")
        if self.broadcast_rows < 0:
            fail("broadcast_rows", f"must be >= 0, got {self.broadcast_rows}")
        if not 0.0 <= self.cjk_char_ratio <= 1.0:
            fail("cjk_char_ratio", f"must be in [0, 1], got {self.cjk_char_ratio}")
        if (self.bands == 0) != (self.rows == 0):
            fail("bands", "set both bands and rows, or neither (derived from threshold)")
        if self.bands < 0 or self.rows < 0 or self.bands * self.rows > self.num_perm:
            fail("bands", f"bands * rows must be <= num_perm ({self.num_perm})")
        if self.fp_weight < 0 or self.fn_weight < 0 or self.fp_weight + self.fn_weight == 0:
            fail("fp_weight", "weights must be >= 0 and not both 0")
        if self.verify not in VERIFY_MODES:
            fail("verify", f"must be one of {', '.join(VERIFY_MODES)}, got {self.verify!r}")
        for column in self.survivor_order:
            if not column.lstrip("-"):
                fail("survivor_order", "empty column name")
        if any(not path.strip() for path in self.against) or len(set(self.against)) < len(self.against):
            fail("against", "paths must be non-empty and listed once")

    def banding(self) -> Tuple[int, int]:
        if self.bands:
            return self.bands, self.rows
        return choose_bands(self.threshold, self.num_perm, self.fp_weight, self.fn_weight)

    def index_settings(self) -> Dict[str, Any]:
        """What a signature index's exact hashes and band keys depend on (bands and rows resolved)."""
        bands, rows = self.banding()
        settings = {key: getattr(self, key) for key in _NORMALISATION + _MINHASH if key not in ("bands", "rows")}
        return {**settings, "bands": bands, "rows": rows}

    def index_mismatch(self, built: Dict[str, Any]) -> Optional[str]:
        """The first setting an index built with ``built`` disagrees with, as ``key=theirs (this run:
        ours)``; None when its keys can be compared with this run's. Normalisation decides the exact
        hash, so it must always agree; the MinHash settings only when this run is fuzzy."""
        ours = self.index_settings()
        keys = _NORMALISATION + (_MINHASH if self.fuzzy else ())
        for key in keys:
            if built.get(key) != ours[key]:
                return f"{key}={built.get(key)!r} (this run: {ours[key]!r})"
        return None


# Settings that change the exact hash, and those that change signatures and band keys.
_NORMALISATION = ("lowercase", "strip_punctuation", "fold_digits")
_MINHASH = ("fuzzy", "word_ngram", "cjk_ngram", "cjk_char_ratio", "num_perm", "seed", "bands", "rows")


# ---------------------------------------------------------------- normalisation

def normalize(text: str, cfg: DedupConfig) -> str:
    """NFKC, optional lowercase / punctuation strip / digit folding, single spaces (the last three in
    one compiled pass, ``_minhash.fold_text``)."""
    text = unicodedata.normalize("NFKC", text or "")
    if cfg.lowercase:
        text = text.lower()
    return _minhash.fold_text(text, cfg.strip_punctuation, cfg.fold_digits)


def exact_hash(text: str, cfg: DedupConfig) -> str:
    """128-bit hash (hex) of the normalised text: the exact-duplicate key."""
    return _text_key(normalize(text, cfg))


def _text_key(normalised: str) -> str:
    return xxhash.xxh3_128_hexdigest(normalised.encode("utf-8"))


# ---------------------------------------------------------------- hashing helpers

_U = np.uint64
_SALTS = np.array([0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0xD6E8FEB86659FD93,
                   0xA0761D6478BD642F, 0xE7037ED1A0B428DB, 0x8EBC6AF09C88C6E3, 0x589965CC75374CC3,
                   0x1D8E4E27C47D124F, 0x72BE5D74F27B896F, 0xC13FA9A902A6328F, 0x2545F4914F6CDD1D,
                   0x61C8864680B583EB, 0x4F1BBCDCBFA53E0B, 0x9FB21C651E98DF25, 0x3C6EF372FE94F82B],
                  dtype=np.uint64)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: a bijective 64-bit mixer (wrapping uint64 arithmetic)."""
    x = x ^ (x >> _U(30))
    x = x * _U(0xBF58476D1CE4E5B9)
    x = x ^ (x >> _U(27))
    x = x * _U(0x94D049BB133111EB)
    return x ^ (x >> _U(31))


def _salt(i: int) -> np.uint64:
    return _SALTS[i % len(_SALTS)] + _U(i // len(_SALTS))


_UNSEG_EDGES = np.array([edge for lo, hi in UNSEGMENTED_RANGES for edge in (lo, hi + 1)], dtype=np.uint32)


@dataclass
class Shingles:
    """Shingle hashes of a batch: ``hashes[offsets[i]:offsets[i + 1]]`` belong to document i."""
    hashes: np.ndarray   # uint64
    offsets: np.ndarray  # int64, len = documents + 1

    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)


def shingles(texts: Sequence[str], cfg: DedupConfig) -> Shingles:
    """Hash the shingles of every text (normalised first), vectorised over the whole batch."""
    return _shingles_of_normalised([normalize(t, cfg) for t in texts], cfg)


def _shingles_of_normalised(norm: List[str], cfg: DedupConfig) -> Shingles:
    lengths = np.fromiter((len(t) for t in norm), dtype=np.int64, count=len(norm))
    # One space between documents: no token crosses a document boundary.
    cps = np.frombuffer(" ".join(norm).encode("utf-32-le"), dtype=np.uint32)
    hashes, offsets = _minhash.shingle_hashes(cps, lengths, _UNSEG_EDGES, _ngram_salts(cfg), cfg.word_ngram,
                                              cfg.cjk_ngram, cfg.cjk_char_ratio)
    return Shingles(hashes, offsets)


def _ngram_salts(cfg: DedupConfig) -> np.ndarray:
    return np.array([_salt(i) for i in range(max(cfg.word_ngram, cfg.cjk_ngram))], dtype=np.uint64)


# ---------------------------------------------------------------- MinHash

# Largest prime below 2^32: with a, b, h < p the product a·h + b stays below 2^64, so
# (a·h + b) mod p is computed exactly in uint64 (no silent 128-bit overflow).
PRIME = np.uint64(4294967291)
EMPTY = np.uint64(PRIME)  # signature value of a document without shingles (above every real value)


@dataclass(frozen=True)
class Permutations:
    a: np.ndarray
    b: np.ndarray

    @classmethod
    def make(cls, num_perm: int, seed: int) -> "Permutations":
        rng = np.random.default_rng(seed)
        return cls(rng.integers(1, int(PRIME), size=num_perm, dtype=np.uint64),
                   rng.integers(0, int(PRIME), size=num_perm, dtype=np.uint64))


def minhash(sh: Shingles, perms: Permutations) -> np.ndarray:
    """MinHash signatures, shape (documents, num_perm), uint32 values (EMPTY for no shingles)."""
    sig = np.full((len(sh.offsets) - 1, len(perms.a)), EMPTY, dtype=np.uint32)
    _minhash.minhash_into(np.ascontiguousarray(sh.hashes, dtype=np.uint64),
                          np.ascontiguousarray(sh.offsets, dtype=np.int64),
                          perms.a.astype(np.uint32), perms.b.astype(np.uint32), sig)
    return sig


def band_hashes(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """One 64-bit hash per (document, band) of the band's r signature values, shape (docs, bands)."""
    out = np.empty((len(sig), bands), dtype=np.uint64)
    values = sig.astype(np.uint64)
    for band in range(bands):
        acc = np.zeros(len(sig), dtype=np.uint64)
        for i in range(rows):
            acc += _mix(values[:, band * rows + i] ^ _salt(i))
        out[:, band] = _mix(acc ^ _salt(rows + band))
    return out.view(np.int64)


def estimated_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> np.ndarray:
    """Fraction of equal signature positions: an unbiased estimate of the Jaccard similarity."""
    return (sig_a == sig_b).mean(axis=1)


def jaccard(a: Shingles, b: Shingles) -> np.ndarray:
    """Exact Jaccard similarity of the shingle sets of pairs (a_i, b_i), vectorised over pairs."""
    n_pairs = len(a.offsets) - 1
    pa, ha = _unique_pairs(a)
    pb, hb = _unique_pairs(b)
    size_a = np.bincount(pa, minlength=n_pairs)
    size_b = np.bincount(pb, minlength=n_pairs)
    pair = np.concatenate([pa, pb])
    h = np.concatenate([ha, hb])
    order = np.lexsort((h, pair))
    pair, h = pair[order], h[order]
    both = (pair[1:] == pair[:-1]) & (h[1:] == h[:-1])
    inter = np.bincount(pair[1:][both], minlength=n_pairs)
    union = size_a + size_b - inter
    return np.where(union > 0, inter / np.maximum(union, 1), 0.0)


def _unique_pairs(sh: Shingles) -> Tuple[np.ndarray, np.ndarray]:
    pair = np.repeat(np.arange(len(sh.offsets) - 1), sh.counts())
    order = np.lexsort((sh.hashes, pair))
    pair, h = pair[order], sh.hashes[order]
    keep = np.concatenate([[True], (pair[1:] != pair[:-1]) | (h[1:] != h[:-1])]) if len(h) else h.astype(bool)
    return pair[keep], h[keep]


# ---------------------------------------------------------------- banding

def s_curve(s, bands: int, rows: int):
    """Probability that a pair with Jaccard s shares at least one band: 1 - (1 - s^r)^b."""
    return 1.0 - (1.0 - np.asarray(s, dtype=float) ** rows) ** bands


@functools.lru_cache(maxsize=None)
def choose_bands(threshold: float, num_perm: int, fp_weight: float, fn_weight: float) -> Tuple[int, int]:
    """The (b, r) with b·r <= num_perm minimising the weighted false-positive area (below the
    threshold) plus false-negative area (above it) of the S-curve; ties go to fewer hashes."""
    grid = np.linspace(0.0, 1.0, 2001)
    below, above = grid <= threshold, grid >= threshold
    best = None
    for rows in range(1, num_perm + 1):
        for bands in range(1, num_perm // rows + 1):
            p = s_curve(grid, bands, rows)
            fp = np.trapezoid(p[below], grid[below])
            fn = np.trapezoid(1.0 - p[above], grid[above])
            cost = (round(fp_weight * fp + fn_weight * fn, 12), bands * rows)
            if best is None or cost < best[0]:
                best = (cost, bands, rows)
    return best[1], best[2]


def describe_bands(bands: int, rows: int, points=(0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)) -> str:
    curve = ", ".join(f"P({s:g})={float(s_curve(s, bands, rows)):.3f}" for s in points)
    return f"LSH bands b={bands} rows r={rows} ({bands * rows} hashes): {curve}"


# ---------------------------------------------------------------- batch entry point

def permutations(cfg: DedupConfig) -> Permutations:
    """Built once per Python worker and configuration."""
    return worker_resource("dedup.permutations", (cfg.num_perm, cfg.seed),
                           lambda: Permutations.make(cfg.num_perm, cfg.seed))


@dataclass
class SignatureBatch:
    exact_hashes: List[str]
    signatures: np.ndarray   # (docs, num_perm) uint32
    bands: np.ndarray        # (docs, b) int64
    shingle_counts: np.ndarray


def signature_batch(texts: Sequence[str], cfg: DedupConfig, max_chars: int = 1 << 22) -> SignatureBatch:
    """Exact hash, MinHash signature and band hashes of each text; works in slices of about
    ``max_chars`` characters so memory per batch stays bounded."""
    bands, rows = cfg.banding()
    perms = permutations(cfg)
    norm = [normalize(t, cfg) for t in texts]
    sigs, counts = [], []
    start, size = 0, 0
    for i, text in enumerate(norm):
        size += len(text)
        if size >= max_chars or i == len(norm) - 1:
            sh = _shingles_of_normalised(norm[start:i + 1], cfg)
            sigs.append(minhash(sh, perms))
            counts.append(sh.counts())
            start, size = i + 1, 0
    sig = np.concatenate(sigs) if sigs else np.zeros((0, cfg.num_perm), np.uint32)
    return SignatureBatch(
        exact_hashes=[_text_key(t) for t in norm],
        signatures=sig,
        bands=band_hashes(sig, bands, rows),
        shingle_counts=np.concatenate(counts) if counts else np.zeros(0, np.int64),
    )
