"""Dedup quality against exhaustive-Jaccard ground truth: corpusmill's dedup stage and datatrove's
MinHash dedup, side by side, on real passages with planted duplicates.

    python -m bench.quality.dedup_quality [--en 3000] [--zh 600] [--templated 90] [--work /tmp/dedup-quality]
                                  [--datatrove-python /root/.cache/corpusmill/bench-venv/bin/python]

The corpus (``tools/fixtures/dedup_corpus.py``): disjoint passages of 60-300 words from the Gutenberg books and
ABC news transcripts, Wikipedia paragraphs, People's Daily paragraphs; for 40 % of them 1-3 planted
variants (word or character edits at random rates, so similarities spread over 0.4-1.0; boilerplate
lines; truncation; case/space-only copies; variants of variants, i.e. chains), and templated reports
that differ only in their numbers. Ids are random, so the original is not always the lowest id.

Ground truth: every pair with Jaccard >= 0.8 on word 5-grams of ``text.lower().split()`` (Chinese:
character 3-grams), found exhaustively; its connected components; the documents a perfect
deduplicator removes are all but the lowest id of each component. Reported:
- removed-document precision / recall / F1 against that set. This assumes the lowest id survives,
  as in corpusmill's default; datatrove keeps its union-find root (union by size), so for datatrove
  the next two figures are the fair ones;
- cluster-level precision (removed documents that have a duplicate at all) and recall (of the
  duplicates each ground-truth cluster should lose), which do not care which member survives;
- recall of ground-truth pairs by similarity band: a pair counts as caught when at least one of
  its documents was removed (lenient, survivor-agnostic).
corpusmill runs with its default config (conf/dedup.yaml). datatrove runs twice: its own defaults
(14 x 8 buckets, its normalisation: no punctuation, digits → 0) and with corpusmill's normalisation
and banding (18 x 7); it has no verification step, and for Chinese it shingles jieba words, not
characters.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Set

import pyarrow as pa
import pyarrow.parquet as pq

from bench import ROOT
from tools.fixtures.dedup_corpus import (CORPORA, clusters, edit_chars, edit_words, english_words, passages,
                                         peoples_daily_paragraphs, similar_pairs, wiki_paragraphs, with_boilerplate)

THRESHOLD = 0.8
ZH_BOILERPLATE = "本文版权归原作者所有，转载请注明出处。"
TEMPLATES = [
    "Weather report for station {0}: the temperature on day {1} reached {2} degrees with {3} mm of rain "
    "and wind speeds of {4} km/h. Humidity stayed near {5} percent while the pressure was {6} hPa. "
    "The next reading is scheduled for {7} o'clock and will be published on this page as usual.",
    "Quarterly results for unit {0}: revenue was {1} million, costs were {2} million and {3} new "
    "customers signed up during the period. The team shipped {4} releases and closed {5} tickets. "
    "Headcount at the end of the quarter stood at {6} people across {7} offices worldwide.",
    "Match report {0}: the home side won {1} to {2} in front of {3} spectators after {4} minutes of "
    "play. There were {5} corners and {6} yellow cards, and the next fixture is on matchday {7} of "
    "the season according to the published league schedule.",
]


def build_corpus(n_en: int, n_zh: int, n_templated: int, seed: int = 7) -> List[dict]:
    rng = random.Random(seed)
    words = english_words()
    vocabulary = words[:50000]
    english = passages(words, n_en, rng) + wiki_paragraphs(CORPORA / "en" / "enwiki-head-articles.xml")
    chinese = peoples_daily_paragraphs(CORPORA / "zh" / "peoples-daily-1998-01.txt")[:n_zh]
    docs: List[dict] = []

    def add(lang, text, kind):
        docs.append({"id": f"{rng.getrandbits(48):012x}", "lang": lang, "text": text, "kind": kind})

    def variant(lang, text):
        kind = rng.random()
        if kind < 0.45:
            return ("word-edit", edit_words(text, rng.uniform(0.0, 0.08), rng, vocabulary) if lang == "en"
                    else edit_chars(text, rng.uniform(0.0, 0.06), rng))
        if kind < 0.65:
            return "boilerplate", (with_boilerplate(text, rng) if lang == "en" else text + ZH_BOILERPLATE)
        if kind < 0.8:
            return "copy", "  " + (text.upper() if lang == "en" else text) + " "
        keep = 1.0 - rng.uniform(0.0, 0.3)
        if lang == "en":
            tokens = text.split()
            return "truncated", " ".join(tokens[:max(5, int(len(tokens) * keep))])
        return "truncated", text[:max(5, int(len(text) * keep))]

    for lang, texts in (("en", english), ("zh", chinese)):
        for text in texts:
            add(lang, text, "original")
            if rng.random() < 0.4:
                current = text
                for _ in range(rng.randint(1, 3)):
                    kind, edited = variant(lang, current)
                    add(lang, edited, kind)
                    if rng.random() < 0.3:  # the next variant derives from this one: a chain
                        current = edited
    for i in range(n_templated):
        template = TEMPLATES[i % len(TEMPLATES)]
        numbers = [rng.randint(1, 999) for _ in range(8)]
        add("en", template.format(*numbers), "templated")
    return docs


def ground_truth(docs: List[dict]):
    ids = [d["id"] for d in docs]
    pairs = similar_pairs(ids, [d["text"] for d in docs], THRESHOLD)
    roots = clusters(ids, pairs)
    members: Dict[str, Set[str]] = defaultdict(set)
    for i, r in roots.items():
        members[r].add(i)
    return pairs, {r: m for r, m in members.items() if len(m) > 1}


def score(removed: Set[str], pairs, gt_clusters) -> dict:
    expected = {i for r, m in gt_clusters.items() for i in m if i != r}
    duplicated = set().union(*gt_clusters.values()) if gt_clusters else set()
    tp = len(removed & expected)
    p = tp / len(removed) if removed else 1.0
    r = tp / len(expected) if expected else 1.0
    caught = sum(min(len(removed & m), len(m) - 1) for m in gt_clusters.values())
    bands = defaultdict(lambda: [0, 0])
    for a, b, sim in pairs:
        band = "1.0" if sim >= 0.999 else f"{min(int(sim * 20) / 20, 0.95):.2f}"
        bands[band][1] += 1
        bands[band][0] += int(a in removed or b in removed)
    return {
        "removed": len(removed), "precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0,
        "cluster_precision": len(removed & duplicated) / len(removed) if removed else 1.0,
        "cluster_recall": caught / len(expected) if expected else 1.0,
        "pair_recall_by_similarity": {k: f"{v[0]}/{v[1]}" for k, v in sorted(bands.items())},
    }


def default_dedup_config():
    from jobs import config
    from udfs.dedup.minhash import DedupConfig

    return config.build(DedupConfig, config.read_yaml(config.CONF_DIR / "dedup.yaml")["dedup"], "dedup")


def run_corpusmill(parquet: Path, work: Path) -> dict:
    from jobs import config
    from jobs.config import SparkConfig
    from corpusmill.config import CONF_DIR
    from jobs.pipeline import run_pipeline
    from jobs.spark import get_session

    cfg = config.load(overrides=config.read_yaml(CONF_DIR / "dedup.yaml"))
    spark = get_session(SparkConfig(master="local[2]", conf={
        "spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "8", "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false"}))
    started = time.time()
    stats = run_pipeline(spark, cfg, [str(parquet)], ["dedup"], str(work / "out"), "quality")[0]
    wall = time.time() - started
    rejected = spark.read.parquet(str(work / "out" / "quality" / "dedup" / "rejected")).select("id")
    removed = {r[0] for r in rejected.collect()}
    spark.stop()
    return {"removed_ids": removed, "wall_s": wall, "stats": stats}


def run_datatrove(python: str, docs: List[dict], work: Path, buckets: int, rows: int, norm: str) -> dict:
    removed, wall = set(), 0.0
    for lang, language in (("en", "en"), ("zh", "zh_Hani")):
        folder = work / f"dt-input-{lang}"
        folder.mkdir(parents=True, exist_ok=True)
        part = sorted((d for d in docs if d["lang"] == lang), key=lambda d: d["id"])
        half = (len(part) + 1) // 2  # two files: datatrove parallelises by file, keeps id order
        for k, chunk in enumerate((part[:half], part[half:])):
            (folder / f"part-{k}.jsonl").write_text(
                "".join(json.dumps({"id": d["id"], "text": d["text"]}) + "\n" for d in chunk))
        run_dir = work / f"dt-{norm}-{buckets}x{rows}-{lang}"
        out = subprocess.run([python, "-m", "bench.quality.dedup_datatrove", str(folder), str(run_dir),
                              "--language", language, "--buckets", str(buckets), "--rows", str(rows),
                              "--norm", norm], cwd=ROOT, capture_output=True, text=True, check=True)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        removed |= set(result["removed"])
        wall += result["wall_s"]
    return {"removed_ids": removed, "wall_s": wall}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--en", type=int, default=3000, help="English passages (plus Wikipedia paragraphs)")
    parser.add_argument("--zh", type=int, default=600, help="People's Daily paragraphs")
    parser.add_argument("--templated", type=int, default=90)
    parser.add_argument("--work", default="/tmp/dedup-quality")
    parser.add_argument("--datatrove-python", default="/root/.cache/corpusmill/bench-venv/bin/python")
    args = parser.parse_args()
    work = Path(args.work)
    subprocess.run(["rm", "-rf", str(work)], check=True)
    work.mkdir(parents=True)

    docs = build_corpus(args.en, args.zh, args.templated)
    kinds = defaultdict(int)
    for d in docs:
        kinds[f"{d['lang']}:{d['kind']}"] += 1
    started = time.time()
    pairs, gt_clusters = ground_truth(docs)
    print(f"corpus: {len(docs)} documents {dict(sorted(kinds.items()))}")
    print(f"ground truth: {len(pairs)} pairs with J >= {THRESHOLD}, {len(gt_clusters)} clusters, "
          f"{sum(len(m) - 1 for m in gt_clusters.values())} documents to remove "
          f"(exhaustive, {time.time() - started:.1f} s)")
    digest = hashlib.sha256("".join(d["id"] + d["text"] for d in docs).encode()).hexdigest()[:12]
    print(f"corpus digest {digest}")
    parquet = work / "input"
    parquet.mkdir()
    pq.write_table(pa.Table.from_pylist([{"id": d["id"], "text": d["text"]} for d in docs]),
                   parquet / "part-0.parquet")

    results = {"corpusmill (default config)": run_corpusmill(parquet, work)}
    if Path(args.datatrove_python).exists():
        results["datatrove 0.10.1 defaults (14x8, its norm)"] = run_datatrove(
            args.datatrove_python, docs, work, 14, 8, "datatrove")
        bands, rows = default_dedup_config().banding()
        results[f"datatrove 0.10.1, corpusmill norm, {bands}x{rows}"] = run_datatrove(
            args.datatrove_python, docs, work, bands, rows, "corpusmill")
    else:
        print(f"datatrove skipped: no {args.datatrove_python}")

    print(f"\n{'tool':45s} {'removed':>8s} {'P':>6s} {'R':>6s} {'F1':>6s} {'clusterP':>9s} {'clusterR':>9s} {'wall s':>7s}")
    for name, res in results.items():
        s = score(res["removed_ids"], pairs, gt_clusters)
        res["score"] = s
        print(f"{name:45s} {s['removed']:8d} {s['precision']:6.3f} {s['recall']:6.3f} {s['f1']:6.3f} "
              f"{s['cluster_precision']:9.3f} {s['cluster_recall']:9.3f} {res['wall_s']:7.1f}")
    print("\nrecall of ground-truth pairs by Jaccard band (pairs caught / pairs):")
    for name, res in results.items():
        print(f"  {name:45s} {res['score']['pair_recall_by_similarity']}")
    templated = {d["id"] for d in docs if d["kind"] == "templated"}
    expected = {i for r, m in gt_clusters.items() for i in m if i != r}
    for name, res in results.items():
        print(f"templated reports (differ only in numbers) removed by {name}: "
              f"{len(res['removed_ids'] & templated)} of {len(templated)} (ground truth: {len(expected & templated)})")
    stats = results["corpusmill (default config)"]["stats"]
    print("\ncorpusmill stats:", json.dumps({k: stats[k] for k in (
        "rejected", "candidate_pairs", "verified_pairs", "cc_rounds", "clusters", "s_curve")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
