# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The quality signals of ``udfs/filter/quality.py`` in compiled code, with the same results.

``udfs.filter.quality.compute_signals_reference`` is the definition (and its docstring the rationale); this
module computes the same values in a few passes over the text's code points, without building a
Python object per line or token. The meaning of every character (word character, space, letter,
terminal punctuation, ...) comes from the table ``udfs.filter.quality`` builds once per process with the
very regular expressions the reference uses, so the two cannot disagree on a character class.

Equal lines, paragraphs and n-grams are found through 64-bit hashes: lines and paragraphs are then
compared character by character; n-grams, like the reference's, are taken equal when their hashes
are (a false match has a chance of about 2**-64 per pair).
"""
cimport cython
from cpython.mem cimport PyMem_Free
from libc.stdint cimport uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcmp

cdef extern from "Python.h":
    Py_UCS4* PyUnicode_AsUCS4Copy(object) except NULL

# Bits of the character table (udfs.filter.quality.CHAR_FLAGS names them in this order).
cdef enum:
    WORD = 1 << 0           # regex \w
    SPACE = 1 << 1          # regex \s
    PY_SPACE = 1 << 2       # str.isspace: what str.split() and str.strip() use
    LETTER = 1 << 3         # \p{L}
    MARK = 1 << 4           # \p{M}
    LETTER_OR_NUMBER = 1 << 5
    UNSEGMENTED = 1 << 6    # scripts written without spaces
    DIGIT = 1 << 7          # regex \d
    SPECIAL = 1 << 8        # a special symbol (udfs.filter.quality._SPECIAL)
    LOWER_TO_ASCII = 1 << 9  # not ASCII, but its str.lower() holds ASCII (KELVIN SIGN -> k)
    SENTENCE_END = 1 << 10  # terminal punctuation or an ellipsis (first branch of _SENTENCE_END)
    TERMINAL = 1 << 11      # terminal punctuation (line ends in punctuation)
    CLOSING = 1 << 12       # closing quotes and brackets
    FULL_WIDTH_END = 1 << 13  # CJK terminal punctuation that needs no space after it
    WORD_SEPARATOR = 1 << 14  # a word separator other than a space (C4's words per line)
    WIDE = 1 << 15          # East Asian Wide or Fullwidth: two columns of a line's width

cdef uint64_t HASH_BASE = 1000003  # the reference's n-gram polynomial multiplier
cdef uint64_t FNV_OFFSET = 0xCBF29CE484222325
cdef uint64_t FNV_PRIME = 0x100000001B3
cdef uint64_t MIX_1 = 0xBF58476D1CE4E5B9
cdef uint64_t MIX_2 = 0x94D049BB133111EB


cdef struct Span:
    Py_ssize_t start
    Py_ssize_t length


cdef struct Slot:
    uint64_t key
    Py_ssize_t first
    Py_ssize_t count  # 0: an empty slot


cdef inline uint64_t mix64(uint64_t x) noexcept nogil:
    """splitmix64's finaliser: spreads every input bit over the whole word."""
    x ^= x >> 30
    x *= MIX_1
    x ^= x >> 27
    x *= MIX_2
    x ^= x >> 31
    return x


cdef inline uint64_t hash_span(const Py_UCS4* buf, Py_ssize_t start, Py_ssize_t end) noexcept nogil:
    cdef uint64_t h = FNV_OFFSET  # FNV-1a over code points, then mixed
    cdef Py_ssize_t i
    for i in range(start, end):
        h = (h ^ <uint64_t>buf[i]) * FNV_PRIME
    return mix64(h ^ <uint64_t>(end - start))


@cython.final  # direct calls, which the C compiler can inline
cdef class _Table:
    """An open-addressing hash table of 64-bit keys: occurrences and first position of each."""
    cdef Slot* slots
    cdef uint64_t mask

    def __cinit__(self, Py_ssize_t items):
        cdef uint64_t capacity = 16
        while capacity < <uint64_t>(2 * items):
            capacity <<= 1
        self.slots = <Slot*>calloc(capacity, sizeof(Slot))
        if self.slots == NULL:
            raise MemoryError()
        self.mask = capacity - 1

    def __dealloc__(self):
        free(self.slots)

    cdef inline Slot* find(self, uint64_t key) noexcept nogil:
        """The slot holding ``key``, or the empty slot where it would go."""
        cdef uint64_t i = mix64(key) & self.mask
        while self.slots[i].count and self.slots[i].key != key:
            i = (i + 1) & self.mask
        return &self.slots[i]

    cdef inline bint duplicate_span(self, const Py_UCS4* buf, Span span, Span* spans,
                                    Py_ssize_t index) noexcept nogil:
        """Whether ``span`` (number ``index``) equals an earlier one; remembers it if not."""
        cdef uint64_t key = hash_span(buf, span.start, span.start + span.length)
        cdef uint64_t i = mix64(key) & self.mask
        cdef Span other
        while self.slots[i].count:
            if self.slots[i].key == key:
                other = spans[self.slots[i].first]
                if other.length == span.length and memcmp(
                        buf + other.start, buf + span.start, span.length * sizeof(Py_UCS4)) == 0:
                    return True
            i = (i + 1) & self.mask
        self.slots[i].key = key
        self.slots[i].first = index
        self.slots[i].count = 1
        return False


cdef inline bint contains_ascii(const unsigned char* haystack, Py_ssize_t length, bytes needle):
    cdef const unsigned char* pattern = needle
    cdef Py_ssize_t size = len(needle)
    cdef Py_ssize_t i
    for i in range(length - size + 1):
        if haystack[i] == pattern[0] and memcmp(haystack + i, pattern, size) == 0:
            return True
    return False


@cython.final
cdef class SignalComputer:
    """``compute(text, stop_words)`` -> the signal values in ``udfs.filter.quality.SIGNALS`` order.

    Built once per process from the character table and the reference's constants.
    """
    cdef const uint16_t[::1] flags
    cdef tuple policy_words, policy_bytes
    cdef str javascript, lorem_ipsum
    cdef bytes javascript_bytes, lorem_ipsum_bytes
    cdef Py_ssize_t c4_min_words, c4_max_word_length, short_line_chars
    cdef tuple top_ngrams, dup_ngrams
    cdef Py_UCS4 doubled_full_stop  # two of it in a row are a full stop (the Ethiopic wordspace)
    cdef str gloss_followers  # marks that may follow a gloss's "}" (udfs.filter.quality._GLOSS)
    # The last stop-word list seen, its longest word, and its short ASCII words packed (see _pack).
    cdef object stop_words_seen
    cdef Py_ssize_t longest_stop_word
    cdef list packed_words
    cdef uint64_t* packed
    cdef Py_ssize_t n_packed

    def __dealloc__(self):
        free(self.packed)

    def __init__(self, const uint16_t[::1] flags, tuple policy_words, str javascript, str lorem_ipsum,
                 Py_ssize_t c4_min_words, Py_ssize_t c4_max_word_length, Py_ssize_t short_line_chars,
                 tuple top_ngrams, tuple dup_ngrams, Py_UCS4 doubled_full_stop, str gloss_followers):
        self.flags = flags
        self.policy_words = policy_words
        self.policy_bytes = tuple(word.encode("ascii") for word in policy_words)
        self.javascript, self.javascript_bytes = javascript, javascript.encode("ascii")
        self.lorem_ipsum, self.lorem_ipsum_bytes = lorem_ipsum, lorem_ipsum.encode("ascii")
        self.c4_min_words = c4_min_words
        self.c4_max_word_length = c4_max_word_length
        self.short_line_chars = short_line_chars
        self.top_ngrams = top_ngrams
        self.dup_ngrams = dup_ngrams
        self.doubled_full_stop = doubled_full_stop
        self.gloss_followers = gloss_followers

    def compute(self, str text, stop_words=None):
        cdef Py_ssize_t n = len(text)
        cdef Py_UCS4* buf = PyUnicode_AsUCS4Copy(text)
        cdef unsigned char* lowered = <unsigned char*>malloc(n + 1)
        try:
            if lowered == NULL:
                raise MemoryError()
            return self._compute(text, buf, lowered, n, stop_words)
        finally:
            PyMem_Free(buf)
            free(lowered)

    cdef inline uint16_t f(self, Py_UCS4 c) noexcept:
        return self.flags[c]

    cdef inline bint _sentence_end(self, const Py_UCS4* buf, Py_ssize_t p, Py_ssize_t start,
                                   Py_ssize_t end) noexcept:
        """Whether buf[p], in the line buf[start:end], can end a sentence: terminal punctuation, an
        ellipsis, or one of two doubled-full-stop characters in a row."""
        if self.f(buf[p]) & SENTENCE_END:
            return True
        return buf[p] == self.doubled_full_stop and (
            (p + 1 < end and buf[p + 1] == buf[p]) or (p > start and buf[p - 1] == buf[p]))

    cdef Py_ssize_t _sentences(self, const Py_UCS4* buf, Py_ssize_t start, Py_ssize_t end) noexcept:
        """Sentences of one line, as ``udfs.filter.quality.count_sentences``: sentence ends, plus an
        unterminated last sentence."""
        cdef Py_ssize_t last = end - 1, p = start, q, ends = 0, last_end = -1
        cdef Py_ssize_t dead_until = -1  # the sentence-end branch fails up to here (see below)
        while last >= start and not self.f(buf[last]) & LETTER_OR_NUMBER:
            last -= 1
        if last < start:
            return 0
        while p < end:
            if self._sentence_end(buf, p, start, end):
                if p >= dead_until:
                    q = p
                    while q < end and self._sentence_end(buf, q, start, end):
                        q += 1
                    while q < end and self.f(buf[q]) & CLOSING:
                        q += 1
                    if q == end or self.f(buf[q]) & SPACE:
                        ends += 1
                        last_end = p = q
                        continue
                    # Every later start inside this run reaches the same non-space: it fails too.
                    dead_until = q
                if self.f(buf[p]) & FULL_WIDTH_END:
                    q = p
                    while q < end and self.f(buf[q]) & FULL_WIDTH_END:
                        q += 1
                    while q < end and self.f(buf[q]) & CLOSING:
                        q += 1
                    ends += 1
                    last_end = p = q
                    continue
            p += 1
        return ends + (ends == 0 or last >= last_end)

    cdef Py_ssize_t _unsegmented_chars(self, const Py_UCS4* buf, Py_ssize_t start, Py_ssize_t end,
                                       Py_ssize_t* chars) noexcept:
        """Matches of ``[unsegmented]\\p{M}*`` in buf[start:end]; their characters go to ``chars``."""
        cdef Py_ssize_t p = start, count = 0, begin
        while p < end:
            if self.f(buf[p]) & UNSEGMENTED:
                begin = p
                p += 1
                while p < end and self.f(buf[p]) & MARK:
                    p += 1
                count += 1
                chars[0] += p - begin
            else:
                p += 1
        return count

    cdef object _compute(self, str text, const Py_UCS4* buf, unsigned char* lowered, Py_ssize_t n,
                         stop_words):
        cdef Py_ssize_t i, p, q
        cdef uint16_t fl
        cdef Py_UCS4 c

        # ---- characters: counts, distinct characters, whitespace-separated words
        cdef Py_ssize_t hashes = 0, newlines = 0, ellipses = 0, specials = 0, digits = 0
        cdef Py_ssize_t whitespace_words = 0, non_alpha_words = 0, max_code = 0
        cdef bint in_py_word = False, in_word = False, word_has_letter = False
        for i in range(n):
            c = buf[i]
            fl = self.f(c)
            if <Py_ssize_t>c > max_code:
                max_code = c
            if c == u'#':
                hashes += 1
            elif c == u'\n':
                newlines += 1
            elif c == u'\u2026':
                ellipses += 1
            specials += (fl & SPECIAL) != 0
            digits += (fl & DIGIT) != 0
            if fl & PY_SPACE:
                in_py_word = False
            elif not in_py_word:
                in_py_word = True
                whitespace_words += 1
            # A regex-\s-delimited word without a letter (_NON_ALPHA_WORD).
            if fl & SPACE:
                if in_word and not word_has_letter:
                    non_alpha_words += 1
                in_word = False
            else:
                if not in_word:
                    in_word, word_has_letter = True, False
                if fl & LETTER:
                    word_has_letter = True
        if in_word and not word_has_letter:
            non_alpha_words += 1
        i = 0
        while i + 2 < n:  # str.count("..."): non-overlapping
            if buf[i] == u'.' and buf[i + 1] == u'.' and buf[i + 2] == u'.':
                ellipses += 1
                i += 3
            else:
                i += 1
        cdef Py_ssize_t distinct = self._distinct(buf, n, max_code)
        cdef Py_ssize_t unsegmented_chars_len = 0
        cdef Py_ssize_t unsegmented_chars = self._unsegmented_chars(buf, 0, n, &unsegmented_chars_len)

        # ---- tokens: [unsegmented]\p{M}* | [^\W unsegmented]+ | [^\w\s]+ (without unsegmented
        # characters the middle branch is \w+, the reference's plain tokeniser); and symbols [^\w\s]+
        cdef Py_ssize_t n_tokens = 0, token_chars = 0, n_symbols = 0, symbol_chars = 0
        cdef Py_ssize_t n_words, n_spaced, spaced_chars, n_lines, n_paragraphs
        cdef Span* tokens = <Span*>malloc((n + 1) * sizeof(Span))
        cdef uint64_t* token_hashes = NULL
        cdef Py_ssize_t* cumulative = NULL
        cdef Span* spans = NULL
        if tokens == NULL:
            raise MemoryError()
        try:
            p = 0
            while p < n:
                fl = self.f(buf[p])
                q = p + 1
                if fl & UNSEGMENTED:
                    while q < n and self.f(buf[q]) & MARK:
                        q += 1
                elif fl & WORD:
                    while q < n and (self.f(buf[q]) & (WORD | UNSEGMENTED)) == WORD:
                        q += 1
                elif not fl & SPACE:
                    while q < n and not self.f(buf[q]) & (WORD | SPACE):
                        q += 1
                else:
                    p = q
                    continue
                tokens[n_tokens].start = p
                tokens[n_tokens].length = q - p
                n_tokens += 1
                token_chars += q - p
                p = q
            p = 0
            while p < n:
                if self.f(buf[p]) & (WORD | SPACE):
                    p += 1
                    continue
                q = p + 1
                while q < n and not self.f(buf[q]) & (WORD | SPACE):
                    q += 1
                n_symbols += 1
                symbol_chars += q - p
                p = q
            n_words = n_tokens - n_symbols
            n_spaced = n_words - unsegmented_chars
            spaced_chars = token_chars - symbol_chars - unsegmented_chars_len

            # ---- lines (split on \n, stripped, blank ones skipped)
            spans = <Span*>malloc((newlines + 2) * sizeof(Span))
            if spans == NULL:
                raise MemoryError()
            n_lines, sentences, c4_sentences, bullets, ellipsis_lines, punct_lines, short_lines, \
                javascript_lines, policy_lines, lorem_ipsum, curly_bracket = self._lines(
                    text, buf, lowered, n, spans)
            line_dups, line_dup_chars = self._duplicate_spans(buf, spans, n_lines)
            # ---- paragraphs: text.strip() split at \n[^\S\n]*\n\s*, each stripped
            n_paragraphs = self._paragraphs(buf, n, spans)
            para_dups, para_dup_chars = self._duplicate_spans(buf, spans, n_paragraphs)

            # ---- n-grams
            token_hashes = <uint64_t*>malloc((n_tokens + 1) * sizeof(uint64_t))
            cumulative = <Py_ssize_t*>malloc((n_tokens + 1) * sizeof(Py_ssize_t))
            if token_hashes == NULL or cumulative == NULL:
                raise MemoryError()
            cumulative[0] = 0
            for i in range(n_tokens):
                token_hashes[i] = hash_span(buf, tokens[i].start, tokens[i].start + tokens[i].length)
                cumulative[i + 1] = cumulative[i] + tokens[i].length
            ngram_chars = self._ngram_chars(buf, tokens, token_hashes, cumulative, n_tokens)

            stop_word_count = None
            if stop_words is not None:
                stop_word_count = self._stop_words(text, buf, tokens, n_tokens, stop_words)
        finally:
            free(tokens)
            free(spans)
            free(token_hashes)
            free(cumulative)

        alpha_denominator = whitespace_words + unsegmented_chars
        return (
            n, n_words, n_lines, sentences,
            <double>spaced_chars / <double>n_spaced if n_spaced and 2 * n_spaced >= n_words else None,
            _ratio(n_words, sentences),
            _ratio(line_dups, n_lines),
            _ratio(line_dup_chars, n),
            _ratio(para_dups, n_paragraphs),
            _ratio(para_dup_chars, n),
            *[_ratio(chars, n) for chars in ngram_chars],
            _ratio(hashes, n_tokens),
            _ratio(ellipses, n_tokens),
            _ratio(bullets, n_lines),
            _ratio(ellipsis_lines, n_lines),
            _ratio(alpha_denominator - non_alpha_words, alpha_denominator),
            stop_word_count,
            _ratio(punct_lines, n_lines),
            _ratio(short_lines, n_lines),
            _ratio(newlines, n_tokens),
            c4_sentences,
            lorem_ipsum,
            curly_bracket,
            _ratio(javascript_lines, n_lines),
            _ratio(policy_lines, n_lines),
            (1.0 - <double>distinct / <double>n) if n else None,
            _ratio(specials, n),
            _ratio(digits, n),
        )

    cdef Py_ssize_t _distinct(self, const Py_UCS4* buf, Py_ssize_t n, Py_ssize_t max_code) except -1:
        """len(set(text)), with a bitmap over the code points up to the largest one present."""
        cdef Py_ssize_t i, distinct = 0
        cdef unsigned char* seen = <unsigned char*>calloc(max_code // 8 + 1, 1)
        if seen == NULL:
            raise MemoryError()
        cdef uint32_t code
        for i in range(n):
            code = buf[i]
            if not seen[code >> 3] & (1 << (code & 7)):
                seen[code >> 3] |= 1 << (code & 7)
                distinct += 1
        free(seen)
        return distinct

    cdef Py_ssize_t _gloss_end(self, const Py_UCS4* buf, Py_ssize_t start, Py_ssize_t p, Py_ssize_t end) noexcept:
        """Where the gloss that the "{" at ``p`` opens ends (its "}"), as ``udfs.filter.quality._GLOSS``
        matches it in the line ``start``..``end``; -1 where that "{" opens none (code, for C4)."""
        cdef Py_ssize_t q = p + 1
        cdef Py_UCS4 c
        if p > start and not self.f(buf[p - 1]) & SPACE:
            return -1
        if q >= end or not self.f(buf[q]) & LETTER:
            return -1
        while q < end and buf[q] != u'}':
            c = buf[q]
            if c == u' ':
                if q + 1 >= end or not self.f(buf[q + 1]) & LETTER:
                    return -1
            elif not (self.f(c) & (LETTER | MARK) or c == u'-' or c == u"'" or c == u'\u2019'):
                return -1
            q += 1
        if q >= end or (q + 1 < end and not self.f(buf[q + 1]) & SPACE
                        and buf[q + 1] not in self.gloss_followers):
            return -1
        return q

    cdef tuple _lines(self, str text, const Py_UCS4* buf, unsigned char* lowered, Py_ssize_t n, Span* spans):
        """Stores the stripped non-blank lines in ``spans``; returns their number and the per-line counts."""
        cdef Py_ssize_t a = 0, b, e, i, n_lines = 0, line_words, longest_word, word_start, length, wide
        cdef Py_ssize_t sentences, all_sentences = 0, c4_sentences = 0, unsegmented_len = 0
        cdef Py_ssize_t bullets = 0, ellipsis_lines = 0, punct_lines = 0, short_lines = 0
        cdef Py_ssize_t javascript_lines = 0, policy_lines = 0
        cdef bint lorem_ipsum = False, curly_bracket = False, javascript, policy, needs_lower
        cdef Py_UCS4 c
        cdef str lower
        while a <= n:
            b = a
            while b < n and buf[b] != u'\n':
                b += 1
            e = b
            i = a
            while i < e and self.f(buf[i]) & PY_SPACE:
                i += 1
            while e > i and self.f(buf[e - 1]) & PY_SPACE:
                e -= 1
            next_line = b + 1
            if i == e:
                a = next_line
                continue
            length = e - i
            spans[n_lines].start = i
            spans[n_lines].length = length
            n_lines += 1
            sentences = self._sentences(buf, i, e)
            all_sentences += sentences
            bullets += buf[i] == u'\u2022' or buf[i] == u'-'
            ellipsis_lines += buf[e - 1] == u'\u2026' or (
                length >= 3 and buf[e - 1] == u'.' and buf[e - 2] == u'.' and buf[e - 3] == u'.')
            b = e
            while b > i and self.f(buf[b - 1]) & CLOSING:
                b -= 1
            punct_lines += b > i and ((self.f(buf[b - 1]) & TERMINAL) != 0 or (
                b - 1 > i and buf[b - 1] == self.doubled_full_stop and buf[b - 2] == self.doubled_full_stop))
            # Lower-cased ASCII copy of the line for the substring checks; a character whose
            # lower case holds ASCII (KELVIN SIGN) sends the line to str.lower() instead.
            needs_lower = False
            line_words = longest_word = 0
            word_start = -1
            wide = 0
            for b in range(i, e):
                c = buf[b]
                if c < 128:
                    lowered[b] = <unsigned char>c + 32 if u'A' <= c <= u'Z' else <unsigned char>c
                else:
                    lowered[b] = 0x80
                    if self.f(c) & LOWER_TO_ASCII:
                        needs_lower = True
                    wide += (self.f(c) & WIDE) != 0
                if self.f(c) & (PY_SPACE | WORD_SEPARATOR):
                    if word_start >= 0:
                        longest_word = max(longest_word, b - word_start)
                        word_start = -1
                elif word_start < 0:
                    word_start = b
                    line_words += 1
            if word_start >= 0:
                longest_word = max(longest_word, e - word_start)
            short_lines += length + wide <= self.short_line_chars
            if needs_lower:
                lower = text[i:e].lower()
                javascript = self.javascript in lower
                policy = any(word in lower for word in self.policy_words)
            else:
                javascript = contains_ascii(lowered + i, length, self.javascript_bytes)
                policy = False
                for word in self.policy_bytes:
                    if contains_ascii(lowered + i, length, word):
                        policy = True
                        break
            javascript_lines += javascript
            policy_lines += policy
            # C4 judges a line only with enough words and no absurdly long "word" (minified code).
            line_words += self._unsegmented_chars(buf, i, e, &unsegmented_len)
            if line_words < self.c4_min_words or (
                    length > self.c4_max_word_length and longest_word > self.c4_max_word_length):
                a = next_line
                continue
            if not lorem_ipsum:
                lorem_ipsum = (self.lorem_ipsum in lower if needs_lower
                               else contains_ascii(lowered + i, length, self.lorem_ipsum_bytes))
            if not javascript:
                if not curly_bracket:
                    b = i
                    while b < e:
                        if buf[b] == u'{':
                            b = self._gloss_end(buf, i, b, e)
                            if b < 0:
                                curly_bracket = True
                                break
                        b += 1
                if not policy:
                    c4_sentences += sentences
            a = next_line
        return (n_lines, all_sentences, c4_sentences, bullets, ellipsis_lines, punct_lines, short_lines,
                javascript_lines, policy_lines, lorem_ipsum, curly_bracket)

    cdef Py_ssize_t _paragraphs(self, const Py_UCS4* buf, Py_ssize_t n, Span* spans) noexcept:
        cdef Py_ssize_t start = 0, end = n, p, j, piece, count = 0
        while start < end and self.f(buf[start]) & PY_SPACE:
            start += 1
        while end > start and self.f(buf[end - 1]) & PY_SPACE:
            end -= 1
        if start == end:
            return 0
        piece = p = start
        while p < end:
            if buf[p] == u'\n':
                j = p + 1
                while j < end and buf[j] != u'\n' and self.f(buf[j]) & SPACE:
                    j += 1
                if j < end and buf[j] == u'\n':
                    j += 1
                    while j < end and self.f(buf[j]) & SPACE:
                        j += 1
                    self._stripped(buf, piece, p, &spans[count])
                    count += 1
                    piece = p = j
                    continue
            p += 1
        self._stripped(buf, piece, end, &spans[count])
        return count + 1

    cdef void _stripped(self, const Py_UCS4* buf, Py_ssize_t start, Py_ssize_t end, Span* span) noexcept:
        while start < end and self.f(buf[start]) & PY_SPACE:
            start += 1
        while end > start and self.f(buf[end - 1]) & PY_SPACE:
            end -= 1
        span.start = start
        span.length = end - start

    cdef tuple _duplicate_spans(self, const Py_UCS4* buf, Span* spans, Py_ssize_t count):
        """(spans equal to an earlier one, their characters), as the reference's _duplicates."""
        cdef _Table table = _Table(count)
        cdef Py_ssize_t i, dups = 0, chars = 0
        for i in range(count):
            if table.duplicate_span(buf, spans[i], spans, i):
                dups += 1
                chars += spans[i].length
        return dups, chars

    cdef list _ngram_chars(self, const Py_UCS4* buf, Span* tokens, uint64_t* hashes,
                           Py_ssize_t* cumulative, Py_ssize_t n_tokens):
        """Characters of the top n-gram (TOP_NGRAMS) and in duplicated n-grams (DUP_NGRAMS).

        ``hashes`` grows in place from token hashes to n-gram hashes, as the reference's _NGrams.
        """
        cdef Py_ssize_t grown = 1, n, count, i, top, start, position, repeated
        cdef uint64_t* token_hashes = <uint64_t*>malloc((n_tokens + 1) * sizeof(uint64_t))
        cdef _Table table
        cdef Slot* slot
        cdef list out = []
        cdef bint repeats = True
        if token_hashes == NULL:
            raise MemoryError()
        try:
            for i in range(n_tokens):
                token_hashes[i] = hashes[i]
            for n in self.top_ngrams + self.dup_ngrams:
                if not repeats:
                    out.append(0)
                    continue
                while grown < n:
                    grown += 1
                    for i in range(n_tokens - grown + 1):
                        hashes[i] = hashes[i] * HASH_BASE + token_hashes[i + grown - 1]
                count = n_tokens - n + 1
                if count <= 0:
                    out.append(0)
                    repeats = False
                    continue
                table = _Table(count)
                if n in self.top_ngrams:
                    # Occurrences of each n-gram; the most frequent (ties: the earliest) if it repeats.
                    top = 0
                    start = count
                    for i in range(count):
                        slot = table.find(hashes[i])
                        if slot.count == 0:
                            slot.key = hashes[i]
                            slot.first = i
                        slot.count += 1
                        if slot.count > top or (slot.count == top and slot.first < start):
                            top = slot.count
                            start = slot.first
                    if top < 2:
                        repeated = 0
                    else:
                        repeated = (cumulative[start + n] - cumulative[start]
                                    + (0 if self.f(buf[tokens[start].start]) & UNSEGMENTED else n - 1)) * top
                else:
                    # datatrove's scan: a repeat adds its characters and is skipped past.
                    repeated = position = 0
                    for i in range(count):
                        if i < position:
                            continue
                        slot = table.find(hashes[i])
                        if slot.count:
                            repeated += cumulative[i + n] - cumulative[i]
                            position = i + n
                        else:
                            slot.key = hashes[i]
                            slot.count = 1
                            position = i + 1
                out.append(repeated)
                repeats = repeated > 0
        finally:
            free(token_hashes)
        return out

    cdef object _stop_words(self, str text, const Py_UCS4* buf, Span* tokens, Py_ssize_t n_tokens,
                            stop_words):
        """len(stop_words & {token.lower()}). lower() never shortens a token, so a longer one cannot
        match; an ASCII token of up to 8 characters is lower-cased and compared packed, without a
        Python string; any other token goes through str.lower()."""
        cdef Py_ssize_t i, j, k, start, length
        cdef uint64_t key
        cdef uint32_t c
        if stop_words is not self.stop_words_seen:
            self._pack(stop_words)
        found_packed = bytearray(self.n_packed)
        found = set()
        for i in range(n_tokens):
            start, length = tokens[i].start, tokens[i].length
            if length > self.longest_stop_word:
                continue
            if length <= 8:
                key = length
                for j in range(start, start + length):
                    c = buf[j]
                    if c >= 128:
                        break
                    key = key << 7 | (c + 32 if 65 <= c <= 90 else c)  # A-Z lower-cased
                else:
                    for k in range(self.n_packed):
                        if self.packed[k] == key:
                            found_packed[k] = 1
                            break
                    continue
            word = text[start:start + length].lower()
            if word in stop_words:
                found.add(word)
        found.update(word for word, hit in zip(self.packed_words, found_packed) if hit)
        return len(found)

    cdef _pack(self, stop_words):
        """ASCII stop words of up to 8 characters as length + 7 bits per character (exact)."""
        cdef uint64_t key
        self.packed_words = [w for w in stop_words if isinstance(w, str) and len(w) <= 8 and w.isascii()]
        free(self.packed)
        self.packed = <uint64_t*>malloc((len(self.packed_words) + 1) * sizeof(uint64_t))
        if self.packed == NULL:
            raise MemoryError()
        for k, word in enumerate(self.packed_words):
            key = len(word)
            for c in word:
                key = key << 7 | ord(c)
            self.packed[k] = key
        self.n_packed = len(self.packed_words)
        self.longest_stop_word = max(map(len, stop_words), default=0)
        self.stop_words_seen = stop_words


cdef inline object _ratio(Py_ssize_t numerator, Py_ssize_t denominator):
    return <double>numerator / <double>denominator if denominator else None
