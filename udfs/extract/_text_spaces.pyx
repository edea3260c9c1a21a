# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The space folding of ``udfs/extract/text.py``'s ``normalize_text`` in one pass over the text.

``collapse(text, dropped)`` returns ::

    _BLANK_LINES.sub("\\n\\n", "\\n".join(" ".join(line.split())
                                        for line in text_without_dropped.split("\\n"))).strip()

where ``dropped`` holds, per code point, 1 for a character to remove first (``udfs/extract/text.py`` reads
it off its ``_INVISIBLE`` pattern, so the set has one definition). Why one pass gives the same
text: once each line's spaces are folded, a line has no space at either end, so ``\\n\\s*\\n+`` can
only match a run of two or more newlines, and ``strip()`` only newlines before the first and after
the last line with text. Spaces are what ``str.split()`` splits on (``Py_UNICODE_ISSPACE``).
"""
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.unicode cimport (Py_UNICODE_ISSPACE, PyUnicode_4BYTE_KIND, PyUnicode_DATA, PyUnicode_FromKindAndData,
                              PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ)

cdef enum:
    CODE_POINTS = 0x110000


def collapse(str text, const unsigned char[::1] dropped not None):
    if dropped.shape[0] != CODE_POINTS:
        raise ValueError("dropped: one byte per code point (0x110000) expected")
    cdef Py_ssize_t length = PyUnicode_GET_LENGTH(text), i, out = 0
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_UCS4 ch
    cdef Py_ssize_t newlines = 0  # newlines since the last character of text
    cdef bint space = False  # a space since the last character of text, on the same line
    cdef bint started = False  # any character of text written yet
    cdef Py_UCS4* buffer = <Py_UCS4*>PyMem_Malloc((length + 1) * sizeof(Py_UCS4))
    if buffer is NULL:
        raise MemoryError()
    try:
        for i in range(length):
            ch = PyUnicode_READ(kind, data, i)
            if dropped[ch]:
                continue
            if ch == u"\n":
                newlines += 1
                space = False
            elif Py_UNICODE_ISSPACE(ch):
                space = newlines == 0 and started
            else:
                if newlines and started:
                    buffer[out] = u"\n"
                    out += 1
                    if newlines > 1:
                        buffer[out] = u"\n"
                        out += 1
                elif space:
                    buffer[out] = u" "
                    out += 1
                buffer[out] = ch
                out += 1
                newlines = 0
                space = False
                started = True
        return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buffer, out)
    finally:
        PyMem_Free(buffer)
