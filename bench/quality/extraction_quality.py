"""Main-content extraction quality on two development sets, ours against the libraries.

    python -m bench.quality.extraction_quality [--sets trafilatura-eval,readability] [--extractors corpusmill,...]
                                       [--misses corpusmill] [--regressions corpusmill [--against trafilatura]]

The two sets (``tools/extraction_devsets.py`` describes them and their scores) are made
differently: trafilatura's evaluation pages with snippets that must / must not appear, and Mozilla
Readability's test pages with the article it keeps. A change to the extractor counts when it helps
on both (tune on one, read the other).

Speed is pages per CPU-second of this process. For the default, the share of pages whose main
content was replaced by the block pass's verdict on the whole page (near-empty main content without
a run of prose on the page) or on the page's article run (near-empty, or a doubtful block beside the
article) is printed (``udfs.extract.html.chosen_units``). ``--misses NAME`` prints the snippets that
extractor got wrong (trafilatura-eval); ``--regressions NAME`` lists the pages where NAME's F1 is at
least 0.2 below that of ``--against`` (resiliparse's main-content mode alone unless told otherwise).
"""
from __future__ import annotations

import argparse
import time
from collections import Counter
from typing import Callable, Dict, List

from tools.extraction_devsets import LOADERS, SETS, f1, page_scores, score
from udfs.extract.html import FROM_ARTICLE_RUN, FROM_WHOLE_PAGE, extract_main_text, kept_units
from udfs.extract.text import normalize_text


def _plain_resiliparse(html: str) -> str:
    # The plain library call, the baseline: main content, no comments, alt texts or bullets.
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
        missing = [s for s in page.get("with", []) if s not in text]
        leaked = [s for s in page.get("without", []) if s in text]
        if missing or leaked:
            print(f"== {page['name']}")
            for snippet in missing:
                print(f"   MISSING {snippet!r}")
            for snippet in leaked:
                line = next(l for l in text.split("\n") if snippet in l)
                print(f"   LEAKED  {snippet!r}  in line: {line[:160]!r}")


def print_regressions(name: str, against: str, pages: List[dict], texts: List[str], baseline: List[str]) -> None:
    """Pages where ``name`` loses at least 0.2 F1 against ``against``."""
    worse = []
    for page, text, base in zip(pages, texts, baseline):
        ours, theirs = page_scores(page, text), page_scores(page, base)
        loss = f1(theirs["precision"], theirs["recall"]) - f1(ours["precision"], ours["recall"])
        if loss >= 0.2:
            worse.append((loss, page["name"], ours, theirs))
    print(f"  {len(worse)} pages where {name} loses >= 0.2 F1 against {against}")
    for loss, page_name, ours, theirs in sorted(worse, reverse=True):
        print(f"    -{loss:.2f} {page_name}: P {ours['precision']:.2f} R {ours['recall']:.2f}"
              f" ({against} P {theirs['precision']:.2f} R {theirs['recall']:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated subset of {','.join(SETS)}")
    parser.add_argument("--extractors", default=",".join(EXTRACTORS),
                        help=f"comma-separated subset of {','.join(EXTRACTORS)}")
    parser.add_argument("--misses", metavar="NAME", help="print the snippets this extractor got wrong")
    parser.add_argument("--regressions", metavar="NAME",
                        help="list pages where this extractor loses >= 0.2 F1 against --against")
    parser.add_argument("--against", default="resiliparse", choices=sorted(EXTRACTORS),
                        help="the extractor --regressions compares with (default: resiliparse alone)")
    args = parser.parse_args()

    names = args.extractors.split(",")
    for set_name in args.sets.split(","):
        pages = LOADERS[set_name]()
        print(f"\n{set_name}: {len(pages)} pages")
        header = f"{'extractor':<22}{'P':>7}{'R':>7}{'F1':>7}{'pages/cpu-s':>13}{'ms/page':>9}"
        print(header + "\n" + "-" * len(header))
        texts_by_name = {}
        for name in names:
            texts, rate = run(name, pages)
            texts_by_name[name] = texts
            m = score(pages, texts)
            print(f"{name:<22}{m['precision']:>7.3f}{m['recall']:>7.3f}{m['f1']:>7.3f}{rate:>13.0f}"
                  f"{1000 / rate:>9.2f}", flush=True)
            if name == "corpusmill":
                sources = Counter(kept_units(page["html"])[1] for page in pages)
                for source in (FROM_WHOLE_PAGE, FROM_ARTICLE_RUN):
                    print(f"{'':<4}{source} taken for the main content on {sources[source]} pages"
                          f" ({sources[source] / len(pages):.1%})")
            if name == args.misses:
                print_misses(pages, texts)
        if args.regressions:
            baseline = texts_by_name.get(args.against) or run(args.against, pages)[0]
            texts = texts_by_name.get(args.regressions) or run(args.regressions, pages)[0]
            print_regressions(args.regressions, args.against, pages, texts, baseline)


if __name__ == "__main__":
    main()
