"""What the run report shows, collected from a run: each committed stage's ``_stats.json``, a few small
aggregations of the written outputs (the document length histogram, samples of rejected documents)
and what each stage adds for its own section (``Stage.report_facts``: a score histogram, PII counts
per type …), as plain Python values, so that rendering (``jobs/report/render.py``) needs no Spark.

The report is the file people share, so every excerpt and URL it shows passes through the pii
stage's scrubber (``jobs.scrubbing.scrubbed_rows``, with the run's ``pii`` settings) first:
the rejected samples of extract and filter come from before the pii stage and are raw on disk. A
stage that writes its own scrubbed spot-check files (filter's ``samples/``) is shown from them.
"""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Callable, Dict, List, Optional, Tuple

from pyspark import inheritable_thread_target
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from corpusmill.run_folder import MARKER, STATS, marker_form_problem
from jobs import registry
from jobs.fs import HadoopFS
from jobs.runner import read_marker
from jobs.scrubbing import scrubbed_rows, spot_check_picks
from udfs.pii.scrub import PiiConfig

SAMPLES_PER_REASON = 3
EXCERPT_CHARS = 700
PRESAMPLE = 200  # rows per reason that reach the sort which picks the samples
HASH_RANGE = 1_000_000
LENGTH_SAMPLE = 2_000_000  # documents read for the length histogram at most (about)
REPORT_QUERIES = 4  # run side by side

# Reads a stage's written outcome folders (kept, rejected …) as one DataFrame; None when none exists.
Reader = Callable[..., Optional[DataFrame]]


class RunFacts:
    """Everything the page shows, as plain Python values."""

    def __init__(self, run_dir: str, stats: Dict[str, dict]):
        self.run_dir = run_dir
        self.stats = stats
        self.length_histogram: List[Tuple[str, int]] = []
        self.length_stage: Optional[str] = None
        self.length_sample = 1.0  # fraction of the documents the length histogram was computed on
        self.samples: Dict[str, List[dict]] = {}
        # Per stage, what its ``report_facts`` collected for its section.
        self.stage_facts: Dict[str, Dict[str, Any]] = {}

    @classmethod
    def collect(cls, spark: SparkSession, fs: HadoopFS, run_dir: str, pii_config: PiiConfig) -> "RunFacts":
        # Committed stages only (their marker, written last, is there and well-formed); the figures
        # are shown, not passed on, so the report does not read every file again for its checksum.
        stages = {s.name: s for s in registry.stages()
                  if marker_form_problem(read_marker(fs, f"{run_dir}/{s.name}/{MARKER}")) is None}
        stats = {name: fs.read_json(f"{run_dir}/{name}/{STATS}") for name in stages}
        facts = cls(run_dir, stats)

        def reader(stage: str) -> Reader:
            def read(*outcomes: str) -> Optional[DataFrame]:
                parts = [f"{run_dir}/{stage}/{o}" for o in outcomes if fs.exists(f"{run_dir}/{stage}/{o}")]
                return spark.read.parquet(*parts) if parts else None
            return read

        # Each stage's queries are small and independent: they run side by side, so a report costs
        # about its slowest query rather than the sum of them all.
        queries: Dict[Tuple[str, str], Callable[[], Any]] = {}
        document_stages = [s for s in stages.values() if s.kept_documents]
        if document_stages:
            last = document_stages[-1]
            facts.length_stage = last.name
            queries["lengths", last.name] = lambda: facts.lengths_of(reader(last.name)("kept"), last, stats[last.name])
        for name, stage in stages.items():
            queries["facts", name] = partial(stage.report_facts, reader(name), stats[name])
            written = stats[name].get("samples")
            if not (isinstance(written, dict) and written):  # else the stage's own spot-check files, scrubbed already
                queries["samples", name] = partial(_samples_of, reader(name), pii_config, stats[name].get("rejected"))
        with ThreadPoolExecutor(max_workers=REPORT_QUERIES) as pool:
            answers = {key: pool.submit(inheritable_thread_target(spark)(query)) for key, query in queries.items()}
            answered = {key: answer.result() for key, answer in answers.items()}
        for name in stages:
            facts.stage_facts[name] = answered["facts", name]
            if ("samples", name) not in answered:
                facts.samples[name] = written_samples(fs, f"{run_dir}/{name}", stats[name]["samples"])
            elif answered["samples", name] is not None:
                facts.samples[name] = answered["samples", name]
        return facts

    def lengths_of(self, kept: Optional[DataFrame], stage, stats: dict) -> None:
        """The length histogram of ``stage``'s kept documents (``kept``; none when it has no text)."""
        if kept is None or "text" not in kept.columns:
            return
        # Lengths need the text column: on a large run, a deterministic sample is read instead.
        kept_rows = int(stats.get("kept") or 0)
        if kept_rows > LENGTH_SAMPLE:
            self.length_sample = LENGTH_SAMPLE / kept_rows
            kept = kept.sample(False, self.length_sample, seed=0)
        length = F.col(stage.text_length_column) if stage.text_length_column in kept.columns else None
        self.length_histogram = length_histogram(kept, length)


def _samples_of(read: Reader, pii: PiiConfig, counts: Optional[Dict[str, int]]) -> Optional[List[dict]]:
    rejected = read("rejected")
    return rejected_samples(rejected, pii, counts) if rejected is not None else None


def length_histogram(docs: DataFrame, length=None) -> List[Tuple[str, int]]:
    """Documents per power-of-two length bin (characters): web text lengths span five decades.
    ``length``: a column that holds the text's length, read instead of the text where there is one."""
    length = F.length("text") if length is None else length
    bins = docs.select(F.floor(F.log2(F.greatest(length, F.lit(1)))).cast("int").alias("b"))
    counts = {r["b"]: r["count"] for r in bins.groupBy("b").count().collect()}
    if not counts:
        return []
    return [(short_number(2 ** b), counts.get(b, 0)) for b in range(min(counts), max(counts) + 1)]


def top_counts(docs: DataFrame, column: str, limit: int = 20) -> Dict[str, int]:
    rows = docs.groupBy(column).count().orderBy(F.desc("count"), column).limit(limit).collect()
    return {str(r[column]) if r[column] is not None else "-": int(r["count"]) for r in rows}


def rejected_samples(rejected: DataFrame, pii: PiiConfig, counts: Optional[Dict[str, int]] = None) -> List[dict]:
    """A few rejected documents per reason, chosen by a hash of the id (the same ones every time, no
    two with the same text), with text and URL scrubbed by ``pii`` before the excerpt is cut (a value cut in half is no longer
    recognised); a document the scrubber cannot finish shows no text and the reason (``unshown``).

    With the per-reason ``counts`` (from _stats.json), rows are first thinned by the same hash to about
    ``PRESAMPLE`` per reason, so a reason with millions of rows never goes through one sort."""
    reason = F.coalesce(F.col("reject_rule").cast("string"), F.lit("-")) if "reject_rule" in rejected.columns \
        else F.lit("-")  # null reasons are counted as "-" in _stats.json
    if counts:
        keep = F.lit(False)
        for name, n in counts.items():
            threshold = int(HASH_RANGE * min(1.0, PRESAMPLE / max(int(n), 1)))
            keep = keep | ((reason == name) & (F.pmod(F.xxhash64("id"), F.lit(HASH_RANGE)) < threshold))
        rejected = rejected.where(keep)
    extra = [c for c in ("url", "reject_value", "survivor_id", "quality_score") if c in rejected.columns]
    text = F.col("text") if "text" in rejected.columns else F.lit(None).cast("string")
    picked = spot_check_picks(rejected.select(F.col("id"), reason.alias("reason"), *extra, text.alias("text"),
                                              F.coalesce(F.length(text), F.lit(0)).alias("chars")),
                              "reason", SAMPLES_PER_REASON)
    shown = []
    for doc in sorted(scrubbed_rows(picked.collect(), pii), key=lambda d: (d["reason"], d["_rank"])):
        text, error = doc.pop("text"), doc.pop("error")
        shown.append({**{k: v for k, v in doc.items() if k not in ("_hash", "_rank")},
                      "text": text[:EXCERPT_CHARS] if text else text, "unshown": error if doc["chars"] > 0 else None})
    return shown


def written_samples(fs: HadoopFS, stage_dir: str, files: Dict[str, str]) -> List[dict]:
    """The first ``SAMPLES_PER_REASON`` documents of each of a stage's spot-check files (reason ->
    file under ``stage_dir``; written scrubbed, in the order of the hash ``rejected_samples`` picks
    by), as ``rejected_samples`` gives them."""
    shown = []
    for reason in sorted(files):
        for line in fs.read_lines(f"{stage_dir}/{files[reason]}", SAMPLES_PER_REASON):
            doc = json.loads(line)
            text = doc.get("text")
            shown.append({"id": doc.get("id"), "reason": reason, "url": doc.get("url"),
                          "reject_value": doc.get("reject_value"), "chars": doc.get("chars"),
                          "text": text[:EXCERPT_CHARS] if text else text, "unshown": doc.get("error")})
    return shown


def short_number(n: float) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return str(int(n))
