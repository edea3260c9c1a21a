"""URIs to file systems, for every reader and writer outside the JVM: the extract stage's WARC input,
the files tasks upload to ``--output``, and the loader's downloads. Plain paths and ``file://`` are
local; ``s3://``/``s3a://``/``s3n://`` are ``S3FileSystem`` with the session's S3A settings
(``s3_options_from_hadoop``), so input and output reach the same store the same way Spark does;
``hdfs://``, ``gs://`` and ``abfs://`` go through ``FileSystem.from_uri`` (HDFS via libhdfs, which needs
``CLASSPATH=$(hadoop classpath --glob)`` and ``ARROW_LIBHDFS_DIR`` on the node).
"""
from __future__ import annotations

import os
import tempfile
from typing import BinaryIO, Callable, Optional, Sequence, Tuple
from urllib.parse import unquote, urlsplit

import pyarrow.fs as pafs

from corpusmill.config import ConfigError

S3_SCHEMES = ("s3", "s3a", "s3n")
# Uploaded files are read by the next job, often as another user: a writer may leave 0600.
UPLOADED_MODE = 0o644
# The AWS environment's endpoint, which pyarrow reads like an ``endpoint_override``.
ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")
ANONYMOUS_PROVIDER = "AnonymousAWSCredentialsProvider"


def s3_options_from_hadoop(get: Callable[[str], Optional[str]]) -> dict:
    """``S3FileSystem`` arguments from the S3A settings of a Hadoop configuration, so that one set of
    ``spark.hadoop.fs.s3a.*`` properties serves Spark's own reads and writes and pyarrow's. Settings
    left out fall back to pyarrow's AWS environment (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``…)."""
    options = {}
    endpoint = get("fs.s3a.endpoint")
    if endpoint:
        scheme, _, host = endpoint.rpartition("://")
        options["endpoint_override"] = host
        ssl = (get("fs.s3a.connection.ssl.enabled") or "true").lower() != "false"
        options["scheme"] = scheme or ("https" if ssl else "http")
    for option, key in (("access_key", "fs.s3a.access.key"), ("secret_key", "fs.s3a.secret.key"),
                        ("session_token", "fs.s3a.session.token"), ("region", "fs.s3a.endpoint.region")):
        if get(key):
            options[option] = get(key)
    if ANONYMOUS_PROVIDER in (get("fs.s3a.aws.credentials.provider") or ""):
        options["anonymous"] = True
    return options


def _s3_file_system(bucket: str, s3_options: Optional[dict]) -> pafs.S3FileSystem:
    """S3 with ``s3_options``. On AWS itself (no endpoint given anywhere) a bucket's region, when not
    set, is looked up, as S3A and ``FileSystem.from_uri`` do: a bucket in another region than the
    AWS environment's default is then read and written all the same."""
    options = dict(s3_options or {})
    if ("region" not in options and "endpoint_override" not in options and bucket
            and not any(os.environ.get(v) for v in ENDPOINT_VARIABLES)):
        try:
            options["region"] = pafs.resolve_s3_region(bucket)
        except (OSError, ValueError):  # no route to AWS's global endpoint: the AWS environment decides
            pass
    return pafs.S3FileSystem(**options)


def file_system(uri: str, s3_options: Optional[dict] = None) -> Tuple[pafs.FileSystem, str]:
    """The pyarrow file system of ``uri`` and the path within it (``s3a://`` is S3 to pyarrow)."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme in ("", "file"):
        return pafs.LocalFileSystem(), unquote(parts.path) if scheme else uri
    if scheme in S3_SCHEMES:
        return _s3_file_system(parts.netloc, s3_options), f"{parts.netloc}{unquote(parts.path)}".rstrip("/")
    return pafs.FileSystem.from_uri(uri)


def open_uri(uri: str, s3_options: Optional[dict] = None) -> BinaryIO:
    """A streaming binary reader of the file at ``uri`` (a local file is opened directly)."""
    parts = urlsplit(uri)
    if parts.scheme.lower() in ("", "file"):
        return open(unquote(parts.path) if parts.scheme else uri, "rb")
    fs, path = file_system(uri, s3_options)
    return fs.open_input_stream(path)


def check_reachable(uri: str, s3_options: Optional[dict], writer: str) -> None:
    """Fail on the driver, in one line, when pyarrow cannot open ``uri``'s file system, before any task
    writes a file (an HDFS node without libhdfs would otherwise fail every task the same way).
    ``writer`` names who writes there, e.g. "the pack stage writes its sequences"."""
    try:
        file_system(uri, s3_options)
    except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError
        reason = str(exc).strip().splitlines()[0]
        raise ConfigError(f"--output: {writer} with pyarrow.fs, which cannot open "
                          f"{uri} ({reason}); hdfs:// needs JAVA_HOME, libhdfs (ARROW_LIBHDFS_DIR) and "
                          f"CLASSPATH=$(hadoop classpath --glob) on every node") from None


def upload_files(local_files: Sequence[str], folder_uri: str, s3_options: Optional[dict] = None) -> None:
    """Copy local files into ``folder_uri`` under their own names; local copies get ``UPLOADED_MODE``."""
    fs, folder = file_system(folder_uri, s3_options)
    if fs.type_name in ("local", "hdfs"):  # object stores have no folders to create
        fs.create_dir(folder, recursive=True)
    for path in local_files:
        target = f"{folder.rstrip('/')}/{os.path.basename(path)}"
        pafs.copy_files(path, target, source_filesystem=pafs.LocalFileSystem(), destination_filesystem=fs)
        if fs.type_name == "local":
            os.chmod(target, UPLOADED_MODE)


def is_remote(uri: str) -> bool:
    return urlsplit(str(uri)).scheme.lower() not in ("", "file")


def scratch_root(configured: str = "") -> str:
    """Where a task writes a file before uploading it: ``configured``, else Spark's first local dir
    for Python workers (YARN's container dirs on a cluster), else the temp dir."""
    return configured or os.environ.get("SPARK_LOCAL_DIRS", "").split(",")[0] or tempfile.gettempdir()
