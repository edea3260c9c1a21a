"""Files written by Python tasks to any file-system URI Spark also writes to, with ``pyarrow.fs``:
plain paths and ``file://`` locally, ``s3://``/``s3a://`` with ``S3FileSystem``, and ``hdfs://``,
``gs://``, ``abfs://`` through ``FileSystem.from_uri`` (HDFS via libhdfs, which needs
``CLASSPATH=$(hadoop classpath --glob)`` and ``ARROW_LIBHDFS_DIR`` on the node).
"""
from __future__ import annotations

import os
import tempfile
from typing import Callable, Optional, Sequence, Tuple
from urllib.parse import unquote, urlsplit

import pyarrow.fs as pafs

from udfs.common.config import ConfigError

S3_SCHEMES = ("s3", "s3a", "s3n")
# Uploaded files are read by the next job, often as another user: a writer may leave 0600.
UPLOADED_MODE = 0o644


def s3_options_from_hadoop(get: Callable[[str], Optional[str]]) -> dict:
    """``S3FileSystem`` arguments from the S3A settings of a Hadoop configuration, so that one set of
    ``spark.hadoop.fs.s3a.*`` properties serves Spark's own writes and these uploads. Settings
    left out fall back to pyarrow's AWS environment (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``…)."""
    options = {}
    endpoint = get("fs.s3a.endpoint")
    if endpoint:
        scheme, _, host = endpoint.rpartition("://")
        options["endpoint_override"] = host
        ssl = (get("fs.s3a.connection.ssl.enabled") or "true").lower() != "false"
        options["scheme"] = scheme or ("https" if ssl else "http")
    for option, key in (("access_key", "fs.s3a.access.key"), ("secret_key", "fs.s3a.secret.key"),
                        ("region", "fs.s3a.endpoint.region")):
        if get(key):
            options[option] = get(key)
    return options


def file_system(uri: str, s3_options: Optional[dict] = None) -> Tuple[pafs.FileSystem, str]:
    """The pyarrow file system of ``uri`` and the path within it (``s3a://`` is S3 to pyarrow)."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme in ("", "file"):
        return pafs.LocalFileSystem(), unquote(parts.path) if scheme else uri
    if scheme in S3_SCHEMES:
        return pafs.S3FileSystem(**(s3_options or {})), f"{parts.netloc}{unquote(parts.path)}".rstrip("/")
    return pafs.FileSystem.from_uri(uri)


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
