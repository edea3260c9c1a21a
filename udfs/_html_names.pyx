# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The class and id names written in an HTML page that may say what an element is, in one pass.

``NameScanner(words).names(html)`` returns two lists, for ``class`` and for ``id``: the names in ::

    set(" ".join(re.findall(r'''class=["']([^"'<>]*)''', html)).split())

(and the same with ``id=``), in the order that set iterates, that can be part of the CSS selector
``udfs/boilerplate.py`` builds: selectable (a letter, then letters, digits, ``_`` and ``-``), without
three digits in a row (a numbered instance), and containing one of ``words`` case-insensitively. A
name with a character outside ASCII is always kept, for the caller to judge (the regex classes of
word characters and digits take in more of Unicode, and ``str.lower()`` turns two such characters
into ASCII letters). The values are found with the pattern's very semantics: case-sensitive,
nothing between the word, ``=`` and the quote, a value ending at the first ``"``, ``'``, ``<`` or
``>`` (or at the end of the page), matches that do not overlap (each pattern going on from the end
of its last value) and that also start inside longer words (``data-class="``, ``grid='``), names
split at whatever ``str.split()`` counts as space.

A name is hashed and compared in the page's own buffer, so a repeated name costs no Python object.
Each set receives its names in the order they first occur, as ``set()`` over the split values does,
so it iterates in the same order: the caller's selector is the very string the regex gave.
"""
cimport cython
from cpython.set cimport PySet_Add, PySet_Contains
from cpython.unicode cimport (Py_UNICODE_ISSPACE, PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND,
                              PyUnicode_READ, PyUnicode_Substring)
from libc.stdint cimport int32_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memchr, memcmp

cdef uint64_t FNV_OFFSET = 0xCBF29CE484222325
cdef uint64_t FNV_PRIME = 0x100000001B3


cdef struct Slot:
    uint64_t hash
    Py_ssize_t start
    Py_ssize_t length  # 0: an empty slot (a name is never empty)


@cython.final
cdef class _Words:
    """The words as an Aho-Corasick automaton: one step a character finds whether a name holds one."""
    cdef int32_t* next_state  # states x letters: where a letter leads (every word's prefix is a state)
    cdef bint* holds_word  # whether the text read to reach a state ends with a word
    cdef int32_t letter_index[128]  # -1: a character no word has
    cdef Py_ssize_t letters

    def __cinit__(self, words):
        cdef Py_ssize_t state, letter
        cdef str word, char
        words = sorted({word.lower() for word in words})
        alphabet = sorted({char for word in words for char in word})
        if any(not char.isascii() for char in alphabet):
            raise ValueError("NameScanner: the words must be ASCII")
        for letter in range(128):
            self.letter_index[letter] = -1
        for letter, char in enumerate(alphabet):
            self.letter_index[ord(char)] = self.letter_index[ord(char.upper())] = letter
        self.letters = len(alphabet)
        # The trie of the words, then, breadth first, each state's fall-back (the longest suffix of its
        # text that is a state) completes its missing steps and its words.
        children = [{}]
        holds_word = [False]
        for word in words:
            state = 0
            for char in word:
                if char not in children[state]:
                    children[state][char] = len(children)
                    children.append({})
                    holds_word.append(False)
                state = children[state][char]
            holds_word[state] = True
        steps = [dict.fromkeys(alphabet, 0) for _ in children]
        fall_back = [0] * len(children)
        queue = [0]
        for state in queue:
            for char in alphabet:
                child = children[state].get(char)
                if child is None:
                    steps[state][char] = steps[fall_back[state]][char]
                    continue
                steps[state][char] = child
                if state:
                    fall_back[child] = steps[fall_back[state]][char]
                holds_word[child] = holds_word[child] or holds_word[fall_back[child]]
                queue.append(child)
        self.next_state = <int32_t*>calloc(len(children) * max(self.letters, 1), sizeof(int32_t))
        self.holds_word = <bint*>calloc(len(children), sizeof(bint))
        if self.next_state == NULL or self.holds_word == NULL:
            raise MemoryError()
        for state in range(len(children)):
            self.holds_word[state] = holds_word[state]
            for letter, char in enumerate(alphabet):
                self.next_state[state * self.letters + letter] = steps[state][char]

    def __dealloc__(self):
        free(self.next_state)
        free(self.holds_word)

    cdef bint may_name(self, int kind, const void* data, Py_ssize_t start, Py_ssize_t end) noexcept:
        """Whether ``html[start:end]`` has a character outside ASCII, or is a selectable name (a letter,
        then letters, digits, "_" and "-"), without three digits in a row, that contains a word."""
        cdef Py_ssize_t i, state = 0, letter, digits = 0
        cdef Py_UCS4 c
        cdef bint selectable = True, holds_word = self.holds_word[0]
        for i in range(start, end):
            c = PyUnicode_READ(kind, data, i)
            if c >= 128:
                return True
            if u'0' <= c <= u'9':
                digits += 1
                selectable = selectable and digits < 3 and i > start
            elif u'a' <= c <= u'z' or u'A' <= c <= u'Z':
                digits = 0
            else:
                digits = 0
                selectable = selectable and (c == u'_' or c == u'-') and i > start
            letter = self.letter_index[c]
            state = self.next_state[state * self.letters + letter] if letter >= 0 else 0
            holds_word = holds_word or self.holds_word[state]
        return selectable and holds_word


@cython.final
cdef class _Names:
    """One attribute's names: the set of all, those that may name something, and a hash table of
    where each distinct name is in the page."""
    cdef set names, maybe_named
    cdef Slot* slots
    cdef size_t mask
    cdef size_t used
    cdef Py_ssize_t resume  # where the attribute's pattern looks for its next match

    def __cinit__(self):
        self.names = set()
        self.maybe_named = set()
        self.mask = 255
        self.slots = <Slot*>calloc(self.mask + 1, sizeof(Slot))
        if self.slots == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.slots)

    cdef int _grow(self) except -1:
        cdef size_t old_mask = self.mask, i, j
        cdef Slot* old = self.slots
        cdef Slot* slots = <Slot*>calloc(2 * (old_mask + 1), sizeof(Slot))
        if slots == NULL:
            raise MemoryError()
        self.mask = 2 * old_mask + 1
        for i in range(old_mask + 1):
            if old[i].length:
                j = old[i].hash & self.mask
                while slots[j].length:
                    j = (j + 1) & self.mask
                slots[j] = old[i]
        self.slots = slots
        free(old)
        return 0

    cdef int add(self, _Words words, object html, int kind, const void* data, Py_ssize_t start,
                 Py_ssize_t end) except -1:
        """Adds the name ``html[start:end]`` unless the page had it already."""
        cdef uint64_t h = FNV_OFFSET
        cdef Py_ssize_t i, length = end - start
        for i in range(start, end):
            h = (h ^ <uint64_t>PyUnicode_READ(kind, data, i)) * FNV_PRIME
        h ^= h >> 29  # FNV's low bits, the slot index, depend on the last characters only
        i = h & self.mask
        while self.slots[i].length:
            if (self.slots[i].hash == h and self.slots[i].length == length and memcmp(
                    <const char*>data + self.slots[i].start * kind, <const char*>data + start * kind,
                    length * kind) == 0):
                return 0
            i = (i + 1) & self.mask
        self.slots[i].hash, self.slots[i].start, self.slots[i].length = h, start, length
        name = PyUnicode_Substring(html, start, end)
        PySet_Add(self.names, name)
        if words.may_name(kind, data, start, end):
            PySet_Add(self.maybe_named, name)
        self.used += 1
        if 2 * self.used > self.mask:
            self._grow()
        return 0

    cdef Py_ssize_t add_value(self, _Words words, object html, int kind, const void* data, Py_ssize_t n,
                              Py_ssize_t start) except -1:
        """Adds the names of the value starting at ``start``; returns where the value ends."""
        cdef Py_ssize_t i = start, name_start = -1
        cdef Py_UCS4 c
        while i < n:
            c = PyUnicode_READ(kind, data, i)
            if c == u'"' or c == u"'" or c == u'<' or c == u'>':
                break
            if Py_UNICODE_ISSPACE(c):
                if name_start >= 0:
                    self.add(words, html, kind, data, name_start, i)
                    name_start = -1
            elif name_start < 0:
                name_start = i
            i += 1
        if name_start >= 0:
            self.add(words, html, kind, data, name_start, i)
        return i

    cdef list maybe_named_in_set_order(self):
        if not self.maybe_named:
            return []
        return [name for name in self.names if PySet_Contains(self.maybe_named, name)]


cdef inline bint written_before(int kind, const void* data, Py_ssize_t i, const char* word,
                                Py_ssize_t length) noexcept:
    """Whether the ASCII ``word`` ends just before position ``i`` (the caller checked there is room)."""
    cdef Py_ssize_t k
    for k in range(length):
        if PyUnicode_READ(kind, data, i - length + k) != <Py_UCS4>word[k]:
            return False
    return True


@cython.final
cdef class NameScanner:
    """``NameScanner(words).names(html)`` -> (class names, id names) (see the module's docstring)."""
    cdef _Words words

    def __cinit__(self, words):
        self.words = _Words(words)

    def names(self, html):
        if not isinstance(html, str):
            raise TypeError(f"NameScanner.names() takes a str, not {type(html).__name__}")
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(html), i, at = 0
        cdef int kind = PyUnicode_KIND(html)
        cdef const char* data = <const char*>PyUnicode_DATA(html)
        cdef const char* equals
        cdef Py_UCS4 quote
        cdef _Names classes = _Names(), ids = _Names()
        # Every match has "=" and a quote at a fixed place after its start: find each "=" (memchr over
        # the bytes, then the character holding that byte) and look at what stands around it.
        while True:
            equals = <const char*>memchr(data + at, ord("="), n * kind - at)
            if equals == NULL:
                break
            at = equals - data + 1
            i = (equals - data) // kind  # the character holding the byte: "=" or a wider one
            if PyUnicode_READ(kind, data, i) != u'=' or i + 1 >= n:
                continue
            quote = PyUnicode_READ(kind, data, i + 1)
            if quote != u'"' and quote != u"'":
                continue
            if i - 5 >= classes.resume and written_before(kind, data, i, "class", 5):
                classes.resume = classes.add_value(self.words, html, kind, data, n, i + 2)
            elif i - 2 >= ids.resume and written_before(kind, data, i, "id", 2):
                ids.resume = ids.add_value(self.words, html, kind, data, n, i + 2)
        return classes.maybe_named_in_set_order(), ids.maybe_named_in_set_order()
