"""A WARC file that cannot be read is not a corrupt one: the stage stops naming the file and the cause
(exit code 6); a corrupt file stays a counted corrupt_file error. And WARCs read from an S3-compatible
store that is not AWS, with the settings and credentials given only in the Spark config."""
import json
import os
import subprocess
import sys
from contextlib import ExitStack

import boto3
import pyarrow.parquet as pq
import pytest

from common.test_storage import QUICK, DroppingConnection
from conftest import ROOT
from s3_server import KEY, local_master, s3_server, spark_failure, spark_s3_conf
from corpusmill.storage import UnreadableInput, _RetryingReader
from udfs.extract.warc import ExtractConfig, WarcDocumentReader

SAMPLE = ROOT / "data" / "sample"
DOLMA = SAMPLE / "dolma-sample-0000.warc.gz"


def rows_of(opener, path=DOLMA):
    return list(WarcDocumentReader(ExtractConfig()).read(str(path), opener))


def test_a_file_that_cannot_be_opened_stops_the_reader_instead_of_a_corrupt_file_row(tmp_path):
    missing = tmp_path / "gone.warc.gz"
    with pytest.raises(UnreadableInput, match=rf"^{missing}: cannot be opened: FileNotFoundError"):
        rows_of(lambda: open(missing, "rb"), missing)


def test_a_dropped_connection_is_resumed_and_gives_the_same_rows():
    resumed = rows_of(lambda: _RetryingReader(str(DOLMA), DroppingConnection(DOLMA, after=50000, drops=2), QUICK))
    assert resumed == rows_of(lambda: open(DOLMA, "rb"))


def test_a_connection_lost_for_good_mid_file_is_unreadable_not_corrupt():
    """FastWARC takes the read error for the end of the file; the reader must not take the records
    before it for the whole file, nor call the file corrupt."""
    with pytest.raises(UnreadableInput, match="cannot be read after 3 attempts: .*Connection reset"):
        rows_of(lambda: _RetryingReader(str(DOLMA), DroppingConnection(DOLMA, after=50000, drops=99), QUICK))


def test_the_stage_stops_with_one_line_and_exit_code_6(spark, tmp_path, capsys):
    from jobs import config
    from jobs.cli import one_line_errors
    from jobs.stages.extract import ExtractStage

    missing = f"file://{tmp_path}/listed-then-deleted.warc.gz"

    def extract():
        stage = ExtractStage(spark, config.load())
        stage.transform(stage.load([str(SAMPLE / "jwarc-commoncrawl.warc.gz"), missing]), ExitStack()).rows.collect()
        return 0

    assert one_line_errors(extract) == 6
    err = capsys.readouterr().err.strip()  # Spark's progress bar may leave a line break before it
    assert err.startswith(f"corpusmill: an input file cannot be read: {missing}: cannot be opened: ")
    assert "\n" not in err


@pytest.mark.service  # a second Spark JVM, through the CLI, with the S3A connector
@pytest.mark.slow
def test_warcs_on_a_non_aws_store_with_credentials_only_in_the_spark_config(tmp_path):
    # A bucket of its own: moto's buckets outlive a server in the test process (others upload to "crawl").
    with s3_server("crawl-spark-conf") as endpoint:
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=KEY,
                          region_name="us-east-1")
        names = ["commoncrawl-whirlwind.warc.gz", "dolma-sample-0000.warc.gz"]
        for name in names:
            s3.upload_file(str(SAMPLE / name), "crawl-spark-conf", f"in/{name}")
        conf = tmp_path / "s3.yaml"
        conf.write_text(json.dumps({  # JSON is YAML
            "include": [str(ROOT / "conf" / "local.yaml")],
            "spark": {"master": local_master(1), "class_archive_dir": "",
                      "conf": {"spark.driver.memory": "1g", "spark.sql.shuffle.partitions": "2",
                               **spark_s3_conf(endpoint)}}}))
        no_aws_environment = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        result = subprocess.run([sys.executable, "-m", "jobs.cli", "run", "--config", str(conf), "--stages", "extract",
                                 "--input", "s3://crawl-spark-conf/in/", "--output", str(tmp_path / "out"), "--run", "r"],
                                cwd=ROOT, env=no_aws_environment, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, spark_failure(result.stderr)
    stage = tmp_path / "out" / "r" / "extract"
    stats = json.loads((stage / "_stats.json").read_text())
    assert "errors" not in stats or not stats["errors"], stats
    local = [r for name in names for r in rows_of(lambda n=name: open(SAMPLE / n, "rb"), SAMPLE / name)]
    kept = pq.read_table(stage / "kept", columns=["id", "text"]).to_pylist()
    assert stats["kept"] == len(kept) == sum(r["_outcome"] == "kept" for r in local) > 0
    assert sorted((r["id"], r["text"]) for r in kept) == sorted((r["id"], r["text"]) for r in local
                                                                if r["_outcome"] == "kept")
