"""Real documents of five domains from ../shared/data/corpora, with URLs like the crawl would give them.

Used by the mix, pack and loader tests (skips when shared data is absent). Each document is a dict with
``id``, ``url``, ``host``, ``source``, ``text`` and ``expected`` (the domain conf/mix.yaml should give it).
"""
from __future__ import annotations

import hashlib
import re
from typing import Dict, List

from conftest import shared


def _doc(domain: str, url: str, text: str, source: str) -> Dict[str, str]:
    host = re.match(r"https?://([^/]+)", url).group(1)
    return {"id": hashlib.sha1(url.encode()).hexdigest()[:32], "url": url, "host": host,
            "source": source, "text": text.strip(), "expected": domain}


def wiki_articles(limit: int = 97, max_chars: int = 20000) -> List[dict]:
    xml = shared("corpora/en/enwiki-head-articles.xml").read_text(encoding="utf-8")
    pages = re.findall(r"<title>(.*?)</title>.*?<text[^>]*>(.*?)</text>", xml, flags=re.S)
    return [_doc("wiki", f"https://en.wikipedia.org/wiki/{title.replace(' ', '_')}", text[:max_chars],
                 "file:/crawl/CC-MAIN-wiki.warc.gz")
            for title, text in pages[:limit] if text.strip()]


def book_parts(limit: int = 400, part_chars: int = 3000) -> List[dict]:
    """Gutenberg books cut into parts of whole paragraphs (~part_chars), as a book site serves pages."""
    docs = []
    for name in ("austen-emma", "melville-moby_dick", "chesterton-thursday", "austen-persuasion"):
        paragraphs = shared(f"corpora/en/gutenberg/{name}.txt").read_text(encoding="latin-1").split("\n\n")
        part: List[str] = []
        for paragraph in paragraphs:
            part.append(paragraph)
            if sum(map(len, part)) >= part_chars:
                docs.append(_doc("books", f"https://www.gutenberg.org/ebooks/{name}/part-{len(docs)}",
                                 "\n\n".join(part), "file:/crawl/CC-MAIN-books.warc.gz"))
                part = []
    return docs[:limit]


def news_articles(limit: int = 200, lines_per_article: int = 8) -> List[dict]:
    lines = [l for l in shared("corpora/zh/peoples-daily-1998-01.txt").read_text(encoding="utf-8").splitlines()
             if l.strip()]
    groups = ["\n\n".join(lines[i:i + lines_per_article]) for i in range(0, len(lines), lines_per_article)]
    return [_doc("news", f"http://www.people.com.cn/GB/1998/01/{i}.html", g, "file:/crawl/CC-MAIN-zh.warc.gz")
            for i, g in enumerate(groups[:limit])]


def forum_threads(limit: int = 300) -> List[dict]:
    text = shared("corpora/low/webtext/overheard").read_text(encoding="latin-1")
    threads = [t for t in text.split("\n\n") if t.strip()]
    return [_doc("forum", f"https://www.reddit.com/r/overheard/comments/{i}/", t, "file:/crawl/CC-MAIN-forum.warc.gz")
            for i, t in enumerate(threads[:limit])]


def web_pages(limit: int = 400, reviews_per_page: int = 3) -> List[dict]:
    lines = [l for l in shared("corpora/zh/reviews-pos.txt").read_text(encoding="utf-8").splitlines() if l.strip()]
    lines += [l for l in shared("corpora/low/webtext/wine").read_text(encoding="latin-1").splitlines() if l.strip()]
    pages = ["\n".join(lines[i:i + reviews_per_page]) for i in range(0, len(lines), reviews_per_page)]
    return [_doc("web", f"https://shop{i % 7}.example.com/item/{i}/reviews", p, "file:/crawl/CC-MAIN-web.warc.gz")
            for i, p in enumerate(pages[:limit])]


def all_domains() -> List[dict]:
    return wiki_articles() + book_parts() + news_articles() + forum_threads() + web_pages()
