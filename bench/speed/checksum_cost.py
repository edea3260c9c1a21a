"""What the content checksums of a run folder cost: each finished stage of a local run verified as a
later stage verifies it (``corpusmill.run_folder.marker_problem``: every size, then every file
hashed), which is the same reading of every file the commit does to write the checksums.

    python -m bench.speed.checksum_cost bench/work/scale-30000/out/r [--repeats 3]

Prints, per stage, its files and bytes, the best wall and CPU time of the verification over
``--repeats`` (the files in the page cache, as just after a stage wrote them), and the stage's own
wall time from its ``_stats.json`` for scale.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from corpusmill.run_folder import MARKER, STATS, checksum_of_stream, marker_problem


def verify(stage_dir: Path) -> tuple:
    marker = json.loads((stage_dir / MARKER).read_text())
    present = {str(p.relative_to(stage_dir)): p.stat().st_size for p in stage_dir.rglob("*")
               if p.is_file() and not p.name.startswith(".")}

    def checksum_of(name: str) -> str:
        with open(stage_dir / name, "rb") as f:
            return checksum_of_stream(f)

    wall, cpu = time.perf_counter(), time.process_time()
    problem = marker_problem(marker, present, checksum_of)
    return time.perf_counter() - wall, time.process_time() - cpu, problem, marker["files"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for stage_dir in sorted(p for p in args.run_dir.iterdir() if (p / MARKER).exists()):
        runs = [verify(stage_dir) for _ in range(args.repeats)]
        wall, cpu, problem, files = min(runs, key=lambda run: run[0])
        stage_wall = json.loads((stage_dir / STATS).read_text()).get("wall_s")
        size = sum(files.values())
        print(f"{stage_dir.name:>10}: {len(files)} files, {size / 2**20:.1f} MiB, verified in {wall:.3f} s "
              f"({cpu:.3f} s CPU, {size / 2**20 / max(wall, 1e-9):,.0f} MiB/s); stage wall {stage_wall} s"
              + (f"; NOT FINISHED: {problem}" if problem else ""), flush=True)
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
