"""The compiled quality signals (udfs/filter/_quality_signals.pyx) give the Python reference's values, signal
by signal, on the shared corpora and on constructed edge cases; the filter uses the compiled code; a
build without it stops with an ImportError that says how to build it.

Tolerance: counts, booleans and nulls exactly; ratios within 1e-9 relative (both divide the same
integers, so they agree to the last bit in practice).
"""
import importlib.machinery
import random
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT, shared
from udfs.filter import quality
from udfs.filter.rules import FilterConfig
from udfs.extract.text import normalize_text

RELATIVE_TOLERANCE = 1e-9
EN_STOP_WORDS = frozenset(FilterConfig().stop_words["en"])
ZH_STOP_WORDS = frozenset({"的", "了", "是", "在", "我"})


def differences(expected: dict, got: dict) -> list:
    """(signal, reference value, compiled value) for every signal outside the tolerance."""
    wrong = [(name, value, got.get(name, "missing")) for name, value in expected.items()
             if not _same(value, got.get(name, "missing"))]
    return wrong + [(name, "extra", got[name]) for name in got.keys() - expected.keys()]


def _same(expected, got) -> bool:
    if isinstance(expected, float) and isinstance(got, float):
        return abs(expected - got) <= RELATIVE_TOLERANCE * abs(expected)
    return type(expected) is type(got) and expected == got


def assert_same_signals(docs):
    """docs: (name, text, stop words) triples."""
    mismatched = []
    for name, text, stop_words in docs:
        wrong = differences(quality.compute_signals_reference(text, stop_words),
                            quality.compute_signals(text, stop_words))
        if wrong:
            mismatched.append((name, wrong[:4]))
    assert not mismatched, f"{len(mismatched)} of {len(docs)} documents differ, first: {mismatched[:3]}"


def chunks(items, size):
    return ["\n".join(items[i:i + size]) for i in range(0, len(items), size)]


def corpus_docs():
    """Books (hard-wrapped), wiki markup, news, chat, spam, forum and reviews in English and Chinese."""
    docs = []
    for path in sorted(shared("corpora/en/gutenberg").glob("*.txt")):
        lines = path.read_text(encoding="latin-1").splitlines()
        docs += [(f"{path.name}:{i}", text, EN_STOP_WORDS) for i, text in enumerate(chunks(lines, 150)[:25])]
    wiki = shared("corpora/en/enwiki-head-articles.xml").read_text(encoding="utf-8").split("</page>")
    docs += [(f"enwiki:{i}", page[:30000], EN_STOP_WORDS) for i, page in enumerate(wiki)]
    for rel in ("corpora/zh/peoples-daily-1998-01.txt", "corpora/zh/reviews-pos.txt", "corpora/zh/reviews-neg.txt"):
        lines = shared(rel).read_text(encoding="utf-8").splitlines()
        docs += [(f"{rel}:{i}", text, ZH_STOP_WORDS) for i, text in enumerate(chunks(lines, 12)[:150])]
    for rel in ("corpora/low/sms-spam-collection.tsv", "corpora/low/webtext/overheard",
                "corpora/low/webtext/singles", "corpora/low/webtext/wine"):
        lines = shared(rel).read_text(encoding="latin-1").splitlines()
        docs += [(f"{rel}:{i}", text, EN_STOP_WORDS) for i, text in enumerate(chunks(lines, 20)[:150])]
    with zipfile.ZipFile(shared("corpora/low/nps_chat.zip")) as archive:
        names = sorted(n for n in archive.namelist() if n.endswith(".xml"))[:10]
        docs += [(name, archive.read(name).decode("utf-8", "replace")[:20000], EN_STOP_WORDS) for name in names]
    return docs


def udhr_docs():
    """The Universal Declaration in ~300 languages and scripts (Thai, Khmer, Tibetan, Devanagari, ...)."""
    docs = []
    for path in sorted(shared("corpora/multilingual/udhr").iterdir()):
        encoding = "latin-1" if path.name.endswith("-Latin1") else "utf-8"
        docs.append((path.name, path.read_bytes().decode(encoding, "replace"), None))
    with zipfile.ZipFile(shared("corpora/multilingual/udhr2.zip")) as archive:
        docs += [(name, archive.read(name).decode("utf-8", "replace"), None)
                 for name in sorted(archive.namelist()) if not name.endswith("/")]
    return docs


def web_page_docs():
    """The trafilatura evaluation pages: their main text (resiliparse's own extraction, so the
    documents do not move with udfs/extract/html.py), and the raw HTML's first 20,000 characters."""
    from resiliparse.extract.html2text import extract_plain_text

    docs = []
    for page in sorted(shared("html/trafilatura-eval").glob("*/*.html")):
        html = page.read_bytes().decode("utf-8", "replace")
        docs.append((page.name, normalize_text(extract_plain_text(html, main_content=True)), EN_STOP_WORDS))
        if len(docs) % 4 == 0:
            docs.append((f"{page.name} (HTML)", html[:20000], EN_STOP_WORDS))
    return docs


@pytest.mark.slow  # the reference on ~2,000 documents
def test_compiled_signals_match_the_reference_on_the_shared_corpora():
    docs = corpus_docs() + udhr_docs()
    assert len(docs) > 1500
    assert_same_signals(docs)


@pytest.mark.slow  # the reference on ~2,000 documents
def test_compiled_signals_match_the_reference_on_web_pages():
    docs = web_page_docs()
    assert len(docs) > 1000
    assert_same_signals(docs)


# Characters where the two could part: each branch of the sentence-end pattern, closing quotes,
# Python's whitespace against the regex module's (\x1c is one, not the other), characters whose lower
# case is ASCII (KELVIN SIGN, dotted capital I), unsegmented scripts with combining marks, C4's
# markers and the glosses its brace rule lets through, a word over C4's 1,000-character limit, a lone
# surrogate, Ethiopic wordspaces (two in a row are a full stop) beside the Ethiopic full stop, and wide
# characters beside halfwidth ones (a short line is measured in display columns).
EDGE_PIECES = list("ab cAB.,;!?…'\"”)」』）。！？｡．\n\n \t-•#{}0123456789\x1c\x85\u2028\u3000\u00a0"
                   "\u212aİk我爱北京ไทยั्ँ\u0301:/%$€😀\ud800፡።ሰብ한かｶ") + ["፡፡",
    "...", "javascript", "JavaScript", "lorem ipsum", "Terms of Use", "privacy policy", "uses cookies",
    "the ", "THE ", " and", "\n\n", " \n \n", "\u212aookies", "x" * 1001,
    "{gloss}", " {a gloss-word} ", "{l’a}", "\\", "x^", "=", "\u2026"]


def test_compiled_signals_match_the_reference_on_constructed_edge_cases():
    rng = random.Random(20261201)
    docs = []
    for i in range(6000):
        pieces = rng.sample(EDGE_PIECES, rng.randint(2, 12))
        text = "".join(rng.choice(pieces) for _ in range(rng.choice((1, 3, 10, 40, 200))))
        docs.append((f"edge {i}: {text[:60]!r}", text, rng.choice((None, EN_STOP_WORDS, frozenset({"k", "i̇"})))))
    docs += [("empty", "", EN_STOP_WORDS), ("blank", " \n\t\n ", EN_STOP_WORDS)]
    assert_same_signals(docs)


def test_the_filter_uses_the_compiled_signals():
    import udfs.filter.rules

    assert udfs.filter.rules.compute_signals is quality.compute_signals
    module = quality._quality_signals
    assert module.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    names, computer = quality._compiled_signals()
    assert isinstance(computer, module.SignalComputer)
    assert names == tuple(quality.compute_signals_reference("the end"))


@pytest.mark.service  # a fresh interpreter
def test_a_build_without_the_extension_says_how_to_build_it(tmp_path):
    """udfs/ shipped or checked out without the compiled module: importing the signals fails loudly
    (never a silent fall-back to the much slower Python) and names the install step."""
    for name in ("__init__.py", "common/__init__.py", "common/table_cache.py", "common/worker.py", "filter/__init__.py",
                 "filter/quality.py"):
        (tmp_path / "udfs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "udfs" / name).write_bytes((ROOT / "udfs" / name).read_bytes())
    result = subprocess.run([sys.executable, "-c", "import udfs.filter.quality"], cwd=tmp_path,
                            env={"PYTHONPATH": str(tmp_path)}, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "ImportError: corpusmill's compiled quality signals" in result.stderr
    assert "pip install -e ." in result.stderr
