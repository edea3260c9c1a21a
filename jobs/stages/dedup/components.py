"""Connected components of a (src, dst) edge DataFrame, and the joins that keep a hot key from
landing on one task: generic Spark graph code with no notion of documents.

Components come from alternating large-star / small-star rounds (Kiveris et al., "Connected
Components in MapReduce and Beyond", 2014), each round cut from its lineage by a ``Checkpointer``;
no GraphFrames. An edge set the caller knows to be small is collected and solved on the driver
instead (scipy), with the same result in one job. ``join_hot_safe`` and ``attach_group_min`` attach a
group's value back to its members, salting any key with more than ``cap`` rows over several tasks.
The dedup stage clusters with them; they know nothing of its settings, so a notebook can apply them
to any edges.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.window import Window

from udfs.dedup.clusters import component_labels


# ---------------------------------------------------------------- skew-safe joins

def join_hot_safe(many: DataFrame, one: DataFrame, keys: List[str], spread_by: str, cap: int,
                  broadcast: bool = False) -> DataFrame:
    """Inner join of ``many`` (any number of rows per key) with ``one`` (one row per key, carrying
    that key's row count in ``many`` as ``_n``). A key with more than ``cap`` rows is split over
    ceil(_n / cap) salts: ``many`` rows pick one by a hash of ``spread_by``, the ``one`` row is
    copied to each. The hot keys are few (at most rows / cap), so their list is broadcast.
    With ``broadcast`` (``one`` is small enough to copy to every task) ``one`` is broadcast instead:
    ``many`` is not shuffled and no key is hot."""
    if broadcast:
        return many.join(F.broadcast(one.drop("_n")), keys)
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


def fits_broadcast(table: DataFrame, limit: int) -> bool:
    """Whether ``table`` (materialised: this counts it) has at most ``limit`` rows; 0: never."""
    return bool(limit) and table.limit(limit + 1).count() <= limit


def small(table: DataFrame, limit: int) -> DataFrame:
    """``table`` (materialised) marked for broadcast when it has at most ``limit`` rows: joined so, the
    rows it is joined with stay where they are read instead of being shuffled to it."""
    return F.broadcast(table) if fits_broadcast(table, limit) else table


def attach_group_min(rows: DataFrame, keys: List[str], value: Column, out: str, spread_by: str,
                     cap: int, min_size: int = 1, size_column: Optional[str] = None,
                     checkpoint: Optional["Checkpointer"] = None, broadcast_rows: int = 0) -> DataFrame:
    """``rows`` plus column ``out`` = min(value) over the rows sharing ``keys`` (and the group's row
    count as ``size_column`` if named); rows of groups with fewer than ``min_size`` rows are dropped.
    With ``checkpoint``, the groups are materialised, and broadcast when at most ``broadcast_rows``."""
    if min_size > 1:
        # Most groups (e.g. LSH buckets) are too small: they are found by a count, a hash
        # aggregation, and only the rows of the others reach the min, an aggregation that sorts
        # its rows (min of a string or a struct).
        sizes = rows.groupBy(*keys).agg(F.count(F.lit(1)).alias("_n")).where(F.col("_n") >= min_size)
        if checkpoint is not None:
            sizes = checkpoint(sizes)
            sizes = F.broadcast(sizes) if fits_broadcast(sizes, broadcast_rows) else sizes
        rows = rows.join(sizes.select(*keys), keys, "left_semi")
    groups = rows.groupBy(*keys).agg(F.min(value).alias(out), F.count(F.lit(1)).alias("_n"))
    if size_column:
        groups = groups.withColumn(size_column, F.col("_n"))
    small = False
    if checkpoint is not None:
        groups = checkpoint(groups)
        small = fits_broadcast(groups, broadcast_rows)
    return join_hot_safe(rows, groups, keys, spread_by, cap, broadcast=small)


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


def _is_star_forest(edges: DataFrame) -> bool:
    """Whether every node with an edge points at exactly one node that points at none (its root):
    then, as the rounds keep each component connected, each star is a component."""
    outgoing = edges.groupBy("src").agg(F.count(F.lit(1)).alias("_n"))
    forked = outgoing.where(F.col("_n") > 1).select("src")
    chained = edges.select(F.col("dst").alias("src")).join(outgoing.select("src"), "src", "left_semi")
    return forked.unionByName(chained).isEmpty()


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


def connected_components(edges: DataFrame, max_rounds: int, checkpoint: Checkpointer,
                         on_driver: bool = False) -> Tuple[DataFrame, int]:
    """(id, root) for every node of ``edges`` other than its component's least id (the root),
    and the number of large-star/small-star rounds taken. ``on_driver``: the caller knows the edges
    to be few enough to collect; they are solved on the driver, in 0 rounds."""
    if on_driver:
        return components_on_driver(edges), 0
    current = checkpoint(edges.where(F.col("src") != F.col("dst"))
                         .select(F.greatest("src", "dst").alias("src"), F.least("src", "dst").alias("dst"))
                         .distinct())
    rounds = 0
    # Edges point from the larger id to the smaller, so a star's root is its component's least id.
    while not _is_star_forest(current):
        if rounds == max_rounds:
            raise RuntimeError(f"dedup: connected components did not converge in {max_rounds} rounds "
                               f"(raise dedup.max_rounds)")
        current = checkpoint(small_star(large_star(current)))
        rounds += 1
    return current.select(F.col("src").alias("id"), F.col("dst").alias("root")), rounds


def components_on_driver(edges: DataFrame) -> DataFrame:
    """``connected_components``' (id, root) from the edges collected to the driver: one job, where
    the rounds take a few each, and on a small edge set those jobs are nearly all the cost."""
    collected = edges.select("src", "dst").toArrow()
    ends = pa.concat_arrays([collected.column(name).combine_chunks() for name in ("src", "dst")])
    # Sorted, so a component's first node is its least id: numpy orders strings by code point as Spark
    # orders their UTF-8 bytes.
    nodes, index = np.unique(ends.to_numpy(zero_copy_only=False), return_inverse=True)
    src, dst = index[:collected.num_rows], index[collected.num_rows:]
    label = component_labels(src, dst, len(nodes))
    _, first = np.unique(label, return_index=True)
    root = first[label]
    joined = root != np.arange(len(nodes))
    id_type = edges.schema["src"].dataType
    schema = T.StructType([T.StructField("id", id_type), T.StructField("root", id_type)])
    return edges.sparkSession.createDataFrame(
        pa.table({"id": pa.array(nodes[joined], ends.type), "root": pa.array(nodes[root[joined]], ends.type)}),
        schema)
