"""The mindrecord stage's per-record logic: its config, the MindRecord schemas, Arrow → records, the
plan that evens out rows per shard, and shard files to and from any file-system URI.

Shards move with ``pyarrow.fs``: plain paths and ``file://`` locally, ``s3://``/``s3a://`` with
``S3FileSystem``, and ``hdfs://``, ``gs://``, ``abfs://`` through ``FileSystem.from_uri`` (HDFS via
libhdfs, which needs ``CLASSPATH=$(hadoop classpath --glob)`` and ``ARROW_LIBHDFS_DIR`` on the node).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple
from urllib.parse import unquote, urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from udfs.common.config import ConfigError

DOCUMENT_SCHEMA = {
    "id": {"type": "string"},
    "url": {"type": "string"},
    "text": {"type": "string"},
    "domain": {"type": "string"},
    "quality_score": {"type": "float32"},
}
SEQUENCE_FIELDS = ("input_ids", "segment_ids", "loss_mask")
MODES = ("auto", "sequences", "documents")
# MindRecord fields cannot be null: a document not scored yet gets this score, no domain gets "".
MISSING_SCORE = -1.0
# mix names the copies of a document (its repeats) ``<id>#<epoch>``; pack keeps the name per piece.
COPY_SUFFIX = "#[0-9]+$"


@dataclass(frozen=True)
class MindRecordConfig:
    # FileWriter pads each file to header + pages; the defaults (64 MB pages) waste space on small data.
    header_size_kb: int = 256
    page_size_kb: int = 4096
    # sequences (packed, from pack), documents (from mix) or auto (sequences when the input has them).
    mode: str = "auto"
    # Local folder on each executor where FileWriter writes a shard before it is uploaded to --output;
    # "" = Spark's local dirs (SPARK_LOCAL_DIRS, YARN's container dirs on a cluster), else the temp dir.
    scratch_dir: str = ""
    # Finished mindrecord stages of earlier runs (URIs) that this run's manifest.json lists with its own
    # shards, so training reads old and new together; each one's own earlier stages come along.
    earlier: List[str] = field(default_factory=list)

    def validate(self, prefix: str) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"{prefix}.mode: must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not 16 <= self.header_size_kb <= 131072:
            raise ConfigError(f"{prefix}.header_size_kb: must be within 16..131072")
        if not 32 <= self.page_size_kb <= 262144:
            raise ConfigError(f"{prefix}.page_size_kb: must be within 32..262144")


def shard_name(bucket: int) -> str:
    return f"shard-{bucket:05d}.mindrecord"


def sequence_schema(seq_len: int) -> dict:
    return {"id": {"type": "string"},
            **{name: {"type": "int32", "shape": [seq_len]} for name in SEQUENCE_FIELDS}}


def mindrecord_rows(batch: pa.RecordBatch, schema: dict) -> List[dict]:
    """The rows of an Arrow batch as FileWriter records: fixed-shape fields as int32 numpy arrays."""
    columns = []
    for name, spec in schema.items():
        column = batch.column(name)
        if "shape" in spec:  # one flat buffer reshaped, instead of a Python list per row
            values = column.flatten().to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
            columns.append(list(values.reshape(len(batch), *spec["shape"])))
        else:
            columns.append(column.to_pylist())
    return [dict(zip(schema, values)) for values in zip(*columns)]


# Shard files are read by the training job, often as another user: FileWriter leaves 0600.
SHARD_MODE = 0o644
MARKER = "_COMPLETE.json"  # the runner's completion marker (jobs/stage.py), which names every file
STATS = "_stats.json"
# The shards training reads as one dataset: this stage's ("." ) and those of earlier runs' stages.
MANIFEST = "manifest.json"
S3_SCHEMES = ("s3", "s3a", "s3n")


def balance_plan(rows_per_bucket: Dict[int, int], buckets: int) -> List[Tuple[int, int, int, int]]:
    """Moves that leave every shard with ``total // buckets`` or one more rows.

    Returns ``(bucket, start, stop, shard)``: the rows of ``bucket`` numbered ``start..stop-1`` (in
    any fixed order within the bucket) go to ``shard``; every other row stays in its bucket's shard.
    The larger buckets keep the one extra row, so as few rows as possible move.
    """
    counts = [rows_per_bucket.get(b, 0) for b in range(buckets)]
    base, extra = divmod(sum(counts), buckets)
    fullest = sorted(range(buckets), key=lambda b: (-counts[b], b))
    target = [base] * buckets
    for b in fullest[:extra]:
        target[b] += 1
    surplus = [(b, target[b], counts[b]) for b in range(buckets) if counts[b] > target[b]]
    deficits = [(b, target[b] - counts[b]) for b in range(buckets) if counts[b] < target[b]]
    moves = []
    for shard, need in deficits:
        while need:
            bucket, start, stop = surplus[0]
            take = min(need, stop - start)
            moves.append((bucket, start, start + take, shard))
            need -= take
            surplus[0] = (bucket, start + take, stop)
            if start + take == stop:
                surplus.pop(0)
    return moves


def s3_options_from_hadoop(get: Callable[[str], Optional[str]]) -> dict:
    """``S3FileSystem`` arguments from the S3A settings of a Hadoop configuration, so that one set of
    ``spark.hadoop.fs.s3a.*`` properties serves Spark's own writes and the shard uploads. Settings
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


def check_reachable(uri: str, s3_options: Optional[dict] = None) -> None:
    """Fail on the driver, in one line, when pyarrow cannot open ``uri``'s file system, before any task
    writes a shard (an HDFS node without libhdfs would otherwise fail every task the same way)."""
    try:
        file_system(uri, s3_options)
    except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError
        reason = str(exc).strip().splitlines()[0]
        raise ConfigError(f"--output: the mindrecord stage uploads its shards with pyarrow.fs, which cannot open "
                          f"{uri} ({reason}); hdfs:// needs JAVA_HOME, libhdfs (ARROW_LIBHDFS_DIR) and "
                          f"CLASSPATH=$(hadoop classpath --glob) on every node") from None


def upload_files(local_files: Sequence[str], folder_uri: str, s3_options: Optional[dict] = None) -> None:
    """Copy local files into ``folder_uri`` under their own names; local copies get ``SHARD_MODE``."""
    fs, folder = file_system(folder_uri, s3_options)
    if fs.type_name in ("local", "hdfs"):  # object stores have no folders to create
        fs.create_dir(folder, recursive=True)
    for path in local_files:
        target = f"{folder.rstrip('/')}/{os.path.basename(path)}"
        pafs.copy_files(path, target, source_filesystem=pafs.LocalFileSystem(), destination_filesystem=fs)
        if fs.type_name == "local":
            os.chmod(target, SHARD_MODE)


def is_remote(uri: str) -> bool:
    return urlsplit(str(uri)).scheme.lower() not in ("", "file")


def read_stage_file(stage_uri: str, name: str, s3_options: Optional[dict] = None) -> Optional[bytes]:
    """The bytes of ``<stage_uri>/<name>``, or None when there is no such file."""
    fs, folder = file_system(stage_uri, s3_options)
    try:
        with fs.open_input_stream(f"{folder.rstrip('/')}/{name}") as stream:
            return stream.read()
    except FileNotFoundError:
        return None


def finished_marker_bytes(stage_uri: str, s3_options: Optional[dict] = None) -> bytes:
    marker = read_stage_file(stage_uri, MARKER, s3_options)
    if marker is None:
        raise FileNotFoundError(f"{stage_uri}: no {MARKER}; not a finished mindrecord stage")
    return marker


def manifest_stages(stage_uri: str, s3_options: Optional[dict] = None) -> List[dict]:
    """What a finished stage contributes to a later run's manifest: the stages its own manifest lists
    (with ``.`` resolved to ``stage_uri``), else the stage alone, each with its mode, window length
    and shards."""
    finished_marker_bytes(stage_uri, s3_options)
    manifest = read_stage_file(stage_uri, MANIFEST, s3_options)
    if manifest is not None:
        return [dict(entry, stage=stage_uri if entry["stage"] == "." else entry["stage"])
                for entry in json.loads(manifest)["stages"]]
    stats = json.loads(read_stage_file(stage_uri, STATS, s3_options) or b"{}")
    return [{"stage": stage_uri, "mode": stats.get("mode"), "seq_len": stats.get("seq_len"),
             "shards": stats.get("shards", [])}]


def check_compatible(earlier: Sequence[dict], mode: str, seq_len: Optional[int]) -> None:
    """Training reads the stages of a manifest as one dataset: the same mode and window length."""
    for entry in earlier:
        if (entry["mode"], entry["seq_len"]) != (mode, seq_len):
            raise ConfigError(f"mindrecord.earlier: {entry['stage']} holds {entry['mode']} "
                              f"(seq_len {entry['seq_len']}); this run writes {mode} (seq_len {seq_len})")


def download_shards(stage_uri: str, cache_dir: str, s3_options: Optional[dict] = None) -> List[str]:
    """Local copies of the MindRecord shards of a finished ``mindrecord`` stage at ``stage_uri``.

    The stage's completion marker names the files and their sizes; a stage without one is not
    finished and is refused. Copies go to ``<cache_dir>/<key>/``, the key a hash of the URI and the
    marker, so a re-run stage is fetched anew and a finished download is reused; each file lands under
    a temporary name first, so ranks sharing a cache never read half a file.
    """
    fs, folder = file_system(stage_uri, s3_options)
    folder = folder.rstrip("/")
    marker_bytes = finished_marker_bytes(stage_uri, s3_options)
    files = json.loads(marker_bytes)["files"]
    names = sorted(n for n in files if "/" not in n and n.endswith((".mindrecord", ".mindrecord.db")))
    if not any(n.endswith(".mindrecord") for n in names):
        raise FileNotFoundError(f"no *.mindrecord files in {stage_uri}")
    key = hashlib.sha256(stage_uri.encode("utf-8") + marker_bytes).hexdigest()[:16]
    local = os.path.join(cache_dir, key)
    os.makedirs(local, exist_ok=True)
    for name in names:
        target = os.path.join(local, name)
        if os.path.exists(target) and os.path.getsize(target) == files[name]:
            continue
        partial = f"{target}.part-{os.getpid()}"
        pafs.copy_files(f"{folder}/{name}", partial, source_filesystem=fs,
                        destination_filesystem=pafs.LocalFileSystem())
        if os.path.getsize(partial) != files[name]:
            os.remove(partial)
            raise OSError(f"{stage_uri}/{name}: downloaded size differs from the size in {MARKER}")
        os.chmod(partial, SHARD_MODE)
        os.replace(partial, target)
    return [os.path.join(local, n) for n in names if n.endswith(".mindrecord")]
