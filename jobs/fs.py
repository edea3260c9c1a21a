"""File-system operations on any Hadoop-compatible URI (local, HDFS, S3A, ABFS…) via Spark's JVM.

Stage directories live wherever the user points ``--output``; going through Hadoop's FileSystem
keeps renames, deletes and the small JSON side files working the same on a laptop and on YARN.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import os
from typing import Dict, Iterable, List, Optional
from urllib.parse import urlsplit

from pyspark.sql import SparkSession


def _local_path(uri: str) -> Optional[str]:
    """The path of a ``file:`` URI, which Python reads without a round trip per call to the JVM (a
    path without a scheme may be HDFS: the cluster's default file system decides)."""
    parts = urlsplit(uri)
    return parts.path if parts.scheme == "file" and parts.netloc in ("", "localhost") else None


def _write_local(path: str, text: str) -> None:
    """``text`` into the local file ``path`` (folders made as needed), as Hadoop's local file system
    would write it, less the checksum file: one it left there for an earlier version would no longer
    match, so it goes."""
    folder, name = os.path.split(path)
    os.makedirs(folder, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(folder, f".{name}.crc"))
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


class HadoopFS:
    def __init__(self, spark: SparkSession):
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _path(self, uri: str):
        return self._jvm.org.apache.hadoop.fs.Path(uri)

    def _fs(self, uri: str):
        return self._path(uri).getFileSystem(self._conf)

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

    def write_text(self, uri: str, text: str) -> None:
        local = _local_path(uri)
        if local is not None:  # a round trip per call, and the text as base64, cost a JVM round trip per file
            _write_local(local, text)
            return
        out = self._fs(uri).create(self._path(uri), True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()

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
        self.write_text(uri, json.dumps(obj, indent=2, sort_keys=True, default=str))

    def read_json(self, uri: str):
        return json.loads(self.read_text(uri))
