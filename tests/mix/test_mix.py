"""mix: domain rules, the mixture plan, deterministic sampling with repeats, and the stage on real text."""
import json

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import ROOT
from corpusmill.config import ConfigError
from jobs import config
from jobs.buckets import one_task_per_bucket
from jobs.config import PipelineConfig
from jobs.runner import run_stage
from jobs.stages.mix import DOWNSAMPLED, MixStage
from tools.fixtures.corpus_docs import all_domains, news_articles, wiki_articles
from udfs.mix.mixture import (DomainConfig, DomainRules, MixConfig, copies_of, effective_tokens, estimate_tokens,
                              plan_mixture)
from udfs.pack.tokenizer import TokenizerConfig, cached_tokenizer


def default_mix() -> MixConfig:
    return config.build(PipelineConfig, yaml.safe_load((ROOT / "conf" / "mix.yaml").read_text())).mix


@pytest.mark.parametrize("url,host,source,domain", [
    ("https://en.wikipedia.org/wiki/Tea", None, None, "wiki"),
    ("https://zh.m.wikipedia.org/wiki/茶", None, None, "wiki"),
    ("https://notwikipedia.org/x", None, None, "web"),                    # a suffix, not a subdomain
    ("https://github.com/apache/spark", None, None, "code"),
    ("https://example.org/src/main.py", None, None, "code"),            # URL pattern
    ("https://www.bbc.co.uk/news/world-1", None, None, "news"),
    ("https://blog.example.com/news/2024/x", None, None, "news"),       # path rule
    ("https://example.com/forum/thread-9", None, None, "forum"),
    ("https://archive.org/details/mobydick", None, None, "books"),
    ("https://example.com/a", None, "s3a://bucket/books/part-0.warc.gz", "books"),  # source rule
    ("http://commoncrawl.org/", "commoncrawl.org", None, "web"),
    ("", None, None, "web"),
])
def test_default_rules_label_domains(url, host, source, domain):
    assert DomainRules(default_mix()).label(url, host, source) == domain


def test_first_matching_domain_in_config_order_wins():
    both = {"hosts": ["example.com"]}
    first = MixConfig(domains={"a": DomainConfig(weight=1, **both), "b": DomainConfig(weight=1, **both),
                               "web": DomainConfig(weight=1)})
    assert DomainRules(first).label("https://www.example.com/") == "a"


@pytest.mark.parametrize("section,message", [
    ({"default_domain": "other"}, "mix.default_domain"),
    ({"domains": {"web": {"weight": -1}}}, "mix.domains.web.weight"),
    ({"domains": {"web": {"weight": 1, "max_epochs": 0}}}, "mix.domains.web.max_epochs"),
    ({"domains": {"web": {"weight": 1, "url_patterns": ["("]}}}, "mix.domains.web.url_patterns[0]"),
    ({"domains": {"web": {"wieght": 1}}}, "mix.domains.web.wieght: unknown key"),
])
def test_bad_mix_config_is_a_one_line_error(section, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        config.build(PipelineConfig, {"mix": section})


def test_plan_caps_at_max_epochs_and_renormalises_the_rest():
    cfg = MixConfig(domains={"web": DomainConfig(weight=0.5, max_epochs=1), "wiki": DomainConfig(weight=0.25, max_epochs=4),
                             "code": DomainConfig(weight=0.25, max_epochs=3), "books": DomainConfig(weight=0.1)})
    plan = plan_mixture({"web": 900, "wiki": 10, "code": 90}, {"web": 9, "wiki": 1, "code": 3}, cfg)
    # wiki wants 25 epochs -> 4; code then wants 3.56 -> 3; web takes the remaining 690 tokens.
    assert plan["wiki"].epochs == 4 and plan["wiki"].capped
    assert plan["code"].epochs == 3 and plan["code"].capped
    assert plan["web"].epochs == pytest.approx(690 / 900) and not plan["web"].capped
    assert plan["books"].epochs == 0 and plan["books"].capped          # no data at all
    assert sum(p.planned_tokens for p in plan.values()) == pytest.approx(1000)
    assert plan["web"].target_weight == pytest.approx(0.5 / 1.1)


def test_plan_reaches_the_targets_when_no_domain_runs_short():
    cfg = MixConfig(total_tokens=400, domains={"web": DomainConfig(weight=0.6), "news": DomainConfig(weight=0.4, max_epochs=2)})
    plan = plan_mixture({"web": 1000, "news": 100}, {"web": 10, "news": 5}, cfg)
    assert plan["web"].planned_tokens == pytest.approx(240) and plan["news"].planned_tokens == pytest.approx(160)
    assert plan["news"].epochs == pytest.approx(1.6) and not plan["news"].capped


def test_copies_are_reproducible_and_average_to_the_planned_epochs():
    keys = [f"doc-{i}" for i in range(20000)]
    for epochs in (0.3, 1.0, 2.25):
        copies = [copies_of(k, epochs, seed=0) for k in keys]
        assert copies == [copies_of(k, epochs, seed=0) for k in keys]
        assert set(copies) <= {int(epochs), int(epochs) + 1}
        assert np.mean(copies) == pytest.approx(epochs, abs=0.02)
    assert [copies_of(k, 0.5, 0) for k in keys[:200]] != [copies_of(k, 0.5, 1) for k in keys[:200]]


def test_token_estimate_tracks_cl100k_on_real_english_and_chinese():
    tokenizer = cached_tokenizer(TokenizerConfig())
    for docs in (wiki_articles(limit=40), news_articles(limit=60)):
        texts = [d["text"] for d in docs]
        exact = sum(len(ids) for ids in tokenizer.encode_batch(texts))
        estimate = sum(estimate_tokens(t) for t in texts)
        assert abs(estimate / exact - 1) < 0.15, (estimate, exact)


def test_effective_tokens_discount_repeats():
    assert effective_tokens(1000, 1000) == 1000
    assert 1900 < effective_tokens(1000, 2000) < 2000            # a second epoch is worth almost as much
    assert effective_tokens(1000, 100_000) < 17_000               # many repeats saturate near (1 + 15.4) x
    assert effective_tokens(0, 0) == 0


# The stage on real documents of five domains. wiki is capped below its target (max 0.5 epochs), the
# others share the rest of a 600k-token budget by weight; forum needs 1.33 epochs, so it repeats.
MIX = {"buckets": 4, "total_tokens": 600_000, "seed": 0, "default_domain": "web", "domains": {
    "wiki": {"weight": 0.15, "max_epochs": 0.5, "hosts": ["wikipedia.org"]},
    "books": {"weight": 0.25, "max_epochs": 2, "hosts": ["gutenberg.org"]},
    "news": {"weight": 0.20, "max_epochs": 2, "hosts": ["people.com.cn"]},
    "forum": {"weight": 0.05, "max_epochs": 4, "hosts": ["reddit.com"]},
    "web": {"weight": 0.35, "max_epochs": 1}}}


@pytest.fixture(scope="module")
def docs(spark):
    rows = pd.DataFrame(all_domains()).drop(columns="expected")
    return spark.createDataFrame(rows)


def run_mix(spark, docs, stage_dir, overrides=MIX):
    cfg = config.build(PipelineConfig, {"mix": overrides})
    return run_stage(MixStage(spark, cfg), docs, str(stage_dir), "test", docs.count())


@pytest.fixture(scope="module")
def mixed(spark, docs, tmp_path_factory):
    stage_dir = tmp_path_factory.mktemp("mix") / "mix"
    return stage_dir, run_mix(spark, docs, stage_dir)


def test_achieved_mixture_is_within_tolerance_of_the_plan(mixed):
    _, stats = mixed
    domains = stats["domains"]
    assert domains["wiki"]["capped"] and domains["wiki"]["planned_epochs"] == 0.5
    planned = {d: s["planned_epochs"] * s["available_tokens"] for d, s in domains.items()}
    total = sum(planned.values())
    assert total == pytest.approx(600_000, rel=1e-6)
    for name, s in domains.items():
        assert s["achieved_weight"] == pytest.approx(planned[name] / total, abs=0.02), name
    # Uncapped domains keep the target ratios among themselves.
    assert planned["books"] / planned["news"] == pytest.approx(0.25 / 0.20)
    assert planned["web"] / planned["forum"] == pytest.approx(0.35 / 0.05)
    assert stats["mixture"]["target"]["books"] == pytest.approx(0.25)


def test_counts_reconcile_per_document_and_repeats_are_counted_apart(spark, mixed, docs):
    stage_dir, stats = mixed
    assert stats["reconciled"] and stats["records_in"] == docs.count()
    assert stats["records_in"] == stats["kept"] + stats["rejected"][DOWNSAMPLED]
    kept = spark.read.parquet(str(stage_dir / "kept"))
    assert kept.count() == stats["rows_written"] == stats["kept"] + stats["repeat_rows"]
    assert stats["repeat_rows"] > 0 and stats["domains"]["forum"]["rows_out"] > stats["domains"]["forum"]["docs_out"]
    assert kept.select("sample_id").distinct().count() == kept.count()
    assert kept.where("epoch = 0").select("id").distinct().count() == stats["kept"]
    repeats = kept.where("epoch > 0").collect()
    assert all(r["sample_id"] == f"{r['id']}#{r['epoch']}" for r in repeats)
    rejected = spark.read.parquet(str(stage_dir / "rejected"))
    assert rejected.where("text is not null").count() == 0
    assert {r["reject_rule"] for r in rejected.select("reject_rule").distinct().collect()} == {DOWNSAMPLED}


def test_output_is_bucketed_and_effective_tokens_reported(spark, mixed):
    stage_dir, stats = mixed
    assert sorted(p.name for p in (stage_dir / "kept").iterdir() if p.is_dir()) == [f"bucket={b}" for b in range(4)]
    forum = stats["domains"]["forum"]
    assert forum["unique_tokens"] < forum["effective_tokens"] < forum["tokens_out"]
    assert json.loads((stage_dir / "_stats.json").read_text())["effective_tokens"] == stats["effective_tokens"]


def test_rerun_draws_the_identical_sample(spark, docs, mixed, tmp_path):
    stage_dir, stats = mixed
    again = run_mix(spark, docs, tmp_path / "mix")
    assert again["domains"] == stats["domains"]

    def rows(path):
        return sorted((r["sample_id"], r["bucket"]) for r in spark.read.parquet(str(path)).select("sample_id", "bucket").collect())

    assert rows(tmp_path / "mix" / "kept") == rows(stage_dir / "kept")
    reseeded = run_mix(spark, docs, tmp_path / "reseeded", {**MIX, "seed": 7})
    assert rows(tmp_path / "reseeded" / "kept") != rows(stage_dir / "kept")
    assert reseeded["kept"] == pytest.approx(stats["kept"], rel=0.1)


def test_copies_of_a_document_take_distinct_buckets(spark, mixed):
    stage_dir, _ = mixed
    buckets_of = {}
    for row in spark.read.parquet(str(stage_dir / "kept")).select("id", "bucket").collect():
        buckets_of.setdefault(row["id"], []).append(row["bucket"])
    repeated = [found for found in buckets_of.values() if 1 < len(found) <= MIX["buckets"]]
    assert len(repeated) >= 5
    assert all(len(set(found)) == len(found) for found in repeated)


@pytest.mark.parametrize("buckets", [1, 8, 64])
def test_each_bucket_is_one_whole_partition(spark, buckets):
    """Partition k holds bucket k and nothing else, where a plain repartition by the bucket number
    leaves partitions empty and gives others several buckets."""
    from pyspark.sql import functions as F

    rows = spark.range(50 * buckets).select((F.col("id") % buckets).cast("int").alias("bucket"), "id")
    placed = (one_task_per_bucket(rows, "bucket", buckets)
              .select("bucket", F.spark_partition_id().alias("partition")).distinct().collect())
    assert sorted((r["partition"], r["bucket"]) for r in placed) == [(b, b) for b in range(buckets)]
