"""Speed and separation of the perplexity signal on real extracted web text.

    python -m bench.speed.perplexity_bench [--repeat 3] [--model zh=/models/zh.arpa.gz ...]

Scores with the default models (English ships; no Chinese model does, see udfs/filter/lm_models/README.md)
plus any ``--model LANG=PATH``.

1. Extracts the HTML pages of real WARCs (ClueWeb09 en + zh samples, the Apache-2.0 Common Crawl,
   dolma and archive.org samples under ``../shared/data/warc/``) with the extract stage's reader,
   tags their language with the filter stage's lid.176 identifier, and times
   ``PerplexityScorer.score`` over them (docs/s and tokens/s, per query backend, models already
   loaded; model load time separately).
2. Prints each model's card figures (held-out perplexity of its own split) and its perplexity on
   reference text it never saw (ABC news for en; People's Daily for zh, unseen unless the model
   was trained on it).
3. Prints the per-language perplexity percentiles of the web pages (what ``max_perplexity`` and the
   bucket cut-offs act on) and of junk text (SMS spam, chat, shuffled words).
4. Where the scoring-model evaluation sets exist (``bench/work/quality-data/eval``, written by
   ``python -m tools.quality_corpus``), the ROC AUC of -perplexity at telling positive from
   negative pages.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

from bench import SHARED_DATA, WORK
from tools.ngram_lm_train import paragraphs_of_file
from udfs.filter.langid import LanguageIdentifier
from udfs.filter.ngram_lm import kenlm_available, tokenize
from udfs.common.worker import release as release_worker_resources
from udfs.filter.perplexity import PerplexityConfig, PerplexityScorer
from udfs.extract.warc import ExtractConfig, WarcDocumentReader

WARCS = ["clueweb09-en-sample.warc.gz", "clueweb09-zh-sample.warc.gz", "commoncrawl-whirlwind.warc.gz",
         "jwarc-commoncrawl.warc.gz", "dolma-sample-0000.warc.gz", "dolma-sample-0001.warc.gz",
         "aut-archive.org-2008.warc.gz"]
EVAL = WORK / "quality-data" / "eval"


def extracted_pages():
    reader = WarcDocumentReader(ExtractConfig())
    texts = []
    for name in WARCS:
        path = SHARED_DATA / "warc" / name
        texts += [row["text"] for row in reader.read(str(path), lambda p=path: open(p, "rb"))
                  if row["_outcome"] == "kept"]
    return texts


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(a random positive scores higher than a random negative), ties half."""
    pos, neg = pos[:, None], neg[None, :]
    return float(((pos > neg).sum() + 0.5 * (pos == neg).sum()) / (pos.size * neg.size))


def percentiles(values, limit: float) -> str:
    """Percentiles, and the share above ``limit`` (what the default perplexity rule rejects)."""
    v = np.array([x for x in values if x is not None])
    if not len(v):
        return "n=0"
    p = np.percentile(v, [10, 25, 50, 75, 80, 90, 95])
    return f"n={len(v):4d}  p10 {p[0]:6.0f}  p25 {p[1]:6.0f}  p50 {p[2]:6.0f}  p75 {p[3]:6.0f}  " \
           f"p80 {p[4]:6.0f}  p90 {p[5]:6.0f}  p95 {p[6]:6.0f}  > max {np.mean(v > limit):6.1%}"


def junk_sets(rng: random.Random):
    """Low-quality English text and word-shuffled reference paragraphs."""
    sms = [line.split("\t", 1)[1] for line in
           (SHARED_DATA / "corpora/low/sms-spam-collection.tsv").read_text(encoding="utf-8").splitlines()[1:]
           if line.startswith("spam\t")]
    with zipfile.ZipFile(SHARED_DATA / "corpora/low/nps_chat.zip") as zf:
        posts = [p for name in zf.namelist() if name.endswith(".xml")
                 for p in re.findall(r"<Post [^>]*>([^<]*)<terminals>", zf.read(name).decode("utf-8", "replace"))]
    chat = ["\n".join(posts[i:i + 10]) for i in range(0, min(len(posts), 3000), 10)]
    with zipfile.ZipFile(SHARED_DATA / "corpora/en/abc.zip") as zf:
        news = [p for name in sorted(zf.namelist()) if name.endswith(".txt")
                for p in zf.read(name).decode("utf-8", "replace").split("\n\n") if len(p) > 200][:500]
    shuffled = []
    for p in news:
        words = p.split()
        rng.shuffle(words)
        shuffled.append(" ".join(words))
    def keywords(separator):  # each paragraph's distinct longer words: meta keywords, tag clouds
        return [separator.join(dict.fromkeys(w for w in re.findall(r"[a-z]+", p.lower()) if len(w) > 3))
                for p in news]

    return news, {"sms spam": sms, "nps chat (10 posts)": chat, "abc news, words shuffled": shuffled,
                  "abc news as keywords ' '": keywords(" "), "abc news as keywords ', '": keywords(", ")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed passes per backend (best is reported)")
    parser.add_argument("--model", action="append", default=[], metavar="LANG=PATH",
                        help="an ARPA model for a language, added to the default models")
    args = parser.parse_args()
    models = {**PerplexityConfig().models, **dict(m.split("=", 1) for m in args.model)}

    started = time.time()
    texts = extracted_pages()
    langs, _ = LanguageIdentifier().predict(texts)
    print(f"extracted {len(texts)} pages in {time.time() - started:.1f} s; languages: "
          f"{ {lang: langs.count(lang) for lang in sorted(set(langs), key=langs.count, reverse=True)[:6]} }")
    n_tokens = {lang: sum(len(tokenize(t)) for t, l in zip(texts, langs) if l == lang) for lang in models}
    print(f"tokens: {n_tokens}")

    backends = ["numpy"] + (["kenlm"] if kenlm_available() else [])
    results = {}
    for backend in backends:
        cfg = PerplexityConfig(models=models, backend=backend)
        scorer = PerplexityScorer(cfg)
        release_worker_resources()  # the models load again: their load is timed
        t0 = time.time()
        for lang in cfg.models:
            scorer.model(lang)
        load_s = time.time() - t0
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.time()
            ppl = scorer.score(texts, langs)
            best = min(best, time.time() - t0)
        results[backend] = ppl
        scored = sum(p is not None for p in ppl)
        print(f"[{backend:5s}] load {len(models)} model(s) {load_s:5.2f} s | score {len(texts)} pages ({scored} with a model) "
              f"in {best:.3f} s = {len(texts) / best:7.0f} docs/s, "
              f"{sum(n_tokens.values()) / best / 1e3:6.0f} k tokens/s (tokenization included)")
    if len(results) == 2:
        a = np.array([x for x in results["numpy"] if x is not None])
        b = np.array([x for x in results["kenlm"] if x is not None])
        print(f"numpy vs kenlm: max relative difference of document perplexity {np.max(np.abs(a - b) / b):.2e}")

    scorer = PerplexityScorer(PerplexityConfig(models=models, backend=backends[-1]))
    print("\nmodels (card figures):")
    for lang in models:
        card = Path(re.sub(r"\.arpa(\.gz)?$", "", scorer.cfg.model_path(lang)) + ".card.json")
        if not card.exists():
            print(f"  {lang}: no card")
            continue
        c = json.loads(card.read_text(encoding="utf-8"))
        print(f"  {c['language']}: order {c['order']}, vocab {c['vocab_size']}, n-grams {c['ngrams']}, "
              f"{c['file_bytes'] / 1e6:.1f} MB, trained on {c['training_tokens']} tokens, "
              f"held-out perplexity {c['held_out_perplexity']} ({c['held_out_paragraphs']} paragraphs)")

    ppl = results[backends[-1]]
    limit = {lang: scorer.cfg.max_perplexity.get(lang, float("inf")) for lang in models}
    print(f"\ndocument perplexity percentiles (default max_perplexity {limit}):")
    for lang in models:
        print(f"  web pages [{lang}]            "
              f"{percentiles([p for p, l in zip(ppl, langs) if l == lang], limit[lang])}")
    news, junk = junk_sets(random.Random(0))
    print(f"  abc news [en, unseen]      {percentiles(scorer.score(news, ['en'] * len(news)), limit['en'])}")
    for name, docs in junk.items():
        print(f"  {name:27s}{percentiles(scorer.score(docs, ['en'] * len(docs)), limit['en'])}")
    if "zh" in models:
        held = [p for i, p in enumerate(paragraphs_of_file(str(SHARED_DATA / 'corpora/zh/peoples-daily-1998-01.txt')))
                if (i + 1) % 20 == 0]
        print(f"  people's daily [zh, every 20th]  {percentiles(scorer.score(held, ['zh'] * len(held)), limit['zh'])}")

    if EVAL.exists():
        print("\nROC AUC of -perplexity, positive vs negative (scoring-model evaluation sets):")
        for folder in sorted(EVAL.iterdir()):
            sets = {}
            for label in ("positive", "negative"):
                rows = [json.loads(line) for line in (folder / f"{label}.jsonl").open(encoding="utf-8")]
                docs = [r["text"] for r in rows]
                sets[label] = (docs, LanguageIdentifier().predict(docs)[0])
            pos = [(-p) for p in scorer.score(*sets["positive"]) if p is not None]
            neg = [(-p) for p in scorer.score(*sets["negative"]) if p is not None]
            if pos and neg:
                print(f"  {folder.name:34s} AUC {auc(np.array(pos), np.array(neg)):.3f} "
                      f"({len(pos)} positive, {len(neg)} negative with a model)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
