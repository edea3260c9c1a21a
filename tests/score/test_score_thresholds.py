"""The score stage's keep/reject line: per-language thresholds from the config and the model, and
the report's histograms per language."""
import json
import shutil

import pytest

from corpusmill.config import ConfigError, build
from jobs.config import PipelineConfig
from jobs.report import RunFacts, render
from jobs.runner import run_stage
from jobs.stages.score import ScoreStage, score_histograms, scores_by_outcome
from scoring_service.model.artifacts import DEFAULT_MODEL_DIR, MODEL_JSON
from udfs.score.scoring import ScoreConfig, model_card


def score_settings(**score) -> ScoreConfig:
    return build(PipelineConfig, {"score": score}).score


@pytest.mark.parametrize("by_language, message", [
    ({"zh": float("nan")}, r"score.threshold_by_language.zh: must be (within \[0, 1\]|a finite number), got nan"),
    ({"zh": 1.5}, r"score.threshold_by_language.zh: must be within \[0, 1\], got 1.5"),
    ({"zh": -0.1}, r"score.threshold_by_language.zh: must be within \[0, 1\]"),
    ({"zh": True}, "score.threshold_by_language.zh: expected float, got bool"),
    ({"zh": "high"}, "score.threshold_by_language.zh: expected float, got str"),
    ({1: 0.5, "zh": 0.4}, "score.threshold_by_language: keys must be language codes, got 1"),
    (["zh", 0.5], "score.threshold_by_language: expected a mapping, got list"),
])
def test_per_language_thresholds_are_validated_on_load(by_language, message):
    with pytest.raises(ConfigError, match=message):
        score_settings(threshold_by_language=by_language)


def test_the_default_is_no_per_language_threshold_and_settings_stay_hashable():
    assert score_settings().threshold_by_language == ()
    settings = score_settings(threshold_by_language={"zh": 0.6, "en": 1})
    assert settings.threshold_by_language == (("en", 1.0), ("zh", 0.6)) and hash(settings)


def test_config_language_then_config_threshold_then_model_language_then_model_threshold():
    model = {"threshold": 0.5, "threshold_by_language": {"zh": 0.3, "fr": 0.2}}
    # A user's own threshold replaces the model's per-language ones; their per-language ones come first.
    chosen = score_settings(threshold=0.7, threshold_by_language={"zh": 0.9}).thresholds(model)
    assert [chosen.for_language(lang) for lang in ("zh", "fr", "de", None)] == [0.9, 0.7, 0.7, 0.7]
    from_model = score_settings().thresholds(model)
    assert [from_model.for_language(lang) for lang in ("zh", "fr", "de")] == [0.3, 0.2, 0.5]
    # A model.json written before per-language thresholds has none: one threshold for all.
    old = score_settings(threshold_by_language={"zh": 0.9}).thresholds({"threshold": 0.52})
    assert old.for_language("zh") == 0.9 and old.for_language("en") == 0.52
    shipped = model_card(DEFAULT_MODEL_DIR)
    assert score_settings().thresholds(shipped).default == shipped["threshold"]


@pytest.mark.parametrize("value", [2, float("nan"), "0.5", None])
def test_a_model_with_a_bad_per_language_threshold_is_refused_clearly(value):
    with pytest.raises(ConfigError, match=r"the model's threshold_by_language.zh: must be within \[0, 1\]"):
        score_settings().thresholds({"threshold": 0.5, "threshold_by_language": {"zh": value}})


def per_language_facts():
    def bins(kept_from):
        return [(f"{b / 20:.2f}", (5, 0) if b >= kept_from else (0, 2)) for b in range(20)]
    stats = {"score": {"stage": "score", "records_in": 300, "kept": 200, "rejected": {"quality_score": 100},
                       "wall_s": 3.0, "threshold": 0.5, "threshold_by_language": {"zh": 0.75}}}
    facts = RunFacts("file:/runs/r", stats)
    facts.stage_facts = {"score": {"histogram": bins(10),
                                   "languages": [("en", 200, bins(10)), ("zh", 100, bins(15))]}}
    return facts


def test_report_draws_a_histogram_per_language_with_its_threshold():
    html = render(per_language_facts())
    assert "kept and rejected by the threshold 0.5 (zh: their own)" in html
    assert "Quality score per language (the 2 with the most documents)" in html
    assert "quality score histogram, en" in html and "quality score histogram, zh" in html
    assert "en: 200 documents" in html and "zh: 100 documents" in html
    # The overall chart and en carry the default threshold, zh its own.
    assert html.count("threshold 0.5</text>") == 2 and html.count("threshold 0.75</text>") == 1


def test_a_run_without_languages_draws_no_per_language_charts():
    facts = per_language_facts()
    facts.stage_facts["score"]["languages"] = []
    html = render(facts)
    assert "Quality score: kept and rejected" in html and "per language" not in html


def test_the_stage_keeps_by_each_language_threshold_and_the_report_counts_per_language(spark, tmp_path):
    """Scored rows (as a re-threshold reads them) with the filter's ``lang``: zh has its own threshold in
    the config, fr in the model's model.json, the rest the model's threshold; no service is needed."""
    model_dir = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, model_dir)
    card = json.loads((model_dir / MODEL_JSON).read_text())
    card.update(threshold=0.5, threshold_by_language={"fr": 0.2, "zh": 0.1})
    (model_dir / MODEL_JSON).write_text(json.dumps(card))
    scores = [0.05, 0.15, 0.3, 0.6, 0.85]
    rows = [(f"{lang}-{i}", f"https://example.org/{lang}/{i}", f"text {i}", lang, score)
            for lang in ("en", "fr", "zh", None) for i, score in enumerate(scores)]
    docs = spark.createDataFrame(rows, "id string, url string, text string, lang string, quality_score float")
    cfg = build(PipelineConfig, {"score": {"model": str(model_dir), "threshold_by_language": {"zh": 0.8}},
                                 "io": {"parquet_compression": "snappy"}})
    stage_dir = tmp_path / "score"
    stats = run_stage(ScoreStage(spark, cfg), docs, str(stage_dir), "fp", len(rows))
    assert stats["reconciled"] and stats["threshold"] == 0.5
    assert stats["threshold_by_language"] == {"fr": 0.2, "zh": 0.8}
    kept = spark.read.parquet(str(stage_dir / "kept"))
    rejected = spark.read.parquet(str(stage_dir / "rejected"))
    kept_ids = {r["id"] for r in kept.collect()}
    assert kept_ids == {"en-3", "en-4", "fr-2", "fr-3", "fr-4", "zh-4", "None-3", "None-4"}
    assert {r["reject_rule"] for r in rejected.collect()} == {"quality_score"}

    facts = score_histograms(scores_by_outcome(kept, rejected), top=2)
    assert sum(k + r for _, (k, r) in facts["histogram"]) == len(rows)
    assert [(lang, documents) for lang, documents, _ in facts["languages"]] == [("en", 5), ("fr", 5)]
    zh = dict(score_histograms(scores_by_outcome(kept, rejected), top=3)["languages"][2][2])
    assert zh["0.85"] == (1, 0) and zh["0.30"] == (0, 1)
