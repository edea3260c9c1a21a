# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The listed words and phrases a text contains (``udfs/filter/badwords.py``'s C4 signal), in compiled code.

``WordSequenceMatcher(sequences).found(re.findall(r"\\w+", text))`` is the definition;
``TextMatcher(sequences).found(text)`` returns the same set without a Python string per token. It
walks the text's code points for maximal runs of word characters (``re``'s ``\\w`` on str:
``ch.isalnum() or ch == "_"``), hashes each run on the way, and makes a string only of a run whose
length and hash are those of a word that starts an entry. That string is then looked up, and a
phrase's following words are compared code point by code point, so a hash collision costs time,
never a wrong count.
"""
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_KIND, PyUnicode_READ, PyUnicode_Substring
from libc.stdint cimport uint64_t
from libc.stdlib cimport calloc, free

cdef extern from "Python.h":
    bint Py_UNICODE_ISALNUM(Py_UCS4 ch) nogil

cdef uint64_t FNV_OFFSET = 0xCBF29CE484222325
cdef uint64_t FNV_PRIME = 0x100000001B3

# ASCII word characters, the common case, from a table; the rest from the Unicode database.
cdef bint ASCII_WORD[128]
for _code in range(128):
    ASCII_WORD[_code] = chr(_code).isalnum() or _code == ord("_")


cdef inline bint is_word_char(Py_UCS4 ch) noexcept nogil:
    if ch < 128:
        return ASCII_WORD[ch]
    return Py_UNICODE_ISALNUM(ch)


def word_char(Py_UCS4 ch):
    """Whether ``ch`` is a word character here (tests compare it with ``re``'s ``\\w``)."""
    return is_word_char(ch)


cdef inline uint64_t hash_step(uint64_t h, Py_UCS4 ch) noexcept nogil:
    return (h ^ <uint64_t>ch) * FNV_PRIME  # FNV-1a over code points


cdef inline uint64_t hash_key(uint64_t h) noexcept nogil:
    return h if h else 1  # 0 marks an empty slot


cdef class TextMatcher:
    """Finds listed entries (word sequences, as ``udfs.filter.badwords.word_sequences`` makes them) in a text."""
    cdef uint64_t* slots  # open addressing: hash keys of the words that start an entry
    cdef Py_ssize_t mask
    cdef Py_ssize_t shortest, longest  # their lengths in code points
    cdef dict starts  # word -> (listed alone, the phrases it starts)

    def __cinit__(self, sequences):
        cdef Py_ssize_t size = 16
        cdef uint64_t key
        cdef Py_ssize_t slot
        alone = {s[0] for s in sequences if len(s) == 1}
        phrases = {}
        for sequence in sorted(s for s in sequences if len(s) > 1):
            phrases.setdefault(sequence[0], []).append(sequence)
        self.starts = {word: (word in alone, tuple(phrases.get(word, ()))) for word in alone | phrases.keys()}
        while size < 4 * len(self.starts):
            size *= 2
        self.slots = <uint64_t*>calloc(size, sizeof(uint64_t))
        if self.slots is NULL:
            raise MemoryError()
        self.mask = size - 1
        self.shortest = min(map(len, self.starts), default=1)
        self.longest = max(map(len, self.starts), default=0)
        for word in self.starts:
            key = FNV_OFFSET
            for ch in word:
                key = hash_step(key, ch)
            key = hash_key(key)
            slot = key & self.mask
            while self.slots[slot] != 0 and self.slots[slot] != key:
                slot = (slot + 1) & self.mask
            self.slots[slot] = key

    def __dealloc__(self):
        free(self.slots)

    cdef inline bint may_start(self, uint64_t key) noexcept:
        cdef Py_ssize_t slot = key & self.mask
        while self.slots[slot] != 0:
            if self.slots[slot] == key:
                return True
            slot = (slot + 1) & self.mask
        return False

    def found(self, str text):
        """The entries in ``text`` (already lower-cased, as the entries are): a set of word tuples."""
        cdef int kind = PyUnicode_KIND(text)
        cdef void* data = PyUnicode_DATA(text)
        cdef Py_ssize_t n = len(text), i = 0, start
        cdef Py_UCS4 ch
        cdef uint64_t key
        hits = set()
        while i < n:
            ch = PyUnicode_READ(kind, data, i)
            i += 1
            if not is_word_char(ch):
                continue
            start = i - 1
            key = hash_step(FNV_OFFSET, ch)
            while i < n:
                ch = PyUnicode_READ(kind, data, i)
                if not is_word_char(ch):
                    break
                key = hash_step(key, ch)
                i += 1
            if self.shortest <= i - start <= self.longest and self.may_start(hash_key(key)):
                self.add_entries(text, start, i, hits)
        return hits

    cdef add_entries(self, str text, Py_ssize_t start, Py_ssize_t end, set hits):
        """Adds the entries that begin with the word text[start:end] there."""
        word = PyUnicode_Substring(text, start, end)
        entry = self.starts.get(word)
        if entry is None:  # a hash collision
            return
        alone, phrases = entry
        if alone:
            hits.add((word,))
        for phrase in phrases:
            if phrase not in hits and followed_by(text, end, phrase):
                hits.add(phrase)


cdef bint followed_by(str text, Py_ssize_t position, tuple phrase):
    """Whether the words of text after ``position`` are phrase[1:], each a whole word."""
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t n = len(text), i = position, k, length
    cdef Py_UCS4 listed
    cdef str word
    for word in phrase[1:]:
        while i < n and not is_word_char(PyUnicode_READ(kind, data, i)):
            i += 1
        length = len(word)
        if i + length > n:
            return False
        for k in range(length):
            listed = word[k]
            if PyUnicode_READ(kind, data, i + k) != listed:
                return False
        i += length
        if i < n and is_word_char(PyUnicode_READ(kind, data, i)):
            return False  # the text's word goes on
    return True
