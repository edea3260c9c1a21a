"""The pipeline on a real multi-process Spark cluster gives the same outputs as local mode.

A standalone master and two workers (separate JVMs, one core each) run on 127.0.0.1 from the pip
pyspark installation; the pipeline goes to them with ``spark-submit``, its code shipped as docs/operations.md
says (``python -m jobs.package``, then ``--archives``), exactly as a user submits it. Identical
outputs are the proof that nothing depends on driver-local state.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from jobs import config, registry
from jobs.package import build_zip
from jobs.pipeline import run_pipeline

pytestmark = pytest.mark.service  # a standalone master, workers and spark-submit
SAMPLE = str(ROOT / "data" / "sample")
WORKERS = 2


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def start(command, log: Path, env) -> subprocess.Popen:
    # Own process group: spark-class execs the JVM, and the group is killed as a whole on teardown.
    with open(log, "wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def registered_workers(master_log: Path) -> int:
    """Workers the master accepted (a worker that retried its connection registers twice)."""
    text = master_log.read_text(errors="replace") if master_log.exists() else ""
    return len(set(re.findall(r"Master: Registering worker (\S+)", text)))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """``spark://127.0.0.1:<port>`` of a standalone master with two registered workers."""
    home = spark_home()
    logs = tmp_path_factory.mktemp("cluster")
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               SPARK_LOG_DIR=str(logs), SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")  # REST: fixed port 6066
    spark_class = str(home / "bin" / "spark-class")
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    processes = []
    try:
        # Web UI ports 0: any free port, so only the master's RPC port has to be picked here.
        processes.append(start([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                "--port", str(port), "--webui-port", "0"], logs / "master.log", env))
        for i in range(WORKERS):
            processes.append(start([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                    "--webui-port", "0", "--cores", "1", "--memory", "2g",
                                    "--work-dir", str(logs / f"work-{i}"), master_url],
                                   logs / f"worker-{i}.log", env))
        deadline = time.time() + 180
        while registered_workers(logs / "master.log") < WORKERS:
            dead = [p.args[1] for p in processes if p.poll() is not None]
            if dead or time.time() > deadline:
                tails = "\n".join(f"--- {f.name}\n{f.read_text()[-1500:]}" for f in sorted(logs.glob("*.log")))
                pytest.fail(f"standalone cluster did not come up (exited: {dead})\n{tails}")
            time.sleep(0.5)
        yield master_url, logs
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@pytest.fixture(scope="module")
def run_config(tmp_path_factory):
    """The config both runs use. On a cluster the score stage needs a service the executors can reach
    (it refuses to start one on the driver's loopback): started here as a user would run one."""
    path = tmp_path_factory.mktemp("conf") / "cluster.yaml"
    text = f"include: [{ROOT / 'conf' / 'local.yaml'}]\n"
    from scoring_service.client import LocalService
    from scoring_service.model.artifacts import DEFAULT_MODEL_DIR

    with LocalService(DEFAULT_MODEL_DIR) as url:
        path.write_text(text + f"score:\n  service_url: {url}\n")
        yield path


@pytest.fixture(scope="module")
def runs(spark, cluster, run_config, tmp_path_factory):
    """The same command on the cluster (spark-submit) and in local mode (this test session)."""
    master_url, logs = cluster
    out = tmp_path_factory.mktemp("out")
    stages = list(registry.stage_order())
    code_zip = build_zip(out / "corpusmill-jobs.zip")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1")
    submit = [str(Path(sys.executable).parent / "spark-submit"), "--master", master_url,
              "--conf", "spark.executor.memory=1g", "--conf", "spark.ui.enabled=false",
              "--conf", "spark.ui.showConsoleProgress=false",
              "--archives", f"{code_zip}#corpusmill-code", "--conf", "spark.executorEnv.PYTHONPATH=corpusmill-code",
              str(ROOT / "jobs" / "cli.py"), "run", "--config", str(run_config),
              "--input", SAMPLE, "--output", str(out), "--run", "cluster"]
    result = subprocess.run(submit, cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    run_pipeline(spark, config.load(run_config), [SAMPLE], stages, str(out), "local", echo=lambda _: None)
    return out / "cluster", out / "local", stages, result.stdout, logs


def comparable(stats: dict) -> dict:
    """Stats without the timings, which differ from run to run."""
    return {k: v for k, v in stats.items() if not (k.endswith("_s") or "time" in k)}


def test_the_cluster_ran_the_job_on_its_workers_with_the_shipped_code(runs):
    cluster_dir, _, stages, stdout, logs = runs
    for stage in stages:
        assert f"{stage}:" in stdout
        assert (cluster_dir / stage / "_COMPLETE.json").exists()
    # Each worker started executors for the application and unpacked the shipped code into them.
    for i in range(WORKERS):
        assert list((logs / f"work-{i}").glob("app-*/*/corpusmill-code/jobs/cli.py")), f"worker {i} ran no executor"


def test_stats_match_local_mode(runs):
    cluster_dir, local_dir, stages, _, _ = runs
    for stage in stages:
        cluster = json.loads((cluster_dir / stage / "_stats.json").read_text())
        local = json.loads((local_dir / stage / "_stats.json").read_text())
        assert cluster["reconciled"] is True
        assert comparable(cluster) == comparable(local), stage


def documents(spark, path: Path) -> list:
    """Sorted (id, text) of documents; every column of rows without text (pack's sequences)."""
    rows = spark.read.parquet(str(path))
    rows = rows.select("id", "text") if "text" in rows.columns else rows
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str) for r in rows.collect())


def test_documents_match_local_mode_at_every_stage(spark, runs):
    cluster_dir, local_dir, stages, _, _ = runs
    compared = 0
    for stage in stages:
        for outcome in ("kept", "rejected", "errors"):
            if not (local_dir / stage / outcome).exists():
                assert not (cluster_dir / stage / outcome).exists()
                continue
            rows = [documents(spark, d / stage / outcome) for d in (cluster_dir, local_dir)]
            assert rows[0] == rows[1], f"{stage}/{outcome}"
            compared += len(rows[0])
    assert compared > 0


def test_mindrecord_shards_match_local_mode(runs):
    cluster_dir, local_dir, _, _, _ = runs
    shards = [sorted(p.name for p in (d / "mindrecord").glob("shard-*.mindrecord")) for d in (cluster_dir, local_dir)]
    assert shards[0] and shards[0] == shards[1]
