"""Adding a stage touches exactly the files docs/contributing.md lists: in a copy of the clone, the
documented example stage is added as those files and nothing else, and then the registry, the config,
the DAG, the tests that list stages and a real run all take it in."""
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, dag_stage_order

NAME = "min_length"

# The documented example, file by file (docs/contributing.md, "Adding a stage").
FILES = {
    f"udfs/{NAME}/__init__.py": '''
        """Documents shorter than a length: the per-record rule and its config."""
        from dataclasses import dataclass

        from corpusmill.config import ConfigError, defaults_from_yaml


        @dataclass(frozen=True)
        @defaults_from_yaml("min_length")
        class MinLengthConfig:
            min_chars: int

            def validate(self, prefix):
                if self.min_chars < 0:
                    raise ConfigError(f"{prefix}.min_chars: must be >= 0")
        ''',
    f"jobs/stages/{NAME}.py": '''
        """min_length: documents shorter than a length are rejected."""
        from pyspark.sql import functions as F

        from jobs.stage import Stage, Transformed
        from udfs.min_length import MinLengthConfig


        class MinLengthStage(Stage):
            name, config, order = "min_length", MinLengthConfig, 15
            required_columns = ("text",)

            def transform(self, docs, resources):
                short = F.length("text") < self.settings.min_chars
                return Transformed(docs.withColumn("_outcome", F.when(short, "rejected").otherwise("kept"))
                                   .withColumn("reject_rule", F.when(short, F.lit("too_short")))
                                   .withColumn("reject_value", F.when(short, F.length("text"))))
        ''',
    f"conf/{NAME}.yaml": '''
        min_length:
          min_chars: 1500  # documents with fewer characters are rejected
        ''',
    f"docs/stages/{NAME}.md": '''
        # min_length
        Rejects documents shorter than `min_chars`.
        ''',
    f"tests/{NAME}/test_min_length.py": '''
        from udfs.min_length import MinLengthConfig


        def test_default():
            assert MinLengthConfig().min_chars == 1500
        ''',
}

LEFT_OUT = shutil.ignore_patterns(".git", "out", "__pycache__", "*.egg-info", ".pytest_cache", "build")


def left_out(folder, names):
    """What the copy leaves out: git's and the build's files, runs' outputs, the benches' work files."""
    return LEFT_OUT(folder, names) | ({"work"} if os.path.samefile(folder, ROOT / "bench") else set())


def documented_touch_list():
    """The paths of the table under "Adding a stage" in docs/contributing.md, for this stage's name."""
    text = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    section = text.split("## Adding a stage", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \|", section, re.MULTILINE)
    return [row.replace("<name>", NAME) for row in rows]


def test_the_example_stage_is_the_documented_files():
    documented = documented_touch_list()
    assert documented, "docs/contributing.md lists no files under 'Adding a stage'"
    for path in FILES:
        assert any(path == entry or path.startswith(entry.rstrip("/") + "/") for entry in documented), path
    for entry in documented:
        assert any(path == entry or path.startswith(entry.rstrip("/") + "/") for path in FILES), entry


@pytest.mark.slow  # a copy of the clone, its stage tests, and extract + the new stage on the sample
@pytest.mark.service  # its own JVM
def test_a_stage_added_as_the_documented_files_runs_everywhere(tmp_path):
    clone = tmp_path / "clone"
    shutil.copytree(ROOT, clone, ignore=left_out, symlinks=True)
    for path, content in FILES.items():
        (clone / path).parent.mkdir(parents=True, exist_ok=True)
        (clone / path).write_text(textwrap.dedent(content).lstrip(), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(clone), TMPDIR=str(tmp_path))

    # The tests that list the stages take it from the registry; the DAG reads it from the stage's module.
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "tests/pipeline/test_stage_declarations.py", "tests/pipeline/test_config.py",
                            "tests/pipeline/test_airflow_dag.py", f"tests/{NAME}", "-m", "not spark and not service"],
                           cwd=clone, env=env, capture_output=True, text=True, timeout=900)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]

    assert dag_stage_order(clone)[:3] == ["extract", NAME, "filter"]

    run = subprocess.run([sys.executable, "-m", "jobs.cli", "run", "--stages", f"extract,{NAME}",
                          "--input", str(clone / "data" / "sample"), "--output", str(tmp_path / "out"), "--run", "new"],
                         cwd=clone, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"{NAME}:" in run.stdout and "too_short" in run.stdout
    help_text = subprocess.run([sys.executable, "-m", "jobs.cli", "run", "--help"], cwd=clone, env=env,
                               capture_output=True, text=True, timeout=300).stdout
    assert f"extract -> {NAME} -> filter" in help_text
