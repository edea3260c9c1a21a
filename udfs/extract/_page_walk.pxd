# The unit class, declared here so that the block pass (udfs/extract/_blocks.pyx) reads its fields directly.
cdef class Unit:
    cdef public object kind, text, chars, link_chars, words, furniture, index
