"""HTML payload → main text: charset decoding and main-content extraction."""
from __future__ import annotations

import codecs
import re
from functools import lru_cache
from pathlib import Path
from typing import Callable, List, Optional, Tuple

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import detect_encoding

from udfs.extract import _page_walk
from udfs.extract._page_walk import PageUnits
from udfs.extract.boilerplate import BlockModel, Unit, drop_boilerplate_lines, unit_lines
from udfs.extract.main_content import page_walker

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


# resiliparse's main-content mode without comments, alt texts, list bullets, form fields, noscript:
# the extract without the boilerplate filter.
_MAIN_CONTENT = dict(main_content=True, alt_texts=False, links=False, list_bullets=False, comments=False,
                     form_fields=False, noscript=False)
# The element pass is undone where it removed more than this share of the main content's text.
MAX_FURNITURE_SHARE = 0.5
# ... which is checked only where it left fewer characters than this: where the pass takes too much,
# it leaves little (in 7,118 pages of four samples it took too much on 146, all but one left under
# 2,000 characters), and a page the pass left long keeps what it left without a second look.
UNDO_CHECK_CHARS = 2000
# Fewer characters kept than this: the main-content rules may have taken a teaser, a caption or
# nothing and missed the article (2-5% of the development pages, some of them whole news
# articles), so the whole page's units go through the block pass too; their verdict replaces the
# main content's where it keeps at least this many characters more (a short post stays as it is
# rather than gain a menu line). F1 on both development sets is flat from 100 to 300 characters.
MIN_MAIN_TEXT_CHARS = 200
BLOCK_MODEL_PATH = Path(__file__).resolve().parent / "models" / "block_classifier.json"
# The views of a walked page: which marks each leaves out (udfs/extract/_page_walk.pyx).
MAIN_CONTENT = _page_walk.MAIN | _page_walk.FURNITURE
MAIN_CONTENT_UNFILTERED = _page_walk.MAIN
WHOLE_PAGE = _page_walk.FURNITURE


@lru_cache(maxsize=1)
def block_model() -> BlockModel:
    return BlockModel.load(BLOCK_MODEL_PATH)


def parse_page(html: str) -> PageUnits:
    """The page parsed and walked once (udfs/extract/_page_walk.pyx): its main content, with and without the
    element pass, and its whole text, as units."""
    return page_walker().walk(html)


def main_content_units(html: str, page: Optional[PageUnits] = None) -> List[Unit]:
    """The main content as text units, after the element pass of the boilerplate filter.

    Some pages name their content like furniture (a forum whose posts are "comments", an article
    inside a "comments-area" wrapper, report sections with an "ads" modifier): where the element pass
    took most of the text (measured against the main content without it), it is undone and the
    block pass alone decides (checked where the element pass left little text: ``UNDO_CHECK_CHARS``).
    """
    page = page or parse_page(html)
    units = page.units(MAIN_CONTENT)
    chars = sum(u.chars for u in units)
    if chars >= UNDO_CHECK_CHARS:
        return units
    unfiltered = page.units(MAIN_CONTENT_UNFILTERED)
    return unfiltered if chars < (1 - MAX_FURNITURE_SHARE) * sum(u.chars for u in unfiltered) else units


def whole_page_units(html: str, page: Optional[PageUnits] = None) -> List[Unit]:
    """The whole page's text as units, after the element pass (no undo check: on the pages this is
    for, the main content it would be measured against is near-empty)."""
    return (page or parse_page(html)).units(WHOLE_PAGE)


def kept_units(html: str) -> Tuple[List[Unit], bool]:
    """The units the block pass keeps, and whether they come from the whole page."""
    model = block_model()
    page = parse_page(html)

    def kept(units: List[Unit]) -> List[Unit]:
        return [unit for unit, keep in zip(units, model.keeps(units)) if keep]
    return main_or_whole_page(kept(main_content_units(html, page)), lambda: kept(whole_page_units(html, page)))


def main_or_whole_page(kept: List[Unit], whole_page_kept: Callable[[], List[Unit]]) -> Tuple[List[Unit], bool]:
    """The main content's kept units, or, where those hold under ``MIN_MAIN_TEXT_CHARS``, the whole
    page's (judged only then) if they hold at least ``MIN_MAIN_TEXT_CHARS`` more; and which it was."""
    kept_chars = sum(unit.chars for unit in kept)
    if kept_chars >= MIN_MAIN_TEXT_CHARS:
        return kept, False
    whole_page = whole_page_kept()
    if sum(unit.chars for unit in whole_page) >= kept_chars + MIN_MAIN_TEXT_CHARS:
        return whole_page, True
    return kept, False


def kept_text(units: List[Unit]) -> str:
    """The units joined (paragraphs and headings apart by a blank line, consecutive lines of plain
    text by a newline) after the line pass, each one-line unit's verdict taken from the block pass
    (``unit_lines``) instead of being asked again."""
    lines = []
    for previous, unit in zip([None] + units, units):
        if previous is not None and not previous.kind == unit.kind == "text":
            lines.append("")  # the blank line between paragraphs
        lines += unit_lines(unit)
    return "\n".join(lines)


def extract_main_text(html: str, extractor: str = "resiliparse", boilerplate_filter: bool = True) -> str:
    """Main content of a page as plain text, paragraphs separated by newlines.

    resiliparse's main-content rules on one walk over lexbor's DOM, with the boilerplate filter's
    element, block and line passes (``udfs/extract/boilerplate.py``); the whole page's text where the main
    content kept is near-empty. Without the filter: resiliparse's own main-content extraction.
    """
    if extractor == "trafilatura":
        import trafilatura

        text = trafilatura.extract(html, include_comments=False, include_tables=True) or ""
        return drop_boilerplate_lines(text) if boilerplate_filter else text
    if not boilerplate_filter:
        return extract_plain_text(html, **_MAIN_CONTENT)
    return kept_text(kept_units(html)[0])
