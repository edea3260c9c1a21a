"""Tokenizers that work offline: the bundled cl100k_base, a HF ``tokenizer.json`` or a SentencePiece model.

(Named ``tokenizer`` rather than ``tokenize`` so it can never shadow the standard library module.)

Every tokenizer answers the same three questions the packer asks: the ids of a batch of texts, the
end-of-document id, and where in the UTF-8 bytes of a text each token ends (so a long document can be
cut at a paragraph or sentence boundary found in the text). Vocabulary files are checked against
their sha256 before use; nothing is ever downloaded.
"""
from __future__ import annotations

import base64
import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from corpusmill.config import ConfigError, defaults_from_yaml, require_file
from udfs.common.worker import worker_resource

VOCAB_DIR = Path(__file__).resolve().parent / "vocab"

# cl100k_base (GPT-4's vocabulary): byte-level BPE, 100k tokens, about one token per common Chinese
# character where GPT-2 needs two or three. The sha256 is that of the uncompressed file, the same value
# tiktoken itself checks for its download.
BUNDLED = {
    "cl100k_base": {
        "file": "cl100k_base.tiktoken.gz",
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "pattern": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        "special_tokens": {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                           "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
        "eos_token": "<|endoftext|>",
    },
}
# End-of-document tokens tried, in order, when a tokenizer.json does not say which one to use.
HF_EOS_CANDIDATES = ("<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>", "<|im_end|>", "[SEP]")


@dataclass(frozen=True)
@defaults_from_yaml("pack", "tokenizer")
class TokenizerConfig:
    # A vocabulary shipped with corpusmill (udfs/pack/vocab/); used when ``path`` is not set.
    name: str
    # Or a local file: a HF ``tokenizer.json`` (*.json) or a SentencePiece model (*.model). On a
    # cluster every executor needs it at this path (ship it with ``--files`` and name it relatively).
    path: Optional[str]
    # Expected sha256 of ``path``; checked at load when set (the bundled vocabulary is always checked).
    sha256: Optional[str]
    # End-of-document token; default: the vocabulary's own end-of-text token.
    eos_token: Optional[str]
    # Threads per tokenizer call; 1 inside Spark, where every core already runs a task.
    threads: int

    def validate(self, prefix: str) -> None:
        if self.path is None and self.name not in BUNDLED:
            raise ConfigError(f"{prefix}.name: no bundled vocabulary {self.name!r} "
                              f"(bundled: {', '.join(BUNDLED)}); set {prefix}.path to a tokenizer file")
        if self.path is not None:
            require_file(self.path, f"{prefix}.path")
            if not self.path.endswith((".json", ".model")):
                raise ConfigError(f"{prefix}.path: expected a HF tokenizer.json (*.json) or a "
                                  f"SentencePiece model (*.model), got {self.path}")
        if self.threads < 1:
            raise ConfigError(f"{prefix}.threads: must be at least 1")


def _checked_bytes(path: Path, expected: Optional[str], key: str) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    if expected and hashlib.sha256(data).hexdigest() != expected.lower():
        raise ConfigError(f"{key}: sha256 mismatch for {path} (expected {expected}); the file is not the "
                          f"vocabulary it claims to be")
    return data


def utf8_offsets(text: str) -> np.ndarray:
    """Byte offset in ``text.encode('utf-8')`` of every character index 0..len(text)."""
    codepoints = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    widths = 1 + (codepoints >= 0x80) + (codepoints >= 0x800) + (codepoints >= 0x10000)
    offsets = np.zeros(len(codepoints) + 1, dtype=np.int64)
    np.cumsum(widths, out=offsets[1:])
    return offsets


class Tokenizer:
    """The interface the packer uses; ``load_tokenizer`` returns one of the subclasses below."""

    name: str
    eos_id: int
    vocab_size: int

    def encode_batch(self, texts: Sequence[str]) -> List[np.ndarray]:
        raise NotImplementedError

    def token_ends(self, text: str, ids: np.ndarray) -> np.ndarray:
        """UTF-8 byte offset in ``text`` where each token of ``ids`` (its encoding) ends."""
        raise NotImplementedError

    def decode(self, ids: Sequence[int]) -> str:
        raise NotImplementedError


class TiktokenTokenizer(Tokenizer):
    def __init__(self, name: str, eos_token: Optional[str], threads: int):
        import tiktoken

        spec = BUNDLED[name]
        data = _checked_bytes(VOCAB_DIR / spec["file"], spec["sha256"], f"tokenizer {name}")
        ranks: Dict[bytes, int] = {}
        for line in data.splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        self.encoding = tiktoken.Encoding(name=name, pat_str=spec["pattern"], mergeable_ranks=ranks,
                                          special_tokens=spec["special_tokens"])
        eos = eos_token or spec["eos_token"]
        if eos not in spec["special_tokens"]:
            raise ConfigError(f"tokenizer.eos_token: {eos!r} is not a special token of {name}")
        self.name, self.eos_id, self.threads = name, spec["special_tokens"][eos], threads
        self.vocab_size = self.encoding.n_vocab
        # Byte length of every ordinary token: token ends are then one vectorised cumsum.
        self._token_bytes = np.zeros(self.vocab_size, dtype=np.int64)
        for token, rank in ranks.items():
            self._token_bytes[rank] = len(token)

    def encode_batch(self, texts: Sequence[str]) -> List[np.ndarray]:
        # encode_ordinary: text that happens to contain "<|endoftext|>" is tokenized as plain text.
        # With one thread, in this one: tiktoken's batch call hands every text to a pool thread.
        encoded = (self.encoding.encode_ordinary_batch(list(texts), num_threads=self.threads) if self.threads > 1
                   else [self.encoding.encode_ordinary(text) for text in texts])
        return [np.asarray(ids, dtype=np.int32) for ids in encoded]

    def token_ends(self, text: str, ids: np.ndarray) -> np.ndarray:
        return np.cumsum(self._token_bytes[ids])

    def decode(self, ids: Sequence[int]) -> str:
        return self.encoding.decode([int(i) for i in ids])


class HFTokenizer(Tokenizer):
    def __init__(self, path: str, eos_token: Optional[str], threads: int):
        import os

        # The Rust thread pool would compete with the other Spark tasks on the executor.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "true" if threads > 1 else "false")
        from tokenizers import Tokenizer as RustTokenizer

        self.tokenizer = RustTokenizer.from_file(path)
        candidates = (eos_token,) if eos_token else HF_EOS_CANDIDATES
        found = [(t, self.tokenizer.token_to_id(t)) for t in candidates]
        found = [(t, i) for t, i in found if i is not None]
        if not found:
            raise ConfigError(f"tokenizer.eos_token: none of {', '.join(candidates)} is in {path}; "
                              f"name the end-of-document token")
        self.name, self.eos_id = Path(path).name, found[0][1]
        self.vocab_size = self.tokenizer.get_vocab_size()

    def encode_batch(self, texts: Sequence[str]) -> List[np.ndarray]:
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [np.asarray(e.ids, dtype=np.int32) for e in encodings]

    def token_ends(self, text: str, ids: np.ndarray) -> np.ndarray:
        # HF reports character offsets into the original text; convert them to UTF-8 bytes.
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        chars = np.asarray([end for _, end in encoding.offsets], dtype=np.int64)
        return utf8_offsets(text)[chars] if len(chars) else chars

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=False)


class SentencePieceTokenizer(Tokenizer):
    def __init__(self, path: str, eos_token: Optional[str], threads: int):
        import sentencepiece as spm

        self.model = spm.SentencePieceProcessor(model_file=path)
        eos_id = self.model.piece_to_id(eos_token) if eos_token else self.model.eos_id()
        if eos_id < 0 or (eos_token and self.model.id_to_piece(eos_id) != eos_token):
            raise ConfigError(f"tokenizer.eos_token: {path} has no end-of-sentence piece "
                              f"{eos_token or '(eos_id is -1)'}; name one that exists")
        self.name, self.eos_id, self.threads = Path(path).name, int(eos_id), threads
        self.vocab_size = self.model.get_piece_size()

    def encode_batch(self, texts: Sequence[str]) -> List[np.ndarray]:
        encoded = self.model.encode(list(texts), num_threads=self.threads)
        return [np.asarray(ids, dtype=np.int32) for ids in encoded]

    def token_ends(self, text: str, ids: np.ndarray) -> np.ndarray:
        # Piece offsets are UTF-8 byte offsets into the input text.
        pieces = self.model.encode(text, return_type="proto").pieces
        return np.asarray([p.end for p in pieces], dtype=np.int64)

    def decode(self, ids: Sequence[int]) -> str:
        return self.model.decode([int(i) for i in ids])


def load_tokenizer(cfg: TokenizerConfig) -> Tokenizer:
    """Build the configured tokenizer (checking file hashes); raises ConfigError on a bad file."""
    if cfg.path is None:
        return TiktokenTokenizer(cfg.name, cfg.eos_token, cfg.threads)
    path = Path(cfg.path)
    if cfg.sha256:
        _checked_bytes(path, cfg.sha256, "tokenizer.sha256")
    if cfg.path.endswith(".json"):
        return HFTokenizer(cfg.path, cfg.eos_token, cfg.threads)
    return SentencePieceTokenizer(cfg.path, cfg.eos_token, cfg.threads)


def cached_tokenizer(cfg: TokenizerConfig) -> Tokenizer:
    """One tokenizer per config per Python worker (loading a vocabulary is costly)."""
    return worker_resource("pack.tokenizer", cfg, lambda: load_tokenizer(cfg))
