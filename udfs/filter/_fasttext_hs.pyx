# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""fastText's best label for a line (``predict(line, k=1)``) for a supervised model with a
hierarchical softmax, such as lid.176, read from the model file, with each word's input rows found
once per process instead of on every line.

fastText turns each word of a line into rows of its input matrix: the word's own row when the
dictionary has it, and a row per character n-gram of ``<word>`` (2 to 4 characters for lid.176),
found by hashing the n-gram and, in a quantised model, looking the hash up in the table of n-grams
kept. Those look-ups, redone for every word of every page, are most of fastText's CPU on web pages,
while the same words come back page after page. ``HsClassifier`` keeps each word's rows (up to
``MAX_CACHED_WORDS`` words) and then does what fastText does with them, in the same order of float
operations: add the rows (decoding product-quantised ones), take the mean, walk the label tree. So
the label and its probability are fastText's, bit for bit (``tests/filter/test_langid.py`` compares both
on every line of the shared UDHR corpus, on random Unicode lines and on a dense unpruned model).

Only what ``lid.176.ftz`` and ``lid.176.bin`` use is read: model format 12, supervised, hierarchical
softmax, word n-grams of 1. ``HsClassifier.read`` raises ``NotImplementedError`` for anything else,
and the caller keeps fastText's own ``predict`` for it.
"""
cimport cython
from cpython.unicode cimport PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_DATA, PyUnicode_READ, PyUnicode_Substring
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.math cimport expf, log
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t
from libc.stdlib cimport calloc, free

import struct

import numpy as np

FASTTEXT_MAGIC = 793712314
FORMAT_VERSION = 12
EOS = "</s>"
BOW, EOW = "<", ">"
LABEL_PREFIX = "__label__"
# Words whose rows are kept (~150 bytes each): a crawl's vocabulary beyond this is looked up anew.
MAX_CACHED_WORDS = 300_000
_SUPERVISED, _HIERARCHICAL_SOFTMAX, _LABEL = 3, 1, 1
cdef int KSUB = 256  # centroids per sub-quantiser


cdef class _Matrix:
    """A fastText matrix, dense or product-quantised, with the two row operations prediction uses."""
    cdef bint quantised, qnorm
    cdef int64_t rows, cols
    cdef int nsubq, dsub, lastdsub
    cdef const float[::1] dense
    cdef const uint8_t[::1] codes
    cdef const float[::1] centroids
    cdef const uint8_t[::1] norm_codes
    cdef const float[::1] norm_centroids

    cdef inline const float* centroid(self, int m, uint8_t code) noexcept:
        if m == self.nsubq - 1:
            return &self.centroids[m * KSUB * self.dsub + code * self.lastdsub]
        return &self.centroids[(m * KSUB + code) * self.dsub]

    cdef inline int width(self, int m) noexcept:
        return self.lastdsub if m == self.nsubq - 1 else self.dsub

    cdef inline float norm(self, int32_t row) noexcept:
        return self.norm_centroids[self.norm_codes[row]] if self.qnorm else 1.0

    cdef inline void add_row(self, float* x, int32_t row) noexcept:
        """``x += row`` (fastText's ``addRowToVector``: ``ProductQuantizer::addcode`` when quantised)."""
        cdef int64_t j
        cdef int m, n
        cdef float alpha
        cdef const float* c
        if not self.quantised:
            for j in range(self.cols):
                x[j] += self.dense[row * self.cols + j]
            return
        alpha = self.norm(row)
        for m in range(self.nsubq):
            c = self.centroid(m, self.codes[self.nsubq * row + m])
            for n in range(self.width(m)):
                x[m * self.dsub + n] += alpha * c[n]

    def refusal(self, int dim):
        """Why the rows cannot be read within the matrix's own arrays, or None."""
        if self.cols != dim or self.rows < 0:
            return f"a {self.rows} x {self.cols} matrix for dimension {dim}"
        if not self.quantised:
            return None if self.dense.shape[0] == self.rows * self.cols else "dense values of another size"
        if self.nsubq < 1 or self.dsub < 1 or self.lastdsub < 1 or (self.nsubq - 1) * self.dsub + self.lastdsub != dim:
            return "sub-quantisers that do not cover the dimension"
        if self.codes.shape[0] != self.nsubq * self.rows or self.centroids.shape[0] != dim * KSUB:
            return "codes or centroids of another size"
        if self.qnorm and (self.norm_codes.shape[0] != self.rows or self.norm_centroids.shape[0] != KSUB):
            return "norm codes of another size"
        return None

    cdef inline float dot_row(self, const float* x, int32_t row) noexcept:
        """``row . x`` (fastText's ``dotRow``: ``ProductQuantizer::mulcode`` when quantised)."""
        cdef float res = 0.0
        cdef int64_t j
        cdef int m, n
        cdef const float* c
        if not self.quantised:
            for j in range(self.cols):
                res += self.dense[row * self.cols + j] * x[j]
            return res
        for m in range(self.nsubq):
            c = self.centroid(m, self.codes[self.nsubq * row + m])
            for n in range(self.width(m)):
                res += x[m * self.dsub + n] * c[n]
        return res * self.norm(row)


_ENDS_EARLY = "not a usable fastText model: the file ends early"


class _Reader:
    """Little-endian fields of a fastText model file, in order."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, fmt: str):
        try:
            values = struct.unpack_from("<" + fmt, self.data, self.at)
        except struct.error:
            raise ValueError(_ENDS_EARLY) from None
        self.at += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def array(self, dtype, count: int):
        if count < 0:  # (numpy would read a count of -1 as "the rest of the file")
            raise ValueError(f"not a usable fastText model: an array of {count} values")
        if self.at + count * np.dtype(dtype).itemsize > len(self.data):
            raise ValueError(_ENDS_EARLY)
        array = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.at).copy()
        self.at += array.nbytes
        return array

    def word(self) -> bytes:
        end = self.data.find(b"\0", self.at)
        if end < 0:
            raise ValueError(_ENDS_EARLY)
        word, self.at = self.data[self.at:end], end + 1
        return word

    def product_quantiser(self):
        dim, nsubq, dsub, lastdsub = self.take("4i")
        return nsubq, dsub, lastdsub, self.array(np.float32, dim * KSUB)


cdef _Matrix _read_matrix(reader, bint quantised):
    """fastText's ``DenseMatrix::load`` / ``QuantMatrix::load``."""
    cdef _Matrix matrix = _Matrix()
    matrix.quantised = quantised
    if not quantised:
        matrix.rows, matrix.cols = reader.take("2q")
        matrix.dense = reader.array(np.float32, matrix.rows * matrix.cols)
        return matrix
    matrix.qnorm = reader.take("?")
    matrix.rows, matrix.cols, codesize = reader.take("qqi")
    matrix.codes = reader.array(np.uint8, codesize)
    matrix.nsubq, matrix.dsub, matrix.lastdsub, matrix.centroids = reader.product_quantiser()
    if matrix.qnorm:
        matrix.norm_codes = reader.array(np.uint8, matrix.rows)
        matrix.norm_centroids = reader.product_quantiser()[3]
    return matrix


cdef inline uint32_t _fnv1a(const char* data, Py_ssize_t length) noexcept:
    """fastText's ``Dictionary::hash``: FNV-1a over the bytes, each read as a signed char."""
    cdef uint32_t h = 2166136261
    cdef Py_ssize_t i
    for i in range(length):
        h = (h ^ <uint32_t><int32_t><signed char>data[i]) * 16777619
    return h


cdef inline bint _is_space(Py_UCS4 c) noexcept:
    """fastText's word separators (``Dictionary::readWord``)."""
    return c == u' ' or c == u'\n' or c == u'\r' or c == u'\t' or c == u'\v' or c == u'\f' or c == 0


@cython.final
cdef class HsClassifier:
    cdef _Matrix input, output
    cdef int dim, nwords, labels_count, minn, maxn
    cdef uint32_t bucket
    cdef int64_t pruned
    cdef dict entries, pruneidx, cache
    cdef readonly list labels  # in the model's order: "__label__en", …
    cdef int32_t* left
    cdef int32_t* right
    cdef float* hidden

    def __dealloc__(self):
        free(self.left)
        free(self.right)
        free(self.hidden)

    @staticmethod
    def read(path) -> "HsClassifier":
        """The model at ``path`` (a ``.bin`` or ``.ftz`` file)."""
        cdef HsClassifier model = HsClassifier.__new__(HsClassifier)
        with open(path, "rb") as f:
            reader = _Reader(f.read())
        if reader.take("2i") != (FASTTEXT_MAGIC, FORMAT_VERSION):
            raise NotImplementedError(f"{path}: not a fastText model of format {FORMAT_VERSION}")
        dim, _ws, _epoch, _min_count, _neg, word_ngrams, loss, model_type, bucket, minn, maxn, _lr_update = reader.take("12i")
        reader.take("d")  # sampling threshold
        if model_type != _SUPERVISED or loss != _HIERARCHICAL_SOFTMAX or word_ngrams != 1 or bucket <= 0:
            raise NotImplementedError(f"{path}: only supervised hierarchical-softmax models without word n-grams")
        model.dim, model.minn, model.maxn, model.bucket = dim, minn, maxn, bucket
        size, model.nwords, model.labels_count, _tokens, model.pruned = reader.take("iiiqq")
        model.entries, model.labels, label_counts = {}, [], []
        for index in range(size):
            word = reader.word()
            count, kind = reader.take("qb")
            if kind == _LABEL:
                model.labels.append(word.decode("utf-8", "replace"))
                label_counts.append(count)
            elif index >= model.nwords:
                raise ValueError(f"{path}: not a usable fastText model: a word after the {model.nwords} words")
            try:
                model.entries[word.decode("utf-8")] = (index, kind)
            except UnicodeDecodeError:  # no line of text has these bytes as a word
                pass
        model.pruneidx = dict(reader.take("ii") for _ in range(model.pruned)) if model.pruned > 0 else {}
        model.input = _read_matrix(reader, reader.take("?"))
        model.output = _read_matrix(reader, reader.take("?") and model.input.quantised)
        # Rows are then read unchecked: a file whose parts do not fit together is refused here.
        last_row = model.nwords - 1 + (max(model.pruneidx.values(), default=-1) + 1 if model.pruned >= 0 else bucket)
        refusal = (model.input.refusal(dim) or model.output.refusal(dim) or (
            "no labels" if model.labels_count < 1 else
            f"{size} dictionary entries for {model.nwords} words and {model.labels_count} labels"
            if size != model.nwords + model.labels_count or len(model.labels) != model.labels_count else
            "n-gram rows among the words' rows" if min(model.pruneidx.values(), default=0) < 0 else
            "fewer input rows than words and n-grams" if model.input.rows <= last_row else
            "fewer output rows than labels" if model.output.rows < model.labels_count - 1 else None))
        if refusal:
            raise ValueError(f"{path}: not a usable fastText model: {refusal}")
        model._build_tree(label_counts)
        model.hidden = <float*>calloc(dim, sizeof(float))
        if model.hidden == NULL:
            raise MemoryError()
        model.cache = {}
        return model

    def _build_tree(self, list counts):
        """fastText's ``HierarchicalSoftmaxLoss::buildTree`` (a Huffman tree over the label counts)."""
        cdef int osz = self.labels_count, i, j, leaf = osz - 1, node = osz
        cdef int mini[2]
        self.left = <int32_t*>calloc(2 * osz - 1, sizeof(int32_t))
        self.right = <int32_t*>calloc(2 * osz - 1, sizeof(int32_t))
        if self.left == NULL or self.right == NULL:
            raise MemoryError()
        count = [int(c) for c in counts] + [10 ** 15] * (osz - 1)
        for i in range(2 * osz - 1):
            self.left[i] = self.right[i] = -1
        for i in range(osz, 2 * osz - 1):
            for j in range(2):
                if leaf >= 0 and count[leaf] < count[node]:
                    mini[j] = leaf
                    leaf -= 1
                else:
                    mini[j] = node
                    node += 1
            self.left[i], self.right[i] = mini[0], mini[1]
            count[i] = count[mini[0]] + count[mini[1]]

    def _push_hash(self, list rows, uint32_t bucket_id):
        """fastText's ``Dictionary::pushHash``."""
        if self.pruned == 0:
            return
        if self.pruned > 0:
            if bucket_id not in self.pruneidx:
                return
            bucket_id = self.pruneidx[bucket_id]
        rows.append(self.nwords + bucket_id)

    def _subword_rows(self, str word, list rows):
        """fastText's ``Dictionary::computeSubwords`` over ``<word>``'s UTF-8 bytes."""
        cdef bytes data = (BOW + word + EOW).encode("utf-8")
        cdef const char* b = PyBytes_AS_STRING(data)
        cdef Py_ssize_t size = PyBytes_GET_SIZE(data), i, j, n
        for i in range(size):
            if (<uint8_t>b[i] & 0xC0) == 0x80:
                continue
            j, n = i, 1
            while j < size and n <= self.maxn:
                j += 1
                while j < size and (<uint8_t>b[j] & 0xC0) == 0x80:
                    j += 1
                if n >= self.minn and not (n == 1 and (i == 0 or j == size)):
                    self._push_hash(rows, _fnv1a(b + i, j - i) % self.bucket)
                n += 1

    def word_rows(self, str token) -> bytes:
        """The input rows fastText adds for ``token`` (``Dictionary::getLine``), as int32 bytes."""
        rows = []
        index, kind = self.entries.get(token, (-1, None))
        if index >= 0 and kind != _LABEL:
            rows.append(index)
            if token != EOS and self.maxn > 0:
                self._subword_rows(token, rows)
        elif index < 0 and token != EOS and not token.startswith(LABEL_PREFIX):
            self._subword_rows(token, rows)
        return np.asarray(rows, dtype=np.int32).tobytes()

    cdef bytes _rows_of(self, str token):
        rows = self.cache.get(token)
        if rows is None:
            rows = self.word_rows(token)
            if len(self.cache) < MAX_CACHED_WORDS:
                self.cache[token] = rows
        return rows

    def predict(self, str line):
        """``(label, probability)`` as fastText's ``predict(line, k=1)`` gives them (the line read up
        to its first newline, as ``Dictionary::getLine`` reads it); None for a line without words."""
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(line), at = 0, start, k, count = 0
        cdef int kind = PyUnicode_KIND(line)
        cdef const void* data = PyUnicode_DATA(line)
        cdef Py_UCS4 c
        cdef bytes rows
        cdef const int32_t* ids
        cdef int j
        cdef str token
        cdef float scale, best = 0.0
        cdef int best_node = -1
        for j in range(self.dim):
            self.hidden[j] = 0.0
        while True:
            # Dictionary::readWord: skip separators; a newline before any word reads as EOS.
            token = None
            while at < n:
                c = PyUnicode_READ(kind, data, at)
                if not _is_space(c):
                    break
                at += 1
                if c == u'\n':
                    token = EOS
                    break
            if token is None:
                if at >= n:
                    break
                start = at
                while at < n and not _is_space(PyUnicode_READ(kind, data, at)):
                    at += 1
                token = PyUnicode_Substring(line, start, at)
            rows = self._rows_of(token)
            ids = <const int32_t*>PyBytes_AS_STRING(rows)
            for k in range(PyBytes_GET_SIZE(rows) // 4):
                self.input.add_row(self.hidden, ids[k])
            count += PyBytes_GET_SIZE(rows) // 4
            if token == EOS:
                break
        if count == 0:
            return None
        scale = <float>(1.0 / count)
        for j in range(self.dim):
            self.hidden[j] *= scale
        self._dfs(2 * self.labels_count - 2, 0.0, <float>log(<double>(<float>0.0) + 1e-5), &best, &best_node)
        return self.labels[best_node], expf(best)

    cdef void _dfs(self, int node, float score, float floor, float* best, int* best_node) noexcept:
        """``HierarchicalSoftmaxLoss::dfs`` for k = 1 and threshold 0 (``floor`` = std_log(0))."""
        cdef float f, denominator
        if score < floor:
            return
        if best_node[0] >= 0 and score < best[0]:
            return
        if self.left[node] == -1 and self.right[node] == -1:
            best[0], best_node[0] = score, node  # a tie goes to the later leaf, as fastText's heap does
            return
        f = self.output.dot_row(self.hidden, node - self.labels_count)
        denominator = <float>1 + expf(-f)  # in float, as fastText's sigmoid adds (not 1.0 + …: a double)
        f = <float>1 / denominator
        self._dfs(self.left[node], score + <float>log(<double><float>(1.0 - <double>f) + 1e-5), floor, best, best_node)
        self._dfs(self.right[node], score + <float>log(<double>f + 1e-5), floor, best, best_node)
