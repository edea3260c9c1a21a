"""The filter stage on real Spark: columns, reconciliation, reasons, rule stats and spot-check samples."""
import json
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import shared
from jobs import config
from jobs.pipeline import run_pipeline
from udfs.filter.quality import SIGNALS


def small_corpus():
    """(id, url, text, source): prose and news that pass, SMS that do not, one null text."""
    emma = shared("corpora/en/gutenberg/austen-emma.txt").read_text(encoding="utf-8")
    paragraphs = [" ".join(p.split()) for p in emma.split("\n\n") if p.strip()][300:340]
    prose = ["\n\n".join(paragraphs[i:i + 8]) for i in range(0, 40, 8)]
    news_lines = shared("corpora/zh/peoples-daily-1998-01.txt").read_text(encoding="utf-8").splitlines()
    news = ["\n".join(news_lines[i:i + 10]) for i in range(0, 50, 10)]
    sms_lines = shared("corpora/low/sms-spam-collection.tsv").read_text(encoding="utf-8").splitlines()[1:13]
    sms = [line.split("\t", 1)[1] for line in sms_lines]
    texts = prose + news + sms + [None]
    return pa.table({
        "id": [f"doc-{i:03d}" for i in range(len(texts))],
        "url": [f"https://example.org/{i}" for i in range(len(texts))],
        "text": texts,
        "source": ["test"] * len(texts),
    })


@pytest.fixture(scope="module")
def filtered(spark, tmp_path_factory):
    work = tmp_path_factory.mktemp("filter")
    pq.write_table(small_corpus(), work / "docs.parquet")
    cfg = config.load(overrides={"filter": {"samples_per_rule": 3}})
    stats = run_pipeline(spark, cfg, [str(work / "docs.parquet")], ["filter"], str(work / "out"), "r1",
                         echo=lambda line: None)
    return work, work / "out" / "r1" / "filter", stats[0]


def read(spark, folder: Path):
    return spark.read.parquet(str(folder)).toPandas()


def test_counts_reconcile_and_outcomes_are_split(filtered):
    _, _, stats = filtered
    assert stats["reconciled"] is True
    assert stats["records_in"] == 23
    assert stats["kept"] == 10  # 5 prose + 5 news documents
    assert sum(stats["rejected"].values()) == 12  # every SMS message
    assert stats["errors"] == {"text is null": 1}


def test_kept_and_rejected_rows_carry_language_signals_and_reasons(spark, filtered):
    _, stage_dir, _ = filtered
    kept, rejected = read(spark, stage_dir / "kept"), read(spark, stage_dir / "rejected")
    for frame in (kept, rejected):
        for column in ("id", "url", "text", "source", "lang", "lang_score", *SIGNALS, "failed_rules"):
            assert column in frame.columns
        assert frame["lang"].notna().all() and frame["lang_score"].between(0, 1).all()
    assert set(kept["lang"]) == {"en", "zh"}
    assert kept["reject_rule"].isna().all() and kept["failed_rules"].map(len).eq(0).all()
    assert rejected["reject_rule"].notna().all() and rejected["reject_value"].notna().all()
    short = rejected[rejected["reject_rule"] == "gopher_short_doc"]
    assert len(short) >= 10
    assert (short["reject_value"].astype(float) == short["n_words"]).all()  # the measured value of the first rule, as text
    assert rejected.apply(lambda r: r["failed_rules"][0] == r["reject_rule"], axis=1).all()


def test_rule_stats_count_first_hits_and_lone_rejections(spark, filtered):
    _, stage_dir, stats = filtered
    rules = {r["rule"]: r for r in stats["rules"]}
    assert [r["rule"] for r in stats["rules"]][0] == "gopher_short_doc"  # evaluation order
    assert sum(r["first_hit"] for r in stats["rules"]) == sum(stats["rejected"].values())
    for name, count in stats["rejected"].items():
        assert rules[name]["first_hit"] == count
    assert all(r["alone"] >= r["first_hit"] for r in stats["rules"])
    # Most SMS are also under C4's five sentences, but the word count rejects them first.
    assert rules["c4_few_sentences"]["alone"] >= 10 and rules["c4_few_sentences"]["first_hit"] == 0
    assert stats["languages"]["zh"] == 5
    # Both figures agree with the written rows, counted here without Spark.
    written = pd.concat([read(spark, stage_dir / "kept"), read(spark, stage_dir / "rejected")])
    failed = Counter(rule for rules_failed in written["failed_rules"] for rule in rules_failed)
    assert {name: r["alone"] for name, r in rules.items()} == {name: failed.get(name, 0) for name in rules}
    assert stats["languages"] == dict(Counter(written["lang"].fillna("-")))


def test_rejected_samples_are_written_per_rule_and_repeat_across_runs(spark, filtered):
    work, stage_dir, stats = filtered
    assert set(stats["samples"]) == set(stats["rejected"])
    first = {}
    for rule, relative in stats["samples"].items():
        records = [json.loads(line) for line in (stage_dir / relative).read_text().splitlines()]
        assert 1 <= len(records) <= 3
        assert all(r["reject_rule"] == rule and r["text"] and r["lang"] for r in records)
        first[rule] = [r["id"] for r in records]
    cfg = config.load(overrides={"filter": {"samples_per_rule": 3}})
    again = run_pipeline(spark, cfg, [str(work / "docs.parquet")], ["filter"], str(work / "out"), "r2",
                         echo=lambda line: None)[0]
    second_dir = work / "out" / "r2" / "filter"
    second = {rule: [json.loads(line)["id"] for line in (second_dir / relative).read_text().splitlines()]
              for rule, relative in again["samples"].items()}
    assert second == first


def test_report_shows_the_first_documents_of_the_sample_files(spark, filtered, tmp_path):
    """The report reads filter's spot-check files (scrubbed when written) instead of scrubbing again:
    a copy of the run whose files were edited shows the edit."""
    import shutil

    from jobs.fs import HadoopFS
    from jobs.report import EXCERPT_CHARS, SAMPLES_PER_REASON, RunFacts
    from udfs.pii.scrub import PiiConfig

    _, stage_dir, stats = filtered
    raw = {r["id"]: r["text"] for r in read(spark, stage_dir / "rejected").to_dict("records")}
    run_dir = tmp_path / "run"
    shutil.copytree(stage_dir, run_dir / "filter")
    expected = []
    for rule in sorted(stats["samples"]):
        path = run_dir / "filter" / stats["samples"][rule]
        records = [json.loads(line) for line in path.read_text().splitlines()]
        assert all(r["chars"] == len(raw[r["id"]]) for r in records)
        records[0]["text"] = f"edited sample of {rule}"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        path.with_name(f".{path.name}.crc").unlink(missing_ok=True)  # Hadoop's checksum of the old text
        expected += [(rule, r["id"], r["text"][:EXCERPT_CHARS], r["chars"]) for r in records[:SAMPLES_PER_REASON]]
    facts = RunFacts.collect(spark, HadoopFS(spark), str(run_dir), PiiConfig())
    shown = [(s["reason"], s["id"], s["text"], s["chars"]) for s in facts.samples["filter"]]
    assert shown == expected and len(shown) >= len(stats["samples"])


def test_report_length_histogram_reads_n_chars_and_equals_the_texts_lengths(spark, filtered):
    from pyspark.sql import functions as F

    from jobs.fs import HadoopFS
    from jobs.report import RunFacts, length_histogram
    from udfs.pii.scrub import PiiConfig

    _, stage_dir, _ = filtered
    kept = spark.read.parquet(str(stage_dir / "kept"))
    assert kept.where(F.col("n_chars") != F.length("text")).count() == 0
    facts = RunFacts.collect(spark, HadoopFS(spark), str(stage_dir.parent), PiiConfig())
    assert facts.length_stage == "filter"
    assert facts.length_histogram == length_histogram(kept) and sum(n for _, n in facts.length_histogram) == 10


def test_the_filter_rows_cached_for_the_write_and_the_samples_are_released_after_them(spark, filtered):
    """The samples are picked from the cached rows while the runner writes them: the cache outlives
    the write until the samples are done, then goes (a run over many stages must not pile them up)."""
    work, _, _ = filtered
    # Other rows than the fixture's run: Spark caches a plan it has cached already only once.
    pq.write_table(small_corpus().slice(1), work / "fewer.parquet")
    cached_before = spark.sparkContext._jsc.getPersistentRDDs().size()
    cfg = config.load(overrides={"filter": {"samples_per_rule": 3}})
    stats = run_pipeline(spark, cfg, [str(work / "fewer.parquet")], ["filter"], str(work / "out"), "released",
                         echo=lambda line: None)
    assert stats[0]["samples"]  # the samples were written from the cache
    deadline = time.time() + 30  # released by the samples' thread once its future is done
    while spark.sparkContext._jsc.getPersistentRDDs().size() > cached_before and time.time() < deadline:
        time.sleep(0.1)
    assert spark.sparkContext._jsc.getPersistentRDDs().size() == cached_before


def test_language_outcomes_give_each_language_s_kept_share_confidence_and_top_rules(spark, filtered):
    _, stage_dir, stats = filtered
    written = pd.concat([read(spark, stage_dir / "kept"), read(spark, stage_dir / "rejected")])
    assert written["lang_confident"].dtype == bool
    outcomes = stats["language_outcomes"]
    for lang, rows in written.groupby(written["lang"].fillna("-")):
        assert outcomes[lang]["documents"] == len(rows)
        assert outcomes[lang]["kept"] == int(rows["reject_rule"].isna().sum())
        assert outcomes[lang]["confident"] == int(rows["lang_confident"].sum())
        top = Counter(rows["reject_rule"].dropna()).most_common(3)
        assert sorted(outcomes[lang]["rejected_by"].values(), reverse=True) == [n for _, n in top]
    assert stats["not_confident"] == int((~written["lang_confident"]).sum())
    assert outcomes["zh"] == {"documents": 5, "kept": 5, "confident": 5, "rejected_by": {}}
