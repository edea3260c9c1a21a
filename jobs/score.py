"""score: a quality score per document from the scoring service, then a separate threshold.

    spark-submit jobs/score.py --input out/demo/dedup/kept --run demo

A pandas UDF sends each Arrow batch of texts to the scoring service (``scoring_service/client.py``:
keep-alive connection, timeouts, retries with backoff) and stores ``quality_score`` on every row.
The threshold is applied afterwards: ``score >= threshold`` is kept, the rest rejected with
``reject_rule = "quality_score"`` and the score as ``reject_value``. Both outcomes keep the score,
so a new threshold needs no new scores: run the stage again on its own output (``--input
<run>/score``, which reads kept/, rejected/ and errors/) with the new ``threshold``; only rows
without a score are sent, and when every row has one no service is started at all.
Under ``on_failure: null`` rows the service could not score land in errors/ with
``error = "score_unavailable"``; such a re-run scores just them.

With no ``service_url`` the stage starts the service itself (the shipped model on a free loopback
port) for the duration of its write, and stops it afterwards — also via ``with ScoreStage(...)``.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterator, Optional, Tuple

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.functions import pandas_udf

from jobs.config import ConfigError
from jobs.fs import HadoopFS
from jobs.stage import BOOKKEEPING_COLUMNS, MARKER, OUTCOMES, Stage
from scoring_service.client import LocalService
from scoring_service.artifacts import DEFAULT_MODEL_DIR
from udfs.score import score_texts, worker_client

SCORE = "quality_score"
REJECT_RULE = "quality_score"
SCORE_UNAVAILABLE = "score_unavailable"


class ScoreStage(Stage):
    name = "score"

    def __init__(self, spark, cfg):
        super().__init__(spark, cfg)
        self._local: Optional[LocalService] = None
        self.model: dict = {}
        self.threshold: Optional[float] = None

    def artifact_fingerprint(self) -> str:
        """The model the stage starts its own service with: retraining it re-runs the stage."""
        if self.settings.service_url:
            return ""
        model_dir = Path(self.settings.model or DEFAULT_MODEL_DIR)
        digest = hashlib.sha256()
        for name in ("model.json", "model.mindir"):
            digest.update((model_dir / name).read_bytes())
        return digest.hexdigest()[:16]

    # -- service lifetime

    def service_url(self) -> str:
        """The configured service, or one started on loopback with the configured/shipped model."""
        settings = self.settings
        if settings.service_url:
            return settings.service_url
        if self._local is None:
            master = self.spark.sparkContext.master
            if not master.startswith("local"):
                raise ConfigError(f"score.service_url: required when executors run on other machines "
                                  f"(master {master}); a loopback service on the driver is not reachable there")
            self._local = LocalService(settings.model or DEFAULT_MODEL_DIR, settings.device,
                                       settings.startup_timeout_s)
            self._local.start()
        return self._local.url

    def close(self) -> None:
        if self._local is not None:
            self._local.stop()
            self._local = None

    def __enter__(self) -> "ScoreStage":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- stage

    def load(self, path: str) -> DataFrame:
        """A Parquet dataset; a finished score stage folder is read whole (kept, rejected, errors)."""
        fs = HadoopFS(self.spark)
        if fs.exists(f"{path}/{MARKER}"):
            parts = [f"{path}/{folder}" for folder in OUTCOMES.values() if fs.exists(f"{path}/{folder}")]
            frames = [self.spark.read.parquet(p) for p in parts]
            docs = frames[0]
            for frame in frames[1:]:
                docs = docs.unionByName(frame, allowMissingColumns=True)
            return docs.drop(*[c for c in BOOKKEEPING_COLUMNS if c in docs.columns])
        return super().load(path)

    def transform(self, docs: DataFrame) -> DataFrame:
        if "text" not in docs.columns:
            raise ConfigError("--input: the score stage needs a 'text' column")
        settings = self.settings
        reuse = settings.reuse_scores and SCORE in docs.columns
        # Re-thresholding a scored dataset needs neither the model nor the service.
        to_score = not reuse or docs.where(F.col(SCORE).isNull()).limit(1).count() > 0
        threshold = settings.threshold
        if to_score or threshold is None:
            url = self.service_url()
            if threshold is None:
                self.model = settings.client(url).model_info()
                threshold = float(self.model["threshold"])
        self.threshold = threshold
        if not to_score:
            scored = docs.withColumn(SCORE, F.col(SCORE).cast("float"))
        else:
            @pandas_udf("float")
            def quality_score(batches: Iterator[Tuple[pd.Series, pd.Series]]) -> Iterator[pd.Series]:
                client = worker_client(url, settings)
                for texts, previous in batches:
                    yield score_texts(texts, previous if reuse else None, client, settings.on_failure)

            previous = F.col(SCORE).cast("float") if reuse else F.lit(None).cast("float")
            scored = docs.withColumn(SCORE, quality_score(F.col("text"), previous))
        value = F.col(SCORE)
        return (scored
                .withColumn("_outcome", F.when(value.isNull(), "error")
                            .when(value >= F.lit(threshold), "kept").otherwise("rejected"))
                .withColumn("reject_rule", F.when(F.col("_outcome") == "rejected", F.lit(REJECT_RULE)))
                .withColumn("reject_value", F.when(F.col("_outcome") == "rejected", value.cast("double")))
                .withColumn("error", F.when(F.col("_outcome") == "error", F.lit(SCORE_UNAVAILABLE))))

    def write(self, out: DataFrame, tmp_dir: str) -> None:
        try:
            super().write(out, tmp_dir)
        finally:
            self.close()  # the embedded service lives as long as the stage's one pass over the data

    def extra_stats(self, stage_dir: str) -> dict:
        fs = HadoopFS(self.spark)
        parts = [f"{stage_dir}/{o}" for o in ("kept", "rejected") if fs.exists(f"{stage_dir}/{o}")]
        histogram = {}
        if parts:
            rows = (self.spark.read.parquet(*parts)
                    .groupBy(F.least(F.floor(F.col(SCORE) * 10), F.lit(9)).alias("bin")).count().collect())
            histogram = {f"{r['bin'] / 10:.1f}-{(r['bin'] + 1) / 10:.1f}": r["count"] for r in sorted(rows)}
        return {"threshold": self.threshold, "model": {k: self.model.get(k) for k in ("name", "version")},
                "score_histogram": histogram}


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("score"))
