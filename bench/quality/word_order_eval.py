"""What the filter's word-order rule (``perplexity_word_order``) costs and catches on English text it was
not tuned on.

    python -m bench.quality.word_order_eval

Sets (``tools/quality_corpus.py``, read from ``../shared/data``): the trafilatura evaluation pages and
the ClueWeb09 English sample (each page's article text as positive, its boilerplate as negative), ABC
news stories (positive) against forum, chat and personal-ad text (negative). Every text goes through
``DocumentFilter`` with the default config; of those tagged English with confidence that no other rule
rejects, it counts how many the word-order rule rejects, and how many of the same texts with each
line's words shuffled it rejects (``bench.quality.fluency_eval.shuffled``: closing punctuation kept).
"""
from __future__ import annotations

import random

import numpy as np

from bench import SHARED_DATA
from bench.quality.fluency_eval import shuffled
from tools.quality_corpus import clueweb, news_vs_chat, traf_eval
from udfs.filter.rules import DocumentFilter, FilterConfig

RULE = "perplexity_word_order"
SEED = 11


def judged(doc_filter: DocumentFilter, texts):
    """The texts tagged English with confidence that no rule but the word-order one rejects, and
    their word-order gains."""
    columns = doc_filter.apply(texts)
    keep = [i for i, (lang, confident, failed) in enumerate(zip(columns["lang"], columns["lang_confident"],
                                                                  columns["failed_rules"]))
            if lang == "en" and confident and set(failed) <= {RULE}]
    return [texts[i] for i in keep], np.array([columns["word_order_gain"][i] for i in keep], dtype=float)


def main() -> None:
    rng = random.Random(SEED)
    data = str(SHARED_DATA)
    sets = {"trafilatura-eval": traf_eval(data), "clueweb09-en": clueweb(data, "en"),
            "abc-news-vs-chat": news_vs_chat(data, random.Random(SEED))}
    doc_filter = DocumentFilter(FilterConfig())
    minimum = doc_filter.cfg.rules[RULE].min
    print(f"rule {RULE}: word_order_gain >= {minimum}\n")
    print(f"{'set':<28} {'judged':>6} {'rejected':>8} {'gain q02':>8} {'median':>7} | {'shuffled':>8} {'rejected':>8}")
    for name, (positive, negative) in sets.items():
        for label, examples in (("positive", positive), ("negative", negative)):
            texts, gains = judged(doc_filter, [e.text for e in examples])
            if not texts:
                print(f"{name + ' ' + label:<28} {0:>6}")
                continue
            scrambled = [shuffled(text, False, rng) for text in texts]
            columns = doc_filter.apply(scrambled)
            caught = sum(RULE in failed for failed in columns["failed_rules"])
            print(f"{name + ' ' + label:<28} {len(texts):>6} {int((gains < minimum).sum()):>8} "
                  f"{np.nanquantile(gains, 0.02):>8.3f} {np.nanmedian(gains):>7.3f} | {len(scrambled):>8} {caught:>8}")


if __name__ == "__main__":
    main()
