"""dedup: exact then fuzzy (MinHash LSH) deduplication, global across all input files.

1. One Arrow pass over ``id`` + ``text`` only computes, per document, the hash of its normalised
   text, its MinHash signature and its LSH band hashes (``udfs/minhash.py``).
2. Exact: documents with the same text hash form a group; its best-ranked document (lowest id by
   default) represents it; the others are exact duplicates.
3. Fuzzy, on representatives only: every (band, band hash) bucket with two or more members emits a
   star, each member → the bucket's lowest id (never all pairs). Candidate pairs are verified
   (exact Jaccard of the shingle sets by default) and become edges.
4. Connected components of those edges by alternating large-star / small-star rounds on DataFrames
   (Kiveris et al., "Connected Components in MapReduce and Beyond", 2014), each round
   checkpointed; no driver-side union-find, no GraphFrames. Exact copies join their
   representative's component.
5. One survivor per cluster (lowest id, or ``survivor_order``); all rows get ``cluster_id`` (the
   component's least representative id: its least id under the default order), rejected rows
   ``survivor_id`` and ``reject_rule`` = exact_duplicate / near_duplicate.

Skew: every grouping is an aggregation (partial, map-side), and every one-off join that attaches a
group's value back to its members (exact groups, LSH buckets, candidate fan-in, clusters) goes
through ``join_hot_safe``, which spreads a key with more than ``hot_key_cap`` rows over several
tasks. A bucket of a million near-identical pages is a star of a million edges handled by many
tasks, not a million² pairs in one. The component rounds use one window per step instead (see
``_with_min``).

    spark-submit jobs/dedup.py --input out/demo/filter/kept --output out --run demo
"""
from __future__ import annotations

from contextlib import ExitStack
from typing import Iterator, List, Optional, Tuple

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.window import Window

from jobs.fs import HadoopFS
from jobs.console import progress_safe_print
from jobs.stage import Stage, Transformed
from udfs.minhash import (DedupConfig, describe_bands, estimated_jaccard, jaccard, shingles,
                          signature_batch)

OWN_COLUMNS = ("cluster_id", "survivor_id", "reject_rule", "_outcome")


# ---------------------------------------------------------------- skew-safe joins

def join_hot_safe(many: DataFrame, one: DataFrame, keys: List[str], spread_by: str, cap: int) -> DataFrame:
    """Inner join of ``many`` (any number of rows per key) with ``one`` (one row per key, carrying
    that key's row count in ``many`` as ``_n``). A key with more than ``cap`` rows is split over
    ceil(_n / cap) salts: ``many`` rows pick one by a hash of ``spread_by``, the ``one`` row is
    copied to each. The hot keys are few (at most rows / cap), so their list is broadcast."""
    hot = F.broadcast(one.where(F.col("_n") > cap)
                      .select(*keys, F.ceil(F.col("_n") / F.lit(cap)).cast("long").alias("_salts")))
    many = (many.join(hot, keys, "left")
            .withColumn("_salt", F.coalesce(F.pmod(F.xxhash64(spread_by), F.col("_salts")), F.lit(0).cast("long")))
            .drop("_salts"))
    one = (one.join(hot, keys, "left")
           .withColumn("_salt", F.explode(F.sequence(F.lit(0).cast("long"),
                                                     F.coalesce(F.col("_salts"), F.lit(1).cast("long")) - 1)))
           .drop("_salts", "_n"))
    return many.join(one, keys + ["_salt"]).drop("_salt")


def attach_group_min(rows: DataFrame, keys: List[str], value: Column, out: str, spread_by: str,
                     cap: int, min_size: int = 1, size_column: Optional[str] = None) -> DataFrame:
    """``rows`` plus column ``out`` = min(value) over the rows sharing ``keys`` (and the group's row
    count as ``size_column`` if named); rows of groups with fewer than ``min_size`` rows are dropped."""
    groups = rows.groupBy(*keys).agg(F.min(value).alias(out), F.count(F.lit(1)).alias("_n"))
    if min_size > 1:
        groups = groups.where(F.col("_n") >= min_size)
    if size_column:
        groups = groups.withColumn(size_column, F.col("_n"))
    return join_hot_safe(rows, groups, keys, spread_by, cap)


# ---------------------------------------------------------------- connected components

class Checkpointer:
    """Cuts lineage of iterative results: reliable checkpoints under ``directory`` when given
    (survive executor loss on a cluster), Spark local checkpoints otherwise."""

    def __init__(self, spark, directory: str):
        self.reliable = bool(directory)
        if self.reliable:
            spark.sparkContext.setCheckpointDir(directory)

    def __call__(self, df: DataFrame) -> DataFrame:
        return df.checkpoint(eager=True) if self.reliable else df.localCheckpoint(eager=True)


def _fingerprint(edges: DataFrame) -> tuple:
    """Count and two independent 64-bit XOR-hashes of an edge set: equal fingerprints of successive
    rounds mean no edge changed (a false match has probability ~2^-128)."""
    row = edges.agg(F.count(F.lit(1)), F.bit_xor(F.xxhash64("src", "dst")),
                    F.bit_xor(F.xxhash64("dst", "src"))).first()
    return tuple(row)


def _with_min(rows: DataFrame, key: str, value: str, out: str) -> DataFrame:
    """Rows plus ``out`` = min(value) over the rows sharing ``key``: one shuffle, as a window.
    Rounds repeat this many times, so it skips the salting of ``join_hot_safe``; a node with a
    huge neighbourhood is one task, linear in its degree (window buffers spill to disk)."""
    return rows.withColumn(out, F.min(value).over(Window.partitionBy(key)))


def large_star(edges: DataFrame) -> DataFrame:
    """Every node u links its larger neighbours to m(u), the least of u and its neighbours."""
    both = edges.select(F.col("src").alias("u"), F.col("dst").alias("v")).unionByName(
        edges.select(F.col("dst").alias("u"), F.col("src").alias("v")))
    linked = _with_min(both, "u", "v", "m")
    return (linked.where(F.col("v") > F.col("u"))
            .select(F.col("v").alias("src"), F.least("u", "m").alias("dst")).distinct())


def small_star(edges: DataFrame) -> DataFrame:
    """Edges point from larger to smaller ids; every node u links itself and its smaller
    neighbours to the least of them."""
    linked = _with_min(edges, "src", "dst", "m")
    return (linked.where(F.col("dst") != F.col("m")).select(F.col("dst").alias("src"), F.col("m").alias("dst"))
            .unionByName(linked.select("src", F.col("m").alias("dst")))
            .distinct())


def connected_components(edges: DataFrame, max_rounds: int, checkpoint: Checkpointer) -> Tuple[DataFrame, int]:
    """(id, root) for every node of ``edges`` other than its component's least id (the root),
    and the number of large-star/small-star rounds taken."""
    current = checkpoint(edges.where(F.col("src") != F.col("dst"))
                         .select(F.greatest("src", "dst").alias("src"), F.least("src", "dst").alias("dst"))
                         .distinct())
    seen = _fingerprint(current)
    if seen[0] == 0:
        return current.select(F.col("src").alias("id"), F.col("dst").alias("root")), 0
    for rounds in range(1, max_rounds + 1):
        current = checkpoint(small_star(large_star(current)))
        fingerprint = _fingerprint(current)
        if fingerprint == seen:
            # A fixed point: every node points at its component's least id.
            return current.select(F.col("src").alias("id"), F.col("dst").alias("root")), rounds
        seen = fingerprint
    raise RuntimeError(f"dedup: connected components did not converge in {max_rounds} rounds "
                       f"(raise dedup.max_rounds)")


# ---------------------------------------------------------------- the stage

class DedupStage(Stage):
    name = "dedup"
    required_columns = ("id", "text")

    # -- signatures ----------------------------------------------------------------------------

    def signatures(self, docs: DataFrame) -> DataFrame:
        """(id, text_hash, bands[, signature], survivor-order columns): one Arrow pass over id + text."""
        s: DedupConfig = self.settings
        order = [c.lstrip("-") for c in s.survivor_order]
        with_signature = s.verify == "signature"
        fields = [docs.schema["id"], T.StructField("text_hash", T.StringType()),
                  T.StructField("bands", T.ArrayType(T.LongType()))]
        if with_signature:
            fields.append(T.StructField("signature", T.BinaryType()))
        fields += [docs.schema[c] for c in order]

        def compute(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                texts = [t or "" for t in batch.column("text").to_pylist()]
                out = signature_batch(texts, s)
                has = out.shingle_counts > 0
                # Documents without shingles (empty text) take part in exact dedup only.
                bands = pa.array([row if ok else None for row, ok in zip(out.bands.tolist(), has)],
                                 type=pa.list_(pa.int64()))
                columns = [batch.column("id"), pa.array(out.exact_hashes, pa.string()), bands]
                names = ["id", "text_hash", "bands"]
                if with_signature:
                    columns.append(pa.array([row.tobytes() for row in out.signatures], pa.binary()))
                    names.append("signature")
                columns += [batch.column(c) for c in order]
                yield pa.RecordBatch.from_arrays(columns, names=names + order)

        return docs.select("id", "text", *order).mapInArrow(compute, T.StructType(fields))

    # -- fuzzy candidates and verification -----------------------------------------------------

    def candidates(self, reps: DataFrame) -> DataFrame:
        """Star edges (src → dst = bucket's least id) from every LSH bucket with 2+ members."""
        cap = self.settings.hot_key_cap
        members = reps.where(F.col("bands").isNotNull()).select(
            "id", F.posexplode("bands").alias("band", "band_hash"))
        buckets = attach_group_min(members, ["band", "band_hash"], F.col("id"), "bucket_min",
                                   spread_by="id", cap=cap, min_size=2)
        return (buckets.where(F.col("id") != F.col("bucket_min"))
                .select(F.col("id").alias("src"), F.col("bucket_min").alias("dst")).distinct())

    def verify(self, pairs: DataFrame, docs: DataFrame, sigs: DataFrame) -> DataFrame:
        """The candidate pairs whose similarity reaches the threshold."""
        s: DedupConfig = self.settings
        if s.verify == "none":
            return pairs
        column = "text" if s.verify == "jaccard" else "signature"
        source = docs if s.verify == "jaccard" else sigs
        values = source.select("id", column)
        left = pairs.join(values.select(F.col("id").alias("src"), F.col(column).alias("src_value")), "src")
        fan_in = pairs.groupBy("dst").agg(F.count(F.lit(1)).alias("_n"))
        right = fan_in.join(values.select(F.col("id").alias("dst"), F.col(column).alias("dst_value")), "dst")
        joined = join_hot_safe(left, right, ["dst"], spread_by="src", cap=s.hot_key_cap)

        def similarity(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                a = batch.column("src_value").to_pylist()
                b = batch.column("dst_value").to_pylist()
                if s.verify == "jaccard":
                    sim = jaccard(shingles(a, s), shingles(b, s))
                else:
                    sim = estimated_jaccard(_unpack(a, s.num_perm), _unpack(b, s.num_perm))
                yield pa.RecordBatch.from_arrays(
                    [batch.column("src"), batch.column("dst"), pa.array(sim, pa.float64())],
                    names=["src", "dst", "similarity"])

        schema = T.StructType([pairs.schema["src"], pairs.schema["dst"], T.StructField("similarity", T.DoubleType())])
        scored = joined.select("src", "dst", "src_value", "dst_value").mapInArrow(similarity, schema)
        # A tiny tolerance so that, e.g., 4/5 counts as reaching 0.8 despite float rounding.
        return scored.where(F.col("similarity") >= s.threshold - 1e-9).select("src", "dst")

    # -- the whole stage -----------------------------------------------------------------------

    def transform(self, docs: DataFrame, resources: ExitStack) -> Transformed:
        s: DedupConfig = self.settings
        cap = s.hot_key_cap
        bands, rows = s.banding()
        curve = describe_bands(bands, rows)
        progress_safe_print(f"dedup: {curve}")
        figures = {"lsh_bands": bands, "lsh_rows": rows, "s_curve": curve}
        checkpoint = Checkpointer(self.spark, s.checkpoint_dir)

        # The signature pass is the expensive one: materialise it once.
        sigs = checkpoint(self.signatures(docs.where(F.col("id").isNotNull())))

        if s.exact:
            # The exact group's best-ranked document represents it in the fuzzy pass.
            grouped = checkpoint(attach_group_min(sigs, ["text_hash"], self.rank(), "rep", spread_by="id",
                                                  cap=cap, size_column="exact_size")
                                 .withColumn("rep_id", F.col("rep.id")).drop("rep"))
        else:
            grouped = sigs.withColumn("rep_id", F.col("id")).withColumn("exact_size", F.lit(1).cast("long"))
        edges = sigs.select(F.col("id").alias("src"), F.col("id").alias("dst")).where(F.lit(False))
        if s.fuzzy:
            reps = grouped.where(F.col("id") == F.col("rep_id"))
            pairs = checkpoint(self.candidates(reps))
            edges = checkpoint(self.verify(pairs, docs, sigs))
            figures.update(candidate_pairs=pairs.count(), verified_pairs=edges.count())
        # Components over representatives only: exact copies join their representative's cluster.
        components, rounds = connected_components(edges, s.max_rounds, checkpoint)
        figures["cc_rounds"] = rounds

        decisions = self.decide(grouped, components)
        kept_columns = [c for c in docs.columns if c not in OWN_COLUMNS]
        out = docs.select(*kept_columns).join(decisions, "id", "left")
        # Rows without an id cannot be deduplicated or joined back: report them as errors.
        rows_out = (out.withColumn("_outcome", F.coalesce("_outcome", F.lit("error")))
                    .withColumn("error", F.when(F.col("id").isNull(), F.lit("missing id"))))
        return Transformed(rows_out, figures)

    def rank(self) -> Column:
        """Survivor order as a struct: min() picks the survivor (survivor_order, then lowest id)."""
        keys = []
        for spec in self.settings.survivor_order:
            column = F.col(spec.lstrip("-"))
            # Nulls rank last; "-" orders a numeric column descending.
            keys += [column.isNull(), -column if spec.startswith("-") else column]
        return F.struct(*[k.alias(f"k{i}") for i, k in enumerate(keys)], F.col("id").alias("id"))

    def decide(self, grouped: DataFrame, components: DataFrame) -> DataFrame:
        """(id, cluster_id, survivor_id, reject_rule, _outcome) for every document. A rejected
        document other than its exact group's representative is an exact duplicate, a rejected
        representative a near duplicate."""
        cap = self.settings.hot_key_cap
        # Clusters and survivors are decided on representatives (one per distinct text) ...
        reps = (grouped.where(F.col("id") == F.col("rep_id"))
                .join(components, "id", "left")
                .withColumn("cluster_id", F.coalesce("root", "id")))
        reps = attach_group_min(reps, ["cluster_id"], self.rank(), "best", spread_by="id", cap=cap)
        # ... and reach every copy through its exact group, a possibly hot key: salted.
        reps = reps.select(F.col("id").alias("rep_id"), "cluster_id", "best", F.col("exact_size").alias("_n"))
        ranked = join_hot_safe(grouped.select("id", "rep_id"), reps, ["rep_id"], spread_by="id", cap=cap)
        survivor = F.col("best.id")
        rejected = F.col("id") != survivor
        return ranked.select(
            "id", "cluster_id",
            F.when(rejected, survivor).alias("survivor_id"),
            F.when(rejected, F.when(F.col("id") != F.col("rep_id"), F.lit("exact_duplicate"))
                   .otherwise(F.lit("near_duplicate"))).alias("reject_rule"),
            F.when(rejected, F.lit("rejected")).otherwise(F.lit("kept")).alias("_outcome"))

    def extra_stats(self, stage_dir: str, facts: dict) -> dict:
        fs = HadoopFS(self.spark)
        parts = [f"{stage_dir}/{d}" for d in ("kept", "rejected") if fs.exists(f"{stage_dir}/{d}")]
        sizes = self.spark.read.parquet(*parts).groupBy("cluster_id").count() if parts else None
        histogram = {}
        if sizes is not None:
            for row in sizes.where(F.col("count") > 1).groupBy("count").count().collect():
                histogram[str(row[0])] = row[1]
        return {**facts,
                "clusters": sum(histogram.values()),
                "cluster_size_histogram": dict(sorted(histogram.items(), key=lambda kv: int(kv[0])))}


def _unpack(values: List[Optional[bytes]], num_perm: int) -> np.ndarray:
    return np.frombuffer(b"".join(values), dtype=np.uint32).reshape(-1, num_perm)


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("dedup"))
