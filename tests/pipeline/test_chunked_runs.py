"""Progress within a stage: chunks committed one by one, a killed driver resumes at the first
unfinished chunk, and the result is the same as an uninterrupted run."""
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import ROOT
from jobs import config
from jobs.pipeline import run_pipeline
from run_outputs import fingerprint_of_output, split_sample_warcs

pytestmark = pytest.mark.spark
FILES = 40
CHUNK_FILES = 4

DRIVER_KILLED_AFTER_CHUNKS = '''
import os, signal, sys

from jobs import runner
from jobs.cli import main

stage_name, after = os.environ["KILL_AFTER_CHUNKS"].split(":")
real_write_chunk_marker = runner.write_chunk_marker
committed = []


def write_chunk_marker(fs, path, content):
    real_write_chunk_marker(fs, path, content)
    if f"/{stage_name}.partial-" in path:
        committed.append(path)
        if len(committed) == int(after):
            os.killpg(0, signal.SIGKILL)  # the driver and its JVM (kill -9 of a lost application master)


runner.write_chunk_marker = write_chunk_marker
sys.exit(main(sys.argv[1:]))
'''


@pytest.fixture(scope="module")
def warc_dir(tmp_path_factory) -> Path:
    return split_sample_warcs(tmp_path_factory.mktemp("warcs"), FILES)


@pytest.fixture(scope="module")
def chunk_conf(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("conf") / "chunks.yaml"
    path.write_text(f"include: {ROOT / 'conf' / 'local.yaml'}\nio:\n  chunk_files: {CHUNK_FILES}\n")
    return path


def run_killed(tmp_path: Path, conf: Path, inputs: Path, stage: str, committed: int) -> Path:
    """Run ``stage`` in a driver that is killed right after its ``committed``-th chunk; returns the run
    folder, checked to hold exactly those chunks and no finished stage."""
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER_KILLED_AFTER_CHUNKS)
    killed = subprocess.run(
        [sys.executable, str(driver), "run", "--config", str(conf), "--input", str(inputs),
         "--output", str(tmp_path), "--run", "r", "--stages", stage],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "KILL_AFTER_CHUNKS": f"{stage}:{committed}"},
        start_new_session=True, capture_output=True, text=True, timeout=900)
    assert killed.returncode == -9, killed.stderr[-3000:]
    run_dir = tmp_path / "r"
    partial = list(run_dir.glob(f"{stage}.partial-*"))
    assert len(partial) == 1 and len(list((partial[0] / "_chunks").glob("*.json"))) == committed
    assert not (run_dir / stage).exists()
    return run_dir


@pytest.fixture(scope="module")
def uninterrupted(spark, warc_dir, chunk_conf, tmp_path_factory):
    out = tmp_path_factory.mktemp("whole")
    lines = []
    stats = run_pipeline(spark, config.load(str(chunk_conf)), [str(warc_dir)], ["extract", "filter"],
                         str(out), "r", echo=lines.append)
    return out / "r", stats, lines


def test_an_uninterrupted_chunked_run_commits_every_chunk_and_counts_reconcile(warc_dir, uninterrupted):
    run_dir, stats, lines = uninterrupted
    extract = stats[0]
    assert extract["chunks"] == FILES // CHUNK_FILES and extract["reconciled"]
    assert sum("extract: chunk" in line for line in lines) == FILES // CHUNK_FILES
    marker = json.loads((run_dir / "extract" / "_COMPLETE.json").read_text())
    chunk_markers = [json.loads((run_dir / "extract" / name).read_text())
                     for name in sorted(marker["files"]) if name.startswith("_chunks/")]
    assert [len(m["inputs"]) for m in chunk_markers] == [CHUNK_FILES] * (FILES // CHUNK_FILES)
    read = sorted(Path(urlsplit(uri).path).name for m in chunk_markers for uri in m["inputs"])
    assert read == sorted(p.name for p in warc_dir.glob("*.warc.gz"))
    assert extract["kept"] > 30 and sum(m["counts"]["kept"]["-"] for m in chunk_markers if "kept" in m["counts"]) == extract["kept"]
    assert not list(run_dir.glob("*.partial-*")) and not list(run_dir.glob("*.tmp-*"))


def test_killed_extract_resumes_at_the_first_unfinished_chunk_with_the_same_output(
        spark, warc_dir, chunk_conf, uninterrupted, tmp_path):
    run_dir = run_killed(tmp_path, chunk_conf, warc_dir, "extract", committed=3)

    lines = []
    stats = run_pipeline(spark, config.load(str(chunk_conf)), [str(warc_dir)], ["extract"], str(tmp_path), "r",
                         echo=lines.append)
    assert "taking over" in lines[0] and "its lease expired or its process is gone" in lines[0]  # the killed driver's
    assert "resuming: 3 of 10 chunks were committed earlier" in lines[2]  # after the line saying what it reads
    redone = [line for line in lines if "extract: chunk" in line]
    assert len(redone) == 7  # 28 of the 40 files read again, not 40
    assert stats[0]["reconciled"] and stats[0]["records_in"] == uninterrupted[1][0]["records_in"] > 80
    assert stats[0]["kept"] == uninterrupted[1][0]["kept"] and stats[0]["skipped"] == uninterrupted[1][0]["skipped"]
    assert fingerprint_of_output(spark, run_dir / "extract") == fingerprint_of_output(spark, uninterrupted[0] / "extract")
    assert not list(run_dir.glob("*.partial-*"))


def test_killed_pii_resumes_its_chunks_and_matches_an_uninterrupted_run(spark, uninterrupted, tmp_path):
    docs = tmp_path / "docs"  # six Parquet files: three chunks of two
    spark.read.parquet(str(uninterrupted[0] / "filter" / "kept")).repartition(6).write.parquet(str(docs))
    conf = tmp_path / "two_file_chunks.yaml"
    conf.write_text(f"include: {ROOT / 'conf' / 'local.yaml'}\nio:\n  chunk_files: 2\n")
    cfg = config.load(str(conf))
    whole = run_pipeline(spark, cfg, [str(docs)], ["pii"], str(tmp_path / "whole"), "r", echo=lambda _: None)[0]

    run_dir = run_killed(tmp_path, conf, docs, "pii", committed=1)

    lines = []
    pii = run_pipeline(spark, cfg, [str(docs)], ["pii"], str(tmp_path), "r", echo=lines.append)[0]
    assert "pii: resuming: 1 of 3 chunks were committed earlier" in lines[2]
    assert sum("pii: chunk" in line for line in lines) == 2
    assert pii["chunks"] == 3 and pii["reconciled"] and pii["records_in"] == whole["records_in"]
    assert pii["kept"] == whole["kept"] and pii["pii_replaced"] == whole["pii_replaced"]
    assert fingerprint_of_output(spark, run_dir / "pii") == fingerprint_of_output(spark, tmp_path / "whole" / "r" / "pii")


def dedup_decisions(spark, stage_dir: Path):
    """(id, cluster_id, survivor_id, reject_rule) of every row, and the index's exact keys."""
    rows = spark.read.parquet(str(stage_dir / "kept"), str(stage_dir / "rejected"))
    decisions = sorted(tuple(r) for r in rows.select("id", "cluster_id", "survivor_id", "reject_rule").collect())
    index = sorted(tuple(r) for r in spark.read.parquet(str(stage_dir / "_index" / "exact")).collect())
    return decisions, index


def test_killed_dedup_resumes_its_signature_chunks_and_clusters_as_an_unchunked_run(spark, uninterrupted, tmp_path):
    from pyspark.sql import functions as F

    kept = spark.read.parquet(str(uninterrupted[0] / "filter" / "kept"))
    exact = kept.orderBy("id").limit(6).withColumn("id", F.concat("id", F.lit("-copy")))
    near = (kept.orderBy(F.desc("id")).limit(6).withColumn("id", F.concat("id", F.lit("-near")))
            .withColumn("text", F.concat("text", F.lit(" Posted by the editors."))))
    docs = tmp_path / "docs"  # six Parquet files: three chunks of two
    kept.unionByName(exact).unionByName(near).repartition(6).write.parquet(str(docs))
    whole = run_pipeline(spark, config.load(str(ROOT / "conf" / "local.yaml")), [str(docs)], ["dedup"],
                         str(tmp_path / "whole"), "r", echo=lambda _: None)[0]
    assert "chunks" not in whole and whole["rejected"].get("exact_duplicate", 0) >= 6
    assert whole["rejected"].get("near_duplicate", 0) >= 3

    conf = tmp_path / "two_file_chunks.yaml"
    conf.write_text(f"include: {ROOT / 'conf' / 'local.yaml'}\nio:\n  chunk_files: 2\n")
    run_dir = run_killed(tmp_path, conf, docs, "dedup", committed=1)

    lines = []
    dedup = run_pipeline(spark, config.load(str(conf)), [str(docs)], ["dedup"], str(tmp_path), "r",
                         echo=lines.append)[0]
    assert "dedup: resuming: 1 of 3 chunks were committed earlier" in lines[2]
    assert sum("dedup: chunk" in line for line in lines) == 2  # signatures of 4 of the 6 files computed again
    assert dedup["chunks"] == 3 and dedup["reconciled"] and dedup["records_in"] == whole["records_in"]
    assert (dedup["kept"], dedup["rejected"]) == (whole["kept"], whole["rejected"])
    assert dedup["cluster_size_histogram"] == whole["cluster_size_histogram"]
    assert fingerprint_of_output(spark, run_dir / "dedup") == fingerprint_of_output(spark, tmp_path / "whole" / "r" / "dedup")
    assert dedup_decisions(spark, run_dir / "dedup") == dedup_decisions(spark, tmp_path / "whole" / "r" / "dedup")
    assert not list(run_dir.glob("dedup.partial-*")) and not list(run_dir.glob("dedup.tmp-*"))
