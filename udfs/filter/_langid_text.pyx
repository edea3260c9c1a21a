# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The one line fastText's language model reads for a text (``udfs/filter/langid.py``), in one pass.

``FastTextLine(dropped).of(text)`` returns ::

    " ".join(dropped.sub(" ", text).lower().split()) + "\\n"

for a pattern ``dropped`` that matches runs of a character class (``[...]+``): its characters and
whatever ``str.split()`` counts as space separate words, words are joined by one space, and the
line is lowercased as ``str.lower()`` does it. Folding the spaces before lowering gives the same
line because lowering makes no space, and a space is neither cased nor case-ignorable, so the one
context-dependent mapping (a final capital sigma) sees the same neighbours either way.

Which characters separate words is read off ``dropped`` and the interpreter themselves when the
object is made (once per process): the pattern is run once over a string of every code point, so the table
always agrees with the installed ``regex`` module's Unicode version. Lowering is the simple
per-character mapping (``Py_UNICODE_TOLOWER``) wherever ``str.lower()`` gives that same single
character, checked the same way; a line holding any other character (``İ`` lowers to two, ``Σ``
depends on its neighbours) is lowered by ``str.lower()`` itself.
"""
cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.unicode cimport (Py_UNICODE_ISSPACE, Py_UNICODE_TOLOWER, PyUnicode_4BYTE_KIND, PyUnicode_DATA,
                              PyUnicode_FromKindAndData, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ)
from libc.stdint cimport uint8_t
from libc.stdlib cimport calloc, free

cdef enum:
    CODE_POINTS = 0x110000
    BLOCK = 256  # code points lowered together when the lowering is checked
    FINAL_SIGMA_CAPITAL = 0x3A3  # str.lower() makes it "ς" or "σ" by its neighbours

cdef enum:  # what a code point does to the line
    KEEP = 0  # copied, lowered by the simple mapping
    SEPARATE = 1  # a space, or matched by the dropped pattern: separates words
    LOWER_IN_PYTHON = 2  # copied; its line is lowered by str.lower()


cdef str every_code_point():
    """A string of all code points, surrogates included, in order."""
    cdef Py_UCS4* buffer = <Py_UCS4*>PyMem_Malloc(CODE_POINTS * sizeof(Py_UCS4))
    cdef Py_ssize_t code
    if buffer is NULL:
        raise MemoryError()
    try:
        for code in range(CODE_POINTS):
            buffer[code] = <Py_UCS4>code
        return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buffer, CODE_POINTS)
    finally:
        PyMem_Free(buffer)


cdef bint lowers_simply(str block, Py_ssize_t first):
    """Whether ``block.lower()`` is the simple mapping of each of its code points, ``first`` onwards."""
    cdef str lowered = block.lower()
    cdef Py_ssize_t i, length = PyUnicode_GET_LENGTH(block)
    if PyUnicode_GET_LENGTH(lowered) != length:
        return False
    for i in range(length):
        if PyUnicode_READ(PyUnicode_KIND(lowered), PyUnicode_DATA(lowered), i) != Py_UNICODE_TOLOWER(
                <Py_UCS4>(first + i)):
            return False
    return True


@cython.final
cdef class FastTextLine:
    cdef uint8_t* kind_of  # per code point: KEEP, SEPARATE or LOWER_IN_PYTHON

    def __cinit__(self, dropped):
        cdef Py_ssize_t code, start, end, block
        self.kind_of = <uint8_t*>calloc(CODE_POINTS, sizeof(uint8_t))
        if self.kind_of is NULL:
            raise MemoryError()
        everything = every_code_point()
        for block in range(0, CODE_POINTS, BLOCK):
            if lowers_simply(everything[block:block + BLOCK], block):
                continue
            for code in range(block, block + BLOCK):
                if chr(code).lower() != chr(Py_UNICODE_TOLOWER(<Py_UCS4>code)):
                    self.kind_of[code] = LOWER_IN_PYTHON
        self.kind_of[FINAL_SIGMA_CAPITAL] = LOWER_IN_PYTHON
        for code in range(CODE_POINTS):
            if Py_UNICODE_ISSPACE(<Py_UCS4>code):
                self.kind_of[code] = SEPARATE
        for match in dropped.finditer(everything):
            start, end = match.span()
            for code in range(start, end):
                self.kind_of[code] = SEPARATE

    def __dealloc__(self):
        free(self.kind_of)

    def of(self, str text not None):
        """The line fastText reads for ``text``, ending in a newline."""
        cdef Py_ssize_t length = PyUnicode_GET_LENGTH(text), size = 0, i
        cdef int kind = PyUnicode_KIND(text)
        cdef void* data = PyUnicode_DATA(text)
        cdef Py_UCS4 ch
        cdef uint8_t what
        cdef bint space_pending = False, lower_in_python = False
        cdef Py_UCS4* line = <Py_UCS4*>PyMem_Malloc((length + 1) * sizeof(Py_UCS4))
        if line is NULL:
            raise MemoryError()
        try:
            for i in range(length):
                ch = PyUnicode_READ(kind, data, i)
                what = self.kind_of[ch]
                if what == SEPARATE:
                    space_pending = size > 0
                    continue
                if space_pending:
                    line[size] = u" "
                    size += 1
                    space_pending = False
                lower_in_python |= what == LOWER_IN_PYTHON
                line[size] = ch
                size += 1
            if lower_in_python:
                return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, line, size).lower() + "\n"
            for i in range(size):
                line[i] = Py_UNICODE_TOLOWER(line[i])
            line[size] = u"\n"
            return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, line, size + 1)
        finally:
            PyMem_Free(line)
