"""Incremental dedup: run B against run A's signature index versus deduplicating A and B together.

    python -m bench.speed.dedup_incremental [--docs 40000] [--work /tmp/dedup-incremental] [--verify jaccard]

The documents are bench/speed/dedup_scale.py's (real text, 10 % near duplicates, 3 % exact copies, rows in
random order); the first half of the rows is crawl A, the second crawl B, so copies fall across the
halves at random. After a warm-up run, the script times: A alone; B with ``dedup.against: [A]`` after
A's kept/ and rejected/ are deleted (only A's index is read); and A+B deduplicated together, what
an incremental run saves. It prints each stage's wall time (``_stats.json``) and the CPU seconds of
this process tree, B's rejections by rule, and how B's rejected set compares with the B rows the
joint run rejects. They differ where connected components chain through a document A rejected
(not in its index) and, under ``verify: jaccard``, for pairs near the threshold: B's candidates
against A are verified on the signature estimate (A's text is not read); ``--verify signature``
makes both runs use the estimate and leaves only the chains.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import psutil

from bench.speed.dedup_scale import generate


def cpu_seconds() -> float:
    me = psutil.Process()
    return sum(sum(p.cpu_times()[:2]) for p in [me] + me.children(recursive=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=40000)
    parser.add_argument("--work", default="/tmp/dedup-incremental")
    parser.add_argument("--verify", default="jaccard", help="dedup.verify of all three runs")
    args = parser.parse_args()

    import pyarrow.parquet as pq

    from jobs import config
    from jobs.pipeline import run_pipeline
    from jobs.spark import get_session

    work = Path(args.work)
    shutil.rmtree(work / "out", ignore_errors=True)
    source = work / f"docs-{args.docs}"
    if not source.exists():
        generate(args.docs, source)
    table = pq.read_table(source)
    half = len(table) // 2
    for name, part in (("a", table.slice(0, half)), ("b", table.slice(half)), ("ab", table),
                       ("warmup", table.slice(0, 2000))):
        (work / name).mkdir(parents=True, exist_ok=True)
        pq.write_table(part, work / name / "part-0.parquet", row_group_size=5000)

    quiet = {"spark": {"conf": {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}}}
    cfg = config.load(overrides={**quiet, "dedup": {"verify": args.verify}})
    spark = get_session(cfg.spark)
    out = str(work / "out")

    def timed(label, run_cfg, name, run):
        cpu = cpu_seconds()
        stats = run_pipeline(spark, run_cfg, [str(work / name)], ["dedup"], out, run, echo=lambda _: None)[0]
        print(f"{label:<34} {stats['records_in']:>7} docs  wall {stats['wall_s']:7.1f} s  "
              f"CPU {cpu_seconds() - cpu:7.1f} s  kept {stats['kept']}  rejected {stats['rejected']}", flush=True)
        return stats

    timed("warm-up", cfg, "warmup", "W")
    timed("A alone", cfg, "a", "A")
    for gone in ("kept", "rejected"):
        shutil.rmtree(work / "out" / "A" / "dedup" / gone)
    index_mb = sum(f.stat().st_size for f in (work / "out" / "A" / "dedup" / "_index").rglob("*")) / 2 ** 20
    print(f"A's index: {index_mb:.1f} MiB on disk (its kept/ and rejected/ deleted)")
    cfg_b = config.load(overrides={**quiet, "dedup": {"verify": args.verify, "against": [str(work / "out" / "A")]}})
    stats_b = timed("B against A's index", cfg_b, "b", "B")
    stats_ab = timed("A+B together (recompute)", cfg, "ab", "AB")
    print(f"B / (A+B together) wall: {stats_b['wall_s'] / stats_ab['wall_s']:.2f}")

    def rejected(run):
        return spark.read.parquet(f"{out}/{run}/dedup/rejected").select("id")

    b_ids = spark.read.parquet(str(work / "b")).select("id")
    incremental = rejected("B")
    together = rejected("AB").join(b_ids, "id")
    both = incremental.join(together, "id").count()
    print(f"B's rows rejected: incremental {incremental.count()}, together {together.count()}, both {both}; "
          f"earlier-run rejections {stats_b.get('duplicates_of_earlier_runs')}")
    print(f"loadavg {psutil.getloadavg()[0]:.1f}; {time.strftime('%Y-%m-%d %H:%M:%S')}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
