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
file list does not match, and is not finished. A stage sees only the config it declares, so its
fingerprint (``jobs/pipeline.py``), which hashes exactly that config, changes whenever its output
could.
"""
from __future__ import annotations

import dataclasses
import time
import uuid
from contextlib import ExitStack
from typing import Any, Dict, Optional, Sequence, Tuple

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from jobs.fs import HadoopFS
from udfs.config import ConfigError

OUTCOMES = {"kept": "kept", "rejected": "rejected", "error": "errors", "skipped": "skipped"}  # outcome -> folder
# Bookkeeping columns that are null on kept rows; dropped when a later stage reads kept/.
BOOKKEEPING_COLUMNS = ("_count", "reject_rule", "reject_value", "error")
MARKER = "_COMPLETE.json"
STATS = "_stats.json"


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

    def load(self, path: str) -> DataFrame:
        """Read the stage's input: a Parquet dataset (a previous stage's kept/ or the user's)."""
        docs = self.spark.read.parquet(path)
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


def remove_orphans(fs: HadoopFS, stage_dir: str) -> None:
    """Delete the temporary folders earlier runs of this stage left behind when they were killed."""
    prefix = f"{stage_dir.rstrip('/').rsplit('/', 1)[-1]}.tmp-"
    for path in fs.list_dir(stage_dir.rstrip("/").rsplit("/", 1)[0]):
        if path.rstrip("/").rsplit("/", 1)[-1].startswith(prefix):
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


def run_stage(stage: Stage, docs: DataFrame, stage_dir: str, fingerprint: str,
              records_in: Optional[int]) -> dict:
    """Run one stage into ``stage_dir`` atomically and return its stats."""
    fs = HadoopFS(stage.spark)
    remove_orphans(fs, stage_dir)
    tmp_dir = f"{stage_dir}.tmp-{uuid.uuid4().hex[:8]}"
    started = time.time()
    stage.spark.sparkContext.setJobGroup(stage.name, f"corpusmill stage {stage.name}")
    resources = ExitStack()
    try:
        stage.check_input(docs)
        out = stage.transform(docs, resources)
        stage.write(out, tmp_dir)
        resources.close()  # services and caches live for the one pass over the data, not the bookkeeping
        counts = stage.count_outcomes(tmp_dir, out.rows.schema)
        stage.finalize(tmp_dir, out.rows.schema)
        wall = time.time() - started
        records_out = sum(sum(reasons.values()) for reasons in counts.values())
        stats = {
            "stage": stage.name,
            "fingerprint": fingerprint,
            "records_in": records_out if records_in is None else records_in,
            "kept": sum(counts.get("kept", {}).values()),
            "rejected": counts.get("rejected", {}),
            "errors": counts.get("error", {}),
            "skipped": counts.get("skipped", {}),
            "wall_s": round(wall, 3),
        }
        stats["reconciled"] = stats["records_in"] == records_out
        stats.update(stage.extra_stats(tmp_dir, out.facts))
        fs.write_json(f"{tmp_dir}/{STATS}", stats)
        commit(fs, tmp_dir, stage_dir, fingerprint)
        return stats
    except BaseException:
        fs.delete(tmp_dir)
        raise
    finally:
        resources.close()
