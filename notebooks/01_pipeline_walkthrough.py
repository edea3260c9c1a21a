# Databricks notebook source
# MAGIC %md
# MAGIC # corpusmill: the pipeline, stage by stage
# MAGIC
# MAGIC Runs each stage on its own, in pipeline order, on the sample WARCs bundled with the project (or on
# MAGIC the `input` you give), and shows what every stage kept and dropped. Each stage is the same call as
# MAGIC `corpusmill run --stages <stage>` with the same run: a stage that finished with the same config is
# MAGIC skipped, so the notebook can be re-run from the top at any time.
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

from jobs import config, registry
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


def run_stage_cell(stage: str, shown_before=()) -> tuple:
    """Run one stage of this run (a stage reading files reads INPUT, the others the previous kept/) and
    show a few kept rows: the id, the columns the stage added, the text. Returns its stats and the
    columns of its kept/ (``shown_before`` unchanged when it has none)."""
    stats = run_pipeline(spark, cfg, [INPUT] if registry.stage_class(stage).input == "files" else [], [stage],
                         OUTPUT, RUN)[0]
    print(json.dumps({k: v for k, v in stats.items() if not isinstance(v, (list, dict)) or k in
                      ("rejected", "errors", "skipped")}, indent=1))
    kept = f"{OUTPUT}/{RUN}/{stage}/kept"
    if not HadoopFS(spark).exists(kept):
        return stats, shown_before
    docs = spark.read.parquet(kept)
    added = [c for c in docs.columns if c not in shown_before and c not in ("id", "text")]
    show(docs.select(*[c for c in ("id", *added, "text") if c in docs.columns]))
    return stats, tuple(docs.columns)


# COMMAND ----------

# MAGIC %md
# MAGIC ## Every stage, in pipeline order
# MAGIC The stages are the ones `corpusmill run` knows (`jobs.registry`), each with its own page under
# MAGIC `docs/stages/`. Each prints its counts (kept, rejected and errors by reason, skipped) and a few kept
# MAGIC rows with the columns it added.

# COMMAND ----------

stats = {}
columns_so_far = ()
for stage in registry.stage_order():
    print("==", (sys.modules[registry.stage_class(stage).__module__].__doc__ or stage).strip().splitlines()[0])
    stats[stage], columns_so_far = run_stage_cell(stage, columns_so_far)
for shard in stats.get("mindrecord", {}).get("shards", []):
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
