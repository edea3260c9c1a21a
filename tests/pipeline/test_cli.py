"""The corpusmill command as a newcomer meets it: --version, run --help, and a first run's console."""
import subprocess
import sys

import pytest

from conftest import ROOT
from jobs import registry
from jobs.cli import main

SAMPLE = str(ROOT / "data" / "sample")


def test_version_prints_the_installed_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == "corpusmill 0.1.0"


def test_run_help_describes_the_command_and_shows_examples(capsys):
    with pytest.raises(SystemExit) as done:
        main(["run", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert " -> ".join(registry.stage_order()) in out
    assert "examples:" in out and "corpusmill run --input data/sample --output out --run demo" in out
    assert "exit codes:" in out


def test_the_help_and_the_operations_page_list_the_same_exit_codes():
    import re

    from jobs.cli import RUN_EXAMPLES

    in_help = {int(code) for code in re.findall(r"(?:^ |, |\n  )(\d) ", RUN_EXAMPLES.split("exit codes:")[1])}
    page = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8").split("## Exit codes")[1].split("\n## ")[0]
    assert in_help == {int(code) for code in re.findall(r"^\| (\d) \|", page, re.M)} == {0, 2, 3, 4, 5, 6, 7}


@pytest.mark.service  # a JVM of its own, started as the command starts it
def test_a_run_prints_no_spark_warnings(tmp_path):
    """Spark's start-up notices (loopback hostname, native Hadoop, the JVM's incubator module, plan
    truncation) do not reach the console; the summary lines do."""
    result = subprocess.run([sys.executable, "-m", "jobs.cli", "run", "--input", SAMPLE, "--output", str(tmp_path),
                             "--run", "quiet", "--stages", "extract,filter"],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "extract: 87 WARC records in -> 39 documents kept" in result.stdout
    console = result.stdout + result.stderr
    assert "WARN" not in console and "log4j" not in console, console[:3000]
