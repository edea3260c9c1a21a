"""Build a benchmark WARC of real pages: N HTTP 200 HTML responses, each with its own URL.

    python -m bench.speed.make_bench_warc [--responses 20000] [--split 4] [--seed 7 --non-200 0.05]

Pages: the 990 trafilatura evaluation pages (``../shared/data/html/trafilatura-eval``) and every
HTTP 200 HTML response of the shared WARCs (ClueWeb09 en/zh, archive.org, gov.uk, Dolma, Common
Crawl, pywb; ~395 pages), shuffled once with a fixed seed and cycled until N responses are
written, so any prefix is a mix of sources. Each response gets its own URL (the page's URL plus a
``cmbench=<n>`` query parameter); payloads are written decoded (no chunking, no Content-Encoding) with
their original Content-Type. Written with warcio, one gzip member per record, to
``bench/work/extract-bench-<N>.warc.gz``, or with ``--split K`` as K files of consecutive records in
``bench/work/extract-bench-<N>.parts/`` (Spark and datatrove parallelise by file). The first M
records of every size are the same pages with the same URLs, so a smaller build is a subset of a
larger one. ``--seed`` shuffles the pages in another order, and ``--non-200`` makes that fraction of
the responses 404, 301 or 503 answers (their own small bodies), spread through the files: an input
that no setting was tuned on (its files are named after both).
Research-only and GPL test pages are read from ``../shared`` into the git-ignored work folder only.
"""
from __future__ import annotations

import argparse
import json
import random
from io import BytesIO
from pathlib import Path
from typing import Iterator, List, Tuple
from urllib.parse import quote

from bench import SHARED_DATA, WORK

EVAL_DIR = SHARED_DATA / "html" / "trafilatura-eval"
WARC_DIR = SHARED_DATA / "warc"

Page = Tuple[str, str, bytes]  # url, content type, payload


def eval_pages() -> Iterator[Page]:
    for key, item in json.loads((EVAL_DIR / "evaldata.json").read_text(encoding="utf-8")).items():
        path = EVAL_DIR / "cache" / item["file"]
        # Some keys are labels ("hard::page.html"), not URLs; warcio parses HTTP headers for http(s) only.
        url = key.strip() if key.startswith(("http://", "https://")) else f"https://trafilatura-eval.invalid/{quote(key)}"
        yield quote(url, safe=":/?&=%#~+;,@!$'()*"), "text/html", (path if path.exists() else EVAL_DIR / "eval" / item["file"]).read_bytes()


def warc_pages() -> Iterator[Page]:
    """HTTP 200 HTML responses of the shared WARCs, payload decoded (dechunked, decompressed)."""
    from warcio.archiveiterator import ArchiveIterator

    for path in sorted(WARC_DIR.glob("*.warc*")):
        if path.name.endswith(".wet.gz"):
            continue
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream, arc2warc=True):
                http = record.http_headers
                if record.rec_type != "response" or http is None or http.get_statuscode() != "200":
                    continue
                content_type = http.get_header("Content-Type") or ""
                if content_type.lower().startswith(("text/html", "application/xhtml")):
                    yield record.rec_headers.get_header("WARC-Target-URI"), content_type, record.content_stream().read()


DEFAULT_SEED = 20240601
NON_200 = (("404 Not Found", b"<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1>"
                             b"<p>The requested URL was not found on this server.</p></body></html>"),
           ("301 Moved Permanently", b"<html><body><a href=\"https://example.org/moved\">Moved</a></body></html>"),
           ("503 Service Unavailable", b"<html><body><h1>Service Unavailable</h1><p>Try again later.</p></body></html>"))


def source_pages(seed: int = DEFAULT_SEED) -> List[Page]:
    pages = list(eval_pages()) + list(warc_pages())
    random.Random(seed).shuffle(pages)
    return pages


def bench_paths(responses: int, split: int = 0, seed: int = DEFAULT_SEED, non_200: float = 0.0) -> List[Path]:
    """The file, or with ``split`` the part files, a build of ``responses`` responses writes."""
    name = f"extract-bench-{responses}"
    if seed != DEFAULT_SEED or non_200:
        name += f"-seed{seed}-non200-{non_200:g}"
    if not split:
        return [WORK / f"{name}.warc.gz"]
    return [WORK / f"{name}.parts" / f"part-{i:04d}-of-{split:04d}.warc.gz" for i in range(split)]


def _write(path: Path, records) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for number, (url, content_type, payload, *status) in records:
            separator = "&" if "?" in url else "?"
            http = StatusAndHeaders(status[0] if status else "200 OK",
                                    [("Content-Type", content_type), ("Content-Length", str(len(payload)))],
                                    protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(f"{url}{separator}cmbench={number}", "response",
                                                          payload=BytesIO(payload), http_headers=http))
    tmp.rename(path)  # a killed build leaves no file that looks finished


def build(responses: int = 20000, split: int = 0, seed: int = DEFAULT_SEED, non_200: float = 0.0) -> List[Path]:
    """Write the benchmark WARC (or its ``split`` parts) unless already there; returns the paths."""
    paths = bench_paths(responses, split, seed, non_200)
    if all(p.exists() for p in paths):
        return paths
    pages = source_pages(seed)
    answers = random.Random(seed + 1)
    numbered = []
    for n in range(responses):
        url, content_type, payload = pages[n % len(pages)]
        if answers.random() < non_200:
            status, payload = answers.choice(NON_200)
            numbered.append((n, (url, "text/html", payload, status)))
        else:
            numbered.append((n, (url, content_type, payload)))
    for i, path in enumerate(paths):
        if not path.exists():
            _write(path, numbered[i * responses // len(paths):(i + 1) * responses // len(paths)])
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=20000)
    parser.add_argument("--split", type=int, default=0, help="write this many part files instead of one")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the order of the pages")
    parser.add_argument("--non-200", type=float, default=0.0, help="fraction of responses that are 404/301/503")
    args = parser.parse_args()
    if not 0 <= args.non_200 < 1:
        parser.error("--non-200: a fraction in [0, 1)")
    for path in build(args.responses, args.split, args.seed, args.non_200):
        print(f"{path} ({path.stat().st_size / 2 ** 20:.0f} MB)")


if __name__ == "__main__":
    main()
