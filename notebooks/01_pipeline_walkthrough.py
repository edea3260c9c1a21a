# Databricks notebook source
# MAGIC %md
# MAGIC # corpusmill: the pipeline, one stage per cell
# MAGIC
# MAGIC Runs each stage on its own, in pipeline order, on the sample WARCs bundled with the project (or on
# MAGIC the `input` you give), and shows what every stage kept and dropped. Each cell is the same call as
# MAGIC `corpusmill run --stages <stage>` with the same run: re-running a cell whose stage finished with the
# MAGIC same config skips it, so the notebook can be re-run from the top at any time.
# MAGIC
# MAGIC On Databricks the notebook uses the cluster's `spark` session and its widgets (`input`, `output`,
# MAGIC `run`, `config`); locally it runs as plain Python (`python notebooks/01_pipeline_walkthrough.py`),
# MAGIC builds a local session from the config, and takes the same parameters from `CORPUSMILL_INPUT`,
# MAGIC `CORPUSMILL_OUTPUT`, `CORPUSMILL_RUN`, `CORPUSMILL_CONFIG`.

# COMMAND ----------

import json
import os
import sys

try:
    import jobs  # noqa: F401  (installed with pip, or the repository root is on sys.path)
except ImportError:  # a clone without `pip install -e .`, run from its notebooks/ folder
    sys.path.insert(0, os.path.abspath(os.path.join(os.getcwd(), "..")))

from jobs import config
from jobs.fs import HadoopFS
from jobs.pipeline import run_pipeline
from jobs.report import write_report
from jobs.spark import get_session

REPO = str(config.CONF_DIR.parent)  # the clone: where conf/ and data/sample are


def param(name: str, default: str) -> str:
    """A widget on Databricks; locally a global the caller injected, an environment variable, or the default."""
    if "dbutils" in globals():
        dbutils.widgets.text(name, default)  # noqa: F821  (defined by Databricks)
        return dbutils.widgets.get(name)  # noqa: F821
    return str(globals().get(name.upper()) or os.environ.get(f"CORPUSMILL_{name.upper()}") or default)


INPUT = param("input", os.path.join(REPO, "data", "sample"))
OUTPUT = param("output", os.path.join(REPO, "out"))
RUN = param("run", "notebook")
CONFIG = param("config", "")

cfg = config.load(CONFIG or None)
if "spark" not in globals():
    spark = get_session(cfg.spark)
print(f"input {INPUT}\noutput {OUTPUT}/{RUN}\nSpark {spark.version}, master {spark.sparkContext.master}")

# COMMAND ----------


def show(df, rows: int = 5) -> None:
    if "display" in globals():
        display(df.limit(rows))  # noqa: F821  (Databricks)
    else:
        df.show(rows, truncate=60, vertical=False)


def run_stage_cell(stage: str, columns=("id", "url", "text")) -> dict:
    """Run one stage of this run (the extract stage reads INPUT, the others the previous kept/)."""
    stats = run_pipeline(spark, cfg, [INPUT] if stage == "extract" else [], [stage], OUTPUT, RUN)[0]
    print(json.dumps({k: v for k, v in stats.items() if not isinstance(v, (list, dict)) or k in
                      ("rejected", "errors", "skipped")}, indent=1))
    kept = f"{OUTPUT}/{RUN}/{stage}/kept"
    if HadoopFS(spark).exists(kept):
        docs = spark.read.parquet(kept)
        show(docs.select(*[c for c in columns if c in docs.columns]))
    return stats


# COMMAND ----------

# MAGIC %md
# MAGIC ## extract
# MAGIC WARC/ARC records → documents: HTTP 200 HTML responses, charset decoded, main content extracted,
# MAGIC text normalised. Requests, metadata and other record types are counted in `skipped`.

# COMMAND ----------

extract_stats = run_stage_cell("extract", ("id", "url", "charset", "content_length", "text"))

# COMMAND ----------

# MAGIC %md
# MAGIC ## filter
# MAGIC Language ID and the heuristic quality rules; every rejected document names its rule and value.

# COMMAND ----------

filter_stats = run_stage_cell("filter", ("id", "lang", "lang_score", "text"))

# COMMAND ----------

# MAGIC %md
# MAGIC ## pii
# MAGIC E-mail addresses, phone numbers, IDs, keys… replaced with typed placeholders (`<EMAIL>`), counted per type.

# COMMAND ----------

pii_stats = run_stage_cell("pii", ("id", "pii", "text"))

# COMMAND ----------

# MAGIC %md
# MAGIC ## dedup
# MAGIC Exact then MinHash near-duplicate clusters; one survivor per cluster.

# COMMAND ----------

dedup_stats = run_stage_cell("dedup", ("id", "cluster_id", "text"))

# COMMAND ----------

# MAGIC %md
# MAGIC ## decontam
# MAGIC Documents that share a 13-gram with an evaluation set (`decontam.benchmarks`, a folder of JSONL/text files) go.

# COMMAND ----------

decontam_stats = run_stage_cell("decontam", ("id", "decontam_benchmark", "text"))

# COMMAND ----------

# MAGIC %md
# MAGIC ## score
# MAGIC Quality score per document from the MindSpore scoring service.

# COMMAND ----------

score_stats = run_stage_cell("score", ("id", "quality_score", "text"))

# COMMAND ----------

# MAGIC %md
# MAGIC ## mix
# MAGIC Domain label, target weights and epochs per domain; buckets that become MindRecord shards.

# COMMAND ----------

mix_stats = run_stage_cell("mix", ("id", "domain", "epoch", "bucket", "text"))

# COMMAND ----------

# MAGIC %md
# MAGIC ## pack
# MAGIC Tokenize and pack into fixed-length sequences with EOS and segment ids.

# COMMAND ----------

pack_stats = run_stage_cell("pack", ("input_ids", "segment_ids"))

# COMMAND ----------

# MAGIC %md
# MAGIC ## mindrecord
# MAGIC One MindRecord file per bucket, readable as one dataset with `mindspore.dataset.MindDataset`.

# COMMAND ----------

mindrecord_stats = run_stage_cell("mindrecord")
for shard in mindrecord_stats.get("shards", []):
    print(shard)

# COMMAND ----------

# MAGIC %md
# MAGIC ## The run report
# MAGIC The same page `corpusmill run` writes at the end: funnel, rules, histograms, samples to spot-check.

# COMMAND ----------

report_uri = write_report(spark, f"{OUTPUT}/{RUN}")
print(report_uri)
if "displayHTML" in globals():
    displayHTML(HadoopFS(spark).read_text(report_uri))  # noqa: F821  (Databricks)
