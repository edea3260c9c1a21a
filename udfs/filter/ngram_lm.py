"""Smoothed n-gram language models at run time: the shared tokenizer, the ARPA file format and fast
batch scoring.

The perplexity signal (CCNet, RefinedWeb) scores text with a small language model trained
on reference prose: text unlike it (spam, keyword lists, machine-made text) gets a high perplexity.

* ``tokenize``: one tokenizer for every language, used for training and scoring alike — NFKC,
  lowercase, each CJK character a token, other letter runs a word, each digit run ``0``, each
  punctuation mark a token. ``tokenize_reference`` defines it by a regular expression; ``tokenize``
  gives the same tokens from compiled code (``udfs/filter/_ngram_lm.pyx``).
* ``write_arpa`` / ``read_arpa``: the standard ARPA text format (gzipped when the name ends .gz),
  readable by KenLM, SRILM and others.
* ``NgramModel``: each order's n-grams hashed to uint64 keys; ``token_scores_reference`` scores many
  token sequences at once with numpy (sorted keys, ``searchsorted``; backoff as in any ARPA reader),
  ``token_scores`` the same values to the bit from compiled hash tables, several times faster
  (``bench/speed/perplexity_bench.py`` times them).
  ``KenLMModel`` answers the same queries through KenLM when it is installed.

Models are estimated offline by ``tools.ngram_lm_train`` (interpolated modified Kneser-Ney), which
this module never imports: ``python -m tools.ngram_lm_train train --lang en --input FILE...
--out udfs/filter/lm_models/en.arpa.gz``.
"""
from __future__ import annotations

import gzip
import itertools
import os
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, NamedTuple, Sequence, Tuple

import numpy as np

from udfs.common.table_cache import cached_arrays, file_digest

try:
    from udfs.filter import _ngram_lm
except ImportError as exc:  # a checkout pip has not built, or a shipped udfs/ without the .so
    raise ImportError("corpusmill's compiled n-gram scorer (udfs/filter/_ngram_lm.pyx) is not built: "
                      "`pip install -e .` in the clone compiles it, as for udfs/filter/quality.py") from exc

BOS, EOS, UNK = "<s>", "</s>", "<unk>"
TOKENIZER = "corpusmill-v1: NFKC, lowercase, CJK characters, letter runs, digit runs -> 0, punctuation marks"
# Scripts written without spaces: each character is a token (a segmenter would be a second model to ship).
_CJK_RANGES = ((0x2E80, 0x2FDF), (0x3040, 0x30FF), (0x3100, 0x312F), (0x31A0, 0x31FF), (0x3400, 0x4DBF),
               (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FFFF))
_CJK = "".join(f"{chr(first)}-{chr(last)}" for first, last in _CJK_RANGES)
_TOKEN = re.compile(rf"[{_CJK}]|[^\W\d_{_CJK}]+|\d+|[^\w\s]")
_TOKENIZER = _ngram_lm.Tokenizer(_CJK_RANGES)


class DocumentSums(NamedTuple):
    """Per document, over its counted predictions (words and line ends; punctuation marks too where
    they count): the sum of their log10 probabilities and how many; and, of those in the model's
    vocabulary, the sum of each one's log10 probability less its unigram's, and how many."""

    totals: np.ndarray
    counts: np.ndarray
    order_gains: np.ndarray
    known: np.ndarray


def _normalized(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def tokenize_reference(text: str) -> List[str]:
    """Tokens of one paragraph (see the module docstring): the definition, by regular expression,
    that the compiled ``tokenize`` reproduces."""
    return ["0" if t[0].isdigit() else t for t in _TOKEN.findall(_normalized(text))]


def tokenize(text: str) -> List[str]:
    """Tokens of one paragraph (see the module docstring); the same for training and scoring."""
    return _TOKENIZER.tokens(_normalized(text))


def tokenize_all(paragraphs: Iterable[str]) -> List[List[str]]:
    """Tokens of each paragraph that has any (the sentences a model is trained on or scores)."""
    return [tokens for tokens in map(tokenize, paragraphs) if tokens]


def tokenize_lines(text: str) -> List[List[str]]:
    """``tokenize_all(text.split("\n"))`` in one pass: normalising and lowercasing never join or
    split lines (a line feed neither composes nor is cased), so the whole text is normalised once."""
    return _TOKENIZER.line_tokens(_normalized(text))


def word_mask(token_lists: Sequence[List[str]]) -> np.ndarray:
    """Per token of the lists, then per list end (as ``token_scores`` returns them): whether it is a
    word or an end, not a punctuation mark."""
    return _ngram_lm.word_mask(token_lists)


# ---------------------------------------------------------------- models

@dataclass
class Estimate:
    """A backoff n-gram model, as estimated or read from an ARPA file: per order, n-gram (tuple of
    words) -> (log10 prob, log10 backoff); ``discounts`` are known only after estimation."""
    order: int
    ngrams: List[Dict[Tuple[str, ...], Tuple[float, float]]]
    discounts: List[List[float]] = field(default_factory=list)

    def counts(self) -> List[int]:
        return [len(table) for table in self.ngrams]


# ---------------------------------------------------------------- ARPA files

def _open(path: str, mode: str):
    return gzip.open(path, mode + "t", encoding="utf-8") if path.endswith(".gz") else open(path, mode, encoding="utf-8")


def write_arpa(model: Estimate, path: str) -> None:
    """Write the standard ARPA format (gzipped when ``path`` ends with .gz)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with _open(path, "w") as fh:
        fh.write("\\data\\\n")
        for n, count in enumerate(model.counts(), 1):
            fh.write(f"ngram {n}={count}\n")
        for n, table in enumerate(model.ngrams, 1):
            fh.write(f"\n\\{n}-grams:\n")
            for g, (logp, bow) in sorted(table.items()):
                words = " ".join(g)
                fh.write(f"{logp:.6g}\t{words}\t{bow:.6g}\n" if n < model.order and bow != 0.0
                         else f"{logp:.6g}\t{words}\n")
        fh.write("\n\\end\\\n")


def read_arpa(path: str) -> Estimate:
    """Read an ARPA file into an ``Estimate`` (missing backoffs are 0, as the format says)."""
    tables: List[Dict[tuple, Tuple[float, float]]] = []
    declared: List[int] = []
    section = None
    with _open(path, "r") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            if line.startswith("ngram ") and section is None:
                declared.append(int(line.split("=", 1)[1]))
            elif line.startswith("\\") and line.endswith("-grams:"):
                section = int(line[1:line.index("-")])
                tables.append({})
            elif line == "\\end\\":
                break
            elif section is not None:
                parts = line.split("\t")
                if len(parts) == 1:  # some writers separate with spaces only
                    fields = line.split()
                    parts = [fields[0], " ".join(fields[1:1 + section])] + fields[1 + section:]
                tables[-1][tuple(parts[1].split(" "))] = (float(parts[0]), float(parts[2]) if len(parts) > 2 else 0.0)
    if not tables or [len(t) for t in tables] != declared:
        raise ValueError(f"{path}: ARPA header declares {declared} n-grams, body has {[len(t) for t in tables]}")
    return Estimate(len(tables), tables)


_ARPA_SECTION = re.compile(r"^\\(\d+)-grams:[ \t]*$", re.M)
_EDGE_SPACE = re.compile(r"^[^\S\n]|[^\S\n]$", re.M)


def _arpa_sections(path: str):
    """Per order, the n-grams (words joined by single spaces), log10 probs and backoffs (0 where
    absent) of a tab-separated ARPA file, as ``read_arpa`` reads them; None where the file is not
    that plain form (spaces for tabs, space at a line's ends, a repeated n-gram, a count that differs
    from the header, an n-gram of the wrong length), so that ``read_arpa`` reads it or says what is wrong."""
    import csv
    import io

    import pandas as pd

    with _open(path, "r") as fh:
        text = fh.read()
    end = text.find("\n\\end\\")
    heads = list(_ARPA_SECTION.finditer(text, 0, end if end >= 0 else len(text)))
    counts = [int(m.group(2)) for m in re.finditer(r"^ngram (\d+)=(\d+)$", text[:heads[0].start()] if heads else "", re.M)]
    if end < 0 or not heads or [int(m.group(1)) for m in heads] != list(range(1, len(heads) + 1)) \
            or len(counts) != len(heads):
        return None
    sections = []
    for n, head in enumerate(heads, 1):
        body = text[head.end():heads[n].start() if n < len(heads) else end]
        try:
            table = pd.read_csv(io.StringIO(body), sep="\t", header=None, names=["logp", "gram", "bow"],
                                dtype={"logp": np.float64, "gram": object, "bow": np.float64},
                                quoting=csv.QUOTE_NONE, keep_default_na=False, na_values={"bow": [""]},
                                float_precision="round_trip", engine="c")
        except (ValueError, pd.errors.ParserError):  # not numbers where they belong, or extra fields
            return None
        grams = table["gram"].tolist()
        # read_arpa strips each line; here a line must have nothing to strip, and n words per n-gram.
        if len(grams) != counts[n - 1] or len(set(grams)) != len(grams) or _EDGE_SPACE.search(body) \
                or set(map(str.count, grams, itertools.repeat(" "))) - {n - 1}:
            return None
        sections.append((grams, table["logp"].to_numpy(), np.nan_to_num(table["bow"].to_numpy(), nan=0.0)))
    return sections


# ---------------------------------------------------------------- scoring

_MULT = 0x9E3779B97F4A7C15  # odd 64-bit multiplier of the polynomial n-gram hash


def _power(n: int) -> np.uint64:
    return np.uint64(pow(_MULT, n, 1 << 64))


def hash_ngrams(ids: np.ndarray) -> np.ndarray:
    """uint64 hash of each row of an (count, n) id matrix: sum of (id + 1) * M**(n-1-j) mod 2**64,
    so the last word has weight 1 (the scorer extends n-grams to the left; uint64 wraps by design)."""
    ids = ids.astype(np.uint64) + np.uint64(1)
    n = ids.shape[1]
    key = np.zeros(len(ids), dtype=np.uint64)
    for j in range(n):
        key += ids[:, j] * _power(n - 1 - j)
    return key


class NgramModel:
    """An ARPA model in arrays: per order, sorted uint64 n-gram hashes with log10 prob and backoff."""

    def __init__(self, model: Estimate):
        words = [g[0] for g in model.ngrams[0]]
        vocab = {w: i for i, w in enumerate(words)}
        unk = vocab.get(UNK, 0)
        orders = []
        for n, table in enumerate(model.ngrams, 1):
            ids = np.array([[vocab.get(w, unk) for w in g] for g in table], dtype=np.int64).reshape(-1, n)
            values = np.array(list(table.values()), dtype=np.float64).reshape(-1, 2)
            orders.append((ids, values[:, 0], values[:, 1]))
        self._index(vocab, orders)

    def _index(self, vocab: Dict[str, int], orders: List[Tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
        """Hash and sort each order's (ids, log10 probs, backoffs) and build the compiled tables."""
        self.order = len(orders)
        self.vocab = vocab
        if UNK not in self.vocab or BOS not in self.vocab:
            raise ValueError("model has no <unk> or <s> unigram")
        self.unk, self.bos, self.eos = self.vocab[UNK], self.vocab[BOS], self.vocab.get(EOS, self.vocab[UNK])
        self.keys: List[np.ndarray] = []
        self.logp: List[np.ndarray] = []
        self.bow: List[np.ndarray] = []
        self.suffix_closed = True
        for n, (ids, logp, bow) in enumerate(orders, 1):
            keys = hash_ngrams(ids)
            sort = np.argsort(keys, kind="stable")
            keys = keys[sort]
            if len(keys) > 1 and np.any(keys[1:] == keys[:-1]):
                raise ValueError(f"hash collision among the {n}-grams; cannot index this model")
            if n > 1 and len(ids):  # each n-gram's last n - 1 words among the order below's (indexed already)
                self.suffix_closed &= bool(np.all(self._lookup(n - 1, hash_ngrams(ids[:, 1:]))[1]))
            self.keys.append(keys)
            self.logp.append(logp[sort])
            self.bow.append(bow[sort])
        self._build_tables()

    def _build_tables(self) -> None:
        self.tables = _ngram_lm.NgramTables(self.keys, self.logp, self.bow,
                                            [_power(n) for n in range(self.order)],
                                            self.vocab, self.unk, self.bos, self.eos, self.suffix_closed)

    @classmethod
    def load(cls, path: str) -> "NgramModel":
        """``NgramModel(read_arpa(path))``: its sorted arrays from the table cache
        (``udfs/common/table_cache.py``, keyed by the file's SHA-256) after the first worker on a machine
        has read the file, which takes far longer than reading the cached arrays."""
        model = cls.__new__(cls)
        model._adopt(cached_arrays(f"ngram-model-v2:{file_digest(path)}", lambda: cls.read(path)._arrays()))
        return model

    @classmethod
    def read(cls, path: str) -> "NgramModel":
        """``NgramModel(read_arpa(path))``, read faster where the file is in the tab-separated form
        ``write_arpa`` and KenLM write (pandas' C parser per section, no n-gram tuples); any other
        form, and any file that fails a check, goes through ``read_arpa``."""
        sections = _arpa_sections(path)
        if sections is None:
            return cls(read_arpa(path))
        model = cls.__new__(cls)
        words = sections[0][0]
        vocab = {w: i for i, w in enumerate(words)}
        get, unk = vocab.get, vocab.get(UNK, 0)
        orders = []
        for n, (grams, logp, bow) in enumerate(sections, 1):
            ids = (np.arange(len(grams), dtype=np.int64) if n == 1 else
                   np.array([get(w, unk) for g in grams for w in g.split(" ")], dtype=np.int64))
            orders.append((ids.reshape(-1, n), logp, bow))
        model._index(vocab, orders)
        return model

    def _arrays(self) -> Dict[str, np.ndarray]:
        """The indexed model as arrays: the words in id order (one per line, UTF-8), then per order
        its sorted hashes, log10 probs and backoffs, and whether every n-gram's suffix is in the model."""
        arrays = {"words": np.frombuffer("\n".join(self.vocab).encode("utf-8"), dtype=np.uint8),
                  "suffix_closed": np.array([self.suffix_closed])}
        for n in range(self.order):
            arrays.update({f"keys{n}": self.keys[n], f"logp{n}": self.logp[n], f"bow{n}": self.bow[n]})
        return arrays

    def _adopt(self, arrays: Dict[str, np.ndarray]) -> None:
        """The model ``_arrays`` gave."""
        self.vocab = {word: i for i, word in enumerate(arrays["words"].tobytes().decode("utf-8").split("\n"))}
        self.order = sum(name.startswith("keys") for name in arrays)
        self.unk, self.bos, self.eos = self.vocab[UNK], self.vocab[BOS], self.vocab.get(EOS, self.vocab[UNK])
        self.keys = [arrays[f"keys{n}"] for n in range(self.order)]
        self.logp = [arrays[f"logp{n}"] for n in range(self.order)]
        self.bow = [arrays[f"bow{n}"] for n in range(self.order)]
        self.suffix_closed = bool(arrays["suffix_closed"][0])
        self._build_tables()

    def ids(self, tokens: Sequence[str]) -> List[int]:
        get, unk = self.vocab.get, self.unk
        return [get(t, unk) for t in tokens]

    def _lookup(self, n: int, keys: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Index into order ``n``'s arrays and whether the n-gram exists."""
        table = self.keys[n - 1]
        idx = np.minimum(np.searchsorted(table, keys), len(table) - 1)
        return idx, table[idx] == keys

    def score_sequences(self, sequences: Sequence[Sequence[int]]) -> np.ndarray:
        """log10 probability of each predicted token of each id sequence read as a sentence
        (``<s>`` … ``</s>``): every id, then ``</s>``, all sequences concatenated; like KenLM's
        ``Model.full_scores(sentence)``."""
        if not sequences:
            return np.zeros(0)
        lengths = np.array([len(s) + 2 for s in sequences])
        flat = np.fromiter((i for s in sequences for i in (self.bos, *s, self.eos)), dtype=np.int64,
                           count=int(lengths.sum()))
        starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        pos = np.arange(len(flat)) - starts  # position within its sentence
        # key[n-1][i]: hash of the n-gram ending at i (valid where pos >= n-1).
        keys = [flat.astype(np.uint64) + np.uint64(1)]
        for n in range(2, self.order + 1):
            shifted = np.zeros_like(flat)
            shifted[n - 1:] = flat[:len(flat) - n + 1]
            keys.append(keys[-1] + (shifted.astype(np.uint64) + np.uint64(1)) * _power(n - 1))
        logprob = np.zeros(len(flat))
        longest = np.zeros(len(flat), dtype=np.int64)
        for n in range(1, self.order + 1):  # the longest n-gram present gives the probability
            idx, found = self._lookup(n, keys[n - 1])
            found &= pos >= n - 1
            logprob = np.where(found, self.logp[n - 1][idx], logprob)
            longest = np.where(found, n, longest)
        for n in range(1, self.order):  # plus the backoff of each longer context that was missed
            ctx = np.zeros(len(flat), dtype=np.uint64)
            ctx[1:] = keys[n - 1][:-1]
            idx, found = self._lookup(n, ctx)
            use = found & (pos >= n) & (longest <= n)
            logprob += np.where(use, self.bow[n - 1][idx], 0.0)
        return logprob[pos > 0]  # <s> is given, not predicted

    def token_scores(self, token_lists: List[List[str]]) -> np.ndarray:
        """log10 probability of every token and each ``</s>`` of the token lists read as sentences,
        concatenated (``len(tokens) + 1`` values per list): compiled (udfs/filter/_ngram_lm.pyx), the same
        values as ``token_scores_reference``."""
        return self.tables.token_scores(token_lists)

    def document_sums(self, texts: Sequence[str], count_punctuation: bool) -> DocumentSums:
        """``document_sums_reference``, read from each text in compiled code (no string per token)."""
        return DocumentSums(*self.tables.document_sums(_TOKENIZER, [_normalized(text) for text in texts],
                                                       count_punctuation))

    def unigram_scores(self, token_lists: Sequence[Sequence[str]]) -> Tuple[np.ndarray, np.ndarray]:
        """Per token and list end (as ``token_scores``): its unigram's log10 probability, and whether it
        is in the vocabulary."""
        ids = np.fromiter((i for tokens in token_lists for i in (*self.ids(tokens), self.eos)), dtype=np.int64)
        return self.logp[0][self._lookup(1, ids.astype(np.uint64) + np.uint64(1))[0]], ids != self.unk

    def token_scores_reference(self, token_lists: Sequence[Sequence[str]]) -> np.ndarray:
        """``token_scores`` in numpy: the definition the compiled tables reproduce."""
        return self.score_sequences([self.ids(tokens) for tokens in token_lists])


class KenLMModel:
    """The same queries through KenLM's C++ reader (``pip install kenlm``): it loads a model faster
    than ``NgramModel``, whose compiled tables score faster (``bench/speed/perplexity_bench.py`` times
    both); results agree to KenLM's float32 precision."""

    def __init__(self, path: str):
        import kenlm

        self.model = kenlm.Model(path)
        self.order = self.model.order

    def document_sums(self, texts: Sequence[str], count_punctuation: bool) -> DocumentSums:
        return document_sums_reference(self, texts, count_punctuation)

    def unigram_scores(self, token_lists: Sequence[Sequence[str]]) -> Tuple[np.ndarray, np.ndarray]:
        score, model = self.model.score, self.model
        tokens = [t for ts in token_lists for t in (*ts, EOS)]
        # </s> alone is the empty sentence's end without its start
        return (np.array([score("", bos=False, eos=True) if t == EOS else score(t, bos=False, eos=False)
                          for t in tokens], dtype=np.float64),
                np.array([t == EOS or t in model for t in tokens], dtype=bool))

    def token_scores(self, token_lists: Sequence[Sequence[str]]) -> np.ndarray:
        full_scores = self.model.full_scores
        return np.fromiter((score for tokens in token_lists for score, _, _ in full_scores(" ".join(tokens))),
                           dtype=np.float64, count=sum(len(tokens) + 1 for tokens in token_lists))


BACKENDS = ("auto", "kenlm", "numpy")


def kenlm_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("kenlm") is not None


def load_model(path: str, backend: str = "auto"):
    """A scorer with ``token_scores`` and ``document_sums``: KenLM when ``backend`` is kenlm, else the
    built-in reader (its compiled tables score several times KenLM's tokens per second)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "kenlm":
        return KenLMModel(path)
    return NgramModel.load(path)


def document_sums_reference(model, texts: Sequence[str], count_punctuation: bool) -> DocumentSums:
    """``DocumentSums`` from ``model.token_scores`` and ``model.unigram_scores`` of each text's lines
    (punctuation marks counted only with ``count_punctuation``; otherwise they are context)."""
    docs = [tokenize_lines(text) for text in texts]
    flat = [tokens for doc in docs for tokens in doc]
    scores = model.token_scores(flat)
    unigrams, known = model.unigram_scores(flat)
    doc_of = np.repeat(np.arange(len(docs)), [sum(len(tokens) + 1 for tokens in doc) for doc in docs])
    if not count_punctuation:
        counted = word_mask(flat)
        doc_of, scores, unigrams, known = doc_of[counted], scores[counted], unigrams[counted], known[counted]
    return DocumentSums(np.bincount(doc_of, weights=scores, minlength=len(docs)),
                        np.bincount(doc_of, minlength=len(docs)),
                        np.bincount(doc_of[known], weights=scores[known] - unigrams[known], minlength=len(docs)),
                        np.bincount(doc_of[known], minlength=len(docs)))


def perplexity(model, paragraphs: Sequence[str]) -> float:
    """Corpus perplexity: 10 ** -(sum of log10 probabilities / predicted tokens, </s> included)."""
    token_lists = tokenize_all(paragraphs)
    total = float(model.token_scores(token_lists).sum())
    return 10 ** (-total / sum(len(t) + 1 for t in token_lists))
