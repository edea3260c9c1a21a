"""pii: find personal data and secrets in every document and replace them with typed placeholders.

    spark-submit jobs/stages/pii.py --input out/demo/filter/kept --run demo

Every document passes once through ``udfs.pii.scrub.PiiScrubber`` inside an Arrow batch (``mapInArrow``;
the Presidio analyzer is built once per Python worker). The stage owns the scrubbed ``text`` and
``pii``, a map type → number of values replaced (``{"EMAIL": 2, "PHONE": 1}``), and likewise the
scrubbed ``url`` and ``url_pii`` (e-mails, tokens, IDs in its path, query and fragment: typed
placeholders, ``?email=<EMAIL>``; scheme and host kept). A document the analyzer cannot finish (a
recognizer past its time limit, a document over ``max_doc_chars``, a malformed URL, an unexpected
failure) goes to ``errors/`` with the reason in ``error`` (a text over ``io.max_text_chars`` is
``text_too_long`` before the analyzer sees it), its URL scrubbed where it could be and no
text (the raw text stays in the earlier stage's output, the audit trail), and the job goes on.
``_stats.json`` gets the replacements per type (``pii_replaced``, ``url_pii_replaced``); no original
value is ever logged or counted.
"""
from __future__ import annotations

from contextlib import ExitStack
from typing import Dict

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.fs import HadoopFS
from jobs.report.svg import bar_chart
from jobs.transforms.scrub import scrubbed
from jobs.stage import Stage, Transformed, over_limit_as_errors
from udfs.pii.scrub import PiiConfig


def replaced_per_type(docs: DataFrame, column: str) -> Dict[str, int]:
    """Sum of a type → count map column over ``docs``, by type."""
    rows = docs.select(F.explode(column).alias("type", "n")).groupBy("type").agg(F.sum("n").alias("n")).collect()
    return {r["type"]: int(r["n"]) for r in sorted(rows, key=lambda r: r["type"])}


class PiiStage(Stage):
    name = "pii"
    config = PiiConfig
    order = 30
    chunked = True
    required_columns = ("text",)

    @classmethod
    def report_facts(cls, read, stats: dict) -> dict:
        counts = {}
        docs = None  # the written rows, read only for a count its _stats.json lacks
        for key, column in (("pii_replaced", "pii"), ("url_pii_replaced", "url_pii")):
            if isinstance(stats.get(key), dict):
                counts[column] = {str(k): int(v) for k, v in stats[key].items()}
                continue
            docs = read("kept", "rejected") if docs is None else docs
            counts[column] = replaced_per_type(docs, column) if docs is not None and column in docs.columns else {}
        return counts

    @classmethod
    def report_section(cls, facts) -> str:
        counts = facts.stage_facts.get(cls.name, {})
        charts = [bar_chart(sorted(counts[column].items(), key=lambda kv: -kv[1]), title, colour="#d9822b",
                            label_width=160)
                  for column, title in (("pii", "PII replacements per type, in the text"),
                                        ("url_pii", "PII replacements per type, in the URL")) if counts.get(column)]
        return "<h2>PII replaced, per type</h2>" + "".join(charts) if charts else ""

    def transform(self, docs: DataFrame, resources: ExitStack) -> Transformed:
        return Transformed(over_limit_as_errors(scrubbed(self.hold_back_long_texts(docs), self.settings)))

    def extra_stats(self, stage_dir: str, facts: dict) -> dict:
        """Values replaced per type (in the text and in the URL), and how many kept documents had any."""
        if not HadoopFS(self.spark).exists(f"{stage_dir}/kept"):
            return {"pii_replaced": {}, "url_pii_replaced": {}, "documents_with_pii": 0}
        kept = self.spark.read.parquet(f"{stage_dir}/kept")
        return {"pii_replaced": replaced_per_type(kept, "pii"),
                "url_pii_replaced": replaced_per_type(kept, "url_pii"),
                "documents_with_pii": kept.where((F.size("pii") > 0) | (F.size("url_pii") > 0)).count()}


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("pii"))
