"""How a run's wall time splits into a part fixed per run and a part per page: whole runs at two or
more input sizes, alternating, each phase timed from Spark's own event log.

    python -m bench.profiling.run_phases --inputs bench/work/half-10000.parts bench/work/extract-bench-20000.parts \\
        --repeats 2 [--config conf/local.yaml] [--stages extract,filter]

Each run is ``python -m jobs.cli run`` as a user starts it, with the event log switched on in a
config that includes ``--config``. The phases (wall seconds): ``start`` (the process's start to the
first stage's pass), each stage's ``pass`` (its longest Spark job: the one that runs the Python
workers over the data), ``gap`` before each later stage's pass (the earlier stage's counts, stats
and commit, the next one's planning), ``after`` (the last pass's end to the exit of the whole
process tree, JVM included: the last stage's write, counts, stats, the report). With two sizes or
more, a least-squares line through the medians gives each phase's fixed part and its part per 1,000
input records: what a larger input spreads out and what it does not.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

from bench import ROOT



def phases_of(event_logs: Path, started: float, ended: float, stages: List[str]) -> Dict[str, float]:
    """Phase name -> wall seconds, from the event log of the one application in ``event_logs``
    (timestamps in ms; Spark writes it as a folder of rolled files)."""
    jobs: Dict[int, list] = {}
    lines = [line for part in sorted(event_logs.rglob("events_*"))
             for line in part.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        event = json.loads(line)
        if event["Event"] == "SparkListenerJobStart":
            group = (event.get("Properties") or {}).get("spark.jobGroup.id")
            jobs[event["Job ID"]] = [group, event["Submission Time"] / 1000, None]
        elif event["Event"] == "SparkListenerJobEnd":
            jobs[event["Job ID"]][2] = event["Completion Time"] / 1000
    passes = {}
    for stage in stages:
        own = [(end - start, start, end) for group, start, end in jobs.values() if group == stage and end]
        if not own:
            raise SystemExit(f"run_phases: no Spark job of stage {stage!r} in {event_logs}")
        passes[stage] = max(own)[1:]
    phases = {"start": passes[stages[0]][0] - started}
    for previous, stage in zip([None] + stages, stages):
        if previous is not None:
            phases[f"gap {stage}"] = passes[stage][0] - passes[previous][1]
        phases[f"pass {stage}"] = passes[stage][1] - passes[stage][0]
    phases["after"] = ended - passes[stages[-1]][1]
    phases["wall"] = ended - started
    return phases


def run_once(config: Path, inputs: Path, stages: List[str], work: Path) -> Dict[str, float]:
    """One run in its own output and event-log folders; its phases and its input record count."""
    logs, out = Path(tempfile.mkdtemp(dir=work)), Path(tempfile.mkdtemp(dir=work))
    run_config = work / f"{logs.name}.yaml"  # written as JSON, which YAML reads as it is
    run_config.write_text(json.dumps({"include": [str(config.resolve())], "spark": {"conf": {
        "spark.eventLog.enabled": "true", "spark.eventLog.dir": logs.as_uri(), "spark.eventLog.compress": "false"}}}))
    files = sorted(str(p) for p in inputs.iterdir() if p.name.endswith((".warc", ".warc.gz", ".arc", ".arc.gz")))
    command = [sys.executable, "-m", "jobs.cli", "run", "--config", str(run_config), "--input", *files,
               "--output", str(out), "--run", "phases", "--stages", ",".join(stages)]
    started = time.time()
    # Output through a pipe read to its end: the JVM holds it until it has exited, as for a caller
    # that waits for the command (a scheduler, a shell pipeline).
    result = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ended = time.time()
    if result.returncode:
        raise SystemExit(f"run_phases: the run failed:\n{result.stdout[-3000:]}")
    phases = phases_of(logs, started, ended, stages)
    phases["records"] = json.loads((out / "phases" / stages[0] / "_stats.json").read_text())["records_in"]
    return phases


def fit(points: List[tuple]) -> tuple:
    """Least-squares (intercept, slope) of y on x."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x in xs)
    return mean_y - slope * mean_x, slope


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", nargs="+", type=Path, required=True, help="folders of WARC/ARC files")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--config", type=Path, default=ROOT / "conf" / "local.yaml")
    parser.add_argument("--stages", default="extract,filter")
    args = parser.parse_args()
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    runs: Dict[Path, List[dict]] = {path: [] for path in args.inputs}
    with tempfile.TemporaryDirectory(prefix="run-phases-") as work:
        for repeat in range(args.repeats):
            # Alternating order: the shared box's drifting speed falls on every size alike.
            for path in (args.inputs if repeat % 2 == 0 else args.inputs[::-1]):
                phases = run_once(args.config, path, stages, Path(work))
                runs[path].append(phases)
                print(f"{path.name} #{repeat + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in phases.items()
                                                              if k != "records"), flush=True)
    names = [k for k in runs[args.inputs[0]][0] if k != "records"]
    medians = {path: {k: statistics.median(r[k] for r in rs) for k in names} for path, rs in runs.items()}
    records = {path: rs[0]["records"] for path, rs in runs.items()}
    print(f"\nmedian wall seconds per phase ({args.repeats} runs each)")
    print(f"{'phase':<16}" + "".join(f"{records[p]:>12,}" for p in args.inputs)
          + ("   fixed s  s per 1k records" if len(set(records.values())) > 1 else ""))
    for name in names:
        line = f"{name:<16}" + "".join(f"{medians[p][name]:>12.2f}" for p in args.inputs)
        if len(set(records.values())) > 1:
            fixed, slope = fit([(records[p], medians[p][name]) for p in args.inputs])
            line += f"{fixed:>10.2f}{slope * 1000:>18.3f}"
        print(line)


if __name__ == "__main__":
    main()
