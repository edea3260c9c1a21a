"""What training reads and makes before the network sees it: streamed inputs, the per-language cap,
one machine-made negative per positive in its language and split, given negatives beside them."""
import json
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from scoring_service.model.features import FeatureHasher, HashingSpec
from scoring_service.training import negatives
from scoring_service.training.corpus import iter_examples
from scoring_service.training.train import CLEAN, GIVEN, SPLITS, DataSettings, load_sets

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


def test_each_positive_gets_one_machine_made_negative_in_its_language_and_split(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps({"text": t}) + "\n" for t in FURNITURE), encoding="utf-8")
    sets, data = load_sets([str(kept_folder(tmp_path))], [str(bad)], FeatureHasher(HashingSpec(buckets=1 << 10)), 13,
                           DataSettings(max_docs_per_language=50, chunk_docs=16), log=lambda *_: None)
    langs = np.concatenate([sets[s].langs for s in SPLITS])
    kinds = np.concatenate([sets[s].kinds for s in SPLITS])
    labels = np.concatenate([sets[s].labels for s in SPLITS])
    assert data["dropped_in_both_classes"] == 1  # the furniture line among the positives
    assert data["positives_per_language"] == {"en": 50, "fr": 30}  # English capped
    for lang, n in (("en", 50), ("fr", 30)):
        mine = langs == lang
        assert (kinds[mine] == CLEAN).sum() == n and ((kinds[mine] != CLEAN) & (labels[mine] == 0)).sum() == n
    made = Counter(kinds[(kinds != CLEAN) & (kinds != GIVEN)])
    assert set(made) == set(negatives.TRAINING_TURN)
    assert (labels[kinds == GIVEN] == 0).all() and (kinds == GIVEN).sum() == 2
    for split in SPLITS:  # a negative lies in its positive's split: rows per language and split balance
        s = sets[split]
        for lang in ("en", "fr"):
            mine = s.langs == lang
            assert (s.kinds[mine] == CLEAN).sum() == ((s.kinds[mine] != CLEAN) & (s.kinds[mine] != GIVEN)).sum()
        assert s.bags.rows == len(s.labels) == len(s.kinds)


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
