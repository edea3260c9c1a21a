"""Per-language confidence cut-offs for language ID (``filter.language.confident_min_score_by_language``).

    python -m bench.quality.langid_cutoffs [--default 0.8] [--min-precision 0.9] [--floor 0.3]

Tags the UDHR documents of ``bench/quality/langid_compare.py`` with the filter's identifier as configured,
then, per ``lang``, from the text ``tools/fixtures/udhr.py`` leaves for tuning:

- the cut-off is the 5th percentile of ``lang_score`` over the documents tagged right, rounded down to
  0.05 (so 95 % of clean documents in the language count as confident), no lower than ``--floor``;
- raised, 0.05 at a time, until at least ``--min-precision`` of the documents tagged that language at or
  above it are in it (text of the languages the model lacks lands on a few labels: English, Tagalog …);
- kept only where it is below ``--default`` (``confident_min_score``).

Then, on the held-out text, the share of each language's documents that are tagged right and confident
with these cut-offs against with ``--default`` alone. Prints the YAML mapping to paste into
conf/filter.yaml.
"""
from __future__ import annotations

import argparse
import math
from collections import defaultdict
from typing import Dict, List, Tuple

from bench.quality.langid_compare import Candidate, gold_documents, make_candidate

MIN_DOCS = 5


def tagged(candidate: Candidate, docs: List[Tuple[str, str]], lang_of: Dict[str, str]):
    """(gold language, lang, lang_score, right) per document."""
    rows = []
    for gold, text in docs:
        tag, score = candidate.predict(text)
        language = gold.split("_")[0]
        rows.append((language, lang_of(tag), score, candidate.right(tag, language)))
    return rows


def cutoffs(rows, default: float, floor: float, min_precision: float) -> Dict[str, float]:
    scores: Dict[str, List[float]] = defaultdict(list)
    for _, lang, score, right in rows:
        if right:
            scores[lang].append(score)
    found = {}
    for lang, values in sorted(scores.items()):
        if len(values) < MIN_DOCS:
            continue
        values.sort()
        cut = max(floor, math.floor(values[int(0.05 * len(values))] * 20) / 20)
        while cut < default:
            above = [right for _, l, score, right in rows if l == lang and score >= cut]
            if not above or sum(above) / len(above) >= min_precision:
                break
            cut = round(cut + 0.05, 2)
        if cut < default:
            found[lang] = cut
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--default", type=float, default=0.8, help="confident_min_score")
    parser.add_argument("--floor", type=float, default=0.3)
    parser.add_argument("--min-precision", type=float, default=0.9)
    args = parser.parse_args()

    from udfs.filter.language_codes import two_letter

    candidate = make_candidate("filter")
    tuning = tagged(candidate, gold_documents(held_out_only=False, tuning_only=True), two_letter)
    found = cutoffs(tuning, args.default, args.floor, args.min_precision)
    print("confident_min_score_by_language: {" + ", ".join(f"{l}: {c}" for l, c in sorted(found.items())) + "}")

    held_out = tagged(candidate, gold_documents(held_out_only=True), two_letter)
    by_language: Dict[str, List[Tuple[bool, bool]]] = defaultdict(list)
    for language, lang, score, right in held_out:
        by_language[two_letter(language)].append((right and score >= found.get(lang, args.default),
                                                  right and score >= args.default))
    better = {lang: (sum(a for a, _ in v) / len(v), sum(b for _, b in v) / len(v)) for lang, v in by_language.items()}
    changed = {lang: pair for lang, pair in better.items() if pair[0] != pair[1]}
    n = sum(len(v) for v in by_language.values())
    print(f"held out: {n} documents; right and confident {sum(a for v in by_language.values() for a, _ in v) / n:.3f}"
          f" with the cut-offs, {sum(b for v in by_language.values() for _, b in v) / n:.3f} with {args.default} alone")
    for lang, (with_cutoffs, alone) in sorted(changed.items()):
        print(f"  {lang}: {alone:.2f} -> {with_cutoffs:.2f}")
    wrong_confident = sum(not right and score >= found.get(lang, args.default) for _, lang, score, right in held_out)
    wrong_alone = sum(not right and score >= args.default for _, lang, score, right in held_out)
    print(f"held out, wrongly tagged yet confident: {wrong_confident} with the cut-offs, {wrong_alone} with "
          f"{args.default} alone")


if __name__ == "__main__":
    main()
