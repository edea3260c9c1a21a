"""Word segmentation's cost: each segmenter of ``filter.word_segmentation`` on its language's UDHR.

    python -m bench.speed.segmentation_bench

For each segmenter, the characters per CPU second it cuts (its language's whole declaration in
``../shared/data/corpora/multilingual/udhr-unicode/``, the segmenter already made, as a worker makes
it once; median of three one-second runs), and the CPU ms per document the filter spends on a
document's words (``segmented_words``: the first ``SEGMENTED_CHARS`` characters, lowercased, tokens
with a letter).
"""
from __future__ import annotations

import time
from typing import Callable

from tools.fixtures.shared_data import shared
from tools.fixtures.udhr import DECLARATIONS, read_declaration
from udfs.filter.segmentation import SEGMENTED_CHARS, segmented_words, segmenter

# A segmenter and the declaration it is timed on.
SEGMENTER_TEXTS = (("jieba", "cmn_hans"), ("mecab", "jpn"), ("newmm", "tha"))


def per_second(work: Callable[[], int]) -> float:
    """Median over three runs of about a second each of the characters ``work`` gets through."""
    rates = []
    for _ in range(3):
        started, chars = time.process_time(), 0
        while time.process_time() - started < 1:
            chars += work()
        rates.append(chars / (time.process_time() - started))
    return sorted(rates)[1]


def main() -> None:
    for name, code in SEGMENTER_TEXTS:
        declaration = read_declaration(shared(DECLARATIONS) / f"{code}.html")
        text = "\n".join(p for part in [declaration.preamble, *declaration.articles.values()] for p in part)
        cut = segmenter(name)
        cut(text)  # made once per worker: not timed

        def whole() -> int:
            cut(text)
            return len(text)

        def document() -> int:
            segmented_words(text, name)
            return 1

        rate = per_second(whole)
        documents = per_second(document)
        print(f"{name} on {code}.html ({len(text):,} characters): {rate / 1e6:.2f} M characters/s; "
              f"a document's words (its first {SEGMENTED_CHARS:,} characters): {1000 / documents:.2f} ms")


if __name__ == "__main__":
    main()
