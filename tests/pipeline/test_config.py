"""Config loading: includes, validation errors as one line naming the key, one source of defaults."""
import ast
import dataclasses
import inspect
import textwrap
import typing
from typing import List

import pytest

import corpusmill.config
from corpusmill.config import ConfigError, defaults_from_yaml, shipped_file
from jobs import config
from jobs.cli import main


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


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", ".NaN"])
def test_a_number_that_is_no_number_is_refused_naming_the_key(tmp_path, value):
    with pytest.raises(ConfigError) as err:
        config.load(write(tmp_path, "bad.yaml", f"mix:\n  domains:\n    web: {{weight: {value}}}\n"))
    assert str(err.value).startswith("mix.domains.web.weight: must be a finite number, got ")


def test_include_problems_are_one_line(tmp_path):
    write(tmp_path, "a.yaml", "include: [b.yaml]\n")
    write(tmp_path, "b.yaml", "include: a.yaml\n")
    (tmp_path / "folder").mkdir()
    write(tmp_path, "folder.yaml", "include: [folder]\n")
    write(tmp_path, "number.yaml", "include: [3]\n")
    write(tmp_path, "mapping.yaml", "include: {file: a.yaml}\n")
    (tmp_path / "latin1.yaml").write_bytes("run: caf\xe9\n".encode("latin-1"))
    write(tmp_path, "includes_latin1.yaml", "include: [latin1.yaml]\n")
    for name, message in [
            ("a.yaml", f"config: include cycle: {tmp_path}/a.yaml -> {tmp_path}/b.yaml -> {tmp_path}/a.yaml"),
            ("folder.yaml", f"config: {tmp_path}/folder: is a folder; include and --config name YAML files"),
            ("number.yaml", f"config: {tmp_path}/number.yaml: include: must be a file path or a list of them, got [3]"),
            ("mapping.yaml", "include: must be a file path or a list of them, got {'file': 'a.yaml'}"),
            ("latin1.yaml", f"config: {tmp_path}/latin1.yaml: not UTF-8 text (byte 8)"),
            ("includes_latin1.yaml", f"config: {tmp_path}/latin1.yaml: not UTF-8 text (byte 8)")]:
        with pytest.raises(ConfigError) as err:
            config.load(tmp_path / name)
        assert message in str(err.value) and "\n" not in str(err.value), name


def test_cli_reports_config_error_in_one_line_and_exit_code_2(tmp_path, capsys):
    path = write(tmp_path, "bad.yaml", "spark: {mastr: local}\n")
    assert main(["run", "--config", str(path), "--input", "x.warc"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "corpusmill: spark.mastr: unknown key (allowed: app_name, class_archive_dir, conf, master)"


def test_cli_rejects_unknown_stage(capsys):
    assert main(["run", "--stages", "extract,polish"]) == 2
    assert "unknown stage 'polish'" in capsys.readouterr().err


# ---------------------------------------------------------------- defaults written once, in the YAML

SECTIONS = [f.name for f in dataclasses.fields(config.PipelineConfig)]


@pytest.mark.parametrize("section", SECTIONS)
def test_pipeline_config_defaults_are_the_embedded_local_config(section):
    """``PipelineConfig()`` (a notebook, a test) behaves exactly as the CLI's conf/local.yaml."""
    assert getattr(config.load(), section) == getattr(config.PipelineConfig(), section)


def shipped_config_classes():
    """(class, its place in the YAML) for each config class of a shipped section: the driver's and
    the stages' sections and the sections inside them (``filter.perplexity``, ``pii.tiers.high``)."""
    found = []

    def walk(cls, where):
        found.append((cls, where))
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if dataclasses.is_dataclass(hints[f.name]):
                walk(hints[f.name], f"{where}.{f.name}")

    for f in dataclasses.fields(config.PipelineConfig):
        if dataclasses.is_dataclass(f.type):
            walk(f.type, f.name)
    return found


SHIPPED_CONFIG_CLASSES = shipped_config_classes()
IDS = [where for _, where in SHIPPED_CONFIG_CLASSES]


@pytest.mark.parametrize("cls, where", SHIPPED_CONFIG_CLASSES, ids=IDS)
def test_a_shipped_config_class_writes_no_default_in_python(cls, where):
    """Each default is written once, in conf/ where its comment documents it: the class declares types only."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    assert [node.target.id for node in body if isinstance(node, ast.AnnAssign) and node.value is not None] == []


@pytest.mark.parametrize("cls, where", SHIPPED_CONFIG_CLASSES, ids=IDS)
def test_the_shipped_yaml_names_every_field(cls, where):
    """The YAML is where a user reads the settings: a stage's own file (else local.yaml) names every key."""
    section, *path = where.split(".")
    shipped = config.read_yaml(shipped_file(section))[section]
    for key in path:
        shipped = shipped[key]
    assert set(shipped) == {f.name for f in dataclasses.fields(cls)}


@pytest.fixture
def toy_yaml(tmp_path, monkeypatch):
    """Writes conf/toy.yaml of a conf/ folder standing in for the shipped one."""
    monkeypatch.setattr(corpusmill.config, "CONF_DIR", tmp_path)
    return lambda text: (tmp_path / "toy.yaml").write_text(text)


def toy_config_class():
    @dataclasses.dataclass(frozen=True)
    @defaults_from_yaml("toy")
    class ToyConfig:
        ratio: float
        names: List[str]
    return ToyConfig


def test_defaults_come_from_the_yaml_typed_and_never_shared(toy_yaml):
    toy_yaml("toy: {ratio: 1, names: [a]}\n")
    toy = toy_config_class()
    assert toy() == toy(1.0, ["a"]) and isinstance(toy().ratio, float)
    assert toy().names is not toy().names


@pytest.mark.parametrize("text, message", [
    ("toy: {ratio: 1}\n", "toy.yaml: toy.names: missing; it is the default of ToyConfig.names"),
    ("toy: {ratio: 1, names: [], colour: red}\n", "toy.yaml: toy.colour: ToyConfig has no field colour"),
    ("toy: {ratio: one, names: []}\n", "toy.ratio: expected float, got str 'one'"),
])
def test_a_field_the_yaml_lacks_or_a_key_no_field_declares_fails_at_import(toy_yaml, text, message):
    toy_yaml(text)
    with pytest.raises(ConfigError) as err:
        toy_config_class()
    assert message in str(err.value)


def test_a_python_default_beside_the_yaml_fails_at_import(toy_yaml):
    toy_yaml("toy: {ratio: 1}\n")
    with pytest.raises(TypeError, match="ToyConfig.ratio: has a default in Python"):
        @dataclasses.dataclass(frozen=True)
        @defaults_from_yaml("toy")
        class ToyConfig:
            ratio: float = 1.0
