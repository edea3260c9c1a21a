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
``_with_min`` in ``components.py``).

The parts, one module each beside this class: ``signatures.py`` (step 1, and the orders that pick one
row among several), ``clustering.py`` (steps 2 to 5, in Spark or on the driver), ``verification.py``
(candidate pairs verified on texts or signatures), ``earlier_runs.py`` (the signature index, written
and read), ``components.py`` (connected components and skew-safe joins, with no notion of documents)
and ``threads.py`` (Spark work beside the caller's).

    spark-submit jobs/stages/dedup/__main__.py --input out/demo/filter/kept --output out --run demo
"""
from __future__ import annotations

import hashlib
import json
from contextlib import ExitStack
from typing import Dict

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from corpusmill.config import ConfigError
from jobs.console import progress_safe_print
from jobs.fs import HadoopFS
from jobs.report.render import number
from jobs.report.svg import histogram
from jobs.stage import OVER_LIMIT, Stage, Transformed
from jobs.stages.dedup.clustering import cluster_in_spark, cluster_on_driver
from jobs.stages.dedup.components import Checkpointer, fits_broadcast, small
from jobs.stages.dedup.earlier_runs import INDEX, earlier_indexes, write_index
from jobs.stages.dedup.signatures import copy_order, one_per_id, signatures
from jobs.stages.dedup.threads import beside
from udfs.dedup.minhash import DedupConfig, describe_bands

OWN_COLUMNS = ("cluster_id", "survivor_id", "survivor_run", "reject_rule", "_outcome")
# Rows sharing an id: ids are deterministic (a hash of the record), so these are copies of one record
# (e.g. the same WARC read twice); the first in ``copy_order`` stands for the id, the others are rejected.
DUPLICATE_ID = "duplicate_id"
# A document whose text is null (not held back for its length): nothing to compare, and two such are
# no duplicates of each other.
NO_TEXT = "no_text"


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

    def chunk_step(self, docs: DataFrame) -> DataFrame:
        """Signatures of the documents with an id and a text within ``io.max_text_chars`` (the others
        are errors or rejected as no_text), every copy of an id included: copies may be in different chunks."""
        return signatures(docs.where(F.col("id").isNotNull() & F.col("text").isNotNull() & F.col(OVER_LIMIT).isNull()),
                          self.settings)

    def artifact_fingerprint(self) -> str:
        """The earlier indexes deduplicated against: a re-run of one of those runs re-runs this stage."""
        identities = [index.identity for index in earlier_indexes(self.spark, self.settings)]
        return hashlib.sha256(json.dumps(identities).encode()).hexdigest()[:16] if identities else ""

    def transform(self, docs: DataFrame, resources: ExitStack) -> Transformed:
        s: DedupConfig = self.settings
        bands, rows = s.banding()
        curve = describe_bands(bands, rows)
        progress_safe_print(f"dedup: {curve}")
        figures = {"lsh_bands": bands, "lsh_rows": rows, "s_curve": curve}
        checkpoint = Checkpointer(self.spark, s.checkpoint_dir)
        earlier = earlier_indexes(self.spark, s)  # checked before the expensive pass

        def any_id_repeats() -> bool:
            return not docs.where(F.col("id").isNotNull()).groupBy("id").count().where(F.col("count") > 1).isEmpty()

        # Signatures computed and committed chunk by chunk, or here (while the ids are checked: that
        # query alone leaves a core idle); one row per id before anything is joined on id.
        with beside(self.spark, any_id_repeats) as repeats:
            signed = self.chunk_results if self.chunk_results is not None else checkpoint(self.chunk_step(docs))
        ids_repeat = repeats.result()
        # Chunks may hold copies of one id; signatures computed here from distinct ids are one per id.
        sigs = checkpoint(one_per_id(signed, s)) if ids_repeat or self.chunk_results is not None else signed

        # Up to broadcast_rows documents are clustered on the driver, unless earlier runs' indexes
        # (read by Spark) take part.
        if not earlier and fits_broadcast(sigs, s.broadcast_rows):
            decisions, found = cluster_on_driver(self.spark, docs, sigs, s, checkpoint, ids_repeat)
        else:
            decisions, found = cluster_in_spark(self.spark, docs, sigs, s, checkpoint, ids_repeat, earlier)
        figures.update(found)
        # Read twice, by the output and by the index of what was kept: decided once.
        decisions = checkpoint(decisions)
        kept_columns = [c for c in docs.columns if c not in OWN_COLUMNS]
        out = docs.select(*kept_columns).join(small(decisions, s.broadcast_rows), "id", "left")
        if ids_repeat:
            # One decision per id; of the rows sharing an id the first copy takes it, the others are
            # rejected as duplicate_id (survivor: the same id).
            repeat = (F.col("id").isNotNull()
                      & (F.row_number().over(copy_order(docs.select(*kept_columns), s)) > 1))
            repeats = {"_outcome": F.lit("rejected"), "reject_rule": F.lit(DUPLICATE_ID), "survivor_id": F.col("id")}
            if "survivor_run" in out.columns:
                repeats["survivor_run"] = F.lit(None).cast("string")
            out = (out.withColumn("_repeat", repeat)
                   .withColumns({name: F.when(F.col("_repeat"), value).otherwise(F.col(name))
                                 for name, value in repeats.items()})
                   .drop("_repeat"))
        # Rows without an id cannot be deduplicated or joined back: errors (as are texts over the limit,
        # which have no signature either: the runner names them). Null texts are rejected.
        no_text = F.col("id").isNotNull() & F.col("text").isNull() & F.col(OVER_LIMIT).isNull()
        rows_out = (out.withColumn("_outcome", F.when(no_text, F.lit("rejected"))
                                   .otherwise(F.coalesce("_outcome", F.lit("error"))))
                    .withColumn("reject_rule", F.when(no_text, F.lit(NO_TEXT)).otherwise(F.col("reject_rule")))
                    .withColumn("error", F.when(F.col("id").isNull(), F.lit("missing id"))))
        kept_keys = decisions.where(F.col("_outcome") == "kept").select("id").join(sigs, "id")
        return Transformed(rows_out, {**figures, "index": kept_keys})

    def write(self, out: Transformed, tmp_dir: str) -> None:
        run_dir = HadoopFS(self.spark).qualify(tmp_dir).rsplit("/", 1)[0]
        if run_dir in out.facts.get("earlier_runs", []):
            # Its own earlier index would reject every document it kept last time.
            raise ConfigError(f"dedup.against: {run_dir} is this run; list earlier runs only")
        # The index is written while the documents are: both read the materialised decisions, and each
        # write alone leaves cores idle between its jobs. A failed document write waits for the index
        # write, then is raised.
        with beside(self.spark, write_index, self.spark, out.facts["index"], f"{tmp_dir}/{INDEX}", self.settings,
                    self.cfg.io.parquet_compression) as index:
            super().write(out, tmp_dir)
        index.result()

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
