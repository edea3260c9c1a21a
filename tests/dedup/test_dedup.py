"""The dedup stage in real local Spark: connected components, skew handling, and planted duplicates in
real English (Wikipedia) and Chinese (People's Daily) text against exhaustive-Jaccard ground truth."""
import math
import random
from contextlib import ExitStack

import pytest
from pyspark.sql import functions as F

from conftest import shared
from tools.fixtures.dedup_corpus import (edit_chars, edit_words, expected_removed, peoples_daily_paragraphs,
                                         similar_pairs, wiki_paragraphs, with_boilerplate)
from jobs import config
from jobs.stages.dedup import DedupStage
from jobs.stages.dedup.components import Checkpointer, attach_group_min, connected_components, join_hot_safe
from jobs.pipeline import run_pipeline
from jobs.runner import transformed

DECISION = ["id", "cluster_id", "survivor_id", "reject_rule", "_outcome"]


# ---------------------------------------------------------------- connected components

def components(spark, edges, on_driver=False, id_type="string"):
    df = spark.createDataFrame(edges, f"src {id_type}, dst {id_type}")
    result, rounds = connected_components(df, 40, Checkpointer(spark, ""), on_driver=on_driver)
    return {r["id"]: r["root"] for r in result.collect()}, rounds


GRAPH = (
    [(f"c{i:02d}", f"c{i + 1:02d}") for i in range(9)]           # chain c00 - c01 - … - c09
    + [("s9", f"s{i}") for i in range(1, 9)]                     # star centred on its largest id
    + [("t3", "t1"), ("t1", "t2"), ("t2", "t3")]                 # triangle
    + [("p2", "p1")]                                             # pair
)
EXPECTED = {**{f"c{i:02d}": "c00" for i in range(1, 10)}, **{f"s{i}": "s1" for i in range(2, 10)},
            "t2": "t1", "t3": "t1", "p2": "p1"}


@pytest.mark.parametrize("on_driver", [False, True], ids=["rounds", "on-driver"])
def test_connected_components_of_known_graph(spark, on_driver):
    result, rounds = components(spark, GRAPH, on_driver)
    assert result == EXPECTED
    assert rounds == 0 if on_driver else rounds >= 1  # the chain and the triangle take rounds


def test_components_on_the_driver_are_those_of_the_rounds_on_random_graphs(spark):
    rng = random.Random(11)
    for nodes, edges in ((60, 40), (60, 70), (300, 280)):
        # Self-loops, repeated and reversed edges, and ids whose order as strings is not as numbers.
        graph = [(str(rng.randrange(nodes) * 7919 % 1000), str(rng.randrange(nodes) * 7919 % 1000))
                 for _ in range(edges)]
        assert components(spark, graph, on_driver=True)[0] == components(spark, graph)[0]
    longs = [(rng.randrange(500), rng.randrange(500)) for _ in range(300)]
    assert components(spark, longs, True, "long")[0] == components(spark, longs, False, "long")[0]
    # Spark orders strings by their UTF-8 bytes: "z" < "é" < "中".
    assert components(spark, [("é", "z"), ("z", "中"), ("b", "a")], on_driver=True)[0] == {"é": "z", "中": "z", "b": "a"}


def test_connected_components_converge_in_logarithmic_rounds(spark):
    labels = [f"v{i:03d}" for i in range(128)]
    random.Random(7).shuffle(labels)  # a path whose ids are in random order
    result, rounds = components(spark, list(zip(labels, labels[1:])))
    assert set(result.values()) == {"v000"} and len(result) == 127
    assert rounds <= 2 * math.log2(128)


@pytest.mark.parametrize("on_driver", [False, True], ids=["rounds", "on-driver"])
def test_no_edges_means_no_components(spark, on_driver):
    assert components(spark, [], on_driver) == ({}, 0)


def test_stars_are_components_at_once_and_a_node_between_two_stars_joins_them(spark):
    assert components(spark, [("b", "a"), ("c", "a"), ("e", "d")]) == ({"b": "a", "c": "a", "e": "d"}, 0)
    joined, rounds = components(spark, [("c", "a"), ("c", "b"), ("d", "b")])
    assert joined == {"b": "a", "c": "a", "d": "a"} and rounds >= 1
    chained, rounds = components(spark, [("c", "b"), ("b", "a")])
    assert chained == {"b": "a", "c": "a"} and rounds >= 1


def test_join_hot_safe_spreads_a_hot_key_and_joins_like_a_plain_join(spark):
    many = spark.createDataFrame([("hot", f"m{i}") for i in range(50)] + [("cold", "x")], "k string, v string")
    one = many.groupBy("k").agg(F.count(F.lit(1)).alias("_n"), F.lit("payload").alias("p"))
    joined = join_hot_safe(many, one, ["k"], spread_by="v", cap=4)
    assert sorted(map(tuple, joined.select("k", "v", "p").collect())) == \
        sorted(map(tuple, many.join(one.drop("_n"), "k").select("k", "v", "p").collect()))
    # The hot key's rows were spread over ceil(50 / 4) = 13 salts, not sent to one task.
    salted = many.withColumn("_salt", F.pmod(F.xxhash64("v"), F.lit(13))).where("k = 'hot'")
    assert salted.select("_salt").distinct().count() > 8


@pytest.mark.parametrize("checkpointed, broadcast_rows", [(False, 0), (True, 0), (True, 1000)],
                         ids=["plain", "checkpointed-shuffled", "checkpointed-broadcast"])
def test_attach_group_min_keeps_only_groups_of_min_size_with_their_least_value(spark, checkpointed, broadcast_rows):
    rows = [("hot", f"h{i:02d}") for i in range(30)] + [("pair", "p2"), ("pair", "p1")]
    rows += [(f"alone{i}", f"a{i}") for i in range(20)]
    df = spark.createDataFrame(rows, "k string, v string")
    out = attach_group_min(df, ["k"], F.col("v"), "least", spread_by="v", cap=4, min_size=2, size_column="size",
                           checkpoint=Checkpointer(spark, "") if checkpointed else None,
                           broadcast_rows=broadcast_rows)
    expected = sorted([("hot", f"h{i:02d}", "h00", 30) for i in range(30)] + [("pair", "p2", "p1", 2), ("pair", "p1", "p1", 2)])
    assert sorted(map(tuple, out.select("k", "v", "least", "size").collect())) == expected


# ---------------------------------------------------------------- the stage on real text

def planted_corpus():
    """Real paragraphs with planted exact and near duplicates, distinct rewrites and a chain."""
    rng = random.Random(11)
    wiki = wiki_paragraphs(shared("corpora/en/enwiki-head-articles.xml"), min_words=80)[:60]
    zh = peoples_daily_paragraphs(shared("corpora/zh/peoples-daily-1998-01.txt"), min_chars=150)[:30]
    vocabulary = " ".join(wiki).split()
    rows = [(f"en{i:03d}", t) for i, t in enumerate(wiki)] + [(f"zh{i:03d}", t) for i, t in enumerate(zh)]
    for i in range(0, 24, 2):       # near duplicates: ~1 % word edits or a boilerplate line
        edited = edit_words(wiki[i], 0.01, rng, vocabulary) if i % 4 else with_boilerplate(wiki[i], rng)
        rows.append((f"en{i:03d}-near", edited))
    for i in range(1, 12, 2):       # rewritten far beyond the threshold: must stay
        rows.append((f"en{i:03d}-far", edit_words(wiki[i], 0.3, rng, vocabulary)))
    for i in range(3, 9):           # exact duplicates up to case and spacing
        rows.append((f"en{i:03d}-copy", "  " + wiki[i].upper()))
    for i in range(0, 12, 2):       # Chinese near duplicates: ~1 % characters edited
        rows.append((f"zh{i:03d}-near", edit_chars(zh[i], 0.01, rng)))
    rows.append(("zh001-copy", zh[1] + " "))
    # A chain: A ~ B and B ~ C above the threshold, A and C below it.
    words = wiki[40].split()
    half = len(words) // 2
    b = words[:half] + edit_words(" ".join(words[half:]), 0.03, rng, vocabulary).split()
    c = edit_words(" ".join(b[:half]), 0.03, rng, vocabulary).split() + b[half:]
    rows += [("en040-chain-b", " ".join(b)), ("en040-chain-c", " ".join(c))]
    return rows


@pytest.fixture(scope="module")
def planted(spark, tmp_path_factory):
    rows = planted_corpus()
    base = tmp_path_factory.mktemp("dedup")
    spark.createDataFrame([(i, f"https://example.org/{i}", t) for i, t in rows], "id string, url string, text string") \
        .repartition(3).write.parquet(str(base / "input"))
    cfg = config.load()
    stats = run_pipeline(spark, cfg, [str(base / "input")], ["dedup"], str(base / "out"), "r", echo=lambda _: None)[0]
    stage_dir = base / "out" / "r" / "dedup"
    out = spark.read.parquet(str(stage_dir / "kept")).withColumn("_outcome", F.lit("kept")).unionByName(
        spark.read.parquet(str(stage_dir / "rejected")).withColumn("_outcome", F.lit("rejected")))
    return {"rows": rows, "stats": stats, "out": out, "input": str(base / "input"), "cfg": cfg,
            "decisions": sorted(map(tuple, out.select(*DECISION).collect()))}


def test_planted_duplicates_match_exhaustive_jaccard_ground_truth(planted):
    ids, texts = zip(*planted["rows"])
    removed = {r[0] for r in planted["decisions"] if r[4] == "rejected"}
    truth = expected_removed(ids, texts, 0.8)
    assert {i for i in truth if "-near" in i} == {i for i, _ in planted["rows"] if "-near" in i}
    assert removed == truth


def test_distinct_rewrites_and_originals_are_kept(planted):
    kept = {r[0] for r in planted["decisions"] if r[4] == "kept"}
    assert {i for i, _ in planted["rows"] if i.endswith("-far")} <= kept
    assert {i for i, _ in planted["rows"] if "-" not in i} <= kept


def test_chain_collapses_to_one_cluster(planted):
    ids, texts = zip(*planted["rows"])
    chain = {"en040", "en040-chain-b", "en040-chain-c"}
    sims = {frozenset(p[:2]): p[2] for p in similar_pairs(ids, texts, 0.0) if set(p[:2]) <= chain}
    assert sims[frozenset({"en040", "en040-chain-b"})] >= 0.8 <= sims[frozenset({"en040-chain-b", "en040-chain-c"})]
    assert sims.get(frozenset({"en040", "en040-chain-c"}), 0) < 0.8
    by_id = {r[0]: r for r in planted["decisions"]}
    assert {by_id[i][1] for i in chain} == {"en040"}
    assert by_id["en040-chain-c"][2:] == ("en040", "near_duplicate", "rejected")


def test_rejected_rows_name_survivor_rule_and_cluster(planted):
    by_id = {r[0]: r for r in planted["decisions"]}
    assert by_id["en003-copy"][1:] == ("en003", "en003", "exact_duplicate", "rejected")
    assert by_id["zh001-copy"][1:] == ("zh001", "zh001", "exact_duplicate", "rejected")
    assert by_id["zh002-near"][1:] == ("zh002", "zh002", "near_duplicate", "rejected")
    assert by_id["en005"][1:] == ("en005", None, None, "kept")  # the survivor of en005-copy
    assert by_id["en050"][1:] == ("en050", None, None, "kept")  # a singleton is its own cluster


def test_stats_reconcile_and_report_clusters(planted):
    stats = planted["stats"]
    n = len(planted["rows"])
    assert stats["records_in"] == n and stats["reconciled"]
    assert stats["kept"] + sum(stats["rejected"].values()) == n
    assert stats["rejected"] == {"exact_duplicate": 7, "near_duplicate": 20}
    assert (stats["lsh_bands"], stats["lsh_rows"]) == (18, 7)
    assert stats["cc_rounds"] == 0  # as few verified pairs as these are clustered on the driver
    assert stats["candidate_pairs"] >= stats["verified_pairs"] >= 20
    sizes = {int(k): v for k, v in stats["cluster_size_histogram"].items()}
    assert stats["clusters"] == sum(sizes.values())
    assert sum(k * v for k, v in sizes.items()) - stats["clusters"] == 27
    # Other columns pass through.
    assert set(planted["out"].columns) >= {"id", "url", "text", "cluster_id", "survivor_id", "reject_rule"}


@pytest.mark.parametrize("partitions, broadcast_rows", [(1, 500_000), (4, 500_000), (16, 500_000), (4, 0), (4, 10)])
def test_same_result_for_any_partitioning_run_and_join(spark, planted, partitions, broadcast_rows):
    """Shuffled (broadcast_rows 0, or tables over it) or broadcast, the joins decide alike; and
    clustered on the driver or by rounds (more verified pairs than broadcast_rows), the components."""
    docs = spark.read.parquet(planted["input"]).repartition(partitions)
    cfg = config.load(overrides={"dedup": {"broadcast_rows": broadcast_rows}})
    out = transformed(DedupStage(spark, cfg), docs, ExitStack())
    assert sorted(map(tuple, out.rows.select(*DECISION).collect())) == planted["decisions"]
    assert (out.facts["cc_rounds"] >= 1) == (broadcast_rows < planted["stats"]["verified_pairs"])


# ---------------------------------------------------------------- hot buckets

@pytest.mark.parametrize("broadcast_rows", [500_000, 0], ids=["on-driver", "spark"])
def test_hot_bucket_of_identical_and_near_identical_documents(spark, tmp_path, broadcast_rows):
    paragraph = wiki_paragraphs(shared("corpora/en/enwiki-head-articles.xml"), min_words=120)[0]
    words = paragraph.split()
    rows = [(f"same{i:02d}", paragraph, float(i)) for i in range(40)]
    # 30 variants, each with one different word at a different place: all pairwise J >= 0.8.
    for i in range(30):
        variant = list(words)
        variant[3 * i + 2] = f"variant{i}"
        rows.append((f"var{i:02d}", " ".join(variant), 100.0 + i))
    rows += [(f"other{i}", p, 0.0) for i, p in
             enumerate(wiki_paragraphs(shared("corpora/en/enwiki-head-articles.xml"), min_words=120)[1:4])]
    spark.createDataFrame(rows, "id string, text string, quality_score double").write.parquet(str(tmp_path / "in"))
    # A cap of 4 rows per join key sends every bucket, exact group, candidate fan-in and cluster here through salting.
    cfg = config.load(overrides={"dedup": {"hot_key_cap": 4, "survivor_order": ["-quality_score"],
                                           "broadcast_rows": broadcast_rows}})
    stats = run_pipeline(spark, cfg, [str(tmp_path / "in")], ["dedup"], str(tmp_path / "out"), "hot",
                         echo=lambda _: None)[0]
    assert stats["kept"] == 4 and stats["reconciled"]
    assert stats["clustered_on"] == ("driver" if broadcast_rows else "spark")
    # Highest quality_score survives; the identical copies go as exact duplicates of their group.
    assert stats["rejected"] == {"exact_duplicate": 39, "near_duplicate": 30}
    rejected = spark.read.parquet(str(tmp_path / "out" / "hot" / "dedup" / "rejected"))
    assert {(r[0], r[1]) for r in rejected.select("survivor_id", "cluster_id").distinct().collect()} == \
        {("var29", "same39")}


@pytest.mark.parametrize("settings, expected", [
    ({"verify": "signature"}, {"a1-near": "near_duplicate", "a2-copy": "exact_duplicate"}),
    ({"exact": False, "verify": "none"}, {"a1-near": "near_duplicate", "a2-copy": "near_duplicate"}),
    ({"fuzzy": False}, {"a2-copy": "exact_duplicate"}),
])
@pytest.mark.parametrize("broadcast_rows", [500_000, 0], ids=["on-driver", "spark"])
def test_switches_and_verification_modes(spark, settings, expected, broadcast_rows):
    a, b = wiki_paragraphs(shared("corpora/en/enwiki-head-articles.xml"), min_words=120)[5:7]
    rng = random.Random(2)
    rows = [("a0", a), ("a1-near", edit_words(a, 0.01, rng, b.split())), ("a2-copy", a.upper()),
            ("b0", b), ("b1-far", edit_words(b, 0.3, rng, a.split())), ("c0", "A short text.")]
    cfg = config.load(overrides={"dedup": {**settings, "broadcast_rows": broadcast_rows}})
    out = transformed(DedupStage(spark, cfg), spark.createDataFrame(rows, "id string, text string"), ExitStack()).rows
    rejected = {r["id"]: (r["reject_rule"], r["survivor_id"]) for r in out.where("_outcome = 'rejected'").collect()}
    assert rejected == {i: (rule, "a0") for i, rule in expected.items()}


# ---------------------------------------------------------------- on the driver and in Spark

def mixed_corpus():
    """Real paragraphs with exact and near copies, two empty texts (no shingles), repeated ids, and a
    survivor column with nulls, NaN and ties; string ids in an order unlike their numeric one."""
    rng = random.Random(5)
    paragraphs = wiki_paragraphs(shared("corpora/en/enwiki-head-articles.xml"), min_words=80)[:30]
    vocabulary = " ".join(paragraphs).split()
    texts = []
    for i, paragraph in enumerate(paragraphs):
        texts.append(paragraph)
        if i % 3 == 0:
            texts.append(paragraph.upper())
        if i % 4 == 0:
            texts.append(edit_words(paragraph, 0.01, rng, vocabulary))
    texts += ["", " "]
    ids = [f"{'zé中'[i % 3]}{i}" for i in range(len(texts))]
    scores = [rng.choice([None, math.nan, 0.5, 0.5, 1.0, -1.0]) for _ in texts]
    rows = list(zip(ids, texts, scores))
    # The same record read twice, and another text under an id already used.
    rows += [rows[4], (rows[7][0], paragraphs[-1], 2.0)]
    return rows


@pytest.mark.parametrize("settings", [
    {},
    {"survivor_order": ["-q"]},
    {"survivor_order": ["q"], "verify": "signature"},
    {"exact": False, "verify": "none"},
    {"fuzzy": False, "survivor_order": ["-q"]},
])
def test_clustering_on_the_driver_decides_as_the_spark_steps(spark, settings):
    docs = spark.createDataFrame(mixed_corpus(), "id string, text string, q double").repartition(3)
    results = {}
    for broadcast_rows in (500_000, 0):
        cfg = config.load(overrides={"dedup": {**settings, "broadcast_rows": broadcast_rows}})
        out = transformed(DedupStage(spark, cfg), docs, ExitStack())
        facts = {k: v for k, v in out.facts.items() if k not in ("index", "clustered_on", "cc_rounds")}
        results[out.facts["clustered_on"]] = (
            sorted(map(tuple, out.rows.select(*DECISION).collect()), key=repr), facts)
    assert set(results) == {"driver", "spark"}
    assert results["driver"] == results["spark"]
    rules = {r[3] for r in results["driver"][0]}
    assert "duplicate_id" in rules and ("exact_duplicate" in rules) == settings.get("exact", True)
    assert ("near_duplicate" in rules) == settings.get("fuzzy", True)
