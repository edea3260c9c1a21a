"""Which elements of a page are main content, and which are page furniture, by their names.

resiliparse's main-content rules (as of its 2.0.1, whose rules and patterns these are: the
patterns are Apache-2.0, see NOTICE) and the element pass's furniture names (udfs/extract/boilerplate.py)
both read an element's ``class`` tokens and ``id``. ``name_bits`` says what those say, as the
``NAME_*`` bits the compiled walk over lexbor's DOM (udfs/extract/_page_walk.pyx) acts on; the walk asks it
once per distinct pair and only for the names that hold one of ``NAME_KEYWORDS``.
"""
from __future__ import annotations

import re

from udfs.common.worker import worker_resource
from udfs.extract import _page_walk
from udfs.extract.boilerplate import MAYBE_NAMED, NAMING_WORDS, name_kind


def _any(*patterns):
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.I)


# resiliparse 2.0.1's class/id patterns (Apache-2.0, see NOTICE), grouped as its rules use them.
_RP_HIDDEN = _any(r"(?:^|\s)(?:(?:is|visually)[_-])?(?:display-none|hidden|invisible|collapsed|h-0|nocontent"
                  r"|expandable)(?:-xs|-sm|-lg|-2?xl)?(?:$|\s)")
_RP_SKIP_LINK = _any(r"(?:^|\s)(?:link[_-]?)?(?:skip(?:[_-]?(?:to|link))?|scroll[_-]?(?:up|down)|next|prev(?:ious)?"
                     r"|permalink|pagination|skip-to-(?:main-)?content)(?:$|\s|[_-]?(?:post|article))")
_RP_DEEP_FURNITURE = _any(  # sign-in boxes, social and share bars
    r"(?:^|[\s_-])(?:(?:log[_-]?in|sign[_-]?(?:in|up)|account)|user[_-](?:info|profile|settings|actions))"
    r"(?:$|[\s_-])",
    r"(?:^|\s|__|--|mobile-|desktop-|l-|m-|c-)(?:social(?:media|search)?|share(?:daddy)?|syndication|newsletter"
    r"|sharing|follow|email|likes?|(?:give[_-]?)?feedback|(?:brand[_-])?engagement|facebook|twitter|subscribe|wa|jp"
    r"|aptf-follow)(?:[_-]?(?:post|links?|section|icons?|btn|buttons?|target))?(?:$|[\s_-])")
_RP_ADS = _any(  # logos, ads, spinners
    r"(?:brand(?:ing)?[_-]*)?logo(?:$|\s)",
    r"(?:^|\s)(?:(?:google|wide)[_-]?ads?|ad(?:vert|vertise(?:ment|link)?|$|_[a-f0-9]+)|sponsor(?:ed)?|promoted|paid"
    r"|(?:wide)?banner|donate)(?:$|[\s_-])",
    r"(?:^|\s)short-view-count|spinner(?:$|[\s_-])")
_RP_ARTICLE = _any(r"(?:^|[\s_-])(?:article|entry|post|story|single[_-]?post|(?:main[_-])?content|body|text|page)"
                   r"(?:$|[\s_-])")
_RP_BLOCK_FURNITURE = _any(  # header, footer, navigation, related, comments, search, sidebar, modal, gallery, print
    r"(?:^|\s)(?:l|m|wp|global|page|site|full|sticky)[_-]*header(?:[_-]?wrap(?:per)?|bar)?(?:$|\s)",
    r"(?:^|\s)(?:(?:global|page|site)[_-]?)?(?:footer|copyright|cookie|consent|legal|fcontainer)"
    r"(?:[_-](?:wrap(?:per)?|container|banner|notice|bar|consent))?(?:$|\s)",
    r"(?:^|\s)(?:(?:l|m|wp|main|site|page|sub|article|global|sticky)[_-]*)?(?:nav(?:igation|bar)?"
    r"(?:[_-](?:bar|menu|container|wrapper))?|menu(?:[_-]item)?|drop[_-]?down|bread[_-]?crumbs?"
    r"|links?[_-]?(?:bar|box|list|container|section|wrapper))(?:$|\s)",
    r"(?:^|[\s_-])(?:trends|trending|recommended|featured|popular|editors?[_-]picks|related|read-next"
    r"|related[_-]?(?:links|articles|posts|guides|stories))(?:$|[\s_-])",
    r"(?:^|[\s_-])(?:(?:article|user|post)[_-]*)?(?:(?:no[_-]?)?comments?|comment[_-]?list|reply)(?:$|[\s_-])",
    r"(?:^|\s)search(?:[_-]?(?:bar|facility|box))?(?:$|\s)",
    r"(?:^|\s)(?:(?:l|wp|global|sticky)[_-]*)?(?:(?:side|sticky)[_-]?(?:bars?|box)|one-third)(?:$|\s)",
    r"(?:^|\s)(?:wp-|p-|-l)?(?:modal|popup|lightbox)(?:[_-]*(?:window|pane|box))?(?:$|\s)",
    r"(?:^|\s)(?:gallery|carousel)(?:$|\s)",
    r"(?:^|\s)print[_-]")
_RP_LANDMARK_ID = _any(r"^(?:(?:l|wp|global|page|site|full|sticky)[_-]*)?(?:(?:head|foot)(?:er)?|right)$")
# The class names of a main-content zone (resiliparse extracts only inside it when a page has one).
_ZONE_CLASSES = frozenset(("article-body", "articleBody", "contentBody", "article-text", "main-content", "postcontent",
                           "post-content", "single-post"))


_RP_ANY = _any(*(pattern.pattern for pattern in (_RP_HIDDEN, _RP_SKIP_LINK, _RP_DEEP_FURNITURE, _RP_ADS, _RP_ARTICLE,
                                                  _RP_BLOCK_FURNITURE, _RP_LANDMARK_ID)))


def _kind_bits(token: str) -> int:
    """The element pass's word for a name (``name_kind``; the trie test first skips most names)."""
    kind = name_kind(token) if MAYBE_NAMED.search(token.lower()) else ""
    return _page_walk.NAME_FURNITURE if kind == "furniture" else _page_walk.NAME_CONTENT if kind == "content" else 0


def _token_bits(token: str, is_id: bool) -> int:
    """What one class token or id says (the patterns test whole tokens: a class value's tokens one
    by one give what the whole value gives)."""
    bits = _kind_bits(token)
    if not _RP_ANY.search(token):  # most names ("row", "col-md-6"): one search instead of seven
        return bits
    tests = [(_RP_SKIP_LINK, _page_walk.NAME_SKIP_LINK), (_RP_ADS, _page_walk.NAME_ADS),
             (_RP_ARTICLE, _page_walk.NAME_ARTICLE), (_RP_BLOCK_FURNITURE, _page_walk.NAME_BLOCK_FURNITURE)]
    if is_id:
        tests.append((_RP_LANDMARK_ID, _page_walk.NAME_BLOCK_FURNITURE))
    else:
        tests += [(_RP_HIDDEN, _page_walk.NAME_HIDDEN), (_RP_DEEP_FURNITURE, _page_walk.NAME_DEEP_FURNITURE)]
        if token in _ZONE_CLASSES:
            bits |= _page_walk.NAME_ZONE
    for pattern, bit in tests:
        if pattern.search(token):
            bits |= bit
    return bits


# Every class token or id that a pattern above or ``name_kind`` can classify holds one of these
# (case ignored; "ad", "wa" and "jp" only where a word starts): the walker hands Python only the
# names that do (tests/extract/test_page_walk.py checks both on real pages' names).
NAME_KEYWORDS = NAMING_WORDS | set("""
    display-none hidden invisible collapsed h-0 nocontent expandable skip scroll next prev permalink pagination
    log sign account user social share syndication newsletter sharing follow email like feedback engagement
    facebook twitter subscribe wa jp aptf logo google wide ad sponsor promoted paid banner donate spinner
    short-view-count article entry post story single content body text page header footer copyright cookie
    consent legal fcontainer nav menu drop bread link trend recommended featured popular editor related read-next
    comment reply search side sticky one-third modal popup lightbox gallery carousel print head foot right
""".split())
_TOKENS = ({}, {})  # class tokens, ids → bits; emptied when full
_TOKENS_KEPT = 65536


def name_bits(class_tokens: list, id_value: str) -> int:
    """The ``_page_walk.NAME_*`` bits of an element's class tokens and id."""
    bits = 0
    for is_id, tokens in ((False, class_tokens), (True, [id_value] if id_value.strip() else [])):
        cache = _TOKENS[is_id]
        for token in tokens:
            token_bits = cache.get(token)
            if token_bits is None:
                if len(cache) >= _TOKENS_KEPT:
                    cache.clear()
                token_bits = cache[token] = _token_bits(token.strip(), is_id)
            bits |= token_bits
    return bits


def page_walker() -> _page_walk.PageWalker:
    """The worker's walker: lexbor's functions looked up in selectolax's module, the name rules above."""
    def make() -> _page_walk.PageWalker:
        import selectolax.lexbor

        _page_walk.load(selectolax.lexbor.__file__)
        return _page_walk.PageWalker(name_bits, NAME_KEYWORDS)
    return worker_resource("extract.page_walker", "", make)
