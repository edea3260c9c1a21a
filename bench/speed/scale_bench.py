"""Scale benchmark: every stage on N *distinct* documents, stage by stage, at several sizes.

    python -m bench.speed.scale_bench [--sizes 25000 100000] [--files 16] [--duplicates 0.1]

The input is a WARC of distinct pages, built once per size into ``bench/work/scale-<N>/``: page
furniture (navigation, related links, footer) taken from the real pages of ``../shared/data/html``
around a main text that no other page shares: 12–40 sentences drawn at random (seeded by the page
number) from the shared corpora (English novels, speeches and Wikipedia; Chinese news for ~15 % of
the pages), so two pages share on average well under one sentence and dedup has nothing to merge
by accident. On top of the N distinct pages, a known fraction is planted as duplicates of earlier
pages under other URLs: half exact copies, half near copies (~1 % of words changed); dedup's
rejections are reported against them.

Each stage runs as its own ``corpusmill run --stages <stage>`` process on the same run folder
(extract reads the WARC, every later stage the kept/ of the one before), measured as a process tree
(bench/profiling/process_tree.py): docs/s from the stage's own wall time in ``_stats.json`` (JVM start-up
excluded), CPU ms per input document of the whole tree (start-up included), and peak RSS of the
driver, the JVM, the Python workers and the scoring service. Results go to
``bench/work/scale-results-<time>.json`` and are printed as a Markdown table per size plus the growth
from the smallest to the largest size (time per document should stay flat, memory per process too).
The shared corpora are read from ``../shared`` into the git-ignored work folder only.

    python -m bench.speed.scale_bench --sizes 30000 --stages pack score mindrecord --baseline /tmp/base

``--stages`` runs only those stages, on the run folder of an earlier run at that size (the stages
before them stay as they are). ``--baseline`` names another source tree (e.g. ``git archive`` of an
earlier commit, with its compiled modules): each stage then runs four times in one window of a busy
machine, that tree's code into the run folder ``baseline``, this tree's twice into ``r``, that tree's
again; the tables show the mean of each pair. ``--config`` gives this tree's runs a config of their
own (e.g. ``score.model: fluency``), the baseline's keep their default.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from bench import ROOT, SHARED_DATA, WORK
from bench.profiling.process_tree import measure_tree

STAGES = ["extract", "filter", "pii", "dedup", "decontam", "score", "mix", "pack", "mindrecord"]
ANCHOR = re.compile(r"<a\b[^>]*>\s*([^<>]{3,40}?)\s*</a>", re.I)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")


# ---------------------------------------------------------------- text and page furniture

def english_sentences() -> List[str]:
    from tools.quality_corpus import SEED, gutenberg, speeches, wikipedia

    rng = random.Random(SEED)
    sentences = []
    for reader in (gutenberg, speeches, wikipedia):
        for example in reader(str(SHARED_DATA), rng):
            sentences.extend(s.strip() for s in SENTENCE_END.split(" ".join(example.text.split())))
    return sorted({s for s in sentences if 40 <= len(s) <= 400})


def chinese_sentences() -> List[str]:
    text = (SHARED_DATA / "corpora" / "zh" / "peoples-daily-1998-01.txt").read_text(encoding="utf-8", errors="replace")
    sentences = [s.strip() + "。" for s in re.split(r"。", re.sub(r"\s+", "", text))]
    return sorted({s for s in sentences if 15 <= len(s) <= 200})


def furniture() -> List[List[str]]:
    """The link texts of each real page (its menus, related lists, footers), one list per page."""
    pages = sorted((SHARED_DATA / "html" / "trafilatura-eval").rglob("*.html"))
    found = []
    for path in pages:
        links = [" ".join(m.group(1).split()) for m in ANCHOR.finditer(path.read_text(encoding="utf-8", errors="replace"))]
        if len(links) >= 12:
            found.append(links)
    return found


def page_html(title: str, paragraphs: List[str], links: List[str], lang: str) -> bytes:
    def items(texts):
        return "".join(f'<li><a href="/{i}">{t}</a></li>' for i, t in enumerate(texts))

    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8"><title>{title}</title></head><body>'
            f'<header><nav><ul>{items(links[:12])}</ul></nav></header>'
            f'<main><article><h1>{title}</h1>{body}</article></main>'
            f'<aside><h2>Related</h2><ul>{items(links[12:20])}</ul></aside>'
            f'<footer><ul>{items(links[-6:])}</ul><p>© {title[:20]}</p></footer></body></html>').encode("utf-8")


def distinct_page(number: int, english: List[str], chinese: List[str], templates: List[List[str]]):
    rng = random.Random(number)
    lang = "zh" if rng.random() < 0.15 else "en"
    pool = chinese if lang == "zh" else english
    sentences = [pool[rng.randrange(len(pool))] for _ in range(rng.randint(12, 40))]
    paragraphs, i = [], 0
    while i < len(sentences):
        size = rng.randint(2, 5)
        paragraphs.append(("" if lang == "zh" else " ").join(sentences[i:i + size]))
        i += size
    title = sentences[0][:60]
    host = f"site{rng.randrange(2000)}.example.{rng.choice(['com', 'org', 'net', 'cn'])}"
    return f"https://{host}/articles/{number}", paragraphs, title, lang, templates[rng.randrange(len(templates))]


def near_copy(paragraphs: List[str], rng: random.Random) -> List[str]:
    """~1 % of the words (characters for Chinese) replaced: each change breaks the 5 word shingles (3
    character shingles) over it, so the copy keeps a Jaccard of ~0.9 to its original, above dedup's 0.8."""
    changed = []
    for paragraph in paragraphs:
        words = paragraph.split(" ")
        if len(words) > 3:
            for _ in range(max(1, len(words) // 100)):
                words[rng.randrange(len(words))] = rng.choice(["however", "indeed", "also", "then"])
            changed.append(" ".join(words))
        else:
            chars = list(paragraph)
            for _ in range(max(1, len(chars) // 100)):
                chars[rng.randrange(len(chars))] = rng.choice("的是在了")
            changed.append("".join(chars))
    return changed


def build_warc(size: int, files: int, duplicate_fraction: float) -> Tuple[Path, Dict[str, int]]:
    """The WARC parts of ``size`` distinct pages plus the planted duplicates (built once)."""
    from bench.speed.make_bench_warc import _write

    folder = WORK / f"scale-{size}" / "warc"
    planted = {"distinct": size, "exact_copies": int(size * duplicate_fraction / 2),
               "near_copies": int(size * duplicate_fraction / 2)}
    if folder.exists() and len(list(folder.glob("*.warc.gz"))) == files:
        return folder, planted
    english, chinese, templates = english_sentences(), chinese_sentences(), furniture()
    print(f"building {size} distinct pages (+{planted['exact_copies']} exact, +{planted['near_copies']} near "
          f"copies) from {len(english)} English and {len(chinese)} Chinese sentences, {len(templates)} page templates",
          flush=True)
    records = []
    for number in range(size):
        url, paragraphs, title, lang, links = distinct_page(number, english, chinese, templates)
        records.append((url, "text/html; charset=utf-8", page_html(title, paragraphs, links, lang)))
    rng = random.Random(size)
    for kind in ("exact_copies", "near_copies"):
        for copy in range(planted[kind]):
            url, paragraphs, title, lang, links = distinct_page(rng.randrange(size), english, chinese, templates)
            if kind == "near_copies":
                paragraphs = near_copy(paragraphs, rng)
            records.append((f"{url}-{kind}-{copy}", "text/html; charset=utf-8", page_html(title, paragraphs, links, lang)))
    rng.shuffle(records)
    numbered = list(enumerate(records))
    for i in range(files):
        _write(folder / f"part-{i:04d}.warc.gz", numbered[i * len(numbered) // files:(i + 1) * len(numbered) // files])
    return folder, planted


# ---------------------------------------------------------------- the run

def run_stage(stage: str, out: Path, run: str, warc: Path, code: Path, config: Optional[Path] = None) -> dict:
    """One ``corpusmill run --stages <stage>`` process with the code of the source tree ``code``."""
    shutil.rmtree(out / run / stage, ignore_errors=True)  # a finished stage would be skipped, not measured
    command = [sys.executable, "-m", "jobs.cli", "run", "--output", str(out), "--run", run, "--stages", stage]
    if config:
        command += ["--config", str(config)]
    if stage == "extract":
        command += ["--input", str(warc)]
    env = dict(os.environ, PYTHONPATH=str(code))  # ahead of the editable install's path
    measured = measure_tree(command, env=env, cwd=str(code))
    if measured["returncode"] != 0:
        raise SystemExit(f"{stage} ({code}) failed:\n{measured['output'][-4000:]}")
    stats = json.loads((out / run / stage / "_stats.json").read_text())
    records_in = stats["records_in"]
    if stage == "extract":  # pages: the WARC's responses, not its request/metadata records
        records_in -= sum(stats["skipped"].values())
    return {"stage": stage, "code": str(code), "records_in": records_in, "kept": stats["kept"],
            "rejected": sum(stats["rejected"].values()), "stage_wall_s": stats["wall_s"],
            "docs_per_s": round(records_in / stats["wall_s"], 1) if stats["wall_s"] else None,
            "cpu_ms_per_doc": round(1000 * measured["tree_cpu_s"] / max(records_in, 1), 2),
            "process_wall_s": measured["wall_s"], "peak_rss_mb": measured["peak_rss_mb_by_role"],
            "cpu_s_by_role": measured["tree_cpu_s_by_role"],
            "load_1min": round(os.getloadavg()[0], 2),
            "dedup_rejected": stats["rejected"] if stage == "dedup" else None}


def mean_of(a: dict, b: dict) -> dict:
    """Two runs of one stage as one row: mean times, the higher peak memory."""
    row = dict(a)
    for key in ("docs_per_s", "cpu_ms_per_doc", "stage_wall_s", "process_wall_s", "load_1min"):
        row[key] = round((a[key] + b[key]) / 2, 2)
    row["peak_rss_mb"] = {role: max(a["peak_rss_mb"][role], b["peak_rss_mb"][role]) for role in a["peak_rss_mb"]}
    row["cpu_s_by_role"] = {role: round((a["cpu_s_by_role"][role] + b["cpu_s_by_role"][role]) / 2, 1)
                            for role in a["cpu_s_by_role"]}
    return row


def run_size(size: int, files: int, duplicate_fraction: float, stages: List[str], baseline,
             config: Optional[Path] = None) -> dict:
    warc, planted = build_warc(size, files, duplicate_fraction)
    out = WORK / f"scale-{size}" / "out"
    earlier = STAGES[:STAGES.index(stages[0])]
    if not earlier:
        shutil.rmtree(out, ignore_errors=True)  # a finished stage would be skipped, not measured
    for run in ("r", "baseline") if baseline else ("r",):
        for stage in STAGES:
            folder = out / run / stage
            if stage in earlier and not folder.exists():
                if run == "r":
                    raise SystemExit(f"--stages: {stage} has not run in {out / run}; run the stages before "
                                     f"{stages[0]} first")
                shutil.copytree(out / "r" / stage, folder)  # the baseline starts from the same input
            elif stage not in earlier:
                shutil.rmtree(folder, ignore_errors=True)
    rows, before = [], []
    for stage in stages:
        if baseline:
            # baseline, this, this, baseline: the second of two runs back to back is the slower one
            # (by up to a quarter here), whichever code it runs; the means cancel that out.
            first = run_stage(stage, out, "baseline", warc, baseline)
            this = [run_stage(stage, out, "r", warc, ROOT, config) for _ in range(2)]
            before.append(mean_of(first, run_stage(stage, out, "baseline", warc, baseline)))
            rows.append(mean_of(*this))
        else:
            rows.append(run_stage(stage, out, "r", warc, ROOT, config))
        for row, label in zip((*before[-1:], rows[-1]), ("baseline", "this") if baseline else ("this",)):
            print(f"  {size}: {stage:>10} {label:>8} {row['records_in']:>7} in, {row['docs_per_s']} docs/s, "
                  f"{row['cpu_ms_per_doc']} CPU ms/doc, CPU s {row['cpu_s_by_role']}, peak MB {row['peak_rss_mb']}, "
                  f"load {row['load_1min']}",
                  flush=True)
    return {"size": size, "planted": planted, "stages": rows, "baseline": before}


def table(result: dict) -> str:
    lines = [f"**{result['size']:,} distinct pages** (+ planted duplicates: {result['planted']['exact_copies']:,} "
             f"exact, {result['planted']['near_copies']:,} near)", "",
             "| stage | code | docs in | docs/s | CPU ms/doc | driver MB | JVM MB | Python workers MB | service MB "
             "| load |", "|---|---|---|---|---|---|---|---|---|---|"]
    before = {row["stage"]: row for row in result["baseline"]}
    for after in result["stages"]:
        for row, label in ((before.get(after["stage"]), "baseline"), (after, "this")):
            if row is None:
                continue
            peak = row["peak_rss_mb"]
            lines.append(f"| {row['stage']} | {label} | {row['records_in']:,} | {row['docs_per_s']} | "
                         f"{row['cpu_ms_per_doc']} | {peak['driver']} | {peak['jvm']} | {peak['python_workers']} | "
                         f"{peak['scoring_service'] or '-'} | {row['load_1min']} |")
    dedup = next((row["dedup_rejected"] for row in result["stages"] if row["stage"] == "dedup"), None)
    if dedup is not None:
        lines += ["", f"dedup rejected {dedup} (planted: {result['planted']['exact_copies']:,} exact, "
                      f"{result['planted']['near_copies']:,} near copies)"]
    return "\n".join(lines)


def growth(small: dict, large: dict) -> str:
    lines = [f"Growth from {small['size']:,} to {large['size']:,} pages (×{large['size'] / small['size']:.0f} input): "
             "CPU per document and peak memory per process, large / small", "",
             "| stage | CPU ms/doc | driver | JVM | Python workers |", "|---|---|---|---|---|"]
    for a, b in zip(small["stages"], large["stages"]):
        def ratio(x, y):
            return f"{y / x:.2f}" if x else "-"
        lines.append(f"| {a['stage']} | {ratio(a['cpu_ms_per_doc'], b['cpu_ms_per_doc'])} | "
                     + " | ".join(ratio(a["peak_rss_mb"][r], b["peak_rss_mb"][r]) for r in ("driver", "jvm", "python_workers"))
                     + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[25000, 100000])
    parser.add_argument("--files", type=int, default=16, help="WARC part files (extract runs one task per file)")
    parser.add_argument("--duplicates", type=float, default=0.1, help="planted duplicates, as a fraction of the size")
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=STAGES,
                        help="only these stages, on the run folder of an earlier run at each size")
    parser.add_argument("--baseline", type=Path,
                        help="another source tree: each stage runs with its code too, just before this tree's")
    parser.add_argument("--config", type=Path,
                        help="a config this tree's runs read (the baseline's read their own default), e.g. "
                             "one that sets score.model")
    args = parser.parse_args()
    stages = [stage for stage in STAGES if stage in args.stages]
    baseline = args.baseline.resolve() if args.baseline else None
    results = []
    for size in sorted(args.sizes):
        results.append(run_size(size, args.files, args.duplicates, stages, baseline,
                                args.config.resolve() if args.config else None))
        print(table(results[-1]) + "\n", flush=True)
    if len(results) > 1:
        print(growth(results[0], results[-1]))
    WORK.mkdir(parents=True, exist_ok=True)
    target = WORK / f"scale-results-{time.strftime('%Y%m%d-%H%M%S')}.json"
    target.write_text(json.dumps(results, indent=2))
    print(f"results: {target}")


if __name__ == "__main__":
    main()
