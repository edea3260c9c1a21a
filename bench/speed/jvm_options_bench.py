"""One stage under several JVM options (``spark.driver.extraJavaOptions``), round robin, on a run
folder ``bench/speed/scale_bench.py`` left: which JIT settings pay for themselves in a local run.

    python -m bench.speed.jvm_options_bench --size 30000 --stages dedup pack --repeats 2 -- \\
        "-XX:CompileThresholdScaling=4" "-XX:TieredStopAtLevel=1"

Each (stage, options) pair runs ``repeats`` times as its own ``corpusmill run --stages <stage>``
process into the run folder ``jvm-options`` (the stage's input copied from the scale run ``r``),
under ``bench/profiling/thread_timeline.py``. Printed per run: the stage's wall time from its ``_stats.json``
and the timeline's last lines (the process tree's core-seconds, CPU and idle, and its CPU by thread:
``C1/C2 CompilerThread`` is the JIT).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import ROOT, WORK
from bench.speed.scale_bench import STAGES

RUN = "jvm-options"


def config_with(options: str, directory: Path) -> Path:
    path = directory / "jvm-options.yaml"
    path.write_text(f"include: [{ROOT / 'conf' / 'local.yaml'}]\nspark:\n  conf:\n"
                    f"    spark.driver.extraJavaOptions: {json.dumps(options)}\n")
    return path


def run_once(stage: str, options: str, out: Path, directory: Path) -> str:
    previous = STAGES[STAGES.index(stage) - 1]
    shutil.rmtree(out / RUN, ignore_errors=True)
    (out / RUN).mkdir(parents=True)
    shutil.copytree(out / "r" / previous, out / RUN / previous)
    command = [sys.executable, "-m", "bench.profiling.thread_timeline", "--", sys.executable, "-m", "jobs.cli", "run",
               "--config", str(config_with(options, directory)), "--output", str(out), "--run", RUN, "--stages", stage]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{stage} [{options}] failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    wall = json.loads((out / RUN / stage / "_stats.json").read_text())["wall_s"]
    timeline = " | ".join(done.stdout.strip().splitlines()[-2:])
    return f"{stage:>10} stage {wall:6.1f} s  [{options}]\n{'':>12}{timeline}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=30000, help="the scale run to read (bench/work/scale-<size>)")
    parser.add_argument("--stages", nargs="+", choices=STAGES[1:], required=True)
    parser.add_argument("options", nargs="+", help="one value of extraJavaOptions per setting (after --)")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    out = WORK / f"scale-{args.size}" / "out"
    for stage in args.stages:
        previous = STAGES[STAGES.index(stage) - 1]
        if not (out / "r" / previous / "_COMPLETE.json").exists():
            raise SystemExit(f"no finished {previous} in {out / 'r'}: run bench/speed/scale_bench.py --sizes {args.size} first")
    with tempfile.TemporaryDirectory() as directory:
        for stage in args.stages:
            for _ in range(args.repeats):
                for options in args.options:
                    print(run_once(stage, options, out, Path(directory)), flush=True)
    shutil.rmtree(out / RUN, ignore_errors=True)


if __name__ == "__main__":
    main()
