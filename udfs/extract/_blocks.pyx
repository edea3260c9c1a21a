# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The block pass's features and scores (udfs/extract/boilerplate.py: ``FEATURES``, ``BlockModel``) in compiled code.

One loop over a page's units fills the feature rows, in the order of ``FEATURES``, with the values of
the whole-column numpy arithmetic that tests/extract/test_boilerplate.py keeps as the reference; the scores
are the rows' dot products with the weights, summed in feature order (the reference's matrix product
may sum in another order: equal within 1e-9 relative, the same keep decisions on the development
sets and the bench pages). A page has a few dozen units, too few for numpy: its ~40 calls a page cost
more than the arithmetic they do (``bench/profiling/e2e_profile.py`` times the block pass).

Each unit's furniture-line verdict (the Python test passed in) is stored on the unit, for the line
pass to reuse.
"""
from libc.math cimport log1p
from libc.stdlib cimport free, malloc
from cpython.unicode cimport (Py_UNICODE_ISDECIMAL, PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND,
                              PyUnicode_READ)

from udfs.extract._page_walk cimport Unit

# The features of udfs/extract/boilerplate.py's FEATURES, by their index in a row.
cdef enum:
    BIAS, LOG_CHARS, LOG_WORDS, LINK_DENSITY, MOSTLY_LINKS, SENTENCE_END, PUNCTUATION_PER_WORD, DIGIT_SHARE
    FURNITURE_LINE, IS_HEADING, PREV_LOG_CHARS, PREV_LINK_DENSITY, NEXT_LOG_CHARS, NEXT_LINK_DENSITY
    WINDOW_LOG_CHARS, CHARS_SHARE, PAGE_LOG_CHARS, PAGE_LOG_UNITS, ANCHOR_SHARE, BEFORE_FIRST_ANCHOR
    AFTER_LAST_ANCHOR, LOG_ANCHOR_DISTANCE, IS_ANCHOR, FEATURE_COUNT

FEATURES = ("bias", "log_chars", "log_words", "link_density", "mostly_links", "sentence_end", "punctuation_per_word",
            "digit_share", "furniture_line", "is_heading", "prev_log_chars", "prev_link_density", "next_log_chars",
            "next_link_density", "window_log_chars", "chars_share", "page_log_chars", "page_log_units", "anchor_share",
            "before_first_anchor", "after_last_anchor", "log_anchor_distance", "is_anchor")


cdef inline bint _is_punctuation(Py_UCS4 c):  # .,;:!?。，、；：！？
    return (c == 46 or c == 44 or c == 59 or c == 58 or c == 33 or c == 63 or c == 0x3002 or c == 0xFF0C
            or c == 0x3001 or c == 0xFF1B or c == 0xFF1A or c == 0xFF01 or c == 0xFF1F)


cdef inline bint _is_digit(Py_UCS4 c):  # 0-9 and the full-width ０-９
    return 48 <= c <= 57 or 0xFF10 <= c <= 0xFF19


cdef inline bint _ends_sentence(Py_UCS4 c):  # .!?。！？…:;"'”»)
    return (c == 46 or c == 33 or c == 63 or c == 0x3002 or c == 0xFF01 or c == 0xFF1F or c == 0x2026 or c == 58
            or c == 59 or c == 34 or c == 39 or c == 0x201D or c == 0xBB or c == 41)


cdef int _fill(list units, object furniture_line, double anchor_chars, double *rows) except -1:
    """The feature rows of ``units`` (``len(units)`` rows of ``FEATURE_COUNT``) written to ``rows``."""
    cdef Py_ssize_t n = len(units), i, pos, length, punctuation, digits, anchors = 0, first = n, last = -1
    cdef Py_ssize_t previous_anchor = -1, following_anchor = -1
    cdef double *row
    cdef double *chars = <double *>malloc(n * sizeof(double))
    cdef Py_ssize_t *next_anchor = <Py_ssize_t *>malloc(n * sizeof(Py_ssize_t))  # at or after each unit
    cdef double total = 0.0, window, distance
    cdef Unit unit
    cdef str text, kind
    cdef int text_kind
    cdef void *data
    cdef Py_UCS4 c
    try:
        if chars == NULL or next_anchor == NULL:
            raise MemoryError()
        # The unit's own features; its characters counted (and kept for its neighbours').
        for i in range(n):
            unit = <Unit?>units[i]
            row = rows + i * FEATURE_COUNT
            text, kind = unit.text, unit.kind
            if not text or not kind:
                raise IndexError(f"a unit without text or kind: {unit.kind!r}, {unit.text!r}")
            chars[i] = unit.chars
            total += chars[i]
            row[BIAS] = 1.0
            row[LOG_CHARS] = log1p(chars[i])
            row[LOG_WORDS] = log1p(<double>unit.words)
            row[LINK_DENSITY] = <double>unit.link_chars / chars[i]
            row[MOSTLY_LINKS] = row[LINK_DENSITY] > 0.8
            text_kind, data, length = PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)
            punctuation = digits = 0
            for pos in range(length):
                c = PyUnicode_READ(text_kind, data, pos)
                if _is_punctuation(c):
                    punctuation += 1
                elif _is_digit(c):
                    digits += 1
            row[SENTENCE_END] = _ends_sentence(PyUnicode_READ(text_kind, data, length - 1))
            row[PUNCTUATION_PER_WORD] = min(punctuation / <double>unit.words, 2.0)
            row[DIGIT_SHARE] = digits / chars[i]
            unit.furniture = furniture_line(text)
            row[FURNITURE_LINE] = 1.0 if unit.furniture else 0.0
            row[IS_HEADING] = PyUnicode_READ(PyUnicode_KIND(kind), PyUnicode_DATA(kind), 0) == 104  # "h"
            next_anchor[i] = chars[i] >= anchor_chars and row[LINK_DENSITY] < 0.3  # (for now: whether it is one)
            if next_anchor[i]:
                anchors += 1
                first = min(first, i)
                last = i
        for i in range(n - 1, -1, -1):
            if next_anchor[i]:
                following_anchor = i
            next_anchor[i] = following_anchor
        # Features of its neighbours and of the page.
        for i in range(n):
            row = rows + i * FEATURE_COUNT
            row[PREV_LOG_CHARS] = (row - FEATURE_COUNT)[LOG_CHARS] if i > 0 else 0.0
            row[PREV_LINK_DENSITY] = (row - FEATURE_COUNT)[LINK_DENSITY] if i > 0 else 1.0
            row[NEXT_LOG_CHARS] = (row + FEATURE_COUNT)[LOG_CHARS] if i < n - 1 else 0.0
            row[NEXT_LINK_DENSITY] = (row + FEATURE_COUNT)[LINK_DENSITY] if i < n - 1 else 1.0
            window = 0.0
            for pos in range(i - 2, i + 3):
                if 0 <= pos < n:
                    window += chars[pos]
            row[WINDOW_LOG_CHARS] = log1p(window)
            row[CHARS_SHARE] = chars[i] / total
            row[PAGE_LOG_CHARS] = log1p(total)
            row[PAGE_LOG_UNITS] = log1p(<double>n)
            row[ANCHOR_SHARE] = anchors / <double>n
            row[BEFORE_FIRST_ANCHOR] = i < first
            row[AFTER_LAST_ANCHOR] = i > last
            if next_anchor[i] == i:
                previous_anchor = i
            if not anchors:
                distance = n
            elif previous_anchor < 0:
                distance = next_anchor[i] - i
            elif next_anchor[i] < 0:
                distance = i - previous_anchor
            else:
                distance = min(i - previous_anchor, next_anchor[i] - i)
            row[LOG_ANCHOR_DISTANCE] = log1p(distance)
            row[IS_ANCHOR] = distance == 0
    finally:
        free(chars)
        free(next_anchor)
    return 0


def fill_unit_features(list units, furniture_line, double anchor_chars, double[:, ::1] out):
    """Write the feature rows of ``units`` to ``out`` (one row a unit, ``len(FEATURES)`` columns); a
    unit's ``furniture`` is set to ``furniture_line(unit.text)``."""
    if out.shape[0] != len(units) or out.shape[1] != FEATURE_COUNT:
        raise ValueError(f"features of {len(units)} units need a {len(units)} x {FEATURE_COUNT} array")
    if len(units):
        _fill(units, furniture_line, anchor_chars, &out[0, 0])


def unit_scores(list units, furniture_line, double anchor_chars, const double[::1] weights):
    """The dot product of each unit's feature row with ``weights``, a list of floats (and each unit's
    ``furniture`` set, as by ``fill_unit_features``)."""
    cdef Py_ssize_t n = len(units), i, k
    cdef double *rows
    cdef double score
    cdef list scores = []
    if weights.shape[0] != FEATURE_COUNT:
        raise ValueError(f"{weights.shape[0]} weights for {FEATURE_COUNT} features")
    if not n:
        return scores
    rows = <double *>malloc(n * FEATURE_COUNT * sizeof(double))
    if rows == NULL:
        raise MemoryError()
    try:
        _fill(units, furniture_line, anchor_chars, rows)
        for i in range(n):
            score = 0.0
            for k in range(FEATURE_COUNT):
                score += rows[i * FEATURE_COUNT + k] * weights[k]
            scores.append(score)
    finally:
        free(rows)
    return scores


# Cheap necessary conditions for the line pass's patterns (udfs/extract/boilerplate.py), found in one scan of a
# case-folded line and a search for each phrase.
HAS_DIGIT = 1  # a decimal digit (what "\\d" matches): a dateline has one
HAS_TWO_SEPARATORS = 2  # two characters of "|»>›•·/": a link bar has one between each two items
HAS_PHRASE = 4  # one of the phrases given


def line_marks(str line, tuple phrases=()):
    """The ``HAS_…`` marks of ``line``, or-ed."""
    cdef int kind = PyUnicode_KIND(line), marks = 0
    cdef void *data = PyUnicode_DATA(line)
    cdef Py_ssize_t pos, separators = 0
    cdef Py_UCS4 c
    for pos in range(PyUnicode_GET_LENGTH(line)):
        c = PyUnicode_READ(kind, data, pos)
        if c == 124 or c == 0xBB or c == 62 or c == 0x203A or c == 0x2022 or c == 0xB7 or c == 47:
            separators += 1
        elif (48 <= c <= 57) if c < 128 else Py_UNICODE_ISDECIMAL(c):
            marks |= HAS_DIGIT
    if separators >= 2:
        marks |= HAS_TWO_SEPARATORS
    for phrase in phrases:
        if phrase in line:
            return marks | HAS_PHRASE
    return marks
