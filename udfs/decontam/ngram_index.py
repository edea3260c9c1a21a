"""Benchmark decontamination: documents that share a long n-gram with an evaluation set.

As GPT-3 (Brown et al. 2020, appendix C) and datatrove's n-gram decontamination: a document is
contaminated by a benchmark when it contains any of the benchmark items' 13-grams; an item shorter
than that counts whole, if it has at least ``min_item_tokens`` tokens (shorter ones, "Paris", "True",
would match everywhere). Text is normalised as the references do: NFKC, lower case, punctuation
stripped, whitespace collapsed; a token is a word, or one character of a script written without
spaces (Chinese, Japanese, Thai), so Chinese is compared character by character. An item written
mostly in such a script is cut into ``cjk_ngram``-grams (25 characters: 13 characters are set
phrases of news and exam text, "以江泽民同志为核心的党中央"; 25 carry about what 13 English words
do) and counts whole from ``cjk_min_item_chars``. A document's n-grams of every length the index
holds are looked up wherever they start, so a Chinese question quoted in an English page is found.

The benchmarks are a folder: each file in it (``.jsonl``, ``.json`` lines, ``.txt``, optionally
``.gz``) is one benchmark named after the file, each sub-folder one benchmark named after the folder
(its files being e.g. splits). A JSONL line is one item: its string values (nested lists and objects
too: choices, answers) in the order the line gives them, or only ``fields`` when set, joined, so the
n-grams that run from a question into its answer are there too; a text line is one item.

The files are the user's and are read within bounds: only regular files (a named pipe, a device or a
symbolic link loop is refused without being opened for reading: opening a pipe waits for a writer),
at most ``max_file_bytes`` decompressed (a gzip bomb stops there), lines of at most
``max_line_bytes``, JSON nested at most ``max_json_depth`` deep. A file past a bound is a one-line
error naming it and the bound, not skipped: a benchmark left out silently would let its
contaminated documents through.

Every n-gram of every benchmark goes into one sorted array of 64-bit hashes with, beside it, the
benchmark it came from, and a bitmap of one byte per n-gram in front of it (``NgramIndex``): a lookup
of a whole batch of documents is one bitmap test and one ``searchsorted`` of the few that pass it,
whatever the number of benchmarks, and the workers memory-map the arrays (one copy per machine).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import stat
import unicodedata
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import xxhash

from corpusmill.config import ConfigError, defaults_from_yaml
from udfs.common.scripts import UNSEGMENTED_RANGES  # the scripts dedup shingles by character
from udfs.common.worker import worker_resource

ACTIONS = ("reject", "flag")
RULE = "decontamination"
SUFFIXES = (".jsonl", ".json", ".txt")
_PUNCT = re.compile(r"[^\w\s]+")
_UNSEGMENTED_CLASS = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in UNSEGMENTED_RANGES)
# A character of a script without spaces is a token of its own; any other run of non-spaces is one.
_TOKEN = re.compile(f"[{_UNSEGMENTED_CLASS}]|[^\\s{_UNSEGMENTED_CLASS}]+")
_UNSEGMENTED_CHAR = re.compile(f"[{_UNSEGMENTED_CLASS}]")
# Odd multiplier of the polynomial n-gram hash over token hashes (wrapping uint64 arithmetic).
_BASE = np.uint64(0x9E3779B97F4A7C15)
_READ_BLOCK = 1 << 20
_ASCII_SPACE = b" \t\n\r\x0b\x0c"
# A JSON string, escapes included: brackets inside one do not nest.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
# +1 for an opening bracket, -1 for a closing one, per byte value.
_BRACKET_STEP = np.zeros(256, dtype=np.int8)
_BRACKET_STEP[[ord("["), ord("{")]] = 1
_BRACKET_STEP[[ord("]"), ord("}")]] = -1
# Python's JSON parser and ``_strings`` recurse once per level: a depth bound far below the interpreter's.
MAX_JSON_DEPTH_ALLOWED = 200
# Items are tokenised in batches of at most this many characters, whatever their number.
_BATCH_CHARS = 1 << 24


@dataclass(frozen=True)
@defaults_from_yaml("decontam")
class DecontamConfig:
    # Folder of evaluation sets (see the module docstring); None: nothing to check, every document kept.
    benchmarks: Optional[str]
    # Tokens per n-gram: 13 as GPT-3 (a Chinese character is a token).
    ngram: int
    # Items shorter than ``ngram`` count whole from this many tokens; shorter ones are not looked for.
    min_item_tokens: int
    # The same for items written mostly in scripts without spaces, whose tokens are characters.
    cjk_ngram: int
    cjk_min_item_chars: int
    # JSONL keys that make an item, in this order; empty: every string value of the line.
    fields: List[str]
    # reject: contaminated documents go to rejected/ (reject_rule decontamination, reject_value the
    # benchmark); flag: they stay kept, named in decontam_benchmark like rejected ones.
    action: str
    # Bounds on reading a benchmark file, far above real evaluation sets: a file past one is refused in
    # one line. Bytes of a file, decompressed (a gzip bomb stops here; building the index of 256 MiB
    # of questions takes about a GB on the driver, bench/hostile/hostile_inputs.py).
    max_file_bytes: int
    # Bytes of one line (one item): a long-context item is a few MB.
    max_line_bytes: int
    # Nesting of a JSON line's arrays and objects (real items: a handful).
    max_json_depth: int

    def validate(self, prefix: str) -> None:
        if self.benchmarks is not None and not Path(self.benchmarks).is_dir():
            raise ConfigError(f"{prefix}.benchmarks: folder not found: {self.benchmarks}")
        for n, minimum in (("ngram", "min_item_tokens"), ("cjk_ngram", "cjk_min_item_chars")):
            if getattr(self, n) < 1:
                raise ConfigError(f"{prefix}.{n}: must be at least 1, got {getattr(self, n)}")
            if not 1 <= getattr(self, minimum) <= getattr(self, n):
                raise ConfigError(f"{prefix}.{minimum}: must be within [1, {n}={getattr(self, n)}], "
                                  f"got {getattr(self, minimum)}")
        if self.action not in ACTIONS:
            raise ConfigError(f"{prefix}.action: must be one of {', '.join(ACTIONS)}, got {self.action!r}")
        for bound in ("max_file_bytes", "max_line_bytes"):
            if getattr(self, bound) < 1:
                raise ConfigError(f"{prefix}.{bound}: must be at least 1, got {getattr(self, bound)}")
        if not 1 <= self.max_json_depth <= MAX_JSON_DEPTH_ALLOWED:
            raise ConfigError(f"{prefix}.max_json_depth: must be within [1, {MAX_JSON_DEPTH_ALLOWED}] (Python's JSON "
                              f"parser recurses per level), got {self.max_json_depth}")


# ---------------------------------------------------------------- tokens and n-grams

def normalize(text: str) -> str:
    """NFKC, lower case, punctuation to spaces, single spaces."""
    if not text.isascii():  # ASCII is its own NFKC form
        text = unicodedata.normalize("NFKC", text)
    return " ".join(_PUNCT.sub(" ", text.lower()).split())


@dataclass
class Tokens:
    """Token hashes of a batch of texts: ``hashes[offsets[i]:offsets[i + 1]]`` are text i's."""
    hashes: np.ndarray   # uint64
    offsets: np.ndarray  # int64, len = texts + 1

    @classmethod
    def of(cls, texts: Sequence[Optional[str]]) -> "Tokens":
        hashes: List[int] = []
        offsets = [0]
        for text in texts:
            hashes.extend(map(xxhash.xxh64_intdigest, _TOKEN.findall(normalize(text or ""))))
            offsets.append(len(hashes))
        return cls(np.array(hashes, dtype=np.uint64), np.array(offsets, dtype=np.int64))

    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)

    def ngrams(self, lengths: Sequence[int]) -> Iterator[Tuple[int, np.ndarray, np.ndarray]]:
        """For each length in ``lengths`` (ascending): (length, hashes of every n-gram of that many
        tokens inside one text, the text each belongs to). One pass: the hash of n+1 tokens extends
        the hash of n."""
        text_of = np.repeat(np.arange(len(self.offsets) - 1), self.counts())
        text_end = self.offsets[1:][text_of]
        wanted = sorted(set(lengths))
        acc = self.hashes.copy()
        with np.errstate(over="ignore"):
            for n in range(1, (wanted[-1] if wanted else 0) + 1):
                if n > 1:
                    acc = acc[:-1] * _BASE + self.hashes[n - 1:]
                if n in wanted:
                    inside = np.arange(len(acc)) + n <= text_end[:len(acc)]
                    yield n, acc[inside] ^ np.uint64(n), text_of[:len(acc)][inside]


# ---------------------------------------------------------------- evaluation sets

def benchmark_files(folder: str) -> Dict[str, List[Path]]:
    """Benchmark name -> its files: each file directly in ``folder``, each sub-folder's files."""
    root = Path(folder)
    found: Dict[str, List[Path]] = {}
    for path in sorted(root.iterdir()):
        if path.is_dir():
            # Not is_file(): a pipe or a link loop named like an evaluation file is refused when read.
            files = sorted(p for p in path.rglob("*") if not p.is_dir() and _is_eval_file(p))
            if files:
                found[path.name] = files
        elif _is_eval_file(path) and not path.name.startswith(("_", ".")):  # _SUCCESS, .crc, notes
            found[_stem(path)] = [path]
    if not found:
        raise ConfigError(f"decontam.benchmarks: no {', '.join(SUFFIXES)} files (or .gz of them) in {folder}")
    return found


def _is_eval_file(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith(SUFFIXES) or name.endswith(tuple(s + ".gz" for s in SUFFIXES))


def _without_gz(path: Path) -> str:
    return path.name[:-3] if path.name.lower().endswith(".gz") else path.name


def _stem(path: Path) -> str:
    return _without_gz(path).rsplit(".", 1)[0]


def _strings(value, fields: Sequence[str]) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, ())
    elif isinstance(value, dict):
        for key in (fields or value):
            if key in value:
                yield from _strings(value[key], ())


def _refused(path: Path, why: str, line: Optional[int] = None) -> ConfigError:
    return ConfigError(f"decontam.benchmarks: {path}{'' if line is None else f' line {line}'}: {why}")


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return kind
    return "not a file"


def open_benchmark_file(path: Path, cfg: DecontamConfig) -> BinaryIO:
    """A benchmark file opened for reading bytes, when it is a regular file of at most
    ``max_file_bytes``. Anything else is refused from its ``stat``, before it is opened; a name
    swapped for a pipe after that is opened without waiting (O_NONBLOCK) and refused."""
    try:
        info = os.stat(path)  # follows links: a loop is ELOOP here
    except OSError as exc:
        raise _refused(path, f"cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise _refused(path, f"not a regular file ({_file_kind(info.st_mode)})")
    if info.st_size > cfg.max_file_bytes:
        raise _refused(path, f"{info.st_size:,} bytes, more than decontam.max_file_bytes = {cfg.max_file_bytes:,}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise _refused(path, f"cannot be read ({exc.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _refused(path, f"not a regular file ({_file_kind(mode)})")
    return os.fdopen(fd, "rb")


def _read_block(stream: BinaryIO, path: Path) -> bytes:
    try:
        return stream.read(_READ_BLOCK)
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError; a cut gzip, EOFError
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else "cut short"
        raise _refused(path, f"not readable ({type(exc).__name__}: {reason})") from None


def _lines(stream: BinaryIO, path: Path, cfg: DecontamConfig) -> Iterator[Tuple[int, str]]:
    """The lines of a file that hold more than white space, with their numbers (a line ends at
    "\n"), decoded as UTF-8 with bad bytes replaced; refused past ``max_file_bytes`` read or a line of
    more than ``max_line_bytes``. Read a block at a time: a block of white space alone (a file of
    newlines) is skipped without splitting it."""
    number = 0           # lines before the one being read
    pending: List[bytes] = []  # the pieces of the line being read
    pending_bytes = total = 0
    while True:
        block = _read_block(stream, path)
        total += len(block)
        if total > cfg.max_file_bytes:
            raise _refused(path, f"more than decontam.max_file_bytes = {cfg.max_file_bytes:,} bytes (decompressed)")
        if not block:
            break
        if not pending_bytes and not block.translate(None, _ASCII_SPACE):
            number += block.count(b"\n")
            continue
        lines = block.split(b"\n")
        if len(lines) > 1:
            lines[0] = b"".join(pending + [lines[0]])
            pending, pending_bytes = [], 0
            for line in lines[:-1]:
                number += 1
                if len(line) > cfg.max_line_bytes:
                    raise _line_too_long(path, number, cfg)
                if line.strip():
                    text = line.decode("utf-8", errors="replace")
                    if text.strip():
                        yield number, text
        pending.append(lines[-1])
        pending_bytes += len(lines[-1])
        if pending_bytes > cfg.max_line_bytes:
            raise _line_too_long(path, number + 1, cfg)
    text = b"".join(pending).decode("utf-8", errors="replace")
    if text.strip():
        yield number + 1, text


def _line_too_long(path: Path, number: int, cfg: DecontamConfig) -> ConfigError:
    return _refused(path, f"more than decontam.max_line_bytes = {cfg.max_line_bytes:,} bytes", number)


def json_depth_over(text: str, limit: int) -> bool:
    """Whether a JSON text nests arrays and objects more than ``limit`` deep (brackets in strings
    aside), told without parsing it."""
    if text.count("[") + text.count("{") <= limit:
        return False
    brackets = _JSON_STRING.sub("", text).encode("utf-8", errors="replace")
    return bool(np.cumsum(_BRACKET_STEP[np.frombuffer(brackets, dtype=np.uint8)], dtype=np.int64).max() > limit)


def read_items(path: Path, cfg: DecontamConfig) -> Iterator[str]:
    """The items of one evaluation file: a JSONL line's strings joined, or a text line."""
    with open_benchmark_file(path, cfg) as raw:
        stream = gzip.GzipFile(fileobj=raw, mode="rb") if path.name.lower().endswith(".gz") else raw
        if _without_gz(path).lower().endswith(".txt"):
            yield from (line for _, line in _lines(stream, path, cfg))
            return
        for number, line in _lines(stream, path, cfg):
            if json_depth_over(line, cfg.max_json_depth):
                raise _refused(path, f"JSON nested more than decontam.max_json_depth = {cfg.max_json_depth} deep",
                               number)
            try:
                record = json.loads(line)
            except ValueError:
                raise _refused(path, "not JSON", number) from None
            yield " ".join(_strings(record, cfg.fields))


@dataclass
class NgramIndex:
    """Every n-gram hash of every benchmark, sorted, with the benchmark it came from."""
    hashes: np.ndarray      # uint64, sorted, unique
    benchmark: np.ndarray   # uint16: index into ``names``
    bitmap: np.ndarray      # uint8: bit (hash mod 8·len) set for every hash; a power-of-two length
    names: List[str]
    lengths: List[int]      # the n-gram lengths present (ngram, and those of shorter whole items)
    items: Dict[str, Dict[str, int]]  # per benchmark: items read, items too short to look for

    ARRAYS = ("hashes", "benchmark", "bitmap")

    @classmethod
    def build(cls, cfg: DecontamConfig, batch_items: int = 4096) -> "NgramIndex":
        files = benchmark_files(cfg.benchmarks)
        if len(files) > np.iinfo(np.uint16).max:
            raise ConfigError(f"decontam.benchmarks: at most {np.iinfo(np.uint16).max} benchmarks")
        parts: List[Tuple[np.ndarray, int]] = []
        items: Dict[str, Dict[str, int]] = {}
        lengths: set = set()
        for number, (name, paths) in enumerate(files.items()):
            counts = items[name] = {"items": 0, "too_short": 0}
            batch: List[str] = []
            batch_chars = 0
            for path in paths:
                for item in read_items(path, cfg):
                    batch.append(item)
                    batch_chars += len(item)
                    if len(batch) >= batch_items or batch_chars >= _BATCH_CHARS:
                        parts.append((_item_ngrams(batch, cfg, counts, lengths), number))
                        batch, batch_chars = [], 0
            if batch:
                parts.append((_item_ngrams(batch, cfg, counts, lengths), number))
        hashes = np.concatenate([h for h, _ in parts]) if parts else np.zeros(0, np.uint64)
        benchmark = np.concatenate([np.full(len(h), n, np.uint16) for h, n in parts]) if parts else np.zeros(0, np.uint16)
        # Sorted by hash, then benchmark: a hash two benchmarks share is credited to the first of them.
        order = np.lexsort((benchmark, hashes))
        hashes, benchmark = hashes[order], benchmark[order]
        first = np.concatenate([[True], hashes[1:] != hashes[:-1]]) if len(hashes) else np.zeros(0, bool)
        hashes = hashes[first]
        return cls(hashes, benchmark[first], _bitmap(hashes), list(files), sorted(lengths), items)

    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in self.ARRAYS)

    def save(self, folder: str, prefix: str) -> List[str]:
        """Write the arrays as ``<prefix>.<array>.npy`` files in ``folder``; returns their names."""
        names = [f"{prefix}.{name}.npy" for name in self.ARRAYS]
        for name, file_name in zip(self.ARRAYS, names):
            np.save(str(Path(folder) / file_name), getattr(self, name))
        return names

    @classmethod
    def mapped(cls, paths: Sequence[str], names: List[str], lengths: List[int]) -> "NgramIndex":
        """The index of saved arrays, memory-mapped (the page cache shares them between processes)
        and kept for the life of the worker process."""
        return worker_resource("decontam.index", tuple(paths), lambda: cls(
            *[np.load(path, mmap_mode="r") for path in paths], names=names, lengths=lengths, items={}))


def _bitmap(hashes: np.ndarray) -> np.ndarray:
    """A bit per hash (its low bits) in a power-of-two bitmap with at least 8 bits per hash."""
    bits = 1 << max(int(8 * len(hashes)).bit_length(), 6)
    present = np.zeros(bits, dtype=bool)
    present[(hashes & np.uint64(bits - 1)).astype(np.int64)] = True
    return np.packbits(present, bitorder="little")


def may_contain(bitmap: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    position = (hashes & np.uint64(8 * len(bitmap) - 1)).astype(np.int64)
    return ((bitmap[position >> 3] >> (position & 7).astype(np.uint8)) & 1).astype(bool)


def _item_ngrams(texts: List[str], cfg: DecontamConfig, counts: Dict[str, int], lengths: set) -> np.ndarray:
    """Hashes of the items' n-grams: every n-gram of a long item, a short one whole (the lengths
    used join ``lengths``, those documents are looked up by)."""
    tokens = Tokens.of(texts)
    n_tokens = tokens.counts()
    cjk = np.array([2 * len(_UNSEGMENTED_CHAR.findall(t)) >= n > 0 for t, n in zip(texts, n_tokens)], dtype=bool)
    n_item = np.where(cjk, cfg.cjk_ngram, cfg.ngram)
    minimum = np.where(cjk, cfg.cjk_min_item_chars, cfg.min_item_tokens)
    # An item's one length: its n, or its own token count when it is shorter; 0 when too short.
    length = np.where(n_tokens >= n_item, n_item, np.where(n_tokens >= minimum, n_tokens, 0))
    counts["items"] += len(texts)
    counts["too_short"] += int(np.sum(length == 0))
    lengths.update(int(n) for n in np.unique(length[length > 0]))
    found = []
    for n, hashes, item in tokens.ngrams(np.unique(length[length > 0])):
        found.append(hashes[length[item] == n])
    return np.concatenate(found) if found else np.zeros(0, np.uint64)


def files_fingerprint(cfg: DecontamConfig) -> str:
    """Hash of the benchmark files' names and contents: a changed evaluation set re-runs the stage."""
    if cfg.benchmarks is None:
        return ""
    if not Path(cfg.benchmarks).is_dir():
        raise ConfigError(f"decontam.benchmarks: folder not found: {cfg.benchmarks}")
    digest = hashlib.sha256()
    for name, paths in benchmark_files(cfg.benchmarks).items():
        for path in paths:
            digest.update(f"{name}:{path.name}:".encode())
            with open_benchmark_file(path, cfg) as data:
                for block in iter(lambda: data.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:16]


# ---------------------------------------------------------------- documents

def match(texts: Sequence[Optional[str]], index: NgramIndex) -> Tuple[np.ndarray, np.ndarray]:
    """Per text: the number of its n-grams found in the index, and the benchmark (index into the
    names) with most of them (-1 when none; ties go to the benchmark listed first)."""
    tokens = Tokens.of(texts)
    n_texts = len(texts)
    hashes = index.hashes
    found_text: List[np.ndarray] = []
    found_bench: List[np.ndarray] = []
    if len(hashes):
        for _, grams, text in tokens.ngrams(index.lengths):
            maybe = may_contain(index.bitmap, grams)
            grams, text = grams[maybe], text[maybe]
            # Sorted queries walk the (memory-mapped) index in order: much faster than random ones.
            order = np.argsort(grams)
            grams, text = grams[order], text[order]
            at = np.minimum(np.searchsorted(hashes, grams), len(hashes) - 1)
            hit = hashes[at] == grams
            found_text.append(text[hit])
            found_bench.append(np.asarray(index.benchmark[at[hit]], dtype=np.int64))
    hits_text = np.concatenate(found_text) if found_text else np.zeros(0, np.int64)
    hits_bench = np.concatenate(found_bench) if found_bench else np.zeros(0, np.int64)
    matches = np.bincount(hits_text, minlength=n_texts)
    best = np.full(n_texts, -1, dtype=np.int64)
    if len(hits_text):
        # Count (text, benchmark) pairs; per text keep the largest count, the lowest benchmark on ties.
        pairs, pair_counts = np.unique(np.stack([hits_text, hits_bench]), axis=1, return_counts=True)
        order = np.lexsort((pairs[1], -pair_counts, pairs[0]))
        texts_sorted = pairs[0][order]
        first = np.concatenate([[True], texts_sorted[1:] != texts_sorted[:-1]])
        best[texts_sorted[first]] = pairs[1][order][first]
    return matches, best
