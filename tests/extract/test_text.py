"""Unicode normalisation and charset decoding on plain values; the compiled space folding gives the
Python reference's text on real pages, on the UDHR in ~330 languages and on random spacing."""
import random

from conftest import shared
from udfs.extract.html import charset_from_content_type, decode_html, extract_main_text
from udfs.extract.text import normalize_text, normalize_text_reference

# Every kind of character the folding treats apart: spaces of many kinds, the line separators, the
# dropped controls and zero-width marks, letters that NFC composes, a lone surrogate, astral ones.
TRICKY = list("ab \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u200a\u200b\u200d\u2028\u2029\u202f\u205f"
              "\u3000\ufeff\x00\x7f\x9f\xad\u202a\u2060\u03a3e\u0301") + ["\ud800", "\U0001f600", "\U000e0001"]


def test_normalize_nfc_controls_zero_width_and_whitespace():
    raw = "Cafe\u0301\u200b  menu\t\x07ok\r\n\r\n\r\n  second\u00a0 para  \u2028third"
    assert normalize_text(raw) == "Caf\u00e9 menu ok\n\nsecond para\nthird"


def test_normalize_joins_words_broken_by_soft_hyphens():
    broken = "Schon im Mit\xadtel\xadal\xadter war der Wein be\xadkannt."
    assert normalize_text(broken) == "Schon im Mittelalter war der Wein bekannt."


def test_normalize_collapses_every_unicode_space_within_lines():
    assert normalize_text("a\u1680\u2000\u200a b\u202f\u205f\u3000c\t\xa0\n\u3000 d \u2003\n\n\n\x85e") == "a b c\nd\n\ne"


def test_normalize_keeps_single_line_breaks_and_cjk():
    assert normalize_text("第一行\n第二行\ufeff") == "第一行\n第二行"


def test_decode_declared_gb2312_uses_gb18030_superset():
    payload = "<html><body>中文网页，包括生僻字：镕</body></html>".encode("gb18030")
    text, codec = decode_html(payload, "gb2312")
    assert codec == "gb18030" and "镕" in text


def test_decode_meta_charset_when_http_header_has_none():
    payload = '<meta charset="big5"><p>繁體中文測試</p>'.encode("big5")
    text, codec = decode_html(payload, None)
    assert "繁體中文測試" in text and codec == "big5hkscs"


def test_decode_wrong_declaration_falls_back_to_a_clean_candidate():
    payload = "<p>naïve café, 東京</p>".encode("utf-8")
    text, codec = decode_html(payload, "ascii")
    assert "東京" in text and codec == "utf-8"


def test_charset_from_content_type():
    assert charset_from_content_type('text/html; charset="GBK"') == '"GBK"'
    assert charset_from_content_type("text/html") is None


def test_compiled_folding_gives_the_reference_text_on_real_pages_and_languages():
    pages = sorted(shared("html/trafilatura-eval/cache").glob("*.html")) + sorted(
        shared("html/readability-tests").glob("*/source.html"))
    texts = [extract_main_text(path.read_text(encoding="utf-8", errors="replace")) for path in pages]
    texts += [path.read_text(encoding="utf-8", errors="replace")  # raw: CRLF lines, indents, odd spaces
              for path in sorted(shared("corpora/multilingual/udhr").glob("*-UTF8"))]
    assert len(texts) > 300
    differing = [i for i, text in enumerate(texts) if normalize_text(text) != normalize_text_reference(text)]
    assert not differing, f"{len(differing)} of {len(texts)} texts differ, first at {differing[:5]}"


def test_compiled_folding_gives_the_reference_text_on_random_spacing():
    rng = random.Random(7)
    texts = ["".join(rng.choice(TRICKY) for _ in range(rng.randint(0, 30))) for _ in range(30000)]
    differing = [text for text in texts if normalize_text(text) != normalize_text_reference(text)]
    assert not differing, f"{len(differing)} differ, e.g. {differing[:3]!r}"
