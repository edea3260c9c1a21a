"""What training reads and makes before the network sees it: streamed inputs, the per-language cap,
machine-made negatives of each positive in its language and split, given negatives beside them."""
import json
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
import pyarrow.parquet as pq

from scoring_service.model.features import FeatureHasher, HashingSpec
from scoring_service.training import negatives
from scoring_service.training.corpus import iter_examples
from scoring_service.training.corpus import Example
from scoring_service.training.train import CLEAN, GIVEN, SPLITS, DataSettings, _machine_negatives, load_sets

ENGLISH = [f"Report {i} was read by the committee. The members agreed on point {i} and went home early. "
           f"Nobody spoke against it, and the chair closed the meeting at {i} o'clock." for i in range(60)]
FRENCH = [f"Le rapport {i} a été lu par le comité. Les membres ont approuvé le point {i} avant de partir." for i in range(30)]
FURNITURE = ["Home | About | Contact", "Privacy policy\nTerms of use\nCookies", "Login Register Cart (0)"]


def kept_folder(tmp_path):
    folder = tmp_path / "kept"
    (folder / "lang=en").mkdir(parents=True)
    pq.write_table(pa.table({"text": ENGLISH + [FURNITURE[0]], "id": [str(i) for i in range(61)]}),
                   folder / "lang=en" / "part-0.parquet")
    pq.write_table(pa.table({"text": FRENCH, "lang": ["fr"] * 30}), folder / "part-1.parquet")
    (folder / "_COMPLETE.json").write_text("{}")
    return folder


def test_a_parquet_folder_is_read_with_its_languages_and_without_its_markers(tmp_path):
    examples = list(iter_examples([str(kept_folder(tmp_path))]))
    assert Counter(e.lang for e in examples) == {"en": 61, "fr": 30}
    assert {e.text for e in examples} == set(ENGLISH + FRENCH + [FURNITURE[0]])


@pytest.mark.parametrize("per_positive", [1, 3])
def test_each_positive_gets_its_machine_made_negatives_in_its_language_and_split(tmp_path, per_positive):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps({"text": t}) + "\n" for t in FURNITURE), encoding="utf-8")
    sets, data = load_sets([str(kept_folder(tmp_path))], [str(bad)], FeatureHasher(HashingSpec(buckets=1 << 10)), 13,
                           DataSettings(max_docs_per_language=50, chunk_docs=16, negatives_per_positive=per_positive),
                           log=lambda *_: None)
    langs = np.concatenate([sets[s].langs for s in SPLITS])
    kinds = np.concatenate([sets[s].kinds for s in SPLITS])
    labels = np.concatenate([sets[s].labels for s in SPLITS])
    assert data["dropped_in_both_classes"] == 1  # the furniture line among the positives
    assert data["positives_per_language"] == {"en": 50, "fr": 30}  # English capped
    for lang, n in (("en", 50), ("fr", 30)):
        mine = langs == lang
        assert (kinds[mine] == CLEAN).sum() == n
        assert ((kinds[mine] != CLEAN) & (labels[mine] == 0)).sum() == n * per_positive
    made = Counter(kinds[(kinds != CLEAN) & (kinds != GIVEN)])
    assert set(made) == set(negatives.TRAINING_TURN)
    assert (labels[kinds == GIVEN] == 0).all() and (kinds == GIVEN).sum() == 2
    for split in SPLITS:  # a negative lies in its positive's split: rows per language and split balance
        s = sets[split]
        for lang in ("en", "fr"):
            mine = s.langs == lang
            made_here = ((s.kinds[mine] != CLEAN) & (s.kinds[mine] != GIVEN)).sum()
            assert (s.kinds[mine] == CLEAN).sum() * per_positive == made_here
        assert s.bags.rows == len(s.labels) == len(s.kinds)


def test_the_negatives_of_one_positive_are_of_different_kinds_and_the_kinds_come_in_turn():
    examples = [Example(text=t, source="test", lang="en") for t in ENGLISH[:20]]
    made = _machine_negatives(examples, 13, 0, per_example=3)
    assert len(made) == 60
    for i in range(0, 60, 3):
        assert len({ex.text for ex, _, _ in made[i:i + 3]}) == 1  # one positive's three
        assert len({kind for _, kind, _ in made[i:i + 3]}) == 3
        assert all(text != made[i][0].text for _, _, text in made[i:i + 3])
    turn = negatives.TRAINING_TURN
    assert [kind for _, kind, _ in made] == [turn[i % len(turn)] for i in range(60)]


def test_training_on_held_out_languages_takes_every_udhr_language_and_still_holds_articles_23_to_30_out():
    import random

    from tools import quality_corpus
    from tools.fixtures import udhr as udhr_fixture
    from tools.fixtures.shared_data import shared

    data = str(shared(quality_corpus.UDHR).parents[2])
    by_default = {e.group for e in quality_corpus.udhr(data, random.Random(1))}
    every_language = quality_corpus.udhr(data, random.Random(1), all_languages=True)
    assert "udhr:eng" not in by_default and "udhr:cmn_hans" not in by_default
    assert {"udhr:eng", "udhr:cmn_hans"} <= {e.group for e in every_language}
    english = udhr_fixture.read_declaration(shared(f"{udhr_fixture.DECLARATIONS}/eng.html"))
    trained_lines = {line for e in every_language if e.group == "udhr:eng" for line in e.text.splitlines()}
    held = {n: english.articles.pop(n) for n in udhr_fixture.HELD_OUT_ARTICLES if n in english.articles}
    assert held and not trained_lines & {p for paragraphs in held.values() for p in paragraphs}
    assert set(english.preamble) | {p for paragraphs in english.articles.values() for p in paragraphs} <= trained_lines
    # The held-out table then names no language as unseen.
    assert {e.source for e in quality_corpus.udhr_held_out(data)[0]} == {"udhr-articles-23-30", "udhr-unseen-language"}
    assert {e.source for e in quality_corpus.udhr_held_out(data, True)[0]} == {"udhr-articles-23-30"}


def test_a_training_positive_is_hashed_against_the_memory_of_the_other_half_never_its_own_text(tmp_path):
    """Each text its own words: hashed against a memory without it, none of its pairs has known words
    (pair share 1/2, drawn to one half); against the whole memory (one text in eight), all do."""
    from scoring_service.model.features import _LAYOUT_BASE, _LAYOUT_SLOTS, _MEMORY_FIRST
    from scoring_service.training.corpus import Example, write_jsonl
    from scoring_service.training.train import build_memories, memory_half, split_of

    def word(i, j):  # letters only: the scorer reads every digit as 0
        return "".join(chr(97 + d) for d in (i // 26, i % 26, j))
    texts = [" ".join(word(i, j) for j in range(8)) + ". " + " ".join(word(i, j) for j in range(8, 16)) + "."
             for i in range(120)]
    write_jsonl(str(tmp_path / "pos.jsonl"), [Example(t, "made-up", group=f"g{i % 40}", lang="xx")
                                               for i, t in enumerate(texts)])
    spec = HashingSpec(buckets=1 << 10, memory_log2_bits=24)  # no false hit among these words
    memories = build_memories([str(tmp_path / "pos.jsonl")], [], spec, 13)
    sets, _ = load_sets([str(tmp_path / "pos.jsonl")], [], FeatureHasher(spec, memories.train), 13,
                        log=lambda *_: None, memories=memories)
    train = sets["train"]
    bucket = train.bags.layout[:, _MEMORY_FIRST] - _LAYOUT_BASE - _MEMORY_FIRST * _LAYOUT_SLOTS
    positive = train.kinds == CLEAN
    in_train = [Example(t, "made-up", group=f"g{i % 40}") for i, t in enumerate(texts)
                if split_of(f"g{i % 40}", 13) == "train"]
    whole = sum(memory_half(ex, 13)[1] for ex in in_train)
    assert positive.sum() == len(in_train) and 0 < whole < len(in_train)
    assert (bucket[positive] == 5).sum() == len(in_train) - whole  # share 1/2: no pair with known words
    assert (bucket[positive] >= 10).sum() == whole  # (18 + 1) / (18 + 2): every pair known
    assert memories.test.fill() > 0  # the test positives, for the memory served


def test_a_validation_text_is_hashed_against_the_other_half_of_its_split_as_a_served_text_is(tmp_path):
    """Validation texts in pairs that share their first sentence: a text whose partner is in the other
    half of the validation memory finds that sentence's pairs known; one whose partner is in its own
    half does not (pair share 1/2), and neither does a test text (the test split is hashed with the
    training memory alone)."""
    from scoring_service.model.features import _LAYOUT_BASE, _LAYOUT_SLOTS, _MEMORY_FIRST
    from scoring_service.training.corpus import Example, write_jsonl
    from scoring_service.training.train import build_memories, memory_half, split_of

    def sentence(i):  # eight words of its own, letters only
        return " ".join("".join(chr(97 + d) for d in (i // 676, i // 26 % 26, i % 26, j)) for j in range(8)) + "."
    examples = [Example(sentence(pair) + " " + sentence(1000 + 2 * pair + k), "made-up", group=f"g{pair % 40}",
                        lang="xx") for pair in range(200) for k in (0, 1)]
    write_jsonl(str(tmp_path / "pos.jsonl"), examples)
    spec = HashingSpec(buckets=1 << 10, memory_log2_bits=24)
    memories = build_memories([str(tmp_path / "pos.jsonl")], [], spec, 13)
    assert memories.valid_halves[0].fill() > 0 and memories.valid_halves[1].fill() > 0
    sets, _ = load_sets([str(tmp_path / "pos.jsonl")], [], FeatureHasher(spec, memories.train), 13,
                        log=lambda *_: None, memories=memories)
    for split in ("valid", "test"):
        chosen = [(i, ex) for i, ex in enumerate(examples) if split_of(ex.group, 13) == split]
        partner_apart = {ex.text: memory_half(ex, 13)[0] != memory_half(examples[i ^ 1], 13)[0] for i, ex in chosen}
        data = sets[split]
        bucket = data.bags.layout[:, _MEMORY_FIRST] - _LAYOUT_BASE - _MEMORY_FIRST * _LAYOUT_SLOTS
        positive = bucket[data.kinds == CLEAN]  # (a set keeps no texts: counted, not matched)
        apart = sum(partner_apart.values())
        assert len(positive) == len(chosen) and 0 < apart < len(chosen)
        if split == "valid":
            assert (positive > 5).sum() == apart and (positive == 5).sum() == len(chosen) - apart
        else:
            assert (positive == 5).all()


def test_every_member_tests_on_the_same_groups_and_validates_on_its_own_tenth():
    from scoring_service.model.artifacts import MAX_MEMBERS, NetShape
    from scoring_service.training.train import split_of

    groups = [f"site-{i}" for i in range(2000)]
    splits = [[split_of(g, 13, member) for g in groups] for member in range(MAX_MEMBERS)]
    tests = [{g for g, split in zip(groups, member) if split == "test"} for member in splits]
    valids = [{g for g, split in zip(groups, member) if split == "valid"} for member in splits]
    assert all(t == tests[0] for t in tests) and 150 < len(tests[0]) < 250
    assert all(150 < len(v) < 250 and not v & tests[0] for v in valids)
    assert all(not a & b for i, a in enumerate(valids) for b in valids[i + 1:])  # another tenth each
    assert [split_of(g, 13) for g in groups] == splits[0]  # a model of one network: the first member's splits
    for members in (0, MAX_MEMBERS + 1):
        with pytest.raises(ValueError, match="members"):
            NetShape(members=members)


def test_without_a_group_a_page_s_site_is_its_group(tmp_path):
    rows = [{"text": "a", "url": "https://news.example.org/a?x=1", "group": "given"},
            {"text": "b", "url": "https://News.Example.org/b"},
            {"text": "c", "url": "http://blog.example.net:8080/c"},
            {"text": "d", "url": "not a url"}, {"text": "e", "url": "http://[::1/"}, {"text": "f"}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "kept.parquet")
    with open(tmp_path / "kept.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row) + "\n" for row in rows)
    for name in ("kept.parquet", "kept.jsonl"):
        groups = [ex.group for ex in iter_examples([str(tmp_path / name)])]
        assert groups == ["given", "site:news.example.org", "site:blog.example.net",
                          f"{name}:3", f"{name}:4", f"{name}:5"]
