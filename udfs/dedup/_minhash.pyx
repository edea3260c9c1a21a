# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The dedup stage's per-character and per-shingle loops in compiled code (``udfs/dedup/minhash.py``):
the shingle hashes of a batch, and MinHash signatures without a pass over the shingles per
permutation.

Shingles: the tokens and n-grams the module docstring of ``minhash.py`` describes. A token's hash is
the splitmix64 finaliser of the wrapping sum of mix(code point | position in token << 21); a
shingle's, mix of the wrapping sum of mix(token i of the n-gram ^ salt i).

MinHash: for every document and permutation k, min over its shingle hashes h of
``(a[k]·h + b[k]) mod p``, p = 2^32 - 5, a, b, h < p. The product stays below 2^64, and mod p
folds it with 2^32 ≡ 5: exact, the same values as numpy's ``%``.
"""
import numpy as np

from libc.stdint cimport int64_t, uint32_t, uint64_t

cdef uint64_t PRIME = 4294967291
cdef uint64_t LOW = 0xFFFFFFFF


cdef inline uint64_t mod_prime(uint64_t x) noexcept nogil:
    x = (x & LOW) + 5 * (x >> 32)   # < 6·2^32
    x = (x & LOW) + 5 * (x >> 32)   # < 2^32 + 25 < 2p
    return x - PRIME if x >= PRIME else x


def minhash_into(const uint32_t[::1] hashes, const int64_t[::1] offsets, const uint32_t[::1] a,
                 const uint32_t[::1] b, uint32_t[:, ::1] out):
    """Fill ``out[d, k]`` (documents × permutations, set to p beforehand) with document d's minimum
    under permutation k; ``hashes`` are below p, ``hashes[offsets[d]:offsets[d + 1]]`` are d's."""
    cdef Py_ssize_t n_docs = offsets.shape[0] - 1, n_perm = a.shape[0], d, i, k
    cdef uint64_t h, v
    cdef const uint32_t* pa
    cdef const uint32_t* pb
    cdef uint32_t* row
    if out.shape[0] != n_docs or out.shape[1] != n_perm or b.shape[0] != n_perm:
        raise ValueError("minhash_into: out must be (documents, permutations), a and b one per permutation")
    if n_docs < 0 or n_perm == 0 or offsets[0] < 0 or offsets[n_docs] > hashes.shape[0]:
        raise ValueError("minhash_into: offsets run past the hashes, or no permutations")
    for d in range(n_docs):
        if offsets[d + 1] < offsets[d]:
            raise ValueError("minhash_into: offsets must not decrease")
    pa, pb = &a[0], &b[0]
    with nogil:
        for d in range(n_docs):
            row = &out[d, 0]
            for i in range(offsets[d], offsets[d + 1]):
                h = hashes[i]
                # Branch-free, over contiguous arrays: the compiler vectorises this loop.
                for k in range(n_perm):
                    v = mod_prime(<uint64_t>pa[k] * h + pb[k])
                    row[k] = <uint32_t>v if v < row[k] else row[k]


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
