"""The Airflow DAG loads in real Airflow and runs the pipeline on the sample data with local Spark.

Airflow lives in its own environment (its dependency pins clash with the project's): create it with

    python3 -m venv ~/.cache/corpusmill/airflow-venv
    ~/.cache/corpusmill/airflow-venv/bin/pip install 'apache-airflow>=2.9,<4'

or point ``CORPUSMILL_AIRFLOW_VENV`` at one. Without it these tests skip.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, dag_stage_order
from jobs import registry

pytestmark = pytest.mark.service  # the airflow CLI
AIRFLOW_VENV = Path(os.environ.get("CORPUSMILL_AIRFLOW_VENV", Path.home() / ".cache/corpusmill/airflow-venv"))
SAMPLE = str(ROOT / "data" / "sample")

LOAD_DAG = """
import json
try:
    from airflow.dag_processing.dagbag import DagBag  # Airflow 3
except ImportError:
    from airflow.models.dagbag import DagBag
bag = DagBag(dag_folder="{folder}")
dag = bag.dags.get("corpusmill")
print(json.dumps({{"errors": {{k: str(v) for k, v in bag.import_errors.items()}},
                   "tasks": [t.task_id for t in dag.topological_sort()] if dag else [],
                   "retries": [t.retries for t in dag.tasks] if dag else [],
                   "params": sorted(dag.params.keys()) if dag else []}}))
"""


def test_the_dag_reads_the_stage_order_from_the_stages_declarations():
    """The DAG file (parsed without corpusmill) finds the registry's stages in the registry's order from the
    stage modules' text; no Airflow needed."""
    assert dag_stage_order(ROOT) == registry.stage_order()


@pytest.fixture(scope="module")
def airflow_env(tmp_path_factory):
    if not (AIRFLOW_VENV / "bin" / "airflow").exists():
        pytest.skip(f"no Airflow environment at {AIRFLOW_VENV} (see this file's docstring)")
    home = tmp_path_factory.mktemp("airflow")
    env = dict(os.environ, AIRFLOW_HOME=str(home), AIRFLOW__CORE__LOAD_EXAMPLES="False",
               AIRFLOW__CORE__DAGS_FOLDER=str(ROOT / "dags"), AIRFLOW__CORE__UNIT_TEST_MODE="False",
               # The tasks run this checkout's corpusmill with this test's interpreter, on every stage.
               CORPUSMILL_BIN=f"{sys.executable} -m jobs.cli", CORPUSMILL_HOME=str(ROOT),
               CORPUSMILL_STAGES=",".join(registry.stage_order()), PYSPARK_PYTHON=sys.executable)
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    return env


def airflow(env, *args, timeout=900):
    return subprocess.run([str(AIRFLOW_VENV / "bin" / "airflow"), *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_dagbag_loads_the_dag_without_import_errors(airflow_env):
    result = subprocess.run([str(AIRFLOW_VENV / "bin" / "python"), "-c", LOAD_DAG.format(folder=ROOT / "dags")],
                            env=airflow_env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded["errors"] == {}
    assert loaded["tasks"] == registry.stage_order()  # one task per stage, in pipeline order
    assert min(loaded["retries"]) >= 1
    assert {"input", "output", "run", "config"} <= set(loaded["params"])


def test_dags_test_runs_the_pipeline_on_local_spark(airflow_env, tmp_path):
    """A DAG narrowed by CORPUSMILL_STAGES (decontam left out) chains the stages it runs: each task reads
    the kept/ of the task before it, not the registry's stage before it."""
    stages = [stage for stage in registry.stage_order() if stage != "decontam"]
    env = dict(airflow_env, CORPUSMILL_STAGES=",".join(stages))
    migrated = airflow(env, "db", "migrate")
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    conf = {"input": SAMPLE, "output": str(tmp_path), "run": "airflow"}
    result = airflow(env, "dags", "test", "corpusmill", "--conf", json.dumps(conf))
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    run_dir = tmp_path / "airflow"
    for stage in stages:
        assert (run_dir / stage / "_COMPLETE.json").exists(), f"{stage}\n{log[-4000:]}"
        assert json.loads((run_dir / stage / "_stats.json").read_text())["reconciled"] is True
    assert not (run_dir / "decontam").exists()
    assert (run_dir / "report.html").exists()
