"""Decontamination at scale: N documents against M MB of evaluation text, through the decontam stage.

    python -m bench.speed.decontam_bench [--documents 100000] [--eval-mb 50] [--plant 0.01]

The evaluation sets (``bench/work/decontam/benchmarks/``, git-ignored) are real text where the shared
data has it, as a user would give them: Gutenberg books and speeches (text lines), Wikipedia
paragraphs (JSONL passages), People's Daily and Chinese reviews (text lines), the UDHR in ~300
languages; a synthetic multiple-choice set (``synthetic_qa/``, JSONL question, choices, answer; words
drawn by their frequency in the books) fills the rest up to ``--eval-mb``. Its n-grams are nearly all
distinct: the largest index that many MB can make.

The documents are made from another source than the evaluation sets: sentences of the 1,100 real web
pages under ``../shared/data/html`` (resiliparse main text), 12-40 per document, seeded by the
document number, written as Parquet in 8 files. A fraction ``--plant`` of them get one evaluation
item (question with its choices and answer, a passage, a line) pasted at a random sentence: the
stage must find every one (recall), and documents found without a plant are listed (overlaps
between web pages and books/Wikipedia are real; each is shown for a person to judge).

The stage runs as ``corpusmill run --stages decontam`` in its own process tree (bench/profiling/process_tree.py):
docs/s from the stage's wall time in ``_stats.json`` (JVM start-up excluded, index build included),
CPU seconds of the whole tree, peak RSS per role. The index is also built once in this process to
report its size and build time apart. Results: ``bench/work/decontam-results-<time>.json``.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import time
import zipfile
from collections import Counter
from pathlib import Path
from typing import Dict, List

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench import ROOT, SHARED_DATA, WORK
from bench.profiling.process_tree import measure_tree

DECONTAM_WORK = WORK / "decontam"

SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")


# ---------------------------------------------------------------- evaluation sets

def real_benchmarks(folder: Path) -> Dict[str, int]:
    """The real-text benchmarks; returns name -> bytes written."""
    written = {}

    def lines_file(name: str, lines: List[str]) -> None:
        path = folder / f"{name}.txt"
        path.write_text("\n".join(line.strip() for line in lines if len(line.strip()) > 20) + "\n", encoding="utf-8")
        written[name] = path.stat().st_size

    books = []
    for path in sorted((SHARED_DATA / "corpora" / "en" / "gutenberg").glob("*.txt")):
        books += [p.replace("\n", " ") for p in path.read_text(encoding="utf-8", errors="replace").split("\n\n")]
    for name in ("inaugural.zip", "state_union.zip"):
        with zipfile.ZipFile(SHARED_DATA / "corpora" / "en" / name) as archive:
            for member in archive.namelist():
                if member.endswith(".txt"):
                    books += archive.read(member).decode("utf-8", "replace").split("\n\n")
    lines_file("books", books)
    xml = (SHARED_DATA / "corpora" / "en" / "enwiki-head-articles.xml").read_text(encoding="utf-8")
    with open(folder / "wiki.jsonl", "w", encoding="utf-8") as out:
        for article in re.findall(r"<text[^>]*>(.*?)</text>", xml, re.S):
            for paragraph in article.split("\n\n"):
                if len(paragraph) > 200:
                    out.write(json.dumps({"passage": paragraph}, ensure_ascii=False) + "\n")
    written["wiki"] = (folder / "wiki.jsonl").stat().st_size
    zh = SHARED_DATA / "corpora" / "zh"
    lines_file("news_zh", (zh / "peoples-daily-1998-01.txt").read_text(encoding="utf-8").splitlines())
    lines_file("reviews_zh", [line for f in ("reviews-pos.txt", "reviews-neg.txt")
                              for line in (zh / f).read_text(encoding="utf-8").splitlines()])
    udhr = []
    for path in sorted((SHARED_DATA / "corpora" / "multilingual" / "udhr").glob("*UTF8")):
        udhr += path.read_text(encoding="utf-8", errors="replace").splitlines()
    lines_file("udhr", udhr)
    return written


def synthetic_qa(folder: Path, target_bytes: int, seed: int = 0) -> int:
    """Multiple-choice items of words drawn by their book frequency, in split files, up to ``target_bytes``."""
    words = Counter()
    for path in sorted((SHARED_DATA / "corpora" / "en" / "gutenberg").glob("*.txt")):
        words.update(re.findall(r"[a-z]+", path.read_text(encoding="utf-8", errors="replace").lower()))
    vocab = np.array(list(words))
    p = np.array(list(words.values()), dtype=np.float64)
    p /= p.sum()
    rng = np.random.default_rng(seed)
    (folder / "synthetic_qa").mkdir(exist_ok=True)
    written, split = 0, 0
    while written < target_bytes:
        lines = []
        for _ in range(20000):
            question = " ".join(rng.choice(vocab, size=int(rng.integers(15, 40)), p=p)).capitalize() + "?"
            choices = [" ".join(rng.choice(vocab, size=int(rng.integers(1, 5)), p=p)) for _ in range(4)]
            lines.append(json.dumps({"question": question, "choices": choices, "answer": choices[int(rng.integers(4))]}))
        path = folder / "synthetic_qa" / f"split-{split:03d}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        written += path.stat().st_size
        split += 1
    return written


def build_benchmarks(eval_mb: float) -> Dict[str, int]:
    folder = DECONTAM_WORK / f"benchmarks-{eval_mb:g}mb"
    sizes_file = DECONTAM_WORK / f"benchmarks-{eval_mb:g}mb.sizes.json"
    if sizes_file.exists():
        return json.loads(sizes_file.read_text())
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    sizes = real_benchmarks(folder)
    sizes["synthetic_qa"] = synthetic_qa(folder, int(eval_mb * 1e6) - sum(sizes.values()))
    sizes_file.write_text(json.dumps(sizes))
    return sizes


def planted_items(folder: Path, count: int, rng: random.Random) -> List[tuple]:
    """``count`` (benchmark, item text) pairs drawn from every benchmark in turn."""
    pools = {}
    for path in sorted(folder.iterdir()):
        files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
        lines = files[0].read_text(encoding="utf-8").splitlines()[:5000]
        if path.suffix == ".jsonl" or path.is_dir():
            lines = [" ".join(v if isinstance(v, str) else " ".join(v) for v in json.loads(l).values()) for l in lines]
        pools[path.name.rsplit(".", 1)[0] if path.is_file() else path.name] = [l for l in lines if len(l) > 60]
    names = sorted(pools)
    return [(names[i % len(names)], rng.choice(pools[names[i % len(names)]])) for i in range(count)]


# ---------------------------------------------------------------- documents

def web_sentences() -> List[str]:
    from resiliparse.extract.html2text import extract_plain_text

    sentences = []
    pages = sorted((SHARED_DATA / "html" / "trafilatura-eval").rglob("*.html")) + \
        sorted((SHARED_DATA / "html" / "readability-tests").rglob("source.html"))
    for path in pages:
        text = extract_plain_text(path.read_bytes().decode("utf-8", "replace"), main_content=True)
        sentences += [s.strip() for s in SENTENCE_END.split(text) if len(s.strip()) > 30]
    return sentences


def build_documents(n_docs: int, plant: float, benchmarks: Path) -> tuple:
    folder = DECONTAM_WORK / f"docs-{n_docs}-{plant:g}"
    planted_file = folder / "_planted.json"
    if planted_file.exists():
        return folder, json.loads(planted_file.read_text())
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    sentences = web_sentences()
    rng = random.Random(0)
    n_planted = int(n_docs * plant)
    plants = planted_items(benchmarks, n_planted, rng)
    planted_ids = {}
    docs = []
    for number in range(n_docs):
        page = random.Random(number)
        body = page.choices(sentences, k=page.randint(12, 40))
        doc_id = f"doc-{number:07d}"
        if number % max(int(1 / plant), 1) == 0 and len(planted_ids) < n_planted:
            name, item = plants[len(planted_ids)]
            body.insert(page.randint(0, len(body)), item)
            planted_ids[doc_id] = name
        docs.append((doc_id, f"https://bench.example/{number}", " ".join(body)))
    files = 8
    for i in range(files):
        part = docs[i * n_docs // files:(i + 1) * n_docs // files]
        pq.write_table(pa.table({"id": [d[0] for d in part], "url": [d[1] for d in part], "text": [d[2] for d in part]}),
                       folder / f"part-{i:02d}.parquet")
    planted_file.write_text(json.dumps(planted_ids))
    return folder, planted_ids


# ---------------------------------------------------------------- the run

def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--eval-mb", type=float, default=50)
    parser.add_argument("--plant", type=float, default=0.01)
    args = parser.parse_args(argv)

    sizes = build_benchmarks(args.eval_mb)
    benchmarks = DECONTAM_WORK / f"benchmarks-{args.eval_mb:g}mb"
    docs, planted = build_documents(args.documents, args.plant, benchmarks)
    text_bytes = sum(pq.read_table(p, columns=["text"]).column("text").to_pandas().str.len().sum()
                     for p in sorted(docs.glob("*.parquet")))

    from udfs.decontam.ngram_index import DecontamConfig, NgramIndex
    started, cpu = time.perf_counter(), time.process_time()
    index = NgramIndex.build(DecontamConfig(benchmarks=str(benchmarks)))
    build = {"wall_s": round(time.perf_counter() - started, 1), "cpu_s": round(time.process_time() - cpu, 1),
             "ngram_hashes": int(len(index.hashes)), "index_mb": round(index.nbytes() / 1e6, 1),
             "ngram_lengths": index.lengths}
    del index

    out = DECONTAM_WORK / "out"
    shutil.rmtree(out, ignore_errors=True)
    cfg = DECONTAM_WORK / "bench.yaml"
    cfg.write_text(f"include: [{ROOT / 'conf' / 'local.yaml'}]\ndecontam: {{benchmarks: {benchmarks}}}\n")
    command = [sys.executable, "-m", "jobs.cli", "run", "--config", str(cfg), "--input", str(docs),
               "--output", str(out), "--run", "r", "--stages", "decontam"]
    measured = measure_tree(command)
    if measured["returncode"] != 0:
        raise SystemExit(f"decontam failed:\n{measured['output'][-4000:]}")
    stats = json.loads((out / "r" / "decontam" / "_stats.json").read_text())
    rejected = pq.read_table(out / "r" / "decontam" / "rejected", columns=["id", "reject_value", "text"]).to_pylist()
    found = {r["id"]: r["reject_value"] for r in rejected}
    missed = [i for i in planted if i not in found]
    unplanted = [r for r in rejected if r["id"] not in planted]
    result = {
        "documents": args.documents, "document_mb": round(text_bytes / 1e6, 1),
        "eval_mb": round(sum(sizes.values()) / 1e6, 1), "eval_sizes_mb": {k: round(v / 1e6, 1) for k, v in sizes.items()},
        "index_build_in_bench_process": build,
        "stage_wall_s": stats["wall_s"], "docs_per_s": round(stats["records_in"] / stats["wall_s"], 1),
        "process_wall_s": measured["wall_s"], "tree_cpu_s": measured["tree_cpu_s"],
        "cpu_ms_per_doc": round(1000 * measured["tree_cpu_s"] / args.documents, 3),
        "peak_rss_mb": measured["peak_rss_mb_by_role"], "peak_rss_mb_total": measured["peak_rss_mb"],
        "planted": len(planted), "planted_found": len(planted) - len(missed), "planted_missed": missed[:20],
        "found_without_plant": len(unplanted),
        "found_without_plant_examples": [{"id": r["id"], "benchmark": r["reject_value"], "text": r["text"][:300]}
                                         for r in unplanted[:10]],
        "per_benchmark": stats["benchmarks"],
    }
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (WORK / f"decontam-results-{stamp}.json").write_text(json.dumps(result, indent=1, ensure_ascii=False))
    print(json.dumps({k: v for k, v in result.items() if k != "found_without_plant_examples"}, indent=1))


if __name__ == "__main__":
    main()
