"""fastText's prediction in compiled code (``udfs/filter/_fasttext_hs.pyx``) against fastText itself
(``fasttext-predict``): the same label and the same probability, bit for bit, on every line of the
shared UDHR corpus (~370 language varieties, as the filter's line and as written), on random Unicode
lines, and on the lines that test how a line is read into words."""
import random
import struct
import zipfile

import numpy as np

import pytest

from conftest import shared
from udfs.filter._fasttext_hs import MAX_CACHED_WORDS, HsClassifier
from udfs.filter.langid import CLD2_LANGUAGES, FastTextPredictor, LanguageIdentifier, default_model_path, load_classifier


@pytest.fixture(scope="module")
def compiled_and_fasttext():
    path = str(default_model_path())
    return HsClassifier.read(path), FastTextPredictor(path)


READING_LINES = [
    "", "\n", "\n\n", " ", "hello world\n", "hello world", "  hello\t\tworld \r\n and the rest\n",
    "first line\nsecond line\n", "__label__en __label__zz are labels, not words\n", "</s> after\n",
    "before </s> after\n", "a\x00b\x0bc\x0cd e\n", "ünïcödé wörds, 中文 字符 and 🙂🙂 🙂\n",
    "x" * 5000 + "\n", "a " * 3000 + "\n", "<b> [tag] n-grams of <word> \n", "\xa0non breaking\xa0space\n",
]


def test_a_line_is_read_into_words_as_fasttext_reads_it(compiled_and_fasttext):
    """Separators, newlines (the line ends at the first), labels, the end-of-sentence word, bytes of
    every width, a line without words."""
    compiled, fasttext = compiled_and_fasttext
    for line in READING_LINES:
        assert compiled.predict(line) == fasttext.predict(line), repr(line)
    assert compiled.predict("") is None and compiled.predict("\n") is not None


def test_every_udhr_line_gets_fasttexts_label_and_probability(compiled_and_fasttext):
    compiled, fasttext = compiled_and_fasttext
    line_of = LanguageIdentifier().line
    with zipfile.ZipFile(shared("corpora/multilingual/udhr2.zip")) as archive:
        texts = [line for name in sorted(archive.namelist()) if name.endswith(".txt")
                 for line in archive.read(name).decode("utf-8", "replace").splitlines()[1:] if line.strip()]
    labels = set()
    for text in texts:
        for line in (line_of(text), text + "\n"):  # the filter's line, and the text as written
            found = compiled.predict(line)
            assert found == fasttext.predict(line), line
            labels.add(found[0])
    assert len(texts) > 10_000 and len(labels) > 150


def test_random_unicode_lines_get_fasttexts_answer(compiled_and_fasttext):
    compiled, fasttext = compiled_and_fasttext
    rng = random.Random(7)
    blocks = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x52F), (0x590, 0x6FF), (0x900, 0xDFF), (0x3040, 0x30FF),
              (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0x1F300, 0x1F64F)]
    for _ in range(2000):
        words = ["".join(chr(rng.randint(*rng.choice(blocks))) for _ in range(rng.randint(1, 12)))
                 for _ in range(rng.randint(0, 40))]
        line = rng.choice([" ", "  ", "\t"]).join(words) + rng.choice(["\n", "", " \n"])
        assert compiled.predict(line) == fasttext.predict(line), repr(line)


def test_the_filter_reads_the_default_model_with_the_compiled_classifier():
    assert isinstance(load_classifier(), HsClassifier)
    assert isinstance(LanguageIdentifier().classifier, HsClassifier)
    assert len(load_classifier().labels) == 176 and MAX_CACHED_WORDS > 0


def test_a_model_it_does_not_read_is_refused_for_fasttext_to_read(tmp_path):
    """A softmax model (loss 3): the caller falls back to fastText for it."""
    model = tmp_path / "softmax.bin"
    model.write_bytes(struct.pack("<2i12id", 793712314, 12, 16, 5, 5, 1, 5, 1, 3, 3, 2000000, 2, 4, 100, 1e-4))
    with pytest.raises(NotImplementedError, match="hierarchical-softmax"):
        HsClassifier.read(model)
    (tmp_path / "old.bin").write_bytes(struct.pack("<2i", 793712314, 11))
    with pytest.raises(NotImplementedError, match="format 12"):
        HsClassifier.read(tmp_path / "old.bin")


def dense_hs_model(path, words=("hello", "world", "bonjour"), labels=("a", "b", "c", "d"), dim=4, bucket=50, loss=1):
    """A small supervised hierarchical-softmax model file with dense matrices (as ``lid.176.bin`` has),
    no pruning, random weights: fastText and the compiled classifier must read it alike. ``loss=3``
    makes it a softmax model, which only fastText reads."""
    rng = np.random.default_rng(3)
    entries = [("</s>", 9, 0)] + [(w, 8 - i, 0) for i, w in enumerate(words)] + \
              [(f"__label__{l}", 20 - 3 * i, 1) for i, l in enumerate(labels)]
    out = [struct.pack("<2i12id", 793712314, 12, dim, 5, 5, 1, 5, 1, loss, 3, bucket, 2, 3, 100, 1e-4),
           struct.pack("<iiiqq", len(entries), len(words) + 1, len(labels), 100, -1)]
    out += [w.encode() + b"\0" + struct.pack("<qb", count, kind) for w, count, kind in entries]
    out.append(struct.pack("<?qq", False, len(words) + 1 + bucket, dim))
    out.append(rng.normal(size=(len(words) + 1 + bucket, dim)).astype("<f4").tobytes())
    out.append(struct.pack("<?qq", False, len(labels), dim))
    out.append(rng.normal(size=(len(labels), dim)).astype("<f4").tobytes())
    path.write_bytes(b"".join(out))
    return path


def test_a_dense_unpruned_model_gets_fasttexts_answers(tmp_path):
    """The ``.bin`` side: dense input and output matrices, every n-gram bucket kept."""
    path = str(dense_hs_model(tmp_path / "dense.bin"))
    compiled, fasttext = HsClassifier.read(path), FastTextPredictor(path)
    rng = random.Random(5)
    vocabulary = ["hello", "world", "bonjour", "hallo", "wörld", "日本語", "x", "__label__a"]
    for _ in range(300):
        line = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 12))) + rng.choice(["\n", ""])
        assert compiled.predict(line) == fasttext.predict(line), repr(line)
    assert {compiled.predict(w + "\n")[0] for w in vocabulary} <= {f"__label__{l}" for l in "abcd"}


def test_a_model_fasttext_reads_gives_every_label_to_the_identifier(tmp_path):
    """The identifier needs a model's labels (which of CLD2's languages it lacks): fastText's reader
    gives a softmax model's, all of them."""
    path = dense_hs_model(tmp_path / "softmax.bin", loss=3)
    classifier = load_classifier(str(path))
    assert isinstance(classifier, FastTextPredictor)
    assert sorted(classifier.labels) == [f"__label__{label}" for label in "abcd"]
    assert LanguageIdentifier(str(path), second_opinion_below=0.8).only_cld2_names == CLD2_LANGUAGES  # none of them


def test_a_model_file_whose_parts_do_not_fit_is_refused_not_read_out_of_bounds(tmp_path):
    """Rows are read without bound checks, so the file's counts are checked against its arrays first:
    a cut file, a dictionary claiming more words than rows, a matrix of another width."""
    good = dense_hs_model(tmp_path / "good.bin").read_bytes()
    HsClassifier.read(tmp_path / "good.bin")
    (tmp_path / "cut.bin").write_bytes(good[:-40])
    with pytest.raises(ValueError, match="ends early"):
        HsClassifier.read(tmp_path / "cut.bin")
    dictionary_at = struct.calcsize("<2i12id")
    (tmp_path / "cut_dictionary.bin").write_bytes(good[:dictionary_at + 30])
    with pytest.raises(ValueError, match="ends early"):
        HsClassifier.read(tmp_path / "cut_dictionary.bin")
    more_words = bytearray(good)
    struct.pack_into("<i", more_words, dictionary_at + 4, 60)  # nwords: 60 of 8 entries
    (tmp_path / "words.bin").write_bytes(bytes(more_words))
    with pytest.raises(ValueError, match="8 dictionary entries for 60 words"):
        HsClassifier.read(tmp_path / "words.bin")
    more_buckets = bytearray(good)
    struct.pack_into("<i", more_buckets, 40, 1000)  # n-gram buckets: 4 words + 1000 buckets > 54 rows
    (tmp_path / "buckets.bin").write_bytes(bytes(more_buckets))
    with pytest.raises(ValueError, match="fewer input rows than words and n-grams"):
        HsClassifier.read(tmp_path / "buckets.bin")
    wider = bytearray(good)
    struct.pack_into("<i", wider, 8, 8)  # dimension 8 for matrices of 4 columns
    (tmp_path / "wider.bin").write_bytes(bytes(wider))
    with pytest.raises(ValueError, match="matrix for dimension 8"):
        HsClassifier.read(tmp_path / "wider.bin")


def test_a_pruned_model_whose_n_gram_rows_point_before_its_buckets_is_refused(tmp_path):
    """lid.176.ftz keeps a table from hashed n-gram to row; a negative row there would be read
    outside the input matrix, unchecked."""
    data = bytearray(default_model_path().read_bytes())
    at = struct.calcsize("<2i12id")
    size, _nwords, _labels, _tokens, pruned = struct.unpack_from("<iiiqq", data, at)
    at += struct.calcsize("<iiiqq")
    for _ in range(size):  # each entry: the word, NUL, its count (int64) and kind (int8)
        at = data.index(b"\0", at) + 1 + struct.calcsize("<qb")
    assert pruned > 0
    struct.pack_into("<i", data, at + 4, -10**6)  # the first (bucket, row) pair's row
    (tmp_path / "negative.ftz").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="n-gram rows among the words' rows"):
        HsClassifier.read(tmp_path / "negative.ftz")
