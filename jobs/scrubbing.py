"""Scrubbing documents: what the pii stage writes (a DataFrame, in the Python workers), and all that
the filter samples and the report show of documents from before it (a few hundred rows, in the driver).

Its own module (not ``jobs/stages/pii.py``) because the report imports it, the CLI imports the report, and
a stage's job module imports the CLI for its ``spark-submit`` entry.
"""
from __future__ import annotations

from typing import Iterator, List, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, Row, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from jobs.stage import bookkeeping_fields
from udfs.pii.scrub import scrubber_for

# The columns the pii stage adds (replacing same-named input columns), in output order.
PII_COUNTS = pa.map_(pa.string(), pa.int32())
PII_FIELDS = pa.schema([("pii", PII_COUNTS), ("url_pii", PII_COUNTS), *bookkeeping_fields("error", "_outcome")])


def scrubbed(docs: DataFrame, settings) -> DataFrame:
    """``docs`` with ``text`` and ``url`` (when there is one) scrubbed by ``settings`` (a PiiConfig),
    and ``PII_FIELDS`` added: replacements per type in the text (``pii``) and in the URL (``url_pii``);
    on a document that could not be scrubbed, ``error``, a null ``text`` and ``_outcome`` "error".
    The pii stage writes this; the filter samples and the report show documents scrubbed the same
    way (``scrubbed_rows``)."""
    docs = docs.drop(*[c for c in PII_FIELDS.names if c in docs.columns])
    text_at = docs.columns.index("text")
    url_at = docs.columns.index("url") if "url" in docs.columns else None
    # The filter stage's language picks the NER pipeline, when NER is configured.
    with_lang = "lang" in docs.columns and bool(settings.ner_models)

    def scrub_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        scrubber = scrubber_for(settings)
        for batch in batches:
            texts = batch.column(text_at).to_pylist()
            langs = batch.column("lang").to_pylist() if with_lang else [None] * len(texts)
            urls = batch.column(url_at).to_pylist() if url_at is not None else [None] * len(texts)
            done = [scrubber.scrub_or_error(text, lang, url) for text, lang, url in zip(texts, langs, urls)]
            columns = list(batch.columns)
            columns[text_at] = pa.array([d.text for d in done], type=pa.string())
            if url_at is not None:
                columns[url_at] = pa.array([d.url for d in done], type=pa.string())
            added = [
                pa.array([list(d.counts.items()) for d in done], type=PII_COUNTS),
                pa.array([list(d.url_counts.items()) for d in done], type=PII_COUNTS),
                pa.array([d.error for d in done], type=pa.string()),
                pa.array(["kept" if d.error is None else "error" for d in done], type=pa.string()),
            ]
            yield pa.RecordBatch.from_arrays(columns + added, names=batch.schema.names + PII_FIELDS.names)

    return docs.mapInArrow(scrub_batches, StructType(docs.schema.fields + from_arrow_schema(PII_FIELDS).fields))


def scrubbed_rows(rows: Sequence[Row], settings) -> List[dict]:
    """``rows`` (collected spot-check samples with ``text``, and ``url``/``lang`` where they have them)
    as dicts, scrubbed as ``scrubbed`` scrubs a document, with its ``error`` (``text`` null then).

    In the driver: a run's samples are a few hundred rows, and the driver's one scrubber serves the
    filter's samples and the report alike (built in the background while the run starts,
    ``jobs/cli.py``), rather than in a one-task Spark job each, whose Python worker would import
    Presidio again at the end of the run."""
    scrubber = scrubber_for(settings)
    shown = []
    for row in rows:
        doc = row.asDict()
        done = scrubber.scrub_or_error(doc["text"], doc.get("lang") if settings.ner_models else None, doc.get("url"))
        doc["text"], doc["error"] = done.text, done.error
        if "url" in doc:
            doc["url"] = done.url
        shown.append(doc)
    return shown


def spot_check_picks(rows: DataFrame, reason: str, per_reason: int) -> DataFrame:
    """Up to ``per_reason`` of ``rows`` (with ``id`` and ``text``) per value of the ``reason`` column,
    for a person to spot-check: chosen by a hash of the id (the same rows on every run), and no two
    with the same text (a page crawled twice under two ids is shown once). Adds ``_hash`` and
    ``_rank`` (1, 2, …)."""
    hashed = rows.withColumn("_hash", F.xxhash64("id")).withColumn("_text", F.xxhash64(F.coalesce("text", F.lit(""))))
    first_of_text = Window.partitionBy(reason, "_text").orderBy("_hash", "id")
    order = Window.partitionBy(reason).orderBy("_hash", "id")
    return (hashed.withColumn("_copy", F.row_number().over(first_of_text)).where(F.col("_copy") == 1)
            .withColumn("_rank", F.row_number().over(order)).where(F.col("_rank") <= per_reason)
            .drop("_text", "_copy"))
