"""Main-content extraction quality on the trafilatura evaluation pages, ours against the libraries.

    python bench/extraction_quality.py [--split dev|test|all] [--extractors corpusmill,resiliparse,...]
                                       [--misses corpusmill]

Reads ``../shared/data/html/trafilatura-eval/``: ``evaldata.json`` lists, per page, snippets that
must appear in the main text (``with``) and snippets that must not (``without``). Scored the way
trafilatura's own evaluation does: a ``with`` snippet found is a true positive, missing a false
negative; a ``without`` snippet found is a false positive, absent a true negative. Every page is
decoded once with the extract stage's ``decode_html`` so all extractors see the same text.

Pages are split into dev (tuning) and test (held out) halves by a hash of the file name; the
boilerplate filter (``udfs/boilerplate.py``) was tuned on dev only, so the test half is what to quote. ``--misses NAME`` prints, for the
chosen split, the snippets that extractor got wrong (the dev-split tuning loop).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from udfs.html import decode_html, extract_main_text  # noqa: E402
from udfs.text import normalize_text  # noqa: E402

EVAL_DIR = ROOT.parent / "shared" / "data" / "html" / "trafilatura-eval"


def split_of(file_name: str) -> str:
    return "dev" if hashlib.sha1(file_name.encode("utf-8")).digest()[0] % 2 == 0 else "test"


def load_pages(split: str) -> List[dict]:
    """[{file, html, with, without}] for the split, decoded as the extract stage decodes them."""
    items = json.loads((EVAL_DIR / "evaldata.json").read_text(encoding="utf-8"))
    pages = []
    for item in items.values():
        if split != "all" and split_of(item["file"]) != split:
            continue
        path = EVAL_DIR / "cache" / item["file"]
        if not path.exists():
            path = EVAL_DIR / "eval" / item["file"]
        html, _ = decode_html(path.read_bytes(), None)
        pages.append({"file": item["file"], "html": html or "", "with": item["with"], "without": item["without"]})
    return pages


def _plain_resiliparse(html: str) -> str:
    # The plain library call the brief measured: main content, no comments, alt texts or bullets.
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, main_content=True, alt_texts=False, list_bullets=False, comments=False)


def _trafilatura(**options) -> Callable[[str], str]:
    import trafilatura

    return lambda html: trafilatura.extract(html, include_comments=False, **options) or ""


EXTRACTORS: Dict[str, Callable[[], Callable[[str], str]]] = {
    # What the extract stage does by default: resiliparse + boilerplate post-filter + normalisation.
    "corpusmill": lambda: lambda html: normalize_text(extract_main_text(html, "resiliparse", True)),
    "corpusmill-nofilter": lambda: lambda html: normalize_text(extract_main_text(html, "resiliparse", False)),
    "resiliparse": lambda: _plain_resiliparse,
    "trafilatura": lambda: _trafilatura(),
    "trafilatura-precision": lambda: _trafilatura(favor_precision=True),
}


def score(pages: List[dict], texts: List[str]) -> dict:
    tp = fn = fp = tn = 0
    for page, text in zip(pages, texts):
        found_with = sum(snippet in text for snippet in page["with"])
        found_without = sum(snippet in text for snippet in page["without"])
        tp, fn = tp + found_with, fn + len(page["with"]) - found_with
        fp, tn = fp + found_without, tn + len(page["without"]) - found_without
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "accuracy": (tp + tn) / (tp + fn + fp + tn)}


def run(name: str, pages: List[dict]):
    """Texts and pages per CPU-second (this process's CPU time: steadier than wall time on a shared
    machine, and the same thing on an idle one, since every extractor here is single-threaded)."""
    extract = EXTRACTORS[name]()
    extract(pages[0]["html"])  # warm-up: imports and lazy initialisation are not extraction time
    start = time.process_time()
    texts = [extract(page["html"]) for page in pages]
    return texts, len(pages) / (time.process_time() - start)


def print_misses(pages: List[dict], texts: List[str]) -> None:
    for page, text in zip(pages, texts):
        missing = [s for s in page["with"] if s not in text]
        leaked = [s for s in page["without"] if s in text]
        if missing or leaked:
            print(f"== {page['file']}")
            for snippet in missing:
                print(f"   MISSING {snippet!r}")
            for snippet in leaked:
                line = next(l for l in text.split("\n") if snippet in l) if snippet in text else ""
                print(f"   LEAKED  {snippet!r}  in line: {line[:160]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="all", choices=["dev", "test", "all"])
    parser.add_argument("--extractors", default=",".join(EXTRACTORS),
                        help=f"comma-separated subset of {','.join(EXTRACTORS)}")
    parser.add_argument("--misses", metavar="NAME", help="print the snippets this extractor got wrong")
    args = parser.parse_args()

    pages_by_split = {s: load_pages(s) for s in (["dev", "test"] if args.split == "all" else [args.split])}
    all_pages = [p for pages in pages_by_split.values() for p in pages]
    counts = ", ".join(f"{s} {len(p)}" for s, p in pages_by_split.items())
    print(f"trafilatura-eval: {len(all_pages)} pages ({counts})\n")
    header = f"{'extractor':<22}" + "".join(f"{s + ' P':>8}{'R':>7}{'F1':>7}" for s in pages_by_split) + f"{'pages/cpu-s':>12}"
    print(header)
    print("-" * len(header))
    for name in args.extractors.split(","):
        texts, rate = run(name, all_pages)
        row, offset = f"{name:<22}", 0
        for split, pages in pages_by_split.items():
            m = score(pages, texts[offset:offset + len(pages)])
            row += f"{m['precision']:>8.3f}{m['recall']:>7.3f}{m['f1']:>7.3f}"
            offset += len(pages)
        print(row + f"{rate:>12.0f}", flush=True)
        if name == args.misses:
            print_misses(all_pages, texts)


if __name__ == "__main__":
    main()
