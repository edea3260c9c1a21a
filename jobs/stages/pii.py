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
from typing import Dict, Tuple

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.fs import HadoopFS
from jobs.report.svg import bar_chart
from jobs.scrubbing import scrubbed
from jobs.stage import Stage, Transformed
from udfs.pii.scrub import PiiConfig, build_scrubber_in_background


_ENTRY = "struct<column:string,type:string,n:bigint>"


def _tagged_entry(column: str):
    # A function of one argument: F.transform passes the index to a second one.
    return lambda e: F.struct(F.lit(column).alias("column"), e["key"].alias("type"), e["value"].cast("long").alias("n"))


def replaced_per_type(docs: DataFrame, *columns: str) -> Tuple[Dict[str, Dict[str, int]], int]:
    """Per type → count map column, the sum of its counts over ``docs`` by type; and how many rows
    have any. One pass: each row's entries, tagged with their column, plus one entry that says
    whether the row had any, are summed in one aggregation."""
    has_any = F.lit(False)
    parts = []
    for column in columns:
        tagged = F.transform(F.map_entries(column), _tagged_entry(column))
        parts.append(F.coalesce(tagged, F.array().cast(f"array<{_ENTRY}>")))
        has_any = has_any | F.coalesce(F.size(column) > 0, F.lit(False))
    row = F.array(F.struct(F.lit("").alias("column"), F.lit(None).cast("string").alias("type"),
                           has_any.cast("long").alias("n")))
    sums = (docs.select(F.explode(F.concat(*parts, row)).alias("e")).select("e.*")
            .groupBy("column", "type").agg(F.sum("n").alias("n")).collect())
    counts: Dict[str, Dict[str, int]] = {column: {} for column in columns}
    rows_with_any = 0
    for r in sorted(sums, key=lambda r: (r["column"], r["type"] or "")):
        if r["column"]:
            counts[r["column"]][r["type"]] = int(r["n"])
        else:
            rows_with_any = int(r["n"] or 0)
    return counts, rows_with_any


class PiiStage(Stage):
    name = "pii"
    config = PiiConfig
    order = 30
    chunked = True
    required_columns = ("text",)

    @classmethod
    def prepare(cls, cfg, planned) -> None:
        # Built whatever is planned: the run report and filter's spot-check samples are scrubbed in the
        # driver too, and Presidio's import is slow.
        build_scrubber_in_background(cfg.pii)

    @classmethod
    def report_facts(cls, read, stats: dict) -> dict:
        counts, missing = {}, []
        for key, column in (("pii_replaced", "pii"), ("url_pii_replaced", "url_pii")):
            if isinstance(stats.get(key), dict):
                counts[column] = {str(k): int(v) for k, v in stats[key].items()}
            else:
                counts[column] = {}
                missing.append(column)
        docs = read("kept", "rejected") if missing else None  # only for counts its _stats.json lacks
        if docs is not None:
            counts.update(replaced_per_type(docs, *[c for c in missing if c in docs.columns])[0])
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
        return Transformed(scrubbed(docs, self.settings))

    def extra_stats(self, stage_dir: str, facts: dict) -> dict:
        """Values replaced per type (in the text and in the URL), and how many kept documents had any."""
        if not HadoopFS(self.spark).exists(f"{stage_dir}/kept"):
            return {"pii_replaced": {}, "url_pii_replaced": {}, "documents_with_pii": 0}
        counts, documents = replaced_per_type(self.spark.read.parquet(f"{stage_dir}/kept"), "pii", "url_pii")
        return {"pii_replaced": counts["pii"], "url_pii_replaced": counts["url_pii"], "documents_with_pii": documents}


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("pii"))
