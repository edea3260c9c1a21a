"""The mindrecord stage's per-record logic: its config, the MindRecord schemas, Arrow → records, the
plan that evens out rows per shard, and shard files to and from any file-system URI (moved with
``udfs.common.remote``).
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from udfs.common.config import ConfigError
from udfs.common.remote import S3_SCHEMES, UPLOADED_MODE, file_system, is_remote

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


MARKER = "_COMPLETE.json"  # the runner's completion marker (jobs/stage.py), which names every file
STATS = "_stats.json"
# The shards training reads as one dataset: this stage's ("." ) and those of earlier runs' stages.
MANIFEST = "manifest.json"


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


# A marker, a manifest or a stats file larger than this is not one the stage wrote (10,000 shards
# make a marker of about 1 MB).
MAX_SIDE_FILE_BYTES = 64 << 20


def read_stage_file(stage_uri: str, name: str, s3_options: Optional[dict] = None) -> Optional[bytes]:
    """The bytes of ``<stage_uri>/<name>``, or None when there is no such file; a FIFO, a device or
    a file over ``MAX_SIDE_FILE_BYTES`` there is refused in one line, without reading it."""
    fs, folder = file_system(stage_uri, s3_options)
    path = f"{folder.rstrip('/')}/{name}"
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        return None
    if info.type != pafs.FileType.File:
        raise ValueError(f"{stage_uri}/{name}: not a regular file")
    if info.size is not None and info.size > MAX_SIDE_FILE_BYTES:
        raise ValueError(f"{stage_uri}/{name}: {info.size:,} bytes, more than a stage writes "
                         f"({MAX_SIDE_FILE_BYTES:,} at most)")
    with fs.open_input_stream(path) as stream:
        data = stream.read(MAX_SIDE_FILE_BYTES + 1)
    if len(data) > MAX_SIDE_FILE_BYTES:
        raise ValueError(f"{stage_uri}/{name}: more than a stage writes ({MAX_SIDE_FILE_BYTES:,} bytes at most)")
    return data


def _json_of(stage_uri: str, name: str, data: bytes):
    try:
        return json.loads(data)
    except (ValueError, RecursionError):  # not UTF-8, not JSON, nested past the parser's depth
        raise ValueError(f"{stage_uri}/{name}: not JSON") from None


def finished_marker_bytes(stage_uri: str, s3_options: Optional[dict] = None) -> bytes:
    marker = read_stage_file(stage_uri, MARKER, s3_options)
    if marker is None:
        raise FileNotFoundError(f"{stage_uri}: no {MARKER}; not a finished mindrecord stage")
    return marker


def stage_marker(stage_uri: str, s3_options: Optional[dict] = None) -> Tuple[bytes, Dict[str, int]]:
    """The completion marker of a finished stage: its bytes, and the files it names with their sizes."""
    marker = finished_marker_bytes(stage_uri, s3_options)
    content = _json_of(stage_uri, MARKER, marker)
    files = content.get("files") if isinstance(content, dict) else None
    if not isinstance(files, dict) or not all(isinstance(n, str) and type(v) is int for n, v in files.items()):
        raise ValueError(f"{stage_uri}/{MARKER}: no 'files' naming each file with its size; not a completion marker")
    return marker, files


def _shard_name(stage_uri: str, name) -> str:
    """A shard named by a manifest: a file of the stage's own folder, never a path elsewhere."""
    if (not isinstance(name, str) or not name.endswith(".mindrecord") or "/" in name or "\\" in name
            or name.startswith(".")):
        raise ValueError(f"{stage_uri}/{MANIFEST}: shard {name!r} is not a *.mindrecord file of its stage's folder")
    return name


def stage_key(uri: str) -> str:
    """What makes two URIs the same stage: the real path of a local folder, else the URI without a
    trailing slash and with S3's schemes as one."""
    if not is_remote(uri):
        return os.path.realpath(file_system(uri)[1])
    parts = urlsplit(uri)
    scheme = "s3" if parts.scheme.lower() in S3_SCHEMES else parts.scheme.lower()
    return f"{scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def read_manifest(stage_uri: str, s3_options: Optional[dict] = None) -> Optional[List[dict]]:
    """The stages a stage's ``manifest.json`` lists, ``.`` resolved to ``stage_uri``, or None without
    one. Refused, in one line: an entry that is not a stage URI with a list of shards, a stage listed
    twice, a shard that is not a plain file name (an absolute path, ``..``) or is listed twice, a
    local stage in the manifest of a remote one (a host-local path the training job would read), a
    relative local path, and a manifest that leaves out the stage's own shards (``.``)."""
    data = read_stage_file(stage_uri, MANIFEST, s3_options)
    if data is None:
        return None
    content = _json_of(stage_uri, MANIFEST, data)
    entries = content.get("stages") if isinstance(content, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError(f"{stage_uri}/{MANIFEST}: no 'stages' list of objects")
    stages, seen = [], {}
    for entry in entries:
        uri, shards = entry.get("stage"), entry.get("shards")
        if not isinstance(uri, str) or not uri or not isinstance(shards, list):
            raise ValueError(f"{stage_uri}/{MANIFEST}: an entry without a 'stage' URI and its 'shards' list")
        if uri != ".":
            if is_remote(stage_uri) and not is_remote(uri):
                raise ValueError(f"{stage_uri}/{MANIFEST}: lists the local path {uri}; a remote stage's manifest "
                                 f"may list remote stages only")
            if not is_remote(uri) and not os.path.isabs(file_system(uri)[1]):
                raise ValueError(f"{stage_uri}/{MANIFEST}: lists the relative path {uri}; stages are absolute URIs")
        resolved = stage_uri if uri == "." else uri
        key = stage_key(resolved)
        if key in seen:
            raise ValueError(f"{stage_uri}/{MANIFEST}: lists the stage {resolved} twice")
        seen[key] = resolved
        names = [_shard_name(stage_uri, s.get("file") if isinstance(s, dict) else None) for s in shards]
        if not names:
            raise ValueError(f"{stage_uri}/{MANIFEST}: lists no shards of {resolved}")
        if len(set(names)) != len(names):
            raise ValueError(f"{stage_uri}/{MANIFEST}: lists a shard of {resolved} twice")
        stages.append(dict(entry, stage=resolved))
    if stage_key(stage_uri) not in seen:
        raise ValueError(f"{stage_uri}/{MANIFEST}: does not list the stage's own shards ('.')")
    return stages


def manifest_stages(stage_uri: str, s3_options: Optional[dict] = None) -> List[dict]:
    """What a finished stage contributes to a later run's manifest: the stages its own manifest lists
    (with ``.`` resolved to ``stage_uri``), else the stage alone, each with its mode, window length
    and shards."""
    finished_marker_bytes(stage_uri, s3_options)
    stages = read_manifest(stage_uri, s3_options)
    if stages is not None:
        return stages
    stats = _json_of(stage_uri, STATS, read_stage_file(stage_uri, STATS, s3_options) or b"{}")
    return [{"stage": stage_uri, "mode": stats.get("mode"), "seq_len": stats.get("seq_len"),
             "shards": stats.get("shards", [])}]


def check_compatible(earlier: Sequence[dict], mode: str, seq_len: Optional[int]) -> None:
    """Training reads the stages of a manifest as one dataset: the same mode and window length, and
    each stage once (``mindrecord.earlier`` naming a stage that another one's manifest lists too
    would give its shards twice)."""
    seen = set()
    for entry in earlier:
        if stage_key(entry["stage"]) in seen:
            raise ConfigError(f"mindrecord.earlier: {entry['stage']} is listed twice (directly, or by the manifest "
                              f"of another earlier stage); each stage's shards are read once")
        seen.add(stage_key(entry["stage"]))
        if (entry["mode"], entry["seq_len"]) != (mode, seq_len):
            raise ConfigError(f"mindrecord.earlier: {entry['stage']} holds {entry['mode']} "
                              f"(seq_len {entry['seq_len']}); this run writes {mode} (seq_len {seq_len})")


def marker_shards(stage_uri: str, files: Dict[str, int]) -> List[str]:
    """The MindRecord shards a completion marker names (directly in the stage's folder), sorted."""
    names = sorted(n for n in files if "/" not in n and n.endswith(".mindrecord"))
    if not names:
        raise FileNotFoundError(f"no *.mindrecord files in {stage_uri}")
    return names


def _check_listed(stage_uri: str, files: Dict[str, int], names: Sequence[str]) -> None:
    for name in names:
        if name not in files or f"{name}.db" not in files:
            raise FileNotFoundError(f"{stage_uri}/{name}: not among the files of its {MARKER} (the stage was "
                                    f"re-run or changed since the manifest listing it was written)")


def download_shards(stage_uri: str, cache_dir: str, s3_options: Optional[dict] = None,
                    shards: Optional[Sequence[str]] = None) -> List[str]:
    """Local copies of the MindRecord shards of a finished ``mindrecord`` stage at ``stage_uri``: the
    ``shards`` named (each must be in the marker), by default every one its marker names.

    The stage's completion marker names the files and their sizes; a stage without one is not
    finished and is refused. Copies go to ``<cache_dir>/<key>/``, the key a hash of the URI and the
    marker, so a re-run stage is fetched anew and a finished download is reused; each file lands under
    a temporary name first, so ranks sharing a cache never read half a file.
    """
    fs, folder = file_system(stage_uri, s3_options)
    folder = folder.rstrip("/")
    marker_bytes, files = stage_marker(stage_uri, s3_options)
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
        if os.path.getsize(partial) != files[name]:
            os.remove(partial)
            raise OSError(f"{stage_uri}/{name}: downloaded size differs from the size in {MARKER}")
        os.chmod(partial, UPLOADED_MODE)
        os.replace(partial, target)
    return [os.path.join(local, n) for n in shards]


def local_shards(stage_uri: str, shards: Optional[Sequence[str]] = None) -> List[str]:
    """The paths of the MindRecord shards of a finished local stage (a folder or a ``file:`` URI): the
    ``shards`` named, by default every one its completion marker names; each must be a regular file of
    the size the marker gives, so a stray or half-copied shard in the folder is never read."""
    _, files = stage_marker(stage_uri)
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
