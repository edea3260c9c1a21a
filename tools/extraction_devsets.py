"""The two main-content extraction development sets and their scoring, shared by
``bench/quality/extraction_quality.py`` and ``tools/train_block_classifier.py``.

- ``../shared/data/html/trafilatura-eval/`` (990 pages, many languages): ``evaldata.json`` lists,
  per page, snippets that must appear in the main text (``with``) and snippets that must not
  (``without``). Scored the way trafilatura's own evaluation does: a ``with`` snippet found is a true
  positive, missing a false negative; a ``without`` snippet found is a false positive; counts pooled
  over pages.
- ``../shared/data/html/readability-tests/`` (130 pages of Mozilla Readability's test suite): the
  gold text is the article Readability keeps (``expected.html``); scored by word 4-gram overlap
  (precision: share of the extract's 4-grams found in the gold text; recall: share of the gold's
  found in the extract), averaged over pages, F1 of the two averages.

Pages are decoded with the extract stage's ``decode_html`` so every extractor sees the same text.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from typing import List

from tools.fixtures.shared_data import SHARED_DATA
from udfs.extract.html import decode_html

HTML_DIR = SHARED_DATA / "html"
SETS = ("trafilatura-eval", "readability")


def load_trafilatura_eval() -> List[dict]:
    """[{name, html, with, without}]."""
    root = HTML_DIR / "trafilatura-eval"
    pages = []
    for item in json.loads((root / "evaldata.json").read_text(encoding="utf-8")).values():
        path = root / "cache" / item["file"]
        html, _ = decode_html((path if path.exists() else root / "eval" / item["file"]).read_bytes(), None)
        pages.append({"name": item["file"], "html": html or "", "with": item["with"], "without": item["without"]})
    return pages


def gold_text(expected_html: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(expected_html, main_content=False, alt_texts=False, links=False, list_bullets=False)


def load_readability() -> List[dict]:
    """[{name, html, gold_tokens, gold}]: each test page with the article Readability keeps."""
    root = HTML_DIR / "readability-tests"
    pages = []
    for folder in sorted(p for p in root.iterdir() if (p / "source.html").exists()):
        html, _ = decode_html((folder / "source.html").read_bytes(), None)
        tokens = tokens_of(gold_text((folder / "expected.html").read_text(encoding="utf-8")))
        pages.append({"name": folder.name, "html": html or "", "gold_tokens": tokens, "gold": shingles(tokens)})
    return pages


LOADERS = {"trafilatura-eval": load_trafilatura_eval, "readability": load_readability}

# Words, and each CJK character as a word of its own (those scripts put no spaces between words).
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]|\w+")


def tokens_of(text: str) -> List[str]:
    return _TOKEN.findall(text.lower())


def shingles(tokens: List[str], n: int = 4) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(max(len(tokens) - n + 1, 0)))


def page_scores(page: dict, text: str) -> dict:
    """Precision, recall and the counts behind them for one extract."""
    if "gold" in page:
        got, gold = shingles(tokens_of(text)), page["gold"]
        overlap = sum((got & gold).values())
        precision = overlap / sum(got.values()) if got else (1.0 if not gold else 0.0)
        recall = overlap / sum(gold.values()) if gold else 1.0
        return {"precision": precision, "recall": recall, "tp": overlap, "fp": sum(got.values()) - overlap,
                "fn": sum(gold.values()) - overlap}
    tp = sum(snippet in text for snippet in page["with"])
    fp = sum(snippet in text for snippet in page["without"])
    fn = len(page["with"]) - tp
    return {"precision": tp / (tp + fp) if tp + fp else 1.0, "recall": tp / (tp + fn) if tp + fn else 1.0,
            "tp": tp, "fp": fp, "fn": fn}


def f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def score(pages: List[dict], texts: List[str]) -> dict:
    """Snippet sets: counts pooled over pages (trafilatura's evaluation). Gold-text sets: per-page
    precision and recall averaged (long pages would otherwise outweigh the rest)."""
    per_page = [page_scores(page, text) for page, text in zip(pages, texts)]
    if pages and "gold" in pages[0]:
        precision = sum(s["precision"] for s in per_page) / len(per_page)
        recall = sum(s["recall"] for s in per_page) / len(per_page)
    else:
        tp, fp, fn = (sum(s[k] for s in per_page) for k in ("tp", "fp", "fn"))
        precision, recall = tp / (tp + fp) if tp + fp else 0.0, tp / (tp + fn) if tp + fn else 0.0
    return {"precision": precision, "recall": recall, "f1": f1(precision, recall)}
