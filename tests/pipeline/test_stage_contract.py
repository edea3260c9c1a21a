"""The stage contract without running Spark: what a stage may read of the config, and its fingerprint.

A stage sees only the config paths it declares (``Stage.config_paths``); the fingerprint hashes
exactly those. So a changed setting that a stage reads, of its own section or another, always
changes its fingerprint and re-runs it (tests/pipeline/test_pipeline.py shows the re-run on real Spark).
"""
import dataclasses
import shutil
from functools import reduce

import pytest

from jobs import config, registry
from jobs.pipeline import stage_fingerprint
from jobs.stage import ConfigView
from scoring_service.model.artifacts import DEFAULT_MODEL_DIR

CHANGED = "<changed>"  # no setting has this value, whatever its type


def replaced(obj, path, value):
    """``obj`` (a frozen dataclass) with the setting at dotted ``path`` set to ``value``."""
    head, _, rest = path.partition(".")
    inner = replaced(getattr(obj, head), rest, value) if rest else value
    return dataclasses.replace(obj, **{head: inner})


def settings_read(stage_cls, cfg):
    """Every single setting a stage reads: each declared path, one level into a declared section."""
    for path in stage_cls.config_paths():
        value = reduce(getattr, path.split("."), cfg)
        if dataclasses.is_dataclass(value):
            yield from (f"{path}.{f.name}" for f in dataclasses.fields(value))
        else:
            yield path


# Settings naming finished stages of earlier runs: the stage reads those when it is fingerprinted
# (see the test after the next).
EARLIER_STAGES = ("dedup.against", "mindrecord.earlier")
# Settings naming files the stage hashes when it is fingerprinted: a changed value must name real
# ones (tests/decontam/test_decontam.py and tests/extract/test_url_filter.py change the files).
FILES_HASHED = ("decontam.benchmarks", "extract.url_filter")
CASES = [(name, path) for name in registry.stage_order()
         for path in settings_read(registry.stage_class(name), config.PipelineConfig())
         if path not in EARLIER_STAGES + FILES_HASHED]


@pytest.mark.parametrize("stage, path", CASES, ids=[f"{s}:{p}" for s, p in CASES])
def test_changing_any_setting_a_stage_reads_changes_its_fingerprint(stage, path, tmp_path):
    cfg = config.PipelineConfig()
    stage_cls = registry.stage_class(stage)
    before = stage_fingerprint(stage_cls(None, cfg), "upstream")
    # The score stage hashes the model it serves: another model must be a real one.
    value = shutil.copytree(DEFAULT_MODEL_DIR, tmp_path / "model") if path == "score.model" else CHANGED
    changed = replaced(cfg, path, str(value))
    assert stage_fingerprint(stage_cls(None, changed), "upstream") != before


@pytest.mark.parametrize("path", EARLIER_STAGES)
def test_a_setting_naming_earlier_stages_is_checked_when_the_stage_is_fingerprinted(spark, path, tmp_path):
    stage, _, key = path.partition(".")
    cfg = replaced(config.PipelineConfig(), path, [str(tmp_path / "no-such-run")])
    with pytest.raises(config.ConfigError, match=f"{stage}.{key}"):
        stage_fingerprint(registry.stage_class(stage)(spark, cfg), "upstream")


def test_the_stages_that_read_other_sections_declare_them():
    assert "mix.buckets" in registry.stage_class("pack").config_paths()
    assert {"mix.buckets", "pack.seq_len"} <= set(registry.stage_class("mindrecord").config_paths())
    assert any(path.startswith("mix.") for stage, path in CASES if stage == "pack")


def test_a_setting_a_stage_does_not_read_leaves_its_fingerprint_alone():
    cfg = config.PipelineConfig()
    pii = registry.stage_class("pii")
    other = replaced(cfg, "mix.buckets", 99)
    assert stage_fingerprint(pii(None, other), "up") == stage_fingerprint(pii(None, cfg), "up")
    assert stage_fingerprint(pii(None, cfg), "other upstream") != stage_fingerprint(pii(None, cfg), "up")


def test_reading_an_undeclared_setting_is_an_error_naming_it():
    cfg = config.PipelineConfig()
    view = ConfigView(cfg, ["pack", "mix.buckets", "io.parquet_compression"])
    assert view.pack is cfg.pack and view.mix.buckets == cfg.mix.buckets
    with pytest.raises(AttributeError, match=r"config mix\.seed is read but not declared"):
        view.mix.seed
    with pytest.raises(AttributeError, match=r"config filter is read but not declared"):
        view.filter
