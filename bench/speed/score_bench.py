"""Scoring throughput: MindSpore inference alone, the HTTP service at 1/2/4 clients, the score stage in Spark.

    python -m bench.speed.score_bench [--docs 2048] [--batch 256] [--spark-docs 4000] [--model DIR]

Texts are real (../shared/data): half prose (novel chunks of 100–4000 characters), half short
informal text (SMS, review snippets), the same batches for every measurement, so the gap between
"inference alone" and "service" is the service's overhead (HTTP, Arrow, queueing), and the gap to
"Spark" is the pandas UDF round trip plus reading and writing Parquet.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack

from bench import SHARED_DATA
from scoring_service.client import LocalService, ScoringClient
from scoring_service.model.artifacts import DEFAULT_MODEL_DIR
from tools import quality_corpus

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def bench_texts(data: str, n: int):
    rng = random.Random(7)
    prose = [e.text for e in quality_corpus.gutenberg(data, rng)]
    short = [e.text for e in quality_corpus.sms(data, rng) + quality_corpus.pros_cons(data, rng)]
    texts = rng.sample(prose, n // 2) + rng.sample(short, n - n // 2)
    rng.shuffle(texts)
    return texts


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def report(name, docs, wall, latencies):
    print(f"{name:<34} {docs / wall:>9.0f} docs/s   p50 {1000 * percentile(latencies, 0.5):>7.1f} ms"
          f"   p99 {1000 * percentile(latencies, 0.99):>7.1f} ms   ({len(latencies)} batches)")


def inference_alone(texts, batch, model_dir):
    from scoring_service.model.scorer import TextScorer

    scorer = TextScorer.load(model_dir)
    batches = [texts[i:i + batch] for i in range(0, len(texts), batch)]
    scorer.score(batches[0])  # warm-up
    hashing, latencies = [], []
    cpu_started = time.process_time()
    started = time.perf_counter()
    for part in batches:
        t0 = time.perf_counter()
        scorer.hasher.encode(part)
        hashing.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        scorer.score(part)
        latencies.append(time.perf_counter() - t0)
    wall = time.perf_counter() - started - sum(hashing)
    # Every text was hashed twice (once alone, once inside score): one hashing's CPU is taken off.
    cpu = time.process_time() - cpu_started - sum(hashing)
    report("MindSpore inference alone", len(texts), wall, latencies)
    print(f"{'  CPU per document':<34} {1000 * cpu / len(texts):>9.3f} ms (hashing and the network, this process)")
    print(f"{'  of which feature hashing':<34} {len(texts) / sum(hashing):>9.0f} docs/s "
          f"({100 * sum(hashing) / sum(latencies):.0f} % of inference time)")


def service(url, texts, batch, clients):
    batches = [texts[i:i + batch] for i in range(0, len(texts), batch)]
    latencies, lock = [], threading.Lock()

    def run(worker):
        client = ScoringClient(url, batch_size=batch)
        client.score(batches[0][:1])  # connect and read the model description
        for part in batches[worker::clients]:
            t0 = time.perf_counter()
            client.score(part)
            with lock:
                latencies.append(time.perf_counter() - t0)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report(f"service, {clients} client(s)", len(texts), time.perf_counter() - started, latencies)


def spark_stage(url, texts, n_docs, batch):
    from jobs.config import PipelineConfig
    from corpusmill.config import build
    from jobs.stages.score import ScoreStage
    from jobs.spark import get_session
    from jobs.runner import run_stage
    from jobs.config import SparkConfig

    spark = get_session(SparkConfig(master="local[2]", app_name="score-bench", conf={
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "2000"}))
    rows = [(f"d{i}", f"https://example.org/{i}", texts[i % len(texts)]) for i in range(n_docs)]
    cfg = build(PipelineConfig, {"score": {"service_url": url, "batch_size": batch}})
    with tempfile.TemporaryDirectory() as tmp:
        spark.createDataFrame(rows, "id string, url string, text string").repartition(2).write.parquet(f"{tmp}/in")
        docs = spark.read.parquet(f"{tmp}/in")
        run_stage(ScoreStage(spark, cfg), docs.limit(200), f"{tmp}/warm-up", "warm", 200)  # JVM, workers
        stage = ScoreStage(spark, cfg)
        started = time.perf_counter()
        with ExitStack() as resources:
            stage.write(stage.transform(docs, resources), f"{tmp}/pass")
        one_pass = time.perf_counter() - started
        started = time.perf_counter()
        stats = run_stage(ScoreStage(spark, cfg), docs, f"{tmp}/score", "bench", n_docs)
        wall = time.perf_counter() - started
    print(f"{'score stage in Spark (local[2])':<34} {n_docs / wall:>9.0f} docs/s   "
          f"({n_docs} docs, {wall:.1f} s for the whole stage: scoring pass, counts, stats; kept {stats['kept']})")
    print(f"{'  its scoring pass alone':<34} {n_docs / one_pass:>9.0f} docs/s   "
          f"(read Parquet, pandas UDF → service, write Parquet by outcome)")
    spark.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(SHARED_DATA))
    parser.add_argument("--docs", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--spark-docs", type=int, default=4000, help="0: leave the Spark stage out")
    parser.add_argument("--model", default=DEFAULT_MODEL_DIR, help="model directory (default: the shipped model)")
    args = parser.parse_args()
    texts = bench_texts(args.data, args.docs)
    print(f"{len(texts)} texts, mean {statistics.mean(len(t) for t in texts):.0f} chars, batches of {args.batch}; "
          f"{os.cpu_count()} CPUs")
    inference_alone(texts, args.batch, args.model)
    with LocalService(args.model) as url:
        for clients in (1, 2, 4):
            service(url, texts, args.batch, clients)
        if args.spark_docs:
            spark_stage(url, texts, args.spark_docs, args.batch)


if __name__ == "__main__":
    main()
