"""File-system operations on any Hadoop-compatible URI (local, HDFS, S3A, ABFS…) via Spark's JVM.

Stage directories live wherever the user points ``--output``; going through Hadoop's FileSystem
keeps renames, deletes and the small JSON side files working the same on a laptop and on YARN.
"""
from __future__ import annotations

import contextlib
import errno
import itertools
import json
import math
import os
import uuid
from typing import Dict, Iterable, List, Optional
from urllib.parse import urlsplit

from pyspark.sql import SparkSession

from corpusmill.run_folder import CHECKSUM_BLOCK, checksum_of_stream
from corpusmill.storage import UnreadableInput, error_raised, s3_options_from_hadoop

# Stores whose single PUT is atomic (an object is seen whole or not at all) and whose rename is a copy:
# a small file is written in place there, not renamed.
OBJECT_STORES = ("s3", "s3a", "s3n", "gs", "abfs", "abfss", "wasb", "wasbs", "oss", "cos", "cosn", "obs")


class StorageError(Exception):
    """The output's file system refused a write (no space left, no permission, quota): one line that
    names the path, not a Java trace."""


# What the JVM's and the OS's messages say for the failures an operator fixes outside corpusmill.
_STORAGE_FAILURES = (("No space left on device", "no space left on device"),
                     ("Disk quota exceeded", "disk quota exceeded"),
                     ("DSQuotaExceededException", "HDFS space quota exceeded"),
                     ("NSQuotaExceededException", "HDFS name quota exceeded"),
                     ("Permission denied", "permission denied"),
                     ("AccessControlException", "permission denied"),
                     ("AccessDenied", "access denied"),
                     ("Read-only file system", "read-only file system"))


def storage_error(exc: BaseException, path: str) -> Optional[StorageError]:
    """``exc`` as a one-line StorageError naming ``path`` when it is an out-of-space, quota or
    permission failure (however deep Spark wrapped it); None for any other failure."""
    if error_raised(exc, UnreadableInput) is not None:  # the input's store refused a read, not the output's a write
        return None
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS):
        return StorageError(f"{os.strerror(exc.errno).lower()} while writing {path}")
    text = str(getattr(exc, "java_exception", "") or "") + str(exc)
    for needle, reason in _STORAGE_FAILURES:
        if needle in text:
            return StorageError(f"{reason} while writing {path}")
    return None


def _local_path(uri: str) -> Optional[str]:
    """The path of a ``file:`` URI, which Python reads without a round trip per call to the JVM (a
    path without a scheme may be HDFS: the cluster's default file system decides)."""
    parts = urlsplit(uri)
    return parts.path if parts.scheme == "file" and parts.netloc in ("", "localhost") else None


def _write_local(path: str, text: str) -> None:
    """``text`` into the local file ``path`` (folders made as needed), whole or not at all: written to
    a temporary name, synced and renamed over ``path``, so a full disk or a crash never leaves a cut
    file under the real name. Hadoop's checksum file for an earlier version would no longer match, so
    it goes."""
    folder, name = os.path.split(path)
    os.makedirs(folder, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(folder, f".{name}.crc"))
    tmp = os.path.join(folder, f".{name}.tmp-{uuid.uuid4().hex[:12]}")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def strict_json(obj):
    """``obj`` with every NaN and infinity as null: they are not JSON, and strict readers (jq,
    JavaScript, Go, Spark's own) refuse the whole file."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {key: strict_json(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(value) for value in obj]
    return obj


class HadoopFS:
    def __init__(self, spark: SparkSession):
        self._jvm = spark.sparkContext._jvm
        self._gateway = spark.sparkContext._gateway
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _path(self, uri: str):
        return self._jvm.org.apache.hadoop.fs.Path(uri)

    def _fs(self, uri: str):
        return self._path(uri).getFileSystem(self._conf)

    def s3_options(self) -> dict:
        """pyarrow's ``S3FileSystem`` arguments from this session's S3A settings."""
        return s3_options_from_hadoop(self._conf.get)

    def qualify(self, uri: str) -> str:
        """Absolute, scheme-qualified form of ``uri`` (``/x`` → ``file:/x`` locally)."""
        path = self._path(uri)
        return str(path.getFileSystem(self._conf).makeQualified(path).toString())

    def exists(self, uri: str) -> bool:
        return bool(self._fs(uri).exists(self._path(uri)))

    def delete(self, uri: str) -> None:
        if self.exists(uri):
            self._fs(uri).delete(self._path(uri), True)

    def mkdirs(self, uri: str) -> None:
        self._fs(uri).mkdirs(self._path(uri))

    def is_dir(self, uri: str) -> bool:
        return self.exists(uri) and bool(self._fs(uri).getFileStatus(self._path(uri)).isDirectory())

    def rename(self, src: str, dst: str) -> None:
        if not self._fs(src).rename(self._path(src), self._path(dst)):
            raise OSError(f"rename failed: {src} -> {dst}")

    def list_dir(self, uri: str) -> List[str]:
        if not self.exists(uri):
            return []
        return [str(st.getPath().toString()) for st in self._fs(uri).listStatus(self._path(uri))]

    def list_files(self, uri: str) -> Dict[str, int]:
        """Every file under ``uri``, recursively: path relative to ``uri`` -> size in bytes."""
        if not self.exists(uri):
            return {}
        root = self.qualify(uri).rstrip("/") + "/"
        files = {}
        it = self._fs(uri).listFiles(self._path(uri), True)
        while it.hasNext():
            status = it.next()
            files[str(status.getPath().toString())[len(root):]] = int(status.getLen())
        return files

    def glob_files(self, patterns: Iterable[str]) -> List[str]:
        """Expand files, globs and folders (recursively) into a sorted list of file URIs."""
        found = []
        for pattern in patterns:
            statuses = self._fs(pattern).globStatus(self._path(pattern)) or []
            for st in statuses:
                if st.isDirectory():
                    it = self._fs(pattern).listFiles(st.getPath(), True)
                    while it.hasNext():
                        found.append(str(it.next().getPath().toString()))
                else:
                    found.append(str(st.getPath().toString()))
        names = [f for f in found if not f.rsplit("/", 1)[-1].startswith((".", "_"))]
        return sorted(set(names))

    def modified_at(self, uri: str) -> float:
        """The file's modification time (seconds since the epoch, the file system's clock)."""
        return self._fs(uri).getFileStatus(self._path(uri)).getModificationTime() / 1000

    def write_text(self, uri: str, text: str) -> None:
        """Write a small side file whole or not at all (markers, stats, leases): readers never see a
        cut or empty file under ``uri``. Out of space or permission is a one-line StorageError."""
        try:
            local = _local_path(uri)
            if local is not None:  # a round trip per call, and the text as base64, cost a JVM round trip per file
                _write_local(local, text)
            elif urlsplit(uri).scheme in OBJECT_STORES:
                self._create(uri, text)  # one PUT, seen whole or not at all
            else:
                self._replace(uri, text)
        except Exception as exc:  # noqa: BLE001 — an out-of-space or permission failure as one line
            refused = storage_error(exc, uri)
            if refused is None:
                raise
            raise refused from None

    def _create(self, uri: str, text: str) -> None:
        out = self._fs(uri).create(self._path(uri), True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()

    def _replace(self, uri: str, text: str) -> None:
        """Write beside ``uri`` and rename over it in one step (HDFS and other file systems whose
        rename is atomic; FileSystem.rename would refuse an existing target)."""
        folder, name = uri.rstrip("/").rsplit("/", 1)
        tmp = f"{folder}/.{name}.tmp-{uuid.uuid4().hex[:12]}"
        try:
            self._create(tmp, text)
            jvm = self._jvm
            options = self._gateway.new_array(jvm.org.apache.hadoop.fs.Options.Rename, 1)
            options[0] = jvm.org.apache.hadoop.fs.Options.Rename.OVERWRITE
            jvm.org.apache.hadoop.fs.FileContext.getFileContext(self._path(uri).toUri(), self._conf) \
                .rename(self._path(tmp), self._path(uri), options)
        except BaseException:
            with contextlib.suppress(Exception):
                self._fs(tmp).delete(self._path(tmp), False)
            raise

    def read_text(self, uri: str) -> str:
        """A small side file's text (UTF-8), in one call to the JVM rather than one per line."""
        local = _local_path(uri)
        if local is not None:
            with open(local, encoding="utf-8", errors="replace", newline="") as f:
                return f.read()
        stream = self._fs(uri).open(self._path(uri))
        try:
            data = bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()
        return data.decode("utf-8", "replace")

    def checksum(self, uri: str) -> str:
        """The file's content checksum (``corpusmill.run_folder.CHECKSUM``), read once, a block at a time."""
        local = _local_path(uri)
        if local is not None:
            with open(local, "rb") as f:
                return checksum_of_stream(f)
        stream = self._fs(uri).open(self._path(uri))
        try:
            return checksum_of_stream(_JavaReader(self._jvm, stream), CHECKSUM_BLOCK)
        finally:
            stream.close()

    def read_lines(self, uri: str, limit: int) -> List[str]:
        """The first ``limit`` lines of a text file (UTF-8), without reading the rest."""
        local = _local_path(uri)
        if local is not None:
            with open(local, encoding="utf-8", errors="replace") as f:
                return [line.rstrip("\n") for line in itertools.islice(f, limit)]
        stream = self._fs(uri).open(self._path(uri))
        try:
            reader = self._jvm.java.io.BufferedReader(self._jvm.java.io.InputStreamReader(stream, "UTF-8"))
            lines = []
            while len(lines) < limit:
                line = reader.readLine()
                if line is None:
                    break
                lines.append(line)
            return lines
        finally:
            stream.close()

    def write_json(self, uri: str, obj) -> None:
        self.write_text(uri, json.dumps(strict_json(obj), indent=2, sort_keys=True, default=str, allow_nan=False))

    def read_json(self, uri: str):
        return json.loads(self.read_text(uri))


class _JavaReader:
    """A Hadoop input stream read from Python a block per call to the JVM."""

    def __init__(self, jvm, stream):
        self._jvm, self._stream = jvm, stream

    def read(self, size: int) -> bytes:
        buffer = self._jvm.java.io.ByteArrayOutputStream()
        self._jvm.org.apache.commons.io.IOUtils.copyLarge(self._stream, buffer, 0, size)
        return bytes(buffer.toByteArray())
