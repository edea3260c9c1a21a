# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The dedup stage's per-character and per-shingle loops in compiled code (``udfs/dedup/minhash.py``):
the shingle hashes of a batch, and MinHash signatures without a pass over the shingles per
permutation.

Shingles: the tokens and n-grams the module docstring of ``minhash.py`` describes. A token's hash is
the splitmix64 finaliser of the wrapping sum of mix(code point | position in token << 21); a
shingle's, mix of the wrapping sum of mix(token i of the n-gram ^ salt i).

MinHash: for every document and permutation k, min over its shingle hashes h (taken mod p) of
``(a[k]·h + b[k]) mod p``, p = 2^32 - 5, a, b, h < p. The product stays below 2^64, and mod p
folds it with 2^32 ≡ 5: exact, the same values as numpy's ``%``.
"""
import numpy as np

from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int64_t, uint32_t, uint64_t

cdef extern from "Python.h":
    # The classes ``re`` gives \w (alphanumeric or _), \s and \d in a str pattern, and str.split()'s spaces.
    bint Py_UNICODE_ISSPACE(Py_UCS4 ch)
    bint Py_UNICODE_ISALNUM(Py_UCS4 ch)
    bint Py_UNICODE_ISDECIMAL(Py_UCS4 ch)
    int PyUnicode_4BYTE_KIND
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)


# A character's class for fold_text; ASCII's from a table made with the same functions.
cdef enum CharClass:
    SPACE, WORD, DIGIT, OTHER


cdef inline CharClass char_class(Py_UCS4 c) noexcept:
    if Py_UNICODE_ISSPACE(c):
        return SPACE
    if Py_UNICODE_ISDECIMAL(c):
        return DIGIT
    return WORD if Py_UNICODE_ISALNUM(c) or c == 95 else OTHER


cdef CharClass ASCII_CLASS[128]
for _c in range(128):
    ASCII_CLASS[_c] = char_class(_c)


def fold_text(str text not None, bint strip_punctuation, bint fold_digits):
    """``text`` with every run of spaces (and, with ``strip_punctuation``, of characters neither
    alphanumeric nor _) made one space, none at either end, and (``fold_digits``) every decimal
    digit made 0: what ``re.sub(r"[^\w\s]+", " ")``, ``re.sub(r"\d", "0")`` and
    ``" ".join(text.split())`` make of it, in one pass."""
    cdef Py_ssize_t n = len(text), out_n = 0
    cdef Py_UCS4 c
    cdef CharClass k
    cdef bint gap = False
    cdef Py_UCS4* out = <Py_UCS4*>PyMem_Malloc(max(n, 1) * sizeof(Py_UCS4))
    if out == NULL:
        raise MemoryError()
    try:
        for c in text:
            k = ASCII_CLASS[c] if c < 128 else char_class(c)
            if k == SPACE or (k == OTHER and strip_punctuation):
                gap = out_n > 0
                continue
            if gap:
                out[out_n] = 32
                out_n += 1
                gap = False
            out[out_n] = 48 if k == DIGIT and fold_digits else c
            out_n += 1
        return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out, out_n)
    finally:
        PyMem_Free(out)


cdef extern from *:
    """
    #include <stdint.h>
    #include <stddef.h>

    /* The MinHash loop, compiled once per x86-64 level and picked at load time by the CPU it runs
       on (GCC's target_clones): the wider vector units take more permutations per instruction.
       Other compilers and CPUs get the one portable build. */
    #if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 && defined(__x86_64__) && defined(__GLIBC__)
    #define CM_MINHASH_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
    #else
    #define CM_MINHASH_CLONES
    #endif

    #define CM_PRIME 4294967291ULL
    #define CM_LOW 0xFFFFFFFFULL

    static inline uint64_t cm_mod_prime(uint64_t x) {
        /* Any 64-bit x: 2^32 = 5 (mod p). */
        x = (x & CM_LOW) + 5 * (x >> 32);  /* < 6 * 2^32 */
        x = (x & CM_LOW) + 5 * (x >> 32);  /* < 2^32 + 25 < 2p */
        return x >= CM_PRIME ? x - CM_PRIME : x;
    }

    CM_MINHASH_CLONES
    static void cm_minhash_rows(const uint64_t *hashes, const int64_t *offsets, ptrdiff_t n_docs,
                                const uint32_t *a, const uint32_t *b, ptrdiff_t n_perm, uint32_t *out) {
        for (ptrdiff_t d = 0; d < n_docs; d++) {
            uint32_t *row = out + d * n_perm;
            for (int64_t i = offsets[d]; i < offsets[d + 1]; i++) {
                uint64_t h = cm_mod_prime(hashes[i]);
                /* Branch-free, over contiguous arrays: the compiler vectorises this loop. */
                for (ptrdiff_t k = 0; k < n_perm; k++) {
                    uint64_t v = cm_mod_prime((uint64_t)a[k] * h + b[k]);
                    row[k] = v < row[k] ? (uint32_t)v : row[k];
                }
            }
        }
    }
    """
    void cm_minhash_rows(const uint64_t* hashes, const int64_t* offsets, Py_ssize_t n_docs, const uint32_t* a,
                         const uint32_t* b, Py_ssize_t n_perm, uint32_t* out) noexcept nogil


def minhash_into(const uint64_t[::1] hashes, const int64_t[::1] offsets, const uint32_t[::1] a,
                 const uint32_t[::1] b, uint32_t[:, ::1] out):
    """Fill ``out[d, k]`` (documents × permutations, set to p beforehand) with document d's minimum
    under permutation k, its shingle hashes ``hashes[offsets[d]:offsets[d + 1]]`` taken mod p."""
    cdef Py_ssize_t n_docs = offsets.shape[0] - 1, n_perm = a.shape[0], d
    if out.shape[0] != n_docs or out.shape[1] != n_perm or b.shape[0] != n_perm:
        raise ValueError("minhash_into: out must be (documents, permutations), a and b one per permutation")
    if n_docs < 0 or n_perm == 0 or offsets[0] < 0 or offsets[n_docs] > hashes.shape[0]:
        raise ValueError("minhash_into: offsets run past the hashes, or no permutations")
    for d in range(n_docs):
        if offsets[d + 1] < offsets[d]:
            raise ValueError("minhash_into: offsets must not decrease")
    if n_docs == 0 or offsets[n_docs] == offsets[0]:
        return
    with nogil:
        cm_minhash_rows(&hashes[0], &offsets[0], n_docs, &a[0], &b[0], n_perm, &out[0, 0])


cdef inline uint64_t mix64(uint64_t x) noexcept nogil:
    """The splitmix64 finaliser (wrapping 64-bit arithmetic)."""
    x = x ^ (x >> 30)
    x = x * <uint64_t>0xBF58476D1CE4E5B9
    x = x ^ (x >> 27)
    x = x * <uint64_t>0x94D049BB133111EB
    return x ^ (x >> 31)


cdef inline bint unsegmented(uint32_t cp, const uint32_t* edges, Py_ssize_t n_edges) noexcept nogil:
    """Is ``cp`` inside one of the ranges whose [start, end + 1) edges are ``edges``?"""
    cdef Py_ssize_t lo = 0, hi = n_edges, mid
    if n_edges == 0 or cp < edges[0]:
        return False
    while lo < hi:  # how many edges are <= cp; odd: inside a range
        mid = (lo + hi) // 2
        if edges[mid] <= cp:
            lo = mid + 1
        else:
            hi = mid
    return lo & 1


def shingle_hashes(const uint32_t[::1] cps, const int64_t[::1] lengths, const uint32_t[::1] edges,
                   const uint64_t[::1] salts, int word_n, int cjk_n, double cjk_ratio):
    """(hashes uint64, offsets int64) of the shingles of a batch: ``cps`` holds the documents' code
    points (``lengths`` of them each), one space (32) between documents; document d's shingles are
    ``hashes[offsets[d]:offsets[d + 1]]``. ``edges``: the unsegmented scripts' ranges as sorted
    [start, end + 1) edges; ``salts[i]``: the salt of an n-gram's i-th token."""
    cdef Py_ssize_t n_docs = lengths.shape[0], n_edges = edges.shape[0], d, j, k, i, n, nt, count
    cdef Py_ssize_t pos = 0, total = 0, end, out_n = 0
    cdef int64_t unseg_chars, nonspace
    cdef uint32_t c
    cdef uint64_t acc, in_token = 0
    cdef bint char_mode, u, prev_space, prev_unseg
    for d in range(n_docs):
        if lengths[d] < 0:
            raise ValueError("shingle_hashes: negative length")
        total += lengths[d]
    if total + max(n_docs - 1, 0) != cps.shape[0]:
        raise ValueError("shingle_hashes: the lengths and separators do not add up to the code points")
    if word_n < 1 or cjk_n < 1 or salts.shape[0] < max(word_n, cjk_n):
        raise ValueError("shingle_hashes: n-gram sizes must be positive, with a salt for each position")
    hashes_array = np.empty(max(cps.shape[0], 1), dtype=np.uint64)
    tokens_array = np.empty(max(cps.shape[0], 1), dtype=np.uint64)
    offsets_array = np.zeros(n_docs + 1, dtype=np.int64)
    cdef uint64_t[::1] hashes = hashes_array
    cdef uint64_t[::1] tokens = tokens_array
    cdef int64_t[::1] offsets = offsets_array
    cdef const uint32_t* edge = &edges[0] if n_edges else NULL
    with nogil:
        for d in range(n_docs):
            end = pos + lengths[d]
            unseg_chars = 0
            nonspace = 0
            for j in range(pos, end):
                c = cps[j]
                if c != 32:
                    nonspace += 1
                    if unsegmented(c, edge, n_edges):
                        unseg_chars += 1
            # Documents mostly in unsegmented scripts: every non-space character is a token.
            char_mode = unseg_chars > 0 and <double>unseg_chars >= cjk_ratio * <double>nonspace
            nt = 0
            prev_space, prev_unseg = True, False
            for j in range(pos, end):
                c = cps[j]
                if c == 32:
                    prev_space, prev_unseg = True, False
                    continue
                u = unsegmented(c, edge, n_edges)
                if prev_space or u or prev_unseg or char_mode:
                    tokens[nt] = 0
                    nt += 1
                    in_token = 0
                tokens[nt - 1] += mix64(<uint64_t>c | (in_token << 21))
                in_token += 1
                prev_space, prev_unseg = False, u
            for k in range(nt):
                tokens[k] = mix64(tokens[k])
            n = cjk_n if char_mode else word_n
            # An n-gram at every token with n tokens left; a document shorter than n tokens is one shingle.
            count = nt - n + 1 if nt >= n else (1 if nt > 0 else 0)
            for k in range(count):
                acc = 0
                for i in range(min(n, nt - k)):
                    acc += mix64(tokens[k + i] ^ salts[i])
                hashes[out_n] = mix64(acc)
                out_n += 1
            offsets[d + 1] = out_n
            pos = end + 1
    return hashes_array[:out_n].copy(), offsets_array
