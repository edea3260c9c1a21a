"""Dedup at scale on this machine: the signature pass and the whole stage at 50k and 200k documents.

    python -m bench.speed.dedup_scale [--sizes 50000,200000] [--work /tmp/dedup-scale]

Documents are generated from real text: a random window of 80-250 words of the Gutenberg books and
ABC news transcripts (10 % People's Daily paragraphs), a quarter of its words replaced by random
corpus words so that documents are distinct; then 10 % of them get a near-duplicate (1-3 % of the
words edited) and 3 % an exact copy. Each size runs in a fresh process with the embedded default
config (conf/local.yaml + conf/dedup.yaml, local[*]); this process samples the memory of that
process tree every 0.2 s: the driver (Python), the JVM (driver and executor in local mode) and the
Python workers. Reported: wall time of the signature pass alone and of the whole stage (run_stage:
write, counts and stats included), documents/s, peak resident memory, the CPU seconds of the whole
process tree (wall time on a machine shared with other jobs says little; the load average is
printed too), and the growth from the smallest to the largest size.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil

from bench import ROOT
from tools.fixtures.dedup_corpus import CORPORA, english_words, peoples_daily_paragraphs


def generate(n: int, path: Path, seed: int = 42) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    words = np.array(english_words(), dtype=object)
    chinese = peoples_daily_paragraphs(CORPORA / "zh" / "peoples-daily-1998-01.txt")
    n_base = int(n / 1.13)
    texts = []
    for i in range(n_base):
        if i % 10 == 9:
            para = chinese[rng.integers(len(chinese))]
            cut = rng.integers(0, max(1, len(para) // 4))
            chars = list(para[cut:])
            for j in rng.integers(0, len(chars), size=max(1, len(chars) // 4)):
                chars[j] = chr(0x4E00 + int(rng.integers(0, 20000)))
            texts.append("".join(chars))
            continue
        size = int(rng.integers(80, 251))
        start = int(rng.integers(0, len(words) - size))
        window = words[start:start + size].copy()
        swap = rng.random(size) < 0.25
        window[swap] = words[rng.integers(0, len(words), size=int(swap.sum()))]
        texts.append(" ".join(window))
    near = rng.choice(n_base, size=int(0.10 * n_base), replace=False)
    for i in near:
        tokens = texts[i].split() if i % 10 != 9 else list(texts[i])
        for j in rng.integers(0, len(tokens), size=max(1, int(len(tokens) * rng.uniform(0.01, 0.03)))):
            tokens[j] = str(words[rng.integers(len(words))]) if i % 10 != 9 else "改"
        texts.append(" ".join(tokens) if i % 10 != 9 else "".join(tokens))
    for i in rng.choice(n_base, size=n - len(texts), replace=False):
        texts.append(texts[i])
    order = rng.permutation(len(texts))
    table = pa.table({"id": [f"doc-{k:07d}" for k in range(len(texts))],
                      "url": [f"https://example.org/{k}" for k in range(len(texts))],
                      "text": [texts[k] for k in order]})
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path / "part-0.parquet", row_group_size=20000)


def run_one(n: int, work: Path) -> None:
    """Child process: time the signature pass and the whole stage on docs-<n>."""
    from corpusmill.config import CONF_DIR
    from jobs import config
    from jobs.pipeline import run_pipeline
    from jobs.spark import get_session
    from jobs.stages.dedup import DedupStage
    from jobs.stages.dedup.signatures import signatures

    cfg = config.load(overrides={**config.read_yaml(CONF_DIR / "dedup.yaml"),
                                 "spark": {"conf": {"spark.ui.enabled": "false",
                                                    "spark.ui.showConsoleProgress": "false"}}})
    spark = get_session(cfg.spark)
    source = str(work / f"docs-{n}")
    shutil.rmtree(work / "out" / f"n{n}", ignore_errors=True)  # else the finished stage is skipped
    started = time.time()
    signatures(spark.read.parquet(source), DedupStage(spark, cfg).settings).write.format("noop").mode("overwrite").save()
    signatures_s = time.time() - started
    started = time.time()
    stats = run_pipeline(spark, cfg, [source], ["dedup"], str(work / "out"), f"n{n}", echo=lambda _: None)[0]
    stage_s = time.time() - started
    print(json.dumps({"n": n, "signatures_s": signatures_s, "stage_s": stage_s, "stats": stats}))
    spark.stop()


class PeakMemory:
    """Peak RSS of a process tree, split into driver / JVM / Python workers."""

    def __init__(self, pid: int):
        self.root = psutil.Process(pid)
        self.peak = {"driver_mb": 0.0, "jvm_mb": 0.0, "python_workers_mb": 0.0}
        self.cpu = {}  # pid -> latest user+sys seconds: the tree's CPU time (robust on a shared machine)
        self.running = True
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def sample(self):
        while self.running:
            try:
                now = {"driver_mb": self.root.memory_info().rss, "jvm_mb": 0, "python_workers_mb": 0}
                for proc in [self.root] + self.root.children(recursive=True):
                    times = proc.cpu_times()
                    self.cpu[proc.pid] = times.user + times.system
                    if proc is not self.root:
                        now["jvm_mb" if "java" in proc.name() else "python_workers_mb"] += proc.memory_info().rss
            except psutil.Error:
                pass
            else:
                for key, value in now.items():
                    self.peak[key] = max(self.peak[key], value / 2 ** 20)
            time.sleep(0.2)

    def stop(self) -> dict:
        self.running = False
        self.thread.join()
        return {**{k: round(v) for k, v in self.peak.items()}, "cpu_s": round(sum(self.cpu.values()))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="50000,200000")
    parser.add_argument("--work", default="/tmp/dedup-scale")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    work = Path(args.work)
    if args.one:
        run_one(args.one, work)
        return 0

    results = []
    for n in [int(s) for s in args.sizes.split(",")]:
        if not (work / f"docs-{n}").exists():
            started = time.time()
            generate(n, work / f"docs-{n}")
            print(f"generated {n} documents in {time.time() - started:.0f} s")
        child = subprocess.Popen([sys.executable, "-m", __spec__.name, "--one", str(n), "--work", str(work)],
                                 cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        memory = PeakMemory(child.pid)
        out, _ = child.communicate()
        peak = memory.stop()
        result = json.loads(out.strip().splitlines()[-1])
        result["peak"] = peak
        results.append(result)
        s = result["stats"]
        print(f"{n:>8} docs: signatures {result['signatures_s']:6.1f} s ({n / result['signatures_s']:6.0f} docs/s), "
              f"stage {result['stage_s']:6.1f} s ({n / result['stage_s']:6.0f} docs/s); "
              f"kept {s['kept']}, rejected {s['rejected']}, candidates {s.get('candidate_pairs')}, "
              f"verified {s.get('verified_pairs')}, rounds {s['cc_rounds']}, clusters {s['clusters']}; "
              f"peak RSS driver {peak['driver_mb']} MB, JVM {peak['jvm_mb']} MB, "
              f"Python workers {peak['python_workers_mb']} MB; CPU {peak['cpu_s']} s (whole run, all processes); "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)
    if len(results) > 1:
        first, last = results[0], results[-1]
        growth = last["n"] / first["n"]
        print(f"{growth:.1f}x documents: signatures {last['signatures_s'] / first['signatures_s']:.2f}x time, "
              f"stage {last['stage_s'] / first['stage_s']:.2f}x time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
