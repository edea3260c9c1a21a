"""Config loading: includes, validation errors as one line naming the key, one source of defaults."""
import dataclasses

import pytest

from jobs import config
from jobs.cli import main
from udfs.common.config import ConfigError


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_default_config_loads_with_embedded_local_defaults():
    cfg = config.load()
    assert cfg.spark.master == "local[*]"
    assert cfg.extract.extractor == "resiliparse"
    assert cfg.io.parquet_compression == "zstd"


def test_include_is_merged_and_overridden(tmp_path):
    write(tmp_path, "base.yaml", "mix: {buckets: 3}\nrun: base\n")
    path = write(tmp_path, "top.yaml", "include: [base.yaml]\nrun: top\n")
    cfg = config.load(path)
    assert (cfg.mix.buckets, cfg.run) == (3, "top")


def test_yarn_config_extends_local():
    cfg = config.load(config.CONF_DIR / "yarn.yaml")
    assert cfg.spark.master == "yarn"
    assert cfg.extract.extractor == "resiliparse"


@pytest.mark.parametrize("text, message", [
    ("mix: {bukets: 3}\n", "mix.bukets: unknown key"),
    ("mix: {buckets: three}\n", "mix.buckets: expected int, got str 'three'"),
    ("mix: {buckets: 0}\n", "mix.buckets: must be at least 1"),
    ("extract: {extractor: lynx}\n", "extract.extractor: must be one of"),
    ("extract: [1, 2]\n", "extract: expected a mapping"),
    ("include: [missing.yaml]\n", "file not found"),
    ("mix: {buckets: [\n", "not valid YAML"),
])
def test_invalid_config_is_one_line_naming_the_key(tmp_path, text, message):
    with pytest.raises(ConfigError) as err:
        config.load(write(tmp_path, "bad.yaml", text))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_cli_reports_config_error_in_one_line_and_exit_code_2(tmp_path, capsys):
    path = write(tmp_path, "bad.yaml", "spark: {mastr: local}\n")
    assert main(["run", "--config", str(path), "--input", "x.warc"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "corpusmill: spark.mastr: unknown key (allowed: app_name, class_archive_dir, conf, master)"


def test_cli_rejects_unknown_stage(capsys):
    assert main(["run", "--stages", "extract,polish"]) == 2
    assert "unknown stage 'polish'" in capsys.readouterr().err


# ---------------------------------------------------------------- one source of defaults

SECTIONS = [f.name for f in dataclasses.fields(config.PipelineConfig)]


@pytest.mark.parametrize("section", SECTIONS)
def test_shipped_yaml_and_dataclass_defaults_agree(section):
    """``PipelineConfig()`` (a notebook, a test) behaves exactly as the CLI's conf/local.yaml."""
    assert getattr(config.load(), section) == getattr(config.PipelineConfig(), section)


@pytest.mark.parametrize("section", [s for s in SECTIONS if dataclasses.is_dataclass(getattr(config.PipelineConfig(), s))])
def test_the_shipped_yaml_names_every_key_of_every_section(section):
    """The YAML is where a user reads the settings: a stage's own file (else local.yaml) names every key."""
    path = config.CONF_DIR / f"{section}.yaml"
    shipped = config.read_yaml(path if path.exists() else config.DEFAULT_CONFIG)
    declared = {f.name for f in dataclasses.fields(getattr(config.PipelineConfig(), section))}
    assert set(shipped.get(section, {})) == declared
