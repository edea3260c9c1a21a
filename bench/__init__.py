"""Benchmarks, never shipped: each script runs as a module from the repository root.

    python -m bench.speed.<name> ...       # throughput, CPU and memory of a stage or the whole run
    python -m bench.quality.<name> ...     # how good a stage's output is, against references
    python -m bench.hostile.<name> ...     # memory and outcome under hostile input
    python -m bench.profiling.<name> ...   # where a run's time goes; a run's outputs as a digest

The current figures, each with its command: ``bench/RESULTS.md``. Inputs the tests build too (real-text
corpora with planted duplicates, hostile WARC files, hostile service clients) live in ``tools.fixtures``.
"""
from tools.fixtures.shared_data import ROOT, SHARED_DATA

WORK = ROOT / "bench" / "work"  # git-ignored: the inputs benchmarks build, their run folders and results

__all__ = ["ROOT", "SHARED_DATA", "WORK"]
