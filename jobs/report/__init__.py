"""The run report: ``<output>/<run>/report.html``, one self-contained page (inline SVG, no scripts,
no network), from what a run wrote (``facts``) rendered without Spark (``render``, ``svg``). It reads
whatever stages and figures exist, so a run with fewer stages, or a stage that reports fewer figures,
still gets a report with the sections that apply.

    corpusmill report --output out --run demo     # (re)write it for a finished or partial run
"""
from __future__ import annotations

from typing import Optional

from pyspark.sql import SparkSession

from jobs.fs import HadoopFS
from jobs.report.facts import EXCERPT_CHARS, SAMPLES_PER_REASON, RunFacts, length_histogram, rejected_samples
from jobs.report.render import drops_of, render
from udfs.pii.scrub import PiiConfig

REPORT = "report.html"
__all__ = ["EXCERPT_CHARS", "REPORT", "SAMPLES_PER_REASON", "RunFacts", "drops_of", "length_histogram",
           "rejected_samples", "render", "write_report"]


def write_report(spark: SparkSession, run_dir: str, pii: Optional[PiiConfig] = None) -> str:
    """Write ``<run_dir>/report.html`` and return its URI; excerpts are scrubbed with ``pii`` (the
    run's ``cfg.pii``; the defaults when not given)."""
    fs = HadoopFS(spark)
    run_dir = fs.qualify(run_dir.rstrip("/"))
    facts = RunFacts.collect(spark, fs, run_dir, pii or PiiConfig())
    target = f"{run_dir}/{REPORT}"
    fs.write_text(target, render(facts))
    return target
