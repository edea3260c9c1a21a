# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The text units of resiliparse's ``minimal_html`` extract, in compiled code.

``units_of(minimal_html)`` gives the units that these regular expressions give (tests/test_boilerplate.py
keeps them as the reference and compares both, on real extracts and on random strings of the same pieces)::

    for match in re.finditer(r"<(p|h[1-6]|pre)>(.*?)</\\1>|[^\\n]+", minimal_html, re.S):
        kind = match.group(1) or "text"
        inner = match.group(0) if match.group(2) is None else match.group(2)
        if kind != "pre":
            inner = re.sub(r"<br>\\n?", "\\n", inner)
        text = plain(inner).strip()   # plain: re.sub(r"<[^>]*>", "", s), then html.unescape(s) if "&" in s
        if text:
            links = re.findall(r"<a\\b[^>]*>(.*?)(?:</a>|$)", inner, re.S)
            units.append(Unit(kind, text, sum(len(plain(link).strip()) for link in links)))

with the patterns' very semantics: an element runs to the first closing tag of its own name
(``<h2>a</h3>b</h2>`` is one unit); a ``<p>`` never closed is read as a line from its ``<``; a tag is
a ``<`` up to the next ``>`` (an unclosed ``<`` stays text), stripped after ``<br>`` became a line
break; ``<a`` opens a link only before a character that is not a word character (``<abbr>`` does
not); a link's text runs to the first ``</a>``, else to the end of the unit (``$`` without re.M also
matches before a final line break, which makes no difference: the text is stripped). Entities are
decoded by ``html.unescape`` itself; ``strip()`` and the word-character test use the same Unicode
tables as ``str`` and ``re``.

The page is copied once to UCS-4 and each unit's text is made in a buffer, without the patterns'
intermediate strings (groups, substitutions): about 5x less CPU than the patterns (0.29 -> 0.054 ms
a page on the main-content extracts of 2,998 crawl pages, 44 units a page; 0.49 -> 0.082 ms on
their whole-page extracts).
"""
from html import unescape as _unescape

from cpython.unicode cimport (Py_UNICODE_ISALNUM, Py_UNICODE_ISSPACE, PyUnicode_AsUCS4, PyUnicode_DATA,
                              PyUnicode_FromKindAndData, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ)
from libc.stdlib cimport free, malloc

cdef extern from "Python.h":
    int PyUnicode_4BYTE_KIND

# The kinds as the regex's group gave them; a line outside those elements is "text".
cdef tuple _HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
cdef Py_UCS4[4] _CLOSE_P = [60, 47, 112, 62]              # "</p>"
cdef Py_UCS4[6] _CLOSE_PRE = [60, 47, 112, 114, 101, 62]  # "</pre>"
cdef Py_UCS4[4] _CLOSE_A = [60, 47, 97, 62]               # "</a>"
cdef Py_UCS4[4] _BR = [60, 98, 114, 62]                   # "<br>"


cdef class Unit:
    """One paragraph, heading or line of an extract: its element (``p``, ``h1`` … ``h6``, ``pre``, or
    ``text`` for a line outside them), its text, its length in characters and words (spaces + 1), and
    how many of its characters are link text; ``furniture``: whether its text is a furniture line, as
    the block pass found (``None`` before), for the line pass to reuse. (Fields: _minimal_html.pxd.)"""

    def __init__(self, kind, text, link_chars):
        self.kind, self.text, self.link_chars = kind, text, link_chars
        self.chars = len(text)
        self.words = text.count(" ") + 1


cdef inline bint _at(const Py_UCS4 *chars, Py_ssize_t pos, Py_ssize_t end, const Py_UCS4 *literal,
                     Py_ssize_t length):
    """Whether ``literal`` is written at ``pos`` (and ends before ``end``)."""
    cdef Py_ssize_t k
    if pos + length > end:
        return False
    for k in range(length):
        if chars[pos + k] != literal[k]:
            return False
    return True


cdef Py_ssize_t _find(const Py_UCS4 *chars, Py_ssize_t pos, Py_ssize_t end, const Py_UCS4 *literal,
                      Py_ssize_t length):
    """Where ``literal`` is first written at or after ``pos`` and before ``end``, or -1."""
    while pos + length <= end:
        if chars[pos] == literal[0] and _at(chars, pos, end, literal, length):
            return pos
        pos += 1
    return -1


cdef Py_ssize_t _strip_tags(const Py_UCS4 *chars, Py_ssize_t start, Py_ssize_t end, Py_UCS4 *out,
                            bint *has_amp):
    """``re.sub(r"<[^>]*>", "", chars[start:end])`` written to ``out``; its length, and whether it holds "&"."""
    cdef Py_ssize_t pos = start, close, written = 0
    cdef Py_UCS4 char
    has_amp[0] = False
    while pos < end:
        char = chars[pos]
        if char == 60:  # "<"
            close = pos + 1
            while close < end and chars[close] != 62:  # ">"
                close += 1
            if close < end:
                pos = close + 1
                continue
            # no ">" after it: neither this "<" nor any later one starts a tag
            while pos < end:
                char = chars[pos]
                has_amp[0] = has_amp[0] or char == 38
                out[written] = char
                written += 1
                pos += 1
            break
        has_amp[0] = has_amp[0] or char == 38  # "&"
        out[written] = char
        written += 1
        pos += 1
    return written


cdef object _plain_stripped(const Py_UCS4 *chars, Py_ssize_t start, Py_ssize_t end, Py_UCS4 *out):
    """``plain(chars[start:end]).strip()``: tags removed, entities decoded if there is an "&"."""
    cdef bint has_amp
    cdef Py_ssize_t first = 0, last = _strip_tags(chars, start, end, out, &has_amp)
    if has_amp:
        return _unescape(PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out, last)).strip()
    while first < last and Py_UNICODE_ISSPACE(out[first]):
        first += 1
    while last > first and Py_UNICODE_ISSPACE(out[last - 1]):
        last -= 1
    return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out + first, last - first)


cdef Py_ssize_t _link_chars(const Py_UCS4 *inner, Py_ssize_t length, Py_UCS4 *out) except -1:
    """The summed length of each link's plain, stripped text in ``inner``."""
    cdef Py_ssize_t pos = 0, close, text_end, total = 0
    cdef Py_UCS4 after
    while pos + 2 < length:
        if inner[pos] != 60 or inner[pos + 1] != 97:  # "<a"
            pos += 1
            continue
        after = inner[pos + 2]
        if after == 95 or Py_UNICODE_ISALNUM(after):  # a word character: "<abbr>", "<a_x>"
            pos += 1
            continue
        close = pos + 2
        while close < length and inner[close] != 62:  # ">"
            close += 1
        if close == length:
            break  # no ">" after this "<a", nor after any later one
        text_end = _find(inner, close + 1, length, _CLOSE_A, 4)
        if text_end < 0:  # the link runs to the end of the unit (and no link follows)
            total += PyUnicode_GET_LENGTH(_plain_stripped(inner, close + 1, length, out))
            break
        total += PyUnicode_GET_LENGTH(_plain_stripped(inner, close + 1, text_end, out))
        pos = text_end + 4
    return total


cdef Py_ssize_t _count_spaces(str text):
    cdef int kind = PyUnicode_KIND(text)
    cdef void *data = PyUnicode_DATA(text)
    cdef Py_ssize_t pos, count = 0
    for pos in range(PyUnicode_GET_LENGTH(text)):
        if PyUnicode_READ(kind, data, pos) == 32:
            count += 1
    return count


def units_of(minimal_html):
    """The text units of a minimal_html extract, in page order, with their link text counted."""
    if not isinstance(minimal_html, str):  # (a subclass of str too, as the regex took)
        raise TypeError(f"units_of() takes a str, not {type(minimal_html).__name__}")
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(minimal_html)
    cdef Py_UCS4 *page = <Py_UCS4 *>malloc((3 * n + 1) * sizeof(Py_UCS4))
    cdef Py_UCS4 *inner = page + n + 1  # the element's content with <br> made line breaks
    cdef Py_UCS4 *out = inner + n       # text with the tags removed
    cdef Py_ssize_t pos = 0, start, end, resume, length, src, open_length
    cdef Py_UCS4 char
    cdef bint pre
    cdef Py_UCS4[5] close_heading = [60, 47, 104, 0, 62]  # "</hN>"
    cdef object kind, text
    cdef Unit unit
    cdef list units = []
    if page == NULL:
        raise MemoryError()
    try:
        PyUnicode_AsUCS4(minimal_html, page, n + 1, 1)
        while pos < n:
            char = page[pos]
            if char == 10:  # "\n"
                pos += 1
                continue
            end, pre = -1, False
            if char == 60 and pos + 2 < n:  # "<": <p>, <h1> … <h6> or <pre>, closed by the same name
                if page[pos + 1] == 112 and page[pos + 2] == 62:  # <p>
                    kind, open_length = "p", 3
                    end = _find(page, pos + 3, n, _CLOSE_P, 4)
                    resume = end + 4
                elif (page[pos + 1] == 104 and pos + 3 < n and 49 <= page[pos + 2] <= 54
                      and page[pos + 3] == 62):  # <hN>
                    close_heading[3] = page[pos + 2]
                    kind, open_length = _HEADINGS[<Py_ssize_t>page[pos + 2] - 49], 4
                    end = _find(page, pos + 4, n, close_heading, 5)
                    resume = end + 5
                elif _at(page, pos + 1, n, _CLOSE_PRE + 2, 4):  # <pre>
                    kind, open_length, pre = "pre", 5, True
                    end = _find(page, pos + 5, n, _CLOSE_PRE, 6)
                    resume = end + 6
            if end >= 0:
                start = pos + open_length
            else:  # a line ([^\n]+), also from a "<p>" or "<pre>" that is never closed
                kind, start, end, pre = "text", pos, pos, False
                while end < n and page[end] != 10:
                    end += 1
                resume = end
            pos = resume
            length = 0
            if pre:
                for src in range(start, end):
                    inner[length] = page[src]
                    length += 1
            else:
                src = start
                while src < end:
                    if page[src] == 60 and _at(page, src, end, _BR, 4):
                        inner[length] = 10
                        length += 1
                        src += 4
                        if src < end and page[src] == 10:
                            src += 1
                    else:
                        inner[length] = page[src]
                        length += 1
                        src += 1
            text = _plain_stripped(inner, 0, length, out)
            if not PyUnicode_GET_LENGTH(text):
                continue
            unit = Unit.__new__(Unit)
            unit.kind, unit.text = kind, text
            unit.chars = PyUnicode_GET_LENGTH(text)
            unit.words = _count_spaces(text) + 1
            unit.link_chars = _link_chars(inner, length, out)
            units.append(unit)
    finally:
        free(page)
    return units

