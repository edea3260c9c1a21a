"""Disagreement mining: pages where the default extractor is probably wrong, found without gold text.

    python -m bench.quality.extraction_disagreements [--below 0.3] [--dump DIR] [--list]

Every distinct page we have (the HTML 200 responses of ``../shared/data/warc/*.warc[.gz]`` and the
trafilatura-eval pages) goes through the extract stage's default, trafilatura and resiliparse's
main-content mode. Where the two references agree with each other (word 4-gram overlap F1 >= 0.8,
both holding at least ``MIN_SHINGLES`` 4-grams) and the default's overlap with either of them is
below 0.3 (``--below``), the default has probably taken the wrong part of the page. The count of
those pages is the development signal; ``--list`` names them, with their lengths and overlaps,
``--dump DIR`` writes each one's three texts (``<n>.default.txt``, ``.trafilatura.txt``,
``.resiliparse.txt``) and its HTML for reading.
"""
from __future__ import annotations

import argparse
import hashlib
from pathlib import Path
from typing import Iterator, List, Tuple

from bench import SHARED_DATA
from bench.quality.extraction_quality import EXTRACTORS
from tools.extraction_devsets import f1, load_trafilatura_eval, shingles, tokens_of
from udfs.extract.html import charset_from_content_type, decode_html

WARC_DIR = SHARED_DATA / "warc"
REFERENCES_AGREE = 0.8   # the references' overlap with each other at least this
DEFAULT_DISAGREES = 0.3  # ... and the default's with either below this
MIN_SHINGLES = 10        # references that keep less than this agree on nothing worth checking


def warc_pages() -> Iterator[Tuple[str, bytes, str]]:
    """(name, payload, content type) of each HTML 200 response in the shared WARCs."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    for path in sorted(WARC_DIR.glob("*.warc*")):
        if path.name.endswith(".wet.gz"):
            continue
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream, record_types=WarcRecordType.response, parse_http=True):
                http = record.http_headers
                content_type = (http.get("Content-Type") or "") if http else ""
                if http is None or http.status_code != 200 or "html" not in content_type.lower():
                    continue
                yield f"{path.name}:{record.headers.get('WARC-Target-URI')}", record.reader.read(), content_type


def all_pages() -> List[dict]:
    """[{name, html}] of every distinct page (the same payload once)."""
    seen, pages = set(), []
    for name, payload, content_type in warc_pages():
        html, _ = decode_html(payload, charset_from_content_type(content_type))
        digest = hashlib.sha1(payload).digest()
        if html and digest not in seen:
            seen.add(digest)
            pages.append({"name": name, "html": html})
    for page in load_trafilatura_eval():
        digest = hashlib.sha1(page["html"].encode("utf-8", "replace")).digest()
        if page["html"] and digest not in seen:
            seen.add(digest)
            pages.append({"name": "trafilatura-eval:" + page["name"], "html": page["html"]})
    return pages


def overlap(a, b) -> float:
    """F1 of two texts' word 4-grams (as shingle counters)."""
    common = sum((a & b).values())
    if not common:
        return 0.0
    return f1(common / sum(a.values()), common / sum(b.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", type=Path, help="write each disagreeing page's texts and HTML here")
    parser.add_argument("--list", action="store_true", help="name each disagreeing page")
    parser.add_argument("--below", type=float, default=DEFAULT_DISAGREES,
                        help=f"the default's overlap with a reference that counts as disagreeing ({DEFAULT_DISAGREES})")
    args = parser.parse_args()

    pages = all_pages()
    extractors = {name: EXTRACTORS[name]() for name in ("corpusmill", "trafilatura", "resiliparse")}
    disagreeing, checked, far_from_both = [], 0, 0
    for page in pages:
        texts = {name: extract(page["html"]) for name, extract in extractors.items()}
        grams = {name: shingles(tokens_of(text)) for name, text in texts.items()}
        references = grams["trafilatura"], grams["resiliparse"]
        if min(sum(g.values()) for g in references) < MIN_SHINGLES:
            continue
        if overlap(*references) < REFERENCES_AGREE:
            continue
        checked += 1
        with_each = [overlap(grams["corpusmill"], reference) for reference in references]
        if min(with_each) < args.below:
            disagreeing.append((page, texts, with_each))
            far_from_both += max(with_each) < args.below
    print(f"{len(pages)} distinct pages; the references agree on {checked}; the default disagrees with either"
          f" on {len(disagreeing)} ({far_from_both} with both)")
    for n, (page, texts, with_each) in enumerate(disagreeing):
        if args.list:
            print(f"  {n:3d} {page['name'][:90]}: default {len(texts['corpusmill'])} chars,"
                  f" trafilatura {len(texts['trafilatura'])}, resiliparse {len(texts['resiliparse'])};"
                  f" overlap {with_each[0]:.2f} / {with_each[1]:.2f}")
        if args.dump:
            args.dump.mkdir(parents=True, exist_ok=True)
            (args.dump / f"{n}.html").write_text(page["html"], encoding="utf-8")
            (args.dump / f"{n}.name").write_text(page["name"], encoding="utf-8")
            for name, text in texts.items():
                label = "default" if name == "corpusmill" else name
                (args.dump / f"{n}.{label}.txt").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
