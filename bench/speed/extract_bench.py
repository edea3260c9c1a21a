"""Extract-stage throughput: our default extractor against trafilatura on the same WARC files.

    python -m bench.speed.extract_bench [--responses 20000] [--trafilatura-responses 3000] [--files 4]
                                  [--skip-spark] [--skip-bare]

Inputs come from ``bench/speed/make_bench_warc.py``: N real HTML responses, each with its own URL, split
into ``--files`` WARC files so Spark runs one task per file on every core. trafilatura is much
slower, so it reads the first M responses (``--trafilatura-responses``, the same pages with the same
URLs as the first M of the large set); the default extractor runs on both sets, so the M-response
rows compare the two on identical input.

Each measurement runs as its own process (a fresh JVM for Spark runs); for each, the wall time, the
peak RSS and the CPU seconds of its whole process tree (driver, JVM, Python workers), sampled every
0.2 s. Documents per CPU-second is the figure a busy shared machine skews least.
- **spark**: the real stage, ``jobs.pipeline.run_pipeline(stages=["extract"])`` with the default
  config (``conf/local.yaml``, ``local[*]``) and ``extract.extractor`` overridden; docs/s is kept
  documents over the stage's own wall time (``_stats.json``: read, extract, write Parquet, count);
  the process and CPU columns include JVM start-up.
- **bare**: ``udfs.extract.warc.WarcDocumentReader`` over the same files in one Python process, no Spark
  (one core), for reference.
Extractors: ``resiliparse`` (the default: resiliparse main content + boilerplate filter +
normalisation), ``resiliparse-nofilter`` (the same without ``udfs/extract/boilerplate.py``) and
``trafilatura`` (``include_comments=False``).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections import Counter

from bench import ROOT, WORK
from bench.profiling.process_tree import measure_tree

RUNS = WORK / "extract-runs"

EXTRACTORS = {  # name -> extract config overrides
    "resiliparse": {"extractor": "resiliparse", "boilerplate_filter": True},
    "resiliparse-nofilter": {"extractor": "resiliparse", "boilerplate_filter": False},
    "trafilatura": {"extractor": "trafilatura", "boilerplate_filter": False},
}


# ---------------------------------------------------------------- one measurement (child process)

def spark_child(extractor: str, inputs, run: str) -> dict:
    from jobs import config
    from jobs.pipeline import run_pipeline
    from jobs.spark import get_session

    cfg = config.load(None, overrides={"extract": EXTRACTORS[extractor]})
    shutil.rmtree(RUNS / run, ignore_errors=True)  # a finished earlier run would be skipped, not timed
    spark = get_session(cfg.spark)
    stats = run_pipeline(spark, cfg, inputs, ["extract"], output=str(RUNS), run=run, echo=lambda line: None)[0]
    spark.stop()
    return {"responses": _html_responses(stats), "kept": stats["kept"], "errors": sum(stats["errors"].values()),
            "stage_s": stats["wall_s"]}


def _html_responses(stats: dict) -> int:
    """Responses read (every record of a benchmark WARC is an HTML response; none is skipped)."""
    return stats["records_in"] - sum(stats["skipped"].values())


def bare_child(extractor: str, inputs) -> dict:
    from udfs.extract.warc import ExtractConfig, WarcDocumentReader

    reader = WarcDocumentReader(ExtractConfig(**EXTRACTORS[extractor]))
    outcomes = Counter()
    wall = time.perf_counter()
    for path in inputs:
        for row in reader.read(path, lambda: open(path, "rb")):
            outcomes[row["_outcome"]] += row["_count"]
    return {"responses": sum(outcomes.values()) - outcomes["skipped"], "kept": outcomes["kept"],
            "errors": outcomes["error"], "stage_s": round(time.perf_counter() - wall, 2)}


# ---------------------------------------------------------------- orchestration

def measure_child(mode: str, extractor: str, inputs, run: str) -> dict:
    command = [sys.executable, "-m", __spec__.name, "--child", mode, "--extractor", extractor, "--run", run,
               "--inputs", *map(str, inputs)]
    result = measure_tree(command, cwd=ROOT)
    if result["returncode"] != 0:
        sys.exit(f"extract_bench: {mode} {extractor} failed:\n{result['output'][-3000:]}")
    row = json.loads(result.pop("output").strip().splitlines()[-1])
    row.update(result, mode=mode, extractor=extractor)
    return row


COLUMNS = [("mode", "<6", "{}"), ("extractor", "<22", "{}"), ("html", ">7", "{}"), ("docs", ">7", "{}"), ("errors", ">7", "{}"),
           ("stage s", ">9", "{:.1f}"), ("docs/s", ">8", "{:.1f}"), ("process s", ">10", "{:.1f}"),
           ("tree cpu s", ">11", "{:.1f}"), ("docs/cpu-s", ">11", "{:.1f}"), ("peak MB", ">8", "{}")]


def print_row(row: dict) -> None:
    values = [row["mode"], row["extractor"], row["responses"], row["kept"], row["errors"], row["stage_s"],
              row["kept"] / row["stage_s"],
              row["wall_s"], row["tree_cpu_s"], row["kept"] / row["tree_cpu_s"], row["peak_rss_mb"]]
    print("".join(f"{fmt.format(v):{align}}" for (_, align, fmt), v in zip(COLUMNS, values)), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=20000)
    parser.add_argument("--trafilatura-responses", type=int, default=3000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument("--skip-bare", action="store_true")
    parser.add_argument("--child", choices=["spark", "bare"], help=argparse.SUPPRESS)
    parser.add_argument("--extractor", choices=list(EXTRACTORS), help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        row = spark_child(args.extractor, args.inputs, args.run) if args.child == "spark" else bare_child(args.extractor, args.inputs)
        print(json.dumps(row))
        return

    from bench.speed.make_bench_warc import build

    large = build(args.responses, args.files)
    small = build(args.trafilatura_responses, args.files)
    print(f"extract stage, {args.files} WARC files each: {large[0].parent} and {small[0].parent}")
    print("".join(f"{name:{align}}" for name, align, _ in COLUMNS))
    plan = [("resiliparse", small), ("resiliparse-nofilter", small), ("trafilatura", small), ("resiliparse", large)]
    for mode in [m for m, skip in (("spark", args.skip_spark), ("bare", args.skip_bare)) if not skip]:
        for extractor, inputs in plan:
            print_row(measure_child(mode, extractor, inputs, f"{extractor}-{len(inputs)}x-{inputs[0].parent.name}"))


if __name__ == "__main__":
    main()
