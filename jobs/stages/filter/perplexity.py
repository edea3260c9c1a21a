"""Spark wiring of the perplexity signal (``udfs/filter/perplexity.py``): the per-document column, and the
second pass that cuts each language's distribution into CCNet's head / middle / tail.

Used by the filter stage; each function takes and returns a DataFrame, so a notebook can apply them
to any Parquet documents that have ``text`` and ``lang``.
"""
from __future__ import annotations

from typing import Dict, List, Optional

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StructField, StructType

from udfs.filter.perplexity import BUCKETS, PerplexityConfig, PerplexityScorer


def with_perplexity(docs: DataFrame, cfg: PerplexityConfig, text: str = "text", lang: str = "lang") -> DataFrame:
    """``docs`` plus ``perplexity`` (double; null where the language has no model), scored over
    Arrow batches with each model loaded once per Python worker."""
    schema = StructType(docs.schema.fields + [StructField("perplexity", DoubleType(), True)])

    def score(batches):
        scorer = PerplexityScorer(cfg)
        for batch in batches:
            values = scorer.score(batch.column(text).to_pylist(), batch.column(lang).to_pylist())
            yield batch.append_column("perplexity", pa.array(values, pa.float64()))

    return docs.mapInArrow(score, schema)


def ppl_cutoffs(docs: DataFrame, cfg: PerplexityConfig, lang: str = "lang") -> Dict[str, List[float]]:
    """Per language: the perplexities at ``bucket_quantiles`` (one small row per language reaches
    the driver)."""
    rows = (docs.where(F.col("perplexity").isNotNull())
            .groupBy(lang)
            .agg(F.percentile_approx("perplexity", list(cfg.bucket_quantiles),
                                     int(1 / cfg.quantile_relative_error)).alias("cutoffs"))
            .collect())
    return {row[lang]: [float(c) for c in row["cutoffs"]] for row in rows}


def bucket_column(cutoffs: Dict[str, List[float]], lang: str = "lang") -> Column:
    """head below the first cut-off, middle below the second, tail from there; null where the
    document has no perplexity or its language no cut-offs."""
    ppl = F.col("perplexity")
    expr = F.lit(None).cast("string")
    for language, (low, high) in sorted(cutoffs.items()):
        in_lang = F.col(lang) == F.lit(language)
        expr = (F.when(in_lang & (ppl < low), BUCKETS[0])
                .when(in_lang & (ppl < high), BUCKETS[1])
                .when(in_lang & ppl.isNotNull(), BUCKETS[2])
                .otherwise(expr))
    return expr


def with_ppl_bucket(docs: DataFrame, cfg: PerplexityConfig, reference: Optional[Column] = None,
                    lang: str = "lang"):
    """The second pass: cut-offs from the rows where ``reference`` holds (e.g. the kept ones; default
    all rows), then ``ppl_bucket`` on every row. Returns (DataFrame, cut-offs per language). The
    cut-offs are an action over ``docs``: persist it first, or its lineage runs twice."""
    cutoffs = ppl_cutoffs(docs if reference is None else docs.where(reference), cfg, lang)
    return docs.withColumn("ppl_bucket", bucket_column(cutoffs, lang)), cutoffs
