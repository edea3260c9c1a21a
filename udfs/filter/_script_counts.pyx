# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The script most letters of a sample are written in, counted in one compiled pass
(``udfs/filter/language_codes.py`` ``script_of``, whose general case this is).

``ScriptCounter(script_of_letter).most_common(sample)`` gives what ::

    counts = Counter()
    for char, n in Counter(sample).items():
        if char.isalpha():
            counts[script_of_letter(char)] += n
    if counts["Kana"]:
        counts["Jpan"] = counts.pop("Kana") + counts.pop("Hani", 0)
    counts.most_common(1)[0][0] if counts else "Zyyy"

gives: ties go to the script met first in the sample, and ``Jpan``, added last, loses them. Each
code point's script is asked of ``script_of_letter`` once per process and kept in a table.
"""
cimport cython
from cpython.unicode cimport Py_UNICODE_ISALPHA, PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ
from libc.stdint cimport uint8_t
from libc.stdlib cimport calloc, free

cdef enum:
    CODE_POINTS = 0x110000
    UNSEEN = 0  # table values: not yet asked, not a letter, or a script's index + FIRST_SCRIPT
    NOT_LETTER = 1
    FIRST_SCRIPT = 2
    MAX_SCRIPTS = 256 - FIRST_SCRIPT

NO_SCRIPT = "Zyyy"


@cython.final
cdef class ScriptCounter:
    cdef uint8_t* table
    cdef object script_of_letter
    cdef list scripts  # index -> ISO 15924 code
    cdef dict index_of_script
    cdef int kana, hani

    def __cinit__(self, script_of_letter):
        self.table = <uint8_t*>calloc(CODE_POINTS, sizeof(uint8_t))
        if self.table is NULL:
            raise MemoryError()
        self.script_of_letter = script_of_letter
        self.scripts, self.index_of_script = [], {}
        self.kana, self.hani = self.index("Kana"), self.index("Hani")

    def __dealloc__(self):
        free(self.table)

    cdef int index(self, str script) except -1:
        found = self.index_of_script.get(script)
        if found is not None:
            return found
        if len(self.scripts) == MAX_SCRIPTS:
            raise ValueError(f"more than {MAX_SCRIPTS} scripts")
        self.index_of_script[script] = len(self.scripts)
        self.scripts.append(script)
        return len(self.scripts) - 1

    cdef uint8_t learn(self, Py_UCS4 code) except 0:
        cdef uint8_t value = NOT_LETTER
        if Py_UNICODE_ISALPHA(code):
            value = <uint8_t>(self.index(self.script_of_letter(chr(code))) + FIRST_SCRIPT)
        self.table[code] = value
        return value

    def most_common(self, str sample) -> str:
        """The script of most letters of ``sample`` (``Zyyy`` where it has none)."""
        cdef Py_ssize_t i, length = PyUnicode_GET_LENGTH(sample)
        cdef int kind = PyUnicode_KIND(sample)
        cdef void* data = PyUnicode_DATA(sample)
        cdef Py_UCS4 code
        cdef uint8_t value
        cdef int s, best = -1, n = len(self.scripts)
        cdef Py_ssize_t counts[MAX_SCRIPTS]
        cdef Py_ssize_t first[MAX_SCRIPTS]  # where each script was first met
        cdef Py_ssize_t japanese
        for s in range(MAX_SCRIPTS):
            counts[s] = 0
        for i in range(length):
            code = PyUnicode_READ(kind, data, i)
            value = self.table[code]
            if value == UNSEEN:
                value = self.learn(code)
                n = len(self.scripts)
            if value == NOT_LETTER:
                continue
            s = value - FIRST_SCRIPT
            if counts[s] == 0:
                first[s] = i
            counts[s] += 1
        japanese = 0
        if counts[self.kana]:
            japanese = counts[self.kana] + counts[self.hani]  # added last: loses a tie
            counts[self.kana] = counts[self.hani] = 0
        for s in range(n):
            if counts[s] and (best < 0 or counts[s] > counts[best]
                              or (counts[s] == counts[best] and first[s] < first[best])):
                best = s
        if japanese and (best < 0 or japanese > counts[best]):
            return "Jpan"
        return self.scripts[best] if best >= 0 else NO_SCRIPT
