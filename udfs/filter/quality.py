"""Quality signals of one document, computed in a single pass over its lines and tokens.

The signals are those of the Gopher quality and repetition rules (Rae et al. 2021, table A1), C4
(Raffel et al. 2020) and FineWeb (Penedo et al. 2024) as datatrove implements them, plus a
simpler table of five thresholds, the ``simple`` ruleset (character count, character repetition
ratio, special-symbol fraction, mean sentence length, digit fraction). They are stored as columns
so thresholds can change without recomputing; the rules that read them live in ``udfs/filter/rules.py``.

Words. Tokens are runs of letters/marks/digits (words), or runs of other non-space characters
(punctuation and symbols, which spaCy, and so datatrove, also makes tokens of); the n-gram and
per-token ratios run over all tokens, word counts over words. Scripts written without spaces between
words (Han, kana, Thai, Lao, Khmer, Myanmar, Tibetan, Yi, Javanese, Tai Tham) give one token per character, so a Chinese page
has as many "words" as characters and is not rejected as too short; ``mean_word_length`` is null for
such text (a character is not a word), which switches the word-length rule off for it.

Where this differs from datatrove (each is deliberate):
- ``alpha_word_frac`` counts whitespace-separated words, as the Gopher paper does; datatrove counts
  every spaCy token, so each comma is a "word" without letters, and 22 % of Moby-Dick's paragraphs
  fall below 0.8;
- line fractions use non-blank lines as the denominator (datatrove's Gopher counts blank lines too),
  and a line ending in ``."`` or ``?)`` ends in punctuation (FineWeb's check misses dialogue: it
  rejected 27 % of Emma);
- the top n-gram fractions count only an n-gram that occurs at least twice (datatrove counts the
  first n-gram of a 10-word sentence as "repeated" and rejects it);
- stop words are matched case-insensitively and only for languages that have a list;
- C4's lines are judged by CJK-aware word counts that split at the Ethiopic wordspace as at a space,
  and the text is never rewritten (C4 drops javascript/policy lines; here they only do not count
  towards ``c4_sentences``).
A signal that is undefined for a document (a ratio over zero lines, words or characters) is null,
and a rule never fires on a null signal.

``compute_signals_reference`` below is the definition, in Python; ``compute_signals``, which the
filter calls, gives the same values from compiled code (``udfs/filter/_quality_signals.pyx``; its cost per
page is in ``bench/profiling/e2e_profile.py``), built by ``pip install`` (tests/filter/test_quality_compiled.py compares the two).
"""
from __future__ import annotations

import re
import sys
import unicodedata
from typing import Dict, FrozenSet, List, Optional, Sequence

import numpy as np
import regex

from udfs.common.table_cache import cached_arrays
from udfs.common.worker import worker_resource

try:
    from udfs.filter import _quality_signals
except ImportError as exc:  # a checkout that pip has not built, or a shipped udfs/ without the .so
    raise ImportError(
        "corpusmill's compiled quality signals (udfs/filter/_quality_signals.pyx) are not built: install "
        "corpusmill with pip (`pip install -e .` in the clone, as scripts/bootstrap.sh does), which "
        "compiles them; on a cluster, build the clone before `python -m jobs.package`") from exc

# Scripts written without spaces between words: every character is a word.
_UNSEGMENTED = (r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}\p{Tibetan}\p{Yi}"
                r"\p{Javanese}\p{Tai_Tham}")
_UNSEGMENTED_CHAR = regex.compile(rf"[{_UNSEGMENTED}]\p{{M}}*")
# Tokens: words (runs of letters, marks, digits), or runs of punctuation/symbols like the spaCy
# tokens datatrove counts. The second form also splits unsegmented scripts into characters; it is
# slower, so it is used only for text that contains such characters.
_SYMBOLS = regex.compile(r"[^\w\s]+")
_TOKEN = regex.compile(r"\w+|[^\w\s]+")
_TOKEN_UNSEGMENTED = regex.compile(rf"{_UNSEGMENTED_CHAR.pattern}|[^\W{_UNSEGMENTED}]+|[^\w\s]+")
# A whitespace-separated word without a single letter (Gopher's "alphabetic words" rule).
_NON_ALPHA_WORD = regex.compile(r"(?<!\S)[^\s\p{L}]+(?!\S)")
# Sentence-final punctuation, as in FineWeb's "line ends in punctuation" (closing quotes/brackets after it
# may follow): Unicode's Sentence_Terminal property, so that every script's full stop counts (the Khmer
# khan, Chakma and Balinese dandas, Javanese pada lingsa ...). Planes 0 and 1 hold every script's letters
# and punctuation (planes 2 and 3 are Han ideographs, the rest tags and private use). Tibetan and
# Dzongkha end a sentence with a shad (U+0F0D..U+0F12), which the property leaves out because a shad
# also closes a clause; a line of Tibetan prose ends in one all the same.
_SCRIPT_PLANES_END = 0x20000
_SENTENCE_TERMINALS = "".join(regex.findall(r"\p{Sentence_Terminal}", "".join(map(chr, range(_SCRIPT_PLANES_END)))))
_TIBETAN_SHADS = "".join(map(chr, range(0x0F0D, 0x0F13)))
TERMINAL_PUNCTUATION = _SENTENCE_TERMINALS + _TIBETAN_SHADS
_TERMINAL_TUPLE = tuple(TERMINAL_PUNCTUATION)
# A sentence ends at terminal punctuation (plus closing quotes/brackets) before a space or the end
# of the line, or at full-width CJK terminal punctuation, which needs no space after it.
_CLOSING = "\"'’”»)]」』）"
_SENTENCE_END_CHAR = f"[{regex.escape(TERMINAL_PUNCTUATION)}…]"
_FULL_WIDTH_END_CHAR = "[。！？｡]"
_CLOSING_CHAR = f"[{regex.escape(_CLOSING)}]"
# Ge'ez-script text (Tigrinya, Amharic) often types its full stop `።` as two wordspaces `፡፡`: a wordspace
# beside another ends a sentence and a line as `።` does (a lone one separates words, WORD_SEPARATORS).
DOUBLED_FULL_STOP = "\u1361"
_DOUBLED_FULL_STOP_CHAR = rf"{DOUBLED_FULL_STOP}(?={DOUBLED_FULL_STOP})|(?<={DOUBLED_FULL_STOP}){DOUBLED_FULL_STOP}"
_LINE_END_PUNCTUATION = _TERMINAL_TUPLE + (2 * DOUBLED_FULL_STOP,)
_SENTENCE_END = regex.compile(rf"(?:{_SENTENCE_END_CHAR}|{_DOUBLED_FULL_STOP_CHAR})+{_CLOSING_CHAR}*(?=\s|$)"
                              rf"|{_FULL_WIDTH_END_CHAR}+{_CLOSING_CHAR}*")
_WORD_CHAR_FROM_END = regex.compile(r"[\p{L}\p{N}]", regex.REVERSE)
_DIGIT = regex.compile(r"\d")
# Punctuation a sentence normally contains; everything else that is not a letter, mark, digit or
# space is a "special symbol" (ads and mojibake are full of them).
COMMON_PUNCTUATION = ".,;:!?'\"()[]-/&%，。、；：！？“”‘’（）《》〈〉【】「」『』…—–·«»„"
_SPECIAL = regex.compile(rf"[^\p{{L}}\p{{M}}\p{{N}}\s{regex.escape(COMMON_PUNCTUATION)}]")
_PARAGRAPH_BREAK = regex.compile(r"\n[^\S\n]*\n\s*")
# C4's line-level markers (datatrove C4QualityFilter).
POLICY_SUBSTRINGS = ("terms of use", "privacy policy", "cookie policy", "uses cookies",
                     "use of cookies", "use cookies")
JAVASCRIPT = "javascript"
LOREM_IPSUM = "lorem ipsum"
C4_MIN_WORDS_PER_LINE = 3
# Word separators other than spaces, which C4's words per line are split at too: the Ethiopic wordspace
# (the character whose doubling is a full stop above), with which Ge'ez-script text may separate its words
# without any space.
WORD_SEPARATORS = DOUBLED_FULL_STOP
_WORD_SEPARATOR_TO_SPACE = str.maketrans(dict.fromkeys(WORD_SEPARATORS, " "))
C4_MAX_WORD_LENGTH = 1000
# FineWeb's short line, in display columns: a wide or fullwidth character (Han, kana, Hangul) takes two,
# as on a screen, so that a line of 17 Chinese characters, a whole sentence, is not short.
FINEWEB_SHORT_LINE_CHARS = 30
_WIDE_CHAR = regex.compile(r"[\p{East_Asian_Width=Wide}\p{East_Asian_Width=Fullwidth}]")
# C4 rejects any "{" as code. A word or phrase in braces, between spaces (or a line's ends, or a
# following punctuation mark), is a translator's or editor's gloss (`समान-वेतनमानं {पारिश्रमिकं}`) and
# not code: LaTeX (`\frac{a}`, `x^{2}`), templates (`${name}`, `q={query}`, `{{cite}}`), blocks
# (`{ return x; }`) and JSON are not of that form.
_GLOSS_WORD = r"\p{L}[\p{L}\p{M}'\u2019-]*"
_GLOSS_FOLLOWER = ".,;:!?)]\u2026"
_GLOSS = regex.compile(rf"(?<!\S)\{{{_GLOSS_WORD}(?: {_GLOSS_WORD})*\}}(?=\s|$|[{regex.escape(_GLOSS_FOLLOWER)}])")
TOP_NGRAMS = (2, 3, 4)
DUP_NGRAMS = (5, 6, 7, 8, 9, 10)
# Multiplier of the polynomial n-gram hash (odd, so it is invertible mod 2**64).
_HASH_BASE = np.uint64(1_000_003)

# Column name -> kind ("int", "float", "bool"), in output order.
SIGNALS: Dict[str, str] = {
    "n_chars": "int",
    "n_words": "int",
    "n_lines": "int",
    "n_sentences": "int",
    "mean_word_length": "float",
    "mean_sentence_length": "float",
    "dup_line_frac": "float",
    "dup_line_char_frac": "float",
    "dup_para_frac": "float",
    "dup_para_char_frac": "float",
    **{f"top_{n}gram_char_frac": "float" for n in TOP_NGRAMS},
    **{f"dup_{n}gram_char_frac": "float" for n in DUP_NGRAMS},
    "hash_word_ratio": "float",
    "ellipsis_word_ratio": "float",
    "bullet_line_frac": "float",
    "ellipsis_line_frac": "float",
    "alpha_word_frac": "float",
    "stop_words": "int",
    "punct_line_frac": "float",
    "short_line_frac": "float",
    "newline_word_ratio": "float",
    "c4_sentences": "int",
    "lorem_ipsum": "bool",
    "curly_bracket": "bool",
    "javascript_line_frac": "float",
    "policy_line_frac": "float",
    "char_repetition_ratio": "float",
    "special_symbol_frac": "float",
    "digit_frac": "float",
}


# The character classes the compiled signals (udfs/filter/_quality_signals.pyx) read from a table, one bit
# each in this order, as the patterns above (and str.isspace, which str.split/strip use) define them.
CHAR_CLASSES = (
    ("word", r"\w"),
    ("space", r"\s"),
    ("py_space", None),  # str.isspace: stdlib re's \s
    ("letter", r"\p{L}"),
    ("mark", r"\p{M}"),
    ("letter_or_number", _WORD_CHAR_FROM_END.pattern),
    ("unsegmented", f"[{_UNSEGMENTED}]"),
    ("digit", _DIGIT.pattern),
    ("special", _SPECIAL.pattern),
    ("lower_to_ascii", None),  # not ASCII, but its str.lower() holds ASCII (KELVIN SIGN -> k)
    ("sentence_end", _SENTENCE_END_CHAR),
    ("terminal", f"[{regex.escape(TERMINAL_PUNCTUATION)}]"),
    ("closing", _CLOSING_CHAR),
    ("full_width_end", _FULL_WIDTH_END_CHAR),
    ("word_separator", f"[{WORD_SEPARATORS}]"),
    ("wide", _WIDE_CHAR.pattern),
)


def character_flags() -> np.ndarray:
    """Per code point (0 to 0x10FFFF), the bits of CHAR_CLASSES it belongs to (slow to build
    for every code point, so the table cache keeps it between processes, ``_compiled_signals``)."""
    every_char = np.arange(0x110000, dtype=np.uint32).tobytes().decode("utf-32-le", "surrogatepass")
    flags = np.zeros(len(every_char), dtype=np.uint16)
    for bit, (name, pattern) in enumerate(CHAR_CLASSES):
        if name == "py_space":
            runs = re.finditer(r"\s+", every_char)
        elif name == "lower_to_ascii":  # only a character that changes when lowercased can
            runs = (m for m in regex.finditer(r"(?![\x00-\x7f])\p{Changes_When_Lowercased}", every_char)
                    if any(c < "\x80" for c in m.group().lower()))
        else:
            runs = regex.finditer(f"(?:{pattern})+", every_char)
        for run in runs:
            flags[run.start():run.end()] |= 1 << bit
    return flags


def _ratio(numerator: float, denominator: float) -> Optional[float]:
    return numerator / denominator if denominator else None


def _duplicates(items: Sequence[str]):
    """(number of items seen before, characters in them), as Gopher counts duplicate lines."""
    seen = set()
    count = chars = 0
    for item in items:
        if item in seen:
            count += 1
            chars += len(item)
        else:
            seen.add(item)
    return count, chars


def count_sentences(line: str) -> int:
    """Sentences in one line: its sentence ends, plus an unterminated last sentence."""
    last_word_char = _WORD_CHAR_FROM_END.search(line)
    if last_word_char is None:
        return 0
    ends = [m.end() for m in _SENTENCE_END.finditer(line)]
    return len(ends) + (not ends or last_word_char.start() >= ends[-1])


class _NGrams:
    """The n-grams of a token sequence as 64-bit polynomial hashes, built up one n at a time."""

    def __init__(self, tokens: List[str]):
        self.tokens = tokens
        self.token_hashes = np.fromiter(map(hash, tokens), dtype=np.int64, count=len(tokens)).view(np.uint64)
        self.cumulative_len = np.concatenate(([0], np.cumsum(np.fromiter(map(len, tokens), dtype=np.int64,
                                                                          count=len(tokens)))))
        self.n = 1
        self.hashes = self.token_hashes

    def grow_to(self, n: int) -> np.ndarray:
        with np.errstate(over="ignore"):  # wrap-around is the point of the hash
            while self.n < n:
                self.n += 1
                self.hashes = self.hashes[:-1] * _HASH_BASE + self.token_hashes[self.n - 1:]
        return self.hashes

    def chars(self, start: int, n: int) -> int:
        return int(self.cumulative_len[start + n] - self.cumulative_len[start])

    def top_repeated_chars(self, n: int) -> int:
        """Characters covered by the most frequent n-gram if it repeats (ties: the earliest).

        Like datatrove, the n-gram is measured joined with spaces, except in unsegmented scripts,
        which have no spaces to count.
        """
        hashes = self.grow_to(n)
        if not len(hashes):
            return 0
        _, first, counts = np.unique(hashes, return_index=True, return_counts=True)
        top = counts.max()
        if top < 2:
            return 0
        start = int(first[counts == top].min())
        separators = 0 if _UNSEGMENTED_CHAR.match(self.tokens[start]) else n - 1
        return (self.chars(start, n) + separators) * int(top)

    def duplicated_chars(self, n: int) -> int:
        """Characters in n-grams seen before, skipping past each repeat (datatrove's scan).

        Positions whose n-gram never occurred earlier cannot be repeats, so the scan jumps from
        one candidate to the next and adds the n-grams in between to ``seen`` in bulk.
        """
        hashes = self.grow_to(n)
        if not len(hashes):
            return 0
        _, first = np.unique(hashes, return_index=True)
        candidate = np.ones(len(hashes), dtype=bool)
        candidate[first] = False
        candidates = np.flatnonzero(candidate).tolist()
        if not candidates:
            return 0
        values = hashes.tolist()
        seen = set()
        repeated = position = 0
        for c in candidates:
            if c < position:  # inside a skipped repeat
                continue
            seen.update(values[position:c])
            if values[c] in seen:
                repeated += self.chars(c, n)
                position = c + n
            else:
                seen.add(values[c])
                position = c + 1
        return repeated


def compute_signals(text: str, stop_words: Optional[FrozenSet[str]] = None) -> dict:
    """All signals of ``text``; ``stop_words`` is the list for the document's language (None: no list).

    Compiled code with the same values as ``compute_signals_reference``.
    """
    names, computer = _compiled_signals()
    return dict(zip(names, computer.compute(text, stop_words)))


def _compiled_signals():
    """The names of the signals, in the reference's order, and the compiled computer; once per process."""
    return worker_resource("filter.quality_signals", "", _compile_signals)


def _compile_signals():
    # The table depends on the character classes and the Unicode data of regex and Python.
    key = f"character-flags-v1:{CHAR_CLASSES!r}:{regex.__version__}:{unicodedata.unidata_version}:{sys.version}"
    flags = cached_arrays(key, lambda: {"flags": character_flags()})["flags"]
    computer = _quality_signals.SignalComputer(
        flags, POLICY_SUBSTRINGS, JAVASCRIPT, LOREM_IPSUM, C4_MIN_WORDS_PER_LINE,
        C4_MAX_WORD_LENGTH, FINEWEB_SHORT_LINE_CHARS, TOP_NGRAMS, DUP_NGRAMS, DOUBLED_FULL_STOP,
        _GLOSS_FOLLOWER)
    return tuple(compute_signals_reference("")), computer


def compute_signals_reference(text: str, stop_words: Optional[FrozenSet[str]] = None) -> dict:
    """All signals of ``text`` in Python: the definition ``compute_signals`` reproduces."""
    lines: List[str] = []
    n_sentences = c4_sentences = 0
    bullets = ellipsis_lines = punct_lines = short_lines = javascript_lines = policy_lines = 0
    lorem_ipsum = curly_bracket = False
    unsegmented = _UNSEGMENTED_CHAR.search(text) is not None
    for raw_line in text.split("\n"):
        line = raw_line.strip()
        if not line:
            continue
        lines.append(line)
        sentences = count_sentences(line)
        n_sentences += sentences
        bullets += line.startswith(("•", "-"))
        ellipsis_lines += line.endswith(("...", "…"))
        punct_lines += line.rstrip(_CLOSING).endswith(_LINE_END_PUNCTUATION)
        short_lines += len(line) + len(_WIDE_CHAR.findall(line)) <= FINEWEB_SHORT_LINE_CHARS
        lower = line.lower()
        javascript = JAVASCRIPT in lower
        policy = any(p in lower for p in POLICY_SUBSTRINGS)
        javascript_lines += javascript
        policy_lines += policy
        # C4 judges a line only if it has enough words and no absurdly long "word" (minified code).
        words = line.translate(_WORD_SEPARATOR_TO_SPACE).split()
        n_line_words = len(words) + (len(_UNSEGMENTED_CHAR.findall(line)) if unsegmented else 0)
        if n_line_words < C4_MIN_WORDS_PER_LINE or (
                len(line) > C4_MAX_WORD_LENGTH and any(len(w) > C4_MAX_WORD_LENGTH for w in words)):
            continue
        lorem_ipsum = lorem_ipsum or LOREM_IPSUM in lower
        if javascript:
            continue
        curly_bracket = curly_bracket or ("{" in line and "{" in _GLOSS.sub("", line))
        if not policy:
            c4_sentences += sentences

    tokens = (_TOKEN_UNSEGMENTED if unsegmented else _TOKEN).findall(text)
    symbols = _SYMBOLS.findall(text)
    unsegmented_chars = _UNSEGMENTED_CHAR.findall(text) if unsegmented else []
    n_words = len(tokens) - len(symbols)
    n_spaced = n_words - len(unsegmented_chars)
    spaced_chars = sum(map(len, tokens)) - sum(map(len, symbols)) - sum(map(len, unsegmented_chars))
    n_whitespace_words = len(text.split())
    n_chars = len(text)
    n_tokens = len(tokens)
    n_lines = len(lines)
    line_dups, line_dup_chars = _duplicates(lines)
    paragraphs = [p.strip() for p in _PARAGRAPH_BREAK.split(text.strip())] if text.strip() else []
    para_dups, para_dup_chars = _duplicates(paragraphs)

    signals = {
        "n_chars": n_chars,
        "n_words": n_words,
        "n_lines": n_lines,
        "n_sentences": n_sentences,
        # Undefined when most words are characters of an unsegmented script.
        "mean_word_length": spaced_chars / n_spaced if n_spaced and 2 * n_spaced >= n_words else None,
        "mean_sentence_length": _ratio(n_words, n_sentences),
        "dup_line_frac": _ratio(line_dups, n_lines),
        "dup_line_char_frac": _ratio(line_dup_chars, n_chars),
        "dup_para_frac": _ratio(para_dups, len(paragraphs)),
        "dup_para_char_frac": _ratio(para_dup_chars, n_chars),
    }
    ngrams = _NGrams(tokens)
    # An n-gram repeats only if its (n-1)-gram prefix does: after the first n without a repeat,
    # every longer n has none either.
    repeats = True
    for n in TOP_NGRAMS:
        chars = ngrams.top_repeated_chars(n) if repeats else 0
        repeats = chars > 0
        signals[f"top_{n}gram_char_frac"] = _ratio(chars, n_chars)
    for n in DUP_NGRAMS:
        chars = ngrams.duplicated_chars(n) if repeats else 0
        repeats = chars > 0
        signals[f"dup_{n}gram_char_frac"] = _ratio(chars, n_chars)
    signals.update({
        "hash_word_ratio": _ratio(text.count("#"), n_tokens),
        "ellipsis_word_ratio": _ratio(text.count("...") + text.count("…"), n_tokens),
        "bullet_line_frac": _ratio(bullets, n_lines),
        "ellipsis_line_frac": _ratio(ellipsis_lines, n_lines),
        # Whitespace-separated words, and characters of unsegmented scripts, that contain a letter.
        "alpha_word_frac": _ratio(n_whitespace_words + len(unsegmented_chars) - len(_NON_ALPHA_WORD.findall(text)),
                                  n_whitespace_words + len(unsegmented_chars)),
        "stop_words": (len(stop_words.intersection(map(str.lower, tokens)))
                       if stop_words is not None else None),
        "punct_line_frac": _ratio(punct_lines, n_lines),
        "short_line_frac": _ratio(short_lines, n_lines),
        "newline_word_ratio": _ratio(text.count("\n"), n_tokens),
        "c4_sentences": c4_sentences,
        "lorem_ipsum": lorem_ipsum,
        "curly_bracket": curly_bracket,
        "javascript_line_frac": _ratio(javascript_lines, n_lines),
        "policy_line_frac": _ratio(policy_lines, n_lines),
        "char_repetition_ratio": (1.0 - len(set(text)) / n_chars) if n_chars else None,
        "special_symbol_frac": _ratio(len(_SPECIAL.findall(text)), n_chars),
        "digit_frac": _ratio(len(_DIGIT.findall(text)), n_chars),
    })
    return signals
