# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""A page's text units from one parse and two walks over lexbor's DOM: main content, element pass,
whole page.

The HTML is parsed by lexbor (the copy inside selectolax, bound in udfs/extract/_lexbor.pyx). A first
walk measures every element (its text and link text, what its class, id and other attributes say); a
second records every visible text node as a piece of a unit (a paragraph, heading, ``pre`` or line, cut
where resiliparse's ``minimal_html`` cut them) with two marks: outside the main content (``MAIN``:
resiliparse's rules, by tag, depth, link density, role and class/id names; udfs/extract/main_content.py)
and inside page furniture (``FURNITURE``: the element pass of udfs/extract/boilerplate.py).
``PageUnits.units(mask)`` then joins the pieces that carry none of the masked marks, so the main
content with or without the element pass and the whole page come from one parse (resiliparse
needed a selector built per page and up to three extractions for them).

What a class/id pair means is asked of a Python function (``name_bits``) once per worker and kept
in a table keyed by a 64-bit hash of the pair; only the names that hold a keyword are handed over,
and elements without either attribute cost no look-up.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport uint8_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memchr, memcmp

from udfs.extract._lexbor cimport (NODE_ELEMENT, NODE_TEXT, Lexbor, cm_attr_t, cm_chardata_t, cm_element_t,
                                   cm_node_t, cm_str_t, tag_ids)
from udfs.extract._lexbor cimport load as load_lexbor


cdef extern from "string.h" nogil:
    void *memmem(const void *haystack, size_t haystacklen, const void *needle, size_t needlelen)


# The deepest nesting of elements a page may have (real pages: median 13, the deepest of 4,120 from
# the development sets and the bench 165); lexbor parses 5,000 nested elements in ~20 ms.
MAX_NESTING_DEPTH = 5000


class TooDeep(ValueError):
    """A page whose elements nest deeper than ``MAX_NESTING_DEPTH`` (``depth``: where the count stopped)."""

    def __init__(self, depth):
        super().__init__(f"elements nested deeper than {MAX_NESTING_DEPTH}")
        self.depth = depth


# Marks on a piece of text; a view masks some of them out.
MAIN = 1          # outside the main content
FURNITURE = 2     # inside an element the element pass drops

# What a class/id pair says (``name_bits`` returns an OR of these; resiliparse's patterns, each
# tested where resiliparse tests it: on the class, or on the class and the id).
NAME_HIDDEN = 1          # class: display-none, hidden, invisible…
NAME_SKIP_LINK = 2       # skip links, pagination, permalinks (on a, div and li)
NAME_DEEP_FURNITURE = 4  # class: sign-in and social/share boxes (below the body's first levels)
NAME_ADS = 8             # logos, ads, spinners
NAME_ARTICLE = 16        # the article's container: a block that is main content whatever else it says
NAME_BLOCK_FURNITURE = 32  # a block that is a header, footer, navigation, related list, comments, search,
                           # sidebar, modal, gallery or print-only (and landmark ids: header, footer…)
NAME_ZONE = 64           # class: the main-content zone (article-body, post-content…)
NAME_FURNITURE = 128     # the element pass's furniture names
NAME_CONTENT = 256       # the element pass's content names (its veto)

# Tag categories, found by name at start-up (lexbor's tag ids for HTML are fixed per version).
DEF CAT_SKIP = 1       # no text: script, style, media, figures, form controls, head
DEF CAT_BLOCK = 2      # starts and ends a unit
DEF CAT_KIND = 4       # p, h1-h6, pre: the unit's kind
DEF CAT_LINK = 8       # a
DEF CAT_BR = 16
DEF CAT_CELL = 32      # td, th: a space between cells
DEF CAT_KEPT = 64      # html, body, main, article: never furniture
DEF CAT_LANDMARK = 128  # h1, main, article: an element holding one is not furniture
DEF CAT_P = 256
DEF CAT_FORM = 512     # furniture by tag (the element pass)
DEF CAT_NOT_MAIN = 1024  # nav, aside, time (audio and video are skipped)
DEF CAT_MAIN = 2048    # body, main, h1: main content

# resiliparse skips these in every mode (with alt texts, form fields and noscript off, as corpusmill
# calls it); the head and its elements hold no body text.
_SKIP_TAGS = ("script style iframe frame template object video audio area svg figcaption figure noscript "
              "textarea input button select option label head title meta link base")
_BLOCK_TAGS = ("address article aside blockquote body center dd details dialog dir div dl dt fieldset figcaption "
               "figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr html legend li listing main menu nav ol p "
               "pre section summary table tbody thead tfoot tr ul caption")
_KINDS = ("p", "h1", "h2", "h3", "h4", "h5", "h6", "pre")
# ARIA roles of blocks that are not main content, and rel/itemprop values of elements that are not.
_NOT_MAIN_ROLES = frozenset((b"alert", b"banner", b"checkbox", b"comment", b"complementary", b"contentinfo", b"dialog",
                             b"img", b"menu", b"menubar", b"menuitem", b"navigation", b"presentation", b"radio",
                             b"search", b"searchbox", b"separator", b"tab", b"toolbar", b"tooltip"))
_NOT_MAIN_RELS = frozenset((b"author", b"icon", b"search", b"prev", b"next", b"tag"))
_NOT_MAIN_ITEMPROPS = frozenset((b"datePublished", b"author", b"url"))
DEF TAG_TABLE = 512
DEF CACHE_SLOTS = 65536  # class/id pairs remembered (a power of two); emptied when three quarters full

cdef Lexbor _lexbor  # lexbor's functions (all NULL until ``load``)
cdef uint32_t _tag_cat[TAG_TABLE]
cdef uintptr_t _kind_tag[8]
cdef uintptr_t _tag_body, _tag_footer, _tag_ul, _tag_article, _tag_div, _tag_a, _tag_li, _tag_td


def load(str module_path):
    """Look up lexbor's functions in selectolax's compiled module (already imported by the caller)."""
    load_lexbor(module_path, &_lexbor)
    _learn_tags()


cdef void _learn_tags() except *:
    """Each tag's category by its lexbor id, and the ids the walk compares with."""
    global _tag_body, _tag_footer, _tag_ul, _tag_article, _tag_div, _tag_a, _tag_li, _tag_td
    cdef dict categories = {}
    cdef str name
    for name in _SKIP_TAGS.split():
        categories[name] = categories.get(name, 0) | CAT_SKIP
    for name in _BLOCK_TAGS.split():
        categories[name] = categories.get(name, 0) | CAT_BLOCK
    for name in _KINDS:
        categories[name] |= CAT_KIND
    for name in ("nav", "aside", "time"):
        categories[name] = categories.get(name, 0) | CAT_NOT_MAIN
    for name, extra in (("a", CAT_LINK), ("br", CAT_BR), ("td", CAT_CELL), ("th", CAT_CELL), ("html", CAT_KEPT),
                        ("body", CAT_KEPT | CAT_MAIN), ("main", CAT_KEPT | CAT_LANDMARK | CAT_MAIN),
                        ("article", CAT_KEPT | CAT_LANDMARK), ("h1", CAT_LANDMARK | CAT_MAIN), ("p", CAT_P),
                        ("form", CAT_FORM), ("footer", 0), ("ul", 0), ("div", 0), ("li", 0)):
        categories[name] = categories.get(name, 0) | extra
    cdef int i
    for i in range(TAG_TABLE):
        _tag_cat[i] = 0
    cdef dict ids = tag_ids(&_lexbor, categories, TAG_TABLE)
    for name, category in categories.items():
        _tag_cat[<uintptr_t>ids[name]] = category
    for i, name in enumerate(_KINDS):
        _kind_tag[i] = ids[name]
    _tag_body, _tag_footer, _tag_ul, _tag_article = ids["body"], ids["footer"], ids["ul"], ids["article"]
    _tag_div, _tag_a, _tag_li, _tag_td = ids["div"], ids["a"], ids["li"], ids["td"]


# What an element's other attributes say (found in the first pass).
DEF ATTR_HIDDEN = 1        # hidden, aria-hidden="true", or a style that hides it: no text in any view
DEF ATTR_NOT_MAIN = 2      # rel, itemprop, aria-expanded="false" or data-ad*: not main content
DEF ATTR_ROLE_NOT_MAIN = 4  # a role of furniture (counts on blocks)
DEF ATTR_ROLE_MAIN = 8     # role="main" (a main-content zone)
DEF ATTR_ARTICLE_BODY = 16  # itemprop="articleBody" (holds content, for the element pass)


cdef struct Element:
    Py_ssize_t text         # bytes of its text, spaces collapsed
    Py_ssize_t link_text    # ... of that, inside links
    uint32_t names          # NAME_* bits of its class and id
    uint8_t attributes      # ATTR_* bits
    bint has_names          # has a class or an id


cdef struct Frame:
    cm_node_t *node
    cm_node_t *cursor       # the next child to visit
    Py_ssize_t element      # its index in the first pass's table
    uint32_t category
    uint8_t marks           # MAIN when it or an ancestor is outside the main content
    bint holds_content      # holds an h1, main, article, articleBody or a third p among siblings
    bint is_landmark        # is one of those (for its parent)
    int paragraphs          # its p children so far
    Py_ssize_t first_piece


cdef struct Piece:
    Py_ssize_t start        # in the page's text buffer
    Py_ssize_t length       # -1: a line break inside a paragraph or heading
    Py_ssize_t unit
    uint8_t marks
    bint link


cdef inline uint64_t _hash(const unsigned char *data, size_t length, uint64_t h) noexcept nogil:
    cdef size_t i
    for i in range(length):
        h = (h ^ data[i]) * 1099511628211ULL
    return h


cdef class Unit:
    """One paragraph, heading or line of a page's text: its element (``p``, ``h1`` … ``h6``, ``pre``, or
    ``text`` for a line outside them), its text, its length in characters and words (spaces + 1), and
    how many of its characters are link text; ``furniture``: whether its text is a furniture line, as
    the block pass found (``None`` before), for the line pass to reuse; ``index``: its place among the
    page's units, the same in every view (-1: not from a page). (Fields: _page_walk.pxd.)"""

    def __init__(self, kind, text, link_chars, index=-1):
        self.kind, self.text, self.link_chars, self.index = kind, text, link_chars, index
        self.chars = len(text)
        self.words = text.count(" ") + 1


DEF MAX_KEYWORDS = 48  # per first letter


cdef inline unsigned char _lower(unsigned char c) noexcept nogil:
    return c + 32 if 65 <= c <= 90 else c


cdef inline bint _is_letter(unsigned char c) noexcept nogil:
    return 97 <= _lower(c) <= 122


cdef class NameTable:
    """class/id pair → NAME_* bits, asked of ``name_bits(class_tokens, id_value)`` once per pair.

    Only the tokens that contain one of ``keywords`` (ASCII, case ignored; a two-letter one only at
    the start of a word) can mean anything, and only those are handed to ``name_bits``: most of a
    page's names (layout classes, generated ones such as ``sc-17u56a6-1``) cost no Python at all."""
    cdef uint64_t *keys
    cdef uint32_t *values
    cdef Py_ssize_t count
    cdef object name_bits
    cdef list keep_alive
    cdef const unsigned char *keywords[26][MAX_KEYWORDS]
    cdef size_t lengths[26][MAX_KEYWORDS]
    cdef int n_keywords[26]

    def __cinit__(self, name_bits, keywords):
        self.keys = <uint64_t *>malloc(CACHE_SLOTS * sizeof(uint64_t))
        self.values = <uint32_t *>malloc(CACHE_SLOTS * sizeof(uint32_t))
        if self.keys == NULL or self.values == NULL:
            raise MemoryError()
        self.name_bits = name_bits
        self.keep_alive = []
        cdef int i, letter
        for i in range(26):
            self.n_keywords[i] = 0
        cdef bytes word
        for keyword in sorted(set(keywords)):
            word = keyword.lower().encode("ascii")
            if len(word) < 2 or not _is_letter(word[0]):
                raise ValueError(f"a keyword must start with a letter and have two characters or more: {keyword!r}")
            letter = word[0] - 97
            if self.n_keywords[letter] >= MAX_KEYWORDS:
                raise ValueError(f"more than {MAX_KEYWORDS} keywords start with {keyword[0]!r}")
            self.keep_alive.append(word)
            self.keywords[letter][self.n_keywords[letter]] = <const unsigned char *>PyBytes_AS_STRING(word)
            self.lengths[letter][self.n_keywords[letter]] = len(word)
            self.n_keywords[letter] += 1
        self.clear()

    def __dealloc__(self):
        free(self.keys)
        free(self.values)

    cdef void clear(self) noexcept:
        cdef Py_ssize_t i
        for i in range(CACHE_SLOTS):
            self.keys[i] = 0
        self.count = 0

    cdef bint may_name(self, const unsigned char *token, size_t length) noexcept nogil:
        """Whether ``token`` holds a keyword."""
        cdef size_t i, j, k, size
        cdef int letter
        cdef const unsigned char *keyword
        for i in range(length):
            letter = _lower(token[i]) - 97
            if letter < 0 or letter >= 26:
                continue
            for k in range(self.n_keywords[letter]):
                size = self.lengths[letter][k]
                if i + size > length:
                    continue
                keyword = self.keywords[letter][k]
                j = 1
                while j < size and _lower(token[i + j]) == keyword[j]:
                    j += 1
                if j == size and (size > 2 or i == 0 or not _is_letter(token[i - 1])):
                    return True
        return False

    def holds_keyword(self, str token):
        """``may_name`` for a test."""
        cdef bytes data = token.encode("utf-8")
        return self.may_name(<const unsigned char *>PyBytes_AS_STRING(data), len(data))

    cdef uint32_t bits(self, cm_attr_t *cls, cm_attr_t *ident) except? 0xFFFFFFFF:
        cdef cm_str_t *cls_value = NULL if cls == NULL else cls.value
        cdef cm_str_t *id_value = NULL if ident == NULL else ident.value
        cdef uint64_t key = 14695981039346656037ULL
        if cls_value != NULL:
            key = _hash(cls_value.data, cls_value.length, key)
        key = (key ^ 0x1F) * 1099511628211ULL
        if id_value != NULL:
            key = _hash(id_value.data, id_value.length, key)
        key |= 1  # 0 marks a free slot
        cdef Py_ssize_t slot = key & (CACHE_SLOTS - 1)
        while self.keys[slot] != 0:
            if self.keys[slot] == key:
                return self.values[slot]
            slot = (slot + 1) & (CACHE_SLOTS - 1)
        if self.count >= CACHE_SLOTS * 3 // 4:
            self.clear()
            slot = key & (CACHE_SLOTS - 1)
        cdef uint32_t value = self._ask(cls_value, id_value)
        self.keys[slot] = key
        self.values[slot] = value
        self.count += 1
        return value

    cdef uint32_t _ask(self, cm_str_t *cls_value, cm_str_t *id_value) except? 0xFFFFFFFF:
        """``name_bits`` of the class tokens and the id that hold a keyword (0 without asking when none does)."""
        cdef list tokens = []
        cdef size_t start = 0, end
        if cls_value != NULL:
            while start < cls_value.length:
                while start < cls_value.length and _is_space(cls_value.data[start]):
                    start += 1
                end = start
                while end < cls_value.length and not _is_space(cls_value.data[end]):
                    end += 1
                if end > start and self.may_name(cls_value.data + start, end - start):
                    tokens.append(PyUnicode_DecodeUTF8(<char *>cls_value.data + start, end - start, "replace"))
                start = end
        cdef str id_text = ""
        if id_value != NULL and self.may_name(id_value.data, id_value.length):
            id_text = PyUnicode_DecodeUTF8(<char *>id_value.data, id_value.length, "replace")
        if not tokens and not id_text:
            return 0
        return self.name_bits(tokens, id_text)


cdef inline bint _is_space(unsigned char c) noexcept nogil:
    return c == 32 or c == 9 or c == 10 or c == 13 or c == 12


cdef inline bint _equals(const unsigned char *data, size_t length, const char *literal, size_t literal_length) noexcept nogil:
    return length == literal_length and memcmp(data, literal, length) == 0


cdef inline bint _value_is(cm_str_t *value, const char *literal, size_t length) noexcept nogil:
    return value != NULL and _equals(value.data, value.length, literal, length)


cdef inline bytes _value_bytes(cm_str_t *value):
    return b"" if value == NULL else value.data[:value.length]


cdef bint _style_hides(cm_str_t *value) noexcept nogil:
    """``display:none`` or ``visibility:hidden`` in a style attribute (spaces and case ignored)."""
    if value == NULL:
        return False
    cdef unsigned char[24] folded
    cdef size_t i, n = 0
    cdef unsigned char c
    for i in range(value.length):
        c = value.data[i]
        if _is_space(c):
            continue
        if 65 <= c <= 90:
            c += 32
        if c == 59:  # ";" ends a declaration
            n = 0
            continue
        if n < 24:
            folded[n] = c
            n += 1
        if (n == 12 and memcmp(folded, b"display:none", 12) == 0) or \
                (n == 17 and memcmp(folded, b"visibility:hidden", 17) == 0):
            return True
    return False


cdef class PageUnits:
    """The pieces of one page's text; ``units(mask)`` joins those without the masked marks."""
    cdef unsigned char *text
    cdef Piece *pieces
    cdef Py_ssize_t n_pieces, text_length
    cdef uint8_t *unit_kinds

    def __dealloc__(self):
        free(self.text)
        free(self.pieces)
        free(self.unit_kinds)

    def units(self, int mask):
        """The non-empty units made of the pieces that carry none of ``mask``'s marks, as ``Unit``s."""
        cdef list result = []
        cdef unsigned char *out = <unsigned char *>malloc(self.text_length + self.n_pieces + 1)
        if out == NULL:
            raise MemoryError()
        cdef Py_ssize_t i = 0
        try:
            while i < self.n_pieces:
                i = self._join(i, mask, out, result)
        finally:
            free(out)
        return result

    def text_ends(self, int mask):
        """For each unit of the page, by its ``index``: the characters of text (spaces left out) in the
        view without ``mask``'s marks up to the end of that unit. The text between two units of one
        view is measured in another by subtracting two of these."""
        cdef Py_ssize_t n_units = self.pieces[self.n_pieces - 1].unit + 1 if self.n_pieces else 0
        cdef list ends = [0] * n_units
        cdef Py_ssize_t i, j, unit = 0, total = 0
        cdef unsigned char c
        cdef Piece *piece
        for i in range(self.n_pieces):
            piece = &self.pieces[i]
            while unit < piece.unit:
                ends[unit] = total
                unit += 1
            if piece.marks & mask or piece.length <= 0:
                continue
            for j in range(piece.start, piece.start + piece.length):
                c = self.text[j]
                if not _is_space(c) and (c & 0xC0) != 0x80:  # a character's first byte
                    total += 1
        while unit < n_units:
            ends[unit] = total
            unit += 1
        return ends

    cdef Py_ssize_t _join(self, Py_ssize_t i, int mask, unsigned char *out, list result) except -1:
        """Join the pieces of the unit that starts at piece ``i``: spaces collapsed (but in ``pre``),
        line breaks kept, the ends stripped; returns the next unit's first piece."""
        cdef Py_ssize_t unit = self.pieces[i].unit, n = 0, link_chars = 0, j, first, last
        cdef uint8_t kind = self.unit_kinds[unit]
        cdef bint pre = kind == 8, pending_space = False, space_in_link = False
        cdef unsigned char c
        cdef Piece *piece
        while i < self.n_pieces and self.pieces[i].unit == unit:
            piece = &self.pieces[i]
            i += 1
            if piece.marks & mask:
                continue
            if piece.length < 0:
                while n and out[n - 1] == 32:
                    n -= 1
                out[n] = 10
                n += 1
                pending_space = False
                continue
            for j in range(piece.start, piece.start + piece.length):
                c = self.text[j]
                if not pre and _is_space(c):
                    space_in_link = piece.link and (space_in_link or not pending_space)
                    pending_space = True
                    continue
                if pending_space:
                    if n and out[n - 1] != 10:
                        out[n] = 32
                        n += 1
                        link_chars += space_in_link and piece.link  # a space inside a link is link text
                    pending_space = False
                out[n] = c
                n += 1
                if piece.link and (c & 0xC0) != 0x80:
                    link_chars += 1
        first, last = 0, n
        while first < last and _is_space(out[first]):
            first += 1
        while last > first and _is_space(out[last - 1]):
            last -= 1
        if last > first:
            result.append(Unit(_KINDS[kind - 1] if kind else "text",
                               PyUnicode_DecodeUTF8(<char *>out + first, last - first, "replace"), link_chars,
                               unit))
        return i


cdef class PageWalker:
    """Parses pages and walks them; one per worker (its name table serves every page)."""
    cdef NameTable names
    cdef Element *elements
    cdef Py_ssize_t n_elements, elements_cap
    cdef Frame *frames
    cdef Py_ssize_t frames_cap
    cdef unsigned char *text
    cdef Py_ssize_t text_length, text_cap
    cdef Piece *pieces
    cdef Py_ssize_t n_pieces, pieces_cap
    cdef uint8_t *unit_kinds
    cdef Py_ssize_t n_units, units_cap
    cdef Py_ssize_t *ranges  # first and end piece of each furniture element, in pairs
    cdef Py_ssize_t n_ranges, ranges_cap
    cdef int links, kinds     # open <a> and p/h/pre elements
    cdef cm_node_t *zone      # the one main-content zone, if the page names exactly one

    def __cinit__(self, name_bits, keywords):
        if _lexbor.create == NULL:
            raise RuntimeError("udfs.extract._page_walk.load() was not called")
        self.names = NameTable(name_bits, keywords)

    def __dealloc__(self):
        free(self.elements)
        free(self.frames)
        free(self.text)
        free(self.pieces)
        free(self.unit_kinds)
        free(self.ranges)

    def walk(self, str html):
        """Parse ``html`` and return its ``PageUnits``; ``TooDeep`` for a page whose elements nest
        deeper than ``MAX_NESTING_DEPTH`` (its parse alone would cost seconds to hours)."""
        cdef bytes data = html.encode("utf-8", "replace")
        cdef Py_ssize_t depth = _nesting_depth(<const unsigned char *>PyBytes_AS_STRING(data), len(data),
                                               MAX_NESTING_DEPTH)
        if depth > MAX_NESTING_DEPTH:
            raise TooDeep(depth)
        cdef void *document = _lexbor.create()
        if document == NULL:
            raise MemoryError()
        self.n_elements = self.n_pieces = self.n_units = self.n_ranges = self.text_length = 0
        self.links = self.kinds = 0
        self.zone = NULL
        cdef cm_node_t *body
        try:
            if _lexbor.parse(document, <const unsigned char *>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data)) != 0:
                raise ValueError("lexbor could not parse the page")
            body = <cm_node_t *>_lexbor.body(document)
            if body != NULL:
                self._measure(body)
                self._walk(body)
        finally:
            _lexbor.destroy(document)
        self._mark_furniture()
        cdef PageUnits page = PageUnits.__new__(PageUnits)
        page.text, page.text_length = self.text, self.text_length
        page.pieces, page.n_pieces = self.pieces, self.n_pieces
        page.unit_kinds = self.unit_kinds
        self.text, self.pieces, self.unit_kinds = NULL, NULL, NULL
        self.text_cap = self.pieces_cap = self.units_cap = 0
        return page

    cdef int _grow(self, void **array, Py_ssize_t *capacity, Py_ssize_t needed, size_t item) except -1:
        cdef Py_ssize_t new_capacity = max(needed, 2 * capacity[0], 64)
        cdef void *grown = realloc(array[0], new_capacity * item)
        if grown == NULL:
            raise MemoryError()
        array[0] = grown
        capacity[0] = new_capacity
        return 0

    # ---- first pass: every element's attributes, and its text and link text lengths ----

    cdef int _measure(self, cm_node_t *body) except -1:
        """Number the elements under ``body`` (in ``node.user``) and fill their table, children before
        parents; find the main-content zone."""
        cdef Py_ssize_t depth = 0, zones = 0, index, parent
        cdef cm_node_t *node
        cdef cm_chardata_t *characters
        self._number(body)
        self._open(body, &depth)
        while depth > 0:
            node = self.frames[depth - 1].cursor
            if node == NULL:
                depth -= 1
                index = self.frames[depth].element
                if self.frames[depth].category & CAT_LINK:
                    self.elements[index].link_text = self.elements[index].text
                if depth > 0:
                    parent = self.frames[depth - 1].element
                    self.elements[parent].text += self.elements[index].text
                    self.elements[parent].link_text += self.elements[index].link_text
                continue
            self.frames[depth - 1].cursor = node.next
            if node.type == NODE_TEXT:
                characters = <cm_chardata_t *>node
                self.elements[self.frames[depth - 1].element].text += _collapsed_length(
                    characters.data.data, characters.data.length)
            elif node.type == NODE_ELEMENT:
                index = self._number(node)
                if (self.elements[index].names & NAME_ZONE) or (self.elements[index].attributes & ATTR_ROLE_MAIN):
                    zones += 1
                    self.zone = node
                self._open(node, &depth)
        if zones != 1:
            self.zone = NULL
        return 0

    cdef Py_ssize_t _number(self, cm_node_t *node) except -1:
        if self.n_elements >= self.elements_cap:
            self._grow(<void **>&self.elements, &self.elements_cap, self.n_elements + 1, sizeof(Element))
        cdef Py_ssize_t index = self.n_elements
        cdef Element *element = &self.elements[index]
        self.n_elements += 1
        node.user = <void *>(index + 1)
        element.text = element.link_text = 0
        self._read_attributes(<cm_element_t *>node, element)
        return index

    cdef int _open(self, cm_node_t *node, Py_ssize_t *depth) except -1:
        if depth[0] >= self.frames_cap:
            self._grow(<void **>&self.frames, &self.frames_cap, depth[0] + 1, sizeof(Frame))
        cdef Frame *frame = &self.frames[depth[0]]
        frame.node, frame.cursor, frame.element = node, node.first_child, <Py_ssize_t>node.user - 1
        frame.category = _tag_cat[node.local_name] if node.local_name < TAG_TABLE else 0
        depth[0] += 1
        return 0

    cdef int _read_attributes(self, cm_element_t *element, Element *into) except -1:
        into.names = 0
        into.attributes = 0
        into.has_names = element.attr_class != NULL or element.attr_id != NULL
        if into.has_names:
            into.names = self.names.bits(element.attr_class, element.attr_id)
        cdef cm_attr_t *attribute = element.first_attr
        cdef const unsigned char *name
        cdef size_t length
        cdef cm_str_t *value
        while attribute != NULL:
            if attribute != element.attr_class and attribute != element.attr_id:
                name = _lexbor.attr_name(attribute, &length)
                value = attribute.value
                if _equals(name, length, b"hidden", 6) or (_equals(name, length, b"aria-hidden", 11)
                                                           and _value_is(value, b"true", 4)) \
                        or (_equals(name, length, b"style", 5) and _style_hides(value)):
                    into.attributes |= ATTR_HIDDEN
                elif _equals(name, length, b"role", 4):
                    into.attributes |= (ATTR_ROLE_NOT_MAIN if _value_bytes(value) in _NOT_MAIN_ROLES
                                        else ATTR_ROLE_MAIN if _value_is(value, b"main", 4) else 0)
                elif _equals(name, length, b"itemprop", 8):
                    into.attributes |= (ATTR_NOT_MAIN if _value_bytes(value) in _NOT_MAIN_ITEMPROPS
                                        else ATTR_ARTICLE_BODY if _value_is(value, b"articleBody", 11) else 0)
                elif (_equals(name, length, b"rel", 3) and _value_bytes(value) in _NOT_MAIN_RELS) \
                        or (_equals(name, length, b"aria-expanded", 13) and _value_is(value, b"false", 5)) \
                        or _equals(name, length, b"data-ad", 7) or _equals(name, length, b"data-advertisement", 18) \
                        or _equals(name, length, b"data-text-ad", 12):
                    into.attributes |= ATTR_NOT_MAIN
            attribute = attribute.next
        return 0

    cdef bint _link_cluster(self, Element *element, double max_ratio, Py_ssize_t max_length) noexcept:
        """More than ``max_ratio`` of its text is link text (not asked above ``max_length`` bytes)."""
        if max_length and element.text > max_length:
            return False
        return element.link_text > 0 and element.link_text > max_ratio * element.text

    cdef bint _is_main(self, cm_node_t *node, Element *element, uint32_t category, Py_ssize_t body_depth) noexcept:
        """resiliparse's main-content rules for an element ``body_depth`` levels below <body>."""
        cdef uintptr_t tag = node.local_name
        cdef uint32_t names = element.names
        if category & CAT_MAIN:
            return True
        if tag == _tag_footer:
            if body_depth < 3 or self._link_cluster(element, 0.2, 0):
                return False
            return _followed_by_element(node)
        if tag == _tag_ul:
            if body_depth < 4 or self._link_cluster(element, 0.2, 0):
                return False
        elif tag == _tag_article:
            if body_depth > 2 and self._link_cluster(element, 0.2, 500):
                return False
        elif category & CAT_NOT_MAIN:
            return False
        if element.attributes & ATTR_NOT_MAIN:
            return False
        if not element.has_names:
            if tag == _tag_div:
                return body_depth <= 5 or not self._link_cluster(element, 0.6, 800)
            return True
        if (names & NAME_SKIP_LINK) and (tag == _tag_a or tag == _tag_div or tag == _tag_li):
            return False
        if body_depth > 2 and (names & NAME_DEEP_FURNITURE):
            return False
        if names & NAME_ADS:
            return False
        if not (category & CAT_BLOCK) and tag != _tag_td:
            return True
        if element.attributes & ATTR_ROLE_NOT_MAIN:
            return False
        if names & NAME_ARTICLE:
            return True
        if names & NAME_BLOCK_FURNITURE:
            return False
        if body_depth > 2 and tag == _tag_div and self._link_cluster(element, 0.6, 1500):
            return False
        return True

    # ---- second pass: the units' pieces, marked ----

    cdef int _boundary(self, uint8_t kind) except -1:
        """Start a unit of ``kind``, unless the current one has no pieces yet (it takes the kind)."""
        if self.n_units == 0 or (self.n_pieces and self.pieces[self.n_pieces - 1].unit == self.n_units - 1):
            if self.n_units >= self.units_cap:
                self._grow(<void **>&self.unit_kinds, &self.units_cap, self.n_units + 1, sizeof(uint8_t))
            self.n_units += 1
        self.unit_kinds[self.n_units - 1] = kind
        return 0

    cdef int _piece(self, const unsigned char *data, Py_ssize_t length, uint8_t marks) except -1:
        """A piece of text (``length`` -1: a line break) in the current unit."""
        cdef Py_ssize_t i
        if self.n_units == 0:
            self._boundary(0)
        if self.n_pieces >= self.pieces_cap:
            self._grow(<void **>&self.pieces, &self.pieces_cap, self.n_pieces + 1, sizeof(Piece))
        if length > 0:
            if self.text_length + length > self.text_cap:
                self._grow(<void **>&self.text, &self.text_cap, self.text_length + length, 1)
            for i in range(length):
                self.text[self.text_length + i] = data[i]
        cdef Piece *piece = &self.pieces[self.n_pieces]
        piece.start, piece.length, piece.unit = self.text_length, length, self.n_units - 1
        piece.marks, piece.link = marks, self.links > 0
        self.n_pieces += 1
        if length > 0:
            self.text_length += length
        return 0

    cdef uint8_t _kind(self, cm_node_t *node) noexcept:
        cdef int i
        for i in range(8):
            if _kind_tag[i] == node.local_name:
                return i + 1
        return 0

    cdef int _walk(self, cm_node_t *body) except -1:
        cdef Py_ssize_t depth = 0
        cdef cm_node_t *child
        cdef cm_chardata_t *characters
        cdef Frame *top
        self._open(body, &depth)
        self._enter_frame(&self.frames[0], MAIN if self.zone != NULL else 0)
        while depth > 0:
            top = &self.frames[depth - 1]
            child = top.cursor
            if child == NULL:
                self._leave(depth - 1)
                depth -= 1
                continue
            top.cursor = child.next
            if child.type == NODE_TEXT:
                characters = <cm_chardata_t *>child
                if characters.data.length:
                    self._piece(characters.data.data, characters.data.length, top.marks)
            elif child.type == NODE_ELEMENT:
                self._enter(child, &depth)
        return 0

    cdef int _enter(self, cm_node_t *node, Py_ssize_t *depth) except -1:
        cdef uint32_t category = _tag_cat[node.local_name] if node.local_name < TAG_TABLE else 0
        if category & CAT_SKIP:
            return 0
        cdef Element *element = &self.elements[<Py_ssize_t>node.user - 1]
        if (element.names & NAME_HIDDEN) or (element.attributes & ATTR_HIDDEN):
            return 0
        cdef Frame *parent = &self.frames[depth[0] - 1]
        if category & CAT_P:
            parent.paragraphs += 1
            if parent.paragraphs >= 3:
                parent.holds_content = True
        cdef uint8_t marks = 0 if node == self.zone else parent.marks
        if not marks & MAIN and not self._is_main(node, element, category, depth[0]):
            marks |= MAIN
        self._open(node, depth)
        self._enter_frame(&self.frames[depth[0] - 1], marks)
        return 0

    cdef int _enter_frame(self, Frame *frame, uint8_t marks) except -1:
        cdef uint32_t category = frame.category
        frame.marks = marks
        frame.holds_content, frame.paragraphs = False, 0
        frame.is_landmark = (category & CAT_LANDMARK) or (self.elements[frame.element].attributes & ATTR_ARTICLE_BODY)
        frame.first_piece = self.n_pieces
        if category & CAT_LINK:
            self.links += 1
        if category & CAT_BLOCK:
            if self.kinds:
                self._piece(NULL, -1, marks)
            else:
                self._boundary(self._kind(frame.node) if category & CAT_KIND else 0)
        elif category & CAT_BR:
            if self.kinds:
                self._piece(NULL, -1, marks)
            else:
                self._boundary(0)
        elif category & CAT_CELL:
            self._piece(<const unsigned char *>b" ", 1, marks)
        if category & CAT_KIND:
            self.kinds += 1
        return 0

    cdef int _leave(self, Py_ssize_t index) except -1:
        cdef Frame *frame = &self.frames[index]
        cdef uint32_t category = frame.category
        cdef uint32_t names = self.elements[frame.element].names
        if category & CAT_LINK:
            self.links -= 1
        if category & CAT_KIND:
            self.kinds -= 1
        if category & CAT_BLOCK:
            if self.kinds:
                self._piece(NULL, -1, frame.marks)
            else:
                self._boundary(0)
        if ((names & NAME_FURNITURE) or (category & CAT_FORM)) and not (category & CAT_KEPT) \
                and not frame.holds_content and not (names & NAME_CONTENT) and frame.first_piece < self.n_pieces:
            if self.n_ranges + 2 > self.ranges_cap:
                self._grow(<void **>&self.ranges, &self.ranges_cap, self.n_ranges + 2, sizeof(Py_ssize_t))
            self.ranges[self.n_ranges] = frame.first_piece
            self.ranges[self.n_ranges + 1] = self.n_pieces
            self.n_ranges += 2
        if index > 0 and (frame.holds_content or frame.is_landmark):
            self.frames[index - 1].holds_content = True
        return 0

    cdef int _mark_furniture(self) except -1:
        """Mark the pieces inside furniture elements (nested ones counted once, in linear time)."""
        if self.n_ranges == 0:
            return 0
        cdef int *open_ranges = <int *>malloc((self.n_pieces + 1) * sizeof(int))
        if open_ranges == NULL:
            raise MemoryError()
        cdef Py_ssize_t i
        cdef int inside = 0
        for i in range(self.n_pieces + 1):
            open_ranges[i] = 0
        for i in range(0, self.n_ranges, 2):
            open_ranges[self.ranges[i]] += 1
            open_ranges[self.ranges[i + 1]] -= 1
        for i in range(self.n_pieces):
            inside += open_ranges[i]
            if inside > 0:
                self.pieces[i].marks |= FURNITURE
        free(open_ranges)
        return 0


cdef Py_ssize_t _collapsed_length(const unsigned char *data, size_t length) noexcept nogil:
    """Bytes of ``data`` with each run of spaces counted as one."""
    cdef Py_ssize_t n = 0
    cdef size_t i
    cdef bint space = False
    for i in range(length):
        if _is_space(data[i]):
            if not space:
                n += 1
            space = True
        else:
            n += 1
            space = False
    return n


cdef bint _followed_by_element(cm_node_t *node) noexcept:
    """An element follows ``node`` or one of its ancestors below <body> (a footer there is an
    article's, not the page's)."""
    cdef cm_node_t *sibling
    while node.parent != NULL and node.parent.local_name != _tag_body:
        sibling = node.next
        while sibling != NULL:
            if sibling.type == NODE_ELEMENT:
                return True
            sibling = sibling.next
        node = node.parent
    return False



# Elements that hold no children (their start tag opens nothing) and elements that a sibling's start
# tag closes (an unclosed <p> or <li> does not nest), for ``nesting_depth``; raw text holds no tags
# up to its own end tag.
_VOID = b"area base br col embed hr img input keygen link meta param source track wbr"
_CLOSED_BY_SIBLINGS = b"p li dt dd option optgroup tr td th tbody thead tfoot colgroup caption rb rp rt rtc html head body"
_RAW_TEXT = b"script style textarea title xmp noscript noembed noframes iframe plaintext"
DEF END_TAG_REACH = 16   # how far down the open elements an end tag looks for its element
DEF MAX_TAG_NAMES = 32


cdef uint64_t _void[MAX_TAG_NAMES]
cdef uint64_t _closed_by_siblings[MAX_TAG_NAMES]
cdef uint64_t _raw_text[MAX_TAG_NAMES]
cdef int _n_void = 0, _n_closed_by_siblings = 0, _n_raw_text = 0


cdef int _fill_names(bytes names, uint64_t *into) except -1:
    cdef int n = 0
    cdef bytes name
    for name in names.split():
        into[n] = _hash(name, len(name), 14695981039346656037ULL)
        n += 1
    return n


_n_void = _fill_names(_VOID, _void)
_n_closed_by_siblings = _fill_names(_CLOSED_BY_SIBLINGS, _closed_by_siblings)
_n_raw_text = _fill_names(_RAW_TEXT, _raw_text)


cdef inline bint _among(uint64_t name, const uint64_t *names, int n) noexcept nogil:
    cdef int i
    for i in range(n):
        if names[i] == name:
            return True
    return False


cdef Py_ssize_t _tag_name(const unsigned char *s, Py_ssize_t n, Py_ssize_t i, uint64_t *name) noexcept nogil:
    """The lower-cased name starting at ``i`` hashed into ``name``; returns where it ends."""
    cdef uint64_t h = 14695981039346656037ULL
    while i < n and (_is_letter(s[i]) or 48 <= s[i] <= 57):
        h = (h ^ _lower(s[i])) * 1099511628211ULL
        i += 1
    name[0] = h
    return i


cdef Py_ssize_t _nesting_depth(const unsigned char *s, Py_ssize_t n, Py_ssize_t stop_above) except -1:
    cdef Py_ssize_t i = 0, j, k, depth = 0, deepest = 0, capacity = 0
    cdef uint64_t name, end_name
    cdef uint64_t *open_names = NULL
    cdef const unsigned char *found
    cdef bint closing
    try:
        while True:
            found = <const unsigned char *>memchr(s + i, 60, n - i) if i < n else NULL  # "<"
            if found == NULL:
                return deepest
            i = found - s + 1
            if i + 2 < n and s[i] == 33 and s[i + 1] == 45 and s[i + 2] == 45:  # "<!--", to "-->"
                found = _find(s, n, i + 3, b"-->", 3)
                i = n if found == NULL else found - s + 3
                continue
            closing = i < n and s[i] == 47  # "/"
            j = i + closing
            if j >= n or not _is_letter(s[j]):
                continue
            i = _tag_name(s, n, j, &name)
            if closing:
                for k in range(depth - 1, max(depth - END_TAG_REACH, 0) - 1, -1):
                    if open_names[k] == name:
                        depth = k
                        break
            elif _among(name, _raw_text, _n_raw_text):
                while True:  # to its own end tag, in any case
                    found = _find(s, n, i, b"</", 2)
                    if found == NULL:
                        return deepest
                    i = _tag_name(s, n, found - s + 2, &end_name)
                    if end_name == name:
                        break
            elif not _among(name, _void, _n_void) and not _among(name, _closed_by_siblings, _n_closed_by_siblings):
                if depth >= capacity:
                    capacity = max(2 * capacity, 256)
                    open_names = <uint64_t *>realloc(open_names, capacity * sizeof(uint64_t))
                    if open_names == NULL:
                        raise MemoryError()
                open_names[depth] = name
                depth += 1
                if depth > deepest:
                    deepest = depth
                    if 0 < stop_above < deepest:
                        return deepest
    finally:
        free(open_names)


cdef inline const unsigned char *_find(const unsigned char *s, Py_ssize_t n, Py_ssize_t start,
                                       const char *needle, size_t length) noexcept nogil:
    if start >= n:
        return NULL
    return <const unsigned char *>memmem(s + start, n - start, needle, length)


def nesting_depth(str html, Py_ssize_t stop_above=0):
    """How deep the elements of ``html`` nest, as an HTML parser's stack of open elements grows:
    start tags of elements that hold children open one (void elements and ones a sibling closes,
    such as ``p`` and ``li``, do not), an end tag closes down to its element if that is among the
    top ``END_TAG_REACH`` open ones (a stray end tag closes nothing, as in the parser), comments and
    raw text (scripts, styles) hold no tags. Stops as soon as the depth passes ``stop_above`` (when
    positive). A parser's cost grows faster than the depth (lexbor: 20,000 nested divs 0.4 s,
    40,000 3 s), so a page nested too deep is turned down before it is parsed."""
    cdef bytes data = html.encode("utf-8", "replace")
    return _nesting_depth(<const unsigned char *>PyBytes_AS_STRING(data), len(data), stop_above)
