"""Incremental dedup in real local Spark: run A on one half of a corpus, run B on the other half
against A's signature index only (A's documents and input are deleted first), with exact and near
duplicates planted across the halves and within B, checked against exhaustive-Jaccard ground truth
and against deduplicating both halves together."""
import random
import shutil

import pytest

from conftest import shared
from corpusmill.config import ConfigError
from jobs import config
from jobs.pipeline import run_pipeline
from jobs.stages.dedup import DedupStage
from jobs.stages.dedup.earlier_runs import EARLIER_RULE, INDEX
from tools.fixtures.dedup_corpus import (edit_chars, edit_words, peoples_daily_paragraphs, similar_pairs,
                                         wiki_paragraphs, with_boilerplate)

PLANTED_ACROSS = {  # B's documents that duplicate one A keeps: id -> the A document
    "b-xa-en002-copy": "a-en002", "b-xa-en004-copy": "a-en004", "b-xa-zh001-copy": "a-zh001",
    "b-xa-en006-near": "a-en006", "b-xa-en008-near": "a-en008", "b-xa-zh003-near": "a-zh003",
    # An exact copy of a document A rejected (not in its index) is still a near duplicate of A's survivor.
    "b-xa-en001-nearcopy": "a-en001",
}
PLANTED_WITHIN_B = {"b-en000-copy": "exact_duplicate", "b-zh000-copy": "exact_duplicate",
                    "b-en005-near": "near_duplicate", "b-zh004-near": "near_duplicate"}


def halves():
    rng = random.Random(21)
    wiki = wiki_paragraphs(shared("corpora/en/enwiki-head-articles.xml"), min_words=80)[:80]
    zh = peoples_daily_paragraphs(shared("corpora/zh/peoples-daily-1998-01.txt"), min_chars=150)[:20]
    vocabulary = " ".join(wiki).split()
    a = [(f"a-en{i:03d}", t) for i, t in enumerate(wiki[:40])] + [(f"a-zh{i:03d}", t) for i, t in enumerate(zh[:10])]
    a_near = edit_words(wiki[1], 0.01, rng, vocabulary)
    a.append(("a-en001-near", a_near))  # rejected within A
    b = [(f"b-en{i:03d}", t) for i, t in enumerate(wiki[40:])] + [(f"b-zh{i:03d}", t) for i, t in enumerate(zh[10:])]
    b += [("b-xa-en002-copy", "  " + wiki[2].upper()), ("b-xa-en004-copy", wiki[4] + "\n"),
          ("b-xa-zh001-copy", zh[1] + " "),
          ("b-xa-en006-near", edit_words(wiki[6], 0.01, rng, vocabulary)),
          ("b-xa-en008-near", with_boilerplate(wiki[8], rng)),
          ("b-xa-zh003-near", edit_chars(zh[3], 0.01, rng)),
          ("b-xa-en001-nearcopy", a_near),
          ("b-far-en010", edit_words(wiki[10], 0.3, rng, vocabulary)),  # rewritten far below the threshold
          ("b-en000-copy", wiki[40].upper()), ("b-zh000-copy", zh[10] + " "),
          ("b-en005-near", edit_words(wiki[45], 0.01, rng, vocabulary)),
          ("b-zh004-near", edit_chars(zh[14], 0.01, rng))]
    return a, b


def write_input(spark, rows, path):
    spark.createDataFrame(rows, "id string, text string").repartition(2).write.parquet(str(path))


def decisions(spark, stage_dir):
    return {r["id"]: r for r in spark.read.parquet(str(stage_dir / "rejected")).collect()}


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("incremental")
    a, b = halves()
    for name, rows in (("a", a), ("b", b), ("ab", a + b)):
        write_input(spark, rows, base / name)
    out = base / "out"
    quiet = {"echo": lambda _: None}
    cfg = config.load()
    stats_a = run_pipeline(spark, cfg, [str(base / "a")], ["dedup"], str(out), "A", **quiet)[0]
    # B may read only A's index: A's documents and its input are gone.
    for gone in (out / "A" / "dedup" / "kept", out / "A" / "dedup" / "rejected", base / "a"):
        shutil.rmtree(gone)
    cfg_b = config.load(overrides={"dedup": {"against": [str(out / "A")]}})
    stats_b = run_pipeline(spark, cfg_b, [str(base / "b")], ["dedup"], str(out), "B", **quiet)[0]
    stats_ab = run_pipeline(spark, cfg, [str(base / "ab")], ["dedup"], str(out), "AB", **quiet)[0]
    print(f"\nwall: A {stats_a['wall_s']} s, B against A's index {stats_b['wall_s']} s, "
          f"A+B recomputed together {stats_ab['wall_s']} s")
    return {"a": a, "b": b, "out": out, "base": base, "cfg_b": cfg_b, "stats_a": stats_a, "stats_b": stats_b,
            "rejected_b": decisions(spark, out / "B" / "dedup"), "rejected_ab": decisions(spark, out / "AB" / "dedup")}


def test_b_drops_exactly_the_documents_a_kept_copies_of(runs):
    a_kept = [(i, t) for i, t in runs["a"] if i != "a-en001-near"]
    rows = a_kept + runs["b"]
    ids, texts = zip(*rows)
    b_ids = {i for i, _ in runs["b"]}
    truth = {x if x in b_ids else y for x, y, _ in similar_pairs(ids, texts, 0.8) if (x in b_ids) != (y in b_ids)}
    assert truth == set(PLANTED_ACROSS)  # the planted ones are all there is
    dropped = {i for i, r in runs["rejected_b"].items() if r["reject_rule"] == EARLIER_RULE}
    precision = len(dropped & truth) / max(len(dropped), 1)
    recall = len(dropped & truth) / len(truth)
    print(f"\ncross-run duplicates: planted {len(truth)}, dropped {len(dropped)}, P={precision:.2f} R={recall:.2f}")
    assert dropped == truth
    for i, source in PLANTED_ACROSS.items():
        row = runs["rejected_b"][i]
        assert (row["survivor_id"], row["cluster_id"]) == (source, source)
        assert row["survivor_run"].endswith("/out/A")


def test_b_keeps_its_own_dedup_and_matches_deduplicating_both_halves_together(runs):
    within = {i: r["reject_rule"] for i, r in runs["rejected_b"].items() if r["reject_rule"] != EARLIER_RULE}
    assert within == PLANTED_WITHIN_B
    assert all(r["survivor_run"] is None for i, r in runs["rejected_b"].items() if i in within)
    together = {i for i in runs["rejected_ab"] if i.startswith("b-")}
    assert together == set(runs["rejected_b"])


def test_stats_count_the_earlier_run_and_the_index_holds_only_what_b_kept(spark, runs):
    stats = runs["stats_b"]
    assert stats["reconciled"] and stats["records_in"] == len(runs["b"])
    assert stats["rejected"] == {EARLIER_RULE: len(PLANTED_ACROSS), "exact_duplicate": 2, "near_duplicate": 2}
    (run_a, n), = stats["duplicates_of_earlier_runs"].items()
    assert run_a.endswith("/out/A") and n == len(PLANTED_ACROSS)
    index = runs["out"] / "B" / "dedup" / INDEX
    kept_b = {r["id"] for r in spark.read.parquet(str(runs["out"] / "B" / "dedup" / "kept")).collect()}
    assert {r["id"] for r in spark.read.parquet(str(index / "exact")).collect()} == kept_b
    assert len(kept_b) == stats["kept"]
    index_a = runs["out"] / "A" / "dedup" / INDEX
    assert spark.read.parquet(str(index_a / "exact")).count() == runs["stats_a"]["kept"] == len(runs["a"]) - 1
    # One row per band of every kept document with shingles, one signature each.
    assert spark.read.parquet(str(index_a / "bands")).count() == 18 * runs["stats_a"]["kept"]
    assert spark.read.parquet(str(index_a / "signatures")).count() == runs["stats_a"]["kept"]


def test_the_earlier_index_is_part_of_the_fingerprint(spark, runs):
    stage = DedupStage(spark, runs["cfg_b"])
    assert stage.artifact_fingerprint() and stage.artifact_fingerprint() != DedupStage(spark, config.load()).artifact_fingerprint()
    echoed = []
    run_pipeline(spark, runs["cfg_b"], [str(runs["base"] / "b")], ["dedup"], str(runs["out"]), "B", echo=echoed.append)
    assert "finished earlier with the same config, skipped" in echoed[0]


@pytest.mark.parametrize("setting, named", [
    ({"num_perm": 64}, "dedup.num_perm=128 (this run: 64)"),
    ({"bands": 16, "rows": 8}, "dedup.bands=18 (this run: 16)"),
    ({"word_ngram": 3}, "dedup.word_ngram=5 (this run: 3)"),
    ({"lowercase": False, "fuzzy": False}, "dedup.lowercase=True (this run: False)"),
])
def test_an_index_made_with_other_settings_is_a_one_line_error(spark, runs, setting, named):
    cfg = config.load(overrides={"dedup": {**setting, "against": [str(runs["out"] / "A" / "dedup" / INDEX)]}})
    with pytest.raises(ConfigError) as err:
        run_pipeline(spark, cfg, [str(runs["base"] / "b")], ["dedup"], str(runs["out"]), "C", echo=lambda _: None)
    assert named in str(err.value) and "\n" not in str(err.value)


def test_a_missing_or_altered_index_is_a_one_line_error(spark, runs, tmp_path):
    def error(against):
        cfg = config.load(overrides={"dedup": {"against": [against]}})
        with pytest.raises(ConfigError) as err:
            DedupStage(spark, cfg).artifact_fingerprint()
        assert "\n" not in str(err.value)
        return str(err.value)

    assert "no dedup index at" in error(str(tmp_path))
    copy = tmp_path / "A"
    shutil.copytree(runs["out"] / "A", copy)
    (copy / "dedup" / INDEX / "exact" / "part-extra.parquet").write_bytes(b"")
    assert "does not match the files" in error(str(copy))
    (copy / "dedup" / INDEX / "exact" / "part-extra.parquet").unlink()
    changed = sorted((copy / "dedup" / INDEX / "exact").glob("part-*.parquet"))[0]
    changed.write_bytes(changed.read_bytes()[:-8] + b"\0" * 8)  # the same size, other bytes
    assert f"exact/{changed.name} does not match its xxh3_64 checksum" in error(str(copy))


def test_a_run_listing_itself_is_refused_before_it_writes(spark, runs):
    cfg = config.load(overrides={"dedup": {"against": [str(runs["out"] / "B")]}})
    with pytest.raises(ConfigError, match="is this run; list earlier runs only"):
        run_pipeline(spark, cfg, [str(runs["base"] / "b")], ["dedup"], str(runs["out"]), "B", echo=lambda _: None)
    assert (runs["out"] / "B" / "dedup" / "_COMPLETE.json").exists()  # the finished stage is untouched
