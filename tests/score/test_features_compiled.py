"""The scorer's compiled content bag (scoring_service/model/_features.pyx) against its definition in numpy:
every n-gram hashed from one prefix-hash array of the batch's code points, the ids then grouped by
text with a stable sort. A model hashes exactly as it was trained, so the ids and their order (the
order in which the network sums them) must be the same."""
import random
import unicodedata

import numpy as np
import pytest

from conftest import shared
from scoring_service.model import _features
from scoring_service.model.artifacts import DEFAULT_MODEL_DIR, read_info
from scoring_service.model.features import (_BOS, _CHAR_CLASS, _CJK, _CLAUSE_END, _EOS, _SENTENCE_END, _SYMBOLS,
                                      COUNT_BITS, FeatureHasher, HashingSpec, _char_class, _flat, normalize)

PRIME = np.uint64(0x100000001B3)
PRIME_INV = np.uint64(pow(int(PRIME), -1, 1 << 64))
WORD_SALT = np.uint64(0x9E3779B97F4A7C15)


def mix(h):
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def is_cjk(cp):
    """Han, kana, hangul and CJK punctuation: scripts written without spaces between words."""
    return (((cp >= 0x2E80) & (cp <= 0x9FFF)) | ((cp >= 0xAC00) & (cp <= 0xD7AF))
            | ((cp >= 0xF900) & (cp <= 0xFAFF)) | ((cp >= 0xFF00) & (cp <= 0xFFEF))
            | ((cp >= 0x20000) & (cp <= 0x3FFFF)))


def test_the_class_table_holds_the_cjk_ranges_and_the_punctuation_sets_for_every_code_point():
    cp = np.arange(0x110000 + 2, dtype=np.uint64)  # every code point, and past the last
    classes = _char_class(cp)
    assert len(_CHAR_CLASS) < len(cp)
    assert np.array_equal((classes & _CJK) != 0, is_cjk(cp))
    for value, members in ((1, _SENTENCE_END), (2, _CLAUSE_END), (3, _SYMBOLS)):
        assert np.array_equal((classes & 3) == value, np.isin(cp, members))


def is_spaceless(cp):
    """Thai and Lao, Myanmar, Khmer: also written without spaces."""
    return (((cp >= 0x0E00) & (cp <= 0x0EFF)) | ((cp >= 0x1000) & (cp <= 0x109F))
            | ((cp >= 0x1780) & (cp <= 0x17FF)))


SPACELESS_MARKS = np.array([unicodedata.category(chr(c)) in ("Mn", "Mc") for c in range(0x0E00, 0x1800)])


def continues_cluster(cp):
    """Per code point: a Thai, Lao, Myanmar or Khmer one that is a mark, follows a Khmer coeng or a
    Myanmar virama, or follows a Thai or Lao leading vowel."""
    previous = np.concatenate(([0], cp[:-1]))
    mark = np.zeros(len(cp), dtype=bool)
    inside = is_spaceless(cp)
    mark[inside] = SPACELESS_MARKS[(cp[inside] - 0x0E00).astype(np.int64)]
    return inside & (mark | (previous == 0x17D2) | (previous == 0x1039)
                     | ((previous >= 0x0E40) & (previous <= 0x0E44)) | ((previous >= 0x0EC0) & (previous <= 0x0EC4)))


def words(cp, word_rules):
    """Runs of characters that are neither a word break nor a word by themselves: a CJK character (and,
    with ``word_rules`` bit 1, a Thai, Lao, Myanmar or Khmer one; with bit 4 too, such a character and the
    rest of its cluster) is a word by itself; with bit 2, a Yi syllable is too and a Hangul one is not,
    and the Tibetan tsheg and the Ethiopic wordspace break words."""
    spaceless_scripts, script_words = bool(word_rules & 1), bool(word_rules & 2)
    cjk = is_cjk(cp) | (is_spaceless(cp) & spaceless_scripts)
    space = (cp <= 0x20) | (cp == 0xA0)
    if script_words:
        cjk = (cjk & ~((cp >= 0xAC00) & (cp <= 0xD7AF))) | ((cp >= 0xA000) & (cp <= 0xA4CF))
        space |= (cp == 0x0F0B) | (cp == 0x0F0C) | (cp == 0x1361)
    if spaceless_scripts and word_rules & 4:  # the rest of a cluster is no word of its own
        cjk_start, cjk_length = _cluster_words(cp, cjk)
    else:
        cjk_start, cjk_length = np.flatnonzero(cjk), np.ones(int(cjk.sum()), dtype=np.int64)
    word = ~space & ~cjk
    prev = np.concatenate(([False], word[:-1]))
    nxt = np.concatenate((word[1:], [False]))
    starts = np.flatnonzero(word & ~prev)
    ends = np.flatnonzero(word & ~nxt) + 1
    start = np.concatenate((starts, cjk_start))
    length = np.concatenate((ends - starts, cjk_length))
    order = np.argsort(start, kind="stable")
    return start[order], length[order]


def _cluster_words(cp, char_word):
    """Starts and lengths of the character words, a spaceless-script cluster taken whole."""
    continued = char_word & continues_cluster(cp) & np.concatenate(([False], char_word[:-1]))
    continued &= np.concatenate(([False], is_spaceless(cp[:-1])))
    start = np.flatnonzero(char_word & ~continued)
    positions = np.flatnonzero(char_word)
    word_of = np.searchsorted(start, positions, side="right") - 1
    return start, np.bincount(word_of, minlength=len(start)).astype(np.int64)


def numpy_content_bags(spec: HashingSpec, cp, lengths):
    n = len(cp)
    doc = np.repeat(np.arange(len(lengths)), lengths)
    with np.errstate(over="ignore"):
        powers = np.concatenate(([np.uint64(1)], np.cumprod(np.full(n, PRIME, dtype=np.uint64))))[:n + 1]
        inverse = np.concatenate(([np.uint64(1)], np.cumprod(np.full(n, PRIME_INV, dtype=np.uint64))))[:n + 1]
        prefix = np.zeros(n + 1, dtype=np.uint64)
        np.cumsum((cp + np.uint64(1)) * powers[:n], out=prefix[1:])

        def substring_hash(start, length):
            return (prefix[start + length] - prefix[start]) * inverse[start]

        out_docs, out_hashes = [], []
        for order in spec.char_ngrams:
            start = np.arange(max(n - order + 1, 0))
            start = start[doc[start] == doc[start + order - 1]]
            out_docs.append(doc[start])
            out_hashes.append(substring_hash(start, order) + np.uint64(order))
        if spec.word_ngrams:
            w_start, w_len = words(cp, spec.word_rules)
            w_doc = doc[w_start]
            w_hash = mix(substring_hash(w_start, w_len) ^ WORD_SALT)
            out_docs.append(w_doc)
            out_hashes.append(w_hash)
            for order in range(2, spec.word_ngrams + 1):
                count = len(w_hash) - order + 1
                same = w_doc[order - 1:] == w_doc[:count]
                combined = w_hash[:count].copy()
                for k in range(1, order):
                    combined = mix(combined * PRIME + w_hash[k: k + count])
                out_docs.append(w_doc[:count][same])
                out_hashes.append(combined[same])
        hashes = mix(np.concatenate(out_hashes))
    buckets = (hashes % np.uint64(spec.buckets - 1)).astype(np.int32) + 1
    return _flat(np.concatenate(out_docs), buckets, len(lengths))


def code_points(texts, spec):
    normed = [_BOS + normalize(t or "", spec.max_chars, spec.script_words) + _EOS for t in texts]
    cp = np.frombuffer("".join(normed).encode("utf-32-le", "replace"), dtype=np.uint32).astype(np.uint64)
    return cp, np.fromiter((len(t) for t in normed), dtype=np.int64, count=len(normed))


@pytest.mark.parametrize("spec", [read_info(DEFAULT_MODEL_DIR).hashing,
                                  HashingSpec(buckets=97, char_ngrams=(1, 5), word_ngrams=3, max_chars=300),
                                  HashingSpec(buckets=97, char_ngrams=(2,), word_ngrams=2, max_chars=300,
                                              spaceless_scripts=False, script_words=False),
                                  HashingSpec(buckets=97, char_ngrams=(2,), word_ngrams=3, max_chars=300,
                                              script_words=False),
                                  HashingSpec(buckets=97, char_ngrams=(2,), word_ngrams=3, max_chars=300,
                                              spaceless_clusters=False),
                                  HashingSpec(buckets=2, char_ngrams=(3,), word_ngrams=0, max_chars=50)])
def test_content_bags_match_their_definition(spec):
    rng = random.Random(5)
    # Latin, CJK (BMP and beyond), full-width, no-break and other spaces, digits, line breaks, empty texts;
    # Thai, Lao, Khmer, Myanmar (and their marks, leading vowels and stacking signs alone), Tibetan (tsheg,
    # shad), Ethiopic (wordspace, full stop), Yi, Hangul, danda.
    pieces = ["a", "bc", " ", "中", "文", "\u00a0", "1", "é", "\n", "。", "x", "\t", "\U00020000", "word", ". ", "ｱ",
              "ไทย", "เกม", "ສະບາຍດີ", "ខ្មែរ។", "မြန်။", "\u0e31", "\u0e40", "\u17d2", "\u1039",
              "བོད་", "ཡིག།", "ሰው፡", "አለው።", "ꆈꌠ", "한국어", "हिन्दी।"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randrange(0, 90))) for _ in range(1500)]
    texts += ["", None, " ", "\n\n", "中"]
    texts += [p.read_text(encoding="utf-8", errors="replace")[:5000]
              for p in sorted(shared("corpora").rglob("*.txt"))[:20]]
    orders = np.array(spec.char_ngrams, dtype=np.int64)
    for size in (1, 3, 256):
        for start in range(0, len(texts), size if size > 1 else 61):
            cp, lengths = code_points(texts[start:start + size], spec)
            ids, offsets = _features.content_bags(cp, lengths, orders, spec.word_ngrams, spec.buckets,
                                                  spec.word_rules)
            expected_ids, expected_offsets = numpy_content_bags(spec, cp, lengths)
            assert np.array_equal(ids, expected_ids) and np.array_equal(offsets, expected_offsets)


def test_the_hasher_encodes_with_the_compiled_bag():
    spec = read_info(DEFAULT_MODEL_DIR).hashing
    texts = ["A first sentence.\nAnd a second line", "", "中文的句子。"]
    bags = FeatureHasher(spec).encode_bags(texts)
    counted = numpy_counted_bag(*numpy_content_bags(spec, *code_points(texts, spec)), COUNT_BITS)
    assert [bags.content.tolist(), bags.content_classes.tolist(), bags.content_offsets.tolist()] == list(counted)


def test_lengths_that_do_not_add_up_are_refused():
    cp = np.arange(10, dtype=np.uint64)
    orders = np.array([2], dtype=np.int64)
    with pytest.raises(ValueError, match="add up"):
        _features.content_bags(cp, np.array([4, 5], np.int64), orders, 2, 100)
    with pytest.raises(ValueError, match="negative"):
        _features.content_bags(cp, np.array([-1, 11], np.int64), orders, 2, 100)
    with pytest.raises(ValueError, match="positive"):
        _features.content_bags(cp, np.array([10], np.int64), np.array([0], np.int64), 2, 100)
    with pytest.raises(ValueError, match="buckets"):
        _features.content_bags(cp, np.array([10], np.int64), orders, 2, 1)


def numpy_counted_bag(ids, offsets, count_bits):
    """The definition of ``counted_bag``: per text, its distinct ids in the order of their first
    occurrence, each with the set bits of its count below the top class in ascending order, then as
    often as the top class goes into the rest."""
    out_ids, out_classes, out_offsets = [], [], [0]
    top = count_bits - 1
    for text in range(len(offsets) - 1):
        own = ids[offsets[text]:offsets[text + 1]]
        distinct, first, counts = np.unique(own, return_index=True, return_counts=True)
        for position in np.argsort(first):
            count = int(counts[position])
            for k in range(top):
                if count >> k & 1:
                    out_ids.append(int(distinct[position]))
                    out_classes.append(k)
            out_ids += [int(distinct[position])] * (count >> top)
            out_classes += [top] * (count >> top)
        out_offsets.append(len(out_ids))
    return out_ids, out_classes, out_offsets


@pytest.mark.parametrize("count_bits", [1, 2, 3, 16])
def test_the_counted_bag_matches_its_definition_and_holds_every_occurrence(count_bits):
    rng = np.random.default_rng(count_bits)
    lengths = rng.integers(0, 60, 40)
    lengths[[3, 17]] = 0  # texts without ids
    lengths[5] = 700  # counts past the top class of every count_bits here but 16
    ids = rng.integers(0, 12, int(lengths.sum())).astype(np.int32)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    got_ids, got_classes, got_offsets = _features.counted_bag(ids, offsets, count_bits)
    assert ([got_ids.tolist(), got_classes.tolist(), got_offsets.tolist()]
            == list(numpy_counted_bag(ids, offsets, count_bits)))
    for text in range(len(lengths)):  # each id as often as it occurs, by its classes' weights
        mine = slice(got_offsets[text], got_offsets[text + 1])
        occurrences = np.repeat(got_ids[mine], 2 ** got_classes[mine].astype(np.int64))
        assert sorted(occurrences.tolist()) == sorted(ids[offsets[text]:offsets[text + 1]].tolist())


def test_the_counted_bag_refuses_offsets_and_ids_outside_the_bag():
    ids = np.array([1, 2, 3], np.int32)
    for offsets in ([0, 2], [1, 3], [0, 2, 1, 3]):
        with pytest.raises(ValueError, match="offsets"):
            _features.counted_bag(ids, np.array(offsets, np.int64), 16)
    with pytest.raises(ValueError, match="negative id"):
        _features.counted_bag(np.array([1, -2, 3], np.int32), np.array([0, 3], np.int64), 16)
    with pytest.raises(ValueError, match="count_bits"):
        _features.counted_bag(ids, np.array([0, 3], np.int64), 0)


def python_order_stats(cp, lengths, word_rules):
    """The definition of ``order_stats``, word by word in Python: the same words and word hashes as the
    content bag, a Fisher-Yates shuffle driven by splitmix64 from ``SHUFFLE_STATE``."""
    mask64 = (1 << 64) - 1

    def mix64(h):
        h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & mask64
        h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & mask64
        return h ^ (h >> 31)

    def repeats(ws, order):
        seen, found = set(), 0
        for i in range(len(ws) - order + 1):
            key = tuple(ws[i:i + order])
            found += key in seen
            seen.add(key)
        return found

    rows, start = [], 0
    for length in lengths:
        text = cp[start:start + length]
        start += length
        w_start, w_len = words(text, word_rules)
        ws = [tuple(text[s:s + n].tolist()) for s, n in zip(w_start, w_len)]
        ends = [w[-1] in (0x2E, 0x21, 0x3F) for w in ws]
        state, shuffled = _features.SHUFFLE_STATE, list(ws)
        for i in range(len(ws) - 1, 0, -1):
            state = (state + 0x9E3779B97F4A7C15) & mask64
            j = mix64(state) % (i + 1)
            shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
        window = sum(ws[i] in ws[max(0, i - _features.WINDOW):i] for i in range(1, len(ws)))
        sentences, squares, since = 0, 0, 0
        for end in ends:
            since += 1
            if end:
                sentences, squares, since = sentences + 1, squares + since * since, 0
        if since:
            sentences, squares = sentences + 1, squares + since * since
        rows.append([len(ws), repeats(ws, 2), repeats(shuffled, 2), repeats(ws, 3), repeats(shuffled, 3),
                     window, sentences, squares])
    return np.array(rows, dtype=np.float64).reshape(len(lengths), len(_features.ORDER_STATS))


@pytest.mark.parametrize("spaceless_scripts, script_words, spaceless_clusters",
                         [(True, True, True), (True, True, False), (True, False, False), (False, False, False)])
def test_order_stats_match_their_definition(spaceless_scripts, script_words, spaceless_clusters):
    rng = random.Random(11)
    vocabulary = ["the", "cat", "sat", "on", "mat.", "a", "dog!", "中", "文", "。", "ไทย", "เกม", "ខ្មែរ", "why?",
                  "\n", "1", "བོད་ཡིག།", "ሰው፡አለው።", "ꆈꌠ", "한국어", "हिन्दी।"]
    texts = [" ".join(rng.choice(vocabulary) for _ in range(rng.randrange(0, 120))) for _ in range(300)]
    texts += ["", None, "中文的句子。中文的句子。"]
    texts += [p.read_text(encoding="utf-8", errors="replace")[:3000] for p in sorted(shared("corpora").rglob("*.txt"))[:8]]
    spec = HashingSpec(spaceless_scripts=spaceless_scripts, script_words=script_words,
                       spaceless_clusters=spaceless_clusters)
    for start in range(0, len(texts), 37):
        cp, lengths = code_points(texts[start:start + 37], spec)
        got = _features.order_stats(cp, lengths, spec.word_rules)
        assert np.array_equal(got, python_order_stats(cp, lengths, spec.word_rules))
    with pytest.raises(ValueError, match="add up"):
        _features.order_stats(np.arange(10, dtype=np.uint64), np.array([4, 5], np.int64))


@pytest.mark.parametrize("lengths, problem", [([2, -1], "negative length"), ([2, 2], "the lengths do not add up")])
def test_texts_whose_lengths_do_not_fit_their_code_points_are_refused(lengths, problem):
    cp = np.array([ord(c) for c in "abc"], dtype=np.uint64)
    lengths = np.array(lengths, dtype=np.int64)
    with pytest.raises(ValueError, match=f"content_bags: {problem}"):
        _features.content_bags(cp, lengths, np.array([2], dtype=np.int64), 2, 1024)
    with pytest.raises(ValueError, match=f"order_stats: {problem}"):
        _features.order_stats(cp, lengths)


@pytest.mark.parametrize("text, words_without, words_with", [
    ("བོད་ཡིག་ཡིན།", 1, 3),      # Tibetan syllables between tsheg
    ("ሰው፡ሁሉ፡መብት፡አለው።", 1, 4),  # Ethiopic words between wordspaces
    ("ꆈꌠ ꁱꂷ", 2, 4),             # Yi syllables
    ("한국어 문장입니다", 8, 2),    # Hangul words run to a space
])
def test_script_words_are_the_words_of_each_script(text, words_without, words_with):
    for script_words, expected in ((False, words_without), (True, words_with)):
        spec = HashingSpec(script_words=script_words)
        cp, lengths = code_points([text], spec)
        assert _features.order_stats(cp, lengths, spec.word_rules)[0, 0] == expected


@pytest.mark.parametrize("text, characters, clusters", [
    ("สวัสดีครับ", 10, 7),  # Thai: vowel signs and tone marks on their letters
    ("ไทย", 3, 2),          # a Thai leading vowel goes with its letter
    ("ភាសាខ្មែរ", 9, 4),     # Khmer: a letter under a coeng
    ("မြန်မာစာ", 8, 4),      # Myanmar: medials, vowel signs, asat
])
def test_a_word_of_a_spaceless_script_is_a_character_cluster(text, characters, clusters):
    for spaceless_clusters, expected in ((False, characters), (True, clusters)):
        spec = HashingSpec(spaceless_clusters=spaceless_clusters)
        cp, lengths = code_points([text], spec)
        assert _features.order_stats(cp, lengths, spec.word_rules)[0, 0] == expected


def test_script_words_end_sentences_at_each_scripts_marks():
    text = "हिन्दी एक भाषा है। यह दूसरा वाक्य है।"
    assert normalize(text, 100, script_words=True).endswith("है.")
    assert normalize(text, 100) == text
    spec = HashingSpec()
    cp, lengths = code_points([text], spec)
    assert _features.order_stats(cp, lengths, spec.word_rules)[0, list(_features.ORDER_STATS).index("sentences")] == 2
