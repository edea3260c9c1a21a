"""Unicode normalisation and charset decoding on plain values."""
from udfs.html import charset_from_content_type, decode_html
from udfs.text import normalize_text


def test_normalize_nfc_controls_zero_width_and_whitespace():
    raw = "Cafe\u0301\u200b  menu\t\x07ok\r\n\r\n\r\n  second\u00a0 para  \u2028third"
    assert normalize_text(raw) == "Caf\u00e9 menu ok\n\nsecond para\nthird"


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
