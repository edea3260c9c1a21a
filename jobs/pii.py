"""pii: find personal data and secrets in every document and replace them with typed placeholders.

    spark-submit jobs/pii.py --input out/demo/filter/kept --run demo

Every document passes once through ``udfs.pii.PiiScrubber`` inside an Arrow batch (``mapInArrow``;
the Presidio analyzer is built once per Python worker). The stage owns the scrubbed ``text`` and
``pii``, a map type → number of values replaced (``{"EMAIL": 2, "PHONE": 1}``). A document the
analyzer cannot finish (a recognizer past its time limit, a document over ``max_doc_chars``, an
unexpected failure) goes to ``errors/`` with the reason in ``error``, unscrubbed and out of the
training data, and the job goes on. ``_stats.json`` gets the replacements per type; no original
value is ever logged or counted.
"""
from __future__ import annotations

from contextlib import ExitStack
from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from jobs.fs import HadoopFS
from jobs.stage import Stage, Transformed
from udfs.pii import scrubber_for

# The columns this stage adds (replacing same-named input columns), in output order.
PII_FIELDS = pa.schema([("pii", pa.map_(pa.string(), pa.int32())), ("error", pa.string()), ("_outcome", pa.string())])


class PiiStage(Stage):
    name = "pii"
    required_columns = ("text",)

    def transform(self, docs: DataFrame, resources: ExitStack) -> Transformed:
        docs = docs.drop(*[c for c in PII_FIELDS.names if c in docs.columns])
        settings = self.settings
        text_at = docs.columns.index("text")
        # The filter stage's language picks the NER pipeline, when NER is configured.
        with_lang = "lang" in docs.columns and bool(settings.ner_models)

        def scrub_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            scrubber = scrubber_for(settings)
            for batch in batches:
                texts = batch.column(text_at).to_pylist()
                langs = batch.column("lang").to_pylist() if with_lang else [None] * len(texts)
                done = [scrubber.scrub_or_error(text, lang) for text, lang in zip(texts, langs)]
                columns = list(batch.columns)
                columns[text_at] = pa.array([d.text for d in done], type=pa.string())
                added = [
                    pa.array([list(d.counts.items()) for d in done], type=PII_FIELDS.field("pii").type),
                    pa.array([d.error for d in done], type=pa.string()),
                    pa.array(["kept" if d.error is None else "error" for d in done], type=pa.string()),
                ]
                yield pa.RecordBatch.from_arrays(columns + added, names=batch.schema.names + PII_FIELDS.names)

        schema = StructType(docs.schema.fields + from_arrow_schema(PII_FIELDS).fields)
        return Transformed(docs.mapInArrow(scrub_batches, schema))

    def extra_stats(self, stage_dir: str, facts: dict) -> dict:
        """Values replaced per type, and how many kept documents had any."""
        if not HadoopFS(self.spark).exists(f"{stage_dir}/kept"):
            return {"pii_replaced": {}, "documents_with_pii": 0}
        kept = self.spark.read.parquet(f"{stage_dir}/kept")
        per_type = (kept.select(F.explode("pii").alias("type", "n"))
                    .groupBy("type").agg(F.sum("n").alias("n")).collect())
        with_pii = kept.where(F.size("pii") > 0).count()
        return {"pii_replaced": {r["type"]: int(r["n"]) for r in sorted(per_type, key=lambda r: r["type"])},
                "documents_with_pii": with_pii}


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("pii"))
