"""mix: domain labels, the planned mixture, deterministic sampling with repeats, bucketed output.

Two passes over the input: the first labels documents and sums their (estimated) tokens per domain
(a few numbers reach the driver), the plan turns those sums into epochs per domain
(``udfs.mix.mixture.plan_mixture``), and the second pass samples and writes.

Output:
* ``kept/bucket=<k>/`` — one row per training sample: the document's columns plus ``domain``,
  ``token_estimate``, ``epoch`` (0 for the first copy, 1, 2, … for repeats) and ``sample_id``
  (``<id>#<epoch>``, unique per row; ``id`` stays the document id). Buckets (= MindRecord shards) are
  the document's hash plus the epoch (``copy_bucket``), so the repeats of a document take distinct
  shards while it has no more copies than there are shards; rows within a bucket are in hash order.
* ``rejected/`` — documents the mixture sampled out (``reject_rule = mixture_downsample``,
  ``reject_value`` = the domain's planned epochs). Their ``text`` is not copied again (it is null
  here; the input still has it).

* ``errors/`` — documents whose text is over ``io.max_text_chars`` (``error = text_too_long``): no
  copies, no part of the plan.

Counts reconcile per document: ``records_in = kept (distinct documents) + rejected + errors``; the extra rows
of repeated documents are reported separately as ``repeat_rows`` (``rows_written = kept + repeat_rows``).
"""
from contextlib import ExitStack
from typing import Dict

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.buckets import copy_bucket, one_task_per_bucket
from jobs.report.render import table
from jobs.report.svg import paired_bar_chart
from jobs.stage import OVER_LIMIT, Stage, Transformed, over_limit_as_errors
from udfs.mix.mixture import (DomainPlan, DomainRules, MixConfig, copies_batch, effective_tokens, estimate_tokens,
                              plan_mixture)

DOWNSAMPLED = "mixture_downsample"


class MixStage(Stage):
    name = "mix"
    config = MixConfig
    order = 70
    required_columns = ("id", "url", "text")
    partition_columns = ("bucket",)
    kept_documents = False  # one row per copy of a document
    makes_over_limit_errors = True  # before the rows are ordered for writing

    @classmethod
    def report_section(cls, facts) -> str:
        mixture = facts.stats[cls.name].get("mixture")
        if not isinstance(mixture, dict) or not isinstance(mixture.get("target"), dict):
            return ""
        target = mixture["target"]
        achieved = mixture.get("achieved") or {}
        series = [("target", [float(target.get(d) or 0) for d in target]),
                  ("achieved (mix, estimated tokens)", [float(achieved.get(d) or 0) for d in target])]
        exact = facts.stats.get("pack", {}).get("mixture_exact")  # counted in tokens by the stage after
        if isinstance(exact, dict):
            series.append(("achieved (pack, exact tokens)", [float(exact.get(d) or 0) for d in target]))
        domains = facts.stats[cls.name].get("domains")
        rows = ""
        if isinstance(domains, dict):
            keys = [k for k in ("available_docs", "docs_out", "rows_out", "tokens_out", "planned_epochs",
                                "max_epochs", "capped") if any(k in (d or {}) for d in domains.values())]
            rows = table(("domain", *keys), [(name, *[(d or {}).get(k, "") for k in keys])
                                             for name, d in domains.items()])
        return ("<h2>Domain mixture: target vs achieved</h2>"
                + paired_bar_chart(list(target), series, "domain weights, target vs achieved") + rows)

    @staticmethod
    def output_note(stats: dict) -> str:
        """mix keeps documents but writes one row per copy: a repeated document is written once per epoch."""
        rows, repeats = stats.get("rows_written"), stats.get("repeat_rows")
        if isinstance(rows, int) and rows != stats.get("kept"):
            return f"written as {rows:,} document copies ({repeats or 0:,} repeats)"
        return ""

    def transform(self, docs: DataFrame, resources: ExitStack) -> Transformed:
        cfg = self.settings
        rules = DomainRules(cfg)
        # Imported here, not with the module: the driver imports every stage for its declaration before
        # the JVM starts. (The UDFs' type hints are evaluated where they are defined, so no __future__ import.)
        import pandas as pd

        @F.pandas_udf("string")
        def label(url: pd.Series, host: pd.Series, source: pd.Series) -> pd.Series:
            return pd.Series(rules.label_batch(url, host, source), index=url.index)

        @F.pandas_udf("long")
        def token_estimate(text: pd.Series) -> pd.Series:
            return text.map(estimate_tokens).astype("int64")

        seed = cfg.seed

        @F.pandas_udf("int")
        def copies(sample_key: pd.Series, epochs: pd.Series) -> pd.Series:
            return pd.Series(copies_batch(sample_key.tolist(), epochs.tolist(), seed), index=sample_key.index)

        def optional(column: str):
            return F.col(column) if column in docs.columns else F.lit(None).cast("string")

        labelled = (docs.withColumn("domain", label(F.col("url"), optional("host"), optional("source")))
                    .withColumn("token_estimate", token_estimate(F.col("text"))))
        # A text over the limit is no part of the plan, and becomes one error row (no copies).
        totals = labelled.where(F.col(OVER_LIMIT).isNull()).groupBy("domain").agg(F.count("*").alias("docs"),
                                                F.sum("token_estimate").alias("tokens")).collect()
        plan = plan_mixture({r["domain"]: int(r["tokens"] or 0) for r in totals},
                            {r["domain"]: int(r["docs"]) for r in totals}, cfg)

        epochs = F.create_map(*[x for name, p in plan.items() for x in (F.lit(name), F.lit(float(p.epochs)))])
        n = F.when(F.col(OVER_LIMIT).isNull(), copies(F.col("id"), epochs[F.col("domain")])).otherwise(F.lit(0))
        sampled = labelled.withColumn("_copies", n).withColumn("_planned_epochs", epochs[F.col("domain")])
        # One row per copy; a document with no copy stays as one rejected row (epoch 0).
        rows = sampled.withColumn("epoch", F.explode(
            F.when(F.col("_copies") > 0, F.sequence(F.lit(0), F.col("_copies") - 1)).otherwise(F.array(F.lit(0)))))
        kept = F.col("_copies") > 0
        rows = (rows
                .withColumn("sample_id", F.concat(F.col("id"), F.lit("#"), F.col("epoch").cast("string")))
                .withColumn("bucket", copy_bucket(F.col("id"), F.col("epoch"), cfg.buckets))
                .withColumn("_outcome", F.when(kept, F.lit("kept")).otherwise(F.lit("rejected")))
                .withColumn("reject_rule", F.when(kept, F.lit(None)).otherwise(F.lit(DOWNSAMPLED)))
                .withColumn("reject_value", F.when(kept, F.lit(None))
                            .otherwise(F.format_number(F.col("_planned_epochs"), 4)))
                .withColumn("text", F.when(kept, F.col("text")))
                # The runner counts records by _count: repeats are rows, not extra documents.
                .withColumn("_count", F.when(F.col("epoch") == 0, F.lit(1)).otherwise(F.lit(0)).cast("long"))
                .drop("_copies", "_planned_epochs"))
        rows = over_limit_as_errors(rows)
        # One task per bucket, its rows in hash order (the write's partitioning keeps that order).
        rows = (one_task_per_bucket(rows, "bucket", cfg.buckets)
                .sortWithinPartitions("_outcome", "bucket", F.xxhash64("sample_id")))
        return Transformed(rows, {"plan": plan})

    def extra_stats(self, stage_dir: str, facts: dict) -> dict:
        plan = facts["plan"]
        kept = self.spark.read.parquet(f"{stage_dir}/kept")
        rows = kept.groupBy("domain").agg(
            F.count("*").alias("rows"),
            F.sum(F.when(F.col("epoch") == 0, 1).otherwise(0)).alias("docs"),
            F.sum("token_estimate").alias("tokens"),
            F.sum(F.when(F.col("epoch") == 0, F.col("token_estimate")).otherwise(0)).alias("unique_tokens"),
        ).collect()
        written = {r["domain"]: r for r in rows}
        total_out = sum(int(r["tokens"]) for r in rows) or 1
        domains: Dict[str, dict] = {}
        for name, domain_plan in plan.items():
            out = written.get(name)
            tokens, unique = (int(out["tokens"]), int(out["unique_tokens"])) if out else (0, 0)
            domains[name] = _domain_stats(domain_plan, out, tokens, unique, total_out)
        repeat_rows = sum(int(r["rows"]) - int(r["docs"]) for r in rows)
        return {
            "token_count": "estimate (calibrated to cl100k_base); pack reports exact tokens",
            "budget_tokens": self.settings.total_tokens or sum(p.available_tokens for p in plan.values()),
            "repeat_rows": repeat_rows,
            "rows_written": sum(int(r["rows"]) for r in rows),
            "mixture": {"target": {n: d["target_weight"] for n, d in domains.items()},
                        "achieved": {n: d["achieved_weight"] for n, d in domains.items()}},
            "effective_tokens": round(sum(d["effective_tokens"] for d in domains.values())),
            "domains": domains,
        }


def _domain_stats(plan: DomainPlan, out, tokens: int, unique: int, total_out: int) -> dict:
    return {
        "target_weight": round(plan.target_weight, 6),
        "achieved_weight": round(tokens / total_out, 6),
        "max_epochs": plan.max_epochs,
        "planned_epochs": round(plan.epochs, 6),
        "capped": plan.capped,
        "available_docs": plan.available_docs,
        "available_tokens": plan.available_tokens,
        "docs_out": int(out["docs"]) if out else 0,
        "rows_out": int(out["rows"]) if out else 0,
        "tokens_out": tokens,
        "unique_tokens": unique,
        "effective_tokens": round(effective_tokens(unique, tokens)),
    }


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("mix"))
