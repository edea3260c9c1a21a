# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The content bag of ``features.py`` in compiled code: every character n-gram, word and word n-gram
of a batch hashed in one pass over its code points, the ids grouped by text as they come
(``content_bags``), then counted per text (``counted_bag``).

The same ids, in the same order, as their definition in numpy (tests/score/test_features_compiled.py): per
text, the character n-grams of each order in ``char_orders`` by position, then the words, then the
word n-grams of each order. A substring hashes to sum((code point + 1)·P^j) over its characters
(wrapping 64-bit); a character n-gram to that plus its order; a word to mix(its hash ^ WORD_SALT); a
word n-gram to the fold mix(h·P + next word's hash) over its words. Every hash is mixed once more
and bucketed to ``1 + h mod (buckets - 1)``.
"""
import unicodedata

import numpy as np

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

cdef uint64_t PRIME = 0x100000001B3
cdef uint64_t WORD_SALT = 0x9E3779B97F4A7C15
cdef int64_t STAMP_MASK = <int64_t>0x7FFFFFFF00000000
cdef int64_t COUNT_MASK = 0xFFFFFFFF


cdef inline uint64_t mix64(uint64_t h) noexcept nogil:
    h = (h ^ (h >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    h = (h ^ (h >> 27)) * <uint64_t>0x94D049BB133111EB
    return h ^ (h >> 31)


cdef inline bint is_cjk(uint64_t cp) noexcept nogil:
    return ((0x2E80 <= cp <= 0x9FFF) or (0xAC00 <= cp <= 0xD7AF) or (0xF900 <= cp <= 0xFAFF)
            or (0xFF00 <= cp <= 0xFFEF) or (0x20000 <= cp <= 0x3FFFF))


cdef inline bint is_spaceless(uint64_t cp) noexcept nogil:
    # Thai and Lao, Myanmar, Khmer: written without spaces between words, like CJK.
    return (0x0E00 <= cp <= 0x0EFF) or (0x1000 <= cp <= 0x109F) or (0x1780 <= cp <= 0x17FF)


# The bits of ``word_rules`` (``HashingSpec.word_rules``): which notion of a word a model hashes with.
cdef enum:
    SPACELESS_CHARS = 1     # a Thai, Lao, Myanmar or Khmer character is a word, as a CJK one always is
    SCRIPT_WORDS = 2        # Tibetan and Ethiopic words end at their own separators; a Yi syllable is a
                            # word; a Hangul word runs to a space (its syllables are not words)
    SPACELESS_CLUSTERS = 4  # with SPACELESS_CHARS, that word is a character cluster (``continues_cluster``)


# The vowel signs, tone marks and other combining marks of the Thai, Lao, Myanmar and Khmer blocks.
cdef uint8_t SPACELESS_MARKS[0x1800 - 0x0E00]
for _c in range(0x0E00, 0x1800):
    SPACELESS_MARKS[_c - 0x0E00] = unicodedata.category(chr(_c)) in ("Mn", "Mc")


cdef inline bint continues_cluster(uint64_t previous, uint64_t cp) noexcept nogil:
    """Whether ``cp`` belongs to the cluster ``previous`` is in: a letter of these scripts with the
    marks written on it, the letter stacked under a Khmer coeng or a Myanmar virama, and the letter a
    Thai or Lao vowel written before it goes with. Their letters are sounds, not words: as words, every
    pair of them is common in any text and the n-gram memory cannot tell prose from disorder."""
    if not is_spaceless(cp):
        return False
    return (SPACELESS_MARKS[cp - 0x0E00] or previous == 0x17D2 or previous == 0x1039
            or 0x0E40 <= previous <= 0x0E44 or 0x0EC0 <= previous <= 0x0EC4)


cdef inline bint is_char_word(uint64_t cp, int word_rules) noexcept nogil:
    """A character that is a word by itself."""
    if word_rules & SCRIPT_WORDS:
        if 0xAC00 <= cp <= 0xD7AF:
            return False
        if 0xA000 <= cp <= 0xA4CF:
            return True
    return is_cjk(cp) or ((word_rules & SPACELESS_CHARS) and is_spaceless(cp))


cdef inline bint is_space(uint64_t cp) noexcept nogil:
    return cp <= 0x20 or cp == 0xA0


cdef inline bint is_word_break(uint64_t cp, int word_rules) noexcept nogil:
    """A space, or (``SCRIPT_WORDS``) the Tibetan tsheg or the Ethiopic wordspace between words."""
    return is_space(cp) or ((word_rules & SCRIPT_WORDS) and (cp == 0x0F0B or cp == 0x0F0C or cp == 0x1361))


cdef inline int32_t bucket(uint64_t h, uint64_t slots) noexcept nogil:
    return <int32_t>(mix64(h) % slots) + 1


cdef inline bint is_sentence_end(uint64_t cp) noexcept nogil:
    return cp == 0x2E or cp == 0x21 or cp == 0x3F  # . ! ? (features.normalize maps CJK ones to these)


cdef Py_ssize_t text_words(const uint64_t[::1] cp, Py_ssize_t s, Py_ssize_t e, int word_rules,
                           uint64_t[::1] words, uint8_t[::1] ends) noexcept nogil:
    """The hashes of the words of ``cp[s:e]`` into ``words``, and whether each ends with a sentence
    mark into ``ends``; returns how many. Words: runs of characters that are neither a word break
    (``is_word_break``) nor a word by themselves (``is_char_word``; with ``SPACELESS_CLUSTERS``, a
    character of the spaceless scripts with the rest of its cluster)."""
    cdef Py_ssize_t i = s, nw = 0
    cdef uint64_t h, power
    while i < e:
        if is_word_break(cp[i], word_rules):
            i += 1
            continue
        h = 0
        power = 1
        if is_char_word(cp[i], word_rules):
            h = cp[i] + 1
            i += 1
            if word_rules & SPACELESS_CLUSTERS and is_spaceless(cp[i - 1]):
                while i < e and continues_cluster(cp[i - 1], cp[i]):
                    power *= PRIME
                    h += (cp[i] + 1) * power
                    i += 1
        else:
            while i < e and not is_word_break(cp[i], word_rules) and not is_char_word(cp[i], word_rules):
                h += (cp[i] + 1) * power
                power *= PRIME
                i += 1
        words[nw] = mix64(h ^ WORD_SALT)
        ends[nw] = is_sentence_end(cp[i - 1])
        nw += 1
    return nw


cdef _check_lengths(const int64_t[::1] lengths, Py_ssize_t n, str name):
    """``lengths`` (one per text, none negative) must add up to the ``n`` code points."""
    cdef Py_ssize_t d, total = 0
    for d in range(lengths.shape[0]):
        if lengths[d] < 0:
            raise ValueError(f"{name}: negative length")
        total += lengths[d]
    if total != n:
        raise ValueError(f"{name}: the lengths do not add up to the code points")


def content_bags(const uint64_t[::1] cp, const int64_t[::1] lengths, const int64_t[::1] char_orders,
                 int word_ngrams, int64_t buckets, int word_rules=0):
    """(ids int32, offsets int64) of the content bag of each text: ``cp`` holds the texts' code points
    one after another (``lengths`` of them each), text d's ids are ``ids[offsets[d]:offsets[d + 1]]``.
    Words as ``word_rules`` (the bits ``SPACELESS_CHARS``, ``SCRIPT_WORDS``, ``SPACELESS_CLUSTERS``) make them."""
    cdef Py_ssize_t n_docs = lengths.shape[0], n = cp.shape[0], n_orders = char_orders.shape[0]
    cdef Py_ssize_t d, i, j, k, s, e, o, out_n = 0, nw, capacity
    cdef uint64_t h, power, slots = <uint64_t>(buckets - 1)
    cdef int64_t max_order = 0
    _check_lengths(lengths, n, "content_bags")
    for i in range(n_orders):
        if char_orders[i] < 1:
            raise ValueError("content_bags: character n-gram orders must be positive")
        max_order = max(max_order, char_orders[i])
    if word_ngrams < 0 or buckets < 2:
        raise ValueError("content_bags: word_ngrams must not be negative, buckets at least 2")
    # At most one id per position per character order, and one per word and word n-gram.
    capacity = n * (n_orders + max(word_ngrams, 0)) + 1
    ids_array = np.empty(capacity, dtype=np.int32)
    words_array = np.empty(n + 1, dtype=np.uint64)
    ends_array = np.empty(n + 1, dtype=np.uint8)
    offsets_array = np.zeros(n_docs + 1, dtype=np.int64)
    cdef int32_t[::1] ids = ids_array
    cdef uint64_t[::1] words = words_array
    cdef uint8_t[::1] ends = ends_array
    cdef int64_t[::1] offsets = offsets_array
    with nogil:
        s = 0
        for d in range(n_docs):
            e = s + lengths[d]
            for k in range(n_orders):
                o = char_orders[k]
                for i in range(s, e - o + 1):
                    h = 0
                    power = 1
                    for j in range(o):
                        h += (cp[i + j] + 1) * power
                        power *= PRIME
                    ids[out_n] = bucket(h + <uint64_t>o, slots)
                    out_n += 1
            if word_ngrams:
                nw = text_words(cp, s, e, word_rules, words, ends)
                for i in range(nw):
                    ids[out_n] = bucket(words[i], slots)
                    out_n += 1
                for o in range(2, word_ngrams + 1):
                    for i in range(nw - o + 1):
                        h = words[i]
                        for j in range(1, o):
                            h = mix64(h * PRIME + words[i + j])
                        ids[out_n] = bucket(h, slots)
                        out_n += 1
            offsets[d + 1] = out_n
            s = e
    return ids_array[:out_n].copy(), offsets_array


# Columns of ``order_stats``.
ORDER_STATS = ("words", "repeated_bigrams", "repeated_bigrams_shuffled", "repeated_trigrams",
               "repeated_trigrams_shuffled", "window_repeats", "sentences", "sentence_words_squared")
DEF WINDOW_WORDS = 8  # a word repeated within this many words before it counts in window_repeats
DEF SHUFFLE_SEED = 0x5DEECE66D
WINDOW = WINDOW_WORDS
SHUFFLE_STATE = SHUFFLE_SEED


cdef inline uint64_t splitmix_next(uint64_t* state) noexcept nogil:
    state[0] += <uint64_t>0x9E3779B97F4A7C15
    return mix64(state[0])


cdef Py_ssize_t repeats(const uint64_t[::1] words, Py_ssize_t nw, int order, uint64_t[::1] table,
                        uint64_t mask) noexcept nogil:
    """How many of the ``order``-grams of ``words[:nw]`` occurred before in it (an open-addressing set
    of their hashes, ``mask + 1`` slots, more than the n-grams; 0 marks an empty slot)."""
    cdef Py_ssize_t i, j, found = 0
    cdef uint64_t h, slot
    for i in range(<Py_ssize_t>mask + 1):
        table[i] = 0
    for i in range(nw - order + 1):
        h = words[i]
        for j in range(1, order):
            h = mix64(h * PRIME + words[i + j])
        h |= 1
        slot = h & mask
        while table[slot] != 0 and table[slot] != h:
            slot = (slot + 1) & mask
        found += table[slot] == h
        table[slot] = h
    return found


def order_stats(const uint64_t[::1] cp, const int64_t[::1] lengths, int word_rules=0):
    """Word-order counts of each text (``float64 [texts, len(ORDER_STATS)]``), words as in
    ``content_bags``: its words; its bigrams and trigrams that occurred before in it, in its own order
    and in a seeded shuffle of its words (natural text repeats its n-grams far more often than its word
    frequencies alone make happen; shuffled text does not); its words equal to one of the ``WINDOW``
    words before them; its sentences (a word ending in . ! ?, and an unterminated tail) and the sum
    of their squared lengths in words."""
    cdef Py_ssize_t n_docs = lengths.shape[0], n = cp.shape[0], d, i, j, s, e, nw, since
    cdef Py_ssize_t window_hits, sentences, squares
    cdef uint64_t mask, state, tmp
    _check_lengths(lengths, n, "order_stats")
    out_array = np.zeros((n_docs, len(ORDER_STATS)), dtype=np.float64)
    words_array = np.empty(n + 1, dtype=np.uint64)
    shuffled_array = np.empty(n + 1, dtype=np.uint64)
    ends_array = np.empty(n + 1, dtype=np.uint8)
    cdef Py_ssize_t slots = 2
    while slots < 2 * (n + 1):
        slots *= 2
    table_array = np.empty(slots, dtype=np.uint64)
    cdef double[:, ::1] out = out_array
    cdef uint64_t[::1] words = words_array, shuffled = shuffled_array, table = table_array
    cdef uint8_t[::1] ends = ends_array
    with nogil:
        s = 0
        for d in range(n_docs):
            e = s + lengths[d]
            nw = text_words(cp, s, e, word_rules, words, ends)
            mask = 1
            while mask + 1 < <uint64_t>(2 * nw + 2):
                mask = mask * 2 + 1
            out[d, 0] = nw
            out[d, 1] = repeats(words, nw, 2, table, mask)
            out[d, 3] = repeats(words, nw, 3, table, mask)
            # Fisher-Yates with a fixed seed: the same text always gets the same shuffle.
            state = SHUFFLE_SEED
            for i in range(nw):
                shuffled[i] = words[i]
            for i in range(nw - 1, 0, -1):
                j = <Py_ssize_t>(splitmix_next(&state) % <uint64_t>(i + 1))
                tmp = shuffled[i]
                shuffled[i] = shuffled[j]
                shuffled[j] = tmp
            out[d, 2] = repeats(shuffled, nw, 2, table, mask)
            out[d, 4] = repeats(shuffled, nw, 3, table, mask)
            window_hits = 0
            for i in range(1, nw):
                for j in range(i - WINDOW_WORDS if i > WINDOW_WORDS else 0, i):
                    if words[j] == words[i]:
                        window_hits += 1
                        break
            out[d, 5] = window_hits
            sentences, squares, since = 0, 0, 0
            for i in range(nw):
                since += 1
                if ends[i]:
                    sentences += 1
                    squares += since * since
                    since = 0
            if since:
                sentences += 1
                squares += since * since
            out[d, 6] = sentences
            out[d, 7] = squares
            s = e
    return out_array


# Columns of ``memory_stats``.
MEMORY_STATS = ("pairs_of_known_words", "known_pairs", "triples_of_known_pairs", "known_triples",
                "skip_pairs_of_known_words", "known_skip_pairs")
cdef uint64_t BOUNDARY = 0x2545F4914F6CDD1D  # the token a sentence starts and ends with
cdef uint64_t TRIGRAM_SALT = 0xD6E8FEB86659FD93
cdef uint64_t UNIGRAM_SALT = 0x8CB92BA72F3D8DD7


cdef Py_ssize_t sentence_tokens(const uint64_t[::1] words, const uint8_t[::1] ends, Py_ssize_t nw,
                                uint64_t[::1] tokens) noexcept nogil:
    """``words`` with a ``BOUNDARY`` before the first, after each that ends a sentence and at the end
    (one between two sentences); returns how many tokens."""
    cdef Py_ssize_t i, nt = 0
    if nw == 0:
        return 0
    tokens[nt] = BOUNDARY
    nt += 1
    for i in range(nw):
        tokens[nt] = words[i]
        nt += 1
        if ends[i] or i == nw - 1:
            tokens[nt] = BOUNDARY
            nt += 1
    return nt


cdef Py_ssize_t text_tokens(const uint64_t[::1] cp, Py_ssize_t s, Py_ssize_t e, int word_rules,
                            uint64_t[::1] words, uint8_t[::1] ends, uint64_t[::1] tokens) noexcept nogil:
    """The tokens (``sentence_tokens``) of the words of ``cp[s:e]`` (``text_words``); returns how many."""
    return sentence_tokens(words, ends, text_words(cp, s, e, word_rules, words, ends), tokens)


def _token_buffers(Py_ssize_t n):
    """Room for the words, their sentence ends and the tokens of ``n`` code points."""
    return np.empty(n + 1, dtype=np.uint64), np.empty(n + 1, dtype=np.uint8), np.empty(2 * n + 2, dtype=np.uint64)


cdef inline uint64_t unigram_key(uint64_t a) noexcept nogil:
    return mix64(a ^ UNIGRAM_SALT)


cdef inline uint64_t bigram_key(uint64_t a, uint64_t b) noexcept nogil:
    return mix64(a * PRIME + b)


cdef inline uint64_t trigram_key(uint64_t pair, uint64_t c) noexcept nogil:
    return mix64((pair ^ TRIGRAM_SALT) * PRIME + c)


cdef inline bint has_bit(const uint64_t[::1] bits, uint64_t key, uint64_t mask) noexcept nogil:
    key &= mask
    return (bits[key >> 6] >> (key & 63)) & 1


cdef inline void set_bit(uint64_t[::1] bits, uint64_t key, uint64_t mask) noexcept nogil:
    key &= mask
    bits[key >> 6] |= (<uint64_t>1) << (key & 63)


cdef uint64_t _bit_mask(Py_ssize_t words, str name) except? 0:
    if words < 1 or words & (words - 1):
        raise ValueError(f"{name}: the bit set must hold a power of two of 64-bit words")
    return <uint64_t>words * 64 - 1


cdef void add_tokens(const uint64_t[::1] tokens, Py_ssize_t nt, uint64_t[::1] bits, uint64_t mask) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint64_t pair
    for i in range(nt):
        if tokens[i] != BOUNDARY:
            set_bit(bits, unigram_key(tokens[i]), mask)
    for i in range(nt - 1):
        if tokens[i] == BOUNDARY and tokens[i + 1] == BOUNDARY:
            continue
        pair = bigram_key(tokens[i], tokens[i + 1])
        set_bit(bits, pair, mask)
        if i + 2 < nt and tokens[i + 1] != BOUNDARY:
            set_bit(bits, trigram_key(pair, tokens[i + 2]), mask)


cdef void count_tokens(const uint64_t[::1] tokens, Py_ssize_t nt, const uint64_t[::1] bits, uint64_t mask,
                       uint8_t[::1] known, uint8_t[::1] pair_known, double[::1] out) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(nt):
        known[i] = tokens[i] == BOUNDARY or has_bit(bits, unigram_key(tokens[i]), mask)
    for i in range(nt - 1):
        pair_known[i] = 0
        if (tokens[i] == BOUNDARY and tokens[i + 1] == BOUNDARY) or not (known[i] and known[i + 1]):
            continue
        pair_known[i] = has_bit(bits, bigram_key(tokens[i], tokens[i + 1]), mask)
        out[0] += 1
        out[1] += pair_known[i]
    for i in range(nt - 2):
        if pair_known[i] and pair_known[i + 1] and tokens[i + 1] != BOUNDARY:
            out[2] += 1
            out[3] += has_bit(bits, trigram_key(bigram_key(tokens[i], tokens[i + 1]), tokens[i + 2]), mask)
        # Words one apart in a sentence, asked as a pair: what a pair of this text's words is known as
        # when their order says nothing about them.
        if (known[i] and known[i + 2] and tokens[i] != BOUNDARY and tokens[i + 1] != BOUNDARY
                and tokens[i + 2] != BOUNDARY):
            out[4] += 1
            out[5] += has_bit(bits, bigram_key(tokens[i], tokens[i + 2]), mask)


def _memory_pass(const uint64_t[::1] cp, const int64_t[::1] lengths, uint64_t[::1] bits, int word_rules,
                 bint adding, str name):
    """Each text's tokens added to ``bits`` (``adding``) or counted against them (the returned rows)."""
    cdef Py_ssize_t n_docs = lengths.shape[0], n = cp.shape[0], d, s, e, nt
    cdef uint64_t mask = _bit_mask(bits.shape[0], name)
    _check_lengths(lengths, n, name)
    out_array = np.zeros((n_docs, len(MEMORY_STATS)), dtype=np.float64)
    words_array, ends_array, tokens_array = _token_buffers(n)
    cdef uint64_t[::1] words = words_array, tokens = tokens_array
    cdef uint8_t[::1] ends = ends_array, known = np.empty(2 * n + 2, dtype=np.uint8)
    cdef uint8_t[::1] pair_known = np.empty(2 * n + 2, dtype=np.uint8)  # per token: is the pair it starts known
    cdef double[:, ::1] out = out_array
    with nogil:
        s = 0
        for d in range(n_docs):
            e = s + lengths[d]
            nt = text_tokens(cp, s, e, word_rules, words, ends, tokens)
            if adding:
                add_tokens(tokens, nt, bits, mask)
            else:
                count_tokens(tokens, nt, bits, mask, known, pair_known, out[d])
            s = e
    return out_array


def memory_add(const uint64_t[::1] cp, const int64_t[::1] lengths, uint64_t[::1] bits, int word_rules=0):
    """Sets the bits of every word, word bigram and trigram of the texts (bigrams and trigrams within
    sentences and with their boundaries; words as in ``content_bags``) in the bit set ``bits``."""
    _memory_pass(cp, lengths, bits, word_rules, True, "memory_add")


def memory_stats(const uint64_t[::1] cp, const int64_t[::1] lengths, uint64_t[::1] bits, int word_rules=0):
    """Of each text (``float64 [texts, len(MEMORY_STATS)]``), n-grams as ``memory_add`` sets them: its
    word pairs whose two words ``bits`` holds, and how many of those pairs it holds itself; its triples
    whose two pairs it holds, and how many of those triples it holds itself. Each share asks one order
    more of the words the memory knows, so text of a subject or site the memory never saw is not read
    as disorder. Shuffled words are known words in unknown pairs; a chain of pairs (fitted on text
    like the memory's) is known pairs in unknown triples; a person's text reuses known pairs and, mostly,
    the triples around them. Last, its pairs of words one apart whose two words ``bits`` holds, and how
    many of those it holds as pairs: the share a pair of the text's words is known by chance, against
    which its pairs' share says how well the memory knows text of its kind. ``bits`` is only read."""
    return _memory_pass(cp, lengths, bits, word_rules, False, "memory_stats")


def counted_bag(const int32_t[::1] ids, const int64_t[::1] offsets, int count_bits):
    """The content bag counted: (ids int32, classes uint8, offsets int64), each id of a text once per
    set bit of its count there.

    Text t's ids are ``ids[offsets[t]:offsets[t + 1]]``. An id counted c times in it is listed once in
    class k for every set bit k of c below the top class, and ``c >> (count_bits - 1)`` times in the
    top class, so any count is written whole: the entries of class k stand for 2**k occurrences each.
    A text's entries follow the first occurrences of its ids, its bits in ascending order."""
    cdef Py_ssize_t n_texts = offsets.shape[0] - 1, t, i, total, longest = 0, n_distinct, out_n = 0
    cdef int32_t top = count_bits - 1, vocab = 0, d, k
    cdef int64_t c, state, stamp
    cdef bint first
    if count_bits < 1 or count_bits > 30:
        raise ValueError("counted_bag: count_bits must lie in 1..30")
    if n_texts < 0 or offsets[0] != 0 or offsets[n_texts] != ids.shape[0]:
        raise ValueError("counted_bag: the offsets do not span the ids")
    for t in range(n_texts):
        if offsets[t + 1] < offsets[t]:
            raise ValueError("counted_bag: the offsets decrease")
        longest = max(longest, offsets[t + 1] - offsets[t])
    total = ids.shape[0]
    for i in range(total):
        if ids[i] < 0:
            raise ValueError("counted_bag: negative id")
        vocab = max(vocab, ids[i] + 1)
    # Each entry stands for at least one occurrence, so there are at most as many entries as ids.
    out_ids_array = np.empty(total, dtype=np.int32)
    out_classes_array = np.empty(total, dtype=np.uint8)
    out_offsets_array = np.zeros(n_texts + 1, dtype=np.int64)
    # Per id: the text + 1 it was last counted in (high 32 bits) and its count there (low 32).
    seen_array = np.zeros(vocab, dtype=np.int64)
    distinct_array = np.empty(longest, dtype=np.int32)
    cdef int32_t[::1] out_ids = out_ids_array, distinct = distinct_array
    cdef uint8_t[::1] out_classes = out_classes_array
    cdef int64_t[::1] out_offsets = out_offsets_array, seen = seen_array
    with nogil:
        for t in range(n_texts):
            n_distinct = 0
            stamp = (t + 1) << 32
            for i in range(offsets[t], offsets[t + 1]):
                # Without a branch: an id not yet seen in this text is listed and starts its count.
                d = ids[i]
                state = seen[d]
                first = (state & STAMP_MASK) != stamp
                distinct[n_distinct] = d
                n_distinct += first
                seen[d] = (stamp | 1) if first else state + 1
            for i in range(n_distinct):
                # The count's bits below the top class one by one (most counts are 1), then the rest.
                d = distinct[i]
                c = seen[d] & COUNT_MASK
                k = 0
                while c and k < top:
                    if c & 1:
                        out_ids[out_n] = d
                        out_classes[out_n] = <uint8_t>k
                        out_n += 1
                    c >>= 1
                    k += 1
                for k in range(c):
                    out_ids[out_n] = d
                    out_classes[out_n] = <uint8_t>top
                    out_n += 1
            out_offsets[t + 1] = out_n
    return out_ids_array[:out_n], out_classes_array[:out_n], out_offsets_array
