"""HTML payload → main text: charset decoding and main-content extraction."""
from __future__ import annotations

import codecs
import re
from functools import lru_cache
from pathlib import Path
from typing import List, Optional, Tuple

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import detect_encoding
from resiliparse.parse.html import HTMLTree

from udfs.boilerplate import BlockModel, Unit, drop_boilerplate_lines, furniture_selector, units_of

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
# The same as minimal HTML: paragraphs, headings and links marked for the block pass.
_MAIN_CONTENT_HTML = dict(_MAIN_CONTENT, preserve_formatting="minimal_html", links=True)
# The element pass is undone where it removed more than this share of the main content's text.
MAX_FURNITURE_SHARE = 0.5
BLOCK_MODEL_PATH = Path(__file__).resolve().parent / "models" / "block_classifier.json"


@lru_cache(maxsize=1)
def block_model() -> BlockModel:
    return BlockModel.load(BLOCK_MODEL_PATH)


def main_content_units(html: str) -> List[Unit]:
    """resiliparse's main content as text units, after the element pass of the boilerplate filter.

    Some pages name their content like furniture (a forum whose posts are "comments", an article
    inside a "comments-area" wrapper, report sections with an "ads" modifier): where the element pass
    took most of the text — measured against the plain main-content extract, the cheapest to make —
    it is undone and the block pass alone decides.
    """
    tree = HTMLTree.parse(html)
    units = units_of(extract_plain_text(tree, skip_elements=[furniture_selector(html)], **_MAIN_CONTENT_HTML))
    unfiltered_chars = len(extract_plain_text(tree, preserve_formatting=False, **_MAIN_CONTENT))
    if sum(u.chars for u in units) < (1 - MAX_FURNITURE_SHARE) * unfiltered_chars:
        return units_of(extract_plain_text(tree, **_MAIN_CONTENT_HTML))
    return units


def join_units(units: List[Unit]) -> str:
    """Paragraphs and headings apart by a blank line, consecutive lines of plain text by a newline."""
    parts = []
    for previous, unit in zip([None] + units, units):
        if previous is not None:
            parts.append("\n" if previous.kind == unit.kind == "text" else "\n\n")
        parts.append(unit.text)
    return "".join(parts)


def extract_main_text(html: str, extractor: str = "resiliparse", boilerplate_filter: bool = True) -> str:
    """Main content of a page as plain text, paragraphs separated by newlines.

    resiliparse's main-content mode, with the boilerplate filter's element, block and line passes
    (``udfs/boilerplate.py``).
    """
    if extractor == "trafilatura":
        import trafilatura

        text = trafilatura.extract(html, include_comments=False, include_tables=True) or ""
        return drop_boilerplate_lines(text) if boilerplate_filter else text
    if not boilerplate_filter:
        return extract_plain_text(html, **_MAIN_CONTENT)
    units = main_content_units(html)
    kept = [unit for unit, keep in zip(units, block_model().keeps(units)) if keep]
    return drop_boilerplate_lines(join_units(kept))
