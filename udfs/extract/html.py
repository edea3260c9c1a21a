"""HTML payload → main text: charset decoding and main-content extraction."""
from __future__ import annotations

import codecs
import functools
import re
from pathlib import Path
from typing import Callable, List, Optional, Tuple

from charset_normalizer import from_bytes
from charset_normalizer.cd import coherence_ratio
from charset_normalizer.md import mess_ratio
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import detect_encoding

from udfs.common.worker import worker_resource
from udfs.extract import _page_walk
from udfs.extract._page_walk import PageUnits
from udfs.extract.boilerplate import ANCHOR_CHARS, BlockModel, Unit, drop_boilerplate_lines, unit_lines
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


# A single-byte charset decodes any bytes without an error, and a wrong one gives mojibake (Cyrillic
# declared ISO-8859-1, KOI8-R declared windows-1251), so the charset a page decodes by is checked
# against its bytes. Where resiliparse's detector names another charset, both decodings are scored
# by charset-normalizer: the mess detector (the share of characters in implausible sequences: accents
# piled on letters, scripts mixed inside a word, symbols among letters), and where both read as clean
# text, the coherence (how well the letter frequencies fit a language: KOI8-R read as windows-1251 is
# Cyrillic letters in the wrong places). A multi-byte charset (UTF-8, GB18030 …) that decodes the page
# strictly is its own check. Thresholds from bench/quality/charset_check.py, which every correctly
# declared page passes unchanged:
# a decoding scoring under PLAIN_MESS, with fewer capitals than small letters, reads as plain text and
# the detector, the costly part, is not asked (real text in 9 of 10 languages scores so; KOI8-R read
# as windows-1251 can score 0, but its small letters come out as capitals);
PLAIN_MESS = 0.01
CASE_SAMPLE_CHARS = 1024
# the detected decoding replaces the declared one when the declared one's mess is CLEAN_MESS or more
# (real text in nine of ten of 532 languages scores less) and the detected one's at most this share of it;
CLEAN_MESS = 0.02
BETTER_MESS_SHARE = 0.25
# ... or when it is no messier and its coherence is higher by this much;
COHERENCE_GAIN = 0.2
# else a declared decoding whose mess is this or more (over 99 % of real text in 532 languages
# scores less) is rejected as charset_mismatch where the detector named another charset. Where it
# agrees, charset-normalizer's own detection is asked.
MOJIBAKE_MESS = 0.3
# Characters of text (markup left out) scored, from the page's first SAMPLE_CHARS * 4: enough for a
# stable score, bounded on long pages.
SAMPLE_CHARS = 4096
DETECT_BYTES = 65536
_MARKUP = re.compile(r"<[^>]*>")


class CharsetMismatch(ValueError):
    """The page's charset decodes it into mojibake, and the detected one reads no better."""


def _sample(text: str) -> str:
    """The page's text, markup left out, up to SAMPLE_CHARS characters: what the scores read."""
    return " ".join(_MARKUP.sub(" ", text[:SAMPLE_CHARS * 4]).split())[:SAMPLE_CHARS]


# Byte strings a multi-byte codec reads as fewer characters: every high byte in turn (two-byte codecs
# pair some of them), and é in UTF-8 (which pairs no neighbouring high bytes).
_MULTI_BYTE_PROBES = (bytes(range(0x80, 0x100)), "é".encode("utf-8"))


@functools.lru_cache(maxsize=None)
def _single_byte(codec: str) -> bool:
    """Whether ``codec`` reads one character per byte: such a codec decodes any bytes, a multi-byte
    one (UTF-8, GB18030, Shift_JIS, EUC-KR …) refuses most bytes that are not its own."""
    return all(len(probe.decode(codec, errors="replace")) == len(probe) for probe in _MULTI_BYTE_PROBES)


def _mostly_upper(sample: str) -> bool:
    """More capitals than small letters at the start of ``sample``."""
    start = sample[:CASE_SAMPLE_CHARS]
    return sum(map(str.isupper, start)) > sum(map(str.islower, start))


def _mess(sample: str) -> float:
    """How implausible the text reads (0 = plain text)."""
    return mess_ratio(sample, maximum_threshold=1.0) if sample else 0.0


def _coherence(sample: str) -> float:
    """How well the letters fit the language they fit best (0..1)."""
    fits = coherence_ratio(sample)
    return fits[0][1] if fits else 0.0


def _reads_better(sample: str, mess: float, other: str) -> bool:
    other_mess = _mess(other)
    return (mess >= CLEAN_MESS and other_mess <= BETTER_MESS_SHARE * mess) or (
        other_mess <= mess and _coherence(other) >= _coherence(sample) + COHERENCE_GAIN)


def _second_opinion(payload: bytes) -> Optional[str]:
    """charset-normalizer's charset for the page: slower than resiliparse's detector, asked only
    about pages that read as mojibake in the charset that detector agrees with."""
    best = from_bytes(payload[:DETECT_BYTES]).best()
    return _codec(best.encoding) if best else None


def _checked(payload: bytes, text: str, codec: str, detected: Callable[[], Optional[str]]) -> Tuple[str, str]:
    """``(text, codec)``, or a detected charset's decoding where that one reads clearly better;
    ``CharsetMismatch`` where ``text`` reads as mojibake, no detected one reads better, and the
    detector named another charset."""
    if not _single_byte(codec) or payload.isascii():  # a strict multi-byte decoding is its own check
        return text, codec
    sample = _sample(text)
    mess = _mess(sample)
    if mess < PLAIN_MESS and not _mostly_upper(sample):
        return text, codec
    first = detected()
    disagrees = bool(first) and first != codec
    others = [first] if disagrees else [_second_opinion(payload)] if mess >= MOJIBAKE_MESS else []
    for other in others:
        if not other or other == codec:
            continue
        try:
            decoded = payload.decode(other)
        except UnicodeDecodeError:
            continue
        if _reads_better(sample, mess, _sample(decoded)):
            return decoded, other
    if mess >= MOJIBAKE_MESS and disagrees:
        raise CharsetMismatch(f"{codec} (detected: {first})")
    return text, codec


def decode_html(payload: bytes, http_charset: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    """Decode with the declared charset (HTTP, then <meta>), checked against the bytes (``_checked``),
    falling back to detection.

    Returns ``(text, codec)``; ``(None, None)`` when no candidate decodes cleanly enough. Raises
    ``CharsetMismatch`` when the charset that decodes the page gives mojibake and none reads better.
    """
    meta = _META_CHARSET.search(payload[:4096])

    @functools.lru_cache(maxsize=None)
    def detected() -> Optional[str]:
        return _codec(detect_encoding(payload[:DETECT_BYTES]))

    def candidates():  # lazily: detection runs only when no declared charset decodes the page
        yield _codec(http_charset)
        yield _codec(meta.group(1).decode("ascii", "ignore") if meta else None)
        yield detected()
        yield "utf-8"

    tried = []
    for codec in candidates():
        if codec and codec not in tried:
            tried.append(codec)
            try:
                text = payload.decode(codec)
            except UnicodeDecodeError:
                continue
            return _checked(payload, text, codec, detected)
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
# articles), so the whole page's units go through the block pass too; their verdict (on the page's
# article run where it has one, ``chosen_units``) replaces the main content's where it keeps at least
# this many characters more (a short post stays as it is rather than gain a menu line). F1 on both
# development sets is flat from 100 to 300 characters.
MIN_MAIN_TEXT_CHARS = 200
BLOCK_MODEL_PATH = Path(__file__).resolve().parent / "models" / "block_classifier.json"
# The views of a walked page: which marks each leaves out (udfs/extract/_page_walk.pyx).
MAIN_CONTENT = _page_walk.MAIN | _page_walk.FURNITURE
MAIN_CONTENT_UNFILTERED = _page_walk.MAIN
WHOLE_PAGE = _page_walk.FURNITURE


def block_model() -> BlockModel:
    return worker_resource("extract.block_model", str(BLOCK_MODEL_PATH), lambda: BlockModel.load(BLOCK_MODEL_PATH))


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


# The guard against the wrong block: the main content kept is doubtful where it holds fewer characters
# than this in prose units (long, link-poor paragraphs: the block pass's anchors, ``ANCHOR_CHARS``)
# — a sidebar of links, a list of teasers, a form's notice; only then is the rest of the page read.
DOUBTFUL_PROSE_CHARS = 600
# ... and the page's article is elsewhere where the whole page holds a run of prose paragraphs (units
# of at least ``RUN_PARAGRAPH_CHARS``, under ``MAX_RUN_LINK_SHARE`` link text; up to ``MAX_RUN_GAP``
# other units between two of them: a subheading, a caption, a short paragraph) that the main content
# kept misses: the run's prose before the first unit kept (a form or widget after the article), or
# all of it where the run lies wholly before or after what was kept (a sidebar, a list of stories).
# Prose of the run after the first unit kept is a continuation (the next stories, the comments), not
# the article. Where the prose missed is at least ``RUN_PROSE_FACTOR`` times the prose kept and at
# least ``MIN_RUN_CHARS``, the run, with the ``RUN_LEAD`` units before it (its headline and byline)
# and without the units kept, goes through the block pass instead of the main content.
RUN_PARAGRAPH_CHARS = 100
MAX_RUN_LINK_SHARE = 0.3
MAX_RUN_GAP = 3
RUN_PROSE_FACTOR = 3
MIN_RUN_CHARS = 1000
RUN_LEAD = 3
# Where the kept units came from.
FROM_MAIN_CONTENT = "main content"
FROM_WHOLE_PAGE = "whole page"
FROM_ARTICLE_RUN = "article run"


def _is_prose(unit: Unit, min_chars: int) -> bool:
    return unit.chars >= min_chars and unit.link_chars < MAX_RUN_LINK_SHARE * unit.chars


def prose_run(units: List[Unit]) -> Tuple[int, int, int]:
    """The run of prose paragraphs in ``units`` with the most characters: its first and last unit's
    positions in the list and its prose characters ((0, -1, 0) where there is none)."""
    best = current = (0, -1, 0)
    gap = MAX_RUN_GAP + 1
    for i, unit in enumerate(units):
        if not _is_prose(unit, RUN_PARAGRAPH_CHARS):
            gap += 1
            continue
        start, _, chars = current if gap <= MAX_RUN_GAP else (i, i, 0)
        current = (start, i, chars + unit.chars)
        gap = 0
        if current[2] > best[2]:
            best = current
    return best


def article_run(units: List[Unit]) -> List[Unit]:
    """The whole page's prose run (``prose_run``) with the ``RUN_LEAD`` units before it; empty where
    the run holds under ``MIN_RUN_CHARS``."""
    first, last, chars = prose_run(units)
    return units[max(first - RUN_LEAD, 0):last + 1] if chars >= MIN_RUN_CHARS else []


def article_elsewhere(kept: List[Unit], whole_page: Callable[[], List[Unit]]) -> List[Unit]:
    """The whole page's units around its article, without those kept, where the main content kept is
    a doubtful block elsewhere on the page (``DOUBTFUL_PROSE_CHARS``, ``prose_run``); empty where it
    stands."""
    kept_prose = sum(unit.chars for unit in kept if _is_prose(unit, ANCHOR_CHARS))
    if not kept or kept_prose >= DOUBTFUL_PROSE_CHARS:
        return []
    run = article_run(whole_page())
    prose = [unit for unit in run if _is_prose(unit, RUN_PARAGRAPH_CHARS)]
    if not prose:
        return []
    first_kept, last_kept = kept[0].index, kept[-1].index
    missed = sum(unit.chars for unit in prose if unit.index < first_kept or prose[0].index > last_kept)
    if missed < max(MIN_RUN_CHARS, RUN_PROSE_FACTOR * kept_prose):
        return []
    kept_indices = {unit.index for unit in kept}
    return [unit for unit in run if unit.index not in kept_indices]


def chosen_units(kept_main: List[Unit], whole_page: Callable[[], List[Unit]],
                 judge: Callable[[List[Unit]], List[Unit]]) -> Tuple[List[Unit], str]:
    """What the block pass (``judge``) keeps of the main content; where that is near-empty
    (``main_or_whole_page``), of the whole page's article run (``article_run``) or, where it has none,
    of the whole page; where it is a doubtful block elsewhere, of the article run
    (``article_elsewhere``). And which of ``FROM_MAIN_CONTENT``, ``FROM_WHOLE_PAGE``,
    ``FROM_ARTICLE_RUN`` it was. The whole page's units are made once, and only when one of the two
    asks for them."""
    made = []

    def whole_page_once() -> List[Unit]:
        if not made:
            made.append(whole_page())
        return made[0]
    units, from_whole_page = main_or_whole_page(kept_main, lambda: judge(whole_page_once()))
    run = article_run(whole_page_once()) if from_whole_page else article_elsewhere(units, whole_page_once)
    if run:
        return judge(run), FROM_ARTICLE_RUN
    return units, FROM_WHOLE_PAGE if from_whole_page else FROM_MAIN_CONTENT


# Precision: blocks that follow the article in the main content, apart from it, are page furniture
# (related-story lists, teasers of the next article, promotions) unless they hold prose of their own.
# Two kept units are apart where the page holds more than ``SEGMENT_GAP_CHARS`` characters between
# them outside the main content (what the main-content rules or the element pass left out: the block
# pass's own drops inside the main content do not part them: a table, a list of links in the text).
# Where the part with the most prose holds an article's worth (``MIN_RUN_CHARS``), a part after it is
# dropped where its prose is under ``MIN_TRAILING_PROSE_SHARE`` of that one's.
SEGMENT_GAP_CHARS = 200
MIN_TRAILING_PROSE_SHARE = 0.3


def without_trailing_blocks(kept: List[Unit], page: PageUnits) -> List[Unit]:
    """``kept`` (units of the main content, in page order) without the parts after the article that
    are apart from it and hold little prose (``SEGMENT_GAP_CHARS``, ``MIN_TRAILING_PROSE_SHARE``)."""
    if len(kept) < 2:
        return kept
    page_ends, main_ends = page.text_ends(0), page.text_ends(MAIN_CONTENT)
    parts = [[kept[0]]]
    for previous, unit in zip(kept, kept[1:]):
        between = unit.index - 1, previous.index
        outside = (page_ends[between[0]] - page_ends[between[1]]) - (main_ends[between[0]] - main_ends[between[1]])
        if outside > SEGMENT_GAP_CHARS:
            parts.append([unit])
        else:
            parts[-1].append(unit)
    if len(parts) == 1:
        return kept
    prose = [sum(unit.chars for unit in part if _is_prose(unit, RUN_PARAGRAPH_CHARS)) for part in parts]
    article = prose.index(max(prose))
    if prose[article] < MIN_RUN_CHARS:  # no article: a listing's parts are its bulk
        return kept
    least = MIN_TRAILING_PROSE_SHARE * prose[article]
    return [unit for i, part in enumerate(parts) if i <= article or prose[i] >= least for unit in part]


def page_kept_units(html: str, page: PageUnits, judge: Callable[[List[Unit]], List[Unit]]) -> Tuple[List[Unit], str]:
    """What ``judge`` (the block pass) keeps of the page (``chosen_units``), the main content's without
    its trailing blocks (``without_trailing_blocks``), and where it comes from."""
    units, source = chosen_units(judge(main_content_units(html, page)), lambda: whole_page_units(html, page), judge)
    return (without_trailing_blocks(units, page), source) if source == FROM_MAIN_CONTENT else (units, source)


def kept_units(html: str) -> Tuple[List[Unit], str]:
    """The units the block pass keeps, and where they come from (``page_kept_units``)."""
    model = block_model()

    def kept(units: List[Unit]) -> List[Unit]:
        return [unit for unit, keep in zip(units, model.keeps(units)) if keep]
    return page_kept_units(html, parse_page(html), kept)


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
    element, block and line passes (``udfs/extract/boilerplate.py``); the page's article run (or whole
    text) where the main content kept is near-empty or a doubtful block beside it, and without the
    blocks that trail the article apart from it (``page_kept_units``). Without the filter:
    resiliparse's own main-content extraction.
    """
    if extractor == "trafilatura":
        import trafilatura

        text = trafilatura.extract(html, include_comments=False, include_tables=True) or ""
        return drop_boilerplate_lines(text) if boilerplate_filter else text
    if not boilerplate_filter:
        return extract_plain_text(html, **_MAIN_CONTENT)
    return kept_text(kept_units(html)[0])
