"""Kneser-Ney estimation of the perplexity signal's n-gram models, and its command line.

* ``estimate``: interpolated modified Kneser-Ney (Chen & Goodman 1998, as KenLM's lmplz builds it:
  continuation counts for lower orders, three discounts per order from the count-of-counts), then
  count pruning of higher orders with the backoff weights recomputed so each distribution still sums
  to one. Pure Python, so no binary (lmplz) is needed (the time and memory a model takes:
  ``udfs/filter/lm_models/README.md``).
* ``paragraphs_of_file``: the training text of MediaWiki dumps, .zip archives and text files.
* ``train``: estimate, write the ARPA file and its card (sources, licences, held-out perplexity).

    python -m tools.ngram_lm_train train --lang en --input FILE... --out udfs/filter/lm_models/en.arpa.gz
    python -m tools.ngram_lm_train score --model udfs/filter/lm_models/en.arpa.gz < lines.txt

Tokenizing, the ARPA format and scoring are ``udfs.filter.ngram_lm``'s, so a model is trained on exactly the
tokens the filter stage scores.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections import Counter, defaultdict
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from tools.quality_corpus import paragraphs_of, wiki_articles, zip_texts
from udfs.filter.ngram_lm import (BACKENDS, BOS, EOS, TOKENIZER, UNK, Estimate, NgramModel, load_model, perplexity,
                                  tokenize_all, write_arpa)

# ---------------------------------------------------------------- estimation

def _discounts(adjusted: Dict[tuple, int]) -> List[float]:
    """Modified Kneser-Ney discounts D1, D2, D3+ from the count-of-counts (Chen & Goodman eq. 26)."""
    n = Counter(min(c, 5) for c in adjusted.values())
    n1, n2, n3, n4 = (max(n[k], 1) for k in (1, 2, 3, 4))
    y = n1 / (n1 + 2 * n2)
    ds = [1 - 2 * y * n2 / n1, 2 - 3 * y * n3 / n2, 3 - 4 * y * n4 / n3]
    # Tiny or degenerate corpora can give discounts outside (0, count): clamp to a sane range.
    return [min(max(d, 0.05), k + 0.95) for k, d in zip((0, 1, 2), ds)]


def estimate(sentences: Iterable[Sequence[str]], order: int = 4, min_count: int = 1,
             max_vocab: int = 200_000, prune: Sequence[int] = ()) -> Estimate:
    """Interpolated modified Kneser-Ney estimate from tokenized sentences.

    Words seen fewer than ``min_count`` times (or beyond the ``max_vocab`` most frequent) become
    ``<unk>``. With ``min_count=1`` only unseen words are ``<unk>``, and its probability is the
    smoothing mass alone (as with KenLM's lmplz): unknown words cost the most, which is what sets
    spam and chat slang apart. ``prune[n-1]`` drops n-grams of order n whose (adjusted) count is at
    most that value (unigrams are never pruned).
    """
    sentences = [list(s) for s in sentences if s]
    freq = Counter(w for s in sentences for w in s)
    vocab = {w for w, c in freq.most_common(max_vocab) if c >= min_count}
    counts: List[Counter] = [Counter() for _ in range(order)]
    for s in sentences:
        words = [BOS] + [w if w in vocab else UNK for w in s] + [EOS]
        for n in range(1, order + 1):
            counts[n - 1].update(zip(*(words[k:] for k in range(n))))
    counts[0][(UNK,)] += 0  # <unk> is in every model's vocabulary, seen or not

    # Adjusted counts: the highest order keeps raw counts; a lower-order n-gram counts the distinct
    # words seen before it (its continuation count), except those starting with <s>, which nothing precedes.
    adjusted: List[Dict[tuple, int]] = [None] * order  # type: ignore[list-item]
    adjusted[order - 1] = dict(counts[order - 1])
    for n in range(order - 1, 0, -1):
        left = Counter(g[1:] for g in counts[n])
        adjusted[n - 1] = {g: (c if g[0] == BOS else left[g]) for g, c in counts[n - 1].items()}
    adjusted[0][(BOS,)] = 0

    discounts = [_discounts(a) for a in adjusted]
    prob: List[Dict[tuple, float]] = []
    vocab_size = len(adjusted[0]) - 1  # every word but <s> can be predicted
    for n in range(1, order + 1):
        d = discounts[n - 1]
        total: Dict[tuple, float] = defaultdict(float)
        mass: Dict[tuple, float] = defaultdict(float)
        for g, a in adjusted[n - 1].items():
            if a > 0:
                total[g[:-1]] += a
                mass[g[:-1]] += d[min(a, 3) - 1]
        table: Dict[tuple, float] = {}
        for g, a in adjusted[n - 1].items():
            h = g[:-1]
            if g == (BOS,):
                continue
            lower = 1.0 / vocab_size if n == 1 else prob[n - 2][g[1:]]
            discounted = max(a - d[min(a, 3) - 1], 0.0) / total[h] if a > 0 else 0.0
            table[g] = discounted + mass[h] / total[h] * lower
        prob.append(table)

    kept = _prune(prob, adjusted, prune)
    return Estimate(order, _with_backoffs(kept, order), discounts)


def _prune(prob: List[Dict[tuple, float]], adjusted: List[Dict[tuple, int]],
           prune: Sequence[int]) -> List[Dict[tuple, float]]:
    """Drop rare higher-order n-grams; keep an n-gram only if its prefix and suffix are kept (the
    ARPA reader looks both up)."""
    kept = [dict(prob[0])]
    kept[0][(BOS,)] = 0.0
    for n in range(2, len(prob) + 1):
        threshold = prune[n - 1] if n - 1 < len(prune) else 0
        below = kept[n - 2]
        kept.append({g: p for g, p in prob[n - 1].items()
                     if adjusted[n - 1][g] > threshold and g[:-1] in below and g[1:] in below})
    return kept


def _with_backoffs(prob: List[Dict[tuple, float]], order: int) -> List[Dict[tuple, Tuple[float, float]]]:
    """log10 probabilities and the backoff weight of every context, recomputed after pruning:
    bow(h) = (1 - sum of p(w|h) over kept hw) / (1 - sum of p(w|h') over the same w)."""
    kept_mass: List[Dict[tuple, float]] = [defaultdict(float) for _ in range(order)]
    lower_mass: List[Dict[tuple, float]] = [defaultdict(float) for _ in range(order)]
    for n in range(2, order + 1):
        for g, p in prob[n - 1].items():
            kept_mass[n - 2][g[:-1]] += p
            lower_mass[n - 2][g[:-1]] += prob[n - 2][g[1:]]
    tables = []
    for n in range(1, order + 1):
        table = {}
        for g, p in prob[n - 1].items():
            logp = -99.0 if g == (BOS,) else math.log10(p)
            bow = 0.0
            if n < order and g in kept_mass[n - 1]:
                numerator = max(1.0 - kept_mass[n - 1][g], 1e-12)
                denominator = max(1.0 - lower_mass[n - 1][g], 1e-12)
                bow = math.log10(numerator / denominator)
            table[g] = (logp, bow)
        tables.append(table)
    return tables


# ---------------------------------------------------------------- training inputs and command

def paragraphs_of_file(path: str) -> Iterator[str]:
    """Paragraphs of a training file: MediaWiki XML dumps (article prose only), .zip archives of
    text files (one paragraph per line), or text files (blank-line separated blocks when the file
    has blank lines, hard-wrapped lines joined; else one paragraph per line)."""
    if path.endswith(".xml"):
        for _, paragraphs in wiki_articles(path):
            yield from paragraphs
    elif path.endswith(".zip"):
        for _, text in zip_texts(path):
            yield from paragraphs_of(text, wrapped=False)
    else:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read().lstrip("\ufeff")
        yield from paragraphs_of(text, wrapped=bool(re.search(r"\n\s*\n", text)))


def train(args: argparse.Namespace) -> dict:
    paragraphs = [p for path in args.input for p in paragraphs_of_file(path)]
    # Deterministic held-out split: every k-th paragraph.
    held_out = paragraphs[args.held_out_every - 1::args.held_out_every] if args.held_out_every else []
    training = [p for i, p in enumerate(paragraphs)
                if not args.held_out_every or (i + 1) % args.held_out_every != 0]
    sentences = tokenize_all(training)
    model = estimate(sentences, args.order, args.min_count, args.max_vocab, args.prune)
    write_arpa(model, args.out)
    scorer = NgramModel.load(args.out)
    card = {
        "language": args.lang,
        "file": os.path.basename(args.out),
        "format": "ARPA (gzip)" if args.out.endswith(".gz") else "ARPA",
        "smoothing": "interpolated modified Kneser-Ney, count-pruned, backoffs renormalised",
        "order": args.order,
        "tokenizer": TOKENIZER,
        "min_count": args.min_count,
        "prune": list(args.prune),
        "discounts": [[round(d, 4) for d in ds] for ds in model.discounts],
        "ngrams": model.counts(),
        "vocab_size": len(scorer.vocab),
        "training_tokens": sum(len(s) for s in sentences),
        "training_paragraphs": len(training),
        "held_out": f"every {args.held_out_every}th paragraph" if args.held_out_every else None,
        "held_out_paragraphs": len(held_out),
        "held_out_perplexity": round(perplexity(scorer, held_out), 2) if held_out else None,
        "file_bytes": os.path.getsize(args.out),
        "sources": [{"path": os.path.basename(p), "licence": lic}
                    for p, lic in zip(args.input, args.licence or [None] * len(args.input))],
        "note": args.note,
    }
    with open(re.sub(r"\.arpa(\.gz)?$", "", args.out) + ".card.json", "w", encoding="utf-8") as fh:
        json.dump(card, fh, ensure_ascii=False, indent=2)
        fh.write("\n")
    return card


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.ngram_lm_train", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="estimate a model from text files and write ARPA + card")
    t.add_argument("--lang", required=True, help="language code the model is for (lid.176 codes: en, zh, …)")
    t.add_argument("--input", nargs="+", required=True, help="MediaWiki .xml, .zip of .txt, or text files")
    t.add_argument("--licence", nargs="*", help="licence of each input, in order (goes into the card)")
    t.add_argument("--out", required=True, help="output ARPA path (.arpa or .arpa.gz)")
    t.add_argument("--order", type=int, default=4)
    t.add_argument("--min-count", type=int, default=1,
                   help="rarer words become <unk> (1: only unseen words are <unk>, so they cost the most)")
    t.add_argument("--max-vocab", type=int, default=200_000)
    t.add_argument("--prune", type=int, nargs="*", default=[0, 1, 1, 1],
                   help="per order: drop n-grams with adjusted count <= this")
    t.add_argument("--held-out-every", type=int, default=20, help="hold out every k-th paragraph (0: none)")
    t.add_argument("--note", default="", help="free text for the card (e.g. licence restrictions)")
    s = sub.add_parser("score", help="perplexity of each line of stdin")
    s.add_argument("--model", required=True)
    s.add_argument("--backend", choices=BACKENDS, default="auto")
    args = parser.parse_args(argv)
    if args.command == "train":
        if not 2 <= args.order <= 6:
            parser.error("--order must be within 2..6")
        print(json.dumps(train(args), ensure_ascii=False, indent=2))
    else:
        model = load_model(args.model, args.backend)
        for line in sys.stdin:
            print(f"{perplexity(model, [line]):.1f}\t{line.rstrip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
