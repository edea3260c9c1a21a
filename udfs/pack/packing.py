"""Documents → fixed-length training sequences: EOS between documents, block-diagonal attention masks,
and long documents cut at paragraph or sentence boundaries, never by a sliding window through a sentence.

1. Each document is tokenized whole and gets one EOS after its last token.
2. Documents that fit a window (with their EOS) are never cut. They are buffered
   (``buffer_sequences`` windows' worth), sorted longest first and placed best-fit: into the open
   sequence with the least room that still takes them, else into a new one.
3. Longer documents are cut, and the cuts are chosen to fill the room that is left: each piece goes
   into the open sequence with the most room and ends at the last paragraph boundary that fits if
   that piece fills at least ``paragraph_min_fill`` of the room, else at the last sentence (or line)
   boundary that fits. Only a sentence longer than a whole window is cut inside (a *hard cut*,
   counted). The document's last piece carries its EOS and is placed best-fit like a short document.
4. Sequences close when full, or fullest first when more than ``max_open_sequences`` are open, so
   memory is bounded by the buffer and the open sequences, never by the input.
   A sequence never holds two pieces of one document (``doc_id``): the repeats that ``mix`` makes of a
   document (and the pieces of one long document) always land in different sequences, so a model
   never sees a copy of a text in the context it is predicting it from.
5. Each sequence carries ``input_ids``, ``segment_ids`` (1, 2, … per piece; 0 = padding) and
   ``loss_mask``. ``loss_mask[t]`` is 1 when token ``t`` is a real token that continues the same
   segment as token ``t-1``, i.e. it is a valid next-token target: a trainer using
   ``labels = input_ids[1:]`` weights the loss with ``loss_mask[1:]``. The first token of every segment
   and all padding are 0, so no document is ever predicted from another one's context.

Token accounting: tokens of the input documents = non-padding tokens of the output − EOS tokens
(one per document) + tokens removed by ``max_doc_tokens`` truncation.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np
import xxhash

from corpusmill.config import ConfigError, defaults_from_yaml
from udfs.pack.tokenizer import Tokenizer, TokenizerConfig, utf8_offsets

# A paragraph ends at a blank line; a line break is a sentence-level boundary (lists, headings, verse).
_PARAGRAPH = re.compile(r"\n[^\S\n]*\n\s*")
_LINE = re.compile(r"\n\s*")
# Latin sentence ends: terminal punctuation, optional closing quotes/brackets, whitespace, and the next
# sentence not starting in lower case (so "e.g. this" is not a boundary). CJK ends need no space.
# Group 1 ends where the sentence ends; the match ends where the next one starts.
_SENTENCE = re.compile(r"([.!?…]+[\"'”’)\]]*)\s+(?=[^\sa-z])|([。！？]+[”’」』）)]*)\s*")


@dataclass(frozen=True)
@defaults_from_yaml("pack")
class PackConfig:
    seq_len: int
    tokenizer: TokenizerConfig
    # Cut a long document at the last paragraph break that fits when the piece fills at least this
    # fraction of the room it goes into; else at the last sentence (or line) break that fits.
    paragraph_min_fill: float
    # Longer documents are truncated at a sentence boundary (0: never; long documents are split instead).
    max_doc_tokens: int
    # Documents buffered before best-fit placement runs, in windows' worth of tokens (~4 B per token).
    buffer_sequences: int
    # Partly filled sequences kept open for small pieces to fill; the fullest closes first beyond this.
    max_open_sequences: int
    # Gaps smaller than this are left to whole short documents, not filled with a cut-off piece.
    min_piece_tokens: int
    # Padding id (masked out by segment_ids 0 and loss_mask 0); default: the EOS id.
    pad_id: Optional[int]

    def validate(self, prefix: str) -> None:
        if self.seq_len < 8:
            raise ConfigError(f"{prefix}.seq_len: must be at least 8, got {self.seq_len}")
        if not 0 <= self.paragraph_min_fill <= 1:
            raise ConfigError(f"{prefix}.paragraph_min_fill: must be within 0..1")
        if self.max_doc_tokens < 0:
            raise ConfigError(f"{prefix}.max_doc_tokens: must be 0 (no limit) or positive")
        if self.buffer_sequences < 1 or self.max_open_sequences < 1:
            raise ConfigError(f"{prefix}.buffer_sequences and max_open_sequences must be at least 1")
        if not 1 <= self.min_piece_tokens <= self.seq_len:
            raise ConfigError(f"{prefix}.min_piece_tokens: must be within 1..seq_len")


def text_boundaries(text: str) -> Tuple[np.ndarray, np.ndarray]:
    """UTF-8 byte offsets where a cut may go: at paragraph breaks, and at sentence or line breaks (a
    superset). Both sides of the whitespace in a break qualify, since tokenizers attach it to either."""
    def inside(positions):
        return {p for p in positions if 0 < p < len(text)}

    paragraphs = inside(p for m in _PARAGRAPH.finditer(text) for p in (m.start(), m.end()))
    lines = inside(p for m in _LINE.finditer(text) for p in (m.start(), m.end()))
    sentences = inside(p for m in _SENTENCE.finditer(text) for p in (m.end(1) if m.group(1) else m.end(2), m.end()))
    offsets = utf8_offsets(text)
    return (offsets[np.asarray(sorted(paragraphs), dtype=np.int64)],
            offsets[np.asarray(sorted(paragraphs | lines | sentences), dtype=np.int64)])


def token_cuts(token_ends: np.ndarray, boundaries: np.ndarray) -> np.ndarray:
    """Token positions of the boundaries that fall exactly between two tokens (a boundary inside a
    token, e.g. cl100k's single token for '。“', is no cut point)."""
    first = np.searchsorted(token_ends, boundaries, side="left")  # first token ending at or after b
    exact = first < len(token_ends)
    exact[exact] = token_ends[first[exact]] == boundaries[exact]
    return np.unique(first[exact] + 1)


@dataclass
class Piece:
    tokens: np.ndarray       # token ids; a document's last piece ends with EOS
    sample_id: str
    domain: str
    index: int               # position of the piece within its document
    last: bool
    truncated: int = 0       # on the last piece: tokens the document lost to max_doc_tokens
    hard_cuts: int = 0       # on the last piece: the document's cuts inside a sentence


def _last_in(sorted_positions: np.ndarray, low: int, high: int) -> Optional[int]:
    """The largest position p with low < p <= high, or None."""
    i = int(np.searchsorted(sorted_positions, high, side="right")) - 1
    return int(sorted_positions[i]) if i >= 0 and sorted_positions[i] > low else None


class Document:
    """A tokenized document being cut into pieces; knows where its paragraphs and sentences end."""

    def __init__(self, ids: np.ndarray, text: str, sample_id: str, domain: str, tokenizer: Tokenizer,
                 cfg: "PackConfig", doc_id: Optional[str] = None):
        # sample_id names this copy of the document; doc_id the document every copy repeats.
        self.ids, self.sample_id, self.domain = ids, sample_id, domain
        self.doc_id = sample_id if doc_id is None else doc_id
        self.eos_id, self.min_fill, self.min_piece = tokenizer.eos_id, cfg.paragraph_min_fill, cfg.min_piece_tokens
        self.truncated = self.hard_cuts = self.start = self.pieces = 0
        self.paragraphs = self.sentences = np.zeros(0, dtype=np.int64)
        too_long = cfg.max_doc_tokens and len(ids) > cfg.max_doc_tokens
        if len(ids) + 1 > cfg.seq_len or too_long:
            token_ends = tokenizer.token_ends(text, ids)
            para_bytes, sent_bytes = text_boundaries(text)
            self.paragraphs, self.sentences = token_cuts(token_ends, para_bytes), token_cuts(token_ends, sent_bytes)
        if too_long:
            end = _last_in(self.sentences, 0, cfg.max_doc_tokens)
            if end is None:
                end, self.hard_cuts = cfg.max_doc_tokens, 1
            self.truncated, self.ids = len(ids) - end, ids[:end]

    @property
    def remaining(self) -> int:
        """Tokens still to place, with the EOS."""
        return len(self.ids) - self.start + 1

    @property
    def done(self) -> bool:
        return self.start > len(self.ids)

    def take(self, room: int, fresh: bool) -> Optional[Piece]:
        """The next piece for ``room`` free tokens: the whole rest with EOS if it fits, else a prefix
        ending at a paragraph (if it fills ``paragraph_min_fill`` of the room) or sentence boundary,
        at least ``min_piece_tokens`` long unless ``fresh`` (an empty window). None when no boundary
        fits, unless ``fresh``: then the sentence is longer than a window and is cut at its edge."""
        if self.remaining <= room:
            tokens = np.append(self.ids[self.start:], np.int32(self.eos_id))
            piece = Piece(tokens.astype(np.int32, copy=False), self.sample_id, self.domain, self.pieces, True,
                          self.truncated, self.hard_cuts)
            self.start = len(self.ids) + 1
        else:
            limit = self.start + room
            end = _last_in(self.paragraphs, self.start + int(self.min_fill * room), limit)
            if end is None:
                end = _last_in(self.sentences, self.start + (0 if fresh else self.min_piece - 1), limit)
            if end is None:
                if not fresh:
                    return None
                end = limit
                self.hard_cuts += 1
            piece = Piece(self.ids[self.start:end], self.sample_id, self.domain, self.pieces, False)
            self.start = end
        self.pieces += 1
        return piece


def split_document(document: Document, window: int) -> List[Piece]:
    """Cut a document into pieces that each fill at most one window (no packing around it)."""
    pieces = []
    while not document.done:
        pieces.append(document.take(window, fresh=True))
    return pieces


@dataclass
class PackedSequence:
    input_ids: np.ndarray
    segment_ids: np.ndarray
    loss_mask: np.ndarray
    pieces: List[Piece]

    @property
    def n_tokens(self) -> int:
        return int(sum(len(p.tokens) for p in self.pieces))

    @property
    def sequence_id(self) -> str:
        """Deterministic: a hash of the pieces it holds (sample ids are unique per training sample)."""
        return xxhash.xxh64_hexdigest("|".join(f"{p.sample_id}:{p.index}" for p in self.pieces).encode("utf-8"))


def loss_mask_from_segments(segment_ids: np.ndarray) -> np.ndarray:
    """1 where a token is real and continues the segment of the token before it (along the last axis)."""
    mask = np.zeros_like(segment_ids, dtype=np.int32)
    mask[..., 1:] = (segment_ids[..., 1:] > 0) & (segment_ids[..., 1:] == segment_ids[..., :-1])
    return mask


def position_ids_from_segments(segment_ids: np.ndarray) -> np.ndarray:
    """Positions restarting at 0 with every segment (along the last axis; trailing padding is one more run)."""
    index = np.broadcast_to(np.arange(segment_ids.shape[-1]), segment_ids.shape)
    starts = np.ones(segment_ids.shape, dtype=bool)
    starts[..., 1:] = segment_ids[..., 1:] != segment_ids[..., :-1]
    return (index - np.maximum.accumulate(np.where(starts, index, 0), axis=-1)).astype(np.int32)


def assemble(pieces: Sequence[Piece], seq_len: int, pad_id: int) -> PackedSequence:
    input_ids = np.full(seq_len, pad_id, dtype=np.int32)
    segment_ids = np.zeros(seq_len, dtype=np.int32)
    pos = 0
    for segment, piece in enumerate(pieces, start=1):
        n = len(piece.tokens)
        input_ids[pos:pos + n] = piece.tokens
        segment_ids[pos:pos + n] = segment
        pos += n
    return PackedSequence(input_ids, segment_ids, loss_mask_from_segments(segment_ids), list(pieces))


class BestFitPacker:
    """Online best-fit packing of documents into windows of ``seq_len`` tokens (see the module doc)."""

    def __init__(self, seq_len: int, pad_id: int, buffer_sequences: int = 1024, max_open_sequences: int = 64,
                 min_piece_tokens: int = 32):
        self.seq_len, self.pad_id, self.min_piece = seq_len, pad_id, min_piece_tokens
        self.buffer_tokens = buffer_sequences * seq_len
        self.max_open = max_open_sequences
        self._buffer: List[Document] = []
        self._buffered = 0
        self._room: List[Tuple[int, int]] = []    # sorted (free tokens, sequence number) of open sequences
        self._open: dict = {}                     # sequence number -> pieces
        self._docs: dict = {}                     # sequence number -> doc_ids of its pieces
        self._next = 0
        self._closed: List[PackedSequence] = []

    def add(self, document: Document) -> List[PackedSequence]:
        """Queue a document; returns the sequences that closed meanwhile."""
        self._buffer.append(document)
        self._buffered += document.remaining
        if self._buffered >= self.buffer_tokens:
            self._place_buffer()
        return self._drain()

    def finish(self) -> List[PackedSequence]:
        self._place_buffer()
        while self._room:
            self._close(self._room.pop(0)[1])
        return self._drain()

    def _place_buffer(self) -> None:
        whole = [d for d in self._buffer if d.remaining <= self.seq_len]
        # Longest first; ties keep arrival order, so the packing is deterministic.
        for document in sorted(whole, key=lambda d: -d.remaining):
            self._best_fit(document.take(self.seq_len, fresh=True), document.doc_id)
        for document in self._buffer:
            while not document.done:
                self._place_part(document)
        self._buffer, self._buffered = [], 0
        while len(self._room) > self.max_open:
            self._close(self._room.pop(0)[1])

    def _place_part(self, document: Document) -> None:
        """The rest of a long document: best-fit if it fits somewhere, else the largest gap first."""
        key = document.doc_id
        largest = next((i for i in reversed(range(len(self._room))) if key not in self._docs[self._room[i][1]]), None)
        if largest is not None and document.remaining <= self._room[largest][0]:
            self._best_fit(document.take(document.remaining, fresh=False), key)
            return
        if largest is not None and self._room[largest][0] >= self.min_piece:
            free, number = self._room[largest]
            piece = document.take(free, fresh=False)
            if piece is not None:
                del self._room[largest]
                self._put(piece, free, number, key)
                return
        self._put(document.take(self.seq_len, fresh=True), self.seq_len, self._new(), key)

    def _best_fit(self, piece: Piece, key: str) -> None:
        """Into the open sequence with the least room that takes the piece and holds no piece of its
        document, else into a new one."""
        slot = bisect.bisect_left(self._room, (len(piece.tokens), -1))
        while slot < len(self._room) and key in self._docs[self._room[slot][1]]:
            slot += 1
        if slot < len(self._room):
            free, number = self._room.pop(slot)
        else:
            free, number = self.seq_len, self._new()
        self._put(piece, free, number, key)

    def _new(self) -> int:
        self._next += 1
        self._open[self._next], self._docs[self._next] = [], set()
        return self._next

    def _put(self, piece: Piece, free: int, number: int, key: str) -> None:
        self._open[number].append(piece)
        self._docs[number].add(key)
        left = free - len(piece.tokens)
        if left == 0:
            self._close(number)
        else:
            bisect.insort(self._room, (left, number))

    def _close(self, number: int) -> None:
        del self._docs[number]
        self._closed.append(assemble(self._open.pop(number), self.seq_len, self.pad_id))

    def _drain(self) -> List[PackedSequence]:
        closed, self._closed = self._closed, []
        return closed


class SequencePacker:
    """Tokenize documents in batches and pack them; one per (Spark task, bucket)."""

    def __init__(self, cfg: PackConfig, tokenizer: Tokenizer):
        self.cfg, self.tokenizer = cfg, tokenizer
        pad_id = tokenizer.eos_id if cfg.pad_id is None else cfg.pad_id
        self.packer = BestFitPacker(cfg.seq_len, pad_id, cfg.buffer_sequences, cfg.max_open_sequences,
                                    cfg.min_piece_tokens)

    def add_document(self, ids: np.ndarray, text: str, sample_id: str, domain: str,
                     doc_id: Optional[str] = None) -> List[PackedSequence]:
        """Queue a tokenized, non-empty document (finding its boundaries may raise); returns closed
        sequences. Copies of one document share ``doc_id`` and never share a sequence."""
        return self.packer.add(Document(ids, text, sample_id, domain, self.tokenizer, self.cfg, doc_id))

    def finish(self) -> List[PackedSequence]:
        return self.packer.finish()
