# Databricks notebook source
# MAGIC %md
# MAGIC # corpusmill: explore a finished run
# MAGIC
# MAGIC Reads `<output>/<run>/` — each stage's `_stats.json` and its Parquet outputs — and shows the funnel
# MAGIC from WARC records to kept documents, the rejections per rule with documents to spot-check, and the
# MAGIC length and quality-score distributions. Nothing here writes to the run.
# MAGIC
# MAGIC Parameters: widgets `output`, `run` and `config` on Databricks; locally `CORPUSMILL_OUTPUT` /
# MAGIC `CORPUSMILL_RUN` / `CORPUSMILL_CONFIG` (or globals of the same names in upper case), defaulting to
# MAGIC the walkthrough notebook's run and `conf/local.yaml`.

# COMMAND ----------

import os
import sys

import pandas as pd

try:
    import jobs  # noqa: F401  (installed with pip, or the repository root is on sys.path)
except ImportError:  # a clone without `pip install -e .`, run from its notebooks/ folder
    sys.path.insert(0, os.path.abspath(os.path.join(os.getcwd(), "..")))

from corpusmill.run_folder import STATS
from jobs import config, registry
from jobs.fs import HadoopFS
from jobs.report import drops_of, length_histogram, rejected_samples
from jobs.spark import get_session
from jobs.stages.score import score_histogram, scores_by_outcome

REPO = str(config.CONF_DIR.parent)


def param(name: str, default: str) -> str:
    """A widget on Databricks; locally a global the caller injected, an environment variable, or the default."""
    if "dbutils" in globals():
        dbutils.widgets.text(name, default)  # noqa: F821  (defined by Databricks)
        return dbutils.widgets.get(name)  # noqa: F821
    return str(globals().get(name.upper()) or os.environ.get(f"CORPUSMILL_{name.upper()}") or default)


OUTPUT = param("output", os.path.join(REPO, "out"))
RUN = param("run", "notebook")
RUN_DIR = f"{OUTPUT.rstrip('/')}/{RUN}"
# The run's config: its pii settings scrub the rejected samples shown below.
CFG = config.load(param("config", "") or None)

if "spark" not in globals():
    spark = get_session(CFG.spark)
fs = HadoopFS(spark)
stats = {s: fs.read_json(f"{RUN_DIR}/{s}/{STATS}") for s in registry.stage_order() if fs.exists(f"{RUN_DIR}/{s}/{STATS}")}
print(f"{RUN_DIR}: finished stages {', '.join(stats) or 'none'}")


def show(frame: pd.DataFrame) -> None:
    if "display" in globals():
        display(frame)  # noqa: F821  (Databricks renders tables and charts)
    else:
        print(frame.to_string(index=False))


def text_bars(bins) -> pd.DataFrame:
    """A histogram as a table with a bar of #, readable in a terminal and chartable on Databricks."""
    top = max((n for _, n in bins), default=0) or 1
    return pd.DataFrame({"bin": [b for b, _ in bins], "documents": [n for _, n in bins],
                         "": ["#" * round(40 * n / top) for _, n in bins]})


# COMMAND ----------

# MAGIC %md
# MAGIC ## The funnel
# MAGIC Records in and kept per stage, and every reason a record was dropped (share of that stage's input).

# COMMAND ----------

funnel = pd.DataFrame([{"stage": name, "records_in": s.get("records_in"), "kept": s.get("kept"),
                        "dropped": sum(n for _, n in drops_of(s)), "wall_s": s.get("wall_s"),
                        "reconciled": s.get("reconciled")} for name, s in stats.items()])
show(funnel)
reasons = pd.DataFrame([{"stage": name, "reason": reason, "records": n,
                         "share": round(n / s["records_in"], 4) if s.get("records_in") else None}
                        for name, s in stats.items() for reason, n in drops_of(s)],
                       columns=["stage", "reason", "records", "share"])
show(reasons)

# COMMAND ----------

# MAGIC %md
# MAGIC ## Rejected documents to spot-check
# MAGIC A few per stage and rule, picked by a hash of the id (the same ones every time you look).

# COMMAND ----------

samples = pd.DataFrame([{"stage": stage, **row} for stage in stats if fs.exists(f"{RUN_DIR}/{stage}/rejected")
                        for row in rejected_samples(spark.read.parquet(f"{RUN_DIR}/{stage}/rejected"), CFG.pii,
                                                   stats[stage].get("rejected"))],
                       columns=["stage", "reason", "id", "url", "reject_value", "chars", "text"])
samples["text"] = samples["text"].str.slice(0, 200)
show(samples)

# COMMAND ----------

# MAGIC %md
# MAGIC ## Document lengths and quality scores
# MAGIC Length in characters on a log scale (power-of-two bins) for the documents the last document stage
# MAGIC kept; the quality-score histogram once the score stage has run.

# COMMAND ----------

document_stages = [s.name for s in registry.stages() if s.kept_documents and s.name in stats]
lengths = pd.DataFrame()
if document_stages:
    lengths = text_bars(length_histogram(spark.read.parquet(f"{RUN_DIR}/{document_stages[-1]}/kept")))
    print(f"document length (characters) after {document_stages[-1]}")
    show(lengths)

scores = pd.DataFrame()
if "score" in stats:
    scored = scores_by_outcome(*[spark.read.parquet(f"{RUN_DIR}/score/{o}") if fs.exists(f"{RUN_DIR}/score/{o}")
                                 else None for o in ("kept", "rejected")])
    bins = score_histogram(scored) if scored is not None else []
    scores = text_bars([(b, kept + rejected) for b, (kept, rejected) in bins]).assign(
        kept=[kept for _, (kept, _) in bins], rejected=[rejected for _, (_, rejected) in bins])
    show(scores)
else:
    print("no score stage in this run yet: no quality-score histogram")

# COMMAND ----------

# MAGIC %md
# MAGIC ## The report
# MAGIC `corpusmill run` writes `report.html` beside the stages with the same figures as plots.

# COMMAND ----------

report_uri = f"{RUN_DIR}/report.html"
print(report_uri if fs.exists(report_uri) else f"no report yet: corpusmill report --output {OUTPUT} --run {RUN}")
