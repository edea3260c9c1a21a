"""Deduplication against earlier runs (``dedup.against``): the signature index a run leaves in its
dedup folder for later runs, and the lookups of this run's documents in earlier runs' indexes.

The index's layout is in the stage's docstring (``jobs/stages/dedup/__init__.py``). An earlier index
is opened whole and checked (its stage committed, its keys made with this run's settings) before any
of it is read: what makes it usable is a contract between runs, kept apart from how the stage
clusters documents (``clustering.py``, which takes out the groups an earlier run kept first).
"""
from __future__ import annotations

import hashlib
import json
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Dict, List

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from corpusmill.config import ConfigError
from corpusmill.run_folder import MARKER, file_problem, marker_form_problem
from jobs.fs import HadoopFS
from jobs.runner import read_marker
from jobs.stages.dedup.components import join_hot_safe
from jobs.stages.dedup.threads import beside
from jobs.stages.dedup.verification import verify
from udfs.dedup.minhash import DedupConfig

INDEX = "_index"              # the signature index's folder inside <run>/dedup/
INDEX_META = "_index.json"
EARLIER_RULE = "duplicate_of_earlier_run"


@dataclass(frozen=True)
class EarlierIndex:
    path: str        # <run>/dedup/_index
    run: str         # the earlier run's folder, named on the rows it rejects
    identity: str    # its stage fingerprint and index files: part of the reading stage's fingerprint
    schemas: Dict[str, T.StructType]


def open_index(fs: HadoopFS, entry: str, settings: DedupConfig) -> EarlierIndex:
    """The index a ``dedup.against`` entry names (a run folder, its dedup folder or the index
    folder), checked: its stage committed (the marker, written last, lists the index's files and
    they are all there with their sizes and checksums; the rest of that run may be gone) and its keys were made
    with this run's settings. Anything else is a one-line ConfigError."""
    base = fs.qualify(entry).rstrip("/")
    candidates = [base[:-len(INDEX) - 1]] if base.endswith(f"/{INDEX}") else [base, f"{base}/dedup"]
    stage_dir = next((d for d in candidates if fs.exists(f"{d}/{INDEX}/{INDEX_META}")), None)
    if stage_dir is None:
        raise ConfigError(f"dedup.against: no dedup index at {entry} (a finished dedup stage writes "
                          f"<run>/dedup/{INDEX}/)")
    marker = read_marker(fs, f"{stage_dir}/{MARKER}")
    problem = marker_form_problem(marker)
    if problem is not None:
        raise ConfigError(f"dedup.against: the dedup stage at {stage_dir} did not finish ({problem})")
    listed = {rel: size for rel, size in marker["files"].items() if rel.startswith(f"{INDEX}/")}
    present = {f"{INDEX}/{rel}": size for rel, size in fs.list_files(f"{stage_dir}/{INDEX}").items()}
    if listed != present:
        raise ConfigError(f"dedup.against: the index at {stage_dir}/{INDEX} does not match the files its "
                          f"{MARKER} lists (changed or partly copied)")
    for rel, size in sorted(listed.items()):
        problem = file_problem(marker, rel, size, lambda name: fs.checksum(f"{stage_dir}/{name}"))
        if problem is not None:
            raise ConfigError(f"dedup.against: the index at {stage_dir}/{INDEX} is not what its stage committed: "
                              f"{problem}")
    meta = fs.read_json(f"{stage_dir}/{INDEX}/{INDEX_META}")
    mismatch = settings.index_mismatch(meta["settings"])
    if mismatch:
        raise ConfigError(f"dedup.against: the index at {stage_dir}/{INDEX} was built with dedup.{mismatch}; "
                          f"its keys cannot be compared with this run's")
    identity = hashlib.sha256(json.dumps([marker["fingerprint"], sorted(listed.items())]).encode()).hexdigest()[:16]
    return EarlierIndex(f"{stage_dir}/{INDEX}", stage_dir.rsplit("/", 1)[0], identity,
                        {name: T.StructType.fromJson(schema) for name, schema in meta["schemas"].items()})


def earlier_indexes(spark, settings: DedupConfig) -> List[EarlierIndex]:
    """The indexes ``dedup.against`` lists, each opened and checked (``open_index``)."""
    if not settings.against:
        return []
    fs = HadoopFS(spark)
    return [open_index(fs, entry, settings) for entry in settings.against]


def write_index(spark, kept: DataFrame, index_dir: str, settings: DedupConfig, compression: str) -> None:
    """The layout in the stage's docstring; ``_index.json`` last."""
    datasets = {"exact": kept.select("text_hash", "id").repartition("text_hash").sortWithinPartitions("text_hash")}
    if settings.fuzzy:
        with_bands = kept.where(F.col("bands").isNotNull())
        datasets["bands"] = (with_bands.select(F.posexplode("bands").alias("band", "band_key"), "id")
                             .repartition("band", "band_key").sortWithinPartitions("band", "band_key"))
        datasets["signatures"] = with_bands.select("id", "signature").repartition("id").sortWithinPartitions("id")

    def write(name: str) -> None:
        datasets[name].write.option("compression", compression).parquet(f"{index_dir}/{name}")

    # Side by side: each write is a shuffle of few tasks, which alone leaves a core idle.
    with ExitStack() as writes:
        written = [writes.enter_context(beside(spark, write, name)) for name in datasets]
    for done in written:
        done.result()
    HadoopFS(spark).write_json(f"{index_dir}/{INDEX_META}", {
        "format": 1, "settings": settings.index_settings(),
        "schemas": {name: frame.schema.jsonValue() for name, frame in datasets.items()}})


def earlier_duplicates(spark, reps: DataFrame, earlier: List[EarlierIndex], settings: DedupConfig) -> DataFrame:
    """(rep_id, survivor_id, survivor_run, _n) for each exact-group representative that
    duplicates a document kept by an earlier run: the same exact hash, or an LSH band collision
    verified on the signatures. Several hits: the first index listed, then its least id."""
    id_type = reps.schema["id"].dataType
    mode = "none" if settings.verify == "none" else "signature"
    found = None
    for position, index in enumerate(earlier):
        def read(name: str) -> DataFrame:
            return spark.read.schema(index.schemas[name]).parquet(f"{index.path}/{name}")

        hits = reps.select("id", "text_hash").join(
            read("exact").select("text_hash", F.col("id").alias("earlier_id")), "text_hash")
        hits = hits.select(F.col("id").alias("src"), F.col("earlier_id").alias("dst"))
        if settings.fuzzy:
            members = reps.where(F.col("bands").isNotNull()).select(
                "id", F.posexplode("bands").alias("band", "band_key"))
            pairs = (members.join(read("bands").withColumnRenamed("id", "earlier_id"), ["band", "band_key"])
                     .select(F.col("id").alias("src"), F.col("earlier_id").alias("dst")).distinct())
            signatures = read("signatures").withColumnRenamed("signature", "value")
            hits = hits.unionByName(verify(pairs, reps.select("id", F.col("signature").alias("value")),
                                           signatures, mode, settings))
        hits = hits.select(F.col("src").alias("rep_id"),
                           F.struct(F.lit(position).alias("position"), F.col("dst").cast(id_type).alias("id"))
                           .alias("hit"))
        found = hits if found is None else found.unionByName(hits)
    runs = F.array(*[F.lit(index.run) for index in earlier])
    best = found.groupBy("rep_id").agg(F.min("hit").alias("hit"))
    return (best.join(reps.select(F.col("id").alias("rep_id"), F.col("exact_size").alias("_n")), "rep_id")
            .select("rep_id", F.col("hit.id").alias("survivor_id"),
                    F.element_at(runs, F.col("hit.position") + 1).alias("survivor_run"), "_n"))


def decide_earlier(grouped: DataFrame, hits: DataFrame, settings: DedupConfig) -> DataFrame:
    """Decisions for every member of the exact groups whose representative an earlier run kept."""
    members = join_hot_safe(grouped.select("id", "rep_id"), hits, ["rep_id"], spread_by="id",
                            cap=settings.hot_key_cap)
    return members.select("id", F.col("survivor_id").alias("cluster_id"), "survivor_id", "survivor_run",
                          F.lit(EARLIER_RULE).alias("reject_rule"), F.lit("rejected").alias("_outcome"))
