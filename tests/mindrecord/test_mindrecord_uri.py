"""MindRecord shards to and from file-system URIs: the upload and download functions against a real
S3 server on loopback (moto), the mindrecord stage on ``file://``, and the whole pipeline with
``--output s3://`` read back by the loader."""
import hashlib
import json
import os
import stat
import subprocess
import sys

import numpy as np
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from conftest import ROOT
from s3_server import local_master, s3_server, spark_failure, spark_s3_conf, storage_options
from corpusmill.config import ConfigError
from corpusmill.run_folder import checksum_of_bytes, new_marker
from corpusmill.storage import check_reachable, file_system, open_uri, s3_options_from_hadoop, upload_files
from loader.shards import download_shards
from udfs.mindrecord.records import balance_plan, sequence_schema, shard_name

SAMPLE = str(ROOT / "data" / "sample")
SEQ_LEN = 8


def shard_rows(moves, counts, buckets):
    """Rows per shard after ``balance_plan``'s moves."""
    rows = [counts.get(b, 0) for b in range(buckets)]
    for bucket, start, stop, shard in moves:
        assert counts[bucket] >= stop > start >= 0
        rows[bucket] -= stop - start
        rows[shard] += stop - start
    return rows


@pytest.mark.parametrize("counts,buckets", [
    ({0: 10, 1: 10, 2: 10}, 3),          # already even: nothing moves
    ({0: 25, 1: 3, 2: 2}, 3),            # one bucket holds most rows
    ({0: 2}, 5),                         # fewer rows than shards: three shards stay empty
    ({b: 1000 + 37 * b for b in range(8)}, 8),
])
def test_balance_plan_evens_rows_per_shard_within_one(counts, buckets):
    moves = balance_plan(counts, buckets)
    rows = shard_rows(moves, counts, buckets)
    assert sum(rows) == sum(counts.values()) and max(rows) - min(rows) <= 1
    # Only surplus rows move: a shard that ends with more rows than it started never gives any away.
    assert sum(stop - start for _, start, stop, _ in moves) == sum(max(0, counts.get(b, 0) - rows[b])
                                                                   for b in range(buckets))


def test_s3_options_come_from_the_s3a_settings():
    hadoop = {"fs.s3a.endpoint": "http://127.0.0.1:9000", "fs.s3a.access.key": "a", "fs.s3a.secret.key": "s"}
    assert s3_options_from_hadoop(hadoop.get) == {"endpoint_override": "127.0.0.1:9000", "scheme": "http",
                                                  "access_key": "a", "secret_key": "s"}
    bare = {"fs.s3a.endpoint": "minio.internal:9000", "fs.s3a.connection.ssl.enabled": "false"}
    assert s3_options_from_hadoop(bare.get) == {"endpoint_override": "minio.internal:9000", "scheme": "http"}
    assert s3_options_from_hadoop({}.get) == {}  # pyarrow's AWS environment decides
    temporary = {"fs.s3a.session.token": "t", "fs.s3a.endpoint.region": "eu-west-1",
                 "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"}
    assert s3_options_from_hadoop(temporary.get) == {"session_token": "t", "region": "eu-west-1", "anonymous": True}


def test_file_system_of_each_uri_form(tmp_path):
    assert file_system(str(tmp_path))[1] == str(tmp_path)
    fs, path = file_system(f"file://{tmp_path}/a%20b")
    assert fs.type_name == "local" and path == f"{tmp_path}/a b"
    assert file_system(f"file:{tmp_path}")[1] == str(tmp_path)  # Hadoop's qualified form
    for uri in ("s3://bkt/run/mindrecord", "s3a://bkt/run/mindrecord/"):
        fs, path = file_system(uri, {"region": "us-east-1"})
        assert fs.type_name == "s3" and path == "bkt/run/mindrecord"


def test_an_output_pyarrow_cannot_open_is_a_one_line_error():
    # No Hadoop here: libhdfs (or the JVM it loads) is missing, as on a node set up without it.
    with pytest.raises(ConfigError, match=r"cannot open hdfs://namenode:8020/x .*CLASSPATH=\$\(hadoop classpath") as hdfs:
        check_reachable("hdfs://namenode:8020/x", None, "the mindrecord stage uploads its shards")
    assert "\n" not in str(hdfs.value)
    with pytest.raises(ConfigError, match="Unrecognized filesystem type"):
        check_reachable("wasb://container/x", None, "the mindrecord stage uploads its shards")


def write_shards(folder, counts):
    """MindRecord shards of ``counts[i]`` sequences each, as the stage writes them (0 rows allowed)."""
    from mindspore.mindrecord import FileWriter

    files, ids = [], []
    for shard, n in enumerate(counts):
        path = os.path.join(folder, shard_name(shard))
        writer = FileWriter(path, shard_num=1, overwrite=True)
        writer.set_header_size(1 << 16)
        writer.set_page_size(1 << 16)
        writer.add_schema(sequence_schema(SEQ_LEN), "t")
        rows = [{"id": f"{shard}-{i}", "input_ids": np.full(SEQ_LEN, shard * 100 + i, np.int32),
                 "segment_ids": np.ones(SEQ_LEN, np.int32), "loss_mask": np.ones(SEQ_LEN, np.int32)}
                for i in range(n)]
        if rows:
            writer.write_raw_data(rows)
        writer.commit()
        files += [path, f"{path}.db"]
        ids += [r["id"] for r in rows]
    return files, ids


def test_shards_go_up_to_s3_and_the_loader_fetches_them_back(tmp_path):
    import mindspore.dataset as ds

    from loader import shard_files

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    files, ids = write_shards(str(scratch), [3, 0, 2])
    with s3_server("corpus") as endpoint:
        options = storage_options(endpoint)
        upload_files(files, "s3a://corpus/run/mindrecord", options)
        s3, _ = file_system("s3://corpus", options)
        listed = {i.path.rsplit("/", 1)[-1]: i.size for i in s3.get_file_info(pafs.FileSelector("corpus/run/mindrecord"))}
        assert listed == {os.path.basename(f): os.path.getsize(f) for f in files}
        shard = os.path.basename(files[0])
        with open_uri(f"s3a://corpus/run/mindrecord/{shard}", options) as stream:  # as extract reads its input
            assert stream.read() == open(files[0], "rb").read()

        # Not finished (no completion marker): refused, nothing downloaded.
        with pytest.raises(FileNotFoundError, match="not a finished mindrecord stage"):
            shard_files("s3://corpus/run/mindrecord", str(tmp_path / "cache"), options)
        with s3.open_output_stream("corpus/run/mindrecord/_COMPLETE.json") as marker:
            checksums = {os.path.basename(f): checksum_of_bytes(open(f, "rb").read()) for f in files}
            marker.write(json.dumps(new_marker("f", listed, checksums)).encode())

        local = shard_files("s3://corpus/run/mindrecord", str(tmp_path / "cache"), options)
        assert [os.path.basename(p) for p in local] == [shard_name(i) for i in range(3)]
        for path in local:
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
            assert stat.S_IMODE(os.stat(f"{path}.db").st_mode) == 0o644
        rows = list(ds.MindDataset(local, shuffle=False).create_dict_iterator(output_numpy=True, num_epochs=1))
        assert sorted(str(r["id"]) for r in rows) == sorted(ids)  # the empty shard reads as 0 rows

        # A second call reuses the finished download.
        before = {p: os.stat(p).st_mtime_ns for p in local}
        assert download_shards("s3://corpus/run/mindrecord", str(tmp_path / "cache"), options) == local
        assert {p: os.stat(p).st_mtime_ns for p in local} == before

        # A shard changed on the store since the stage finished (same size): refused, naming it, not cached.
        changed = open(files[0], "rb").read()
        with s3.open_output_stream(f"corpus/run/mindrecord/{shard}") as out:
            out.write(changed[:-8] + bytes(b ^ 0xFF for b in changed[-8:]))
        with pytest.raises(OSError, match=f"mindrecord: {shard} does not match its xxh3_64 checksum"):
            download_shards("s3://corpus/run/mindrecord", str(tmp_path / "fresh"), options)
        assert not [p for p in (tmp_path / "fresh").rglob("*") if p.name.startswith(shard)]


def input_ids_digest(arrays) -> tuple:
    """Row count and an order-free checksum of the input_ids rows."""
    rows = sorted(hashlib.sha256(np.asarray(a, dtype=np.int32).tobytes()).hexdigest() for a in arrays)
    return len(rows), hashlib.sha256("".join(rows).encode()).hexdigest()


def loader_digest(path, **kwargs) -> tuple:
    from loader import sequence_dataset

    data = sequence_dataset(path, batch_size=1, shuffle=False, drop_remainder=False, **kwargs)
    return input_ids_digest(b["input_ids"][0] for b in data.create_dict_iterator(output_numpy=True, num_epochs=1))


def check_shards(stats: dict, marker: dict, buckets: int, kept_rows: int, kept_tokens: int) -> None:
    """Exactly ``buckets`` shards, all in the marker, rows even within one, tokens that add up."""
    shards = stats["shards"]
    assert [s["file"] for s in shards] == [shard_name(b) for b in range(buckets)]
    for s in shards:
        assert s["file"] in marker["files"] and f"{s['file']}.db" in marker["files"]
    rows = [s["rows"] for s in shards]
    assert sum(rows) == kept_rows == stats["kept"] and max(rows) - min(rows) <= 1
    assert stats["rows_per_shard"] == {"min": min(rows), "max": max(rows)}
    assert sum(s["tokens"] for s in shards) == kept_tokens


def test_mindrecord_stage_on_a_file_uri(spark, tmp_path):
    from jobs import config
    from jobs.config import PipelineConfig
    from jobs.pipeline import run_pipeline

    buckets = 5
    cfg = config.build(PipelineConfig, {"mix": {"buckets": buckets}, "pack": {"seq_len": 64}})
    output = f"file://{tmp_path}/out"
    run_pipeline(spark, cfg, [SAMPLE], ["extract", "mix", "pack", "mindrecord"], output, "r", echo=lambda _: None)
    run_dir = tmp_path / "out" / "r"
    kept = pq.read_table(run_dir / "pack" / "kept", columns=["input_ids", "n_tokens"])
    stage = run_dir / "mindrecord"
    stats = json.loads((stage / "_stats.json").read_text())
    marker = json.loads((stage / "_COMPLETE.json").read_text())
    check_shards(stats, marker, buckets, kept.num_rows, sum(kept.column("n_tokens").to_pylist()))
    for name in marker["files"]:
        if ".mindrecord" in name:
            assert stat.S_IMODE(os.stat(stage / name).st_mode) == 0o644, name
    assert not list(run_dir.glob("mindrecord.tmp-*"))
    expected = input_ids_digest(kept.column("input_ids").to_pylist())
    assert loader_digest(f"file://{stage}") == expected == loader_digest(str(stage))


def test_a_shard_no_row_reaches_is_written_empty(spark, tmp_path):
    import mindspore.dataset as ds

    from jobs import config
    from jobs.config import PipelineConfig
    from jobs.pipeline import run_pipeline

    docs = tmp_path / "docs"
    spark.createDataFrame([(f"d{i}", f"text {i}", 0) for i in range(3)], "id string, text string, bucket int") \
        .write.parquet(str(docs))
    cfg = config.build(PipelineConfig, {"mix": {"buckets": 5}, "mindrecord": {"mode": "documents"}})
    run_pipeline(spark, cfg, [str(docs)], ["mindrecord"], str(tmp_path), "r", echo=lambda _: None)
    stage = tmp_path / "r" / "mindrecord"
    stats = json.loads((stage / "_stats.json").read_text())
    assert [s["rows"] for s in stats["shards"]] == [1, 1, 1, 0, 0]  # all in bucket 0: spread, two left empty
    files = sorted(str(p) for p in stage.glob("shard-*.mindrecord"))
    assert len(files) == 5
    assert ds.MindDataset(files, shuffle=False).get_dataset_size() == 3
    assert ds.MindDataset(files[3:], shuffle=False).get_dataset_size() == 0  # empty, yet a valid file

    # Rows bucketed for another bucket count would make more shards than mix.buckets: refused.
    too_few = config.build(PipelineConfig, {"mix": {"buckets": 1}, "mindrecord": {"mode": "documents"}})
    spark.createDataFrame([("d9", "t", 3)], "id string, text string, bucket int").write.parquet(str(tmp_path / "b3"))
    with pytest.raises(ConfigError, match=r"bucket\(s\) 3 are outside 0..0"):
        run_pipeline(spark, too_few, [str(tmp_path / "b3")], ["mindrecord"], str(tmp_path), "r2", echo=lambda _: None)


def test_sequences_of_two_lengths_are_refused_before_any_shard_is_written(spark, tmp_path):
    from jobs import config
    from jobs.config import PipelineConfig
    from jobs.pipeline import run_pipeline

    rows = [(f"s{i}", 0, [7] * n, [1] * n, [1] * n) for i, n in enumerate([16, 16, 12])]
    spark.createDataFrame(rows, "id string, bucket int, input_ids array<int>, segment_ids array<int>, "
                                "loss_mask array<int>").write.parquet(str(tmp_path / "seq"))
    cfg = config.build(PipelineConfig, {"mix": {"buckets": 2}})
    with pytest.raises(ConfigError, match=r"sequences of 12 to 16 tokens \(loss_mask\)"):
        run_pipeline(spark, cfg, [str(tmp_path / "seq")], ["mindrecord"], str(tmp_path), "r", echo=lambda _: None)
    assert not list((tmp_path / "r").glob("mindrecord*/shard-*"))


@pytest.mark.service  # a second Spark JVM, through the CLI, with the S3A connector
@pytest.mark.slow
def test_whole_pipeline_to_s3_read_back_by_the_loader(tmp_path):
    buckets = 4
    with s3_server("corpus") as endpoint:
        conf = tmp_path / "s3.yaml"
        conf.write_text(json.dumps({  # JSON is YAML
            "include": [str(ROOT / "conf" / "local.yaml")],
            "spark": {"master": local_master(2),
                      "conf": {"spark.driver.memory": "2g", "spark.ui.enabled": "false",
                               "spark.sql.shuffle.partitions": "4", **spark_s3_conf(endpoint)}},
            "mix": {"buckets": buckets}}))
        result = subprocess.run([sys.executable, "-m", "jobs.cli", "run", "--config", str(conf), "--input", SAMPLE,
                                 "--output", "s3://corpus/runs", "--run", "r"],
                                cwd=ROOT, capture_output=True, text=True, timeout=1200)
        assert result.returncode == 0, spark_failure(result.stderr)
        options = storage_options(endpoint)
        s3, _ = file_system("s3://corpus", options)
        kept = pq.read_table("corpus/runs/r/pack/kept", filesystem=s3, columns=["input_ids", "n_tokens"])
        with s3.open_input_stream("corpus/runs/r/mindrecord/_stats.json") as f:
            stats = json.loads(f.read())
        with s3.open_input_stream("corpus/runs/r/mindrecord/_COMPLETE.json") as f:
            marker = json.loads(f.read())
        assert stats["stage"] == "mindrecord" and len(result.stdout.strip().splitlines()) >= 8
        check_shards(stats, marker, buckets, kept.num_rows, sum(kept.column("n_tokens").to_pylist()))
        assert kept.num_rows > 0
        expected = input_ids_digest(kept.column("input_ids").to_pylist())
        assert loader_digest("s3://corpus/runs/r/mindrecord", cache_dir=str(tmp_path / "cache"),
                             storage_options=options) == expected
        leftovers = [i.path for i in s3.get_file_info(pafs.FileSelector("corpus/runs/r")) if ".tmp-" in i.path]
        assert leftovers == []
