"""How much of a document language ID must read: the filter's tags, confidence and verdicts when it reads
the first N characters, against reading the whole text.

    python -m bench.quality.langid_prefix [--max-chars 5000 3000 2000 1000]

Two sets: the filter benchmark's real web pages (``bench/speed/filter_bench.py`` builds
``bench/work/filter_corpus.parquet``), and the held-out UDHR documents of every language
(``bench/quality/filter_languages.py``, four articles each), whose declared language also counts the
tags that are right. Each setting is the default config with only ``filter.language.max_chars``
changed; the CPU of language ID alone (``LanguageIdentifier.identify``) is printed beside it.
"""
from __future__ import annotations

import argparse
import dataclasses
import time
from typing import List, Optional

from bench.quality.filter_languages import documents
from bench.speed.filter_bench import CORPUS
from tools.fixtures.udhr import declarations
from udfs.filter.langid import LanguageIdentifier
from udfs.filter.language_codes import two_letter
from udfs.filter.rules import DocumentFilter, FilterConfig


def verdicts(cfg: FilterConfig, max_chars: int, texts: List[str]):
    cfg = dataclasses.replace(cfg, language=dataclasses.replace(cfg.language, max_chars=max_chars))
    columns = DocumentFilter(cfg).apply(texts)
    identifier = LanguageIdentifier.from_config(cfg.language)
    started = time.process_time()
    identifier.identify(texts)
    cpu_ms = (time.process_time() - started) * 1000 / len(texts)
    return list(zip(columns["lang"], columns["lang_confident"], columns["_outcome"])), cpu_ms


def compare(name: str, texts: List[str], gold: Optional[List[str]], settings: List[int]) -> None:
    cfg = FilterConfig()
    whole, cpu_ms = verdicts(cfg, 0, texts)
    right = f", right tags {sum(two_letter(g) == v[0] for g, v in zip(gold, whole))}" if gold else ""
    print(f"{name}: {len(texts)} documents, {sum(len(t) > min(settings) for t in texts)} longer than "
          f"{min(settings)} characters")
    print(f"  whole text: language ID {cpu_ms:.3f} CPU ms/doc{right}")
    for max_chars in settings:
        found, cpu_ms = verdicts(cfg, max_chars, texts)
        changed = [sum(a[k] != b[k] for a, b in zip(whole, found)) for k in range(3)]
        right = f", right tags {sum(two_letter(g) == v[0] for g, v in zip(gold, found))}" if gold else ""
        print(f"  first {max_chars}: language ID {cpu_ms:.3f} CPU ms/doc; against the whole text: tags changed "
              f"{changed[0]}, confidence {changed[1]}, verdicts {changed[2]}{right}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-chars", type=int, nargs="+", default=[5000, 3000, 2000, 1000])
    args = parser.parse_args()
    import pyarrow.parquet as pq

    if not CORPUS.exists():
        raise SystemExit(f"{CORPUS} is missing: python -m bench.speed.filter_bench builds it")
    web = [t for t in pq.read_table(CORPUS, columns=["text"]).column("text").to_pylist() if t]
    compare("web pages (filter benchmark)", web, None, args.max_chars)
    pairs = [(declaration.iso6393, text) for declaration in declarations()
             for text in documents(declaration, held_out=True)]
    compare("held-out UDHR", [t for _, t in pairs], [g for g, _ in pairs], args.max_chars)


if __name__ == "__main__":
    main()
