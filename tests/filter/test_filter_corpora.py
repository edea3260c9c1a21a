"""The default rules on real text: good prose and news kept, spam, chat and repeated text rejected
for the right reason, Chinese not rejected as "too few words"."""
import html
import re
import zipfile
from collections import Counter

import pytest

from conftest import shared
from udfs.filter.rules import DocumentFilter, FilterConfig
from udfs.extract.warc import ExtractConfig, WarcDocumentReader


@pytest.fixture(scope="module")
def doc_filter():
    return DocumentFilter(FilterConfig())


def outcome(doc_filter, texts):
    columns = doc_filter.apply(texts)
    kept = columns["_outcome"].count("kept") / len(texts)
    return kept, Counter(r for r in columns["reject_rule"] if r), columns


def gutenberg_docs(name: str, paragraphs_per_doc: int = 6, limit: int = 60):
    """Paragraphs unwrapped (Gutenberg hard-wraps lines at ~70 characters; web text does not)."""
    text = shared(f"corpora/en/gutenberg/{name}.txt").read_text(encoding="utf-8", errors="replace")
    paragraphs = [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
    docs = ["\n\n".join(paragraphs[i:i + paragraphs_per_doc])
            for i in range(0, len(paragraphs), paragraphs_per_doc)]
    return docs[len(docs) // 4:][:limit]  # skip the front matter


def wikipedia_docs():
    """Prose paragraphs of the articles, wiki markup stripped, four paragraphs per document."""
    xml = shared("corpora/en/enwiki-head-articles.xml").read_text(encoding="utf-8")
    docs = []
    for raw in re.findall(r"<text[^>]*>(.*?)</text>", xml, re.S):
        text = html.unescape(raw)
        text = re.sub(r"<ref[^>]*/>|<ref.*?</ref>|<!--.*?-->", "", text, flags=re.S)
        for _ in range(3):
            text = re.sub(r"\{\{[^{}]*\}\}", "", text)
        text = re.sub(r"\[\[(?:[^\]|]*\|)?([^\]]*)\]\]", r"\1", text)
        text = re.sub(r"'{2,}|<[^>]+>", "", text)
        paragraphs = [p.strip() for p in text.split("\n")
                      if len(p.strip()) > 150 and p.strip()[0].isalpha() and ":" not in p.strip()[:10]]
        docs += ["\n\n".join(paragraphs[i:i + 4]) for i in range(0, len(paragraphs) - 3, 4)]
    return docs


@pytest.mark.parametrize("book", ["austen-emma", "chesterton-brown", "melville-moby_dick"])
def test_gutenberg_prose_is_mostly_kept(doc_filter, book):
    kept, reasons, columns = outcome(doc_filter, gutenberg_docs(book))
    assert kept >= 0.9, reasons
    assert set(columns["lang"]) == {"en"}


def test_wikipedia_paragraphs_are_mostly_kept(doc_filter):
    docs = wikipedia_docs()
    assert len(docs) >= 30
    kept, reasons, _ = outcome(doc_filter, docs)
    assert kept >= 0.85, reasons


def test_sms_messages_are_rejected_as_too_short(doc_filter):
    lines = shared("corpora/low/sms-spam-collection.tsv").read_text(encoding="utf-8").splitlines()[1:]
    messages = [line.split("\t", 1)[1] for line in lines[:400]]
    kept, reasons, _ = outcome(doc_filter, messages)
    assert kept <= 0.03
    assert reasons.most_common(1)[0][0] == "gopher_short_doc"


def test_chat_logs_are_rejected_by_line_and_repetition_rules(doc_filter):
    posts = []
    with zipfile.ZipFile(shared("corpora/low/nps_chat.zip")) as archive:
        for name in sorted(n for n in archive.namelist() if n.endswith(".xml"))[:4]:
            xml = archive.read(name).decode("utf-8", "replace")
            posts += [html.unescape(re.sub(r"<[^>]+>", "", p)).strip()
                      for p in re.findall(r"<Post [^>]*>(.*?)</Post>", xml, re.S)]
    docs = ["\n".join(posts[i:i + 20]) for i in range(0, len(posts), 20)][:100]
    kept, reasons, _ = outcome(doc_filter, docs)
    assert kept <= 0.2, reasons
    line_or_repetition = sum(n for rule, n in reasons.items()
                             if rule.startswith(("fineweb_", "gopher_top_", "gopher_dup_")))
    assert line_or_repetition >= 0.6 * sum(reasons.values()), reasons


def test_keyword_stuffing_and_pasted_text_are_rejected_as_repetition(doc_filter):
    paragraph = gutenberg_docs("austen-emma", paragraphs_per_doc=1)[10]
    offers, cities = ["cheap flights", "cheap hotels", "cheap car hire"], ["London", "Paris", "Rome", "Berlin"]
    stuffed = " ".join(f"Book the {offers[i % 3]} to {cities[i % 4]} and the {offers[(i + 1) % 3]} with the best price."
                       for i in range(24))
    pasted = "\n\n".join([paragraph] * 4)
    columns = doc_filter.apply([stuffed, pasted])
    assert columns["reject_rule"][0].startswith(("gopher_top_", "gopher_dup_")), columns["failed_rules"][0]
    assert columns["reject_rule"][1] in ("gopher_dup_lines", "gopher_dup_paragraphs"), columns["failed_rules"][1]
    assert columns["reject_value"][1] == pytest.approx(0.75)  # 3 of 4 lines/paragraphs repeat


def test_peoples_daily_news_is_kept(doc_filter):
    lines = shared("corpora/zh/peoples-daily-1998-01.txt").read_text(encoding="utf-8").splitlines()
    docs = ["\n".join(lines[i:i + 10]) for i in range(0, 2000, 10)]
    kept, reasons, columns = outcome(doc_filter, docs)
    assert kept >= 0.85, reasons
    assert columns["lang"].count("zh") >= 0.98 * len(docs)
    assert reasons["gopher_short_doc"] <= 0.02 * len(docs) and "gopher_mean_word_length" not in reasons


def test_clueweb_chinese_pages_are_not_rejected_for_too_few_words(doc_filter):
    path = shared("warc/clueweb09-zh-sample.warc.gz")
    reader = WarcDocumentReader(ExtractConfig())
    texts = [row["text"] for row in reader.read(str(path), lambda: open(path, "rb")) if row["_outcome"] == "kept"]
    assert len(texts) >= 80
    kept, reasons, columns = outcome(doc_filter, texts)
    # Words of Chinese text are counted by the segmenter, not by spaces: the pages rejected as short
    # are the near-empty ones (a copyright line, a pager), never pages with a paragraph of text.
    short = [len(text) for text, rule in zip(texts, columns["reject_rule"]) if rule == "gopher_short_doc"]
    assert len(short) <= 0.15 * len(texts) and max(short, default=0) < 200, (reasons, short)
    assert columns["lang"].count("zh") >= 0.9 * len(texts)
    assert kept > 0  # a navigation-heavy sample: most pages fail line and repetition rules
