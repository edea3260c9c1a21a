"""A declared charset is checked against the bytes: a page declared in the wrong single-byte charset
is decoded by its own or rejected as charset_mismatch, never kept as mojibake; a correctly declared
page decodes as it did. The same on 532 languages: ``python -m bench.quality.charset_check``."""
import gzip
import io

import pytest

from udfs.extract.html import CharsetMismatch, decode_html
from udfs.extract.warc import ExtractConfig, WarcDocumentReader

RU = ("Все люди рождаются свободными и равными в своем достоинстве и правах. Они наделены разумом и "
      "совестью и должны поступать в отношении друг друга в духе братства.")
ZH = "人人生而自由，在尊严和权利上一律平等。他们赋有理性和良心，并应以兄弟关系的精神相对待。"
FR = "Tous les êtres humains naissent libres et égaux en dignité et en droits. Ils sont doués de raison."
PL = "Wszyscy ludzie rodzą się wolni i równi pod względem swej godności i swych praw. Są oni obdarzeni rozumem."
EL = "Όλοι οι άνθρωποι γεννιούνται ελεύθεροι και ίσοι στην αξιοπρέπεια και τα δικαιώματα."
TR = "Bütün insanlar hür, haysiyet ve haklar bakımından eşit doğarlar. Akıl ve vicdana sahiptirler."
JA = "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。"


def page(text: str) -> str:
    return f"<html><head><title>UDHR</title></head><body><p>{text}</p></body></html>"


@pytest.mark.parametrize("text, encoded_in, declared, decoded_by", [
    (RU, "cp1251", "iso-8859-1", "cp1251"),
    (ZH, "gbk", "latin-1", "gb18030"),
    (RU, "koi8_r", "windows-1251", "koi8-r"),
])
def test_a_wrongly_declared_page_is_decoded_by_its_own_charset(text, encoded_in, declared, decoded_by):
    html = page(text)
    assert decode_html(html.encode(encoded_in), declared) == (html, decoded_by)


@pytest.mark.parametrize("text, charset, codec", [
    (RU, "windows-1251", "cp1251"), (RU, "koi8-r", "koi8-r"), (RU, "iso-8859-5", "iso8859-5"),
    (ZH, "gbk", "gb18030"), (FR, "iso-8859-1", "cp1252"), (PL, "iso-8859-2", "iso8859-2"),
    (PL, "windows-1250", "cp1250"), (EL, "windows-1253", "cp1253"), (TR, "windows-1254", "cp1254"),
    (JA, "shift_jis", "cp932"), (JA, "euc-jp", "euc_jp"), (FR, "utf-8", "utf-8"),
])
def test_a_correctly_declared_page_decodes_as_declared(text, charset, codec):
    html = page(text)
    assert decode_html(html.encode(codec), charset) == (html, codec)


def damaged_gbk_page() -> bytes:
    """Chinese in GBK with every ninth byte lost: GBK no longer decodes it, Latin-1 gives mojibake."""
    gbk = ZH.encode("gbk") * 3
    return b"<html><body><p>" + bytes(b for i, b in enumerate(gbk) if i % 9 != 4) + b"</p></body></html>"


def test_a_page_no_charset_reads_is_a_mismatch():
    with pytest.raises(CharsetMismatch, match=r"^cp1252 \(detected: gb18030\)$"):
        decode_html(damaged_gbk_page(), "iso-8859-1")


def warc_record(payload: bytes, content_type: str, n: int) -> bytes:
    http = (f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(payload)}\r\n\r\n"
            .encode() + payload)
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{n:08d}-0000-0000-0000-000000000000>\r\n"
            f"WARC-Date: 2026-12-06T00:00:00Z\r\nWARC-Target-URI: http://example.ru/{n}\r\n"
            f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(http)}\r\n\r\n").encode()
    return gzip.compress(head + http + b"\r\n\r\n")


def test_the_reader_keeps_the_right_text_and_counts_the_mismatch():
    records = [warc_record(page(RU).encode("cp1251"), "text/html; charset=ISO-8859-1", 1),
               warc_record(damaged_gbk_page(), "text/html; charset=ISO-8859-1", 2)]
    rows = list(WarcDocumentReader(ExtractConfig()).read("x.warc.gz", lambda: io.BytesIO(b"".join(records))))
    assert [(r["_outcome"], r["charset"], r["reject_rule"]) for r in rows] == [
        ("kept", "cp1251", None), ("rejected", None, "charset_mismatch")]
    assert rows[0]["text"].startswith("Все люди рождаются")
    assert rows[1]["reject_value"] == "cp1252 (detected: gb18030)"
