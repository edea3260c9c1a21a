"""score: a quality score per document from the scoring service, then a separate threshold.

    spark-submit jobs/stages/score.py --input out/demo/dedup/kept --run demo

A pandas UDF hashes each Arrow batch of texts on the executor and sends the encoded batch to the
scoring service (``scoring_service/client.py``: keep-alive connections, timeouts, retries moving to
the next replica when ``service_url`` lists several, backoff), and stores ``quality_score`` on every
row. With ``mode: local`` each Python worker loads the model once and scores in process instead.
The threshold is applied afterwards: ``score >= threshold`` is kept, the rest rejected with
``reject_rule = "quality_score"`` and the score as ``reject_value``. A document's threshold is its
language's (``lang``, from the filter stage) in ``threshold_by_language``, else in the model's own
``threshold_by_language``, else ``threshold``, else the model's. Both outcomes keep the score,
so a new threshold needs no new scores: run the stage again on its own output (``--input
<run>/score``, which reads kept/, rejected/ and errors/) with the new thresholds; only rows
without a score are sent, and when every row has one no service is started at all.
Under ``on_failure: null`` rows the service could not score land in errors/ with
``error = "score_unavailable"``; such a re-run scores just them.

With no ``service_url`` the stage starts the service itself (the shipped model on a free loopback
port) for the duration of its write; the runner stops it afterwards, also when the stage fails.
"""
import hashlib
from collections import Counter, defaultdict
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from pyspark import TaskContext
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.functions import pandas_udf

from corpusmill.config import ConfigError
from corpusmill.run_folder import MARKER, OUTCOMES
from jobs.fs import HadoopFS
from jobs.report.render import number
from jobs.report.svg import KEPT_COLOUR, REJECTED_COLOUR, histogram
from jobs.stage import OVER_LIMIT, Stage, Transformed, drop_bookkeeping
from scoring_service.model.artifacts import MODEL_JSON, served_file
from udfs.score.scoring import (ScoreConfig, Thresholds, launch_local_service, local_service, model_card,
                                score_texts, worker_client, worker_scorer)

SCORE = "quality_score"
REJECT_RULE = "quality_score"
SCORE_UNAVAILABLE = "score_unavailable"
LANG = "lang"  # the filter stage's language column, which per-language thresholds key on
SCORE_BINS = 20  # of the report's histograms over [0, 1]
REPORT_LANGUAGES = 8  # the report draws one small histogram for each of this many languages


class ScoreStage(Stage):
    name = "score"
    config = ScoreConfig
    order = 60
    chunked = True
    required_columns = ("text",)
    _local_url: Optional[str] = None  # the loopback service this stage started, while it runs

    @classmethod
    def prepare(cls, cfg, planned) -> None:
        if planned[:1] == [cls.name]:  # its start-up beside the JVM's; a later stage's comes in time
            launch_local_service(cfg.score, cfg.spark.master)

    @classmethod
    def report_facts(cls, read, stats: dict) -> dict:
        scored = scores_by_outcome(read("kept"), read("rejected"))
        return score_histograms(scored, REPORT_LANGUAGES) if scored is not None else {"histogram": [], "languages": []}

    @classmethod
    def report_section(cls, facts) -> str:
        own = facts.stage_facts.get(cls.name, {})
        bins = own.get("histogram")
        if not bins:
            return ""
        stats = facts.stats[cls.name]
        threshold = stats.get("threshold")
        known = isinstance(threshold, (int, float))
        by_language = stats.get("threshold_by_language") or {}

        def chart(bins, title, x_label, threshold, **size) -> str:
            marked = isinstance(threshold, (int, float))
            return histogram(bins, title, x_label, parts=(("kept", KEPT_COLOUR), ("rejected", REJECTED_COLOUR)),
                             marker=(threshold * SCORE_BINS, f"threshold {number(threshold)}") if marked else None,
                             **size)

        named = ", ".join(sorted(by_language)) if len(by_language) <= 5 else f"{len(by_language)} languages"
        own_lines = f" ({named}: their own)" if by_language else ""
        html = (f"<h2>Quality score: kept and rejected{f' by the threshold {number(threshold)}' if known else ''}"
                f"{own_lines}</h2>" + chart(bins, "quality score histogram", "quality score (bin start)", threshold))
        languages = own.get("languages")
        if languages:
            html += (f"<h3>Quality score per language (the {len(languages)} with the most documents), "
                     f"each with its threshold</h3>"
                     + "".join(chart(lang_bins, f"quality score histogram, {lang}",
                                     f"{lang}: {number(documents)} documents", by_language.get(lang, threshold),
                                     width=370, height=180)
                               for lang, documents, lang_bins in languages))
        return html

    def artifact_fingerprint(self) -> str:
        """The model the stage starts its own service with (or loads, in local mode): retraining it
        re-runs the stage."""
        if self.settings.mode == "service" and self.settings.service_urls:
            return ""
        model_dir = Path(self.settings.model_dir)
        digest = hashlib.sha256()
        for name in (MODEL_JSON, served_file(str(model_dir))):
            digest.update((model_dir / name).read_bytes())
        return digest.hexdigest()[:16]

    def service_url(self, resources: ExitStack) -> Tuple[str, ...]:
        """The configured service's replicas, or one service started on loopback with the
        configured/shipped model and stopped when ``resources`` closes."""
        settings = self.settings
        if settings.service_urls:
            return settings.service_urls
        master = self.spark.sparkContext.master
        if not master.startswith("local"):
            raise ConfigError(f"score.service_url: required when executors run on other machines "
                              f"(master {master}); a loopback service on the driver is not reachable there")
        if self._local_url is None:  # one service for all chunks of a chunked run
            self._local_url = resources.enter_context(local_service(settings))
            resources.callback(setattr, self, "_local_url", None)
        return (self._local_url,)

    def load(self, path) -> DataFrame:
        """A Parquet dataset (or a chunk of its files); a finished score stage folder is read whole
        (kept, rejected, errors)."""
        fs = HadoopFS(self.spark)
        if isinstance(path, str) and fs.exists(f"{path}/{MARKER}"):
            parts = [f"{path}/{folder}" for folder in OUTCOMES.values() if fs.exists(f"{path}/{folder}")]
            frames = [self.spark.read.parquet(p) for p in parts]
            docs = frames[0]
            for frame in frames[1:]:
                docs = docs.unionByName(frame, allowMissingColumns=True)
            return drop_bookkeeping(docs)
        return super().load(path)

    def transform(self, docs: DataFrame, resources: ExitStack) -> Transformed:
        settings = self.settings
        reuse = settings.reuse_scores and SCORE in docs.columns
        # Re-thresholding a scored dataset needs no service: only the model's thresholds.
        to_score = not reuse or docs.where(F.col(SCORE).isNull()).limit(1).count() > 0
        local = settings.mode == "local"
        external = not local and bool(settings.service_urls)
        # The model card on disk says what a service started with that model would.
        model = settings.client(settings.service_urls).model_info() if external else model_card(settings.model_dir)
        thresholds = settings.thresholds(model)
        if not to_score:
            scored = docs.withColumn(SCORE, F.col(SCORE).cast("float"))
        else:
            urls = () if local else self.service_url(resources)
            # Imported here, not with the module: the driver imports every stage for its declaration before
            # the JVM starts. (The UDFs' type hints are evaluated where they are defined, so no __future__ import.)
            import pandas as pd

            @pandas_udf("float")
            def quality_score(batches: Iterator[Tuple[pd.Series, pd.Series]]) -> Iterator[pd.Series]:
                scorer = (worker_scorer(settings) if local
                          else worker_client(urls, settings, TaskContext.get().partitionId()))
                for texts, previous in batches:
                    yield score_texts(texts, previous if reuse else None, scorer, settings.on_failure)

            previous = F.col(SCORE).cast("float") if reuse else F.lit(None).cast("float")
            # A held-back text is sent as "" (its score is dropped below): the service never sees it.
            text = F.coalesce(F.col("text"), F.when(F.col(OVER_LIMIT).isNotNull(), F.lit("")))
            scored = docs.withColumn(SCORE, quality_score(text, previous))
        # A text over the limit is not scored (a score it kept from an earlier run goes too).
        scored = scored.withColumn(SCORE, F.when(F.col(OVER_LIMIT).isNull(), F.col(SCORE)))
        value = F.col(SCORE)
        rows = (scored
                .withColumn("_outcome", F.when(value.isNull(), "error")
                            .when(value >= threshold_column(thresholds, scored.columns), "kept")
                            .otherwise("rejected"))
                .withColumn("reject_rule", F.when(F.col("_outcome") == "rejected", F.lit(REJECT_RULE)))
                .withColumn("reject_value", F.when(F.col("_outcome") == "rejected", value.cast("double")))
                .withColumn("error", F.when(F.col("_outcome") == "error", F.lit(SCORE_UNAVAILABLE))))
        return Transformed(rows, {"threshold": thresholds.default,
                                  "threshold_by_language": dict(sorted(thresholds.by_language.items())),
                                  "model": {k: model.get(k) for k in ("name", "version")}})

    def extra_stats(self, stage_dir: str, facts: dict) -> dict:
        fs = HadoopFS(self.spark)
        parts = [f"{stage_dir}/{o}" for o in ("kept", "rejected") if fs.exists(f"{stage_dir}/{o}")]
        histogram = {}
        if parts:
            rows = (self.spark.read.parquet(*parts)
                    .groupBy(F.least(F.floor(F.col(SCORE) * 10), F.lit(9)).alias("bin")).count().collect())
            histogram = {f"{r['bin'] / 10:.1f}-{(r['bin'] + 1) / 10:.1f}": r["count"] for r in sorted(rows)}
        return {**facts, "score_histogram": histogram}


def threshold_column(thresholds: Thresholds, columns: List[str]) -> Column:
    """Each row's threshold: its language's (the filter's ``lang``) where one is set, else the default."""
    default = F.lit(thresholds.default)
    if not thresholds.by_language or LANG not in columns:
        return default
    table = F.create_map(*[F.lit(x) for pair in sorted(thresholds.by_language.items()) for x in pair])
    return F.coalesce(table[F.col(LANG)], default)


def scores_by_outcome(kept: Optional[DataFrame], rejected: Optional[DataFrame]) -> Optional[DataFrame]:
    """``quality_score``, ``outcome`` (kept / rejected) and ``lang`` (null without one) of the score
    stage's rows, as ``score_histogram`` reads them; None when neither part has scores."""
    parts = [docs.select(SCORE, F.lit(outcome).alias("outcome"),
                         F.col(LANG) if LANG in docs.columns else F.lit(None).cast("string").alias(LANG))
             for outcome, docs in (("kept", kept), ("rejected", rejected))
             if docs is not None and SCORE in docs.columns]
    return parts[0].unionByName(parts[1]) if len(parts) == 2 else (parts[0] if parts else None)


Bins = List[Tuple[str, Tuple[int, int]]]


def score_histogram(docs: DataFrame) -> Bins:
    """(kept, rejected) documents per quality-score bin over [0, 1], from ``quality_score`` and
    ``outcome``; unscored rows (null or negative) are left out."""
    return _bins(_bin_counts(docs))


def score_histograms(docs: DataFrame, top: int) -> Dict[str, Any]:
    """``score_histogram`` of all documents (``histogram``) and of each of the ``top`` languages with
    the most documents (``languages``: language, documents, bins), from one pass over ``docs``."""
    overall: Counter = Counter()
    by_language: Dict[str, Counter] = defaultdict(Counter)
    for (lang, b, outcome), count in _bin_counts(docs, LANG).items():
        overall[b, outcome] += count
        if lang is not None:
            by_language[lang][b, outcome] += count
    ranked = sorted(by_language.items(), key=lambda item: (-sum(item[1].values()), item[0]))[:top]
    return {"histogram": _bins(overall),
            "languages": [(lang, sum(counts.values()), _bins(counts)) for lang, counts in ranked]}


def _bin_counts(docs: DataFrame, *groups: str) -> Dict[tuple, int]:
    """Documents per (*groups, bin, outcome)."""
    score = F.col(SCORE)
    bins = (docs.where(score.isNotNull() & (score >= 0))
            .select(*groups, F.least(F.floor(score * SCORE_BINS), F.lit(SCORE_BINS - 1)).cast("int").alias("b"),
                    "outcome"))
    return {tuple(r)[:-1]: r["count"] for r in bins.groupBy(*groups, "b", "outcome").count().collect()}


def _bins(counts: Dict[Tuple[int, str], int]) -> Bins:
    if not counts:
        return []
    return [(f"{b / SCORE_BINS:.2f}", (counts.get((b, "kept"), 0), counts.get((b, "rejected"), 0)))
            for b in range(SCORE_BINS)]


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("score"))
