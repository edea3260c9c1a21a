"""A stage declares itself once: the registry finds it, the config, the pipeline order and the
console are built from its declaration, and a stage added outside ``jobs/stages/`` (here: a toy
stage in this test module) runs end to end like the shipped ones."""
import dataclasses
import json
import pkgutil
from dataclasses import dataclass

import pytest

from conftest import ROOT
from corpusmill.config import ConfigError
from jobs import config, registry
from jobs.pipeline import plan_stages, run_pipeline
from jobs.runner import run_stage
from jobs.stage import TEXT_TOO_LONG, Stage, Transformed

SAMPLE = str(ROOT / "data" / "sample")


def test_every_shipped_stage_is_found_in_its_declared_order():
    stages = registry.stages()
    shipped = sorted(info.name for info in pkgutil.iter_modules([str(ROOT / "jobs" / "stages")]))
    assert sorted(cls.name for cls in stages) == shipped
    assert [cls.order for cls in stages] == sorted({cls.order for cls in stages})
    for cls in stages:
        assert cls.__module__ == f"jobs.stages.{cls.name}"
        assert dataclasses.is_dataclass(cls.config), cls.name
        assert (ROOT / "conf" / f"{cls.name}.yaml").exists(), cls.name
        assert (ROOT / "udfs" / cls.name / "__init__.py").exists(), cls.name


def test_the_config_has_one_section_per_declared_stage():
    sections = [f.name for f in dataclasses.fields(config.PipelineConfig)]
    assert sections == ["output", "run", "spark", "io", "lease", *registry.stage_order()]
    for cls in registry.stages():
        assert isinstance(getattr(config.load(), cls.name), cls.config)


def test_a_declaration_that_misses_a_part_is_refused():
    class NoConfig(Stage):
        name, order = "incomplete", 5

    with pytest.raises(TypeError, match="does not declare config"):
        registry.register(NoConfig)

    class ChunkedCounter(Stage):
        name, config, order, chunked, counts_its_input = "chunked-counter", ToyConfig, 5, True, True

    with pytest.raises(TypeError, match="input is counted chunk by chunk"):
        registry.register(ChunkedCounter)

    class SameOrder(Stage):
        name, config, order = "clash", ToyConfig, 20  # filter's

    registry.register(SameOrder)
    try:
        with pytest.raises(TypeError, match="same order 20"):
            registry.stages()
    finally:
        registry.unregister("clash")


# ---------------------------------------------------------------- a toy stage, end to end

@dataclass(frozen=True)
class ToyConfig:
    # Documents with fewer characters are rejected.
    min_chars: int = 200

    def validate(self, prefix: str) -> None:
        if self.min_chars < 0:
            raise ConfigError(f"{prefix}.min_chars: must be >= 0")


class ToyStage(Stage):
    """Rejects short documents, measuring their length."""
    name = "toy"
    config = ToyConfig
    order = 15  # between extract and filter
    required_columns = ("text",)

    def transform(self, docs, resources):
        from pyspark.sql import functions as F

        short = F.length("text") < self.settings.min_chars
        rows = (docs.withColumn("_outcome", F.when(short, "rejected").otherwise("kept"))
                .withColumn("reject_rule", F.when(short, F.lit("too_short")))
                .withColumn("reject_value", F.when(short, F.length("text"))))  # a number: written as text
        return Transformed(rows)


@pytest.fixture
def toy():
    registry.register(ToyStage)
    try:
        yield ToyStage
    finally:
        registry.unregister(ToyStage.name)


def test_a_toy_stage_declared_in_a_test_module_runs_end_to_end(spark, toy, tmp_path):
    assert registry.stage_order()[:3] == ["extract", "toy", "filter"]
    with pytest.raises(ConfigError, match="toy.min_chars"):
        config.load(overrides={"toy": {"min_chars": -1}})
    cfg = config.load(overrides={"toy": {"min_chars": 1500}})
    assert cfg.toy == ToyConfig(min_chars=1500)

    lines = []
    stats = run_pipeline(spark, cfg, [SAMPLE], plan_stages(["toy", "extract"]), str(tmp_path), "toy",
                         echo=lines.append)
    extract, toy_stats = stats
    assert toy_stats["stage"] == "toy" and toy_stats["reconciled"] is True
    assert toy_stats["records_in"] == extract["kept"]
    rejected = toy_stats["rejected"].get("too_short", 0)
    assert 0 < rejected < toy_stats["records_in"] and toy_stats["kept"] == toy_stats["records_in"] - rejected
    assert lines[2].strip() == f"toy: reads file:{tmp_path}/toy/extract/kept"  # each stage says what it reads
    assert lines[3].strip().startswith("toy:") and "too_short" in lines[3]

    run_dir = tmp_path / "toy" / "toy"
    assert json.loads((run_dir / "_stats.json").read_text()) == toy_stats
    short = spark.read.parquet(str(run_dir / "rejected"))
    assert dict(short.dtypes)["reject_value"] == "string"  # the declared bookkeeping type
    lengths = [int(r["reject_value"]) for r in short.select("reject_value").collect()]
    assert len(lengths) == rejected and max(lengths) < 1500
    assert spark.read.parquet(str(run_dir / "kept")).where("reject_rule is not null").count() == 0

    # The stage alone on its own output's input, from the run folder: the stage before it (extract).
    again = run_pipeline(spark, cfg, [], ["toy"], str(tmp_path), "toy", echo=lines.append)[0]
    assert again["fingerprint"] == toy_stats["fingerprint"] and "skipped" in lines[-1]


def test_the_runner_makes_over_long_texts_errors_for_a_stage_that_does_nothing_about_them(spark, toy, tmp_path):
    """The toy stage has no code for texts over io.max_text_chars: the runner holds them back at its door
    (no Python worker sees them) and writes them as errors/ rows."""
    cfg = config.load(overrides={"toy": {"min_chars": 10}, "io": {"max_text_chars": 100}})
    docs = spark.createDataFrame([("a", "u", "x" * 50), ("b", "u", "y" * 101), ("c", "u", "short")],
                                 "id string, url string, text string")
    stats = run_stage(ToyStage(spark, cfg), docs, str(tmp_path / "toy"), "fp", records_in=3)
    assert stats["kept"] == 1 and stats["errors"] == {TEXT_TOO_LONG: 1} and stats["rejected"] == {"too_short": 1}
    [error] = spark.read.parquet(str(tmp_path / "toy" / "errors")).collect()
    assert error["id"] == "b" and error["text"] is None and error["reject_value"] == "101"


class DropsTheMark(ToyStage):
    def transform(self, docs, resources):
        return super().transform(docs.select("id", "url", "text"), resources)


def test_a_transform_that_loses_the_hold_back_column_is_refused(spark, toy, tmp_path):
    cfg = config.load(overrides={"toy": {"min_chars": 10}})
    docs = spark.createDataFrame([("a", "u", "x" * 50)], "id string, url string, text string")
    with pytest.raises(TypeError, match="dropped the _text_over_limit column"):
        run_stage(DropsTheMark(spark, cfg), docs, str(tmp_path / "drops"), "fp", records_in=1)
