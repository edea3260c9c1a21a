"""Reading input files from any store: the bytes as stored, retries for transient failures, and a
file that cannot be read told apart from a corrupt one (``corpusmill.storage``)."""
import boto3
import pyarrow.fs as pafs
import pytest

from conftest import ROOT
from s3_server import KEY, s3_server, storage_options
from corpusmill.storage import Retry, UnreadableInput, _RetryingReader, error_raised, open_uri

WARC = ROOT / "data" / "sample" / "commoncrawl-whirlwind.warc.gz"
QUICK = Retry(retries=2, backoff_s=0.01)


def test_a_gz_file_on_s3_reads_as_its_stored_bytes():
    """pyarrow inflates a ``.gz`` by its name unless told not to: the WARC reader would meet plain
    text where it expects gzip members and call every file corrupt."""
    with s3_server("crawl") as endpoint:
        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=KEY,
                     region_name="us-east-1").upload_file(str(WARC), "crawl", "in/a.warc.gz")
        for uri in ("s3://crawl/in/a.warc.gz", "s3a://crawl/in/a.warc.gz"):
            with open_uri(uri, storage_options(endpoint)) as stream:
                assert stream.read() == WARC.read_bytes()


def test_a_file_gone_since_listing_is_unreadable_at_once_naming_file_and_cause(tmp_path):
    missing = tmp_path / "gone.warc.gz"
    with pytest.raises(UnreadableInput) as raised:
        open_uri(str(missing), retry=Retry(retries=3, backoff_s=30))  # not retried: no wait
    assert str(raised.value).startswith(f"{missing}: cannot be opened: ")
    assert "No such file" in str(raised.value) and "\n" not in str(raised.value)


def test_a_store_that_does_not_answer_is_retried_then_unreadable():
    options = {**storage_options("http://127.0.0.1:1"), "connect_timeout": 0.5, "request_timeout": 0.5,
               "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=1)}
    with pytest.raises(UnreadableInput, match=r"^s3://crawl/a\.warc\.gz: cannot be opened after 3 attempts: .*"
                                              r"Could not connect"):
        open_uri("s3://crawl/a.warc.gz", options, QUICK)


class DroppingConnection:
    """Opens the file for real; the first ``drops`` streams opened fail with a reset connection once
    the file's first ``after`` bytes have been read, as a store's connection does mid-transfer."""

    def __init__(self, path, after, drops):
        self.path, self.after, self.drops, self.opened = path, after, drops, []

    def __call__(self, offset):
        stream = open(self.path, "rb")
        stream.seek(offset)
        self.opened.append(offset)
        return stream if len(self.opened) > self.drops else DroppedStream(stream, self.after - offset)


class DroppedStream:
    def __init__(self, stream, left):
        self.stream, self.left, self.closed = stream, left, False

    def read(self, size=-1):
        if self.left <= 0:
            raise ConnectionResetError(104, "Connection reset by peer")
        data = self.stream.read(self.left if size is None or size < 0 else min(size, self.left))
        self.left -= len(data)
        return data

    def close(self):
        self.stream.close()


def read_all(reader, block=7000):
    parts = []
    while True:
        part = reader.read(block)
        if not part:
            return b"".join(parts)
        parts.append(part)


def test_a_connection_dropped_mid_file_resumes_at_the_same_offset():
    opener = DroppingConnection(WARC, after=10000, drops=2)
    assert read_all(_RetryingReader(str(WARC), opener, QUICK)) == WARC.read_bytes()
    assert opener.opened == [0, 10000, 10000]


def test_a_connection_that_keeps_dropping_is_unreadable_and_stays_so():
    """FastWARC takes a read error for the end of its input: the next read must meet it again."""
    reader = _RetryingReader(str(WARC), DroppingConnection(WARC, after=10000, drops=10), QUICK)
    with pytest.raises(UnreadableInput, match=rf"^{WARC}: cannot be read after 3 attempts: .*Connection reset"):
        read_all(reader)
    with pytest.raises(UnreadableInput):
        reader.read(10)


def test_error_raised_finds_a_task_error_in_sparks_text():
    worker_traceback = ("org.apache.spark.SparkException: Job aborted due to stage failure: ...\n"
                        "  File \"/work/jobs/stages/extract.py\", line 64, in extract_files\n"
                        "corpusmill.storage.UnreadableInput: s3://b/x.warc.gz: cannot be read after 5 attempts: "
                        "AWS Error NETWORK_CONNECTION\n\tat org.apache.spark.api.python.BasePythonRunner")
    assert error_raised(RuntimeError(worker_traceback), UnreadableInput) == \
        "s3://b/x.warc.gz: cannot be read after 5 attempts: AWS Error NETWORK_CONNECTION"
    assert error_raised(UnreadableInput("f: gone"), UnreadableInput) == "f: gone"
    assert error_raised(RuntimeError("UnreadableInput: elsewhere"), UnreadableInput) is None


def test_stats_and_markers_are_strict_json(spark, tmp_path):
    """``_stats.json`` and the markers go through ``write_json``: a NaN there (a mean over nothing)
    would make the file unreadable to strict JSON readers."""
    import json

    from jobs.fs import HadoopFS

    HadoopFS(spark).write_json(f"file://{tmp_path}/_stats.json", {"mean": float("nan"), "by": {"x": [float("inf"), 1.5]}})

    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")
    assert json.loads((tmp_path / "_stats.json").read_text(), parse_constant=refuse) == \
        {"mean": None, "by": {"x": [None, 1.5]}}
