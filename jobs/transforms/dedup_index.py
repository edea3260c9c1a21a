"""The signature index a dedup stage leaves in its run for later runs (``dedup.against``): its
folder and file names, and opening an earlier run's index, checked whole and made with this run's
settings before any of it is read.

The dedup stage writes the index (its layout is in ``jobs/stages/dedup.py``) and looks documents up
in it; what makes an earlier index usable is a contract between runs, kept apart from how the stage
clusters documents.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Dict

from pyspark.sql import types as T

from corpusmill.config import ConfigError
from corpusmill.run_folder import MARKER
from jobs.fs import HadoopFS
from jobs.runner import read_marker
from udfs.dedup.minhash import DedupConfig

INDEX = "_index"              # the signature index's folder inside <run>/dedup/
INDEX_META = "_index.json"


@dataclass(frozen=True)
class EarlierIndex:
    path: str        # <run>/dedup/_index
    run: str         # the earlier run's folder, named on the rows it rejects
    identity: str    # its stage fingerprint and index files: part of the reading stage's fingerprint
    schemas: Dict[str, T.StructType]


def open_index(fs: HadoopFS, entry: str, settings: DedupConfig) -> EarlierIndex:
    """The index a ``dedup.against`` entry names (a run folder, its dedup folder or the index
    folder), checked: its stage committed (the marker, written last, lists the index's files and
    they are all there with their sizes; the rest of that run may be gone) and its keys were made
    with this run's settings. Anything else is a one-line ConfigError."""
    base = fs.qualify(entry).rstrip("/")
    candidates = [base[:-len(INDEX) - 1]] if base.endswith(f"/{INDEX}") else [base, f"{base}/dedup"]
    stage_dir = next((d for d in candidates if fs.exists(f"{d}/{INDEX}/{INDEX_META}")), None)
    if stage_dir is None:
        raise ConfigError(f"dedup.against: no dedup index at {entry} (a finished dedup stage writes "
                          f"<run>/dedup/{INDEX}/)")
    marker = read_marker(fs, f"{stage_dir}/{MARKER}")
    if marker is None or not isinstance(marker.get("fingerprint"), str):
        raise ConfigError(f"dedup.against: the dedup stage at {stage_dir} did not finish (its {MARKER} is "
                          f"missing or damaged)")
    listed = {rel: size for rel, size in marker["files"].items() if rel.startswith(f"{INDEX}/")}
    present = {f"{INDEX}/{rel}": size for rel, size in fs.list_files(f"{stage_dir}/{INDEX}").items()}
    if listed != present:
        raise ConfigError(f"dedup.against: the index at {stage_dir}/{INDEX} does not match the files its "
                          f"{MARKER} lists (changed or partly copied)")
    meta = fs.read_json(f"{stage_dir}/{INDEX}/{INDEX_META}")
    mismatch = settings.index_mismatch(meta["settings"])
    if mismatch:
        raise ConfigError(f"dedup.against: the index at {stage_dir}/{INDEX} was built with dedup.{mismatch}; "
                          f"its keys cannot be compared with this run's")
    identity = hashlib.sha256(json.dumps([marker["fingerprint"], sorted(listed.items())]).encode()).hexdigest()[:16]
    return EarlierIndex(f"{stage_dir}/{INDEX}", stage_dir.rsplit("/", 1)[0], identity,
                        {name: T.StructType.fromJson(schema) for name, schema in meta["schemas"].items()})
