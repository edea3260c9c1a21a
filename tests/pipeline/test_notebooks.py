"""The Databricks source-format notebooks run as plain Python against local Spark, as they do on a cluster."""
from __future__ import annotations

import functools
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
    for stage in registry.stage_order():
        stats = json.loads((out / "nb" / stage / "_stats.json").read_text())
        assert stats["reconciled"] is True, stage
        assert namespace["stats"][stage]["fingerprint"] == stats["fingerprint"]
    assert (out / "nb" / "report.html").exists()


def test_every_stages_dropped_rows_read_as_one_table(spark, walkthrough):
    """The audit query: every stage's rejected/, errors/ and skipped/ in one DataFrame. The bookkeeping
    columns have one declared type in every stage, so the schemas merge."""
    out, _ = walkthrough
    folders = sorted(str(p) for p in (out / "nb").glob("*/*") if p.name in ("rejected", "errors", "skipped"))
    stages = {p.split("/")[-2] for p in folders}
    assert {"extract", "filter", "score"} <= stages  # a string, a measured double and a score before
    declared = {"_outcome": "string", "reject_rule": "string", "reject_value": "string", "error": "string",
                "_count": "bigint"}
    frames = [spark.read.parquet(folder) for folder in folders]
    for folder, frame in zip(folders, frames):
        types = dict(frame.dtypes)
        assert {c: types[c] for c in declared if c in types} == {c: declared[c] for c in declared if c in types}, folder
    dropped = functools.reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)
    total = sum(sum(json.loads((out / "nb" / s / "_stats.json").read_text())[k].values())
                for s in stages for k in ("rejected", "errors", "skipped"))
    weight = "coalesce(_count, 1)"
    assert dropped.selectExpr(f"sum({weight})").first()[0] == total
    measured = dropped.where("reject_rule is not null and reject_value is not null")
    assert measured.selectExpr("count(cast(reject_value as double))").first()[0] > 0


def test_explore_notebook_reads_the_finished_run(spark, walkthrough):
    out, _ = walkthrough
    namespace = runpy.run_path(str(NOTEBOOKS / "02_explore_run.py"), run_name="__main__",
                               init_globals={"spark": spark, "OUTPUT": str(out), "RUN": "nb"})
    funnel = namespace["funnel"]
    assert list(funnel["stage"]) == registry.stage_order()
    extract = json.loads((out / "nb" / "extract" / "_stats.json").read_text())
    assert int(funnel.iloc[0]["records_in"]) == extract["records_in"]
    assert set(namespace["reasons"]["reason"]) >= {f"skipped: {r}" for r in extract["skipped"]}
    assert int(namespace["lengths"]["documents"].sum()) == json.loads(
        (out / "nb" / namespace["document_stages"][-1] / "_stats.json").read_text())["kept"]
