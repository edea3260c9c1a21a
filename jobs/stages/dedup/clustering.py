"""Steps 2 to 5 of the dedup stage (its docstring): from one signature row per id to every document's
decision, kept or rejected with its cluster and survivor.

Two ways to the same decisions: ``cluster_in_spark``, skew-safe Spark steps for any size and for
runs against earlier indexes, and ``cluster_on_driver``, numpy over the signature rows collected to
the driver, for a run small enough that the Spark steps would cost more in scheduling than in work.
"""
from __future__ import annotations

from typing import List, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.stages.dedup.components import (Checkpointer, attach_group_min, connected_components, fits_broadcast,
                                          join_hot_safe)
from jobs.stages.dedup.earlier_runs import EarlierIndex, decide_earlier, earlier_duplicates
from jobs.stages.dedup.signatures import TEXT_KEY, rank
from jobs.stages.dedup.verification import texts_named, texts_of, verify
from udfs.dedup.clusters import bucket_stars, first_of_groups, survivors
from udfs.dedup.minhash import DedupConfig


def cluster_in_spark(spark, docs: DataFrame, sigs: DataFrame, settings: DedupConfig, checkpoint: Checkpointer,
                     ids_repeat: bool, earlier: List[EarlierIndex]) -> Tuple[DataFrame, dict]:
    """Every signature row's decision (``decide``), and the figures of the clustering: steps 2 to 5
    of the stage's docstring, each a skew-safe Spark step."""
    figures: dict = {"clustered_on": "spark"}
    if settings.exact:
        # The exact group's best-ranked document represents it in the fuzzy pass.
        grouped = checkpoint(attach_group_min(sigs, ["text_hash"], rank(settings), "rep", spread_by="id",
                                              cap=settings.hot_key_cap, size_column="exact_size",
                                              **groups_materialised(checkpoint, settings))
                             .withColumn("rep_id", F.col("rep.id")).drop("rep"))
    else:
        grouped = sigs.withColumn("rep_id", F.col("id")).withColumn("exact_size", F.lit(1).cast("long"))
    reps = grouped.where(F.col("id") == F.col("rep_id"))
    earlier_decisions = None
    if earlier:
        # Groups an earlier run already kept leave before the run's own clustering.
        hits = checkpoint(earlier_duplicates(spark, reps, earlier, settings))
        earlier_decisions = decide_earlier(grouped, hits, settings)
        grouped = grouped.join(hits.select("rep_id"), "rep_id", "left_anti")
        reps = reps.join(hits.select(F.col("rep_id").alias("id")), "id", "left_anti")
        figures["earlier_runs"] = [index.run for index in earlier]
    edges = sigs.select(F.col("id").alias("src"), F.col("id").alias("dst")).where(F.lit(False))
    if settings.fuzzy:
        pairs = checkpoint(candidates(reps, settings, checkpoint))
        if settings.verify == "jaccard":
            # Materialised: both sides of the pairs read it, and the documents are scanned once.
            values = checkpoint(texts_named(docs, sigs, pairs, checkpoint, ids_repeat, settings.broadcast_rows))
        else:
            values = sigs.select("id", F.col("signature").alias("value"))
        edges = checkpoint(verify(pairs, values, values, settings.verify, settings))
        figures.update(candidate_pairs=pairs.count(), verified_pairs=edges.count())
    # Components over representatives only: exact copies join their representative's cluster.
    few_edges = 0 < settings.broadcast_rows and figures.get("verified_pairs", 0) <= settings.broadcast_rows
    components, figures["cc_rounds"] = connected_components(edges, settings.max_rounds, checkpoint,
                                                            on_driver=few_edges)
    decisions = decide(grouped, components, settings, checkpoint)
    if earlier_decisions is not None:
        decisions = decisions.unionByName(earlier_decisions, allowMissingColumns=True)
    return decisions, figures


def cluster_on_driver(spark, docs: DataFrame, sigs: DataFrame, settings: DedupConfig, checkpoint: Checkpointer,
                      ids_repeat: bool) -> Tuple[DataFrame, dict]:
    """``cluster_in_spark``'s decisions and figures, from the signature rows collected to the driver
    in survivor order: exact groups, LSH buckets and components are found with numpy
    (``udfs/dedup/clusters.py``); only the candidates' verification, which reads their texts, runs
    in Spark. On a small corpus the Spark steps cost a score of small queries, nearly all of it
    planning and scheduling."""
    id_field = sigs.schema["id"]
    # One sorted task: a row's position is then its rank.
    rows = (sigs.coalesce(1).sortWithinPartitions(rank(settings)).select("id", TEXT_KEY, "text_hash", "bands")
            .toArrow())
    n = rows.num_rows
    ids = rows.column("id").combine_chunks()
    position = np.arange(n)
    # numpy orders strings by code point, as Spark orders their UTF-8 bytes.
    id_rank = np.unique(ids.to_numpy(zero_copy_only=False), return_inverse=True)[1].reshape(-1)
    rep = first_of_groups(rows.column("text_hash").to_numpy()) if settings.exact else position
    src = dst = np.empty(0, np.int64)
    figures = {"clustered_on": "driver", "cc_rounds": 0}
    if settings.fuzzy:
        bands = rows.column("bands").combine_chunks()
        banded = np.flatnonzero((rep == position) & bands.is_valid().to_numpy(zero_copy_only=False))
        matrix = bands.take(banded).flatten().to_numpy().reshape(len(banded), settings.banding()[0])
        star_src, star_dst = bucket_stars(matrix, id_rank[banded])
        pair_src, pair_dst = banded[star_src], banded[star_dst]
        id_type = id_field.dataType
        pairs = spark.createDataFrame(
            pa.table({"src": ids.take(pair_src), "dst": ids.take(pair_dst)}),
            T.StructType([T.StructField("src", id_type), T.StructField("dst", id_type)]))
        if settings.verify == "jaccard":
            named = np.unique(np.concatenate([pair_src, pair_dst]))
            keys = spark.createDataFrame(
                pa.table({"id": ids.take(named), TEXT_KEY: rows.column(TEXT_KEY).take(named)}),
                T.StructType([T.StructField("id", id_type), T.StructField(TEXT_KEY, T.LongType())]))
            # Materialised: both sides of the pairs read it, and the documents are scanned once.
            values = checkpoint(texts_of(docs, F.broadcast(keys), ids_repeat))
        else:
            values = sigs.select("id", F.col("signature").alias("value"))
        edges = verify(pairs, values, values, settings.verify, settings).toArrow()
        src, dst = (pc.index_in(edges.column(end), value_set=ids).to_numpy() for end in ("src", "dst"))
        figures.update(candidate_pairs=len(pair_src), verified_pairs=edges.num_rows)
    cluster, survivor = survivors(rep, id_rank, src, dst)
    rejected = survivor != position
    decisions = pa.table({
        "id": ids, "cluster_id": ids.take(cluster),
        "survivor_id": ids.take(pa.array(survivor, mask=~rejected)),
        "reject_rule": pa.array(np.where(rep != position, "exact_duplicate", "near_duplicate"), pa.string(),
                                mask=~rejected),
        "_outcome": pa.array(np.where(rejected, "rejected", "kept"), pa.string())})
    schema = T.StructType([id_field, T.StructField("cluster_id", id_field.dataType),
                           T.StructField("survivor_id", id_field.dataType),
                           T.StructField("reject_rule", T.StringType()), T.StructField("_outcome", T.StringType())])
    return spark.createDataFrame(decisions, schema), figures


def candidates(reps: DataFrame, settings: DedupConfig, checkpoint: Checkpointer) -> DataFrame:
    """Star edges (src → dst = bucket's least id) from every LSH bucket with 2+ members."""
    cap = settings.hot_key_cap
    members = reps.where(F.col("bands").isNotNull()).select(
        "id", F.posexplode("bands").alias("band", "band_hash"))
    buckets = attach_group_min(members, ["band", "band_hash"], F.col("id"), "bucket_min",
                               spread_by="id", cap=cap, min_size=2, **groups_materialised(checkpoint, settings))
    return (buckets.where(F.col("id") != F.col("bucket_min"))
            .select(F.col("id").alias("src"), F.col("bucket_min").alias("dst")).distinct())


def decide(grouped: DataFrame, components: DataFrame, settings: DedupConfig, checkpoint: Checkpointer) -> DataFrame:
    """(id, cluster_id, survivor_id, reject_rule, _outcome) for every document. A rejected
    document other than its exact group's representative is an exact duplicate, a rejected
    representative a near duplicate."""
    cap = settings.hot_key_cap
    # Clusters and survivors are decided on representatives (one per distinct text) ...
    reps = (grouped.where(F.col("id") == F.col("rep_id"))
            .join(components, "id", "left")
            .withColumn("cluster_id", F.coalesce("root", "id")))
    reps = attach_group_min(reps, ["cluster_id"], rank(settings), "best", spread_by="id", cap=cap,
                            **groups_materialised(checkpoint, settings))
    # ... and reach every copy through its exact group, a possibly hot key: salted.
    reps = checkpoint(reps.select(F.col("id").alias("rep_id"), "cluster_id", "best",
                                  F.col("exact_size").alias("_n")))
    ranked = join_hot_safe(grouped.select("id", "rep_id"), reps, ["rep_id"], spread_by="id", cap=cap,
                           broadcast=fits_broadcast(reps, settings.broadcast_rows))
    survivor = F.col("best.id")
    rejected = F.col("id") != survivor
    return ranked.select(
        "id", "cluster_id",
        F.when(rejected, survivor).alias("survivor_id"),
        F.when(rejected, F.when(F.col("id") != F.col("rep_id"), F.lit("exact_duplicate"))
               .otherwise(F.lit("near_duplicate"))).alias("reject_rule"),
        F.when(rejected, F.lit("rejected")).otherwise(F.lit("kept")).alias("_outcome"))


def groups_materialised(checkpoint: Checkpointer, settings: DedupConfig) -> dict:
    """``attach_group_min``'s arguments that materialise its groups and broadcast them when small:
    the rows being grouped then stay where they are."""
    return {"checkpoint": checkpoint, "broadcast_rows": settings.broadcast_rows}
