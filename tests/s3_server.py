"""A real S3-compatible server on loopback for the tests (moto's standalone server, in memory), and
the S3A connector jars that let Spark itself read and write ``s3://`` there.

Maven Central is out of reach here, so the jars come from PyPI: ``sagemaker-pyspark`` 1.4.5 ships
``hadoop-aws-3.3.1.jar`` and ``aws-java-sdk-bundle-1.11.901.jar``. They are fetched once with
``pip download --no-deps`` (the package itself pins pyspark 3.3 and is never installed) into
``~/.cache/corpusmill/jars``. hadoop-aws 3.3.1 on pyspark's Hadoop 3.5.0 client is a mix Hadoop does
not support: it works for the pipeline's operations once the settings 3.5.0 writes as durations
("60s") are given in the plain numbers 3.3.1 parses, and the credential provider is named (3.5.0's
default names SDK v2 classes). A cluster uses the hadoop-aws of its own Hadoop instead.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Dict, Iterator, List

import boto3
from moto.server import ThreadedMotoServer

KEY = "corpusmill-test"  # moto accepts any key pair
JAR_CACHE = Path(os.environ.get("CORPUSMILL_JAR_CACHE") or Path.home() / ".cache" / "corpusmill" / "jars")
JAR_SOURCE = "sagemaker-pyspark==1.4.5"
# name -> sha256 of the jar as that sdist ships it
JARS = {"hadoop-aws-3.3.1.jar": "6be50ad8a8b445d2802381b085b2a3ede5c29d353450a6a21f16b2fefa962b6e",
        "aws-java-sdk-bundle-1.11.901.jar": "b87175b32a16544cc1b37cf40390eb375833e62bed67f8ce6cde4b7ad6429ead"}
# hadoop-aws 3.3.1 reads these as plain numbers (ms or s) where Hadoop 3.5.0's defaults say "60s".
S3A_NUMERIC_DEFAULTS = {
    "fs.s3a.connection.establish.timeout": "30000",
    "fs.s3a.connection.timeout": "200000",
    "fs.s3a.connection.ttl": "300000",
    "fs.s3a.threads.keepalivetime": "60",
    "fs.s3a.multipart.purge.age": "86400",
    "fs.s3a.assumed.role.session.duration": "1800",
}


@contextlib.contextmanager
def s3_server(bucket: str) -> Iterator[str]:
    """An in-memory S3 server on 127.0.0.1 with ``bucket`` created; yields its endpoint URL."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=KEY,
                     region_name="us-east-1").create_bucket(Bucket=bucket)
        yield endpoint
    finally:
        server.stop()


def storage_options(endpoint: str) -> dict:
    """pyarrow ``S3FileSystem`` arguments for the server."""
    scheme, host = endpoint.split("://")
    return {"endpoint_override": host, "scheme": scheme, "access_key": KEY, "secret_key": KEY,
            "region": "us-east-1"}


def s3a_jars() -> List[str]:
    """The S3A connector jars, fetched from PyPI on first use."""
    paths = [JAR_CACHE / name for name in JARS]
    if not all(p.exists() for p in paths):
        JAR_CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as download:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                            "-d", download, JAR_SOURCE], check=True, timeout=900)
            sdist = next(Path(download).glob("*.tar.gz"))
            with tarfile.open(sdist) as archive:
                for member in archive.getmembers():
                    name = member.name.rsplit("/", 1)[-1]
                    if name in JARS:
                        content = archive.extractfile(member).read()
                        if hashlib.sha256(content).hexdigest() != JARS[name]:
                            raise RuntimeError(f"{JAR_SOURCE}: {name} is not the jar these tests were checked with")
                        (JAR_CACHE / f"{name}.part").write_bytes(content)
                        os.replace(JAR_CACHE / f"{name}.part", JAR_CACHE / name)
    return [str(p) for p in paths]


def local_master(cores: int) -> str:
    """Local mode that runs a failed task a second time, as a cluster does (``spark.task.maxFailures``):
    under the suite's load the test server can drop a request that the S3A connector does not retry."""
    return f"local[{cores},2]"


def spark_failure(stderr: str, tail: int = 3000) -> str:
    """The executor's own report of the first failed task, then the end of ``stderr``: the driver says
    only ``UnknownReason`` when the exception's class lives in the S3A jars, which it cannot load."""
    lines = stderr.splitlines()
    first = next((i for i, line in enumerate(lines) if "Exception in task" in line), None)
    own = "\n".join(lines[first:first + 40]) + "\n...\n" if first is not None else ""
    return own + stderr[-tail:]


def spark_s3_conf(endpoint: str) -> Dict[str, str]:
    """Spark properties for ``s3://`` and ``s3a://`` on the server through the S3A connector."""
    hadoop = {
        "fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "fs.s3a.endpoint": endpoint,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.access.key": KEY,
        "fs.s3a.secret.key": KEY,
        "fs.s3a.endpoint.region": "us-east-1",
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        **S3A_NUMERIC_DEFAULTS,
    }
    return {"spark.jars": ",".join(s3a_jars()), **{f"spark.hadoop.{k}": v for k, v in hadoop.items()}}
