# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""MinHash signatures in compiled code: ``udfs/dedup/minhash.py``'s ``minhash`` without a pass over
the shingles per permutation.

For every document and permutation k: min over its shingle hashes h of ``(a[k]·h + b[k]) mod p``,
p = 2^32 - 5, a, b, h < p. The product stays below 2^64, and mod p folds it with 2^32 ≡ 5: exact,
the same values as numpy's ``%``.
"""
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
