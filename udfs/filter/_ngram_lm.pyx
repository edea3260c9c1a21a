# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The hot path of ``udfs/filter/ngram_lm.py`` in compiled code, with the same results.

* ``Tokenizer``: the scan of ``udfs.filter.ngram_lm.tokenize_reference``'s regular expression over
  normalised, lowercased text, one code point at a time. Its character classes are those of Python's
  ``re`` for str patterns (``\\w``: ``Py_UNICODE_ISALNUM`` or ``_``; ``\\d``: ``Py_UNICODE_ISDECIMAL``;
  ``\\s``: ``Py_UNICODE_ISSPACE``), so the two cannot disagree on a character.
* ``NgramTables``: ``NgramModel``'s n-gram hashes in open-addressing hash tables, scored one token at a
  time with the numpy reader's rule (the longest n-gram present gives the probability, plus the backoff
  of each longer context missed), adding in the same order, so the values are the same to the bit.
  ``document_sums`` scans a document with ``Tokenizer``'s own step and finds each token's id in a table
  of the vocabulary's code points, making no Python string or list per token.
"""
cimport cython
from cpython.dict cimport PyDict_GetItem
from cpython.ref cimport PyObject
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ
from libc.stdint cimport uint64_t
from libc.stdlib cimport calloc, free, malloc

import numpy as np

cdef extern from "Python.h":
    bint Py_UNICODE_ISDECIMAL(Py_UCS4 ch)
    bint Py_UNICODE_ISDIGIT(Py_UCS4 ch)
    bint Py_UNICODE_ISALNUM(Py_UCS4 ch)
    bint Py_UNICODE_ISSPACE(Py_UCS4 ch)

# What the scan does at a character (the alternatives of tokenize_reference's regex, in its order).
cdef enum:
    SKIP = 0      # \s, and "_" (a word character no alternative takes)
    CJK = 1       # [CJK]: a token of its own
    LETTER = 2    # [^\W\d_CJK]+: a run
    DIGIT = 3     # \d+: a run
    MARK = 4      # [^\w\s]: a token of its own

# What ``Tokenizer.next_token`` found.
cdef enum:
    TOKEN = 0
    LINE_END = 1  # a "\n"
    TEXT_END = 2

cdef unsigned char ASCII_CLASS[128]


cdef inline int unicode_class(Py_UCS4 c) noexcept:
    """The class of a code point outside the CJK ranges, as Python's re sees it."""
    if Py_UNICODE_ISDECIMAL(c):
        return DIGIT
    if c == u"_":
        return SKIP
    if Py_UNICODE_ISALNUM(c):
        return LETTER
    if Py_UNICODE_ISSPACE(c):
        return SKIP
    return MARK


for _c in range(128):
    ASCII_CLASS[_c] = unicode_class(<Py_UCS4>_c)


@cython.final  # its cdef methods are called directly, not through a table, in NgramTables' loop too
cdef class Tokenizer:
    """Tokens of normalised, lowercased text. ``cjk_ranges``: (first, last) code points of the
    scripts whose every character is a token."""
    cdef Py_UCS4* cjk_first
    cdef Py_UCS4* cjk_last
    cdef Py_ssize_t cjk_count
    cdef str zero

    def __cinit__(self, cjk_ranges):
        ranges = list(cjk_ranges)
        self.cjk_count = len(ranges)
        self.cjk_first = <Py_UCS4*>malloc(max(1, self.cjk_count) * sizeof(Py_UCS4))
        self.cjk_last = <Py_UCS4*>malloc(max(1, self.cjk_count) * sizeof(Py_UCS4))
        if self.cjk_first == NULL or self.cjk_last == NULL:
            raise MemoryError()
        for i, (first, last) in enumerate(ranges):
            self.cjk_first[i] = first
            self.cjk_last[i] = last
        self.zero = "0"

    def __dealloc__(self):
        free(self.cjk_first)
        free(self.cjk_last)

    cdef inline int char_class(self, Py_UCS4 c) noexcept:
        cdef Py_ssize_t i
        if c < 128:
            return ASCII_CLASS[c]
        for i in range(self.cjk_count):
            if self.cjk_first[i] <= c <= self.cjk_last[i]:
                return CJK
        return unicode_class(c)

    cdef inline int next_token(self, int kind, const void* data, Py_ssize_t n, Py_ssize_t* start,
                               Py_ssize_t* end) noexcept:
        """The step of every scan: from ``end[0]`` on, past what no token takes, the next token
        (``start[0]:end[0]``, ``TOKEN``), line end (``end[0]`` past it, ``LINE_END``) or ``TEXT_END``."""
        cdef Py_ssize_t i = end[0]
        cdef Py_UCS4 c
        cdef int cls
        while i < n:
            c = PyUnicode_READ(kind, data, i)
            if c == u"\n":
                end[0] = i + 1
                return LINE_END
            cls = self.char_class(c)
            if cls != SKIP:
                start[0] = i
                i += 1
                if cls == LETTER or cls == DIGIT:
                    while i < n and self.char_class(PyUnicode_READ(kind, data, i)) == cls:
                        i += 1
                end[0] = i
                return TOKEN
            i += 1
        end[0] = n
        return TEXT_END

    cdef list scan(self, str text, bint by_line):
        """Tokens of ``text``; with ``by_line``, a list per line ("\\n") that has any."""
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), start = 0, end = 0
        cdef int kind = PyUnicode_KIND(text), step = TOKEN
        cdef const void* data = PyUnicode_DATA(text)
        cdef list lines = [], tokens = []
        while step != TEXT_END:
            step = self.next_token(kind, data, n, &start, &end)
            if step == TOKEN:
                tokens.append(self.zero if Py_UNICODE_ISDIGIT(PyUnicode_READ(kind, data, start))
                              else text[start:end])
            elif by_line and tokens:
                lines.append(tokens)
                tokens = []
        return lines if by_line else tokens

    def tokens(self, str text):
        """The tokens of ``text`` (one paragraph)."""
        return self.scan(text, False)

    def line_tokens(self, str text):
        """The tokens of each line of ``text`` that has any."""
        return self.scan(text, True)


def word_mask(list token_lists):
    """For each token of the lists, then each list's end: whether it is a word (its first character
    alphanumeric) or the end; False for punctuation marks."""
    cdef Py_ssize_t total = 0, k = 0
    cdef list tokens
    cdef str token
    for tokens in token_lists:
        total += len(tokens) + 1
    mask = np.empty(total, dtype=np.bool_)
    cdef unsigned char[::1] out = mask.view(np.uint8)
    for tokens in token_lists:
        for token in tokens:
            out[k] = Py_UNICODE_ISALNUM(token[0])
            k += 1
        out[k] = 1
        k += 1
    return mask


cdef struct Weights:  # a slot's log10 probability and backoff, read together
    double logp
    double bow


cdef uint64_t SLOT_MULTIPLIER = 0x9E3779B97F4A7C15ULL  # Fibonacci hashing of a key to its slot
cdef uint64_t FNV_OFFSET = 0xCBF29CE484222325ULL  # FNV-1a over a word's code points
cdef uint64_t FNV_PRIME = 0x100000001B3ULL


cdef inline uint64_t word_hash(int kind, const void* data, Py_ssize_t start, Py_ssize_t end) noexcept:
    """FNV-1a of the code points ``start:end``; never 0, which marks an empty slot."""
    cdef uint64_t h = FNV_OFFSET
    cdef Py_ssize_t j
    for j in range(start, end):
        h = (h ^ <uint64_t>PyUnicode_READ(kind, data, j)) * FNV_PRIME
    return h or 1


cdef class NgramTables:
    """Per order, the model's n-gram hashes (as ``udfs.filter.ngram_lm.hash_ngrams`` makes them) in an
    open-addressing hash table at most half full, with each slot's log10 probability and backoff side by
    side in an array beside it (read only on a hit, so a miss touches the keys alone; the backoff of a
    context is read where its probability was). Unigram keys are word id + 1,
    so they take the slot of their own value: a lookup without a collision. In a ``suffix_closed`` model
    (every n-gram's last n - 1 words are an n-gram of it too, as Kneser-Ney estimation leaves them), a
    position's search stops at the first order it misses: no longer n-gram can end there."""
    cdef int order
    cdef bint suffix_closed
    cdef uint64_t** keys  # per order; 0 marks an empty slot (no model n-gram hashes to 0: checked)
    cdef Weights** weights
    cdef uint64_t* masks
    cdef int* shifts
    cdef uint64_t* powers
    cdef dict vocab
    cdef Py_ssize_t unk, bos, eos, zero
    # The vocabulary by its code points: per slot, a word's hash (0: empty), id, and where its code
    # points lie in word_chars.
    cdef uint64_t* word_hashes
    cdef Py_ssize_t* word_ids
    cdef Py_ssize_t* word_starts
    cdef Py_ssize_t* word_lengths
    cdef Py_UCS4* word_chars
    cdef uint64_t word_mask
    cdef int word_shift

    def __cinit__(self, keys, logp, bow, powers, dict vocab, Py_ssize_t unk, Py_ssize_t bos, Py_ssize_t eos,
                  bint suffix_closed):
        cdef int n, bits
        cdef Py_ssize_t i, count, size
        cdef uint64_t key, slot
        cdef const uint64_t[::1] k
        cdef const double[::1] p, b
        self.order = len(keys)
        self.suffix_closed = suffix_closed
        self.vocab = vocab
        self.unk, self.bos, self.eos = unk, bos, eos
        self.zero = vocab.get("0", unk)  # every digit run is the token "0"
        self.index_words(vocab)
        self.keys = <uint64_t**>calloc(self.order, sizeof(uint64_t*))
        self.weights = <Weights**>calloc(self.order, sizeof(Weights*))
        self.masks = <uint64_t*>malloc(self.order * sizeof(uint64_t))
        self.shifts = <int*>malloc(self.order * sizeof(int))
        self.powers = <uint64_t*>malloc(self.order * sizeof(uint64_t))
        if (self.keys == NULL or self.weights == NULL or self.masks == NULL
                or self.shifts == NULL or self.powers == NULL):
            raise MemoryError()
        for n in range(self.order):
            k, p, b = keys[n], logp[n], bow[n]
            self.powers[n] = powers[n]
            count = k.shape[0]
            bits = 1
            while (<Py_ssize_t>1 << bits) < 2 * count + 1:
                bits += 1
            size = <Py_ssize_t>1 << bits
            self.masks[n] = size - 1
            self.shifts[n] = 64 - bits
            self.keys[n] = <uint64_t*>calloc(size, sizeof(uint64_t))
            self.weights[n] = <Weights*>calloc(size, sizeof(Weights))
            if self.keys[n] == NULL or self.weights[n] == NULL:
                raise MemoryError()
            for i in range(count):
                key = k[i]
                if key == 0:
                    raise ValueError(f"an {n + 1}-gram hashes to 0; cannot index this model")
                slot = self.slot(n, key)
                while self.keys[n][slot] != 0:
                    slot = (slot + 1) & self.masks[n]
                self.keys[n][slot] = key
                self.weights[n][slot].logp = p[i]
                self.weights[n][slot].bow = b[i]

    def __dealloc__(self):
        cdef int n
        for n in range(self.order):  # free(NULL) is a no-op: tables not yet made are NULL (calloc)
            if self.keys != NULL:
                free(self.keys[n])
            if self.weights != NULL:
                free(self.weights[n])
        free(self.keys)
        free(self.weights)
        free(self.masks)
        free(self.shifts)
        free(self.powers)
        free(self.word_hashes)
        free(self.word_ids)
        free(self.word_starts)
        free(self.word_lengths)
        free(self.word_chars)

    cdef void index_words(self, dict vocab) except *:
        cdef Py_ssize_t size, at = 0, j, length
        cdef uint64_t h, slot
        cdef int bits = 1
        cdef str word
        while (<Py_ssize_t>1 << bits) < 2 * len(vocab) + 1:
            bits += 1
        size = <Py_ssize_t>1 << bits
        self.word_mask, self.word_shift = size - 1, 64 - bits
        self.word_hashes = <uint64_t*>calloc(size, sizeof(uint64_t))
        self.word_ids = <Py_ssize_t*>calloc(size, sizeof(Py_ssize_t))
        self.word_starts = <Py_ssize_t*>calloc(size, sizeof(Py_ssize_t))
        self.word_lengths = <Py_ssize_t*>calloc(size, sizeof(Py_ssize_t))
        self.word_chars = <Py_UCS4*>malloc(max(1, sum(len(w) for w in vocab)) * sizeof(Py_UCS4))
        if (self.word_hashes == NULL or self.word_ids == NULL or self.word_starts == NULL
                or self.word_lengths == NULL or self.word_chars == NULL):
            raise MemoryError()
        for word, word_id in vocab.items():
            length = len(word)
            for j in range(length):
                self.word_chars[at + j] = word[j]
            h = word_hash(PyUnicode_KIND(word), PyUnicode_DATA(word), 0, length)
            slot = (h * SLOT_MULTIPLIER) >> self.word_shift
            while self.word_hashes[slot] != 0:
                slot = (slot + 1) & self.word_mask
            self.word_hashes[slot], self.word_ids[slot] = h, word_id
            self.word_starts[slot], self.word_lengths[slot] = at, length
            at += length

    cdef inline Py_ssize_t word_id(self, int kind, const void* data, Py_ssize_t start, Py_ssize_t end) noexcept:
        """The id of the text's code points ``start:end``, or ``unk``."""
        cdef uint64_t h = word_hash(kind, data, start, end), slot = (h * SLOT_MULTIPLIER) >> self.word_shift
        cdef Py_ssize_t j, length = end - start
        cdef Py_UCS4* chars
        while self.word_hashes[slot] != 0:
            if self.word_hashes[slot] == h and self.word_lengths[slot] == length:
                chars = &self.word_chars[self.word_starts[slot]]
                for j in range(length):
                    if chars[j] != PyUnicode_READ(kind, data, start + j):
                        break
                else:
                    return self.word_ids[slot]
            slot = (slot + 1) & self.word_mask
        return self.unk

    cdef inline uint64_t slot(self, int n, uint64_t key) noexcept:
        return key & self.masks[0] if n == 0 else (key * SLOT_MULTIPLIER) >> self.shifts[n]

    cdef inline Py_ssize_t find(self, int n, uint64_t key) noexcept:
        """Order ``n + 1``'s slot for ``key``, or -1."""
        cdef uint64_t* table = self.keys[n]
        cdef uint64_t slot = self.slot(n, key)
        if key == 0:
            return -1
        while table[slot] != key:
            if table[slot] == 0:
                return -1
            slot = (slot + 1) & self.masks[n]
        return slot

    cdef void score_ids(self, const Py_ssize_t* ids, Py_ssize_t length, Py_ssize_t* current,
                        Py_ssize_t* previous, double* scores) noexcept:
        """log10 probability of ``ids[1:length]`` read as a sentence (``ids[0]`` is ``<s>``) into
        ``scores``; ``current`` and ``previous``: ``order`` slots each, scratch."""
        cdef Py_ssize_t j, slot
        cdef Py_ssize_t* swap
        cdef int n, m, orders, longest
        cdef uint64_t key
        cdef double logprob
        for j in range(length):
            orders = min(self.order, j + 1)
            key = 0
            logprob = 0.0
            longest = 0
            for n in range(orders):  # the longest n-gram present gives the probability
                key += <uint64_t>(ids[j - n] + 1) * self.powers[n]
                slot = self.find(n, key)
                current[n] = slot
                if slot >= 0:
                    logprob = self.weights[n][slot].logp
                    longest = n + 1
                elif self.suffix_closed:
                    for m in range(n + 1, orders):
                        current[m] = -1
                    break
            if j > 0:  # <s> is given, not predicted
                for n in range(min(self.order - 1, j)):  # backoffs of the longer contexts missed
                    slot = previous[n]
                    if slot >= 0 and longest <= n + 1:
                        logprob += self.weights[n][slot].bow
                scores[j - 1] = logprob
            swap = previous
            previous = current
            current = swap

    def token_scores(self, list token_lists):
        """log10 probability of every token and each ``</s>`` of the token lists read as sentences
        (``<s>`` … ``</s>``), concatenated: ``NgramModel.token_scores``."""
        cdef Py_ssize_t total = 0, longest_list = 0, length, k = 0, t
        cdef list tokens
        cdef PyObject* found
        for tokens in token_lists:
            total += len(tokens) + 1
            longest_list = max(longest_list, len(tokens))
        out = np.empty(total)
        cdef double[::1] scores = out
        cdef Py_ssize_t* ids = <Py_ssize_t*>malloc((longest_list + 2) * sizeof(Py_ssize_t))
        # Slots (-1: absent) of the n-grams ending at the current and at the previous position, per order.
        cdef Py_ssize_t* current = <Py_ssize_t*>malloc(self.order * sizeof(Py_ssize_t))
        cdef Py_ssize_t* previous = <Py_ssize_t*>malloc(self.order * sizeof(Py_ssize_t))
        if ids == NULL or current == NULL or previous == NULL:
            free(ids)
            free(current)
            free(previous)
            raise MemoryError()
        try:
            for tokens in token_lists:
                length = len(tokens) + 2
                ids[0] = self.bos
                for t in range(length - 2):
                    found = PyDict_GetItem(self.vocab, tokens[t])
                    ids[t + 1] = self.unk if found == NULL else <Py_ssize_t><object>found
                ids[length - 1] = self.eos
                self.score_ids(ids, length, current, previous, &scores[k])
                k += length - 1
        finally:
            free(ids)
            free(current)
            free(previous)
        return out

    cdef inline double unigram(self, Py_ssize_t word_id) noexcept:
        """log10 probability of the word alone (its unigram)."""
        cdef Py_ssize_t slot = self.find(0, <uint64_t>(word_id + 1) * self.powers[0])
        return self.weights[0][slot].logp if slot >= 0 else 0.0

    def document_sums(self, Tokenizer tokenizer, list texts, bint count_punctuation):
        """Per normalised, lowercased text: the sum of what ``token_scores`` gives the tokens and ends of
        ``tokenizer.line_tokens(text)``, punctuation marks left out unless ``count_punctuation`` (they
        are context only: ``word_mask``), added in their order, and how many were added; of those in
        the vocabulary, the sum of each one's score less its unigram's, and how many."""
        cdef Py_ssize_t d, n, start, end, m, j, count, known
        cdef Py_UCS4 c
        cdef int kind, step
        cdef const void* data
        cdef double total, gain
        cdef str text
        totals = np.zeros(len(texts))
        counts = np.zeros(len(texts), dtype=np.int64)
        gains = np.zeros(len(texts))
        known_counts = np.zeros(len(texts), dtype=np.int64)
        cdef double[::1] total_of = totals, gain_of = gains
        cdef long long[::1] count_of = counts, known_of = known_counts
        cdef Py_ssize_t longest = max([PyUnicode_GET_LENGTH(t) for t in texts], default=0) + 2
        # Per line: the ids (<s> first), whether each token is a word, and the scores
        cdef Py_ssize_t* ids = <Py_ssize_t*>malloc(longest * sizeof(Py_ssize_t))
        cdef unsigned char* word = <unsigned char*>malloc(longest)
        cdef double* scores = <double*>malloc(longest * sizeof(double))
        cdef Py_ssize_t* current = <Py_ssize_t*>malloc(self.order * sizeof(Py_ssize_t))
        cdef Py_ssize_t* previous = <Py_ssize_t*>malloc(self.order * sizeof(Py_ssize_t))
        if ids == NULL or word == NULL or scores == NULL or current == NULL or previous == NULL:
            free(ids)
            free(word)
            free(scores)
            free(current)
            free(previous)
            raise MemoryError()
        try:
            for d in range(len(texts)):
                text = texts[d]
                n, kind, data = PyUnicode_GET_LENGTH(text), PyUnicode_KIND(text), PyUnicode_DATA(text)
                total, count, gain, known, m, start, end, step = 0.0, 0, 0.0, 0, 1, 0, 0, TOKEN
                ids[0] = self.bos
                while step != TEXT_END:
                    step = tokenizer.next_token(kind, data, n, &start, &end)
                    if step == TOKEN:
                        c = PyUnicode_READ(kind, data, start)
                        ids[m] = self.zero if Py_UNICODE_ISDIGIT(c) else self.word_id(kind, data, start, end)
                        word[m] = Py_UNICODE_ISALNUM(c)
                        m += 1
                    elif m > 1:  # a line's end, or the text's: score the line's tokens
                        ids[m] = self.eos
                        word[m] = 1
                        self.score_ids(ids, m + 1, current, previous, scores)
                        for j in range(1, m + 1):
                            if count_punctuation or word[j]:
                                total += scores[j - 1]
                                count += 1
                                if ids[j] != self.unk:
                                    gain += scores[j - 1] - self.unigram(ids[j])
                                    known += 1
                        m = 1
                total_of[d], count_of[d], gain_of[d], known_of[d] = total, count, gain, known
        finally:
            free(ids)
            free(word)
            free(scores)
            free(current)
            free(previous)
        return totals, counts, gains, known_counts
