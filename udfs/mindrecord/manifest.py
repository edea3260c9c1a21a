"""A finished mindrecord stage's folder as read outside Spark, by the stage (earlier stages to list)
and by the loader: its completion marker, its figures and ``manifest.json``, through ``pyarrow.fs``.
"""
from __future__ import annotations

import json
import os
from typing import List, Optional, Sequence, Tuple
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from corpusmill.config import ConfigError
from corpusmill.run_folder import MARKER, STATS, marker_form_problem
from corpusmill.storage import S3_SCHEMES, file_system, is_remote

# The shards training reads as one dataset: this stage's ("." ) and those of earlier runs' stages.
MANIFEST = "manifest.json"
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


def stage_marker(stage_uri: str, s3_options: Optional[dict] = None) -> Tuple[bytes, dict]:
    """The completion marker of a finished stage: its bytes, and its content, which names the files
    with their sizes and checksums (``corpusmill.run_folder.marker_form_problem``)."""
    marker = finished_marker_bytes(stage_uri, s3_options)
    content = _json_of(stage_uri, MARKER, marker)
    problem = marker_form_problem(content)
    if problem is not None:
        raise ValueError(f"{stage_uri}: {problem}; not a finished stage")
    return marker, content


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
    stage_marker(stage_uri, s3_options)
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
