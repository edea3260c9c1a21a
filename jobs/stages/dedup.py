"""dedup: exact then fuzzy (MinHash LSH) deduplication, global across all input files.

1. One Arrow pass over ``id`` + ``text`` only computes, per document, the hash of its normalised
   text, its MinHash signature and its LSH band hashes (``udfs/dedup/minhash.py``). With
   ``io.chunk_files`` set, this pass, the costly one, runs and is committed chunk by chunk of input
   files (``run_stage_after_chunks``); a driver lost during it resumes at the first unfinished chunk.
   The steps below need every document at once and run once, over the saved signatures.
2. Exact: documents with the same text hash form a group; its best-ranked document (lowest id by
   default) represents it; the others are exact duplicates.
3. Fuzzy, on representatives only: every (band, band hash) bucket with two or more members emits a
   star, each member → the bucket's lowest id (never all pairs). Candidate pairs are verified
   (exact Jaccard of the shingle sets by default) and become edges.
4. Connected components of those edges by alternating large-star / small-star rounds on DataFrames
   (Kiveris et al., "Connected Components in MapReduce and Beyond", 2014), each round
   checkpointed; no GraphFrames. Up to ``broadcast_rows`` edges are collected and solved on the
   driver instead (``cc_rounds`` 0), the same components in one job. Exact copies join their
   representative's component.
5. One survivor per cluster (lowest id, or ``survivor_order``); all rows get ``cluster_id`` (the
   component's least representative id: its least id under the default order), rejected rows
   ``survivor_id`` and ``reject_rule`` = exact_duplicate / near_duplicate.

Steps 2 to 5 are skew-safe Spark steps (``cluster_in_spark``). A run of at most ``broadcast_rows``
signatures without earlier indexes takes them on the driver instead (``cluster_on_driver``, numpy in
``udfs/dedup/clusters.py``): the same decisions, where the Spark steps would cost a score of small
queries; only the verification of candidates, which reads their texts, still runs in Spark.

Every step above sees one row per id. Ids are deterministic (a hash of the record), so rows sharing
an id are copies of one record (the same WARC read twice): the first by ``copy_order`` (survivor
order, then a hash of the text, then of the row) takes the id's decision, the others are rejected
with ``reject_rule`` = duplicate_id and ``survivor_id`` = that id. A text over ``io.max_text_chars``
gets no signature: it is an errors/ row (``text_too_long``), as is a row without an id.

Signature index. The stage writes, inside its own folder (so its ``_COMPLETE.json`` lists it), the
keys of the documents it kept; a later run's ``dedup.against`` reads only this, never the documents:

    <run>/dedup/_index/_index.json   the settings the keys depend on (DedupConfig.index_settings), schemas
    <run>/dedup/_index/exact/        (text_hash, id): one row per kept document, hash-partitioned and
                                     sorted by text_hash
    <run>/dedup/_index/bands/        (band, band_key, id): one row per band of each kept document with
                                     shingles, hash-partitioned and sorted by (band, band_key)
    <run>/dedup/_index/signatures/   (id, signature): num_perm little-endian uint32 per kept document
                                     with shingles, to verify candidates without the earlier text

The leading underscore keeps Spark's readers of the stage folder (and the runner's count of outcomes)
out of it. With earlier indexes, each exact group's representative is first looked up in them: an
exact-hash hit, or an LSH band collision whose signature-estimated Jaccard reaches the threshold
(the earlier text is not read, so this is the estimate even under ``verify: jaccard``), rejects the
whole group with ``reject_rule`` = duplicate_of_earlier_run, ``survivor_id`` = the earlier document
and ``survivor_run`` = the earlier run's folder. The rest is deduplicated within the run as above. A
run's index holds only what it kept itself: indexes do not chain, ``against`` lists every earlier run.

Skew: every grouping is an aggregation (partial, map-side), and every one-off join that attaches a
group's value back to its members (exact groups, LSH buckets, candidate fan-in, clusters) goes
through ``join_hot_safe``, which spreads a key with more than ``hot_key_cap`` rows over several
tasks. A bucket of a million near-identical pages is a star of a million edges handled by many
tasks, not a million² pairs in one. The component rounds use one window per step instead (see
``_with_min`` in ``jobs/transforms/components.py``).

    spark-submit jobs/stages/dedup.py --input out/demo/filter/kept --output out --run demo
"""
from __future__ import annotations

import hashlib
import json
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import inheritable_thread_target
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from corpusmill.config import ConfigError
from jobs.console import progress_safe_print
from jobs.fs import HadoopFS
from jobs.report.render import number
from jobs.report.svg import histogram
from jobs.stage import OVER_LIMIT, Stage, Transformed
from jobs.transforms.components import (Checkpointer, attach_group_min, connected_components, fits_broadcast,
                                       join_hot_safe)
from jobs.transforms.dedup_index import INDEX, INDEX_META, EarlierIndex, open_index
from udfs.dedup.clusters import bucket_stars, first_of_groups, survivors
from udfs.dedup.minhash import DedupConfig, describe_bands, estimated_jaccard, jaccard, shingles, signature_batch

OWN_COLUMNS = ("cluster_id", "survivor_id", "survivor_run", "reject_rule", "_outcome")
EARLIER_RULE = "duplicate_of_earlier_run"
# Rows sharing an id: ids are deterministic (a hash of the record), so these are copies of one record
# (e.g. the same WARC read twice); the first in ``copy_order`` stands for the id, the others are rejected.
DUPLICATE_ID = "duplicate_id"
# xxhash64 of the text, computed in the JVM: ranks the copies of an id the same way in the signature
# rows (``one_per_id``) and in the documents (``copy_order``).
TEXT_KEY = "text_key"


# ---------------------------------------------------------------- the stage

class DedupStage(Stage):
    name = "dedup"
    config = DedupConfig
    order = 40
    required_columns = ("id", "text")
    # Clustering needs every document at once; the signature pass, the costly part, runs by chunks.
    has_chunk_step = True

    @classmethod
    def report_section(cls, facts) -> str:
        sizes = facts.stats[cls.name].get("cluster_size_histogram")
        if not isinstance(sizes, dict) or not sizes:
            return ""
        items = sorted(((str(k), int(v)) for k, v in sizes.items()),
                       key=lambda kv: int(kv[0]) if kv[0].isdigit() else 0)
        clusters = facts.stats[cls.name].get("clusters", sum(v for _, v in items))
        return (f"<h2>Duplicate clusters by size</h2><p>{number(clusters)} clusters of two or more documents; "
                "one survivor is kept per cluster.</p>"
                + histogram(items, "duplicate cluster sizes", "documents in the cluster", colour="#8c6d46"))

    # -- signatures ----------------------------------------------------------------------------

    def signatures(self, docs: DataFrame) -> DataFrame:
        """(id, text_hash, bands[, signature when fuzzy], survivor-order columns): one Arrow pass over
        id + text."""
        s: DedupConfig = self.settings
        order = [c.lstrip("-") for c in s.survivor_order]
        # Signatures verify candidates (verify: signature) and go into the index for later runs.
        with_signature = s.fuzzy
        fields = [docs.schema["id"], T.StructField(TEXT_KEY, T.LongType()), T.StructField("text_hash", T.StringType()),
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
                columns = [batch.column("id"), batch.column(TEXT_KEY), pa.array(out.exact_hashes, pa.string()), bands]
                names = ["id", TEXT_KEY, "text_hash", "bands"]
                if with_signature:
                    columns.append(pa.array([row.tobytes() for row in out.signatures], pa.binary()))
                    names.append("signature")
                columns += [batch.column(c) for c in order]
                yield pa.RecordBatch.from_arrays(columns, names=names + order)

        return (docs.select("id", F.xxhash64("text").alias(TEXT_KEY), "text", *order)
                .mapInArrow(compute, T.StructType(fields)))

    def chunk_step(self, docs: DataFrame) -> DataFrame:
        """Signatures of the documents with an id and a text within ``io.max_text_chars`` (the others
        are errors), every copy of an id included: copies may be in different chunks."""
        return self.signatures(docs.where(F.col("id").isNotNull() & F.col(OVER_LIMIT).isNull()))

    def one_per_id(self, sigs: DataFrame) -> DataFrame:
        """One signature row per id: of several sharing it, the first copy (``copy_order``'s, among
        the texts within the limit: the only ones with signatures). An aggregation, so an id with a
        million copies is combined map-side, not gathered in one task."""
        fields = [c for c in sigs.columns if c != "id"]
        first = F.min(F.struct(self.rank().alias("_rank"), F.col(TEXT_KEY).alias("_key"),
                               F.struct(*fields).alias("_row")))
        return sigs.groupBy("id").agg(first.alias("_first")).select("id", "_first._row.*")

    def copy_order(self, docs: DataFrame) -> Window:
        """The order of the rows sharing an id: texts within the limit first, then the survivor order,
        the text, and the whole row, so the copy kept is the same on every run."""
        hashable = [c for c in docs.columns if not isinstance(docs.schema[c].dataType, T.MapType)]
        return Window.partitionBy("id").orderBy(F.col(OVER_LIMIT).isNotNull(), self.rank(), F.xxhash64("text"),
                                                F.xxhash64(*hashable))

    # -- fuzzy candidates and verification -----------------------------------------------------

    def candidates(self, reps: DataFrame, checkpoint: Checkpointer) -> DataFrame:
        """Star edges (src → dst = bucket's least id) from every LSH bucket with 2+ members."""
        cap = self.settings.hot_key_cap
        members = reps.where(F.col("bands").isNotNull()).select(
            "id", F.posexplode("bands").alias("band", "band_hash"))
        buckets = attach_group_min(members, ["band", "band_hash"], F.col("id"), "bucket_min",
                                   spread_by="id", cap=cap, min_size=2, **self.groups_materialised(checkpoint))
        return (buckets.where(F.col("id") != F.col("bucket_min"))
                .select(F.col("id").alias("src"), F.col("bucket_min").alias("dst")).distinct())

    def verify(self, pairs: DataFrame, src_values: DataFrame, dst_values: DataFrame, mode: str) -> DataFrame:
        """The candidate pairs whose similarity reaches the threshold. ``src_values`` and
        ``dst_values`` hold (id, value) of each side: the text under mode jaccard (Jaccard of the
        shingle sets), the signature under mode signature (the MinHash estimate); none keeps every pair."""
        s: DedupConfig = self.settings
        if mode == "none":
            return pairs
        left = pairs.join(src_values.select(F.col("id").alias("src"), F.col("value").alias("src_value")), "src")
        fan_in = pairs.groupBy("dst").agg(F.count(F.lit(1)).alias("_n"))
        right = fan_in.join(dst_values.select(F.col("id").alias("dst"), F.col("value").alias("dst_value")), "dst")
        joined = join_hot_safe(left, right, ["dst"], spread_by="src", cap=s.hot_key_cap)

        def similarity(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                a = batch.column("src_value").to_pylist()
                b = batch.column("dst_value").to_pylist()
                if mode == "jaccard":
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

    def texts_named(self, docs: DataFrame, sigs: DataFrame, pairs: DataFrame, checkpoint: Checkpointer,
                    ids_repeat: bool) -> DataFrame:
        """``texts_of`` the ids ``pairs`` names."""
        named = pairs.select(F.col("src").alias("id")).union(pairs.select(F.col("dst").alias("id")))
        keys = checkpoint(sigs.select("id", TEXT_KEY).join(named, "id", "left_semi"))
        return self.texts_of(docs, self.small(keys), ids_repeat)

    def texts_of(self, docs: DataFrame, keys: DataFrame, ids_repeat: bool) -> DataFrame:
        """(id, value = text) of the documents ``keys`` lists by (id, text key): the text of the copy
        whose signature stands for the id (copies of one text: any one). Only those texts leave the scan
        of the documents."""
        texts = docs.where(F.col(OVER_LIMIT).isNull()).select("id", F.xxhash64("text").alias(TEXT_KEY),
                                                            F.col("text").alias("value"))
        texts = texts.join(keys, ["id", TEXT_KEY], "left_semi")
        # Only rows sharing an id can match one key twice; deduplicating sorts every text it passes.
        return (texts.dropDuplicates(["id"]) if ids_repeat else texts).drop(TEXT_KEY)

    def small(self, table: DataFrame) -> DataFrame:
        """``table`` (materialised) marked for broadcast when it has at most ``broadcast_rows`` rows:
        joined so, the documents stay where they are read instead of being shuffled to it."""
        return F.broadcast(table) if fits_broadcast(table, self.settings.broadcast_rows) else table

    def groups_materialised(self, checkpoint: Checkpointer) -> dict:
        """``attach_group_min``'s arguments that materialise its groups and broadcast them when small:
        the rows being grouped then stay where they are."""
        return {"checkpoint": checkpoint, "broadcast_rows": self.settings.broadcast_rows}

    # -- earlier runs --------------------------------------------------------------------------

    def earlier_indexes(self) -> List[EarlierIndex]:
        if not self.settings.against:
            return []
        fs = HadoopFS(self.spark)
        return [open_index(fs, entry, self.settings) for entry in self.settings.against]

    def artifact_fingerprint(self) -> str:
        """The earlier indexes deduplicated against: a re-run of one of those runs re-runs this stage."""
        identities = [index.identity for index in self.earlier_indexes()]
        return hashlib.sha256(json.dumps(identities).encode()).hexdigest()[:16] if identities else ""

    def earlier_duplicates(self, reps: DataFrame, earlier: List[EarlierIndex]) -> DataFrame:
        """(rep_id, survivor_id, survivor_run, _n) for each exact-group representative that
        duplicates a document kept by an earlier run: the same exact hash, or an LSH band collision
        verified on the signatures. Several hits: the first index listed, then its least id."""
        s: DedupConfig = self.settings
        id_type = reps.schema["id"].dataType
        mode = "none" if s.verify == "none" else "signature"
        found = None
        for position, index in enumerate(earlier):
            def read(name: str) -> DataFrame:
                return self.spark.read.schema(index.schemas[name]).parquet(f"{index.path}/{name}")

            hits = reps.select("id", "text_hash").join(
                read("exact").select("text_hash", F.col("id").alias("earlier_id")), "text_hash")
            hits = hits.select(F.col("id").alias("src"), F.col("earlier_id").alias("dst"))
            if s.fuzzy:
                members = reps.where(F.col("bands").isNotNull()).select(
                    "id", F.posexplode("bands").alias("band", "band_key"))
                pairs = (members.join(read("bands").withColumnRenamed("id", "earlier_id"), ["band", "band_key"])
                         .select(F.col("id").alias("src"), F.col("earlier_id").alias("dst")).distinct())
                signatures = read("signatures").withColumnRenamed("signature", "value")
                hits = hits.unionByName(self.verify(pairs, reps.select("id", F.col("signature").alias("value")),
                                                    signatures, mode))
            hits = hits.select(F.col("src").alias("rep_id"),
                               F.struct(F.lit(position).alias("position"), F.col("dst").cast(id_type).alias("id"))
                               .alias("hit"))
            found = hits if found is None else found.unionByName(hits)
        runs = F.array(*[F.lit(index.run) for index in earlier])
        best = found.groupBy("rep_id").agg(F.min("hit").alias("hit"))
        return (best.join(reps.select(F.col("id").alias("rep_id"), F.col("exact_size").alias("_n")), "rep_id")
                .select("rep_id", F.col("hit.id").alias("survivor_id"),
                        F.element_at(runs, F.col("hit.position") + 1).alias("survivor_run"), "_n"))

    def decide_earlier(self, grouped: DataFrame, hits: DataFrame) -> DataFrame:
        """Decisions for every member of the exact groups whose representative an earlier run kept."""
        members = join_hot_safe(grouped.select("id", "rep_id"), hits, ["rep_id"], spread_by="id",
                                cap=self.settings.hot_key_cap)
        return members.select("id", F.col("survivor_id").alias("cluster_id"), "survivor_id", "survivor_run",
                              F.lit(EARLIER_RULE).alias("reject_rule"), F.lit("rejected").alias("_outcome"))

    # -- clustering ----------------------------------------------------------------------------

    def cluster_in_spark(self, docs: DataFrame, sigs: DataFrame, checkpoint: Checkpointer, ids_repeat: bool,
                         earlier: List[EarlierIndex]) -> Tuple[DataFrame, dict]:
        """Every signature row's decision (``decide``), and the figures of the clustering: steps 2 to 5
        of the module docstring, each a skew-safe Spark step."""
        s: DedupConfig = self.settings
        figures: dict = {"clustered_on": "spark"}
        if s.exact:
            # The exact group's best-ranked document represents it in the fuzzy pass.
            grouped = checkpoint(attach_group_min(sigs, ["text_hash"], self.rank(), "rep", spread_by="id",
                                                  cap=s.hot_key_cap, size_column="exact_size",
                                                  **self.groups_materialised(checkpoint))
                                 .withColumn("rep_id", F.col("rep.id")).drop("rep"))
        else:
            grouped = sigs.withColumn("rep_id", F.col("id")).withColumn("exact_size", F.lit(1).cast("long"))
        reps = grouped.where(F.col("id") == F.col("rep_id"))
        earlier_decisions = None
        if earlier:
            # Groups an earlier run already kept leave before the run's own clustering.
            hits = checkpoint(self.earlier_duplicates(reps, earlier))
            earlier_decisions = self.decide_earlier(grouped, hits)
            grouped = grouped.join(hits.select("rep_id"), "rep_id", "left_anti")
            reps = reps.join(hits.select(F.col("rep_id").alias("id")), "id", "left_anti")
            figures["earlier_runs"] = [index.run for index in earlier]
        edges = sigs.select(F.col("id").alias("src"), F.col("id").alias("dst")).where(F.lit(False))
        if s.fuzzy:
            pairs = checkpoint(self.candidates(reps, checkpoint))
            if s.verify == "jaccard":
                # Materialised: both sides of the pairs read it, and the documents are scanned once.
                values = checkpoint(self.texts_named(docs, sigs, pairs, checkpoint, ids_repeat))
            else:
                values = sigs.select("id", F.col("signature").alias("value"))
            edges = checkpoint(self.verify(pairs, values, values, s.verify))
            figures.update(candidate_pairs=pairs.count(), verified_pairs=edges.count())
        # Components over representatives only: exact copies join their representative's cluster.
        few_edges = 0 < s.broadcast_rows and figures.get("verified_pairs", 0) <= s.broadcast_rows
        components, figures["cc_rounds"] = connected_components(edges, s.max_rounds, checkpoint, on_driver=few_edges)
        decisions = self.decide(grouped, components, checkpoint)
        if earlier_decisions is not None:
            decisions = decisions.unionByName(earlier_decisions, allowMissingColumns=True)
        return decisions, figures

    def cluster_on_driver(self, docs: DataFrame, sigs: DataFrame, checkpoint: Checkpointer,
                          ids_repeat: bool) -> Tuple[DataFrame, dict]:
        """``cluster_in_spark``'s decisions and figures, from the signature rows collected to the driver
        in survivor order: exact groups, LSH buckets and components are found with numpy
        (``udfs/dedup/clusters.py``); only the candidates' verification, which reads their texts, runs
        in Spark. On a small corpus the Spark steps cost a score of small queries, nearly all of it
        planning and scheduling."""
        s: DedupConfig = self.settings
        id_field = sigs.schema["id"]
        # One sorted task: a row's position is then its rank.
        rows = sigs.coalesce(1).sortWithinPartitions(self.rank()).select("id", TEXT_KEY, "text_hash", "bands").toArrow()
        n = rows.num_rows
        ids = rows.column("id").combine_chunks()
        position = np.arange(n)
        # numpy orders strings by code point, as Spark orders their UTF-8 bytes.
        id_rank = np.unique(ids.to_numpy(zero_copy_only=False), return_inverse=True)[1].reshape(-1)
        rep = first_of_groups(rows.column("text_hash").to_numpy()) if s.exact else position
        src = dst = np.empty(0, np.int64)
        figures = {"clustered_on": "driver", "cc_rounds": 0}
        if s.fuzzy:
            bands = rows.column("bands").combine_chunks()
            banded = np.flatnonzero((rep == position) & bands.is_valid().to_numpy(zero_copy_only=False))
            matrix = bands.take(banded).flatten().to_numpy().reshape(len(banded), s.banding()[0])
            star_src, star_dst = bucket_stars(matrix, id_rank[banded])
            pair_src, pair_dst = banded[star_src], banded[star_dst]
            id_type = id_field.dataType
            pairs = self.spark.createDataFrame(
                pa.table({"src": ids.take(pair_src), "dst": ids.take(pair_dst)}),
                T.StructType([T.StructField("src", id_type), T.StructField("dst", id_type)]))
            if s.verify == "jaccard":
                named = np.unique(np.concatenate([pair_src, pair_dst]))
                keys = self.spark.createDataFrame(
                    pa.table({"id": ids.take(named), TEXT_KEY: rows.column(TEXT_KEY).take(named)}),
                    T.StructType([T.StructField("id", id_type), T.StructField(TEXT_KEY, T.LongType())]))
                # Materialised: both sides of the pairs read it, and the documents are scanned once.
                values = checkpoint(self.texts_of(docs, F.broadcast(keys), ids_repeat))
            else:
                values = sigs.select("id", F.col("signature").alias("value"))
            edges = self.verify(pairs, values, values, s.verify).toArrow()
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
        return self.spark.createDataFrame(decisions, schema), figures

    # -- the whole stage -----------------------------------------------------------------------

    def transform(self, docs: DataFrame, resources: ExitStack) -> Transformed:
        s: DedupConfig = self.settings
        bands, rows = s.banding()
        curve = describe_bands(bands, rows)
        progress_safe_print(f"dedup: {curve}")
        figures = {"lsh_bands": bands, "lsh_rows": rows, "s_curve": curve}
        checkpoint = Checkpointer(self.spark, s.checkpoint_dir)
        earlier = self.earlier_indexes()  # checked before the expensive pass

        def any_id_repeats() -> bool:
            return not docs.where(F.col("id").isNotNull()).groupBy("id").count().where(F.col("count") > 1).isEmpty()

        # Signatures computed and committed chunk by chunk, or here (while the ids are checked: that
        # query alone leaves a core idle); one row per id before anything is joined on id.
        with beside(self.spark, any_id_repeats) as repeats:
            signed = self.chunk_results if self.chunk_results is not None else checkpoint(self.chunk_step(docs))
        ids_repeat = repeats.result()
        # Chunks may hold copies of one id; signatures computed here from distinct ids are one per id.
        sigs = checkpoint(self.one_per_id(signed)) if ids_repeat or self.chunk_results is not None else signed

        # Up to broadcast_rows documents are clustered on the driver, unless earlier runs' indexes
        # (read by Spark) take part.
        if not earlier and fits_broadcast(sigs, s.broadcast_rows):
            decisions, found = self.cluster_on_driver(docs, sigs, checkpoint, ids_repeat)
        else:
            decisions, found = self.cluster_in_spark(docs, sigs, checkpoint, ids_repeat, earlier)
        figures.update(found)
        # Read twice, by the output and by the index of what was kept: decided once.
        decisions = checkpoint(decisions)
        kept_columns = [c for c in docs.columns if c not in OWN_COLUMNS]
        out = docs.select(*kept_columns).join(self.small(decisions), "id", "left")
        if ids_repeat:
            # One decision per id; of the rows sharing an id the first copy takes it, the others are
            # rejected as duplicate_id (survivor: the same id).
            repeat = (F.col("id").isNotNull()
                      & (F.row_number().over(self.copy_order(docs.select(*kept_columns))) > 1))
            repeats = {"_outcome": F.lit("rejected"), "reject_rule": F.lit(DUPLICATE_ID), "survivor_id": F.col("id")}
            if "survivor_run" in out.columns:
                repeats["survivor_run"] = F.lit(None).cast("string")
            out = (out.withColumn("_repeat", repeat)
                   .withColumns({name: F.when(F.col("_repeat"), value).otherwise(F.col(name))
                                 for name, value in repeats.items()})
                   .drop("_repeat"))
        # Rows without an id cannot be deduplicated or joined back: errors (as are texts over the limit,
        # which have no signature either: the runner names them).
        rows_out = (out.withColumn("_outcome", F.coalesce("_outcome", F.lit("error")))
                    .withColumn("error", F.when(F.col("id").isNull(), F.lit("missing id"))))
        kept_keys = decisions.where(F.col("_outcome") == "kept").select("id").join(sigs, "id")
        return Transformed(rows_out, {**figures, "index": kept_keys})

    # -- the index of what was kept ------------------------------------------------------------

    def write(self, out: Transformed, tmp_dir: str) -> None:
        run_dir = HadoopFS(self.spark).qualify(tmp_dir).rsplit("/", 1)[0]
        if run_dir in out.facts.get("earlier_runs", []):
            # Its own earlier index would reject every document it kept last time.
            raise ConfigError(f"dedup.against: {run_dir} is this run; list earlier runs only")
        # The index is written while the documents are: both read the materialised decisions, and each
        # write alone leaves cores idle between its jobs. A failed document write waits for the index
        # write, then is raised.
        with beside(self.spark, self.write_index, out.facts["index"], f"{tmp_dir}/{INDEX}") as index:
            super().write(out, tmp_dir)
        index.result()

    def write_index(self, kept: DataFrame, index_dir: str) -> None:
        """The layout in the module docstring; ``_index.json`` last."""
        compression = self.cfg.io.parquet_compression
        datasets = {"exact": kept.select("text_hash", "id").repartition("text_hash").sortWithinPartitions("text_hash")}
        if self.settings.fuzzy:
            with_bands = kept.where(F.col("bands").isNotNull())
            datasets["bands"] = (with_bands.select(F.posexplode("bands").alias("band", "band_key"), "id")
                                 .repartition("band", "band_key").sortWithinPartitions("band", "band_key"))
            datasets["signatures"] = with_bands.select("id", "signature").repartition("id").sortWithinPartitions("id")

        def write(name: str) -> None:
            datasets[name].write.option("compression", compression).parquet(f"{index_dir}/{name}")

        # Side by side: each write is a shuffle of few tasks, which alone leaves a core idle.
        with ExitStack() as writes:
            written = [writes.enter_context(beside(self.spark, write, name)) for name in datasets]
        for done in written:
            done.result()
        HadoopFS(self.spark).write_json(f"{index_dir}/{INDEX_META}", {
            "format": 1, "settings": self.settings.index_settings(),
            "schemas": {name: frame.schema.jsonValue() for name, frame in datasets.items()}})

    def rank(self) -> Column:
        """Survivor order as a struct: min() picks the survivor (survivor_order, then lowest id)."""
        keys = []
        for spec in self.settings.survivor_order:
            column = F.col(spec.lstrip("-"))
            # Nulls rank last; "-" orders a numeric column descending.
            keys += [column.isNull(), -column if spec.startswith("-") else column]
        return F.struct(*[k.alias(f"k{i}") for i, k in enumerate(keys)], F.col("id").alias("id"))

    def decide(self, grouped: DataFrame, components: DataFrame, checkpoint: Checkpointer) -> DataFrame:
        """(id, cluster_id, survivor_id, reject_rule, _outcome) for every document. A rejected
        document other than its exact group's representative is an exact duplicate, a rejected
        representative a near duplicate."""
        cap = self.settings.hot_key_cap
        # Clusters and survivors are decided on representatives (one per distinct text) ...
        reps = (grouped.where(F.col("id") == F.col("rep_id"))
                .join(components, "id", "left")
                .withColumn("cluster_id", F.coalesce("root", "id")))
        reps = attach_group_min(reps, ["cluster_id"], self.rank(), "best", spread_by="id", cap=cap,
                                **self.groups_materialised(checkpoint))
        # ... and reach every copy through its exact group, a possibly hot key: salted.
        reps = checkpoint(reps.select(F.col("id").alias("rep_id"), "cluster_id", "best",
                                      F.col("exact_size").alias("_n")))
        ranked = join_hot_safe(grouped.select("id", "rep_id"), reps, ["rep_id"], spread_by="id", cap=cap,
                               broadcast=fits_broadcast(reps, self.settings.broadcast_rows))
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
        stats = {k: v for k, v in facts.items() if k != "index"}
        parts = [f"{stage_dir}/{d}" for d in ("kept", "rejected") if fs.exists(f"{stage_dir}/{d}")]
        histogram: Dict[str, int] = {}
        if parts:
            written = self.spark.read.parquet(*parts)
            if "survivor_run" in written.columns:
                per_run = written.where(F.col("survivor_run").isNotNull()).groupBy("survivor_run").count().collect()
                stats["duplicates_of_earlier_runs"] = dict(sorted((r[0], r[1]) for r in per_run))
                written = written.where(F.col("survivor_run").isNull())  # clusters of this run only
            sizes = written.groupBy("cluster_id").count()
            for row in sizes.where(F.col("count") > 1).groupBy("count").count().collect():
                histogram[str(row[0])] = row[1]
        return {**stats,
                "clusters": sum(histogram.values()),
                "cluster_size_histogram": dict(sorted(histogram.items(), key=lambda kv: int(kv[0])))}


@contextmanager
def beside(spark, work: Callable, *args) -> Iterator[Future]:
    """``work(*args)`` in a second thread while the ``with`` block runs, its Spark jobs in the caller's
    job group (``inheritable_thread_target``); leaving the block waits for it, also when the block raises."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield pool.submit(inheritable_thread_target(spark)(work), *args)


def _unpack(values: List[Optional[bytes]], num_perm: int) -> np.ndarray:
    return np.frombuffer(b"".join(values), dtype=np.uint32).reshape(-1, num_perm)


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("dedup"))
