"""Local copies of the MindRecord shards of a finished ``mindrecord`` stage, for a training job: the
shards its completion marker and ``manifest.json`` name, each checked against the marker (its size
and content checksum: ``corpusmill.run_folder.file_problem``), remote ones downloaded into a cache
once per node.
"""
from __future__ import annotations

import hashlib
import os
import stat
from typing import Dict, List, Optional, Sequence

import pyarrow.fs as pafs

from corpusmill.run_folder import MARKER, checksum_of_stream, file_problem
from corpusmill.storage import UPLOADED_MODE, file_system, is_remote
from udfs.mindrecord.manifest import read_manifest, stage_marker


def marker_shards(stage_uri: str, files: Dict[str, int]) -> List[str]:
    """The MindRecord shards a completion marker names (directly in the stage's folder), sorted."""
    names = sorted(n for n in files if "/" not in n and n.endswith(".mindrecord"))
    if not names:
        raise FileNotFoundError(f"no *.mindrecord files in {stage_uri}")
    return names


def _check_content(stage_uri: str, marker: dict, name: str, path: str) -> None:
    """Refuse, in one line naming the shard, a local copy ``path`` of the stage's file ``name`` whose
    size or content is not what the stage's marker says."""
    def checksum_of(_: str) -> str:
        with open(path, "rb") as f:
            return checksum_of_stream(f)

    problem = file_problem(marker, name, os.path.getsize(path), checksum_of)
    if problem is not None:
        raise OSError(f"{stage_uri}: {problem}; re-run the mindrecord stage")


def _check_listed(stage_uri: str, files: Dict[str, int], names: Sequence[str]) -> None:
    for name in names:
        if name not in files or f"{name}.db" not in files:
            raise FileNotFoundError(f"{stage_uri}/{name}: not among the files of its {MARKER} (the stage was "
                                    f"re-run or changed since the manifest listing it was written)")


def download_shards(stage_uri: str, cache_dir: str, s3_options: Optional[dict] = None,
                    shards: Optional[Sequence[str]] = None) -> List[str]:
    """Local copies of the MindRecord shards of a finished ``mindrecord`` stage at ``stage_uri``: the
    ``shards`` named (each must be in the marker), by default every one its marker names.

    The stage's completion marker names the files with their sizes and checksums; a stage without
    one is not finished and is refused, and so is a copy whose size or checksum differs. Copies go
    to ``<cache_dir>/<key>/``, the key a hash of the URI and the marker, so a re-run stage is fetched
    anew and a finished download is reused; each file lands under a temporary name first, so ranks
    sharing a cache never read half a file.
    """
    fs, folder = file_system(stage_uri, s3_options)
    folder = folder.rstrip("/")
    marker_bytes, marker = stage_marker(stage_uri, s3_options)
    files = marker["files"]
    shards = marker_shards(stage_uri, files) if shards is None else list(shards)
    _check_listed(stage_uri, files, shards)
    key = hashlib.sha256(stage_uri.encode("utf-8") + marker_bytes).hexdigest()[:16]
    local = os.path.join(cache_dir, key)
    os.makedirs(local, exist_ok=True)
    for name in sorted(set(shards) | {f"{n}.db" for n in shards}):
        target = os.path.join(local, name)
        if os.path.exists(target) and os.path.getsize(target) == files[name]:
            continue
        partial = f"{target}.part-{os.getpid()}"
        pafs.copy_files(f"{folder}/{name}", partial, source_filesystem=fs,
                        destination_filesystem=pafs.LocalFileSystem())
        try:
            _check_content(stage_uri, marker, name, partial)
        except OSError:
            os.remove(partial)
            raise
        os.chmod(partial, UPLOADED_MODE)
        os.replace(partial, target)
    return [os.path.join(local, n) for n in shards]


def local_shards(stage_uri: str, shards: Optional[Sequence[str]] = None) -> List[str]:
    """The paths of the MindRecord shards of a finished local stage (a folder or a ``file:`` URI): the
    ``shards`` named, by default every one its completion marker names; each must be a regular file of
    the size and content the marker gives, so a stray, half-copied or changed shard is never read."""
    _, marker = stage_marker(stage_uri)
    files = marker["files"]
    shards = marker_shards(stage_uri, files) if shards is None else list(shards)
    _check_listed(stage_uri, files, shards)
    folder = file_system(stage_uri)[1].rstrip("/")
    paths = []
    for name in shards:
        path = os.path.join(folder, name)
        for file in (path, f"{path}.db"):
            try:
                info = os.stat(file)
            except OSError as exc:
                raise FileNotFoundError(f"{file}: {exc.strerror}; the stage's {MARKER} names it") from None
            if not stat.S_ISREG(info.st_mode) or info.st_size != files[os.path.basename(file)]:
                raise OSError(f"{file}: not the regular file of {files[os.path.basename(file)]:,} bytes its "
                              f"{MARKER} names")
            _check_content(stage_uri, marker, os.path.basename(file), file)
        paths.append(path)
    return paths


def stage_shard_files(stage_uri: str, cache_dir: str, s3_options: Optional[dict] = None) -> List[str]:
    """Local MindRecord files of a finished ``mindrecord`` stage, and of the earlier stages its
    ``manifest.json`` lists (earliest first): for each stage the shards the manifest names, each
    checked against that stage's completion marker; remote stages are downloaded into ``cache_dir``.
    Everything read is validated (``read_manifest``, ``stage_marker``); a fault is a one-line error."""
    stages = read_manifest(stage_uri, s3_options)
    if stages is None:
        return (download_shards(stage_uri, cache_dir, s3_options) if is_remote(stage_uri)
                else local_shards(stage_uri))
    found = []
    for entry in stages:
        names = [s["file"] for s in entry["shards"]]
        found += (download_shards(entry["stage"], cache_dir, s3_options, names) if is_remote(entry["stage"])
                  else local_shards(entry["stage"], names))
    return found
