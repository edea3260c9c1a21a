"""The stage contract: what a stage declares about itself, and the hooks the runner calls.

A stage is one small class in ``jobs/stages/<name>.py`` (or, its Spark wiring in parts, in the package
``jobs/stages/<name>/``'s ``__init__.py``); the per-record logic it applies lives in ``udfs/<name>/`` and
its settings in ``conf/<name>.yaml``. The class declares, once, everything the
rest of the project needs to know about it: its ``name`` (also its config section and its folder
under the run), its ``config`` class, its place in the pipeline (``order``), what it reads
(``input``: WARC files or the Parquet documents of the stage before it; ``reads``: settings of
other sections, e.g. ``mix.buckets``; ``required_columns``), what its records are (``units``), the
console's wording of what it writes (``output_note``) and its part of the run report
(``report_cards``, ``report_section``). ``jobs/registry.py`` finds every stage; the pipeline order,
``PipelineConfig``, the console lines and the report are built from these declarations.

Its ``transform`` maps the input DataFrame to ``Transformed``: rows carrying the bookkeeping columns
(``BOOKKEEPING``: ``_outcome`` = ``kept``, ``rejected``, ``error`` or ``skipped``, and on dropped rows
a reason), plus the few facts later hooks need (a plan, cut-offs, a schema). Anything that must be
released (a persisted cache, a started service) is registered on the ``resources`` stack the runner
passes in, and the runner closes it in ``finally``. A stage sees only the config it declares, so its
fingerprint (``jobs/pipeline.py``), which hashes exactly that config, changes whenever its output
could. The runner applies the rest of the contract to every stage (``jobs/runner.py``, ``transformed``):
the input checked at its door and every over-long text held back there, then made an errors/ row;
the bookkeeping columns in their declared types; the write, the counts and the commit.
"""
from __future__ import annotations

import dataclasses
from contextlib import ExitStack
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import DataType, StringType, StructType

from corpusmill.config import ConfigError
from corpusmill.run_folder import OUTCOMES
from jobs.fs import HadoopFS

# The bookkeeping columns of every stage's output, declared once so that every stage's rejected/
# reads into one table. ``reject_value`` is text: what a rule measured is a number for most rules
# (read it with ``CAST(reject_value AS DOUBLE)``) but a matched word, a benchmark or a domain for
# others. ``_count``: how many records a row stands for where that is not one (per-file counts of
# skipped records, a document's repeats). All but ``_outcome`` are null on kept rows.
BOOKKEEPING = pa.schema([("_outcome", pa.string()), ("reject_rule", pa.string()), ("reject_value", pa.string()),
                         ("error", pa.string()), ("_count", pa.int64())])
BOOKKEEPING_COLUMNS = tuple(BOOKKEEPING.names)


# The data contract's columns: wherever a stage's input has one, it must have this type (checked at
# the stage's door, with a one-line error).
CONTRACT_TYPES: Dict[str, DataType] = {"id": StringType(), "url": StringType(), "text": StringType()}

# A document longer than ``io.max_text_chars`` is an error row with this reason at every stage that holds
# documents in memory; its length is measured in the JVM, so no Python worker ever receives its text.
TEXT_TOO_LONG = "text_too_long"
# While a stage runs: the length of a text over the limit (that text is null from the door on), else null.
OVER_LIMIT = "_text_over_limit"


def bookkeeping_fields(*names: str) -> List[pa.Field]:
    """The declared bookkeeping fields ``names``, in that order, for a stage's Arrow output schema."""
    return [BOOKKEEPING.field(name) for name in names]


def measured_values(values: Sequence[Optional[float]]) -> pa.Array:
    """Numbers a rule measured as ``reject_value`` text (the shortest form that reads back exactly)."""
    return pa.array(values, pa.float64()).cast(BOOKKEEPING.field("reject_value").type)


def over_limit_as_errors(rows: DataFrame) -> DataFrame:
    """``rows`` (marked by ``Stage.hold_back_long_texts``) with each row over the limit an error: ``error`` =
    text_too_long, ``reject_value`` = its length in characters, no text and no rule; the mark dropped."""
    over = F.col(OVER_LIMIT).isNotNull()
    nothing = F.lit(None).cast("string")
    changed = {"_outcome": F.when(over, F.lit("error")).otherwise(F.col("_outcome")),
               "error": F.when(over, F.lit(TEXT_TOO_LONG)).otherwise(F.col("error") if "error" in rows.columns
                                                                      else nothing),
               "reject_value": F.when(over, F.col(OVER_LIMIT).cast("string"))
               .otherwise(F.col("reject_value").cast("string") if "reject_value" in rows.columns else nothing)}
    if "reject_rule" in rows.columns:
        changed["reject_rule"] = F.when(~over, F.col("reject_rule"))
    if "text" in rows.columns:
        changed["text"] = F.when(~over, F.col("text"))
    return rows.withColumns(changed).drop(OVER_LIMIT)


def drop_bookkeeping(docs: DataFrame) -> DataFrame:
    return docs.drop(*[c for c in BOOKKEEPING_COLUMNS if c in docs.columns])


def conform_bookkeeping(rows: DataFrame) -> DataFrame:
    """``rows`` with each bookkeeping column it has in its declared type (a stage that computes a
    measured value as a number in Spark writes it as the declared text)."""
    declared = {f.name: f.dataType for f in from_arrow_schema(BOOKKEEPING).fields}
    wrong = {name: declared[name] for name, kind in rows.dtypes if name in declared
             and rows.schema[name].dataType != declared[name]}
    return rows.withColumns({name: F.col(name).cast(kind) for name, kind in wrong.items()}) if wrong else rows


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
    """Base class of a pipeline stage. Subclasses declare themselves and implement ``transform``."""

    # The stage's name: its config section, its folder under the run, its --stages word.
    name: str = ""
    # Its config class (a dataclass validated on load; ``conf/<name>.yaml`` gives its defaults).
    config: Optional[type] = None
    # Its place in the pipeline: stages run by increasing order (cheap before expensive, dedup after
    # filtering, ...); gaps leave room for new stages.
    order: int = 0
    # "files": WARC/ARC files named by --input; "documents": a Parquet dataset, by default the
    # kept/ of the stage before it, which must be finished.
    input: str = "documents"
    # What a record is, coming in and kept (the console's summary line, the report's funnel).
    units: Tuple[str, str] = ("documents", "documents")
    # kept/ holds one row per document with its text (the report's length histogram reads the last one).
    kept_documents: bool = True
    # A column of kept/ that holds the text's length as the stage saw it (read instead of the text).
    text_length_column: Optional[str] = None
    # Settings of other sections the stage reads, as dotted paths ("mix.buckets"); its own section,
    # io.parquet_compression and io.max_text_chars are always read.
    reads: Tuple[str, ...] = ()
    # Input columns the stage cannot work without (checked before transform, with a one-line error).
    required_columns: Tuple[str, ...] = ()
    # Columns the output is partitioned by under each outcome folder (e.g. bucket=<k>/).
    partition_columns: Tuple[str, ...] = ()
    # True when ``transform`` counts the input rows on its way (``facts["records_in"]``), so that the
    # runner does not count them in a job of its own; not for stages run by chunks (``chunked``,
    # ``has_chunk_step``), whose input the runner counts chunk by chunk.
    counts_its_input: bool = False
    # Column holding the reason on rows of each dropped outcome (counted into _stats.json).
    reason_columns: Dict[str, str] = {"rejected": "reject_rule", "error": "error"}
    # True when the stage makes its own error rows of the texts the runner held back (see
    # ``jobs/runner.py``'s door): in its tasks (pack, mindrecord) or before a step that needs them as
    # errors (filter's cut-offs, mix's plan). Otherwise the runner does it after ``transform``, and a
    # transform that loses the hold-back column is refused.
    makes_over_limit_errors: bool = False
    # True when each record's outcome depends on that record alone, so the input may be processed
    # and committed chunk by chunk (``run_chunked_stage``). Stages that need the whole input at once
    # (cut-offs over all documents, clustering, a sampling plan, buckets) leave it False.
    chunked: bool = False
    # True when the stage needs its whole input at once but has a per-record step (``chunk_step``)
    # whose rows can be computed and committed chunk by chunk; ``transform`` then reads them from
    # ``chunk_results`` (None when the stage ran on its whole input in one go).
    has_chunk_step: bool = False
    chunk_results: Optional[DataFrame] = None

    def __init__(self, spark: SparkSession, cfg, sample_fraction: Optional[float] = None):
        self.spark = spark
        self.cfg = ConfigView(cfg, self.config_paths())
        # A deterministic fraction of the input: the pipeline samples the rows of a "documents"
        # stage; a "files" stage samples the records it reads.
        self.sample_fraction = sample_fraction

    @classmethod
    def config_paths(cls) -> Tuple[str, ...]:
        """Every config path the stage reads: what its fingerprint hashes."""
        return (cls.name, "io.parquet_compression", "io.max_text_chars", *cls.reads)

    @property
    def settings(self):
        """This stage's own config section (``cfg.<name>``)."""
        return getattr(self.cfg, self.name)

    def load(self, path: Union[str, Sequence[str]]) -> DataFrame:
        """Read the stage's input: a Parquet dataset (a previous stage's kept/ or the user's), or
        a chunk of its files."""
        return drop_bookkeeping(self.spark.read.parquet(*([path] if isinstance(path, str) else path)))

    def check_input(self, docs: DataFrame) -> None:
        """The door: the columns the stage needs are there and the contract's columns have their types."""
        missing = [c for c in self.required_columns if c not in docs.columns]
        if missing:
            raise ConfigError(f"--input: the {self.name} stage needs column(s) {', '.join(map(repr, missing))}; "
                              f"the input has {', '.join(docs.columns)}")
        for name, expected in CONTRACT_TYPES.items():
            found = docs.schema[name].dataType if name in docs.columns else expected
            if found != expected:
                raise ConfigError(f"--input: column {name!r} is {found.simpleString()}; the {self.name} stage "
                                  f"needs {expected.simpleString()} (the data contract: id, url and text are strings)")

    def too_long(self) -> Column:
        """The length of ``text`` where it is over ``io.max_text_chars``, else null (a JVM expression).
        A text has no more characters than UTF-8 bytes, and its byte count is known without reading
        it: only a text of more bytes than the limit is counted character by character."""
        limit = F.lit(self.cfg.io.max_text_chars)
        length = F.length("text")
        return F.when((F.octet_length("text") > limit) & (length > limit), length)

    def hold_back_long_texts(self, docs: DataFrame) -> DataFrame:
        """``docs`` with ``OVER_LIMIT`` set and the text null on every document over the limit, so that
        what the stage hands its Python workers is bounded (the runner's door, ``jobs.runner.admitted``);
        ``over_limit_as_errors`` makes those rows errors at the end."""
        return docs.withColumn(OVER_LIMIT, self.too_long()).withColumn(
            "text", F.when(F.col(OVER_LIMIT).isNull(), F.col("text")))

    @classmethod
    def prepare(cls, cfg, planned: Sequence[str]) -> None:
        """Start, in the background, what the stage's run will need and is slow to make (a model, a
        service), so it gets ready while the JVM starts. Called for every stage before any runs, with
        the names of the stages planned; the default does nothing."""

    def artifact_fingerprint(self) -> str:
        """Identity of files the output depends on beyond the config (e.g. a model); '' when none."""
        return ""

    def transform(self, docs: DataFrame, resources: ExitStack) -> Transformed:
        raise NotImplementedError

    def chunk_step(self, docs: DataFrame) -> DataFrame:
        """The per-record step of a ``has_chunk_step`` stage, applied to one chunk of its input."""
        raise NotImplementedError

    def write(self, out: Transformed, tmp_dir: str) -> None:
        """Write all outcomes in one pass: ``_outcome=kept/`` etc., renamed afterwards. ``tmp_dir`` is
        this attempt's own, so the write appends: a stage may write files of its own into it meanwhile."""
        (out.rows.write.mode("append").partitionBy("_outcome", *self.partition_columns)
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
        rows = (written.groupBy("_outcome", reason.alias("reason")).agg(F.sum(self.records_of(written)).alias("n"))
                .collect())
        counts: Dict[str, Dict[str, int]] = {}
        for row in rows:
            counts.setdefault(row["_outcome"], {})[row["reason"] or "-"] = int(row["n"])
        return counts

    @staticmethod
    def records_of(written: DataFrame) -> Column:
        """The input records a written row stands for: one, or ``_count`` (e.g. per-file counts of
        skipped records)."""
        return F.col("_count") if "_count" in written.columns else F.lit(1)

    def extra_stats(self, stage_dir: str, facts: Dict[str, Any]) -> dict:
        """Stage-specific figures for _stats.json, computed from the written output."""
        return {}

    @staticmethod
    def output_note(stats: dict) -> str:
        """The summary line's words for what the stage writes besides what it counts as kept."""
        return ""

    # The stage's part of the run report (``jobs/report/``): the funnel, wall time, figures and samples
    # are drawn for every stage; these add what only this stage has.
    @classmethod
    def report_facts(cls, read: Callable[..., Optional[DataFrame]], stats: dict) -> Dict[str, Any]:
        """Aggregations of the stage's written outputs that its section draws, as plain values
        (``read("kept", "rejected")``: those folders as one DataFrame, None when none exists)."""
        return {}

    @staticmethod
    def report_cards(stats: dict) -> List[Tuple[str, Any]]:
        """(label, value) cards for the report's overview."""
        return []

    @classmethod
    def report_section(cls, facts) -> str:
        """The stage's own section of the report (HTML), from ``facts.stats`` and ``facts.stage_facts``."""
        return ""

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
