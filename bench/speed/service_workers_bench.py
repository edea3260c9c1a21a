"""The scoring service on encoded batches with 1, 2 and 4 model workers against the raw model, and
the Spark score stage against the filter stage on the same distinct documents.

    python -m bench.speed.service_workers_bench [--docs 6000] [--batch 256] [--workers 1 2 4] [--skip-spark]

Documents are distinct windows (300–3,000 characters, whole lines) of the shared corpora: English
novels and Wikipedia, Chinese news and reviews, short English chat and SMS lines joined in runs.

* raw model: ``TextScorer.score_bags`` on batches encoded beforehand, in this process: what the
  network alone does with the CPU (or device) it has; measured again before each service run.
* service: the same encoded batches, as prepared Arrow bodies, POSTed to ``/v1/score/encoded`` by
  ``2 × workers`` keep-alive connections (threads here, so hashing is not in the figure: on a
  cluster the executors hash).
* CPU ms per document: of the process tree doing the work (this process for the raw model, the
  service and its replicas, the driver with its JVM, Python workers and the service it starts for
  Spark): on a shared, loaded machine it says more than docs/s, which follows the share of the
  cores the work gets.
* Spark: ``FilterStage`` and ``ScoreStage`` run by ``run_stage`` (local[2]) on one Parquet file of
  the documents; score through one service (1 worker) started here, hashing on the executors and
  with texts sent instead (``score.encode: false``: the service hashes them), and with ``score.mode: local``.
  The service's own share of the CPU is reported apart: it is what an inference host must carry.
"""
from __future__ import annotations

import argparse
import http.client
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from urllib.parse import urlsplit

from bench import SHARED_DATA
from scoring_service.model.artifacts import DEFAULT_MODEL_DIR, read_info
from scoring_service.client import ARROW_STREAM, LocalService, encoded_body
from scoring_service.model.features import FeatureHasher

CORPORA = SHARED_DATA / "corpora"
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def distinct_documents(n: int, seed: int = 5) -> list:
    """``n`` distinct windows of whole lines of real text."""
    sources = sorted((CORPORA / "en" / "gutenberg").glob("*.txt")) + [
        CORPORA / "zh" / "peoples-daily-1998-01.txt", CORPORA / "zh" / "reviews-pos.txt",
        CORPORA / "zh" / "reviews-neg.txt", CORPORA / "low" / "sms-spam-collection.tsv",
        CORPORA / "en" / "enwiki-head-articles.xml"]
    rng = random.Random(seed)
    windows = []
    for path in sources:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        start = 0
        while start < len(lines):
            size, stop = rng.randint(300, 3000), start
            while stop < len(lines) and sum(len(line) for line in lines[start:stop]) < size:
                stop += 1
            text = "".join(lines[start:stop]).strip()
            if len(text) >= 150:
                windows.append(text)
            start = stop + 1
    windows = sorted(set(windows))
    rng.shuffle(windows)
    if len(windows) < n:
        raise SystemExit(f"only {len(windows)} distinct windows in {CORPORA}; ask for fewer --docs")
    return windows[:n]


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process and all its descendants, the live ones and those already reaped
    (utime + stime + cutime + cstime of each live process: no process is counted twice)."""
    tick, total, todo = os.sysconf("SC_CLK_TCK"), 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            fields = open(f"/proc/{current}/stat").read().rsplit(")", 1)[1].split()
            total += sum(int(v) for v in fields[11:15]) / tick
            for task in os.listdir(f"/proc/{current}/task"):
                todo += [int(c) for c in open(f"/proc/{current}/task/{task}/children").read().split()]
        except FileNotFoundError:  # exited meanwhile
            pass
    return total


def raw_model(scorer, batches):
    """docs/s and CPU ms per document of the model in this process."""
    rows = sum(b.rows for b in batches)
    started, cpu = time.perf_counter(), time.process_time()
    for bags in batches:
        scorer.score_bags(bags)
    return rows / (time.perf_counter() - started), 1000 * (time.process_time() - cpu) / rows


def service(url: str, pid: int, bodies, connections: int):
    """docs/s and CPU ms per document of the service's processes."""
    host, port = urlsplit(url).hostname, urlsplit(url).port
    rows = sum(n for n, _ in bodies)
    errors = []

    def run(worker):
        conn = http.client.HTTPConnection(host, port, timeout=120)
        for n, body in bodies[worker::connections]:
            conn.request("POST", "/v1/score/encoded", body, {"Content-Type": ARROW_STREAM})
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                errors.append(response.status)
        conn.close()

    for _, body in bodies[:connections]:  # warm-up: one request per connection
        warm = http.client.HTTPConnection(host, port, timeout=120)
        warm.request("POST", "/v1/score/encoded", body, {"Content-Type": ARROW_STREAM})
        warm.getresponse().read()
        warm.close()
    threads = [threading.Thread(target=run, args=(w,)) for w in range(connections)]
    cpu = tree_cpu_s(pid)
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    cpu = tree_cpu_s(pid) - cpu
    if errors:
        raise SystemExit(f"service answered {len(errors)} requests with {sorted(set(errors))}")
    return rows / wall, 1000 * cpu / rows


def spark_stages(texts, workdir: str) -> None:
    from jobs.config import PipelineConfig, SparkConfig
    from jobs.stages.filter import FilterStage
    from jobs.stages.score import ScoreStage
    from jobs.spark import get_session
    from jobs.runner import run_stage
    from corpusmill.config import build

    spark = get_session(SparkConfig(master="local[2]", app_name="score-vs-filter", conf={
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}))
    rows = [(f"d{i:06d}", f"https://example.org/{i}", t) for i, t in enumerate(texts)]
    source = f"{workdir}/docs"
    spark.createDataFrame(rows, "id string, url string, text string").repartition(8).write.parquet(source)
    docs = spark.read.parquet(source)
    n = len(texts)
    service_process = LocalService(DEFAULT_MODEL_DIR)
    url = service_process.start()
    score = {"service_url": url}
    runs = [("filter", FilterStage, {}),
            ("score (hashing on executors)", ScoreStage, {"score": score}),
            ("score (texts sent: encode false)", ScoreStage, {"score": {**score, "encode": False}}),
            ("score (mode: local)", ScoreStage, {"score": {"mode": "local"}})]
    warm = docs.limit(200)
    for name, stage_class, settings in runs:
        cfg = build(PipelineConfig, settings)
        run_stage(stage_class(spark, cfg), warm, f"{workdir}/warm-{len(name)}", "warm", None)  # workers, models
        started = time.perf_counter()
        cpu, service_cpu = tree_cpu_s(os.getpid()), tree_cpu_s(service_process.process.pid)
        stats = run_stage(stage_class(spark, cfg), docs, f"{workdir}/{stage_class.name}-{len(name)}", "bench", n)
        wall = time.perf_counter() - started
        cpu, service_cpu = tree_cpu_s(os.getpid()) - cpu, tree_cpu_s(service_process.process.pid) - service_cpu
        assert stats["reconciled"], stats
        print(f"{name:<34} {n / wall:>5.0f} docs/s  CPU ms/doc {1000 * cpu / n:>4.1f}, of which the service "
              f"{1000 * service_cpu / n:>4.1f}   ({n} docs, {wall:.1f} s, whole stage; load average "
              f"{os.getloadavg()[0]:.1f})", flush=True)
    service_process.stop()
    spark.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=6000)
    parser.add_argument("--batch", type=int, default=256, help="texts per request and per raw-model batch")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument("--skip-service", action="store_true")
    args = parser.parse_args()
    texts = distinct_documents(args.docs)
    print(f"{len(texts)} distinct documents, mean {statistics.mean(map(len, texts)):.0f} chars; "
          f"batches of {args.batch}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}", flush=True)
    if not args.skip_service:
        spec = read_info(DEFAULT_MODEL_DIR).hashing
        hasher = FeatureHasher(spec)
        started = time.perf_counter()
        batches = [hasher.encode_bags(texts[i:i + args.batch]) for i in range(0, len(texts), args.batch)]
        print(f"{'hashing (what the executors now do)':<48} {len(texts) / (time.perf_counter() - started):>7.0f} "
              "docs/s", flush=True)
        bodies = [(b.rows, encoded_body(b, spec.digest)) for b in batches]
        from scoring_service.model.scorer import TextScorer

        scorer = TextScorer.load(DEFAULT_MODEL_DIR)
        scorer.score_bags(batches[0])  # warm-up
        for workers in args.workers:
            # The raw model right before each service run: the machine's load drifts between them.
            raw, raw_cpu = raw_model(scorer, batches)
            print(f"{'raw model (score_bags, in process)':<48} {raw:>7.0f} docs/s   {raw_cpu:>5.1f} CPU ms/doc",
                  flush=True)
            local = LocalService(DEFAULT_MODEL_DIR, extra_args=["--workers", str(workers)])
            with local as url:
                rate, cpu = service(url, local.process.pid, bodies, 2 * workers)
            print(f"{f'service, {workers} worker(s), {2 * workers} connections':<48} {rate:>7.0f} docs/s   "
                  f"{cpu:>5.1f} CPU ms/doc   ({100 * rate / raw:.0f} % of the raw model's docs/s; load average "
                  f"{os.getloadavg()[0]:.1f})", flush=True)
    if not args.skip_spark:
        with tempfile.TemporaryDirectory() as workdir:
            spark_stages(texts, workdir)


if __name__ == "__main__":
    main()
