"""Language ID's CPU per document: fastText itself against ``udfs/filter/_fasttext_hs.pyx`` on the same lines,
and the filter's whole identifier (tags, scripts, CLD2's second opinion).

    python -m bench.speed.langid_bench --input out/demo/extract/kept [--docs 4000]

Reads the ``text`` of up to ``--docs`` documents of a Parquet dataset (e.g. a run's ``extract/kept``),
makes the line the filter gives the model (``LanguageIdentifier.line``, its first ``filter.language.max_chars``),
and times, in CPU ms per document: fastText's ``predict``, the compiled classifier on its first pass
over the lines (its word cache filling) and on a second pass (the cache warm), then fastText again.
It checks that both give the same label and probability on every line. Then, on the texts, the
filter's ``LanguageIdentifier.identify`` (line, lid.176, tag and script) with lid.176 alone and as
configured (``filter.language``: CLD2 for the documents lid.176 is unsure of, and to confirm its sure
tags of the languages CLD2 knows), each on a warm cache, and the shares of documents CLD2 read as a
second opinion, retagged, and doubted.
"""
from __future__ import annotations

import argparse
import time

import pyarrow.dataset as ds

from udfs.filter._fasttext_hs import HsClassifier
from udfs.filter.langid import FastTextPredictor, LanguageIdentifier, default_model_path
from udfs.filter.rules import LanguageConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="a Parquet dataset with a text column")
    parser.add_argument("--docs", type=int, default=4000)
    parser.add_argument("--max-chars", type=int, default=LanguageConfig().max_chars,
                        help="as filter.language.max_chars (default: the config's)")
    args = parser.parse_args()

    texts = [t for t in ds.dataset(args.input).head(args.docs, columns=["text"]).column("text").to_pylist() if t]
    line_of = LanguageIdentifier(max_chars=args.max_chars).line
    lines = [line_of(text) for text in texts]
    path = str(default_model_path())
    compiled, fasttext = HsClassifier.read(path), FastTextPredictor(path)
    for name, classifier in (("fastText", fasttext), ("compiled, word cache filling", compiled),
                             ("compiled, word cache warm", compiled), ("fastText again", fasttext)):
        started = time.process_time()
        for line in lines:
            classifier.predict(line)
        print(f"{name:30s} {1000 * (time.process_time() - started) / len(lines):.3f} ms/doc")
    differing = sum(compiled.predict(line) != fasttext.predict(line) for line in lines)
    print(f"{len(lines)} documents, {sum(len(line.split()) for line in lines) / len(lines):.0f} words a line; "
          f"label or probability differing: {differing}")

    cfg = LanguageConfig()
    alone = LanguageIdentifier(cfg.model, cfg.max_chars)
    configured = LanguageIdentifier.from_config(cfg)
    for name, identifier in (("identify, lid.176 alone", alone), ("identify, as configured", configured)):
        identifier.identify(texts)  # the word cache warm, as in a worker's later batches
        started = time.process_time()
        tags = identifier.identify(texts)
        print(f"{name:30s} {1000 * (time.process_time() - started) / len(texts):.3f} ms/doc")
    lid_tags = alone.identify(texts)
    asked = sum(score < cfg.second_opinion_below for score in lid_tags.lang_score)
    retagged = sum(a != b for a, b in zip(lid_tags.lang, tags.lang))
    print(f"CLD2 read {asked / len(texts):.1%} of the documents as a second opinion (lid.176 below "
          f"{cfg.second_opinion_below}) and retagged {retagged / len(texts):.1%}; it doubted "
          f"{sum(tags.doubted) / len(texts):.1%} (sure tags it did not confirm)")


if __name__ == "__main__":
    main()
