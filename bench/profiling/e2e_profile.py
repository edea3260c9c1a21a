"""Where extract + filter spend their CPU: each step timed alone, in one Python process, no Spark.

    python -m bench.profiling.e2e_profile [--input FOLDER] [--pages 2000]

Reads the first ``--pages`` HTML responses of the first file of the e2e benchmark input (see
``bench/speed/e2e_bench.py``) and times every step of the per-record path with ``time.process_time``,
each over all pages before the next (so caches are warm as in a long Spark task): WARC reading
(udfs/extract/warc.py's FastWARC pass with its checks, up to the raw payload; the bounded warcio pass it
falls back to is timed too, for comparison, and left out of the sum), decoding, HTML parsing, the
boilerplate selector, resiliparse's main-content extraction with the element pass and its undo
check, the block pass with the whole-page fallback (each less the steps before it, which it repeats),
the line pass, normalisation; then the filter on the extracted texts: its set-up (once per worker, once per task,
in ms), fastText LID, the quality signals (and their Python reference, for comparison, not summed),
n-gram perplexity, and ``DocumentFilter.apply`` as a whole. Prints milliseconds of CPU per page; the Spark
stages add Arrow conversion, Parquet I/O and the JVM on top (``bench/speed/e2e_bench.py`` measures those
as whole-process CPU).
"""
from __future__ import annotations

import argparse
import itertools
import time
from collections import Counter
from pathlib import Path

from bench import WORK



def timed(label: str, function, items, results: dict, keep: bool = True):
    """``function`` over ``items``, its CPU ms per item in ``results[label]``; the outputs, or None
    with ``keep=False`` (2,000 parsed trees held at once cost page faults the pipeline never pays,
    which would inflate the parse's time several-fold)."""
    started = time.process_time()
    if keep:
        out = [function(item) for item in items]
    else:
        out = None
        for item in items:
            function(item)
    results[label] = (time.process_time() - started) * 1000 / len(items)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", default=str(WORK / "extract-bench-20000.parts"))
    parser.add_argument("--pages", type=int, default=2000)
    args = parser.parse_args()

    from jobs.config import load
    from udfs.filter.rules import DocumentFilter
    from udfs.extract.html import (charset_from_content_type, decode_html, kept_text, kept_units, main_content_units,
                                   parse_page)
    from udfs.filter.quality import compute_signals, compute_signals_reference
    from udfs.extract.text import normalize_text
    from udfs.extract.warc import ExtractConfig, WarcDocumentReader, read_payload

    class PayloadReader(WarcDocumentReader):
        """udfs/extract/warc.py's reader up to the payload: the per-record work of extract before the HTML."""

        def _judge(self, record, row):
            row.update(_outcome="kept", charset=record.http_headers.get_header("Content-Type"),
                       text=read_payload(record, self.cfg.max_payload_bytes + 1))

    warc = sorted(Path(args.input).glob("*.warc*"))[0]
    ms: dict = {}
    reader = PayloadReader(ExtractConfig())

    def read_pass(read_pass_name: str, label: str) -> list:
        started = time.process_time()
        rows = getattr(reader, read_pass_name)(str(warc), lambda: open(warc, "rb"), "warc", True, Counter())
        pages = [(row["charset"], row["text"]) for row in itertools.islice(rows, args.pages)]
        ms[label] = (time.process_time() - started) * 1000 / len(pages)
        return pages

    read_pass("_warcio_pass", "(warc: bounded warcio pass, the fallback; not summed)")
    payloads = read_pass("_fastwarc_pass", "warc: FastWARC pass + checks, to the raw payload")
    decoded = timed("decode charset", lambda p: decode_html(p[1], charset_from_content_type(p[0]))[0], payloads, ms)
    htmls = [h for h in decoded if h]
    for html in htmls:  # untimed: the walker's set-up and its class/id table are once per worker, warm in a crawl
        parse_page(html)
    timed("html: lexbor parse + walk (udfs/extract/_page_walk.pyx)", parse_page, htmls, ms, keep=False)
    page_set_up = ms["html: lexbor parse + walk (udfs/extract/_page_walk.pyx)"]
    timed("html: main content, element pass, undo check", main_content_units, htmls, ms)
    ms["html: main content, element pass, undo check"] -= page_set_up
    kept = timed("html: block pass, whole-page fallback", lambda html: kept_units(html)[0], htmls, ms)
    ms["html: block pass, whole-page fallback"] -= page_set_up + ms["html: main content, element pass, undo check"]
    texts = timed("html: line pass", kept_text, kept, ms)
    texts = [t for t in timed("normalise text", normalize_text, texts, ms) if t]

    # Set-up a Python worker pays once (models, the signals' character table), then each task's.
    settings = load(None).filter
    started = time.process_time()
    doc_filter = DocumentFilter(settings)
    doc_filter.apply(texts[:20])
    ms["(filter: once per worker: models, tables, 20 pages; ms)"] = (time.process_time() - started) * 1000
    started = time.process_time()
    doc_filter = DocumentFilter(settings)
    ms["(filter: once per task: DocumentFilter; ms)"] = (time.process_time() - started) * 1000
    langs = timed("filter: fastText LID", lambda t: doc_filter.identifier.predict([t])[0][0], texts, ms)
    timed("filter: quality signals (udfs/filter/quality.py)",
          lambda pair: compute_signals(pair[0], doc_filter.stop_words.get(pair[1])), list(zip(texts, langs)), ms)
    timed("(filter: quality signals, Python reference; not summed)",
          lambda pair: compute_signals_reference(pair[0], doc_filter.stop_words.get(pair[1])),
          list(zip(texts, langs)), ms)
    timed("filter: n-gram perplexity", lambda pair: doc_filter.perplexity.score([pair[0]], [pair[1]]),
          list(zip(texts, langs)), ms)
    started = time.process_time()
    for i in range(0, len(texts), 1000):
        doc_filter.apply(texts[i:i + 1000])
    whole_filter = (time.process_time() - started) * 1000 / len(texts)

    print(f"{len(payloads)} pages of {warc.name}, mean HTML {sum(map(len, htmls)) / len(htmls) / 1000:.0f} k chars; "
          f"CPU ms per page:")
    for label, value in ms.items():
        print(f"  {label:<52} {value:6.2f}")
    extract = sum(v for k, v in ms.items() if not k.startswith(("filter", "(")))
    print(f"  {'extract, sum of steps':<52} {extract:6.2f}")
    print(f"  {'filter, DocumentFilter.apply in batches of 1000':<52} {whole_filter:6.2f}")


if __name__ == "__main__":
    main()
