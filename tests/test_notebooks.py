"""The Databricks source-format notebooks run as plain Python against local Spark, as they do on a cluster."""
from __future__ import annotations

import json
import runpy

import pytest

from conftest import ROOT
from jobs import registry

NOTEBOOKS = ROOT / "notebooks"
SAMPLE = str(ROOT / "data" / "sample")


@pytest.fixture(scope="module")
def walkthrough(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("nb")
    namespace = runpy.run_path(str(NOTEBOOKS / "01_pipeline_walkthrough.py"), run_name="__main__",
                               init_globals={"spark": spark, "INPUT": SAMPLE, "OUTPUT": str(out), "RUN": "nb"})
    return out, namespace


def test_notebooks_are_databricks_source_format():
    for notebook in sorted(NOTEBOOKS.glob("*.py")):
        lines = notebook.read_text().splitlines()
        assert lines[0] == "# Databricks notebook source", notebook.name
        assert lines.count("# COMMAND ----------") >= 3, notebook.name
        assert any(line.startswith("# MAGIC %md") for line in lines), notebook.name


def test_walkthrough_runs_every_stage_with_the_injected_session(spark, walkthrough):
    out, namespace = walkthrough
    assert namespace["spark"] is spark
    for stage in registry.STAGE_ORDER:
        stats = json.loads((out / "nb" / stage / "_stats.json").read_text())
        assert stats["reconciled"] is True, stage
        assert namespace[f"{stage}_stats"]["fingerprint"] == stats["fingerprint"]
    assert (out / "nb" / "report.html").exists()


def test_explore_notebook_reads_the_finished_run(spark, walkthrough):
    out, _ = walkthrough
    namespace = runpy.run_path(str(NOTEBOOKS / "02_explore_run.py"), run_name="__main__",
                               init_globals={"spark": spark, "OUTPUT": str(out), "RUN": "nb"})
    funnel = namespace["funnel"]
    assert list(funnel["stage"]) == registry.STAGE_ORDER
    extract = json.loads((out / "nb" / "extract" / "_stats.json").read_text())
    assert int(funnel.iloc[0]["records_in"]) == extract["records_in"]
    assert set(namespace["reasons"]["reason"]) >= {f"skipped: {r}" for r in extract["skipped"]}
    assert int(namespace["lengths"]["documents"].sum()) == json.loads(
        (out / "nb" / namespace["document_stages"][-1] / "_stats.json").read_text())["kept"]
