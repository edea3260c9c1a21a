"""HTML payload → main text: charset decoding and main-content extraction."""
from __future__ import annotations

import codecs
import re
from typing import Optional, Tuple

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import detect_encoding
from resiliparse.parse.html import HTMLTree

from udfs.boilerplate import drop_boilerplate_lines, furniture_selector

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
# Declared labels that browsers decode with a superset codec (WHATWG encoding standard).
_SUPERSETS = {
    "gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030", "gb_2312-80": "gb18030",
    "big5": "big5hkscs", "shift_jis": "cp932", "sjis": "cp932", "x-sjis": "cp932",
    "euc-kr": "cp949", "iso-8859-1": "cp1252", "latin1": "cp1252", "latin-1": "cp1252",
    "us-ascii": "cp1252", "ascii": "cp1252", "tis-620": "cp874", "iso-8859-9": "cp1254",
}
# A page may carry a few broken bytes; beyond this share of replacement characters it is garbage.
MAX_REPLACEMENT_FRACTION = 0.005


def _codec(label: Optional[str]) -> Optional[str]:
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    label = _SUPERSETS.get(label, label)
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def charset_from_content_type(content_type: Optional[str]) -> Optional[str]:
    if not content_type:
        return None
    match = re.search(r"charset\s*=\s*([^\s;]+)", content_type, re.I)
    return match.group(1) if match else None


def decode_html(payload: bytes, http_charset: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    """Decode with the declared charset (HTTP, then <meta>), falling back to detection.

    Returns ``(text, codec)``; ``(None, None)`` when no candidate decodes cleanly enough.
    """
    meta = _META_CHARSET.search(payload[:4096])

    def candidates():  # lazily: detection runs only when no declared charset decodes the page
        yield _codec(http_charset)
        yield _codec(meta.group(1).decode("ascii", "ignore") if meta else None)
        yield _codec(detect_encoding(payload[:65536]))
        yield "utf-8"

    tried = []
    for codec in candidates():
        if codec and codec not in tried:
            tried.append(codec)
            try:
                return payload.decode(codec), codec
            except UnicodeDecodeError:
                continue
    for codec in tried:
        text = payload.decode(codec, errors="replace")
        if text.count("\ufffd") <= MAX_REPLACEMENT_FRACTION * max(len(text), 1):
            return text, codec
    return None, None


# resiliparse's main-content mode without comments, alt texts, list bullets, form fields, noscript.
_MAIN_CONTENT = dict(main_content=True, alt_texts=False, links=False, list_bullets=False, comments=False,
                     form_fields=False, noscript=False)
# An extract this short after the element pass is checked against one without it (see below).
SHORT_EXTRACT_CHARS = 500


def extract_main_text(html: str, extractor: str = "resiliparse", boilerplate_filter: bool = True) -> str:
    """Main content of a page as plain text, paragraphs separated by newlines.

    resiliparse's main-content mode, with the boilerplate filter's element pass on the same parsed
    tree and its line pass on the result (``udfs/boilerplate.py``).
    """
    if extractor == "trafilatura":
        import trafilatura

        text = trafilatura.extract(html, include_comments=False, include_tables=True) or ""
        return drop_boilerplate_lines(text) if boilerplate_filter else text
    tree = HTMLTree.parse(html)
    if not boilerplate_filter:
        return extract_plain_text(tree, **_MAIN_CONTENT)
    text = extract_plain_text(tree, skip_elements=[furniture_selector(html)], **_MAIN_CONTENT)
    if len(text) < SHORT_EXTRACT_CHARS:
        # Some pages name their content like furniture (a forum whose posts are "comments", report
        # sections with an "ads" modifier); when the element pass took nearly everything, undo it.
        without = extract_plain_text(tree, **_MAIN_CONTENT)
        if len(without) > 3 * len(text):
            text = without
    return drop_boilerplate_lines(text)
