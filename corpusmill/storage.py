"""URIs to file systems, for every reader and writer outside the JVM: the extract stage's WARC input,
the files tasks upload to ``--output``, and the loader's downloads. Plain paths and ``file://`` are
local; ``s3://``/``s3a://``/``s3n://`` are ``S3FileSystem`` with the session's S3A settings
(``s3_options_from_hadoop``), so input and output reach the same store the same way Spark does;
``hdfs://``, ``gs://`` and ``abfs://`` go through ``FileSystem.from_uri`` (HDFS via libhdfs, which needs
``CLASSPATH=$(hadoop classpath --glob)`` and ``ARROW_LIBHDFS_DIR`` on the node).
"""
from __future__ import annotations

import os
import random
import re
import tempfile
import time
from dataclasses import dataclass
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


class UnreadableInput(Exception):
    """A file that cannot be read (network, credentials, permission, gone since it was listed), as
    against a corrupt one: one line naming the file and the cause."""


# Failures no retry mends: the file is not there, or these credentials may not read it.
PERMANENT_ERRORS = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)
PERMANENT_S3_ERRORS = ("ACCESS_DENIED", "INVALID_ACCESS_KEY_ID", "SIGNATURE_DOES_NOT_MATCH", "NO_SUCH_BUCKET")


@dataclass(frozen=True)
class Retry:
    """How often a read that failed for a transient reason (network, throttling) is tried again, and
    the first wait: each wait doubles, with up to a quarter more at random so tasks do not retry in step."""
    retries: int
    backoff_s: float

    def wait(self, attempt: int) -> None:
        time.sleep(self.backoff_s * 2 ** attempt * (1 + random.random() / 4))


NO_RETRY = Retry(0, 0.0)


def _is_permanent(exc: OSError) -> bool:
    return isinstance(exc, PERMANENT_ERRORS) or any(code in str(exc) for code in PERMANENT_S3_ERRORS)


def _cause(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


class _RetryingReader:
    """A binary reader of one file that opens it again at the same offset when a read fails for a
    transient reason, and raises ``UnreadableInput`` once the retries are spent or the failure is
    permanent. The failure stays: a caller that swallows it (FastWARC takes a read error for the end
    of its input) meets it again at its next read."""

    def __init__(self, uri: str, open_at: Callable[[int], BinaryIO], retry: Retry):
        self.uri, self.open_at, self.retry = uri, open_at, retry
        self.position = 0
        self.stream: Optional[BinaryIO] = None
        self.failure: Optional[UnreadableInput] = None
        self._attempt(self._open, "opened")

    def _open(self) -> BinaryIO:
        if self.stream is None:
            self.stream = self.open_at(self.position)
        return self.stream

    def _attempt(self, operation: Callable[[], bytes], doing: str):
        if self.failure is not None:
            raise self.failure
        for attempt in range(self.retry.retries + 1):
            try:
                return operation()
            except OSError as exc:
                if _is_permanent(exc) or attempt == self.retry.retries:
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    self.failure = UnreadableInput(f"{self.uri}: cannot be {doing}{tries}: {_cause(exc)}")
                    raise self.failure from None
                self._drop_stream()
            self.retry.wait(attempt)

    def _drop_stream(self) -> None:
        stream, self.stream = self.stream, None
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass

    def read(self, size: Optional[int] = -1) -> bytes:
        whole = size is None or size < 0  # pyarrow's readers take None, not -1, for the rest of the file
        data = self._attempt(lambda: self._open().read(None if whole else size), "read")
        self.position += len(data)
        return data

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    @property
    def closed(self) -> bool:
        return self.stream is None

    def close(self) -> None:
        self._drop_stream()

    def __enter__(self) -> "_RetryingReader":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def open_uri(uri: str, s3_options: Optional[dict] = None, retry: Retry = NO_RETRY) -> BinaryIO:
    """A streaming binary reader of the file at ``uri``, its bytes as stored: pyarrow would inflate a
    ``.gz`` file by its name. A file that cannot be read raises ``UnreadableInput`` (after ``retry``'s
    attempts for transient failures)."""
    parts = urlsplit(uri)
    if parts.scheme.lower() in ("", "file"):
        local = unquote(parts.path) if parts.scheme else uri

        def open_at(offset: int) -> BinaryIO:
            stream = open(local, "rb")
            stream.seek(offset)
            return stream
    else:
        fs, path = file_system(uri, s3_options)

        def open_at(offset: int) -> BinaryIO:
            if not offset:
                return fs.open_input_stream(path, compression=None)
            stream = fs.open_input_file(path)
            stream.seek(offset)
            return stream
    return _RetryingReader(uri, open_at, retry)


def error_raised(exc: BaseException, error_type: type) -> Optional[str]:
    """The message of ``error_type`` when ``exc`` is one, or when a Spark task raised one (the driver
    then holds the worker's traceback as text, ending in ``module.Name: message``); else None."""
    if isinstance(exc, error_type):
        return str(exc)
    text = f"{getattr(exc, 'java_exception', '') or ''}\n{exc}"
    found = re.search(rf"{re.escape(error_type.__module__)}\.{re.escape(error_type.__qualname__)}: ([^\n]*)", text)
    return found.group(1).strip() if found else None


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
