"""Airflow DAG: the corpusmill pipeline for one crawl snapshot, one task per stage.

Each task runs ``corpusmill run --stages <stage>`` with the same ``--output``/``--run``; the first
reads the ``input`` parameter and every later one the ``kept/`` of the task before it (named, so that a
DAG narrowed by ``CORPUSMILL_STAGES`` chains the stages it runs), and a retried (or cleared) task
resumes: stages that finished with the same config are skipped, a half-written one is redone. Every task refreshes
``<output>/<run>/report.html``. Relative paths are relative to ``$CORPUSMILL_HOME`` (default: the
clone this file sits in, when it does).

Parameters (trigger with ``--conf`` / the trigger form): ``input`` (WARC glob or folder), ``output``,
``run`` (default: the DAG run id), ``config`` (YAML; empty = conf/local.yaml), ``corpusmill`` (the
command, default ``$CORPUSMILL_BIN`` or ``corpusmill``: Airflow and corpusmill usually live in
different environments). On a cluster set ``corpusmill`` to a wrapper that calls
``spark-submit ... jobs/cli.py`` (docs/operations.md, "On a cluster").

    airflow dags test corpusmill --conf '{"input": "/data/CC-MAIN-2026-48/*.warc.gz", "output": "/data/out"}'

Works with Airflow 2.9+ and 3.x.
"""
from __future__ import annotations

import ast
import os
import shlex
from datetime import datetime, timedelta

try:  # Airflow 3
    from airflow.providers.standard.operators.bash import BashOperator
    from airflow.sdk import DAG, Param
except ImportError:  # Airflow 2
    from airflow import DAG
    from airflow.models.param import Param
    from airflow.operators.bash import BashOperator

HERE = os.path.dirname(os.path.abspath(__file__))
CLONE = os.path.dirname(HERE) if os.path.isdir(os.path.join(os.path.dirname(HERE), "jobs")) else None
HOME = os.environ.get("CORPUSMILL_HOME") or CLONE


def declared_stage_order(home: str) -> list:
    """The stages of the clone at ``home`` in their declared order, read from the ``name`` and ``order``
    of each class in jobs/stages/*.py and jobs/stages/*/__init__.py (a stage with parts is a package) as
    source text: the scheduler parses this file without corpusmill installed, and a stage added there
    gets its task without touching this file."""
    declared = []
    folder = os.path.join(home, "jobs", "stages")
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if os.path.isdir(path):
            path = os.path.join(path, "__init__.py")
            if not os.path.isfile(path):
                continue
        elif not entry.endswith(".py") or entry == "__init__.py":
            continue
        with open(path, encoding="utf-8") as source:
            tree = ast.parse(source.read())
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                values = {}
                for statement in node.body:  # name = "x" and name, config, order = "x", XConfig, 15
                    if not isinstance(statement, ast.Assign):
                        continue
                    for target in statement.targets:
                        pairs = (zip(target.elts, statement.value.elts) if isinstance(target, ast.Tuple)
                                 and isinstance(statement.value, ast.Tuple) else [(target, statement.value)])
                        values.update({t.id: v.value for t, v in pairs
                                       if isinstance(t, ast.Name) and isinstance(v, ast.Constant)})
                if isinstance(values.get("name"), str) and isinstance(values.get("order"), int):
                    declared.append((values["order"], values["name"]))
    return [name for _, name in sorted(declared)]


# Pipeline order; CORPUSMILL_STAGES (comma-separated) narrows it, e.g. to the stages a deployment runs, or
# names them where no clone is at hand.
ORDER = os.environ.get("CORPUSMILL_STAGES") or (",".join(declared_stage_order(HOME)) if HOME else "")
if not ORDER:
    raise RuntimeError("corpusmill DAG: set CORPUSMILL_HOME to a corpusmill clone, or CORPUSMILL_STAGES")
STAGES = [s.strip() for s in ORDER.split(",") if s.strip()]

# Run names become folder names: the run id of a manual run has ':' and '+', which Hadoop paths reject.
RUN_NAME = "(params.run or (run_id | replace(':', '-') | replace('+', '-')))"
COMMON = ("{{ params.corpusmill }} run --output {{ params.output | quote }} --run {{ " + RUN_NAME + " }} "
          "{% if params.config %}--config {{ params.config | quote }}{% endif %}")


def stage_command(stage: str, previous: str = None) -> str:
    """The task's command: ``previous`` is the stage of the task before it (None: the first task)."""
    if previous is None:
        source = "{{ params.input | quote }}"
    else:
        source = "{{ (params.output.rstrip('/') ~ '/' ~ " + RUN_NAME + f" ~ '/{previous}/kept') | quote }}}}"
    return f"{COMMON} --stages {stage} --input {source}"


with DAG(
    dag_id="corpusmill",
    description="WARC snapshot → filtered, deduplicated, scored, packed MindRecord shards",
    start_date=datetime(2024, 1, 1),
    schedule=None,
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=2), "retry_exponential_backoff": True},
    params={
        "input": Param("data/sample", type="string", description="WARC/ARC files, glob or folder"),
        "output": Param("out", type="string", description="output root; the run goes to <output>/<run>/"),
        "run": Param("", type="string", description="run name (default: the DAG run id)"),
        "config": Param("", type="string", description="corpusmill YAML config (default conf/local.yaml)"),
        "corpusmill": Param(os.environ.get("CORPUSMILL_BIN", "corpusmill"), type="string",
                            description="the corpusmill command (or a spark-submit wrapper)"),
    },
    user_defined_filters={"quote": shlex.quote},
    tags=["corpusmill"],
) as dag:
    previous_task, previous_stage = None, None
    for name in STAGES:
        task = BashOperator(task_id=name, bash_command=stage_command(name, previous_stage), cwd=HOME)
        if previous_task is not None:
            previous_task >> task
        previous_task, previous_stage = task, name
