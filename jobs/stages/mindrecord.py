"""mindrecord: bucketed Parquet → one MindRecord file per bucket (= shard), written in parallel.

Two modes: ``sequences`` writes the packed sequences of ``pack`` (``input_ids``, ``segment_ids``,
``loss_mask`` as fixed-shape int32 arrays of ``seq_len``, plus the sequence ``id``); ``documents``
writes the documents of ``mix`` (id, url, text, domain, quality_score) for users who tokenize at
training time. ``auto`` picks ``sequences`` when the input has ``input_ids``. The shard count is the
bucket count of ``mix`` (set it to the training device count or a multiple of it); ``loader`` reads
the shards for a rank.

Each Spark task writes its shard(s) with ``mindspore.mindrecord.FileWriter`` into a scratch folder on
its executor (``mindrecord.scratch_dir``), then uploads the ``.mindrecord`` and ``.mindrecord.db``
files into the stage's temporary folder with ``pyarrow.fs`` (``corpusmill.storage.upload_files``), so
``--output`` may be any URI both Spark and pyarrow reach: a local or mounted path, ``file://``,
``hdfs://`` (libhdfs on the nodes), ``s3://``/``s3a://`` (endpoint and keys from the
``spark.hadoop.fs.s3a.*`` settings or the AWS environment), ``gs://``, ``abfs://``. The runner then
commits the folder like every other stage's. ``mindspore.dataset.MindDataset`` reads the list of files
as one dataset; ``loader`` downloads remote shards to a local cache first.

The shards a training job gets: exactly ``mix.buckets`` files (a shard no row reached is written
empty, valid for MindDataset), mode 0644, and rows per shard within one of each other: rows keep
their bucket's shard except for the fewest moves that even the counts out
(``udfs.mindrecord.records.balance_plan``). The rows moved are, as far as there are enough, rows none of whose
documents has another copy (a repeat of ``mix``), so the copies ``pack`` put in different buckets stay
in different shards. ``_stats.json`` lists rows and tokens per shard (tokens: the
non-padding tokens of the sequences, or mix's ``token_estimate`` of the documents).
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from functools import cached_property
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from corpusmill.config import ConfigError
from corpusmill.storage import check_reachable, is_remote, scratch_root, upload_files
from jobs.buckets import one_task_per_bucket
from jobs.fs import HadoopFS
from jobs.stage import OVER_LIMIT, TEXT_TOO_LONG, Stage, Transformed
from udfs.mindrecord.manifest import MANIFEST, check_compatible, manifest_stages
from udfs.mindrecord.records import (COPY_SUFFIX, DOCUMENT_SCHEMA, MISSING_SCORE, SEQUENCE_FIELDS, MindRecordConfig,
                                     balance_plan, mindrecord_rows, sequence_schema, shard_name)

# The most moved rows looked up by key in a broadcast table (a few MB); a run that moves more (a bucket
# far fuller than the rest) numbers its whole rows.
MAX_LISTED_MOVES = 200_000
# text_too_long: documents (documents mode) whose text is over io.max_text_chars, left out of the shard.
SHARDS_SCHEMA = "shard int, file string, rows long, tokens long, text_too_long long, _outcome string"


@dataclass(frozen=True)
class InputSummary:
    """What one job over the stage's rows finds: rows per bucket, the shortest and longest window
    (sequences mode), and whether every copy is a first copy (``<document>#0``), in which case no
    document has another copy."""
    rows_per_bucket: Dict[Optional[int], int]
    first_copies_only: bool
    shortest: Optional[int] = None
    longest: Optional[int] = None


def summarize(rows: DataFrame, length: Optional[Column] = None) -> InputSummary:
    """The ``InputSummary`` of ``rows`` (``bucket``, ``_copies``); ``length``: the window length of a row."""
    first_copies = F.forall("_copies", lambda copy: copy.endswith("#0"))
    aggregates = [F.count(F.lit(1)).alias("rows"), F.min(first_copies).alias("first_copies_only")]
    if length is not None:
        aggregates += [F.min(length).alias("shortest"), F.max(length).alias("longest")]
    found = rows.groupBy("bucket").agg(*aggregates).collect()
    lengths = [(r["shortest"], r["longest"]) for r in found] if length is not None else []
    return InputSummary({r["bucket"]: r["rows"] for r in found},
                        all(r["first_copies_only"] is not False for r in found),
                        min((s for s, _ in lengths), default=None), max((l for _, l in lengths), default=None))


def document_of(copy):
    """The document of a copy's name (``<id>#<epoch>``)."""
    return F.regexp_replace(copy, COPY_SUFFIX, "")


def with_stays(rows: DataFrame) -> DataFrame:
    """``rows`` with ``_stays``: whether the row holds a copy of a document that has another copy anywhere."""
    copies = rows.select(F.explode("_copies").alias("copy")).distinct()
    repeated = (copies.groupBy(document_of(F.col("copy")).alias("document")).count()
                .where(F.col("count") > 1).select("document"))
    # Keyed by the row's list of copies (rows with the same list hold the same documents), so the join
    # back matches each row once.
    holding = (rows.select("_copies").distinct().withColumn("copy", F.explode("_copies"))
               .join(repeated, document_of(F.col("copy")) == F.col("document"), "left_semi")
               .select("_copies").distinct().withColumn("_stays", F.lit(True)))
    return rows.join(holding, "_copies", "left").withColumn("_stays", F.coalesce(F.col("_stays"), F.lit(False)))


def balanced(rows: DataFrame, buckets: int, key_columns: Sequence[str], summary: InputSummary) -> DataFrame:
    """``rows`` with a ``shard`` column: the bucket, but for the rows ``balance_plan`` moves.

    ``rows`` has ``_copies``, the document copies each row holds (dropped here). pack put the copies of
    a document in different buckets; a row holding one is moved only when a bucket has too few rows of
    documents without copies to give, so that copies stay in different shards.

    The rows of a bucket are numbered in one fixed order: the rows that stay first (``balance_plan``
    moves the rows past a bucket's target), then a hash of ``key_columns`` (small columns that tell the
    rows apart, e.g. the id), then a hash of the whole row. The numbering is done on those small columns
    alone and the moved rows are looked up by bucket and key, so the whole rows cross the cluster once,
    to their shard. Where that cannot name the moved rows (two rows of a bucket share a key and one of
    them moves, or more than ``MAX_LISTED_MOVES`` rows move) the whole rows are numbered instead.
    ``summary`` is ``summarize(rows)``; where it finds first copies only, no row needs to stay.
    """
    counts = summary.rows_per_bucket
    strays = sorted(str(b) for b in counts if b is None or not 0 <= b < buckets)
    if strays:
        raise ConfigError(f"--input: bucket(s) {', '.join(strays)} are outside 0..{buckets - 1} (mix.buckets); "
                          f"the input was bucketed with another bucket count")
    moves = balance_plan(counts, buckets)
    columns = [c for c in rows.columns if c != "_copies"]
    if not moves:
        return rows.withColumn("shard", F.col("bucket")).select(*columns, "shard")
    keyed = rows.withColumn("_key", F.xxhash64(*key_columns))
    order = [F.col("_stays").desc(), F.col("_key")]
    stays = (lambda frame: frame.withColumn("_stays", F.lit(False))) if summary.first_copies_only else with_stays
    small = placed(stays(keyed.select("bucket", "_copies", "_key")), moves, order)
    sharing = F.count(F.lit(1)).over(Window.partitionBy("bucket", "_key"))
    listed = (small.withColumn("_sharing", sharing).where(F.col("shard") != F.col("bucket"))
              .select("bucket", "_key", "shard", "_sharing").limit(MAX_LISTED_MOVES + 1).collect())
    if len(listed) <= MAX_LISTED_MOVES and all(r["_sharing"] == 1 for r in listed):
        moved = rows.sparkSession.createDataFrame([(r["bucket"], r["_key"], r["shard"]) for r in listed],
                                                  "bucket int, _key long, _moved_to int")
        return (keyed.join(F.broadcast(moved), ["bucket", "_key"], "left")
                .withColumn("shard", F.coalesce(F.col("_moved_to"), F.col("bucket"))).select(*columns, "shard"))
    return placed(stays(keyed), moves, order + [F.xxhash64(*rows.columns)]).select(*columns, "shard")


def placed(rows: DataFrame, moves: List[Tuple[int, int, int, int]], order: list) -> DataFrame:
    """``rows`` with ``shard``: each bucket's rows numbered from 0 in ``order``, and those of a move's
    range sent to its shard."""
    moved = [((F.col("bucket") == bucket) & F.col("_index").between(start, stop - 1), target)
             for bucket, start, stop, target in moves]
    shard = F.when(*moved[0])
    for condition, target in moved[1:]:
        shard = shard.when(condition, target)
    return (rows.withColumn("_index", F.row_number().over(Window.partitionBy("bucket").orderBy(*order)) - 1)
            .withColumn("shard", shard.otherwise(F.col("bucket"))).drop("_index"))


def with_placeholders(rows: DataFrame, buckets: int) -> DataFrame:
    """One placeholder row per shard, so that every shard's task runs and writes a file, empty or not."""
    spark = rows.sparkSession
    fields = [F.lit(None).cast(f.dataType).alias(f.name) for f in rows.schema.fields if f.name != "shard"]
    placeholders = spark.range(buckets).select(*fields, F.col("id").cast("int").alias("shard"),
                                               F.lit(True).alias("_placeholder"))
    return rows.withColumn("_placeholder", F.lit(False)).unionByName(placeholders)


def token_count(rows: pa.RecordBatch) -> int:
    """The tokens of rows to be written: the non-padding positions of sequences (counted on the flat
    array here, where a Spark lambda would visit every position), or the documents' ``_tokens``."""
    if "_tokens" in rows.schema.names:
        return int(pc.sum(rows.column("_tokens")).as_py() or 0)
    return int(np.count_nonzero(rows.column("segment_ids").flatten().to_numpy(zero_copy_only=False) > 0))


class MindRecordStage(Stage):
    name = "mindrecord"
    config = MindRecordConfig
    order = 90
    units = ("sequences", "sequences")
    kept_documents = False
    reads = ("mix.buckets", "pack.seq_len")
    required_columns = ("bucket",)  # from the mix stage
    counts_its_input = True  # summarize()
    makes_over_limit_errors = True  # in the writing tasks

    @staticmethod
    def report_cards(stats: dict) -> list:
        shards = stats.get("shards")
        return [("MindRecord shards", len(shards)), ("MindRecord rows", stats.get("kept"))] if isinstance(shards, list) else []

    @staticmethod
    def output_note(stats: dict) -> str:
        return f"in {len(stats['shards']):,} shard files" if isinstance(stats.get("shards"), list) else ""

    @cached_property
    def earlier_stages(self) -> List[dict]:
        """The stages of earlier runs this run's manifest lists (``mindrecord.earlier``), each finished;
        read once, so the fingerprint and the manifest written describe the same shards."""
        stages = []
        for uri in self.settings.earlier:
            if not is_remote(uri):  # the manifest is read from elsewhere: absolute local paths
                uri = HadoopFS(self.spark).qualify(uri)
            try:
                stages.extend(manifest_stages(uri, HadoopFS(self.spark).s3_options()))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"mindrecord.earlier: {uri}: {str(exc).splitlines()[0]}") from None
        return stages

    def artifact_fingerprint(self) -> str:
        """The earlier stages' shards are part of this stage's output (its manifest)."""
        earlier = self.earlier_stages
        return hashlib.sha256(json.dumps(earlier, sort_keys=True).encode()).hexdigest()[:16] if earlier else ""

    def transform(self, docs: DataFrame, resources: ExitStack) -> Transformed:
        mode = self.settings.mode
        if mode == "auto":
            mode = "sequences" if "input_ids" in docs.columns else "documents"
        if mode == "sequences":
            if "input_ids" not in docs.columns:
                raise ConfigError("mindrecord.mode: sequences needs packed input (input_ids); run the pack stage "
                                  "first or set mode: documents")
            copies = (F.transform("segments", lambda s: s["sample_id"]) if "segments" in docs.columns
                      else F.array().cast("array<string>"))
            rows = docs.select("bucket", "id", *SEQUENCE_FIELDS, copies.alias("_copies"))
            # The window length from loss_mask, a column far cheaper to read than input_ids.
            summary = summarize(rows, F.size("loss_mask"))
            if summary.shortest != summary.longest:
                raise ConfigError(f"--input: sequences of {summary.shortest} to {summary.longest} tokens (loss_mask); "
                                  f"MindRecord holds windows of one length, as pack writes them")
            # The window length of the data itself (pack's seq_len unless the input came from elsewhere).
            seq_len = summary.longest if summary.longest is not None else self.cfg.pack.seq_len
            return Transformed(rows, self.shard_facts("sequences", seq_len, sequence_schema(seq_len), summary))
        # A document is written whole: one over the limit is counted as an error, never sent to a worker.
        if OVER_LIMIT not in docs.columns:  # no text: nothing was held back
            docs = docs.withColumn(OVER_LIMIT, F.lit(None))
        columns = {c: (F.col(c) if c in docs.columns else F.lit(None)) for c in (*DOCUMENT_SCHEMA, "sample_id")}
        rows = docs.select(F.col("bucket"), F.col(OVER_LIMIT).cast("long").alias(OVER_LIMIT), *[
            F.coalesce(columns["id"].cast("string"), F.lit("")).alias("id"),
            F.coalesce(columns["url"].cast("string"), F.lit("")).alias("url"),
            F.coalesce(columns["text"].cast("string"), F.lit("")).alias("text"),
            F.coalesce(columns["domain"].cast("string"), F.lit("")).alias("domain"),
            F.coalesce(columns["quality_score"].cast("float"), F.lit(MISSING_SCORE)).alias("quality_score"),
            (F.col("token_estimate") if "token_estimate" in docs.columns else F.lit(None)).cast("long").alias("_tokens"),
            F.array(F.coalesce(columns["sample_id"].cast("string"), columns["id"].cast("string"), F.lit("")))
            .alias("_copies"),
        ])
        return Transformed(rows, self.shard_facts("documents", None, DOCUMENT_SCHEMA, summarize(rows)))

    def shard_facts(self, mode: str, seq_len: Optional[int], schema: dict, summary: InputSummary) -> dict:
        earlier = self.earlier_stages
        check_compatible(earlier, mode, seq_len)  # before any shard is written
        return {"schema": schema, "mode": mode, "seq_len": seq_len, "earlier": earlier, "summary": summary,
                "records_in": sum(summary.rows_per_bucket.values())}

    def write(self, out: Transformed, tmp_dir: str) -> None:
        buckets = self.cfg.mix.buckets
        header_size = self.settings.header_size_kb * 1024
        page_size = self.settings.page_size_kb * 1024
        scratch = self.settings.scratch_dir
        schema, schema_name = out.facts["schema"], f"corpusmill_{out.facts['mode']}"
        s3_options = HadoopFS(self.spark).s3_options()
        check_reachable(tmp_dir, s3_options, "the mindrecord stage uploads its shards")

        def write_shards(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            from mindspore.mindrecord import FileWriter

            writers: Dict[int, FileWriter] = {}
            rows: Dict[int, int] = {}
            tokens: Dict[int, int] = {}
            too_long: Dict[int, int] = {}
            with tempfile.TemporaryDirectory(prefix="corpusmill-mindrecord-", dir=scratch_root(scratch)) as local:
                for batch in batches:
                    shards = batch.column("shard").to_numpy(zero_copy_only=False)
                    real = ~batch.column("_placeholder").to_numpy(zero_copy_only=False)
                    held_back = (batch.column(OVER_LIMIT).is_valid().to_numpy(zero_copy_only=False)
                                 if OVER_LIMIT in batch.schema.names else np.zeros(batch.num_rows, bool))
                    for shard in np.unique(shards).tolist():
                        if shard not in writers:
                            writer = FileWriter(os.path.join(local, shard_name(shard)), shard_num=1, overwrite=True)
                            writer.set_header_size(header_size)
                            writer.set_page_size(page_size)
                            writer.add_schema(schema, schema_name)
                            writers[shard], rows[shard], tokens[shard], too_long[shard] = writer, 0, 0, 0
                        too_long[shard] += int(((shards == shard) & real & held_back).sum())
                        part = batch.filter(pa.array((shards == shard) & real & ~held_back))
                        if part.num_rows:
                            writers[shard].write_raw_data(mindrecord_rows(part, schema))
                            rows[shard] += part.num_rows
                            tokens[shard] += token_count(part)
                for shard, writer in writers.items():
                    writer.commit()
                    path = os.path.join(local, shard_name(shard))
                    upload_files([path, f"{path}.db"], tmp_dir, s3_options)
            if rows:
                yield pa.RecordBatch.from_pydict({"shard": pa.array(list(rows), pa.int32()),
                                                  "file": [shard_name(b) for b in rows],
                                                  "rows": pa.array(list(rows.values()), pa.int64()),
                                                  "tokens": pa.array(list(tokens.values()), pa.int64()),
                                                  "text_too_long": pa.array(list(too_long.values()), pa.int64()),
                                                  "_outcome": ["kept"] * len(rows)})

        rows = with_placeholders(balanced(out.rows, buckets, ("id", "_copies"), out.facts["summary"]), buckets)
        shards = one_task_per_bucket(rows, "shard", buckets).mapInArrow(write_shards, SHARDS_SCHEMA)
        # repartition, not coalesce: coalesce(1) would pull the shard writers into one task.
        shards.repartition(1).write.mode("overwrite").parquet(f"{tmp_dir}/shards")

    def count_outcomes(self, tmp_dir: str, schema) -> Dict[str, Dict[str, int]]:
        kept, too_long = self.spark.read.parquet(f"{tmp_dir}/shards").agg(F.sum("rows"), F.sum("text_too_long")).first()
        return {"kept": {"-": int(kept or 0)}, **({"error": {TEXT_TOO_LONG: int(too_long)}} if too_long else {})}

    def extra_stats(self, stage_dir: str, facts: dict) -> dict:
        shards = self.spark.read.parquet(f"{stage_dir}/shards").orderBy("shard").collect()
        rows = [r["rows"] for r in shards]
        stats = {"mode": facts["mode"], "seq_len": facts["seq_len"],
                 # tokens: non-padding tokens (sequences) or mix's token_estimate (documents)
                 "shards": [{"file": r["file"], "rows": r["rows"], "tokens": r["tokens"]} for r in shards],
                 "rows_per_shard": {"min": min(rows, default=0), "max": max(rows, default=0)}}
        if facts["earlier"]:
            stages = facts["earlier"] + [{"stage": ".", **{k: stats[k] for k in ("mode", "seq_len", "shards")}}]
            HadoopFS(self.spark).write_json(f"{stage_dir}/{MANIFEST}", {"stages": stages})
            stats["manifest"] = {"stages": len(stages), "shards": sum(len(e["shards"]) for e in stages),
                                 "rows": sum(s["rows"] for e in stages for s in e["shards"])}
        return stats

    def finalize(self, tmp_dir: str, schema) -> None:
        """Shards are uploaded into place; nothing to rename."""


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("mindrecord"))
