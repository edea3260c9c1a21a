"""The driver on real Spark: run layout, reconciliation, resume, single stages, MindRecord read-back."""
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from jobs import config
from jobs.cli import main
from jobs.fs import HadoopFS
from jobs.stages.mix import MixStage
from jobs.pipeline import run_pipeline
from jobs.runner import is_complete, run_stage
from jobs.stage import Stage, Transformed

# Every test runs Spark, some through the CLI without the spark fixture.
pytestmark = pytest.mark.spark
SAMPLE = str(ROOT / "data" / "sample")
STAGES = ["extract", "mix", "mindrecord"]


def stats_of(run_dir: Path, stage: str) -> dict:
    return json.loads((run_dir / stage / "_stats.json").read_text())


@pytest.fixture(scope="module")
def cfg():
    return config.load(overrides={"mix": {"buckets": 3}})


@pytest.fixture(scope="module")
def demo(spark, cfg, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    lines = []
    stats = run_pipeline(spark, cfg, [SAMPLE], STAGES, str(out), "demo", echo=lines.append)
    return out / "demo", stats, lines


def test_run_layout_and_counts_reconcile(demo):
    run_dir, stats, lines = demo
    for stage in STAGES:
        assert (run_dir / stage / "_COMPLETE.json").exists()
        assert stats_of(run_dir, stage)["reconciled"] is True
    extract = stats_of(run_dir, "extract")
    dropped = sum(sum(extract[k].values()) for k in ("rejected", "errors", "skipped"))
    assert extract["records_in"] == extract["kept"] + dropped
    assert extract["kept"] >= 35
    assert not list(run_dir.glob("*.tmp-*"))
    assert len(lines) == 6  # each stage's line saying what it reads, then its summary
    assert all(line.strip().startswith(f"{stage}: reads ") for stage, line in zip(STAGES, lines[::2]))
    assert lines[2].strip() == f"mix: reads file:{run_dir}/extract/kept"


def test_extract_output_has_the_contract_columns(spark, demo):
    run_dir, _, _ = demo
    docs = spark.read.parquet(str(run_dir / "extract" / "kept"))
    for column in ("id", "url", "text", "host", "crawl_date", "source", "charset", "content_length"):
        assert column in docs.columns
    assert docs.where("text is null or text = ''").count() == 0
    assert docs.select("id").distinct().count() == docs.count()


def test_mix_buckets_and_mindrecord_read_back(spark, demo):
    import mindspore.dataset as ds

    run_dir, _, _ = demo
    mixed = spark.read.parquet(str(run_dir / "mix" / "kept"))
    assert sorted(r["bucket"] for r in mixed.select("bucket").distinct().collect()) == [0, 1, 2]
    shards = sorted(str(p) for p in (run_dir / "mindrecord").glob("shard-*.mindrecord"))
    assert len(shards) == 3
    rows = list(ds.MindDataset(shards, shuffle=False).create_dict_iterator(output_numpy=True))
    assert len(rows) == mixed.count()
    parquet_text = {r["id"]: r["text"] for r in mixed.select("id", "text").collect()}
    for row in rows[:10]:
        assert parquet_text[str(row["id"])] == str(row["text"])
    assert all(float(r["quality_score"]) == -1.0 for r in rows)  # not scored yet: documented marker


def test_rerun_skips_every_finished_stage(spark, cfg, demo):
    run_dir, first, _ = demo
    lines = []
    again = run_pipeline(spark, cfg, [SAMPLE], STAGES, str(run_dir.parent), "demo", echo=lines.append)
    assert all("skipped" in line for line in lines)
    assert [s["fingerprint"] for s in again] == [s["fingerprint"] for s in first]


def test_failed_stage_leaves_nothing_finished_and_rerun_resumes(spark, cfg, tmp_path, monkeypatch):
    def explode(self, docs, resources):
        raise RuntimeError("killed on purpose")

    monkeypatch.setattr(MixStage, "transform", explode)
    with pytest.raises(RuntimeError):
        run_pipeline(spark, cfg, [SAMPLE], STAGES, str(tmp_path), "r", echo=lambda _: None)
    run_dir = tmp_path / "r"
    assert (run_dir / "extract" / "_COMPLETE.json").exists()
    assert not (run_dir / "mix").exists() and not list(run_dir.glob("mix.tmp-*"))
    # A stage folder without its marker (a killed writer) is never taken as finished.
    (run_dir / "mix" / "kept").mkdir(parents=True)
    monkeypatch.undo()
    lines = []
    run_pipeline(spark, cfg, [SAMPLE], STAGES, str(tmp_path), "r", echo=lines.append)
    assert "skipped" in lines[0] and "skipped" not in lines[1]
    assert (run_dir / "mix" / "_COMPLETE.json").exists()


def test_changed_config_reruns_that_stage_and_the_ones_after(spark, cfg, demo):
    run_dir, _, _ = demo
    changed = config.load(overrides={"mix": {"buckets": 2}})
    lines = []
    run_pipeline(spark, changed, [SAMPLE], STAGES, str(run_dir.parent), "demo", echo=lines.append)
    assert "skipped" in lines[0] and "skipped" not in lines[1] and "skipped" not in lines[2]
    assert len(list((run_dir / "mindrecord").glob("shard-*.mindrecord"))) == 2


def test_a_stage_reruns_when_a_setting_it_reads_from_another_section_changes(spark, cfg, demo):
    """pack reads mix.buckets (its sequences go to mix's buckets): a new bucket count must re-run it."""
    run_dir, _, _ = demo
    output, run = str(run_dir.parent), run_dir.name
    pack_only = ["pack"]  # reads the demo's mix/kept: the stage before pack
    lines = []
    run_pipeline(spark, cfg, [], pack_only, output, run, echo=lines.append)
    run_pipeline(spark, cfg, [], pack_only, output, run, echo=lines.append)
    more_buckets = dataclasses.replace(cfg, mix=dataclasses.replace(cfg.mix, buckets=cfg.mix.buckets + 4))
    run_pipeline(spark, more_buckets, [], pack_only, output, run, echo=lines.append)
    assert lines[0].strip() == f"pack: reads file:{run_dir}/mix/kept"
    assert "skipped" not in lines[1] and "skipped" in lines[2] and "skipped" not in lines[4]
    buckets = spark.read.parquet(str(run_dir / "pack" / "kept")).select("bucket").distinct().collect()
    assert max(r["bucket"] for r in buckets) < cfg.mix.buckets + 4
    assert len(buckets) > cfg.mix.buckets  # the sequences now spread over the new bucket count
    shutil.rmtree(run_dir / "pack")  # the other tests of this module run without pack


def test_stage_alone_on_any_parquet_passes_columns_through(spark, cfg, tmp_path):
    data = tmp_path / "docs"
    spark.createDataFrame([(f"d{i}", f"http://x/{i}", f"text {i}", i) for i in range(20)],
                          "id string, url string, text string, extra int").write.parquet(str(data))
    stats = run_pipeline(spark, cfg, [str(data)], ["mix"], str(tmp_path / "out"), "alone", echo=lambda _: None)
    assert stats[0]["records_in"] == 20 and stats[0]["kept"] == 20
    mixed = spark.read.parquet(str(tmp_path / "out" / "alone" / "mix" / "kept"))
    assert {"id", "url", "text", "extra", "bucket"} <= set(mixed.columns)


def test_sample_switch_processes_a_deterministic_fraction(spark, cfg, tmp_path):
    first = run_pipeline(spark, cfg, [SAMPLE], ["extract"], str(tmp_path), "a", sample=0.5, echo=lambda _: None)[0]
    second = run_pipeline(spark, cfg, [SAMPLE], ["extract"], str(tmp_path), "b", sample=0.5, echo=lambda _: None)[0]
    assert first["kept"] == second["kept"] and 5 < first["kept"] < 35
    assert first["skipped"]["not_sampled"] > 0 and first["reconciled"]


def test_cli_run_prints_summary_and_where_outputs_are(tmp_path, capsys):
    code = main(["run", "--input", SAMPLE, "--output", str(tmp_path), "--run", "cli", "--stages", "extract"])
    out = capsys.readouterr().out
    assert code == 0
    assert "extract:" in out and f"{tmp_path}/cli/<stage>/_stats.json" in out


def test_cli_missing_input_is_a_clear_error(tmp_path, capsys):
    assert main(["run", "--input", str(tmp_path / "nothing*.warc.gz"), "--stages", "extract"]) == 2
    assert "--input: no files match" in capsys.readouterr().err


@pytest.mark.service  # spark-submit
def test_spark_submit_runs_a_job_module_with_the_same_options(tmp_path):
    spark_submit = Path(sys.executable).parent / "spark-submit"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    result = subprocess.run(
        [str(spark_submit), "--master", "local[1]", str(ROOT / "jobs" / "stages" / "extract.py"),
         "--input", str(ROOT / "data" / "sample" / "jwarc-commoncrawl.warc.gz"),
         "--output", str(tmp_path), "--run", "submitted"],
        capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads((tmp_path / "submitted" / "extract" / "_stats.json").read_text())["kept"] == 1



class RejectEverything(Stage):
    """A stage for exercising the runner: drops every row with one reason."""
    name = "mix"

    def transform(self, docs, resources):
        from pyspark.sql import functions as F

        return Transformed(docs.withColumn("_outcome", F.lit("rejected")).withColumn("reject_rule", F.lit("everything")))


def test_stage_that_drops_everything_still_writes_an_empty_kept(spark, cfg, tmp_path):
    docs = spark.createDataFrame([("a", "http://x/a", "t"), ("b", "http://x/b", "u")], "id string, url string, text string")
    stage_dir = str(tmp_path / "stage")
    stats = run_stage(RejectEverything(spark, cfg), docs, stage_dir, "fp", records_in=2)
    assert stats["kept"] == 0 and stats["rejected"] == {"everything": 2} and stats["reconciled"]
    kept = spark.read.parquet(stage_dir + "/kept")
    assert kept.count() == 0 and {"id", "url", "text"} <= set(kept.columns)
    assert spark.read.parquet(stage_dir + "/rejected").count() == 2


DRIVER_KILLED_DURING_COMMIT = '''
import os, shutil, signal, sys
from urllib.parse import urlsplit

from jobs.cli import main
from jobs.fs import HadoopFS

real_rename = HadoopFS.rename


def rename_like_an_object_store(self, src, dst):
    """S3A, GCS and ABFS rename a folder by copying it file by file; this driver dies after half."""
    if not src.rstrip("/").rsplit("/", 1)[-1].startswith(os.environ["KILL_IN_COMMIT_OF"] + ".tmp-"):
        return real_rename(self, src, dst)
    files = sorted(self.list_files(src))
    for rel in files[: len(files) // 2]:
        target = os.path.join(urlsplit(dst).path, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(urlsplit(src).path, rel), target)
    os.killpg(0, signal.SIGKILL)  # the driver and its JVM, as a lost YARN application master


HadoopFS.rename = rename_like_an_object_store
sys.exit(main(sys.argv[1:]))
'''


def test_driver_killed_in_the_middle_of_a_commit_leaves_a_stage_that_the_rerun_redoes(spark, tmp_path):
    conf = tmp_path / "three_buckets.yaml"
    conf.write_text(f"include: {ROOT / 'conf' / 'local.yaml'}\nmix:\n  buckets: 3\n")
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER_KILLED_DURING_COMMIT)
    killed = subprocess.run(
        [sys.executable, str(driver), "run", "--config", str(conf), "--input", SAMPLE, "--output", str(tmp_path),
         "--run", "r", "--stages", ",".join(STAGES)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "KILL_IN_COMMIT_OF": "mix"},
        start_new_session=True, capture_output=True, text=True, timeout=600)
    assert killed.returncode == -9, killed.stderr[-3000:]
    run_dir = tmp_path / "r"
    copied = [p for p in (run_dir / "mix").rglob("*") if p.is_file()]
    assert copied and not (run_dir / "mix" / "_COMPLETE.json").exists()
    assert list(run_dir.glob("mix.tmp-*")), "the half-copied source folder is the orphan a rerun must remove"

    cfg = config.load(str(conf))
    lines = []
    run_pipeline(spark, cfg, [SAMPLE], STAGES, str(tmp_path), "r", echo=lines.append)
    assert "taking over" in lines[0], lines  # the lease the killed driver left behind
    assert "skipped" in lines[1] and "skipped" not in lines[2], lines
    assert not list(run_dir.glob("*.tmp-*"))
    extract_kept = stats_of(run_dir, "extract")["kept"]
    assert spark.read.parquet(str(run_dir / "mix" / "kept")).count() >= extract_kept
    marker = json.loads((run_dir / "mix" / "_COMPLETE.json").read_text())
    assert any(name.startswith("kept/") and name.endswith(".parquet") for name in marker["files"])

    # A marker whose file list does not match what is there (a file lost or added) is not finished.
    fs = HadoopFS(spark)
    assert is_complete(fs, str(run_dir / "mix"), marker["fingerprint"])
    data_file = next(run_dir / "mix" / name for name in sorted(marker["files"]) if name.endswith(".parquet"))
    moved = data_file.rename(tmp_path / "elsewhere.parquet")
    assert not is_complete(fs, str(run_dir / "mix"), marker["fingerprint"])
    moved.rename(data_file)
    (run_dir / "mix" / "kept" / "part-stray.parquet").write_bytes(b"")
    assert not is_complete(fs, str(run_dir / "mix"), marker["fingerprint"])


def test_a_local_side_file_rewritten_over_hadoops_own_reads_back_through_hadoop(spark, tmp_path):
    """Side files on a local run are written by Python; Hadoop's local file system checks a file
    against the checksum file it wrote beside it, so an old one must not survive the rewrite."""
    fs = HadoopFS(spark)
    uri = fs.qualify(str(tmp_path / "stage" / "side.json"))
    jvm_fs = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(uri).getFileSystem(
        spark.sparkContext._jsc.hadoopConfiguration())
    out = jvm_fs.create(spark.sparkContext._jvm.org.apache.hadoop.fs.Path(uri), True)
    out.write(bytearray(b'{"written": "by Hadoop"}'))
    out.close()
    assert (tmp_path / "stage" / ".side.json.crc").exists()
    fs.write_json(uri, {"written": "by Python, ünïcode"})
    fs.write_text(fs.qualify(str(tmp_path / "new" / "folder" / "a.jsonl")), "{}\n")
    assert json.loads("".join(r.value for r in spark.read.text(uri, wholetext=True).collect())) == \
        {"written": "by Python, ünïcode"}
    assert (tmp_path / "new" / "folder" / "a.jsonl").read_text() == "{}\n"


def test_a_stage_that_keeps_nothing_gives_empty_finished_stages_after_it(spark, tmp_path):
    rejects_everything = config.load(overrides={"filter": {"rules": {"gopher_short_doc": {
        "ruleset": "gopher_quality", "signal": "n_words", "min": 10_000_000}}}})
    stages = ["extract", "filter", "pii", "dedup", "score", "mix", "pack", "mindrecord"]
    lines = []
    stats = run_pipeline(spark, rejects_everything, [SAMPLE], stages, str(tmp_path), "r", echo=lines.append)
    filter_stats = stats[1]
    assert filter_stats["kept"] == 0 and filter_stats["rejected"] == {"gopher_short_doc": filter_stats["records_in"]}
    assert any("filter: kept nothing; the stages after it run on no documents" in line for line in lines)
    for stage_stats in stats[2:]:
        assert stage_stats["records_in"] == 0 and stage_stats["kept"] == 0 and stage_stats["reconciled"]
    for stage in stages:
        assert is_complete(HadoopFS(spark), str(tmp_path / "r" / stage), stats[stages.index(stage)]["fingerprint"])


def test_cli_output_that_is_a_file_is_a_one_line_error(tmp_path, capsys):
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("")
    assert main(["run", "--input", SAMPLE, "--output", str(a_file), "--stages", "extract"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("corpusmill: --output: cannot create the run folder") and "\n" not in err


def test_cli_spark_conf_of_the_wrong_type_is_a_one_line_error(tmp_path, capsys):
    conf = tmp_path / "bad.yaml"
    conf.write_text("spark:\n  conf:\n    spark.sql.shuffle.partitions: [1, 2]\n")
    assert main(["run", "--config", str(conf), "--input", SAMPLE, "--stages", "extract"]) == 2
    assert capsys.readouterr().err.strip() == (
        "corpusmill: spark.conf.spark.sql.shuffle.partitions: expected a string, number or boolean, got list [1, 2]")


@pytest.mark.service  # a second JVM that refuses to start
def test_cli_spark_property_the_jvm_refuses_is_a_one_line_error(tmp_path):
    conf = tmp_path / "bad.yaml"
    conf.write_text("spark:\n  conf:\n    spark.driver.memory: lots\n")
    result = subprocess.run([sys.executable, "-m", "jobs.cli", "run", "--config", str(conf), "--input", SAMPLE,
                             "--output", str(tmp_path), "--stages", "extract"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1].startswith("corpusmill: spark: the JVM did not start")
    assert "Traceback" not in result.stderr


def test_a_new_run_writes_its_shards_alongside_earlier_runs_and_the_loader_reads_them_all(spark, cfg, demo, tmp_path):
    import mindspore.dataset as ds

    from loader.dataset import shard_files

    def rows(files):
        return sum(1 for _ in ds.MindDataset(files, shuffle=False).create_dict_iterator(output_numpy=True))

    earlier = str(demo[0] / "mindrecord")
    earlier_rows = rows(shard_files(earlier))
    second = dataclasses.replace(cfg, mindrecord=dataclasses.replace(cfg.mindrecord, earlier=[earlier]))
    one_file = [str(ROOT / "data" / "sample" / "dolma-sample-0001.warc.gz")]
    stats = run_pipeline(spark, second, one_file, STAGES, str(tmp_path), "next", echo=lambda _: None)[-1]
    manifest = json.loads((tmp_path / "next" / "mindrecord" / "manifest.json").read_text())
    assert [e["stage"] for e in manifest["stages"]] == [HadoopFS(spark).qualify(earlier), "."]
    files = shard_files(str(tmp_path / "next" / "mindrecord"))
    assert len(files) == len(shard_files(earlier)) + cfg.mix.buckets
    assert rows(files) == earlier_rows + stats["kept"] == stats["manifest"]["rows"]

    # A third run that lists only the second gets the first too: manifests chain.
    third = dataclasses.replace(cfg, mindrecord=dataclasses.replace(cfg.mindrecord,
                                                                     earlier=[str(tmp_path / "next" / "mindrecord")]))
    run_pipeline(spark, third, [str(tmp_path / "next" / "mix" / "kept")], ["mindrecord"], str(tmp_path), "third",
                 echo=lambda _: None)
    chained = json.loads((tmp_path / "third" / "mindrecord" / "manifest.json").read_text())
    assert len(chained["stages"]) == 3
    assert rows(shard_files(str(tmp_path / "third" / "mindrecord"))) == earlier_rows + 2 * stats["kept"]

    # Training reads one kind of shard: an earlier stage of another mode is refused before writing.
    packed = dataclasses.replace(third, mindrecord=dataclasses.replace(third.mindrecord, mode="sequences"))
    with pytest.raises(config.ConfigError, match="mindrecord.earlier: .* holds documents"):
        run_pipeline(spark, packed, [str(tmp_path / "next" / "mix" / "kept")], ["pack", "mindrecord"], str(tmp_path),
                     "packed", echo=lambda _: None)


def test_side_files_read_the_same_through_python_and_the_jvm(spark, tmp_path):
    """``file:`` URIs are read by Python, other URIs through Hadoop's FileSystem: same text, same lines."""
    fs = HadoopFS(spark)
    path = tmp_path / "side.jsonl"
    path.write_bytes("één\r\n{\"a\": 1}\nlast\rline\n\nend".encode("utf-8") + b"\xff")
    through_jvm = str(path)  # no scheme: Hadoop's default file system (local here) reads it
    through_python = fs.qualify(str(path))
    assert through_python.startswith("file:")
    assert fs.read_text(through_python) == fs.read_text(through_jvm) == path.read_bytes().decode("utf-8", "replace")
    for limit in (0, 2, 4, 10):
        assert fs.read_lines(through_python, limit) == fs.read_lines(through_jvm, limit)
    assert fs.read_lines(through_jvm, 10) == ["één", '{"a": 1}', "last", "line", "", "end\ufffd"]


def test_the_session_records_no_python_call_site_per_column_operation(spark):
    """(PySpark's DataFrame debugging: JVM round trips for every Column operation the driver builds.)
    An analysis error still names what failed."""
    from pyspark.errors import AnalysisException
    from pyspark.errors.utils import is_debugging_enabled
    from pyspark.sql import functions as F

    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
    assert not is_debugging_enabled()
    with pytest.raises(AnalysisException, match="no_such_column"):
        spark.range(1).select(F.col("no_such_column") + 1).collect()
