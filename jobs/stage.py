"""The stage contract and the runner that gives every stage the same run layout.

A stage is one small class. It declares its name, the config it reads (``reads``: its own section,
the I/O settings and any dotted path of another section, e.g. ``mix.buckets``), the input columns
it needs and the columns its output is partitioned by. Its ``transform`` maps the input DataFrame
to ``Transformed``: rows carrying an ``_outcome`` column (``kept``, ``rejected``, ``error``,
``skipped``) and, on dropped rows, a reason column, plus the few facts later hooks need (a plan,
cut-offs, a schema). Anything that must be released (a persisted cache, a started service) is
registered on the ``resources`` stack the runner passes in, and the runner closes it in ``finally``.

The runner writes the rows in one pass, partitioned by outcome, into ``<run>/<stage>.tmp-*/``;
counts the rows per outcome and reason from the written files; writes ``_stats.json``; moves the
folder to ``<run>/<stage>/``; and writes the completion marker last, at the final location, naming
every file it covers with its size. On an object store a folder rename is a copy and a delete, so a
killed commit can leave part of the files in place: such a stage has no marker, or a marker whose
file list does not match, and is not finished. A stage whose records are independent (``chunked``)
can also run chunk by chunk (``run_chunked_stage``): each chunk is committed on its own, and a re-run
after a crash redoes only the chunks that were not. A stage that needs its whole input at once but
whose costly per-record step does not (dedup: signatures per chunk, clustering once) commits that
step chunk by chunk the same way and then runs whole (``run_stage_after_chunks``). A stage sees only
the config it declares, so its
fingerprint (``jobs/pipeline.py``), which hashes exactly that config, changes whenever its output
could.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import time
import uuid
from contextlib import ExitStack
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from jobs.fs import HadoopFS
from udfs.common.config import ConfigError

OUTCOMES = {"kept": "kept", "rejected": "rejected", "error": "errors", "skipped": "skipped"}  # outcome -> folder
# Bookkeeping columns that are null on kept rows; dropped when a later stage reads kept/.
BOOKKEEPING_COLUMNS = ("_count", "reject_rule", "reject_value", "error")
MARKER = "_COMPLETE.json"
STATS = "_stats.json"
CHUNKS = "_chunks"  # chunk markers of a stage run chunk by chunk


class ConfigView:
    """The declared part of a config: reading any other setting raises, naming the missing declaration."""

    def __init__(self, config: Any, paths: Sequence[str], prefix: str = ""):
        self._config, self._paths, self._prefix = config, tuple(paths), prefix

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # internals (and pickling probes) never reach the config
            raise AttributeError(name)
        if name in self._paths:
            return getattr(self._config, name)
        deeper = [p[len(name) + 1:] for p in self._paths if p.startswith(name + ".")]
        if deeper:
            return ConfigView(getattr(self._config, name), deeper, f"{self._prefix}{name}.")
        raise AttributeError(f"config {self._prefix}{name} is read but not declared in the stage's `reads`, "
                             f"so its fingerprint would not cover it")


@dataclasses.dataclass
class Transformed:
    """What ``transform`` returns: the rows to write and the facts ``write``/``extra_stats`` need."""
    rows: DataFrame
    facts: Dict[str, Any] = dataclasses.field(default_factory=dict)


class Stage:
    """Base class of a pipeline stage. Subclasses set ``name`` and implement ``transform``."""

    name: str = ""
    # Settings of other sections the stage reads, as dotted paths ("mix.buckets"); its own section
    # and io.parquet_compression are always read.
    reads: Tuple[str, ...] = ()
    # Input columns the stage cannot work without (checked before transform, with a one-line error).
    required_columns: Tuple[str, ...] = ()
    # Columns the output is partitioned by under each outcome folder (e.g. bucket=<k>/).
    partition_columns: Tuple[str, ...] = ()
    # Column holding the reason on rows of each dropped outcome (counted into _stats.json).
    reason_columns: Dict[str, str] = {"rejected": "reject_rule", "error": "error"}
    # True when each record's outcome depends on that record alone, so the input may be processed
    # and committed chunk by chunk (``run_chunked_stage``). Stages that need the whole input at once
    # (cut-offs over all documents, clustering, a sampling plan, buckets) leave it False.
    chunked: bool = False
    # True when the stage needs its whole input at once but has a per-record step (``chunk_step``)
    # whose rows can be computed and committed chunk by chunk; ``transform`` then reads them from
    # ``chunk_results`` (None when the stage ran on its whole input in one go).
    has_chunk_step: bool = False
    chunk_results: Optional[DataFrame] = None

    def __init__(self, spark: SparkSession, cfg):
        self.spark = spark
        self.cfg = ConfigView(cfg, self.config_paths())

    @classmethod
    def config_paths(cls) -> Tuple[str, ...]:
        """Every config path the stage reads: what its fingerprint hashes."""
        return (cls.name, "io.parquet_compression", *cls.reads)

    @property
    def settings(self):
        """This stage's own config section (``cfg.<name>``)."""
        return getattr(self.cfg, self.name)

    def load(self, path: Union[str, Sequence[str]]) -> DataFrame:
        """Read the stage's input: a Parquet dataset (a previous stage's kept/ or the user's), or
        a chunk of its files."""
        docs = self.spark.read.parquet(*([path] if isinstance(path, str) else path))
        return docs.drop(*[c for c in BOOKKEEPING_COLUMNS if c in docs.columns])

    def check_input(self, docs: DataFrame) -> None:
        missing = [c for c in self.required_columns if c not in docs.columns]
        if missing:
            raise ConfigError(f"--input: the {self.name} stage needs column(s) {', '.join(map(repr, missing))}; "
                              f"the input has {', '.join(docs.columns)}")

    def artifact_fingerprint(self) -> str:
        """Identity of files the output depends on beyond the config (e.g. a model); '' when none."""
        return ""

    def transform(self, docs: DataFrame, resources: ExitStack) -> Transformed:
        raise NotImplementedError

    def chunk_step(self, docs: DataFrame) -> DataFrame:
        """The per-record step of a ``has_chunk_step`` stage, applied to one chunk of its input."""
        raise NotImplementedError

    def write(self, out: Transformed, tmp_dir: str) -> None:
        """Write all outcomes in one pass: ``_outcome=kept/`` etc., renamed afterwards."""
        (out.rows.write.mode("overwrite").partitionBy("_outcome", *self.partition_columns)
            .option("compression", self.cfg.io.parquet_compression)
            .parquet(tmp_dir))

    def count_outcomes(self, tmp_dir: str, schema: StructType) -> Dict[str, Dict[str, int]]:
        """Rows per outcome and reason, read back from the written files.

        Read with the output's schema: a stage that received no rows wrote no data files, whose schema
        Spark could not infer.
        """
        written = self.spark.read.schema(schema).parquet(tmp_dir)
        reason = F.lit(None).cast("string")
        for outcome, column in self.reason_columns.items():
            if column in written.columns:
                reason = F.when(F.col("_outcome") == outcome, F.col(column).cast("string")).otherwise(reason)
        # A row may stand for several records (``_count``: e.g. per-file counts of skipped records).
        weight = F.col("_count") if "_count" in written.columns else F.lit(1)
        rows = written.groupBy("_outcome", reason.alias("reason")).agg(F.sum(weight).alias("n")).collect()
        counts: Dict[str, Dict[str, int]] = {}
        for row in rows:
            counts.setdefault(row["_outcome"], {})[row["reason"] or "-"] = int(row["n"])
        return counts

    def extra_stats(self, stage_dir: str, facts: Dict[str, Any]) -> dict:
        """Stage-specific figures for _stats.json, computed from the written output."""
        return {}

    def finalize(self, tmp_dir: str, schema: StructType) -> None:
        """Rename ``_outcome=X`` partitions to the run layout's ``kept/``, ``rejected/``, ``errors/``.

        ``kept/`` always exists, empty with the output schema when every row was dropped, so the next
        stage (or a user) can read it.
        """
        fs = HadoopFS(self.spark)
        for outcome, folder in OUTCOMES.items():
            part = f"{tmp_dir}/_outcome={outcome}"
            if fs.exists(part):
                fs.rename(part, f"{tmp_dir}/{folder}")
        if not fs.exists(f"{tmp_dir}/kept"):
            empty = StructType([f for f in schema.fields if f.name != "_outcome"])
            (self.spark.createDataFrame([], empty).write
                .option("compression", self.cfg.io.parquet_compression).parquet(f"{tmp_dir}/kept"))


def finished_marker(fs: HadoopFS, stage_dir: str) -> Optional[dict]:
    """The stage's completion marker if the files it names are exactly the files there; else None."""
    marker = f"{stage_dir}/{MARKER}"
    if not fs.exists(marker):
        return None
    content = fs.read_json(marker)
    present = fs.list_files(stage_dir)
    present.pop(MARKER, None)
    return content if content.get("files") == present else None


def is_complete(fs: HadoopFS, stage_dir: str, fingerprint: str) -> bool:
    marker = finished_marker(fs, stage_dir)
    return marker is not None and marker.get("fingerprint") == fingerprint


def remove_orphans(fs: HadoopFS, stage_dir: str, keep: Optional[str] = None) -> None:
    """Delete the temporary and partial folders earlier runs of this stage left behind when they were
    killed, except ``keep`` (the partial folder of the chunk plan being resumed)."""
    parent, name = stage_dir.rstrip("/").rsplit("/", 1)
    kept_name = keep.rstrip("/").rsplit("/", 1)[-1] if keep else None
    for path in fs.list_dir(parent):
        found = path.rstrip("/").rsplit("/", 1)[-1]
        if found.startswith((f"{name}.tmp-", f"{name}.partial-")) and found != kept_name:
            fs.delete(path)


def commit(fs: HadoopFS, tmp_dir: str, stage_dir: str, fingerprint: str) -> None:
    """Move a written stage into place; the marker, naming every file, is written last.

    The old marker goes first, so that from then on a crash leaves a stage that is not finished.
    """
    fs.delete(f"{stage_dir}/{MARKER}")
    fs.delete(stage_dir)
    fs.rename(tmp_dir, stage_dir)
    fs.write_json(f"{stage_dir}/{MARKER}", {"fingerprint": fingerprint, "finished_at": time.time(),
                                            "files": fs.list_files(stage_dir)})


def stage_stats(stage: Stage, fingerprint: str, counts: Dict[str, Dict[str, int]],
                records_in: Optional[int], wall_s: float) -> dict:
    records_out = sum(sum(reasons.values()) for reasons in counts.values())
    stats = {
        "stage": stage.name,
        "fingerprint": fingerprint,
        "records_in": records_out if records_in is None else records_in,
        "kept": sum(counts.get("kept", {}).values()),
        "rejected": counts.get("rejected", {}),
        "errors": counts.get("error", {}),
        "skipped": counts.get("skipped", {}),
        "wall_s": round(wall_s, 3),
    }
    stats["reconciled"] = stats["records_in"] == records_out
    return stats


def write_outcomes(stage: Stage, docs: DataFrame, tmp_dir: str, resources: ExitStack,
                   release: bool) -> Tuple[Transformed, Dict[str, Dict[str, int]]]:
    """Check, transform and write ``docs`` into ``tmp_dir`` by outcome; count the rows per outcome and
    reason, and rename the outcome folders. With ``release``, ``resources`` are closed as soon as the
    write is done: services and caches live for the one pass over the data, not the bookkeeping."""
    stage.check_input(docs)
    out = stage.transform(docs, resources)
    stage.write(out, tmp_dir)
    if release:
        resources.close()
    counts = stage.count_outcomes(tmp_dir, out.rows.schema)
    stage.finalize(tmp_dir, out.rows.schema)
    return out, counts


@dataclasses.dataclass(frozen=True)
class ChunkSteps:
    """The chunk-by-chunk first step of a ``run_stage_after_chunks`` run, as ``run_stage`` sees it."""
    partial_dir: str   # kept by run_stage's clean-up, deleted once the stage is committed
    chunks: int
    started: float


def run_stage(stage: Stage, docs: DataFrame, stage_dir: str, fingerprint: str,
              records_in: Optional[int], after: Optional[ChunkSteps] = None) -> dict:
    """Run one stage into ``stage_dir`` atomically and return its stats."""
    fs = HadoopFS(stage.spark)
    remove_orphans(fs, stage_dir, keep=after.partial_dir if after else None)
    tmp_dir = f"{stage_dir}.tmp-{uuid.uuid4().hex[:8]}"
    started = after.started if after else time.time()
    stage.spark.sparkContext.setJobGroup(stage.name, f"corpusmill stage {stage.name}")
    resources = ExitStack()
    try:
        out, counts = write_outcomes(stage, docs, tmp_dir, resources, release=True)
        stats = stage_stats(stage, fingerprint, counts, records_in, time.time() - started)
        if after:
            stats["chunks"] = after.chunks
        stats.update(stage.extra_stats(tmp_dir, out.facts))
        fs.write_json(f"{tmp_dir}/{STATS}", stats)
        commit(fs, tmp_dir, stage_dir, fingerprint)
        if after:
            fs.delete(after.partial_dir)
        return stats
    except BaseException:
        fs.delete(tmp_dir)
        raise
    finally:
        resources.close()


def _merge_counts(total: Dict[str, Dict[str, int]], counts: Dict[str, Dict[str, int]]) -> None:
    for outcome, reasons in counts.items():
        for reason, n in reasons.items():
            total.setdefault(outcome, {})[reason] = total.get(outcome, {}).get(reason, 0) + n


def write_chunk_marker(fs: HadoopFS, path: str, content: dict) -> None:
    """The last write of a chunk's commit: from here on a re-run skips the chunk. (Its own function so
    that the crash tests can stop the driver right after it.)"""
    fs.write_json(path, content)


def _finished_chunks(fs: HadoopFS, partial_dir: str) -> Dict[int, dict]:
    """Chunk markers whose files are all there; every data file no marker covers is deleted (the
    debris of a chunk that was killed while its files were being moved)."""
    present = fs.list_files(partial_dir)
    finished, covered = {}, set()
    for rel in present:
        if rel.startswith(f"{CHUNKS}/") and rel.endswith(".json"):
            try:
                marker = fs.read_json(f"{partial_dir}/{rel}")
            except ValueError:  # cut short while being written: the chunk is not finished
                continue
            if all(present.get(name) == size for name, size in marker["files"].items()):
                finished[int(rel[len(CHUNKS) + 1:-len(".json")])] = marker
                covered.update(marker["files"])
    for rel in present:
        if not rel.startswith(f"{CHUNKS}/") and rel not in covered:
            fs.delete(f"{partial_dir}/{rel}")
    return finished


def _partial_dir(stage_dir: str, fingerprint: str, chunks: Sequence[Sequence[str]]) -> str:
    """The folder chunks are committed into: named by the chunk plan, so a changed plan starts afresh."""
    plan = hashlib.sha256(json.dumps([fingerprint, list(map(list, chunks))]).encode()).hexdigest()[:12]
    return f"{stage_dir}.partial-{plan}"


def _commit_chunks(stage: Stage, fs: HadoopFS, chunks: Sequence[Sequence[str]], partial_dir: str,
                   write_chunk: Callable[[Sequence[str], str], dict], echo) -> Dict[int, dict]:
    """Run every chunk that has no valid marker in ``partial_dir`` yet: ``write_chunk(files, tmp_dir)``
    writes it into a temporary folder and returns what its marker records besides the files; its data
    files are moved into ``partial_dir`` and its marker (with the files and the chunk's input files)
    is written last. Returns every chunk's marker."""
    finished = _finished_chunks(fs, partial_dir)
    if finished:
        echo(f"{stage.name:>10}: resuming: {len(finished)} of {len(chunks)} chunks were committed earlier")
    for index, files in enumerate(chunks):
        if index in finished:
            continue
        tmp_dir = f"{partial_dir}/chunk-tmp-{index:05d}"
        fs.delete(tmp_dir)
        try:
            written = write_chunk(files, tmp_dir)
            finished[index] = {"files": _move_chunk_files(fs, tmp_dir, partial_dir, index), **written,
                               "inputs": list(files)}
        finally:
            fs.delete(tmp_dir)
        write_chunk_marker(fs, f"{partial_dir}/{CHUNKS}/{index:05d}.json", finished[index])
        echo(f"{stage.name:>10}: chunk {index + 1}/{len(chunks)} committed ({len(files)} input files)")
    return finished


def run_chunked_stage(stage: Stage, chunks: Sequence[Sequence[str]], load_chunk: Callable[[Sequence[str]], DataFrame],
                      count_input: bool, stage_dir: str, fingerprint: str, echo=print) -> dict:
    """Run a stage chunk by chunk; each chunk is committed on its own and a re-run skips it.

    A chunk is written like a stage (into a temporary folder), its data files are moved into
    ``<stage>.partial-<plan>/`` under names prefixed with the chunk number, and then its marker
    (``_chunks/<n>.json``: the input files, the files written with their sizes, the counts) is
    written last. When every chunk is there, the folder gets its stats and is committed like any stage.
    """
    fs = HadoopFS(stage.spark)
    partial_dir = _partial_dir(stage_dir, fingerprint, chunks)
    remove_orphans(fs, stage_dir, keep=partial_dir)
    started = time.time()
    stage.spark.sparkContext.setJobGroup(stage.name, f"corpusmill stage {stage.name}")
    resources = ExitStack()

    def write_chunk(files: Sequence[str], tmp_dir: str) -> dict:
        docs = load_chunk(files)
        records_in = docs.count() if count_input else None
        # The resources (e.g. a started service) serve every chunk; closed once all are done.
        out, counts = write_outcomes(stage, docs, tmp_dir, resources, release=False)
        return {"counts": counts, "records_in": records_in, "facts": out.facts}

    try:
        finished = _commit_chunks(stage, fs, chunks, partial_dir, write_chunk, echo)
        resources.close()
        counts: Dict[str, Dict[str, int]] = {}
        for marker in finished.values():
            _merge_counts(counts, marker["counts"])
        records_in = sum(m["records_in"] for m in finished.values()) if count_input else None
        stats = stage_stats(stage, fingerprint, counts, records_in, time.time() - started)
        stats["chunks"] = len(chunks)
        stats.update(stage.extra_stats(partial_dir, finished[len(chunks) - 1]["facts"] if chunks else {}))
        fs.write_json(f"{partial_dir}/{STATS}", stats)
        commit(fs, partial_dir, stage_dir, fingerprint)
        return stats
    finally:
        resources.close()


def run_stage_after_chunks(stage: Stage, chunks: Sequence[Sequence[str]],
                           load_chunk: Callable[[Sequence[str]], DataFrame], docs: DataFrame,
                           stage_dir: str, fingerprint: str, echo=print) -> dict:
    """Run a ``has_chunk_step`` stage in two steps: its per-record step chunk by chunk, each chunk
    committed into ``<stage>.partial-<plan>/`` as in ``run_chunked_stage``; then the stage on its
    whole input ``docs``, with every chunk's rows in ``stage.chunk_results``, committed like any
    stage. A re-run after a crash redoes only the chunks not committed, then the whole-input step."""
    fs = HadoopFS(stage.spark)
    partial_dir = _partial_dir(stage_dir, fingerprint, chunks)
    remove_orphans(fs, stage_dir, keep=partial_dir)
    started = time.time()
    stage.spark.sparkContext.setJobGroup(stage.name, f"corpusmill stage {stage.name}")
    results_schema = stage.chunk_step(docs).schema

    def write_chunk(files: Sequence[str], tmp_dir: str) -> dict:
        chunk = load_chunk(files)
        stage.chunk_step(chunk).write.option("compression", stage.cfg.io.parquet_compression).parquet(tmp_dir)
        return {"records_in": chunk.count()}

    finished = _commit_chunks(stage, fs, chunks, partial_dir, write_chunk, echo)
    saved = [f"{partial_dir}/{name}" for marker in finished.values() for name in marker["files"]]
    stage.chunk_results = (stage.spark.read.schema(results_schema).parquet(*saved) if saved
                           else stage.spark.createDataFrame([], results_schema))
    return run_stage(stage, docs, stage_dir, fingerprint, sum(m["records_in"] for m in finished.values()),
                     after=ChunkSteps(partial_dir, len(chunks), started))


def _move_chunk_files(fs: HadoopFS, tmp_dir: str, partial_dir: str, index: int) -> Dict[str, int]:
    """Move a chunk's data files from ``tmp_dir`` into the partial folder under names prefixed with the
    chunk number; returns them with their sizes."""
    moved = {}
    for rel, size in sorted(fs.list_files(tmp_dir).items()):
        folder, _, name = rel.rpartition("/")
        if name.startswith(("_", ".")):  # _SUCCESS and the like: not data
            continue
        target = f"{folder}/c{index:05d}-{name}" if folder else f"c{index:05d}-{name}"
        fs.mkdirs(f"{partial_dir}/{folder}" if folder else partial_dir)
        fs.rename(f"{tmp_dir}/{rel}", f"{partial_dir}/{target}")
        moved[target] = size
    return moved
